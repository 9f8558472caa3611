"""A dim that is a grid of patches over two sizes: floor(H/p)·floor(W/p) + c, fitted to the probes' values.

A vision transformer's tokens are its patches over the height times those over the width, with a class token or a
few registers on top (DINOv2: floor(H/14)·floor(W/14) + 1). No single rounding in one size fits them at sizes
that are not multiples of the patch; a rounding in one size that happens to fit every probe gives false figures
at other sizes. Only one fit may hold: where two do, the probes cannot tell which, and nothing is fitted.
"""

from __future__ import annotations

from itertools import combinations

import sympy

MAX_PATCH = 64          # the patch sizes tried, 2 to 64
MAX_EXTRA = 8           # tokens added to the grid (a class token, registers), at most


def fit_grid(values: list[int], probes: list[dict[str, int]], checks, sizes_of_images) -> sympy.Expr | None:
    """floor(x/p)·floor(y/p) + c (or with ceilings) holding at every probe and check, one fit only (one patch
    size, one pair of sizes, one rounding); x and y among `sizes_of_images` (not a batch); never without checks,
    whose sizes move the symbols apart where the probes move them together."""
    if not checks:
        return None
    points = list(zip(probes, values)) + [(sizes, value) for sizes, value in checks]
    found = []
    for x, y in combinations([s for s in probes[0] if s in sizes_of_images], 2):
        for p in range(2, MAX_PATCH + 1):
            for ceiling in (False, True):
                def cells(sizes, p=p, ceiling=ceiling, x=x, y=y) -> int:
                    rounded = (lambda n: -(-n // p)) if ceiling else (lambda n: n // p)
                    return rounded(sizes[x]) * rounded(sizes[y])
                extra = values[0] - cells(probes[0])
                if 0 <= extra <= MAX_EXTRA and all(cells(sizes) + extra == value for sizes, value in points):
                    found.append((p, x, y, ceiling, extra))
    if len(found) != 1:
        return None
    (p, x, y, ceiling, extra), = found
    fn = sympy.ceiling if ceiling else sympy.floor
    sx, sy = (sympy.Symbol(n, positive=True, integer=True) for n in (x, y))
    return fn(sx / p) * fn(sy / p) + extra
