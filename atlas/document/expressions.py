"""Size and cost expressions read back from their text ("2*T", "512*B*S**2 + 64*B*T"), each name a plain symbol.

sympy's own parser reads a few one-letter names as its singletons and functions (S, N, E, I, O, Q), so an
encoder-decoder's source length S, or a model's own dim named N, would parse as something else. Here every name
not called as a function is a Symbol of that name, and the functions sizes use (floor, ceiling, Mod, Max, Min,
sqrt) keep their meaning.
"""

from __future__ import annotations

import functools
import re

import sympy
from sympy.parsing.sympy_parser import parse_expr
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

_NAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()")


def parse(text) -> sympy.Expr:
    """`text` (or a number, or an expression already) as a sympy expression whose names are all symbols."""
    if isinstance(text, sympy.Basic):
        return text
    if isinstance(text, (int, float)):
        return sympy.sympify(text)
    return _parsed(str(text))


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> sympy.Expr:
    """A text parsed once: a page shows a cost formula in each language and evaluates it for several sentences
    (sympy's expressions cannot be changed, so one is shared)."""
    return parse_expr(text, local_dict={n: sympy.Symbol(n) for n in symbol_names(text)})


def symbol_names(text) -> list[str]:
    """The names in an expression's text that are not called as functions, each once, in order: "floor(T/2)" -> T."""
    return list(dict.fromkeys(_NAME.findall(str(text))))


_RELATIONS = {"==": "=", "!=": "≠", "<=": "≤", ">=": "≥", "<": "<", ">": ">"}


class _Plain(StrPrinter):
    """sympy's own text, but a remainder as `T mod 16`, not `Mod(T, 16)`."""

    def _print_Mod(self, expr):
        a, m = expr.args
        return f"{self.parenthesize(a, PRECEDENCE['Mul'])} mod {self.parenthesize(m, PRECEDENCE['Mul'] + 1)}"


def said(condition) -> str:
    """A condition on sizes as a sentence reads it: `ceiling(W/8) ≠ 30`, `T mod 16 = 0`, not `Ne(ceiling(W/8), 30)`.
    The text as it is where it does not parse."""
    try:
        expr = parse(condition)
    except Exception:  # not an expression of sizes: say it as it is
        return str(condition)
    return _said(expr)


def _said(expr) -> str:
    plain = _Plain()
    if isinstance(expr, sympy.core.relational.Relational) and expr.rel_op in _RELATIONS:
        op = _RELATIONS[expr.rel_op]
        if isinstance(expr.lhs, sympy.Mod) and expr.rhs == 0 and op in ("≤", ">"):      # a remainder is never < 0
            op = "=" if op == "≤" else "≠"
        return f"{plain.doprint(expr.lhs)} {op} {plain.doprint(expr.rhs)}"
    if isinstance(expr, (sympy.And, sympy.Or)):
        word = " and " if isinstance(expr, sympy.And) else " or "
        return word.join(_said(a) for a in expr.args)
    return plain.doprint(expr)
