"""An architecture diagram of a model, drawn as plain SVG from the component tree.

An icicle layout: the model across the top, each row one level deeper, every
component's width its share of the leaves below it. Every box links to its page.
"""

from __future__ import annotations

from html import escape

from atlas import i18n
from atlas.filters import repeat_label
from atlas.i18n import msg
from atlas.model import Component, ModelDoc

WIDTH, ROW, GAP, DEPTH = 900, 48, 4, 3
CHAR = 8.5                                    # average width of one character at 15px


def _leaves(doc: ModelDoc, comp: Component, depth: int) -> int:
    if depth == DEPTH - 1 or not comp.children:
        return 1
    return sum(_leaves(doc, doc.component(c), depth + 1) for c in comp.children)


def _fit(text: str, width: float) -> str:
    room = int((width - 8) / CHAR)
    if room <= 1:
        return ""
    return text if len(text) <= room else text[: room - 1] + "…"


def svg(doc: ModelDoc, href) -> str:
    """`href(component)` gives each box's link, relative to the page the diagram sits on."""
    boxes: list[str] = []

    def place(comp: Component, depth: int, x: float, width: float) -> None:
        label = repeat_label(comp) if comp.id else doc.name
        title = i18n.render(msg("%(label)s · %(class_name)s · %(count)s parameters per instance", label=label,
                                class_name=comp.cls.rsplit(".", 1)[-1], count=comp.parameters_per_instance))
        text = _fit(label, width)
        y = depth * ROW
        boxes.append(
            f'<a href="{escape(href(comp), quote=True)}"><title>{escape(title)}</title>'
            f'<rect x="{x + GAP / 2:.1f}" y="{y + GAP / 2}" width="{max(width - GAP, 1):.1f}" height="{ROW - GAP}" rx="4"/>'
            + (f'<text x="{x + width / 2:.1f}" y="{y + ROW / 2 + 4}" text-anchor="middle">{escape(text)}</text>' if text else "")
            + "</a>")
        if depth == DEPTH - 1:
            return
        total = _leaves(doc, comp, depth)
        cursor = x
        for cid in comp.children:
            child = doc.component(cid)
            share = width * _leaves(doc, child, depth + 1) / total
            place(child, depth + 1, cursor, share)
            cursor += share

    place(doc.root, 0, 0.0, float(WIDTH))
    rows = min(DEPTH, 1 + max((c.id.count(".") + 1 for c in doc.components if c.id), default=0))
    height = rows * ROW
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" '
            f'aria-label="{escape(i18n.render(msg("Architecture of %(model)s", model=doc.name)), quote=True)}">'
            + "".join(boxes) + "</svg>")
