"""Sizes written on the branch the record took: where the code tested that a size is a multiple of m.

Falcon-H1's mixer pads T up to a multiple of its chunk of 16 when it is not one, and the record, at T = 128,
took the branch that holds where Mod(T, 16) <= 0. On that branch its output length,
floor((T + Mod(15T, 16))/floor(T/16 + Mod(15T, 16)/16))·floor(T/16 + Mod(15T, 16)/16), is T; the page says the
branch, and writes the size as the branch has it. Each size is rewritten with T = 16k, simplified, and written
in T again, where that is shorter.
"""

from __future__ import annotations

import functools
import re

import sympy

_MULTIPLE = re.compile(r"^(?:Mod\((\w+), (\d+)\) <= 0|Eq\(Mod\((\w+), (\d+)\), 0\))$")


def multiples(conditions) -> dict[str, int]:
    """{symbol: m} for each condition (text, site) that says the symbol is a multiple of m."""
    out = {}
    for text, _site in conditions:
        found = _MULTIPLE.match(str(text).strip())
        if found:
            name, m = (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
            out[name] = int(m)
    return out


def on_branch(expr, of: dict[str, int]):
    """`expr` (a size: sympy, or an int) with each symbol of `of` a multiple of its m: simplified there, or
    unchanged."""
    if not of or not isinstance(expr, sympy.Basic) or not any(str(s) in of for s in expr.free_symbols):
        return expr
    back = _simplified(expr, tuple(sorted(of.items())))
    return expr if back is None else back


@functools.lru_cache(maxsize=4096)
def _simplified(e, of: tuple):
    """`e` with each (name, m) of `of` a multiple of m, where that is shorter; else None. sympy's simplify takes
    10 to 80 ms and keeps no cache: a record's sizes repeat across its components and costs."""
    multiple = dict(of)
    by_name = {str(s): s for s in e.free_symbols}
    ks = {name: sympy.Symbol(f"_k_{name}", positive=True, integer=True) for name in multiple if name in by_name}
    inner = sympy.simplify(e.subs({by_name[n]: multiple[n] * k for n, k in ks.items()}))
    back = sympy.expand(inner.subs({k: by_name[n] / multiple[n] for n, k in ks.items()}))
    return back if sympy.count_ops(back) < sympy.count_ops(e) else None

