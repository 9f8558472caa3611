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
import inspect
import sys
import weakref

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from atlas.extract.trace import direct_calls
from atlas.extract.trace.structures import Call, OpEvent, Ref, Site, Size, Value
from atlas.extract.trace.structures import refs as _refs
from atlas.load.nested import leaves
from atlas.resources import is_model_code

# Tensor attributes that describe a tensor rather than compute one: never recorded.
_DESCRIBE = {"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_meta", "grad", "grad_fn",
             "layout", "is_leaf", "names", "is_sparse", "is_quantized", "is_nested", "_base", "data", "output_nr",
             "_version", "is_mkldnn", "is_cpu", "itemsize", "nbytes", "_cdata", "retains_grad"}
_QUERIES = {"size", "dim", "numel", "stride", "is_floating_point", "is_complex", "element_size", "is_contiguous",
            "__len__", "__format__", "__repr__", "data_ptr", "get_device", "storage_offset", "nelement",
            "ndimension", "__hash__", "is_signed", "untyped_storage", "storage", "__reduce_ex__", "__deepcopy__",
            "has_names", "is_inference", "is_set_to", "__index__", "__int__", "__float__", "__bool__", "tolist",
            "__iter__", "__dir__", "__array__", "__getstate__", "__setstate__", "_typed_storage",
            "requires_grad_", "retain_grad", "register_hook", "__contains__", "__torch_function__",
            # torch.ops.prim's questions about a tensor, which autograd.Function.apply asks of its inputs
            "device.default", "layout.default", "dtype.default"}
# views of every element of a tensor, in its order: written into, the tensor is the view's new value reshaped back
_RESHAPING_VIEWS = frozenset({"view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "unsqueeze",
                              "squeeze"})
_MAX_VIEW_CHAIN = 8        # views of views followed back to the tensor they view, at most
_INPLACE_DUNDERS = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                    "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__", "__setitem__"}


def func_name(func) -> str:
    """A stable, readable name for a torch callable: "cat", "Tensor.view", "linear", "Tensor.shape"."""
    self = getattr(func, "__self__", None)
    if type(self).__name__ == "getset_descriptor":
        return f"Tensor.{self.__name__}"
    owner = getattr(func, "__objclass__", None)
    name = getattr(func, "__name__", None) or type(func).__name__
    if owner is not None and owner.__name__ in ("TensorBase", "Tensor"):
        return f"Tensor.{name}"
    qual = getattr(func, "__qualname__", "") or ""
    if qual.startswith(("Tensor.", "TensorBase.")):
        return "Tensor." + qual.split(".", 1)[1]
    return name




def forward_code(module: nn.Module):
    """The code object of a module's own forward(), under any decorators."""
    fn = inspect.unwrap(type(module).forward)
    return getattr(fn, "__code__", None)


class Recorder(TorchFunctionMode):
    """Listens to one forward. Use as `with Recorder(model) as rec: model(...)`, then read `rec.root`."""

    def __init__(self, model: nn.Module, to_size=lambda x: x, names: bool = True, originals: dict | None = None,
                 closed=()) -> None:
        super().__init__()
        self.model = model
        self.originals = originals or {}    # id(fake tensor) -> the model's own tensor it stands for
        self.saved: dict = {}               # id(call) -> [(storage key, bytes)] autograd saved while it ran
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
        if (name.startswith("Tensor.") and short in _DESCRIBE) or short in _QUERIES:
            return func(*args, **kwargs)
        site, frame = self._site()
        weights_only = self._from_weights(args, kwargs)
        self._weight_ops += weights_only
        try:
            out = _call(func, short, args, kwargs)
        finally:
            self._weight_ops -= weights_only
        inplace = short in _INPLACE_DUNDERS or (short.endswith("_") and not short.endswith("__")) or \
            _inplace_flag(func, args, kwargs)
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
                        (("mask", id(event)), self.to_size(out.numel())))
            for ref in _refs(enc_out):
                if ref.value.made_by is None and ref.value.kind == "op":
                    ref.value.made_by = event
            if frame is not None and _has_float((args, kwargs)):
                event.scope = (dict(frame.f_locals), frame.f_globals)
            if self.stack:
                self.stack[-1].events.append(event)
                if inplace and isinstance(args[0], torch.Tensor) and args[0]._base is not None:
                    self._through_view(args[0], enc_out, site)
        finally:
            self.paused -= 1
        return out

    def _through_view(self, view: torch.Tensor, enc_out, site) -> None:
        """An in-place write into a view changed what it views too, up to the tensor that owns the storage. Each
        view on the way, made from the one above it, is given its new value in turn: one made by indexing
        (`out[..., :4].copy_(a)`) as `above[index] = its new value`; one reshaping every element of the one above
        (BigBird's `attention_probs.view(b, h, n, k, n, k)[:, :, 1].scatter_(...)`) as its new value reshaped
        back, the same elements in the same order. Views made otherwise (a transpose) are left."""
        refs = _refs(enc_out)
        before = self.stack[-1].events[-1].args[0] if self.stack[-1].events else None
        if len(refs) != 1 or not isinstance(before, Ref) or id(view._base) not in self.by_id:
            return
        chain, value = [], before.value             # from the view written into, up to the owner
        while value.obj is not view._base:
            made = _made_as_view(value)
            kind = made.name.removeprefix("Tensor.") if made is not None else None
            if kind != "__getitem__" and kind not in _RESHAPING_VIEWS or len(chain) == _MAX_VIEW_CHAIN or \
                    any(isinstance(a, torch.dtype) for a in made.args[1:]):     # x.view(dtype): other elements
                return
            above = made.args[0].value
            latest = self.by_id.get(id(above.obj))
            if kind != "__getitem__" and latest is not above and not (   # written since, other than through it
                    latest is not None and latest.made_by is not None and latest.made_by.name == "Tensor.reshape"
                    and latest.made_by.args[0].value.obj is value.obj):
                return
            chain.append((made, above))
            value = above
        new = refs[0]
        for made, above in chain:
            if made.name == "Tensor.__getitem__":
                latest = self.by_id.get(id(above.obj), above)
                func, name, args = torch.Tensor.__setitem__, "Tensor.__setitem__", (Ref(latest), made.args[1], new)
            else:
                func, name, args = torch.Tensor.reshape, "Tensor.reshape", (new, self.encode(tuple(above.obj.shape)))
            out = Ref(self.new_value(above.obj, "op"))
            event = OpEvent(func, name, args, {}, out, site, name == "Tensor.__setitem__")
            out.value.made_by = event
            self.stack[-1].events.append(event)
            new = out

    def _site(self):
        frame = sys._getframe(2)
        while frame is not None and not self._is_user(frame.f_code):
            frame = frame.f_back
        if frame is None:
            return None, None
        number = self._frames.get(id(frame), -1)
        code = frame.f_code
        return Site(code.co_filename, frame.f_lineno, code.co_name, number, code,
                    self._span(code, frame.f_lasti)), frame

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
                        parent=self.stack[-1] if self.stack else None)
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
            call.out = self._outputs(output, args, False) if not _is_input(output, args, kwargs) \
                else self.encode(output)
        finally:
            self.paused -= 1
        return None

    # -- what autograd saves for the backward pass ---------------------------------------------
    def pack(self, t):
        if isinstance(t, torch.Tensor) and self.stack and not self._weight_ops:
            try:
                storage = t.untyped_storage()
                key = storage._cdata
                if key not in self._weights:
                    self.saved.setdefault(id(self.stack[-1]), []).append((key, self.to_size(storage.nbytes())))
            except (RuntimeError, NotImplementedError):    # a tensor without a storage of its own: nothing saved
                pass
        self.paused += 1
        try:
            return _detached(t)
        finally:
            self.paused -= 1

    def saving(self):
        """autograd's saved-tensor hooks for this run. They hold the recorder weakly: autograd keeps them in the
        graph of every recorded output, and the recorder keeps those outputs, a cycle through C++ that Python's
        collector cannot see, so a strong hold would keep the whole record alive for good."""
        ref = weakref.ref(self)

        def pack(t):
            rec = ref()
            return rec.pack(t) if rec is not None else _detached(t)

        return torch.autograd.graph.saved_tensors_hooks(pack, _unpack)

    def _from_weights(self, args, kwargs) -> bool:
        """A call on weights alone (weight_norm's g·v/‖v‖, Mamba's −exp(A_log)): what it saves for the backward
        pass, and what it gives (see _note_weight_like), are weights' intermediates, not activations. In a record
        at concrete sizes no size tells a weight from an activation, and nothing is left out."""
        tensors = _tensors((args, kwargs))
        if not self._symbolic or not tensors:
            return False
        for t in tensors:
            v = self.by_id.get(id(t))
            if id(t) not in self._weight_like and not (v is not None and v.obj is t and v.kind in ("param", "buffer")):
                return False
        return True

    def _note_weight_like(self, out) -> None:
        """What a call on weights alone gives, of a size no input sets, is a weight too: the memory count leaves it
        out, as it leaves out the weights it is made of."""
        for t in _tensors(out):
            if any(isinstance(d, torch.SymInt) for d in t.shape):
                continue        # as large as the input (learned queries expanded to the batch): an activation
            self._weight_like.add(id(t))
            with contextlib.suppress(RuntimeError, NotImplementedError):
                self._weights.add(t.untyped_storage()._cdata)

    def note_weights(self) -> None:
        self._noted = True
        for _, _, _, t in self._owners.values():
            self._note(t)

    def _note(self, t: torch.Tensor) -> None:
        with contextlib.suppress(RuntimeError, NotImplementedError):
            self._weights.add(t.untyped_storage()._cdata)

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
            if call.forward_frame is None and frame.f_code is forward_code(call.module):
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

    # -- entering and leaving -----------------------------------------------------------------
    def open(self, module: nn.Module) -> None:
        """A `closed` module (a repeated list entry the run may skip, see __init__) runs after all: the modules
        below it are hooked, and their weights known, from now on. Until then hooks and owners on all of a
        126-layer model's modules cost memory for nothing."""
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
            self._hooked.add(id(module))
            self._handles.append(module.register_forward_pre_hook(self._pre, with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post, with_kwargs=True, always_call=True))
            self._undo.append(direct_calls.watch(module, self._pre, self._post, always=True))
            if id(module) not in self._deferred:
                pending.extend(reversed([m for m in module.children()]))

    def __enter__(self):
        self._hook_tree(self.model)
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
            while self.stack:                       # calls left open by an exception
                call = self.stack.pop()
                call.failed = str(exc[1]) if exc and exc[1] is not None else "interrupted"

    def register_inputs(self, named: dict) -> None:
        for name, t in named.items():
            for i, tensor in enumerate(_tensors(t)):
                self._symbolic = self._symbolic or any(isinstance(d, torch.SymInt) for d in tensor.shape)
                v = self.new_value(tensor, "input", attr=name if isinstance(t, torch.Tensor) else f"{name}[{i}]")
                v.names.append((0, v.attr, 0, True))


_RECURRENT = ("lstm", "gru", "rnn_tanh", "rnn_relu")


def _call(func, short: str, args, kwargs):
    """Run a torch call. A recurrent kernel, whose C++ needs concrete sizes (and fixes them on the way before it
    fails), runs as its Python decomposition when sizes are symbolic, so a symbolic record goes through an LSTM."""
    if short in _RECURRENT and any(isinstance(s, torch.SymInt) for t in _tensors(args) for s in t.shape):
        from torch._decomp import decomposition_table
        # An input that needs gradients sends the decomposition through a Python loop over time, fixing T; the
        # kernel's own saved activations are then not counted (the recorded layers around it still are).
        args = (args[0].detach(), *args[1:]) if isinstance(args[0], torch.Tensor) else args
        with torch.no_grad():
            return decomposition_table[getattr(torch.ops.aten, short).input](*args, **kwargs)
    if short in _GROUPED_MM and len(args) > 1 and _meta_kernel_only_bf16(args[0], args[1]):
        # torch's meta kernel for grouped matmuls takes bfloat16 alone, as CUDA's does, where the CPU kernel takes
        # any float. The record keeps the call as the code made it; its result here comes from a product of the
        # same shape that saves what the kernel saves for the backward pass (the tokens, and the experts' weights,
        # which are no activations): a float32 model is recorded in float32.
        a, b = args[0], args[1]
        if a.dim() == 2 and b.dim() == 3 and kwargs.get("out_dtype") in (None, a.dtype) and kwargs.get("bias") is None \
                and len(args) < 4:
            return a @ b[0]                 # (tokens, in) x (experts, in, out), grouped by offsets -> (tokens, out)
        return func(a.to(torch.bfloat16), b.to(torch.bfloat16), *args[2:], **kwargs).to(a.dtype)
    if short == "interpolate" and args:
        from atlas.extract.trace import upsample
        out = upsample.interpolate(*args, **kwargs) if upsample.symbolic(args, kwargs) else None
        if out is not None:
            return out
    return func(*args, **kwargs)


_GROUPED_MM = ("grouped_mm", "_grouped_mm")


def _meta_kernel_only_bf16(a, b) -> bool:
    fake = isinstance(a, torch.Tensor) and (a.is_meta or type(a).__name__ == "FakeTensor")
    return fake and isinstance(b, torch.Tensor) and a.is_floating_point() and a.dtype == b.dtype != torch.bfloat16


def _unpack(t):
    return t


def _detached(t):
    """What autograd keeps of a saved tensor: the same data without its graph. Kept as it is, an output saved for
    its own backward (rsqrt's, exp's) holds the node that holds it, a cycle through C++ that no collector breaks:
    the graph, its fake tensors and their ShapeEnv would outlive the run."""
    return t.detach() if isinstance(t, torch.Tensor) else t


def _has_float(x) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_float(i) for i in x)
    if isinstance(x, dict):
        return any(_has_float(i) for i in x.values())
    return False


def _tensors(x) -> list[torch.Tensor]:
    return leaves(x, torch.Tensor)


_INPLACE_AT: dict = {}      # a callable -> the position of its `inplace` parameter (-1: none)


def _made_as_view(value):
    """The call that made `value`'s tensor as a view of another, past the writes into the tensor since."""
    made = value.made_by
    while made is not None and made.args and isinstance(made.args[0], Ref) and made.args[0].value.obj is value.obj \
            and made.args[0].value is not value and (made.inplace or made.name == "Tensor.__setitem__"):
        value = made.args[0].value
        made = value.made_by
    return made if made is not None and made.args and isinstance(made.args[0], Ref) else None


def _inplace_flag(func, args, kwargs) -> bool:
    """A functional asked to change its input: F.relu(x, inplace=True), F.dropout(x, 0.1, False, True), as
    nn.ReLU(inplace=True) calls it. The result is the input object, changed: a new value, not the same one."""
    if "inplace" in kwargs:
        return bool(kwargs["inplace"])
    try:
        at = _INPLACE_AT[func]
    except (KeyError, TypeError):
        try:
            names = list(inspect.signature(func).parameters)
        except (TypeError, ValueError):         # a builtin without a signature: torch.relu_ is named as in-place
            names = []
        at = names.index("inplace") if "inplace" in names else -1
        with contextlib.suppress(TypeError):
            _INPLACE_AT[func] = at
    return 0 <= at < len(args) and args[at] is True


def _is_input(output, args, kwargs) -> bool:
    """A module that returns one of its inputs unchanged (Identity, eval-mode Dropout in place)."""
    if not isinstance(output, torch.Tensor):
        return False
    return any(output is t for t in _tensors((args, kwargs)))
