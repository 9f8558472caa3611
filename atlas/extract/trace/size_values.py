"""Sizes worked out at numbers: a size expression of the record (a ShapeEnv guard, a branch condition) with its
symbols replaced by sizes the atlas considers. Torch's FloorDiv and Mod raise ZeroDivisionError where a divisor
made from the sizes is 0 there (Swin's `floor(H/4) // floor(floor(H/4)/7)` at an image smaller than 28), and
sympy's floor gives complex infinity: either way, no value at those sizes, never an exception.

Also the sizes a stopped run's code asked for (`Required`), and the solving of a divisibility or a maximum or
minimum it raised on."""

from __future__ import annotations

from typing import NamedTuple

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


class Required(NamedTuple):
    """A size the code asked for where a run stopped (atlas.extract.trace.symbolic_inputs.refused_sizes)."""

    name: str                   # the model's symbol (H)
    size: int
    site: str                   # file:line of the test
    kind: str = "equal"         # "equal": that size (`assert h == image_size`); "multiple": the last of the first
    #                             sizes from the run's up at which `expr` is a multiple of `modulus` (from `first`);
    #                             "most", "least": the
    #                             largest (smallest) size near the run's that passes a maximum (minimum) the code
    #                             raises past (`if height > pos_embed_max_size: raise`)
    expr: str = ""
    modulus: int = 0
    hint: int = 0
    first: int = 0              # "multiple": the sizes from `first` to `last` all are, `size` the one most halved
    last: int = 0
    step: int = 0               # "multiple": how far the next such size is (two symbols' runs are distinct sizes)


_BY_LINE = 3        # a test `if h > limit:` a raise up to this many lines below it stops at


def stops_at(required: Required, error: str | None) -> bool:
    """Whether the run's error (`... (file.py:line)`) is the test's: at its line, or for a maximum or a minimum,
    at a raise up to three lines below it in the same file (the `if` and the `raise` are lines of their own)."""
    if not required.site or not error:
        return False
    if required.site in error:
        return True
    if required.kind not in ("most", "least"):
        return False
    from atlas.errors import site_of
    at, test = site_of(error), required.site.rpartition(":")
    return at is not None and test[2].isdigit() and at[0] == test[0].rsplit("/", 1)[-1] \
        and 0 < at[1] - int(test[2]) <= _BY_LINE


def near(site: str, error: str | None) -> bool:
    """A test's file:line at the error's line or up to three lines above it (cheap: before any solving)."""
    return stops_at(Required("", 0, site, "most"), error)


def multiple_from(mod, symbol, hint: int, others: dict, largest: int = 4096) -> tuple[int, int] | None:
    """The sizes from `hint` up at which `mod` (Mod(x, m)) is first 0, x not 0: `assert h % window == 0` at an image
    the run's size did not divide, never a size so small that x is 0. (the first such size, the last of the sizes
    after it that give x the same value): MaxViT's ceiling(H/4) is 16, a multiple of 8, for H from 61 to 64."""
    inner = mod.args[0]
    for value in range(max(hint, 2), largest + 1):
        at = {**others, symbol: value}
        rest, x = value_at(mod, at), value_at(inner, at)
        if rest == 0 and x is not None and x != 0:
            last = value
            while last < largest and value_at(inner, {**others, symbol: last + 1}) == x:
                last += 1
            return value, last
    return None


def most_halved(first: int, last: int) -> int:
    """Of the sizes from `first` to `last`, the one the most halvings divide (the smallest of those): the size
    that leaves no remainder to strided convs and pools. MaxViT's H from 61 to 64: 64, where its stride-2 path and
    its stride-4 path agree; floor(W/2) = 4 for W of 8 or 9: 8."""
    return max(range(first, last + 1), key=lambda v: (v & -v, -v))


def passing_bound(guard, symbol, hint: int, others: dict, largest: int = 4096) -> tuple[str, int] | None:
    """A relation the code tested and raised on (it held at the run's size `hint`): ("most", the largest size below
    `hint` at which it does not hold), else ("least", the smallest above); None where no size up to `largest`
    passes."""
    def passes(value: int) -> bool:
        return value_at(guard, {**others, symbol: value}) is sympy.false
    below = next((v for v in range(hint - 1, 1, -1) if passes(v)), None)
    if below is not None:
        return "most", below
    above = next((v for v in range(hint + 1, largest + 1) if passes(v)), None)
    return ("least", above) if above is not None else None
