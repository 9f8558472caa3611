"""How close the equations must come to forward(): the tolerance of the check's dtype (or of a lower one the code
casts to), the error measured, and the bound pages report in decades of the tolerance."""

from __future__ import annotations

import math

import torch

from atlas.analyse.equations.ops_nn import Apply
from atlas.analyse.equations.ops_tensor import Cast
from atlas.analyse.equations.program import Program

TOLERANCE = {torch.float64: 1e-9, torch.float32: 2e-4, torch.bfloat16: 5e-2, torch.float16: 5e-3}


LOW = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def flat(x) -> list:
    """Tensors of a result in a fixed order: tuples and lists in order, dicts by their values."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for i in x for t in flat(i)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in flat(v)]
    return []


def tolerance_for(prog: Program, dtype: torch.dtype, working: str = "float32") -> float:
    """The working precision's tolerance, or a lower precision's where the code casts down to it
    (a cast to float32 that changed nothing in the record still runs in float32 when checked in float64)."""
    low = None
    retried = {working} if working != "float32" else set()     # a record made in bfloat16 to get through a kernel
    for name in prog.dtypes - retried:
        if name in LOW and (low is None or TOLERANCE[LOW[name]] > TOLERANCE[low]):
            low = LOW[name]
    for step in prog.steps:
        for node in step.node.walk():
            name = node.meta.get("dtype") if isinstance(node, Cast) else None
            if isinstance(node, Apply):
                d = node.args[1].get("dtype") if isinstance(node.args[1], dict) else None
                name = str(d).removeprefix("torch.") if d is not None else None
            if name in LOW and name not in retried and (low is None or TOLERANCE[LOW[name]] > TOLERANCE[low]):
                low = LOW[name]
    if low is not None and TOLERANCE[low] > TOLERANCE[dtype]:
        return TOLERANCE[low]
    return TOLERANCE[dtype]


def nan_only_in(expected: list, got: list) -> tuple[int, int] | None:
    """(NaN values in forward()'s outputs where the equations' are numbers, values in all), or None if none."""
    nan = total = 0
    for e, a in zip(expected, got):
        if isinstance(e, torch.Tensor) and (e.is_floating_point() or e.is_complex()):
            nan += int((torch.isnan(e) & ~torch.isnan(a.to(e.dtype))).sum())
            total += e.numel()
    return (nan, total) if nan else None


def relative_error(e: torch.Tensor, a: torch.Tensor) -> float:
    if e.numel() == 0:
        return 0.0
    if not (e.is_floating_point() or e.is_complex()):
        return 0.0 if torch.equal(a.to(e.dtype), e) else math.inf
    a = a.to(e.dtype)
    both_nan = torch.isnan(e) & torch.isnan(a)
    same_inf = torch.isinf(e) & (a == e)
    ok = both_nan | same_inf
    finite = torch.isfinite(e) & torch.isfinite(a)
    if bool((~(ok | finite)).any()):
        return math.inf
    if not bool(finite.any()):
        return 0.0
    scale = max(1.0, float(e[finite].abs().max()))
    return float((a[finite] - e[finite]).abs().max()) / scale


def reported_bound(error: float, tolerance: float) -> float:
    """The smallest of tolerance/1000, /100, /10 and the tolerance itself that the error is within: a bound in
    decades, so that a page stays the same from machine to machine (an error's last digits do not), without saying
    "within 2e-04" of a float32 rotary table whose error is 3e-07."""
    bounds = [float(f"{tolerance / 10 ** k:.3g}") for k in (3, 2, 1)]     # 2e-07, not 2.0000000000000002e-07
    return next((bound for bound in bounds if error <= bound), tolerance)
