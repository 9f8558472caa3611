"""The torch calls a forward makes, as the recorder sees them: their names, which ones it keeps (not a question
about a tensor, such as its shape), which change their input in place, and those that run otherwise on symbolic
sizes (recurrent kernels, grouped matmuls and interpolation, whose C++ needs concrete sizes or one dtype)."""

from __future__ import annotations

import contextlib
import inspect

import torch

from atlas.load.nested import tensors as _tensors

_RECURRENT = ("lstm", "gru", "rnn_tanh", "rnn_relu")


def run_call(func, short: str, args, kwargs):
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


# Tensor attributes that describe a tensor rather than compute one: never recorded.
DESCRIBE = {"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_meta", "grad", "grad_fn",
             "layout", "is_leaf", "names", "is_sparse", "is_quantized", "is_nested", "_base", "data", "output_nr",
             "_version", "is_mkldnn", "is_cpu", "itemsize", "nbytes", "_cdata", "retains_grad"}


QUERIES = {"size", "dim", "numel", "stride", "is_floating_point", "is_complex", "element_size", "is_contiguous",
            "__len__", "__format__", "__repr__", "data_ptr", "get_device", "storage_offset", "nelement",
            "ndimension", "__hash__", "is_signed", "untyped_storage", "storage", "__reduce_ex__", "__deepcopy__",
            "has_names", "is_inference", "is_set_to", "__index__", "__int__", "__float__", "__bool__", "tolist",
            "__iter__", "__dir__", "__array__", "__getstate__", "__setstate__", "_typed_storage",
            "requires_grad_", "retain_grad", "register_hook", "__contains__", "__torch_function__",
            # torch.ops.prim's questions about a tensor, which autograd.Function.apply asks of its inputs
            "device.default", "layout.default", "dtype.default"}


INPLACE_DUNDERS = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
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


def has_float(x) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return any(has_float(i) for i in x)
    if isinstance(x, dict):
        return any(has_float(i) for i in x.values())
    return False


_INPLACE_AT: dict = {}      # a callable -> the position of its `inplace` parameter (-1: none)


def inplace_flag(func, args, kwargs) -> bool:
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


def is_input(output, args, kwargs) -> bool:
    """A module that returns one of its inputs unchanged (Identity, eval-mode Dropout in place)."""
    if not isinstance(output, torch.Tensor):
        return False
    return any(output is t for t in _tensors((args, kwargs)))
