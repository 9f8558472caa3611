"""Each dim of the probes' shapes fitted to an expression in the input symbols: T, 2*T, T/2, B*T, T + 1, a
strided length floor((T - k)/s) + 1, or a grid of patches over two sizes: floor(H/p)·floor(W/p) + c.

A vision transformer's tokens are its patches over the height times those over the width, with a class token or a
few registers on top (DINOv2: floor(H/14)·floor(W/14) + 1). No single rounding in one size fits them at sizes
that are not multiples of the patch; a rounding in one size that happens to fit every probe gives false figures
at other sizes. Only one fit may hold: where two do, the probes cannot tell which, and nothing is fitted.
"""

from __future__ import annotations

import functools
from itertools import combinations, combinations_with_replacement

import sympy

from atlas.document import Dim
from atlas.document import input_specs as inputs_mod
from atlas.extract.trace import call_shapes as trace_shapes

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


MAX_DENOMINATOR = 8


def fit(values: list[int], probes: list[dict[str, int]], vocab: inputs_mod.Vocabulary,
        checks: list[tuple[dict[str, int], int]] = ()) -> Dim:
    """A dim's size at each probe -> a fixed size or the simplest expression in the symbols. `checks`: (sizes, the
    dim's size there) of probes every fit must also match (check_sizes); where none does, the dim varies."""
    def holds(expr) -> bool:
        return all(expr.subs({s: sizes[str(s)] for s in expr.free_symbols}) == value for sizes, value in checks)
    if len(set(values)) == 1 and all(value == values[0] for _, value in checks):
        return Dim(value=values[0])
    names = list(probes[0])
    table = _monomials(tuple(tuple(p.items()) for p in probes), tuple(tuple(sizes.items()) for sizes, _ in checks))
    found, floored = [], []
    for mono, xs, _ in table:
        if xs[1] == xs[0]:
            continue
        a = sympy.Rational(values[1] - values[0], xs[1] - xs[0])
        b = values[0] - a * xs[0]
        if a == 0:
            continue
        if a.q <= MAX_DENOMINATOR and b.q == 1 and all(a * x + b == v for x, v in zip(xs, values)):
            found.append(a * mono + b)
        elif 1 < a.q <= MAX_DENOMINATOR:    # a pool or a stride: floor(T/2), on odd sizes too; ceiling(T/2)
            rounded = _rounded(a, b, mono, xs, values)
            if rounded is not None:
                floored.append(rounded)
    found = [e for e in found + floored if holds(e)]
    if not found:
        found = [e for e in _fit_pairs(values, table) if holds(e)]
    if not found:           # patches over a height and a width (a vision transformer's tokens)
        grid = fit_grid(values, probes, checks, [s for s in names if vocab.symbol_name(s) != "batch"])
        found = [grid] if grid is not None else []
    if not found:           # rounding bends the slope two probes give (2/85 for floor(W/32) at 136, 221)
        strided = [f for mono, xs, at_checks in table
                   for f in [_strided(mono, xs, values, list(zip(at_checks, (value for _, value in checks))))]
                   if f is not None]
        found = [min(strided, key=lambda f: f[0])[1]] if strided else []
    if not found:
        return Dim(symbol="?", name=inputs_mod.VARIES)
    expr = next((e for e in found if not e.as_coeff_add()[0]), found[0])
    parts = sorted(expr.free_symbols, key=lambda s: names.index(str(s)))
    return Dim(symbol=str(expr), name=trace_shapes.dim_name([str(s) for s in parts], vocab))


def _rounded(a, b, mono, xs: list[int], values: list[int]):
    """floor or ceiling of a·mono + c fitting every probe, c near b, the simplest first (an integer, then the
    smallest): two probes at odd sizes give b = -1/2 for floor(x/2), which floor(x/2 - 1/2) fits only there."""
    q, base = a.q, int(sympy.floor(b * a.q))
    offsets = sorted({sympy.Rational(m, q) for m in range(base - q, base + q + 2)}, key=lambda c: (c.q != 1, abs(c)))
    for c in offsets:
        for fn in (sympy.floor, sympy.ceiling):
            if all(fn(a * x + c) == v for x, v in zip(xs, values)):
                return fn(a * mono + c)
    return None


def _strided(mono, xs: list[int], values: list[int], checks: list[tuple[int, int]] = ()):
    """(how plain it is, floor((mono + m) / q) or its ceiling) fitting every probe, and each (mono's value, size)
    of `checks`: a stride q (a pool, a conv, a padded split) up to a CNN's 32 (64 at most). Where several fit four
    probes (W/32 and W/34 at W = 136, 221, 255, 340), the smoothest stride wins (strides multiply small numbers:
    32 = 2^5, 320 = 2^6 · 5), then the smallest shift, here and between the symbols. The probes cannot always
    tell: floor(H/14) and floor((H + 6)/16) agree from 40 to 80 px; where a fit with a smaller shift gives other
    sizes, the dim reads "?" (_ambiguous), and preferring no shift outright would trade as many conv strides with a
    shift, ceil((H - 1)/8), for unshifted ones. Or a small multiple of one
    (2*ceiling(T/4)), where no rounding itself fits: a length padded to whole windows or chunks is one
    (8*ceiling(T/8), Longformer's windows of 8), up to 64."""
    if values[-1] <= values[0] or xs[-1] <= xs[0]:
        return None
    for k in range(1, 65):      # a multiple of a rounding: 2*ceiling(T/4), a pool's length times its two halves
        if all(v % k == 0 for v in values) and all(v % k == 0 for _, v in checks):
            found = _strided_once(mono, xs, [v // k for v in values], [(x, v // k) for x, v in checks])
            if found is not None:
                return (k, *found[0]), k * found[1]
    return None


def _strided_once(mono, xs: list[int], values: list[int], checks: list[tuple[int, int]]):
    if values[-1] <= values[0]:
        return None
    best, fits = None, []
    points = list(zip(xs, values)) + list(checks)
    for q in range(2, 65):
        centre = values[0] * q - xs[0]
        for ceiling in (False, True):
            # the shifts m that give every point: floor((x + m)/q) = v for v*q - x <= m <= v*q - x + q - 1,
            # ceiling for (v - 1)*q - x + 1 <= m <= v*q - x; within the window searched, the one nearest 0
            low = max([centre - q] + [(v - 1) * q - x + 1 if ceiling else v * q - x for x, v in points])
            high = min([centre + q] + [v * q - x if ceiling else v * q - x + q - 1 for x, v in points])
            if low > high:
                continue
            fits.append((q, low, high, ceiling))
            m = min(max(0, low), high) if low <= 0 <= high or low > 0 else high
            key = (_largest_prime(q), abs(m), q, ceiling)
            if best is None or key < best[0]:
                best = (key, q, m, ceiling)
    if best is None or _ambiguous(best[1:], fits, points):
        return None
    key, q, m, ceiling = best
    return key, (sympy.ceiling if ceiling else sympy.floor)((mono + m) / q)


def _ambiguous(best: tuple, fits: list, points: list) -> bool:
    """Whether a rounding with a smaller shift, or with another shift of the same stride, fits every point too and
    gives other sizes, from the smallest point to four times the largest: the probes cannot tell which holds
    (floor(H/14) and floor((H + 6)/16) from 40 to 80 px: a stride of 14 unshifted, or of 16 shifted; a 127-wide
    conv of stride 64, floor((T - 63)/64), and floor((T - 45)/64) at 200, 300 and 400 positions), and either
    would be a guess, false at other sizes. A chosen stride with no shift has no rival: a smooth stride unshifted
    is what models use (a window of 16, ceiling(T/16), which 15 fits up to T = 42 as well)."""
    q, m, ceiling = best
    if m == 0:
        return False
    xs = [x for x, _ in points]
    span = range(min(xs), min(4 * max(xs), min(xs) + 2 * 64 * 64) + 1)   # two strides of 64 at most part by then

    def at(q_, m_, c_, x):
        return -(-(x + m_) // q_) if c_ else (x + m_) // q_
    return any(any(at(q2, m2, c2, x) != at(q, m, ceiling, x) for x in span)
               for q2, low, high, c2 in fits for m2 in range(low, high + 1)
               if abs(m2) < abs(m) or (q2 == q and m2 != m))


def _largest_prime(n: int) -> int:
    largest, k = 1, 2
    while n > 1:
        while n % k == 0:
            largest, n = k, n // k
        k += 1
    return largest


@functools.lru_cache(maxsize=64)
def _monomials(probes: tuple, checks: tuple) -> tuple:
    """(monomial, its value at each probe, its value at each check) for the symbols and their products: the same
    for every dim of a run, computed once (sympy's subs, thousands of times per model otherwise)."""
    names = [n for n, _ in probes[0]]
    syms = {n: sympy.Symbol(n, positive=True, integer=True) for n in names}
    monomials = [syms[n] for n in names] + [a * b for a, b in combinations_with_replacement(syms.values(), 2)]

    def at(mono, sizes) -> int:
        return int(mono.subs({syms[n]: v for n, v in sizes}))
    return tuple((mono, tuple(at(mono, p) for p in probes), tuple(at(mono, c) for c in checks)) for mono in monomials)


def _fit_pairs(values, table) -> list:
    """a1*m1 + a2*m2, solved on two probes and checked on the others (e.g. B*T + B)."""
    found = []
    for i, (m1, x1, _) in enumerate(table):
        for m2, x2, _ in table[i + 1:]:
            det = x1[0] * x2[1] - x1[1] * x2[0]
            if det == 0:
                continue
            a1 = sympy.Rational(values[0] * x2[1] - values[1] * x2[0], det)
            a2 = sympy.Rational(x1[0] * values[1] - x1[1] * values[0], det)
            if 0 in (a1, a2) or a1.q > MAX_DENOMINATOR or a2.q > MAX_DENOMINATOR:
                continue
            if all(a1 * u + a2 * w == v for u, w, v in zip(x1, x2, values)):
                found.append(a1 * m1 + a2 * m2)
    return found
