"""One recorded forward of a whole model: symbolic on fake tensors where it can be, concrete where it must.

The symbolic run gives every size as an expression in the input symbols and costs no memory for weights
or activations. A repeated list entry is run once: later entries whose inputs have exactly the first
entry's shapes are not run again (same code, same shapes), so a deep model's repeated layers run once,
not once each. Where the symbolic run fails, the caller falls back to concrete probes (see
atlas.extract.probes.probe_shapes).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading

import torch
from torch import nn
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.nn import functional as F

from atlas.errors import where
from atlas.extract.trace.module_state import fake_tensors, kept_state
from atlas.extract.trace.recorder import Recorder
from atlas.extract.trace.repeated_entries import later_entries, skipping
from atlas.extract.trace.returned_state import returned_state
from atlas.extract.trace.shape_env import quiet, release
from atlas.extract.trace.structures import Guard, Trace
from atlas.extract.trace.symbolic_inputs import SymbolicInputs
from atlas.load import code_caches
from atlas.load.forward_calls import call, evaluation

log = logging.getLogger("atlas")
RECORD_SECONDS = 240        # one forward on fake tensors; past it the run stops, loudly, and the probes take over
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
          "uint8": torch.uint8, "bool": torch.bool, "complex64": torch.complex64}


def symbolic(model: nn.Module, specs, hints: dict[str, int], repeats: list[list[str]] = (),
             names: bool = True) -> Trace:
    """Run `model` once on fake tensors whose symbolic dims are named by `hints`' keys.

    specs: InputSpec list (name, dtype, dims: ints and symbol names). repeats: groups of module paths
    that are one component (list entries); all but the first of each may be skipped."""
    code_caches.clear(model)            # a table the code cached in an earlier run holds that run's fake tensors
    si = SymbolicInputs(hints, "cpu")
    try:
        inputs = {s.name: si.tensor(s.name, s.dims, DTYPES[s.dtype]) for s in specs}
        later = later_entries(model, repeats)
        closed = [module for module, _ in later]
        with kept_state(model, closed) as keep, fake_tensors(model, si.mode, closed) as fakes:
            rec = Recorder(model, si.expr, names=names, originals=fakes.originals, closed=closed)
            rec.note_weights()
            si.shape_env.on_guard = _guard_listener(rec, si)
            error = None

            def opening(entry: nn.Module) -> None:
                below = [m for m in entry.modules() if m is not entry]
                keep(below)
                with unset_fake_temporarily():
                    fakes.swap(below)
                rec.open(entry)

            # gradients on: autograd then saves, for the backward pass, what training keeps in memory (recorded by
            # the hooks); fake tensors make the whole run cost no memory either way
            hooks = rec.saving()
            with quiet(), evaluation(model), skipping(later, rec, opening), _conversions_that_change_nothing(), \
                    _flags_decided(), code_caches.uncached(model), torch.enable_grad(), hooks, si.mode, si.decompose, \
                    rec:
                rec.register_inputs(inputs)
                output = None
                try:
                    with _deadline(RECORD_SECONDS):
                        output = call(model, inputs)
                except Exception as exc:  # the record keeps every call that finished before it
                    error = si.named(where(exc))
            si.shape_env.on_guard = None    # the fake sizes hold the ShapeEnv: it must not hold the record
        trace = Trace(rec.root, rec.values, dict(si.symbols), dict(hints), True, "fake",
                      _working_dtype(model), error, specialized=tuple(si.specialized()),
                      specialized_at=tuple(si.specialized_sites()), pinned_at_one=tuple(si.pinned_at_one()))
        trace.saved = rec.saved
        trace.assumed = si.shape_env.assumed_values()
        trace.upper = si.upper_bounds()
        trace.conditions = tuple(si.conditions())
        trace.refused = tuple(si.refused_sizes(error)) if error is not None else ()
        trace.returned_state = returned_state(output, si.expr, rec)
        del output
        trace.branches = tuple(condition for condition, _ in si.branch_conditions())
        return trace
    finally:                            # an error escaping the run must not keep it either
        si.shape_env.on_guard = None
        release(si.shape_env)


def _guard_listener(rec: Recorder, si: SymbolicInputs):
    """Notes, on the module call running, each data-dependent value its code needed as a Python number (a loop's
    count, a list index) and got from the assumed value: its steps then hold only for data taking the same path."""
    def on_guard(expr, value, site: str) -> None:
        if not rec.stack or getattr(expr, "is_Relational", False) or not getattr(value, "is_Integer", False):
            return                      # a size test (is it 1?) inside an op is no count and no index
        rec.stack[-1].guards.append(Guard(si.expr_of(expr), int(value), site))
    return on_guard


def concrete(model: nn.Module, example: dict, device: str, names: bool = True) -> Trace:
    """Run `model` on concrete tensors (meta or CPU): sizes are ints. Gradients on, as in the symbolic run, so that
    what autograd saves for the backward pass is recorded: without them it saves nothing. A forward that runs only
    without them (an in-place write into a weight) is recorded so, its saved bytes unknown (`saved` None)."""
    trace = _concrete(model, example, device, names, grad=True)
    if trace.error is None:
        return trace
    again = _concrete(model, example, device, names, grad=False)
    if again.error is not None:
        return trace
    again.saved = None
    return again


def _concrete(model: nn.Module, example: dict, device: str, names: bool, grad: bool) -> Trace:
    rec = Recorder(model, lambda s: int(s) if isinstance(s, (int, torch.SymInt)) else s, names=names)
    error = None
    if grad:
        rec.note_weights()
    saving = rec.saving() if grad else contextlib.nullcontext()
    with kept_state(model), evaluation(model), torch.enable_grad() if grad else torch.no_grad(), saving, rec:
        rec.register_inputs(example)
        try:
            call(model, example)
        except Exception as exc:  # the record keeps every call that finished before it
            error = where(exc)
    trace = Trace(rec.root, rec.values, {}, {}, False, device, _working_dtype(model), error)
    trace.saved = rec.saved
    return trace


class RecordTimeout(Exception):
    """A forward on fake tensors that ran past its time."""


@contextlib.contextmanager
def _deadline(seconds: float):
    """Stops a forward on fake tensors that runs past `seconds`: torch's arithmetic on sizes of nested floor
    divisions can run for good, with nothing on stderr (transformers' Swin at 224 x 225 pixels). The
    run then fails there and says so, as any failed run does. Only in the main thread, and only where nothing
    else set a SIGALRM handler."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
        yield
        return

    def stop(signum, frame):
        raise RecordTimeout(f"the forward on fake tensors ran past {seconds:g} s")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)



def _working_dtype(model: nn.Module) -> str:
    for p in model.parameters():
        if p.is_floating_point():
            return str(p.dtype).removeprefix("torch.")
    return "float32"



@contextlib.contextmanager
def _conversions_that_change_nothing():
    """`module.to(...)` in a forward that asks for the dtype and device its tensors have (Switch's router runs
    `self.classifier = self.classifier.to(self.dtype)` on every call) returns the module as it is, as torch does for
    plain tensors: torch's own conversion swaps each parameter for a new one, which fake tensors refuse ("Couldn't
    swap Linear.weight"), and the run would fail. A conversion that changes a tensor runs as torch runs it."""
    to = nn.Module.to

    def unchanged(module: nn.Module, *args, **kwargs):
        device, dtype, _, memory_format = torch._C._nn._parse_to(*args, **kwargs)
        tensors = [*module.parameters(), *module.buffers()]
        if memory_format is None and all((device is None or t.device == device) and
                                         (dtype is None or t.dtype == dtype or
                                          not (t.is_floating_point() or t.is_complex())) for t in tensors):
            return module
        return to(module, *args, **kwargs)

    nn.Module.to = unchanged
    try:
        yield
    finally:
        nn.Module.to = to


@contextlib.contextmanager
def _flags_decided():
    """A flag the code computes from a size (`is_causal = self.is_causal and T > 1`, Moonshine's decoder) is a
    SymBool on symbolic sizes, which scaled_dot_product_attention's argument parser refuses before any torch
    function mode sees the call ("must be bool, not SymBool"), and the symbolic run would fail. It is decided as Python
    decides an `if` on it: at the record's sizes, the condition kept among the record's branches."""
    sdpa = F.scaled_dot_product_attention

    def decided(*args, **kwargs):
        return sdpa(*(bool(a) if isinstance(a, torch.SymBool) else a for a in args),
                    **{k: bool(v) if isinstance(v, torch.SymBool) else v for k, v in kwargs.items()})

    F.scaled_dot_product_attention = decided
    try:
        yield
    finally:
        F.scaled_dot_product_attention = sdpa


