"""The values of the small tensors a model's constructor computes from Python numbers, kept where the model is
built on the meta device and its tensors have none.

A module's integer buffers are often sizes its forward reads (EnCodec's conv `stride`, `kernel_size` and
`padding_total`), and some float buffers are computed tables (rotary `inv_freq`); made up as zeros, they break the
CPU copies that check the equations and run the fallback probes. While the factory runs, each small meta tensor
made from Python data (`torch.tensor`, `arange`, an integer `full`), and each small meta result of ops on such
tensors only, gets a shadow: the same call on the CPU, made when a copy asks for the value. A buffer that is one of
those tensors keeps its shadow. Weights never get one: they start as float tensors of no value (`empty`), and
nothing made from them is followed. The watch never fails the factory: a call it cannot follow gets no shadow.
"""

from __future__ import annotations

import operator
import weakref

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from atlas.load.nested import leaves

LIMIT = 1 << 16                         # elements: a table of sizes or positions, never a weight
_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray, torch.arange, torch.range, torch.linspace,
              torch.logspace}
_FILLED = {torch.full, torch.ones, torch.zeros}                # followed when integer or boolean
# In-place writes that replace every value (`torch.empty(...).copy_(table)`, timm's non-persistent index buffers):
# the tensor's value is what is written, whatever it held; `empty` itself holds no value.
_OVERWRITES = {"copy_", "fill_", "zero_"}
_IN_PLACE_OPERATORS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                       "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"}


def _in_place(func) -> bool:
    name = getattr(func, "__name__", "")
    return name in _IN_PLACE_OPERATORS or (name.endswith("_") and not name.startswith("_"))
_VALUES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()          # module -> {buffer name: CPU tensor}


class _Later:
    """A small tensor's CPU value, computed only when asked for: `describe` on the meta device never asks, and never
    runs a CPU kernel (the first one starts torch's CPU thread pool, 2 MB)."""

    def __init__(self, func, args, kwargs) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs
        self._value = None

    def value(self) -> torch.Tensor:
        if self._value is None:
            with torch.device("cpu"):
                self._value = self.func(*_now(self.args), **_now(self.kwargs))
            self.func = self.args = self.kwargs = None
        return self._value


def _now(x):
    if isinstance(x, _Later):
        return x.value()
    if isinstance(x, (list, tuple)):
        return type(x)(_now(i) for i in x)
    if isinstance(x, dict):
        return {k: _now(v) for k, v in x.items()}
    return x


class Watch(TorchFunctionMode):
    """Use around the factory call, inside `torch.device("meta")`; then `keep(model)`."""

    def __init__(self) -> None:
        super().__init__()
        self.shadows: dict[int, tuple[torch.Tensor, _Later]] = {}      # id(meta tensor) -> (it, its CPU value)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if _in_place(func) and args and isinstance(args[0], torch.Tensor) and args[0].device.type == "meta":
            self._written(func, args, kwargs)
            return out
        if isinstance(out, torch.Tensor) and out.device.type == "meta" and out.numel() <= LIMIT:
            try:
                shadow = self._shadow(func, args, kwargs, out)
            except Exception:  # arguments it cannot rebuild (a named tuple): that tensor stays without a value
                shadow = None
            if shadow is not None:
                self.shadows[id(out)] = (out, shadow)
        elif isinstance(out, (tuple, list)) and out and all(isinstance(t, torch.Tensor) and t.device.type == "meta"
                                                            and t.numel() <= LIMIT for t in out):
            try:                # meshgrid, unbind, split: each part the item of the call's CPU value
                whole = self._shadow(func, args, kwargs, out)
            except Exception:  # arguments it cannot rebuild: no value
                whole = None
            if whole is not None:
                for i, t in enumerate(out):
                    self.shadows[id(t)] = (t, _Later(operator.getitem, (whole, i), {}))
        return out

    def _written(self, func, args, kwargs) -> None:
        """An in-place write to a meta tensor (`coords[:, :, 0] += n`, `index.copy_(table)`), made at once on its
        CPU value, which its views share: a tensor computed before the write would read it stale. A write the
        watch cannot follow leaves the tensor, and what it is a view of, with no value: never a stale one."""
        target = args[0]
        if target.numel() > LIMIT:
            return
        if func.__name__ in _OVERWRITES and id(target) not in self.shadows:
            blank = _Later(torch.empty, (tuple(target.shape),), {"dtype": target.dtype})
            self.shadows[id(target)] = (target, blank)
        try:
            shadow = self._shadow(func, args, kwargs, target)
            if shadow is not None:
                shadow.value()
        except Exception:  # arguments it cannot rebuild, or an op the CPU does not take: no value
            shadow = None
        if shadow is None:
            for t in (target, target._base):
                if t is not None:
                    self.shadows.pop(id(t), None)

    def _shadow(self, func, args, kwargs, out) -> _Later | None:
        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        inputs = leaves((args, kwargs), torch.Tensor)
        if not inputs:
            if func in _FROM_DATA or (func in _FILLED and not out.is_floating_point() and not out.is_complex()):
                return _Later(func, args, kwargs)
            return None
        if any(t.device.type == "meta" and id(t) not in self.shadows for t in inputs):
            return None                 # made from a tensor of no value (a weight)

        def later(x):
            if isinstance(x, torch.Tensor) and x.device.type == "meta":
                return self.shadows[id(x)][1]
            if isinstance(x, (list, tuple)):
                return type(x)(later(i) for i in x)
            if isinstance(x, dict):
                return {k: later(v) for k, v in x.items()}
            return x
        return _Later(func, later(args), later(kwargs))

    def keep(self, model: nn.Module) -> None:
        for module in model.modules():
            values = {name: self.shadows[id(b)][1] for name, b in module._buffers.items()
                      if b is not None and id(b) in self.shadows and self.shadows[id(b)][0] is b}
            if values:
                _VALUES[module] = values
        self.shadows.clear()


def known(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every buffer of `model` whose value is known, by its name in `model`: its own, or the CPU value kept."""
    out = {}
    for prefix, module in model.named_modules():
        kept = _VALUES.get(module, {})
        for name, b in module._buffers.items():
            if b is None:
                continue
            full = f"{prefix}.{name}" if prefix else name
            if b.device.type != "meta":
                out[full] = b
            elif name in kept:
                try:
                    value = kept[name].value()
                except Exception:  # an op the CPU does not take as the meta device did: no value
                    continue
                if isinstance(value, torch.Tensor) and value.shape == b.shape and value.dtype == b.dtype:
                    out[full] = value
    return out
