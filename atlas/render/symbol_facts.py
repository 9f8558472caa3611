"""What a symbol's popover says (templates/assets/symbols.js): its name, what it is, its shape with named dims
([B batch, T positions, 4096 d]) and the line of code that computes or first reads it, each read off the page's
equations (atlas.document.MathSymbol), as JSON for an HTML attribute."""

from __future__ import annotations

import json

from atlas.i18n import msg
from atlas.render.filters import dim_label
from atlas.render.math_markup import hover_key

_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#x27;"})

# what a symbol is, by its kind; a value is what the line of code computes
KINDS = {"input": msg("an input of forward()"), "param": msg("a parameter"), "const": msg("a constant"),
         "module": msg("a module"), "modules": msg("a list of modules"), "value": msg("a value computed here"),
         "notation": msg("notation"), "loopvar": msg("a loop's index")}


def symbol_facts(e, names) -> str:
    """The page's symbols by hover key: {"kind", "shape", "file", "line"}; `names` the model's dims
    (DimNames) that label each size. A symbol with no shape or no line of code leaves it out."""
    out = {}
    for s in e.symbols:
        fact = {"kind": s.kind}
        if s.shape:
            fact["shape"] = "[" + ", ".join(dim_label(d, names) for d in s.shape) + "]"
        if s.file and s.line:
            fact["file"], fact["line"] = s.file, s.line
        out[hover_key("", s.key)] = fact
    return json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":")).translate(_HTML)


def symbol_kinds(e) -> str:
    """{kind: what a symbol of that kind is, in the page's language} for the kinds of the page's symbols, as JSON
    for an HTML attribute."""
    from atlas import i18n
    words = {s.kind: i18n.render(KINDS[s.kind]) for s in e.symbols if s.kind in KINDS}
    return json.dumps(words, ensure_ascii=False, sort_keys=True, separators=(",", ":")).translate(_HTML)


SYMBOL_FILTERS = {"symbol_facts": symbol_facts, "symbol_kinds": symbol_kinds}
