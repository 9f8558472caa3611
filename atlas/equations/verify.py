"""Run a component's equations on random inputs and compare with its real forward().

One instance is materialized on the CPU at a time, never the whole model: a
deep copy of the meta module gets real storage, random values (a fixed seed),
float64 where it fits the memory budget (float32 where only that fits), and
evaluation mode, so dropout is off.
"""

from __future__ import annotations

import copy
import math

import sympy
import torch
from torch import nn

from atlas.errors import where
from atlas.i18n import msg
from atlas.equations.program import Program
from atlas.model import Shapes, Verification
from atlas.shapes import _tensors

SIZES = {"B": 2, "T": 4}            # small sizes at the real widths
OTHER_SIZE = 3
TOLERANCE = {torch.float64: 1e-9, torch.float32: 2e-4}


def _instance(module: nn.Module, dtype: torch.dtype, seed: int) -> nn.Module:
    inst = copy.deepcopy(module).to_empty(device="cpu")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in list(inst.parameters()) + list(inst.buffers()):
            if t.is_floating_point():
                if t.dim() >= 2:    # uniform with variance 1/fan_in: as informative as normal, 4x cheaper
                    bound = math.sqrt(3.0 / t.shape[-1])
                    t.uniform_(-bound, bound, generator=gen)
                else:   # gains, biases, statistics: near one, never zero, never negative
                    t.uniform_(0.8, 1.2, generator=gen)
            elif t.is_complex():
                t.zero_()
            else:
                t.zero_()
    return inst.to(dtype).eval()


def _inputs(module: nn.Module, shapes: Shapes, dtype: torch.dtype, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed + 1)
    tables = [m.num_embeddings for m in module.modules() if isinstance(m, nn.Embedding)]
    high = min(tables) if tables else 8
    out = {}
    for t in shapes.inputs:
        dims = []
        for d in t.dims:
            if not d.symbolic:
                dims.append(d.value)
            else:
                syms = sympy.sympify(d.symbol).free_symbols
                dims.append(int(sympy.sympify(d.symbol).subs({s: SIZES.get(str(s), OTHER_SIZE) for s in syms})))
        if t.dtype.startswith(("float", "bfloat")):
            out[t.name] = torch.randn(dims, generator=gen, dtype=torch.float64).to(dtype)
        elif t.dtype == "bool":
            out[t.name] = torch.zeros(dims, dtype=torch.bool)
        else:
            out[t.name] = torch.randint(0, high, dims, generator=gen, dtype=getattr(torch, t.dtype))
    return out


def _flat(values) -> list[torch.Tensor]:
    out = []
    for v in values:
        out += [t for _, t in _tensors("y", v)] if not isinstance(v, torch.Tensor) else [v]
    return out


def verify(module: nn.Module, prog: Program, shapes: Shapes, budget_bytes: int, seed: int = 0) -> Verification:
    numel = sum(p.numel() for p in module.parameters()) + sum(b.numel() for b in module.buffers())
    if numel * 8 <= budget_bytes:
        dtype = torch.float64
    elif numel * 4 <= budget_bytes:
        dtype = torch.float32
    else:
        return Verification(False, reason=msg(
            "not run: one instance holds %(elements)s parameter and buffer elements, "
            "%(size)s bytes even in float32, over the %(budget)s-byte budget",
            elements=numel, size=numel * 4, budget=budget_bytes))
    if shapes is None or shapes.inputs == () or shapes.status.value != "derived":
        return Verification(False, reason=msg("not run: no example inputs reach this component"))
    tol = TOLERANCE[dtype]
    try:
        torch.manual_seed(seed)
        inst = _instance(module, dtype, seed)
        inputs = _inputs(inst, shapes, dtype, seed)
        params = __import__("inspect").signature(inst.forward).parameters
        with torch.no_grad():
            ref = inst(**inputs) if all(n in params for n in inputs) else inst(*inputs.values())
            got = prog.run(inst, inputs)
    except Exception as exc:  # the equations could not be run: a failure, reported with its place
        return Verification(False, tolerance=tol, dtype=str(dtype).removeprefix("torch."),
                            reason=msg("the equations did not run: %(error)s", error=where(exc)))
    expected, actual = _flat([ref]), _flat(got)
    if len(expected) != len(actual):
        return Verification(False, tolerance=tol, dtype=str(dtype).removeprefix("torch."),
                            reason=msg("the equations give %(got)s outputs, forward() gives %(expected)s",
                                       got=len(actual), expected=len(expected)))
    worst = 0.0
    for e, a in zip(expected, actual):
        if not isinstance(a, torch.Tensor) or tuple(a.shape) != tuple(e.shape):
            shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
            return Verification(False, tolerance=tol, dtype=str(dtype).removeprefix("torch."),
                                reason=msg("the equations give shape %(got)s, forward() gives %(expected)s",
                                           got=str(shape), expected=str(tuple(e.shape))))
        scale = max(1.0, float(e.abs().max())) if e.numel() else 1.0
        err = float((a.to(e.dtype) - e).abs().max()) / scale if e.numel() else 0.0
        worst = max(worst, err if not math.isnan(err) else math.inf)
    ok = worst <= tol
    if ok:  # publish a bound, not the raw error: BLAS kernels differ between CPUs in the last bits
        return Verification(True, max_error=reported_bound(worst, tol), tolerance=tol,
                            dtype=str(dtype).removeprefix("torch."))
    error, tolerance = f"{worst:.3g}", f"{tol:g}"
    return Verification(False, max_error=worst, tolerance=tol, dtype=str(dtype).removeprefix("torch."),
                        reason=msg("the equations differ from forward() by %(error)s (tolerance %(tolerance)s)",
                                   error=error, tolerance=tolerance))


def reported_bound(error: float, tolerance: float) -> float:
    """tolerance/1000 when the error is below it, else the tolerance: stable across machines."""
    return tolerance / 1000 if error <= tolerance / 1000 else tolerance
