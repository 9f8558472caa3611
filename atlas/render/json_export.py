"""The JSON published beside the pages and printed by `describe --json`: the data model's structure
(atlas.document.serialize) with each formula also as LaTeX (`tex`, the symbols' names filled in) and as plain text
(`plain`), and each symbol's name likewise, for readers who do not read the structure."""

from __future__ import annotations

from atlas.document import Component, ModelDoc, serialize
from atlas.render.latex import plain_text
from atlas.render.math_markup import names_of, plain, plain_name


def as_dict(doc: ModelDoc) -> dict:
    data = serialize.as_dict(doc)
    for comp, out in zip(doc.components, data["components"]):
        _equations(comp, out)
    return data


def component_page(doc: ModelDoc, comp: Component, permalink: str) -> dict:
    """The JSON published beside a component's page: the component, with its model and permalink."""
    data = serialize.component_page(doc, comp, permalink)
    _equations(comp, data["component"])
    return data


def _equations(comp: Component, out: dict) -> None:
    e, data = comp.equations, out.get("equations")
    if e is None or data is None:
        return
    names = names_of(e)
    plain_names = {key: plain_name(tex) for key, tex in names.items()}

    def lines(formulas, dicts) -> None:
        for formula, d in zip(formulas, dicts):
            d["tex"] = plain(formula, names)
            d["plain"] = plain_text(formula, lambda key: plain_names.get(key, key))
    for view, out in ((e, data), (e.paper, data.get("paper"))):
        if view is None or out is None:
            continue
        lines(view.summary, out["summary"])
        lines([st.formula for st in view.steps], out["steps"])
        lines(view.constants, out["constants"])
        lines([f for f, _ in view.notations], out["notations"])
    for s, d in zip(e.symbols, data["symbols"]):
        d["tex"] = names[s.key]
        d["plain"] = plain_names[s.key]
