"""The check's inputs: made up where the component takes them from outside, remade where the model computed them.

Floating tensors are random, at the record's sizes. An integer, boolean or complex tensor the model computed
itself (relative position buckets, a rotary table, token indices) is remade by running again the recorded
calls that made it, from constants and the model's inputs, at the check's sizes: a made-up one could index
past the table it is meant for, or lack the structure the code relies on. Where it cannot be remade (it
was computed from another component's weights, or from a tensor no recorded call made), it is made up as a
model input would be, and the check says so if forward() then fails on it. Where forward() fails on random
floating inputs, the check is tried again with the floating ones the model computed remade too: a mask of ones
whose running count gives positions (OPT's learned positions) indexes out of range when it is random.
"""

from __future__ import annotations

import inspect

import torch
from sympy.logic.boolalg import Boolean
from torch import nn

from atlas.errors import where
from atlas.extract.trace.structures import Ref, Size
from atlas.i18n import msg
from atlas.load.nested import mapped

MAX_REPLAY = 400                        # recorded calls remade for one input, at most


class CannotRemake(Exception):
    """A value the check cannot make again from the record."""


class CheckInputs:
    """Tensors standing for the recorded ones, one per recorded value."""

    def __init__(self, inst: nn.Module, module: nn.Module, sizes: dict, dtype: torch.dtype, seed: int,
                 working: str = "float32", remake_floats: bool = False) -> None:
        self.gen = torch.Generator().manual_seed(seed + 1)
        self.remake_floats = remake_floats              # floating values the model computed: remade, not random
        self.sizes, self.dtype, self.working = sizes, dtype, working
        tables = [m.num_embeddings for m in inst.modules() if isinstance(m, nn.Embedding)]
        self.high = min(tables) if tables else 2        # indices stay in range of the smallest table they may meet
        self.made: dict[int, object] = {}               # Value id -> what the component gets for it
        self.remade: dict[int, object] = {}             # Value id -> the value made again on the way to an input
        self.made_up: dict = {}                         # input computed by the model but made up -> why (Text)
        self.computed_floats: list[str] = []            # floating inputs the model computes: random, or remade
        self.own = _own_tensors(module, inst)           # id(a recorded weight) -> the instance's real tensor
        self._replayed = 0

    def size(self, s):
        if isinstance(s, (int, float)):
            return s
        value = s.subs({sym: self.sizes[str(sym)] for sym in s.free_symbols if str(sym) in self.sizes})
        if isinstance(value, Boolean):              # a comparison of sizes the code made (T % 8 == 0)
            return bool(value)
        return int(value) if value.is_Integer else float(value)

    def tensor(self, value, name: str):
        if value.id in self.made:
            return self.made[value.id]
        if value.shape is None:                     # a number the record computed from sizes
            return self.size(value.expr) if value.expr is not None else value.obj
        dt = getattr(torch, value.dtype)
        t = None
        if (self.remake_floats or not dt.is_floating_point) and value.made_by is not None:
            try:
                self._replayed = 0
                t = self._fitting(self._remade(value), value)
            except CannotRemake as exc:     # integers index: random ones may not fit (a mask, a table is any data)
                if not (dt.is_complex or dt == torch.bool or dt.is_floating_point):
                    self.made_up[name] = exc.args[0]
        if dt.is_floating_point and value.made_by is not None and (t is not None or not self.remake_floats):
            self.computed_floats.append(name)
        if t is None:
            t = self._random(value, name, dt)
        self.made[value.id] = t
        return t

    def _fitting(self, t, value):
        """A remade tensor, if it has the recorded dtype and the record's shape at the check's sizes. A floating one
        is remade from the check's weights and inputs, in the check's precision: any floating dtype fits, and it
        is given the precision a made-up one would have."""
        dt = getattr(torch, value.dtype)
        if isinstance(t, torch.Tensor) and t.dtype.is_floating_point and dt.is_floating_point:
            t = t.to(self._float_dtype(value, dt))
            dt = t.dtype
        want = f"{str(dt).removeprefix('torch.')}{[self.size(s) for s in value.shape]}"
        got = (f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}" if isinstance(t, torch.Tensor)
               else type(t).__name__)
        if got != want:
            raise CannotRemake(msg("made again, it is %(got)s, not %(want)s", got=got, want=want))
        return t

    def _random(self, value, name: str, dt: torch.dtype) -> torch.Tensor:
        shape = [self.size(s) for s in value.shape]
        if dt.is_floating_point:
            return torch.randn(shape, generator=self.gen, dtype=torch.float64).to(self._float_dtype(value, dt))
        if dt.is_complex:
            wide = torch.complex128 if self.dtype == torch.float64 else dt
            return torch.randn(shape, generator=self.gen, dtype=torch.complex128).to(wide)
        if dt == torch.bool:
            return torch.rand(shape, generator=self.gen) < 0.7
        if "position" in name and shape and value.kind == "input":     # the model's own position ids
            return torch.arange(shape[-1], dtype=dt).expand(shape).clone()
        return torch.randint(0, self.high, shape, generator=self.gen, dtype=dt)

    def _float_dtype(self, value, dt: torch.dtype) -> torch.dtype:
        """A floating input's dtype in the check: the check's own where the record ran in its working precision."""
        working = dt.itemsize >= 4 or value.dtype == self.working
        return self.dtype if working else dt

    def rebuild(self, x, name: str, default=inspect.Parameter.empty):
        if isinstance(x, Ref):
            return self.tensor(x.value, name)
        if isinstance(x, Size):
            return self.size(x.expr)
        if isinstance(x, tuple):
            return tuple(self.rebuild(i, name) for i in x)
        if isinstance(x, list):
            return [self.rebuild(i, name) for i in x]
        if isinstance(x, dict):
            return {k: self.rebuild(v, k) for k, v in x.items()}
        if _is_object(x) and default is not inspect.Parameter.empty:
            return default
        return x

    # -- remaking a value from the calls that made it ----------------------------------------------
    def _remade(self, value):
        """The value, computed again by the recorded calls that made it (each remade value kept, so a tensor
        used twice is one tensor)."""
        for known in (self.made, self.remade):
            if value.id in known:
                return known[value.id]
        if value.kind == "input":                   # the model's own input: made up as the check makes one
            return self.tensor(value, value.attr or "")
        if value.kind in ("param", "buffer"):
            own = self.own.get(id(value.source if value.source is not None else value.obj))
            if own is None:
                weight = "`" + (f"{value.owner}.{value.attr}" if value.owner else str(value.attr)) + "`"
                raise CannotRemake(msg("it is computed from %(weight)s, a weight of another component", weight=weight))
            return own
        ev = value.made_by
        if ev is None:
            raise CannotRemake(msg("it is computed from a tensor that no recorded call made"))
        self._replayed += 1
        if self._replayed > MAX_REPLAY:
            raise CannotRemake(msg("it takes more than %(count)s recorded calls to make", count=MAX_REPLAY))
        args, kwargs = self._decoded(ev.args), self._decoded(ev.kwargs)
        short = ev.name.removeprefix("Tensor.")
        if (ev.inplace or short == "__setitem__") and args and isinstance(args[0], torch.Tensor):
            args = (args[0].clone(),) + tuple(args[1:])         # the earlier value stays as it was
        try:
            with torch.no_grad():
                out = ev.func(*args, **kwargs)
        except Exception as exc:  # the call does not run again here: the value is made up instead
            raise CannotRemake(msg("%(call)s failed when made again: %(error)s",
                                   call=ev.name, error=where(exc))) from None
        if short == "__setitem__":
            out = args[0]
        _bind(ev.out, out, self.remade)
        if value.id not in self.remade:
            raise CannotRemake(msg("%(call)s did not give it back when made again", call=ev.name))
        return self.remade[value.id]

    def _decoded(self, x):
        return mapped(x, self._decoded_item)

    def _decoded_item(self, x):
        if isinstance(x, Ref):
            return self._remade(x.value)
        if isinstance(x, Size):
            try:
                return self.size(x.expr)
            except TypeError:   # a size the data decides inside the model: no check size gives it
                raise CannotRemake(msg("it needs the size %(size)s, which the data decides",
                                       size=str(x.expr))) from None
        if isinstance(x, torch.device):
            return torch.device("cpu")
        return x


def _bind(out, result, made: dict) -> None:
    """Each recorded output's value, from what the call returned now."""
    if isinstance(out, Ref):
        made.setdefault(out.value.id, result)
    elif isinstance(out, (tuple, list)) and isinstance(result, (tuple, list)) and len(out) == len(result):
        for o, r in zip(out, result):
            _bind(o, r, made)
    elif isinstance(out, dict) and isinstance(result, dict):
        for k, o in out.items():
            if k in result:
                _bind(o, result[k], made)


def _own_tensors(module: nn.Module, inst: nn.Module) -> dict:
    """id(each parameter and buffer of the recorded module) -> the checked copy's tensor at the same place."""
    real = dict(inst.named_parameters(remove_duplicate=False)) | dict(inst.named_buffers(remove_duplicate=False))
    out = {}
    tensors = list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))
    for name, t in tensors:
        if name in real:
            out.setdefault(id(t), real[name])
    return out


def _is_object(x) -> bool:
    if x is None or isinstance(x, (bool, int, float, str, torch.dtype, torch.device)):
        return False
    if isinstance(x, (tuple, list)):
        return any(_is_object(i) for i in x)
    return type(x).__module__.split(".")[0] not in ("torch", "builtins")


def copies(x, memo: dict | None = None):
    """Arguments with every tensor cloned (a tensor passed twice stays one tensor): what forward() writes into
    its inputs in place (a recurrent state) stays out of what the equations then read."""
    memo = {} if memo is None else memo
    if isinstance(x, torch.Tensor):
        if id(x) not in memo:
            memo[id(x)] = x.clone()
        return memo[id(x)]
    if isinstance(x, tuple):
        items = [copies(i, memo) for i in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    if isinstance(x, list):
        return [copies(i, memo) for i in x]
    if isinstance(x, dict) and type(x) is dict:
        return {k: copies(v, memo) for k, v in x.items()}
    return x
