"""Record a forward: every torch call the code makes, the module calls around them, and the names code gives.

Python runs the model's own code, so control flow, helper functions, keyword arguments and decorators
need no interpreter here. Three listeners run together:
- a TorchFunctionMode logs each torch call (function, arguments, result, the user code line that made it);
- hooks on every module mark where each module call starts and ends;
- a line tracer on user frames (not torch's, not the standard library's) reads which variable each value
  is bound to, so pages can use the code's own names.
"""

from __future__ import annotations

import contextlib
import sys

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from atlas.extract.trace import direct_calls
from atlas.extract.trace.frame_names import FrameNames
from atlas.extract.trace.method_calls import MethodCalls
from atlas.extract.trace.saved_tensors import SavedTensors
from atlas.extract.trace.structures import Call, OpEvent, Ref, Site, Size, Value
from atlas.extract.trace.structures import refs as _refs
from atlas.extract.trace.torch_calls import (
    DESCRIBE,
    INPLACE_DUNDERS,
    QUERIES,
    func_name,
    has_float,
    inplace_flag,
    is_input,
    run_call,
)
from atlas.extract.trace.view_writes import ViewWrites
from atlas.load.nested import tensors as _tensors
from atlas.resources import is_machinery, is_model_code


class Recorder(TorchFunctionMode, SavedTensors, FrameNames, ViewWrites, MethodCalls):
    """Listens to one forward. Use as `with Recorder(model) as rec: model(...)`, then read `rec.root`."""

    def __init__(self, model: nn.Module, to_size=lambda x: x, names: bool = True, originals: dict | None = None,
                 closed=()) -> None:
        super().__init__()
        self.model = model
        self.originals = originals or {}    # id(fake tensor) -> the model's own tensor it stands for
        self.saved: dict = {}               # id(call) -> [(storage key, bytes, floating elements)] autograd saved
        self._weights: set = set()          # storages of parameters and buffers: weights, not activations
        self._weight_like: set = set()      # ids of tensors computed from weights alone
        self._symbolic = False              # the inputs' sizes are symbols
        self._weight_ops = 0                # inside a call on weights alone: what it saves is no activation
        self.to_size = to_size              # SymInt -> sympy expression in the input symbols
        self.values: list[Value] = []
        self.by_id: dict[int, Value] = {}
        self.keep: list = []                # objects whose ids are in by_id stay alive
        self.scalars: dict = {}             # unbacked symbol -> the Value of the .item() that made it
        self.root: Call | None = None
        self.stack: list[Call] = []
        self.paused = 0
        self.names = names
        self._frames: dict[int, int] = {}   # id(frame) -> frame number, while the frame runs
        self._seen: dict[int, dict] = {}    # frame number -> {variable: id(object)} last seen
        self._frame_count = 0
        self._codes: dict = {}              # code object -> user code?
        self._positions: dict = {}          # code object -> its instructions' source positions
        self._handles: list = []
        self._hooked: set = set()           # ids of the modules hooked
        self._undo: list = []               # what puts back each hooked module's forward (trace.direct_calls)
        self._deferred: set = set()         # ids of modules whose submodules are hooked only once they run
        self._scripted: set = set()         # ids of the TorchScript modules met (they take no hooks of their own)
        self._previous_trace = None
        self._noted = False                 # note_weights() was called: weights found later are noted too
        self._owners: dict = {}             # id(tensor) -> (kind, module path, name, tensor)
        self._paths: dict = {}              # id(module) -> its path
        self._deferred.update(id(m) for m in closed)
        self._register(model, "")

    def _register(self, top: nn.Module, prefix: str) -> None:
        """Paths of `top` and the modules below it, and the owners of their parameters and buffers, in the order
        of named_modules(remove_duplicate=False); below a deferred module only once it opens."""
        pending = [(prefix, top)]
        while pending:
            path, module = pending.pop()
            self._paths.setdefault(id(module), path)
            for kind, store in (("param", module._parameters), ("buffer", module._buffers)):
                for name, t in store.items():
                    if t is not None and id(t) not in self._owners:
                        self._owners[id(t)] = (kind, path, name, t)
                        if self._noted:
                            self._note(t)
            if module is top or id(module) not in self._deferred:
                pending.extend(reversed([(f"{path}.{name}" if path else name, m)
                                         for name, m in module._modules.items() if m is not None]))

    # -- values -----------------------------------------------------------------------------
    def new_value(self, obj, kind: str, owner: str | None = None, attr: str | None = None) -> Value:
        if isinstance(obj, torch.Tensor):
            shape = tuple(self.to_size(s) for s in obj.shape)
            dtype = str(obj.dtype).removeprefix("torch.")
        else:
            shape, dtype = None, type(obj).__name__
        v = Value(len(self.values), kind, shape, dtype, obj, owner, attr)
        self.values.append(v)
        if isinstance(obj, torch.Tensor):
            self.by_id[id(obj)] = v
            self.keep.append(obj)
        return v

    def value_of(self, t: torch.Tensor) -> Value:
        v = self.by_id.get(id(t))
        if v is not None and v.obj is t:
            return v
        owner = self._owners.get(id(t))
        if owner is not None and owner[3] is t:
            v = self.new_value(t, owner[0], owner[1], owner[2])
            v.source = self.originals.get(id(t), t)
            return v
        return self.new_value(t, "external")

    def encode(self, x):
        """Arguments with tensors as Refs and symbolic sizes as Size; other constants as they are."""
        if isinstance(x, torch.Tensor):
            return Ref(self.value_of(x))
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            expr = self.to_size(x)
            v = self.scalars.get(expr)
            return Ref(v) if v is not None else Size(expr)
        if isinstance(x, tuple) and hasattr(x, "_fields"):          # named tuples (torch.return_types)
            return tuple(self.encode(i) for i in x)
        if isinstance(x, (list, tuple)):
            return type(x)(self.encode(i) for i in x) if type(x) in (list, tuple) else tuple(self.encode(i) for i in x)
        if isinstance(x, torch.Size):
            return tuple(self.encode(i) for i in x)
        if isinstance(x, slice):
            return slice(self.encode(x.start), self.encode(x.stop), self.encode(x.step))
        if isinstance(x, dict):
            return {k: self.encode(v) for k, v in x.items()}
        return x

    def _outputs(self, out, args, inplace: bool):
        """Values for what a call returned: new ones, except where it returned an input unchanged."""
        if isinstance(out, torch.Tensor):
            prev = self.by_id.get(id(out))
            if prev is not None and prev.obj is out and not inplace:
                return Ref(prev)                        # x.contiguous(), x.to(same dtype): the same value
            return Ref(self.new_value(out, "op"))
        if isinstance(out, (tuple, list)):
            return tuple(self._outputs(o, args, inplace) for o in out)
        if isinstance(out, dict):                       # transformers' ModelOutput is a dict of its fields
            return {k: self._outputs(v, args, inplace) for k, v in out.items()}
        if isinstance(out, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            v = Value(len(self.values), "op", None, type(out).__name__.lower().removeprefix("sym"), out)
            v.expr = self.to_size(out)
            self.values.append(v)
            self.scalars[v.expr] = v
            return Ref(v)
        if isinstance(out, (int, float, bool)) and not isinstance(out, bool):
            v = Value(len(self.values), "op", None, type(out).__name__, out)
            v.expr = out
            self.values.append(v)
            return Ref(v)
        return out

    # -- the torch function mode ------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.paused:
            return func(*args, **kwargs)
        if not self.names:
            return self._record(func, args, kwargs)
        sys.settrace(None)          # torch's own Python (fake tensors) and the bookkeeping are not user code
        try:
            return self._record(func, args, kwargs)
        finally:
            sys.settrace(self._global_trace)

    def _record(self, func, args, kwargs):
        name = func_name(func)
        short = name.removeprefix("Tensor.")
        if (name.startswith("Tensor.") and short in DESCRIBE) or short in QUERIES:
            return func(*args, **kwargs)
        site, frame = self._site()
        weights_only = self._from_weights(args, kwargs)
        self._weight_ops += weights_only
        try:
            out = run_call(func, short, args, kwargs)
        finally:
            self._weight_ops -= weights_only
        inplace = short in INPLACE_DUNDERS or (short.endswith("_") and not short.endswith("__")) or \
            inplace_flag(func, args, kwargs)
        self.paused += 1
        try:
            enc_args, enc_kwargs = self.encode(args), self.encode(kwargs)
            if short == "__setitem__":
                target = self.by_id.get(id(args[0]))
                if target is None:
                    target = self.value_of(args[0])
                enc_out = Ref(self.new_value(args[0], "op"))    # the changed tensor is a new value
            else:
                enc_out = self._outputs(out, args, inplace)
            event = OpEvent(func, name, tuple(enc_args), enc_kwargs, enc_out, site, inplace)
            if weights_only:
                self._note_weight_like(out)
            if short == "dropout" and self.stack and isinstance(out, torch.Tensor):
                p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
                if isinstance(p, (int, float)) and p > 0:      # training draws a mask of one byte per element
                    self.saved.setdefault(id(self.stack[-1]), []).append(
                        (("mask", id(event)), self.to_size(out.numel()), 0))
            for ref in _refs(enc_out):
                if ref.value.made_by is None and ref.value.kind == "op":
                    ref.value.made_by = event
            if frame is not None and has_float((args, kwargs)):
                event.scope = (dict(frame.f_locals), frame.f_globals)
            if self.stack:
                self.stack[-1].events.append(event)
                if inplace and isinstance(args[0], torch.Tensor) and args[0]._base is not None:
                    self._through_view(args[0], enc_out, site)
        finally:
            self.paused -= 1
        return out

    def _site(self):
        frame = sys._getframe(2)
        while frame is not None and not self._is_user(frame.f_code):
            frame = frame.f_back
        return self._site_at(frame), frame

    def _site_at(self, frame):
        if frame is None:
            return None
        code = frame.f_code
        return Site(code.co_filename, frame.f_lineno, code.co_name, self._frames.get(id(frame), -1), code,
                    self._span(code, frame.f_lasti))

    def _call_site(self):
        """The model code's line that called a module, or None where the atlas called it (the run's root module):
        the frames between are torch's own (the module's __call__), never the atlas's."""
        frame = sys._getframe(3)
        while frame is not None and not self._is_user(frame.f_code):
            if is_machinery(frame.f_code.co_filename):
                return None
            frame = frame.f_back
        return self._site_at(frame)

    def _span(self, code, lasti: int):
        positions = self._positions.get(code)
        if positions is None:
            positions = self._positions[code] = list(code.co_positions())
        i = lasti // 2
        if not 0 <= i < len(positions) or None in positions[i]:
            return None
        line, end_line, col, end_col = positions[i]
        return (line, col, end_line, end_col)

    def _is_user(self, code) -> bool:
        known = self._codes.get(code)
        if known is None:
            known = self._codes[code] = is_model_code(code.co_filename)
        return known

    # -- module calls -----------------------------------------------------------------------
    def _pre(self, module, args, kwargs):
        if self.paused:
            return None
        with self._untraced():
            self._enter(module, args, kwargs)

    def _post(self, module, args, kwargs, output):
        if self.paused or not self.stack:
            return None
        with self._untraced():
            self._leave(module, args, kwargs, output)

    @contextlib.contextmanager
    def _untraced(self):
        if self.names:
            sys.settrace(None)
        try:
            yield
        finally:
            if self.names:
                sys.settrace(self._global_trace)

    def _enter(self, module, args, kwargs):
        self.paused += 1
        try:
            for t in _tensors((args, kwargs)):
                if self.by_id.get(id(t)) is None or self.by_id[id(t)].obj is not t:
                    self.value_of(t)
            path = self._through(module, self._paths.get(id(module), "?"))
            call = Call(module, path, tuple(self.encode(args)), self.encode(kwargs),
                        parent=self.stack[-1] if self.stack else None, site=self._call_site())
            if self.stack:
                self.stack[-1].events.append(call)
            elif self.root is None:
                self.root = call
            self.stack.append(call)
        finally:
            self.paused -= 1
        return None

    def _through(self, module, path: str) -> str:
        """A module registered twice (TCN's `self.conv1`, also `self.net[0]`) is named by the parent that calls it:
        `net.0` when the Sequential runs it, not the name it was registered under first."""
        parent = self.stack[-1] if self.stack else None
        if parent is None or parent.module is None or path.rpartition(".")[0] == parent.path:
            return path
        names = [name for name, child in parent.module._modules.items() if child is module]
        if not names or parent.path == "?":
            return path
        return f"{parent.path}.{names[0]}" if parent.path else names[0]

    def _leave(self, module, args, kwargs, output):
        self.paused += 1
        try:
            call = self.stack.pop()
            call.out = self._outputs(output, args, False) if not is_input(output, args, kwargs) \
                else self.encode(output)
        finally:
            self.paused -= 1
        return None

    # -- entering and leaving -----------------------------------------------------------------
    def open(self, module: nn.Module) -> None:
        """A `closed` module (a repeated list entry the run may skip, see __init__) runs after all: the modules
        below it are hooked, and their weights known, from then on. Hooks and owners on all of a 126-layer model's
        modules from the start would cost memory for nothing."""
        self._deferred.discard(id(module))
        self._register(module, self._paths.get(id(module), ""))
        for child in module.children():
            self._hook_tree(child)

    def _hook_tree(self, top: nn.Module) -> None:
        pending = [top]
        while pending:
            module = pending.pop()
            if id(module) in self._hooked:
                continue
            if not direct_calls.hookable(module):     # TorchScript: an opaque leaf, seen by the global hooks
                self._scripted.add(id(module))
                continue
            self._hooked.add(id(module))
            self._handles.append(module.register_forward_pre_hook(self._pre, with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post, with_kwargs=True, always_call=True))
            self._undo.append(direct_calls.watch(module, self._pre, self._post, always=True))
            self._undo += self._watch_methods(module)
            if id(module) not in self._deferred:
                pending.extend(reversed([m for m in module.children()]))

    def __enter__(self):
        self._hook_tree(self.model)
        self._handles.extend(direct_calls.hook_scripted(self._scripted, self._pre, self._post))
        if self.names:
            self._previous_trace = sys.gettrace()
            sys.settrace(self._global_trace)
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            if self.names:
                sys.settrace(self._previous_trace)
            for h in self._handles:
                h.remove()
            self._handles.clear()
            for restore in reversed(self._undo):
                restore()
            self._undo.clear()
            self._hooked.clear()
            self._scripted.clear()
            while self.stack:                       # calls left open by an exception
                call = self.stack.pop()
                call.failed = str(exc[1]) if exc and exc[1] is not None else "interrupted"

    def register_inputs(self, named: dict) -> None:
        for name, t in named.items():
            for i, tensor in enumerate(_tensors(t)):
                self._symbolic = self._symbolic or any(isinstance(d, torch.SymInt) for d in tensor.shape)
                v = self.new_value(tensor, "input", attr=name if isinstance(t, torch.Tensor) else f"{name}[{i}]")
                v.names.append((0, v.attr, 0, True))



