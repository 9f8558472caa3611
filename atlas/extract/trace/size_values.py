"""Sizes worked out at numbers: a size expression of the record (a ShapeEnv guard, a branch condition) with its
symbols replaced by sizes the atlas considers. Torch's FloorDiv and Mod raise ZeroDivisionError where a divisor
made from the sizes is 0 there (Swin's `floor(H/4) // floor(floor(H/4)/7)` at an image smaller than 28), and
sympy's floor gives complex infinity: either way, no value at those sizes, never an exception."""

from __future__ import annotations

import sympy

_NOT_FINITE = (sympy.zoo, sympy.nan, sympy.oo, -sympy.oo)


def value_at(expr, values: dict):
    """`expr` with `values` ({symbol: number}) put in; None where that divides by zero or is no finite number."""
    if not isinstance(expr, sympy.Basic):
        return expr
    try:
        out = expr.xreplace({s: sympy.Integer(v) if isinstance(v, int) else v for s, v in values.items()})
    except (ArithmeticError, TypeError, ValueError):     # ZeroDivisionError: a floor division or remainder by 0
        return None
    if out in _NOT_FINITE or (isinstance(out, sympy.Basic) and out.has(*_NOT_FINITE)):
        return None
    return out
