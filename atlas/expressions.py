"""Size and cost expressions read back from their text ("2*T", "512*B*S**2 + 64*B*T"), each name a plain symbol.

sympy's own parser reads a few one-letter names as its singletons and functions (S, N, E, I, O, Q), so an
encoder-decoder's source length S, or a model's own dim named N, would parse as something else. Here every name
not called as a function is a Symbol of that name, and the functions sizes use (floor, ceiling, Mod, Max, Min,
sqrt) keep their meaning.
"""

from __future__ import annotations

import re

import sympy
from sympy.parsing.sympy_parser import parse_expr

_NAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()")


def parse(text) -> sympy.Expr:
    """`text` (or a number, or an expression already) as a sympy expression whose names are all symbols."""
    if isinstance(text, sympy.Basic):
        return text
    if isinstance(text, (int, float)):
        return sympy.sympify(text)
    return parse_expr(str(text), local_dict={n: sympy.Symbol(n) for n in symbol_names(text)})


def symbol_names(text) -> list[str]:
    """The names in an expression's text that are not called as functions, each once, in order: "floor(T/2)" -> T."""
    return list(dict.fromkeys(_NAME.findall(str(text))))
