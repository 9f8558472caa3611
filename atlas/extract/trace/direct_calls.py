"""Module calls that go around `__call__`: code that runs a child's `forward()` itself (SqueezeBERT's encoder runs
`layer.forward(...)` on each layer) fires none of the child's hooks, and the child would read as never called while
its own children ran. While `watching` is open, each module's `forward` is looked up through a wrapper that hands
such a call to the same listeners the hooks have; a call through `__call__` passes straight on, its hooks fire.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types

import torch
from torch import nn
from torch.nn.modules import module as module_hooks

_NONE = object()


@contextlib.contextmanager
def watching(modules, enter, leave, always: bool = False):
    """`enter(module, args, kwargs)` (None: nothing) and `leave(module, args, kwargs, output)` around every call of
    a module's forward() made by other code than `__call__`, for the modules given, where a forward pre-hook and a
    forward hook would be called; what they return is not used. With `always`, `leave` is called with None for a
    call that raised, as an `always_call` hook is."""
    undo = []
    try:
        for module in modules:
            undo.append(watch(module, enter, leave, always))
        yield
    finally:
        for restore in reversed(undo):
            restore()


def hookable(module: nn.Module) -> bool:
    """False for a TorchScript module (`torch.jit.script(...)`): it takes no hooks and no `forward` of ours, and
    its calls run in TorchScript's interpreter, out of a recording's sight. The atlas documents it as an opaque
    leaf."""
    return not isinstance(module, torch.jit.ScriptModule)


def hook_scripted(ids: set, enter, leave) -> list:
    """Handles of two global hooks that call `enter(module, args, {})` and `leave(module, args, {}, output)` around
    each call of a TorchScript module whose id is in `ids` (a set the caller may add to later): such a module takes
    no hooks of its own, but torch's global hooks see its calls."""
    def pre(module, args):
        if id(module) in ids and enter is not None:
            enter(module, args, {})

    def post(module, args, output):
        if id(module) in ids:
            leave(module, args, {}, output)
    return [module_hooks.register_module_forward_pre_hook(pre),
            module_hooks.register_module_forward_hook(post, always_call=True)]


def watch(module: nn.Module, enter, leave, always: bool = False, method: str = "forward"):
    """Watch one module (see `watching`); returns what puts its own `forward` attribute back, if it had one. With
    `method`, another method of it instead (`get_bias`, which its parent calls instead of the module): every call
    from other code than the module's own is a call of the module. A TorchScript module is not watched so."""
    if not hookable(module) or (method == "forward" and type(module).forward is nn.Module.forward):
        return _nothing
    own = module.__dict__.get(method, _NONE)
    module.__dict__[method] = _direct(module, getattr(module, method), enter, leave, always, _call_codes())

    def restore():
        if own is _NONE:
            module.__dict__.pop(method, None)
        else:
            module.__dict__[method] = own
    return restore


def _nothing():
    pass


def _call_codes() -> frozenset:
    """The frames that run a module's forward for `__call__`: torch's _call_impl as it is now (a profiler may have
    put its own in), and the closure it runs when hooks are present."""
    code = nn.Module._call_impl.__code__
    if _CODES.get("of") is not code:
        _CODES["of"], _CODES["codes"] = code, frozenset(
            {code} | {c for c in code.co_consts if isinstance(c, types.CodeType)})
    return _CODES["codes"]


_CODES: dict = {}


def _direct(module: nn.Module, forward, enter, leave, always: bool, call_codes: frozenset):
    @functools.wraps(forward)
    def call(*args, **kwargs):
        caller = sys._getframe(1)
        # through __call__ (its hooks fire), or the module's own code calling its forward again (`self.forward(x[None])`
        # inside forward): one call, not another
        if caller.f_code in call_codes or caller.f_locals.get("self") is module:
            return forward(*args, **kwargs)
        if enter is not None:
            enter(module, args, kwargs)
        try:
            out = forward(*args, **kwargs)
        except BaseException:
            if always:
                leave(module, args, kwargs, None)
            raise
        leave(module, args, kwargs, out)
        return out
    return call
