"""Run a component's equations on random inputs and compare them with its real forward().

One instance is materialized on the CPU at a time, never the whole model: a deep copy of the meta module
gets real storage, values from a fixed seed, float64 where it fits the memory budget (float32 where only
that fits), and evaluation mode. It is called exactly as the model called it in the record (keyword
arguments, tuples, flags), with random tensors in place of the recorded ones, at the sizes the record was
made at, so every branch the code took holds again (a data-dependent size in its inputs, at the value the
record assumed for it). Integer, boolean and complex inputs the model computed itself are remade from the
record (`check_inputs`); floating ones (a mask) are random, unless forward() does not run on random ones, gives
NaN on them, or reads them and takes another path (`data_reads`): then they are remade too, and the page says so.
forward() gets copies of the inputs: what it writes into them in place (a recurrent state) stays out of what the
equations read.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import math
import re
from dataclasses import replace
from typing import NamedTuple

import torch
from torch import nn

from atlas.analyse.equations.check_inputs import CheckInputs, copies
from atlas.analyse.equations.check_memory import check_sizes, largest_tensor
from atlas.analyse.equations.data_reads import DataReads
from atlas.analyse.equations.materialize import materialize
from atlas.analyse.equations.nodes import DataDependentSize
from atlas.analyse.equations.program import Program
from atlas.analyse.equations.tolerances import (
    TOLERANCE,
    Conditioning,
    flat,
    nan_only_in,
    precision_for,
    relative_error,
    reported_bound,
)
from atlas.document import Verification
from atlas.errors import where
from atlas.extract.trace.structures import Call
from atlas.i18n import msg
from atlas.load import code_caches
from atlas.load.forward_calls import bind, parameters


def verify(module: nn.Module, prog: Program, call: Call, sizes: dict, budget_bytes: int,
           seed: int = 0, working: str = "float32", assumed: dict | None = None) -> Verification:
    """float64 where one instance fits the budget; float32 where only that fits, or where forward() itself
    refuses float64 (a grouped-matmul kernel). `assumed`: the record's value of each data-dependent size."""
    return _verify(module, prog, call, sizes, budget_bytes, seed, working, assumed, None)[0]


def verify_both(module: nn.Module, prog: Program, paper: Program | None, call: Call, sizes: dict,
                budget_bytes: int, working: str = "float32",
                assumed: dict | None = None) -> tuple[Verification, Verification | None]:
    """`verify`, and the component's paper view compared with the same run of forward(), at the same tolerance."""
    return _verify(module, prog, call, sizes, budget_bytes, 0, working, assumed, paper)


def _verify(module, prog, call, sizes, budget_bytes, seed, working, assumed, also):
    sizes = check_sizes(call, sizes, assumed or {})
    numel = sum(p.numel() for p in module.parameters()) + sum(b.numel() for b in module.buffers())
    if numel * 4 > budget_bytes:
        v = Verification(False, reason=msg(
            "not run: one instance holds %(elements)s parameter and buffer elements, "
            "%(size)s bytes even in float32, over the %(budget)s-byte budget",
            elements=numel, size=numel * 4, budget=budget_bytes))
        return v, v
    largest, shape = largest_tensor(call, sizes)
    if (numel + largest) * 4 > budget_bytes:
        at = ", ".join(f"{k} = {v}" for k, v in sizes.items())
        v = Verification(False, reason=msg(
            "not run: at %(sizes)s, the sizes of the record, its largest tensor is %(shape)s: with the instance's "
            "parameters and buffers %(elements)s elements, %(size)s bytes even in float32, over the "
            "%(budget)s-byte budget (--memory-budget; --dim bounds the sizes of the record)",
            sizes=at, shape="[" + ", ".join(map(str, shape)) + "]",
            elements=numel + largest, size=(numel + largest) * 4, budget=budget_bytes))
        return v, v
    numel += largest
    with _one_thread():
        if numel * 8 <= budget_bytes:
            first, failed, run = _check(module, prog, call, sizes, torch.float64, seed, working)
            if failed is None or not _DTYPE.search(failed.rsplit(" (", 1)[0]):     # the message, not its file:line
                return _cast_said(first), _also(also, first, run, sizes, torch.float64, working)
        found, _, run = _check(module, prog, call, sizes, torch.float32, seed, working)
        return _cast_said(found), _also(also, found, run, sizes, torch.float32, working)


def _also(prog: Program | None, first: Verification, run, sizes: dict, dtype: torch.dtype, working: str):
    """The second program against the run of forward() the first was compared with, at the first's tolerance."""
    if prog is None:
        return None
    if run is None or run.out is None or first.tolerance is None:
        return first                    # not run, or forward() did not run: the same for both
    found = _compare(prog, run, sizes, dtype, working, first.tolerance)
    if isinstance(found, Verification):
        return found
    worst = found.worst
    dname = _dtype_name(run)
    if worst <= first.tolerance:
        return Verification(True, max_error=reported_bound(worst, first.tolerance), tolerance=first.tolerance,
                            dtype=dname, note=first.note)
    return Verification(False, max_error=worst, tolerance=first.tolerance, dtype=dname,
                        reason=msg("the equations differ from forward() by %(error)s (tolerance %(tolerance)s)",
                                   error=f"{worst:.3g}", tolerance=f"{first.tolerance:g}"))


@contextlib.contextmanager
def _one_thread():
    """The check on one thread: how torch splits a reduction among threads moves its last bits, and an error
    near a decade of the tolerance would read one decade or the next by the machine's core count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _cast_said(v: Verification) -> Verification:
    """A tolerance looser than the check's dtype's, because the code casts down (`.float()` in a float64 check),
    explained where nothing else explains it: "run in float64 ... (tolerance 2e-04)" alone does not say why the
    tolerance is a lower precision's."""
    own = TOLERANCE.get(getattr(torch, v.dtype or "", None))
    low = next((str(d).removeprefix("torch.") for d, t in TOLERANCE.items() if t == v.tolerance), None)
    if not v.verified or v.note is not None or own is None or v.tolerance is None or v.tolerance <= own or low is None:
        return v
    return replace(v, note=msg("The tolerance is %(low)s's: in the recorded run the code casts to %(low)s, "
                               "which forward() may compute in", low=low))


_DTYPE = re.compile(r"dtype|Double|Float|Half|BF16|bfloat16|float64|expected scalar type", re.IGNORECASE)


class _Found(NamedTuple):
    """The equations compared with one run of forward()."""
    worst: float                        # the largest error
    nan: tuple | None                   # NaN only in forward()'s outputs: (values, of all)
    tolerance: float                    # the precision's, widened where the values computed call for it
    said: object                        # the sentence that states a widened tolerance, else None


class _Run(NamedTuple):
    """One forward() of a fresh instance on the check's inputs."""
    inst: nn.Module
    made: CheckInputs                   # the inputs, and how each was made
    named: dict | None                  # the inputs by parameter name, for the equations
    out: list | None                    # forward()'s outputs, None where it did not run
    error: object                       # why it did not run (Text), else None
    state: object                       # torch's random state forward() started from
    reads: list                         # the path it decided from its data, where watched (data_reads)
    converted: bool = False             # it ran, but converted tensors of its own out of the check's dtype
    sites: tuple = ()                   # where it read its data, where watched: ("__bool__", "file.py:line")


def _forward(module: nn.Module, call: Call, sizes: dict, dtype: torch.dtype, seed: int, working: str,
             remake_floats: bool, watch: bool = False) -> _Run:
    """A fresh instance, its inputs for the check, those inputs by parameter name, forward()'s outputs on them
    (or forward()'s error, file:line, where it did not run), torch's random state forward() started from, and,
    with `watch`, what it read from its data (the watch turns torch's fused fast paths off: only where asked)."""
    torch.manual_seed(seed)
    code_caches.clear(module)           # a cache filled by the record holds its fake tensors
    inst = materialize(module, dtype, seed)
    made = CheckInputs(inst, module, sizes, dtype, seed, working, remake_floats)
    params = parameters(inst, call.method)
    reads = DataReads()
    try:
        args = tuple(made.rebuild(a, p.name, p.default) for a, p in zip(call.args, params.values()))
        kwargs = {k: made.rebuild(v, k, params[k].default if k in params else inspect.Parameter.empty)
                  for k, v in call.kwargs.items()}
        named = bind(inst, args, kwargs, method=call.method)
        own_args, own_kwargs = copies((args, kwargs))
        state = torch.random.get_rng_state()
        before, sums = _dtypes(inst), _sums(inst)
        with torch.no_grad(), (reads if watch else contextlib.nullcontext()):
            out = flat((getattr(inst, call.method) if call.method else inst)(*own_args, **own_kwargs))
        converted = sorted(name for name, kind in _dtypes(inst).items() if name in before and kind != before[name])
        if converted:       # forward() converted tensors of its own (Switch's router keeps itself in float32)
            return _Run(inst, made, None, None, msg("forward() converts its own %(names)s from %(dtype)s to another "
                                                    "dtype", names=[f"`{n}`" for n in converted],
                                                    dtype=str(dtype).removeprefix("torch.")), None, reads.path, True)
        if _sums(inst) != sums:     # it wrote into its own weights (PixelCNN's `weight.data *= mask`): the
            inst = materialize(module, dtype, seed)     # equations start from them as forward() did, on a new copy
        return _Run(inst, made, named, out, None, state, reads.path, sites=tuple(reads.sites))
    except Exception as exc:  # forward() does not run on these inputs
        return _Run(inst, made, None, None, where(exc), None, reads.path, sites=tuple(reads.sites))


def _sums(module: nn.Module) -> list[float]:
    """A checksum of each parameter and buffer: a write into one through `.data`, which no version counter sees,
    changes it."""
    return [float(torch.linalg.vector_norm(t.detach(), 1)) if t.is_floating_point() or t.is_complex()
            else float(t.sum())
            for t in itertools.chain(module.parameters(), module.buffers())]


def _dtypes(module: nn.Module) -> dict:
    return {name: t.dtype for name, t in itertools.chain(module.named_parameters(), module.named_buffers())
            if t.is_floating_point()}


def _check(module: nn.Module, prog: Program, call: Call, sizes: dict, dtype: torch.dtype, seed: int,
           working: str) -> tuple[Verification, str | None, _Run]:
    """The verification, forward()'s own error where it did not run, and the run compared with.

    Floating inputs the model computes (a mask, a rotary table) are random at first. They are taken as the model
    computes them where forward() does not run on random ones, and where the comparison fails because of them:
    forward() gave NaN on them, or decided its path from them (bool(), an integer read) otherwise than on the
    model's own values. A comparison that fails on the same path stays a failure."""
    precision = precision_for(prog, dtype, working)
    tol = TOLERANCE[precision]
    dname = str(dtype).removeprefix("torch.")
    forward = functools.partial(_forward, module, call, sizes, dtype, seed, working)
    run, why = forward(remake_floats=False), None
    if run.error is not None and run.made.computed_floats:
        again = forward(remake_floats=True)
        if again.error is None and again.made.computed_floats:
            run, why = again, msg("on random values forward() does not run")
    if run.converted:       # it says "dtype": verify() checks again in float32
        return Verification(False, tolerance=tol, dtype=dname, reason=msg("not compared: %(why)s", why=run.error)), \
            run.error, run
    if run.error is not None:   # the module itself does not run on these inputs: nothing to compare with
        if run.made.made_up:
            name, cause = next(iter(run.made.made_up.items()))
            return Verification(False, tolerance=tol, dtype=dname, reason=msg(
                "not run: %(input)s could not be made as the model makes it (%(why)s), and forward() failed on a "
                "made-up one: %(error)s", input="`" + name + "`", why=cause, error=run.error)), run.error, run
        return Verification(False, tolerance=tol, dtype=dname, reason=msg(
            "not run: forward() failed on the example inputs: %(error)s", error=run.error)), run.error, run
    found = _compare(prog, run, sizes, dtype, working, tol, precision)
    if isinstance(found, Verification):
        return replace(found, note=_note(run, why)), None, run
    worst, nan = found.worst, found.nan
    if worst > found.tolerance and run.made.computed_floats and not run.made.remake_floats:
        random_path, again = forward(remake_floats=False, watch=True).reads, forward(remake_floats=True, watch=True)
        if again.error is None and again.made.computed_floats and (nan or again.reads != random_path):
            why = (msg("on random values forward() gives NaN") if nan else
                   msg("on random values forward() reads them and takes another path than on the model's own"))
            found = _compare(prog, again, sizes, dtype, working, tol, precision)
            if isinstance(found, Verification):
                return replace(found, note=_note(again, why)), None, again
            run = again
    return _verdict(forward, run, found, why), None, run


def _compare(prog: Program, run: _Run, sizes: dict, dtype: torch.dtype, working: str, tol: float,
             precision: torch.dtype | None = None):
    """The equations against one run (_Found), or the Verification saying why they could not be compared. With
    `precision`, the one forward() computes in, the tolerance `tol` widens where the values call for it."""
    dname = _dtype_name(run)
    watch = Conditioning()
    try:
        torch.random.set_rng_state(run.state)   # the numbers forward() drew (a VAE's randn_like), drawn again in order
        with torch.no_grad():
            got = flat(prog.run(run.inst, run.named, sizes, dtype, working, watch=watch))
    except DataDependentSize as exc:    # a limit of the equations, stated: not a disagreement with forward()
        return Verification(False, tolerance=tol, dtype=dname, reason=msg(
            "not run: the equations need %(symbols)s, a size the data decided when the forward was recorded, and no "
            "step of theirs computes it", symbols=tuple(exc.symbols)))
    except Exception as exc:  # the equations could not be run: a failure, reported with its place
        return Verification(False, tolerance=tol, dtype=dname, max_error=math.inf,
                            reason=msg("the equations did not run: %(error)s", error=where(exc)))
    expected = run.out
    if len(expected) != len(got):
        return Verification(False, tolerance=tol, dtype=dname, max_error=math.inf,
                            reason=msg("the equations give %(got)s outputs, forward() gives %(expected)s",
                                       got=len(got), expected=len(expected)))
    worst = 0.0
    for e, a in zip(expected, got):
        if not isinstance(a, torch.Tensor) or tuple(a.shape) != tuple(e.shape):
            shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
            return Verification(False, tolerance=tol, dtype=dname, max_error=math.inf,
                                reason=msg("the equations give shape %(got)s, forward() gives %(expected)s",
                                           got=str(shape), expected=str(tuple(e.shape))))
        worst = max(worst, relative_error(e, a))
    floats = [e for e in expected if (e.is_floating_point() or e.is_complex()) and e.numel()]
    wide = tol if precision is None else watch.tolerance(tol, precision)
    said = None if precision is None else watch.note(wide, tol, precision)
    if floats and not any(bool(torch.isfinite(e).any()) for e in floats):     # NaN on both sides proves nothing
        total = sum(e.numel() for e in floats)
        return _Found(math.inf, (total, total), wide, said)
    return _Found(worst, nan_only_in(expected, got), wide, said)


def _dtype_name(run: _Run) -> str:
    return str(run.made.dtype).removeprefix("torch.")


def _note(run: _Run, why, said=None):
    """The floating inputs the check took as the model computes them, and why, and `said`, the sentence that
    states a widened tolerance; None where there is neither."""
    if why is None:
        return said
    taken = msg("Inputs taken as the model computes them, not at random: %(inputs)s; %(why)s",
                inputs=[f"`{n}`" for n in dict.fromkeys(run.made.computed_floats)], why=why)
    return taken if said is None else msg("%(first)s; %(then)s", first=taken, then=said)


def _verdict(forward, run: _Run, found: _Found, why) -> Verification:
    """The comparison's outcome: `forward` runs the instance again (a partial of _forward), to tell a forward() that
    draws random numbers torch's seed does not fix from a disagreement."""
    dname, note = _dtype_name(run), _note(run, why, found.said)
    worst, nan, tol = found.worst, found.nan, found.tolerance
    if worst > tol and nan and nan[0] == nan[1]:        # every value: the equations' are no evidence either
        return Verification(False, tolerance=tol, dtype=dname, note=note, reason=msg(
            "not compared: forward() gives NaN at every one of its %(total)s values on the inputs the check made: "
            "those inputs are outside what it handles", total=nan[1]))
    if worst > tol and nan:     # forward() breaks down on the inputs made for it (a row with every key masked)
        return Verification(False, tolerance=tol, dtype=dname, note=note, reason=msg(
            "not compared: forward() gives NaN at %(n)s of %(total)s values on the inputs the check made, where the "
            "equations give numbers: those inputs are outside what it handles", n=nan[0], total=nan[1]))
    if worst <= tol:  # publish a bound, not the raw error: BLAS kernels differ between CPUs in the last bits
        return Verification(True, max_error=reported_bound(worst, tol), tolerance=tol, dtype=dname, note=note)
    again = forward(remake_floats=run.made.remake_floats).out
    if again is not None and (len(again) != len(run.out) or any(
            not isinstance(a, torch.Tensor) or a.shape != e.shape or relative_error(e, a) > tol
            for e, a in zip(run.out, again))):
        return Verification(False, tolerance=tol, dtype=dname, note=note, reason=msg(   # BigBird's random blocks
            "not compared: forward() gives different outputs on the same inputs and weights (it draws random numbers "
            "torch's seed does not fix)"))
    error, tolerance = f"{worst:.3g}", f"{tol:g}"
    reads = forward(remake_floats=run.made.remake_floats, watch=True).sites
    if reads:               # the path forward() takes may not be the recorded one (a library's check for tracing)
        places = list(dict.fromkeys(f"`{name.strip('_')}()` at {site}" for name, site in reads))
        return Verification(False, max_error=worst, tolerance=tol, dtype=dname, note=note, reason=msg(
            "the equations differ from forward() by %(error)s (tolerance %(tolerance)s); forward() decides its path "
            "from its data (%(reads)s), and the equations follow the path of the recorded run, which may not be the "
            "one it takes", error=error, tolerance=tolerance, reads=places[:3]))
    return Verification(False, max_error=worst, tolerance=tol, dtype=dname, note=note,
                        reason=msg("the equations differ from forward() by %(error)s (tolerance %(tolerance)s)",
                                   error=error, tolerance=tolerance))


