"""What the check costs in memory at the record's sizes: its largest tensor, weights and views aside; and the
sizes it runs at."""

from __future__ import annotations

import math

import sympy
import torch

from atlas.analyse.equations.recorded import shape_symbols, unbacked
from atlas.extract.trace.structures import Call, Size, refs
from atlas.load.nested import leaves


def largest_tensor(call: Call, sizes: dict) -> tuple[int, tuple]:
    """(elements, shape) of the largest tensor the call took, made or returned in the record, at `sizes`: what a
    forward() at those sizes holds at least beside the instance's weights (a float64 check of eager attention at
    T = 8192 makes score tensors of 6 GB, several at once). A size the record leaves symbolic and `sizes` does not
    give is left out."""
    best: tuple[int, tuple] = (0, ())
    seen: set = set()
    pending = [call]
    while pending:
        c = pending.pop()
        values = [r.value for r in refs((c.args, c.kwargs, c.out))]
        for ev in c.events:
            if isinstance(ev, Call):
                if not ev.skipped:      # a repeated entry not run has its first entry's shapes, looked at there
                    pending.append(ev)
            else:
                values += [r.value for r in refs(ev.out)]
        for v in values:
            if v.shape is None or id(v) in seen or v.kind in ("param", "buffer") or _a_view(v.obj):
                continue            # the weights are counted apart; a view (a weight's transpose) takes no memory
            seen.add(id(v))
            dims = [_at(d, sizes) for d in v.shape]
            if None not in dims and math.prod(dims) > best[0]:
                best = (math.prod(dims), tuple(dims))
    return best


def _a_view(obj) -> bool:
    try:
        return isinstance(obj, torch.Tensor) and obj._is_view()
    except RuntimeError:
        return False


def _at(dim, sizes: dict) -> int | None:
    if isinstance(dim, int):
        return dim
    try:
        value = dim.xreplace({s: sympy.Integer(sizes[s.name]) for s in dim.free_symbols if s.name in sizes})
        return int(value) if value.is_number else None
    except (AttributeError, TypeError, ValueError):
        return None


def check_sizes(call: Call, sizes: dict, assumed: dict) -> dict:
    """The record's sizes, and the assumed value of each data-dependent size in the call's input shapes (a
    block of u0 routed tokens) or numbers (Longformer's flag u0 = 1, any global attention?): the check makes its
    inputs at the sizes, and takes the path, the record had."""
    values = [r.value for r in refs((call.args, call.kwargs))]
    numbers = [v.expr for v in values if v.shape is None] + [s.expr for s in leaves((call.args, call.kwargs), Size)]
    given = {str(s) for s in shape_symbols(values).union(*(getattr(e, "free_symbols", set()) for e in numbers))
             if unbacked(s)}
    return {**sizes, **{k: v for k, v in assumed.items() if k in given}}
