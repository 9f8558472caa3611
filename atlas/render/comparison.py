"""The catalog page: one table comparing every documented model, each cell read off that model's document
(its architecture traits, totals and cost) and linked to the page that shows it. No torch here."""

from __future__ import annotations

from dataclasses import dataclass

from atlas import i18n
from atlas.document import ModelDoc, Trait
from atlas.render import page_paths

PAGE = "catalog/index.md"
FOLDER = "catalog"


@dataclass(frozen=True)
class Cell:
    """Parts of one table cell: (text, docs-relative link or None), joined by `sep`."""

    parts: tuple[tuple[str, str | None], ...] = ()
    sep: str = " + "


@dataclass(frozen=True)
class Row:
    doc: ModelDoc
    href: str
    cells: dict


def _number(value) -> str:
    from atlas.render.filters import thousands
    return thousands(value) if isinstance(value, int) else str(value)


def _cell(doc: ModelDoc, traits: tuple[Trait, ...], sep: str = " + ", show=_number) -> Cell:
    parts = []
    for t in traits:
        target = None
        if t.component is not None:
            target = page_paths.link(PAGE, page_paths.page_path(doc, doc.component(t.component)))
        text = show(t.value)
        if t.source:                    # read from the config: its field says which limit it is
            text = f"{text} (`{t.source}`)"
        parts.append((text, target))
    return Cell(tuple(parts), sep)


def _kinds(value) -> str:
    """The words the atlas uses for kinds of positions and activations, in the active language."""
    words = {"rotary": i18n.gettext("rotary"), "learned": i18n.gettext("learned table"),
             "frozen": i18n.gettext("frozen table")}
    if isinstance(value, str) and value.startswith("gated "):
        return i18n.gettext("gated %(name)s") % {"name": value.removeprefix("gated ")}
    if isinstance(value, str) and value.startswith("rotary "):          # "rotary 6/12": a partial rotary
        rotated, dims = value.removeprefix("rotary ").split("/")
        return i18n.gettext("rotary on %(rotated)s of %(dims)s dims") % {"rotated": rotated, "dims": dims}
    return words.get(value, str(value))


def _flops_per_token(doc: ModelDoc) -> tuple[float, str] | None:
    """The forward's FLOPs at the reference size per token (or per input where there are no positions)."""
    from atlas.render.filters import at_reference, has_positions
    if doc.cost is None or doc.cost_summary is None:
        return None
    ref = dict(doc.cost_summary.reference)
    tokens = has_positions(doc) and "T" in ref
    per = ref.get("B", 1) * (ref["T"] if tokens else 1)
    return at_reference(doc.cost.flops, doc.cost_summary.reference) / per, tokens


def _experts_of(a, ffn):
    """The experts an FFN width belongs to: those of its component or of one above it."""
    return next((e for e in a.experts if ffn.component and e.component
                 and (ffn.component == e.component or ffn.component.startswith(e.component + "."))), None)


def rows(docs: list[ModelDoc]) -> list[Row]:
    out = []
    for doc in docs:
        a = doc.architecture
        href = page_paths.link(PAGE, page_paths.page_path(doc, doc.root))
        if a is None:
            out.append(Row(doc, href, {}))
            continue
        heads = Cell(tuple((f"{_number(h.value)} / {_number(k.value)}",
                            page_paths.link(PAGE, page_paths.page_path(doc, doc.component(h.component))))
                           for h, k in zip(a.heads, a.kv_heads)), ", ")
        ffn = _cell(doc, a.ffn, ", ")
        if a.experts:       # "8 × 32" for the experts' width; a dense layer beside them (DeepSeek's first) reads 128
            ffn = Cell(tuple((f"{_number(e.value)} × {text}" if e else text, link)
                             for f, (text, link) in zip(a.ffn, ffn.parts) for e in [_experts_of(a, f)]), ", ")
        out.append(Row(doc, href, {
            "layers": _cell(doc, a.layers), "width": _cell(doc, a.width, ", "), "heads": heads, "ffn": ffn,
            "vocabulary": _cell(doc, a.vocabulary, ", "), "context": _cell(doc, a.context, ", "),
            "norms": _cell(doc, a.norms, ", "), "positions": _cell(doc, a.positions, ", ", _kinds),
            "activations": _cell(doc, a.activations, ", ", _kinds),
            "flops": _flops_per_token(doc),
        }))
    return out
