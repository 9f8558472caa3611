"""Repeated list entries run once: a later entry called with exactly the inputs the first saw returns fresh
tensors of the first one's output shapes instead of running, so a deep model's repeated layers run once, not
once each."""

from __future__ import annotations

import contextlib
import sys

import torch
from torch import nn

from atlas.extract.trace import entry_kinds
from atlas.extract.trace.recorder import Recorder
from atlas.extract.trace.structures import Call, Ref


def later_entries(model: nn.Module, repeats) -> list[tuple[nn.Module, nn.Module]]:
    """(entry, first entry of its kind) for every entry of each group of identical list entries but the first of
    each kind (atlas.extract.trace.entry_kinds): an entry may be skipped only for one that has its settings."""
    out, seen = [], set()
    for paths in repeats:
        if len(paths) < 2:
            continue
        entries = [model.get_submodule(p) for p in paths]
        if not all(entry_kinds.called(e) for e in entries):
            continue
        firsts: dict = {}
        for module, kind in zip(entries, entry_kinds.kinds(entries)):
            first = firsts.setdefault(kind, module)
            if module is not first and "forward" not in vars(module) and id(module) not in seen:
                seen.add(id(module))
                out.append((module, first))
    return out


@contextlib.contextmanager
def skipping(later, rec: Recorder, opening):
    """Each later entry, when called with exactly the inputs the first entry saw, returns fresh tensors of the
    first entry's output shapes instead of running; one that must run is first opened (`opening`)."""
    for module, first in later:
        module.forward = _skipper(module, first, rec, opening)
    try:
        yield
    finally:
        for module, _ in later:
            del module.forward


def _skipper(module: nn.Module, first: nn.Module, rec: Recorder, opening):
    real = type(module).forward.__get__(module)

    def forward(*args, **kwargs):
        out = _untraced(_repeat, rec, module, first, args, kwargs)
        if out is not None:
            return out
        rec.paused += 1
        try:
            _untraced(opening, module)
        finally:
            rec.paused -= 1
        return real(*args, **kwargs)

    return forward


def _untraced(fn, *args):
    """`fn(*args)` with the name tracer off: the check and the fresh outputs run only torch's Python (fake
    tensors), whose every call the tracer would otherwise see; it costs more than the check itself."""
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        return fn(*args)
    finally:
        sys.settrace(tracer)


def _repeat(rec: Recorder, module: nn.Module, first: nn.Module, args, kwargs):
    """Fresh outputs of the first entry's shapes when `module` is called with exactly the inputs the first entry
    saw (and the call is marked skipped); None when it must run."""
    seen = _first_call(rec, first)
    if seen is None or seen.failed is not None or not _same_inputs(rec, seen, args, kwargs):
        return None
    rec.paused += 1
    try:
        out = _like(seen.out)
    finally:
        rec.paused -= 1
    if out is not None:
        current = rec.stack[-1] if rec.stack else None
        if current is not None and current.module is module:
            current.skipped, current.repeats = True, seen
    return out


def _first_call(rec: Recorder, module: nn.Module) -> Call | None:
    if rec.root is None:
        return None
    for call in rec.root.calls():
        if call.module is module and call.out is not None:
            return call
    return None


def _signature(x, size):
    """What a call's inputs look like: tensors by shape (as expressions, so no guard is added) and dtype."""
    if isinstance(x, Ref):
        x = x.value.obj
    if isinstance(x, torch.Tensor):
        return ("t", tuple(str(size(s)) for s in x.shape), str(x.dtype))
    if isinstance(x, (tuple, list)):
        return tuple(_signature(i, size) for i in x)
    if isinstance(x, dict):
        return tuple((k, _signature(v, size)) for k, v in x.items())
    if isinstance(x, (int, float, bool, str)) or x is None:
        return ("c", repr(x))
    return ("o", type(x).__name__)


def _same_inputs(rec: Recorder, seen: Call, args, kwargs) -> bool:
    rec.paused += 1
    try:
        # and one tensor passed to the same places: an entry's code may read either of two places that hold one
        size = rec.to_size
        return _signature((seen.args, seen.kwargs), size) == _signature((tuple(args), dict(kwargs)), size) \
            and entry_kinds.shared(seen.args, seen.kwargs) == entry_kinds.shared(args, kwargs)
    except Exception:  # sizes that cannot be compared without a guard: run the entry
        return False
    finally:
        rec.paused -= 1


def _like(out):
    """Fresh tensors shaped like a recorded output; None where it holds anything else. Contiguous ones: `empty_like`
    would carry the strides over, which on fake tensors of symbolic sizes is a Python computation of the layout,
    several times the cost of a contiguous tensor's, made for every skipped entry."""
    if isinstance(out, Ref):
        obj = out.value.obj
        return torch.empty(obj.shape, dtype=obj.dtype, device=obj.device) if isinstance(obj, torch.Tensor) else None
    if isinstance(out, tuple):
        items = [_like(o) if o is not None else None for o in out]
        return None if any(i is None and o is not None for i, o in zip(items, out)) else tuple(items)
    return None
