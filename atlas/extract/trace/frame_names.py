"""The names model code gives to values: a line tracer on the model's own frames reads which variable each
recorded tensor is bound to, so pages can use the code's own names.

Part of the recorder (atlas.extract.trace.recorder): it reads the recorder's values and call stack.
"""

from __future__ import annotations

import inspect

import torch
from torch import nn


class FrameNames:
    """The recorder's line tracer: frame numbers, and each variable's bindings to recorded values."""

    # -- names from user frames ---------------------------------------------------------------
    def _global_trace(self, frame, event, arg):
        if event != "call" or not self._is_user(frame.f_code):
            return None
        self._frame_count += 1
        number = self._frame_count
        self._frames[id(frame)] = number
        self._seen[number] = {}
        if self.stack:
            call = self.stack[-1]
            call.frames.add(number)
            if call.forward_frame is None and frame.f_code is forward_code(call.module, call.method):
                call.forward_frame = number
        return self._local_trace

    def _local_trace(self, frame, event, arg):
        if event in ("line", "return"):
            number = self._frames.get(id(frame))
            if number is not None:
                self._scan(frame, number)
                if event == "return":
                    self._frames.pop(id(frame), None)
        return self._local_trace

    def _scan(self, frame, number: int) -> None:
        seen = self._seen[number]
        code = frame.f_code
        n_params = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
        params = code.co_varnames[:n_params]
        for var, obj in frame.f_locals.items():
            if isinstance(obj, torch.Tensor):
                v = self.by_id.get(id(obj))
                if v is not None and v.obj is obj and seen.get(var) != v.id:
                    seen[var] = v.id
                    v.names.append((number, var, frame.f_lineno, var in params))


def forward_code(module: nn.Module, method: str | None = None):
    """The code object of a module's own forward() (or of the method given), under any decorators; None for a
    TorchScript module, whose class's `forward` is TorchScript's own (reading it raises AttributeError)."""
    if isinstance(module, torch.jit.ScriptModule):
        return None
    fn = inspect.unwrap(getattr(type(module), method or "forward"))
    return getattr(fn, "__code__", None)
