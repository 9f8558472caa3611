"""The role pages: one page per role (attention, normalization, MLP / MoE, positions) listing every documented model's
components in that role side by side (atlas.document.role_entries), each row linked to its component's page, every
figure that differs from the row above marked; and the page that compares two models in the browser
(templates/assets/compare.js), from each model's published atlas.json. No torch here."""

from __future__ import annotations

import math
from dataclasses import dataclass

from atlas import i18n
from atlas.document import ModelDoc, role_entries
from atlas.render import page_paths

FOLDER = "catalog"
PAGES = {role: f"{FOLDER}/{role}.md" for role in role_entries.ROLES}
COMPARE = f"{FOLDER}/compare.md"


def titles() -> dict[str, str]:
    """Each role's page title, in the active language."""
    return {"attention": i18n.gettext("Attention"), "normalization": i18n.gettext("Normalization"),
            "mlp": i18n.gettext("MLP and mixtures of experts"), "positions": i18n.gettext("Positions")}


def labels() -> dict[str, str]:
    """The hyper-parameters' names, in the active language; a name the atlas does not know shows as the code's."""
    return {"heads": i18n.gettext("heads"), "kv_heads": i18n.gettext("KV heads"),
            "head_dim": i18n.gettext("head dim"), "causal": i18n.gettext("causal mask"),
            "mask": i18n.gettext("mask given with the input"), "cross": i18n.gettext("cross-attention"),
            "softcap": i18n.gettext("logit cap"), "window": i18n.gettext("window"), "scale": i18n.gettext("scale"),
            "theta": "θ", "rotary_dim": i18n.gettext("rotary dims"), "rotated": i18n.gettext("rotated"),
            "eps": "ε", "floor": i18n.gettext("ε as a floor"), "hidden": i18n.gettext("hidden width"),
            "activation": i18n.gettext("activation"), "gated": i18n.gettext("gated"),
            "experts": i18n.gettext("experts"), "top_k": i18n.gettext("experts per token"),
            "router": i18n.gettext("router"), "renormalized": i18n.gettext("top-k scores renormalized"),
            "placement": i18n.gettext("placement"), "positions": i18n.gettext("positions"),
            "width": i18n.gettext("width")}


def words() -> dict[str, str]:
    """Values the atlas writes as words, in the active language."""
    return {"pre": i18n.gettext("pre-norm"), "post": i18n.gettext("post-norm"),
            "sandwich": i18n.gettext("normalized on both sides"), "true": i18n.gettext("yes"),
            "false": i18n.gettext("no"), "softmax": "softmax", "sigmoid": "sigmoid", "gelu": "GELU",
            "gelu_tanh": "GELU (tanh)", "silu": "SiLU", "relu": "ReLU", "quick_gelu": "QuickGELU", "mish": "Mish",
            "relu2": "ReLU²"}


def kinds() -> dict[str, str]:
    return {"mha": i18n.gettext("MHA"), "gqa": i18n.gettext("GQA"), "mqa": i18n.gettext("MQA"),
            "rmsnorm": "RMSNorm", "layernorm": "LayerNorm", "l2norm": i18n.gettext("L2 norm"),
            "mlp": i18n.gettext("dense MLP"), "swiglu": i18n.gettext("dense SwiGLU"),
            "geglu": i18n.gettext("dense GeGLU"), "reglu": i18n.gettext("dense ReGLU"),
            "rotary": i18n.gettext("rotary"), "learned": i18n.gettext("learned table"),
            "frozen": i18n.gettext("frozen table")}


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def value_text(value) -> str:
    """A hyper-parameter as a page prints it: 10⁻⁵, 500,000 (500.000 in Spanish), yes / no, a word translated."""
    if isinstance(value, bool):
        return words()[str(value).lower()]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return i18n.number(value)
    if isinstance(value, float):
        k = round(math.log10(value)) if value > 0 else None
        if k is not None and k < 0 and float(f"1e{k}") == value:
            return "10" + str(k).translate(_SUPERSCRIPT)
        from babel.numbers import format_decimal
        return format_decimal(value, "#,##0.##########", locale="en_US" if i18n.active() == i18n.DEFAULT
                              else i18n.active())
    return words().get(str(value), str(value))


def kind_text(entry: role_entries.RoleEntry) -> str:
    """The kind a row names: "GQA 32/8", "64 experts (top-8)", "RMSNorm", "rotary"."""
    if entry.role == "attention":
        heads, kv = entry.get("heads"), entry.get("kv_heads", entry.get("heads"))
        return f"{kinds()[entry.kind]} {value_text(heads)}/{value_text(kv)}"
    if entry.kind == "moe":
        return i18n.gettext("%(experts)s experts (top-%(k)s)") % {"experts": value_text(entry.get("experts")),
                                                                  "k": value_text(entry.get("top_k"))}
    return kinds().get(entry.kind, entry.kind)


@dataclass(frozen=True)
class Item:
    text: str
    differs: bool = False           # not the same as in the row above


@dataclass(frozen=True)
class Row:
    doc: ModelDoc
    entry: role_entries.RoleEntry
    name: str                       # the component's name
    href: str                       # its page, from the role page
    kind: Item
    params: tuple[tuple[str, Item], ...]
    equations: tuple[str, ...]      # LaTeX, the summary the component's page shows first
    parameters: Item
    flops: Item
    kv: Item
    anchor: str = ""                # the row's id on the page
    same_as: "Row | None" = None    # an earlier row whose equations are these: they are printed once, there


def _equations(comp, view: str | None) -> tuple[str, ...]:
    from atlas.render.math_markup import names_of, plain
    e = comp.equations
    if view is None:
        return ()
    lines = e.paper.summary if view == "paper" else e.summary
    names = names_of(e)
    return tuple(plain(line, names).replace("|", r"\vert ") for line in lines)


def _flops(entry: role_entries.RoleEntry) -> str:
    from atlas.render.filters import si
    if entry.flops is None:
        return "—"
    text = si(entry.flops, "FLOPs") + " " + (i18n.gettext("per token") if entry.flops_per == "token"
                                             else i18n.gettext("per input"))
    if entry.flops_at:
        text += " " + i18n.gettext("at %(sizes)s") % {
            "sizes": ", ".join(f"{k} = {i18n.number(v)}" for k, v in entry.flops_at)}
    return text


def rows(docs: list[ModelDoc], role: str) -> list[Row]:
    """The role's rows, model by model, each figure compared with the row above it."""
    out: list[Row] = []
    names = labels()
    page = PAGES[role]
    entries = [(doc, e) for doc in docs for e in role_entries.of(doc) if e.role == role]
    never = {k for _, e in entries for k, v in e.params if v is False} - \
        {k for _, e in entries for k, v in e.params if v is not False}     # a flag no row sets says nothing
    for doc, entry in entries:
        comp = doc.component(entry.component)
        above = out[-1] if out else None
        params = tuple((names.get(k, k), value_text(v)) for k, v in entry.params if k not in never)
        before = dict((k, i.text) for k, i in above.params) if above else None
        kv = "—" if entry.kv_cache_per_token is None else i18n.gettext("%(n)s values") % {
            "n": i18n.number(entry.kv_cache_per_token)}
        parameters = i18n.number(entry.parameters_per_instance)

        def item(text: str, previous: str | None) -> Item:
            return Item(text, above is not None and text != previous and text != "—")
        equations = _equations(comp, entry.view)
        out.append(Row(
            doc, entry, comp.name, page_paths.link(page, page_paths.page_path(doc, comp)),
            item(kind_text(entry), above and above.kind.text),
            tuple((k, item(v, before.get(k) if before else None)) for k, v in params),
            equations,
            item(parameters, above and above.parameters.text),
            item(_flops(entry), above and above.flops.text),
            item(kv, above and above.kv.text),
            anchor=f"{doc.slug}-{entry.component}".replace(".", "-"),
            same_as=next((r for r in out if r.equations == equations and r.same_as is None), None)
            if equations else None))
    return out


def render(docs: list[ModelDoc], env) -> dict[str, str]:
    """Every role page and the comparison page, in every language."""
    role_t = env.get_template("roles.md.j2")
    compare_t = env.get_template("compare.md.j2")
    files = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            for role in role_entries.ROLES:
                table = rows(docs, role)
                files[page_paths.localized(PAGES[role], code)] = role_t.render(
                    role=role, title=titles()[role], rows=table, kv=any(r.entry.kv_cache_per_token is not None
                                                                        for r in table))
            files[page_paths.localized(COMPARE, code)] = compare_t.render(**compare_context(docs))
    return files


def compare_context(docs: list[ModelDoc]) -> dict:
    import json
    models = [(doc, page_paths.link(COMPARE, page_paths.page_path(doc, doc.root)),
               page_paths.link(COMPARE, page_paths.json_path(doc))) for doc in docs]
    text = {"roles": titles(), "labels": labels(), "words": words(), "kinds": kinds(),
            "experts": i18n.gettext("%(experts)s experts (top-%(k)s)"), "per_token": i18n.gettext("per token"),
            "per_input": i18n.gettext("per input"), "at": i18n.gettext("at %(sizes)s"),
            "values": i18n.gettext("%(n)s values"), "bytes": i18n.gettext("%(n)s bytes"),
            "differs": i18n.gettext("differs"), "component": i18n.gettext("Component"),
            "kind": i18n.gettext("Kind"), "parameters": i18n.gettext("Parameters per instance"),
            "instances": i18n.gettext("instances"), "flops": i18n.gettext("FLOPs per token"),
            "kv": i18n.gettext("KV cache per token"), "totals": i18n.gettext("Totals"),
            "total": i18n.gettext("Parameters"), "trained": i18n.gettext("Trained"),
            "frozen": i18n.gettext("Frozen"), "active": i18n.gettext("Active parameters per token"),
            "forward": i18n.gettext("Forward FLOPs per token"),
            "kv_model": i18n.gettext("KV cache per token, whole model"), "none": "—",
            "failed": i18n.gettext("The model's data could not be read: %(url)s"),
            "language": i18n.active()}
    return {"models": models, "text": json.dumps(text, ensure_ascii=False, sort_keys=True).replace("</", "<\\/")}


def nav() -> list:
    """The comparison page (its own title) and the role pages, in a tab beside the catalog's."""
    t = titles()
    return [{i18n.gettext("Compare"): [COMPARE, *({t[role]: PAGES[role]} for role in role_entries.ROLES)]}]
