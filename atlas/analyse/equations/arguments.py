"""A recorded call's arguments by name, as torch itself binds them.

The recorder keeps a call as the code wrote it: `bias.baddbmm(batch1=q, batch2=k, alpha=0.5)`,
`torch.cat(parts, axis=1)`, `h.where(h > 0, z)`. Reading such a call by position misreads it (for the
method form of `where`, position 0 is the tensor, not the condition). `bind` matches the call against the
op's own signature instead, so a lowering asks for `batch1`, `dim` or `condition` by name:

- a Python-level torch function (F.softmax, F.layer_norm, Tensor.split): its `inspect.signature`;
- an operator implemented in C++ (torch.cat, Tensor.baddbmm, F.linear): its schemas from torch's operator
  registry, one per overload, tried in order; the first whose argument types fit the call wins. As in
  torch's Python argument parser, a method's receiver binds the argument named `self` wherever the schema
  has it, `axis=`/`keepdims=` stand for `dim=`/`keepdim=`, and `x.view(B, T, 4)` packs its sizes into
  the one list argument;
- an operator (`x + y`, `x[i]`): its operands in order.

Names are canonical: the tensor an op works on is always `input` (torch's `self`, `tensor`), so lowerings
need not know each signature's spelling. A call that fits no signature is not bound (None).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import torch

from atlas.extract.trace.structures import OpEvent, Ref, Size

# Parameter names that mean the same thing across signatures -> the one name lowerings use.
CANONICAL = {"self": "input", "tensor": "input", "split_size_or_sections": "split_size",
             "split_sizes": "split_size", "axis0": "dim0", "axis1": "dim1"}
# Keywords torch's Python argument parser accepts in place of a parameter's own name (NumPy's spellings).
KEYWORD_ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input", "x2": "other"}
# Operators: their operands by position.
OPERANDS = {"__getitem__": ("input", "indices"), "__setitem__": ("input", "indices", "values")}


@dataclass(frozen=True)
class Bound:
    """A call's arguments by canonical name, defaults filled in, and where the call passed each one."""

    values: dict                    # name -> the recorded value (Ref, Size, constant)
    origin: dict                    # name -> ("arg", i) or ("kw", keyword) in the recorded call; absent: a default
    signature: str                  # the signature that bound them, for messages and tests


def bind(ev: OpEvent) -> Bound | None:
    """The arguments of a recorded call by name, or None when no signature of the op fits the call."""
    short = ev.name.removeprefix("Tensor.")
    is_method = ev.name.startswith("Tensor.")
    args, kwargs = tuple(ev.args), dict(ev.kwargs)
    if short.startswith("__") and short.endswith("__"):
        return _operands(short, args, kwargs)
    if is_method and _is_attribute(ev.func):                 # x.T, x.mT: a property of the receiver
        return Bound({"input": args[0]}, {"input": ("arg", 0)}, f"Tensor.{short}") if args else None
    python = _python_signature(ev.func)
    if python is not None:
        return _bind_python(python, args, kwargs, short)
    schemas = _schemas(short)
    if not schemas:                                          # x.float(), x.half(): a method of the receiver alone
        if is_method and len(args) == 1 and not kwargs:
            return Bound({"input": args[0]}, {"input": ("arg", 0)}, f"Tensor.{short}")
        return None
    for numbers_as_tensors in (False, True):
        for schema in schemas:
            got = _bind_schema(schema, args, kwargs, is_method, numbers_as_tensors)
            if got is not None:
                return got
    return None


# -- operators -------------------------------------------------------------------------------------
def _operands(short: str, args: tuple, kwargs: dict) -> Bound | None:
    names = OPERANDS.get(short, ("input", "other"))
    if kwargs or len(args) > len(names):
        return None
    return Bound(dict(zip(names, args)), {n: ("arg", i) for i, n in enumerate(names[:len(args)])}, short)


def _is_attribute(func) -> bool:
    return type(getattr(func, "__self__", None)).__name__ == "getset_descriptor"


# -- Python-level functions -------------------------------------------------------------------------
@functools.lru_cache(maxsize=512)
def _signature_of(func):
    target = inspect.unwrap(func)
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        return None
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _python_signature(func):
    try:
        return _signature_of(func)
    except TypeError:                                        # an unhashable callable: look it up each time
        return _signature_of.__wrapped__(func)


def _bind_python(sig: inspect.Signature, args: tuple, kwargs: dict, short: str) -> Bound | None:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    given = dict(bound.arguments)
    bound.apply_defaults()
    values, origin, position = {}, {}, 0
    for name, param in sig.parameters.items():
        key = CANONICAL.get(name, name)
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            if name in given and position < len(args):
                origin[key] = ("arg", position)
            elif name in given:
                origin[key] = ("kw", name)
            position += 1
        elif param.kind is param.VAR_POSITIONAL:
            if name in given:
                origin[key] = ("arg", position)
            position = len(args)
        elif name in given:
            origin[key] = ("kw", name)
        values[key] = bound.arguments[name]
    return Bound(values, origin, f"{short}{sig}")


# -- C++ operators: torch's schemas ------------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def _schemas(short: str) -> tuple:
    """The overloads of aten::<short> a Python call can reach: no out= variants, concrete types first."""
    found = [s for s in torch._C._jit_get_schemas_for_operator(f"aten::{short}")
             if not any(a.is_out for a in s.arguments)]
    concrete = [s for s in found if not any(_generic(str(a.real_type)) for a in s.arguments)]
    return tuple(concrete + [s for s in found if s not in concrete])


def _generic(t: str) -> bool:
    return t in ("t", "t1", "t2") or t.startswith(("List[t]", "Optional[t]", "Dict[", "Future", "RRef", "Await"))


def _bind_schema(schema, args: tuple, kwargs: dict, is_method: bool, numbers_as_tensors: bool) -> Bound | None:
    params = list(schema.arguments)
    names = [CANONICAL.get(p.name, p.name) for p in params]
    values, origin = {}, {}
    positional = [i for i, p in enumerate(params) if not p.kwarg_only]
    rest = list(enumerate(args))
    if is_method:
        if "input" not in names or not args:
            return None
        slot = names.index("input")
        values["input"], origin["input"] = args[0], ("arg", 0)
        positional = [i for i in positional if i != slot]
        rest = rest[1:]
    if len(positional) == 1 and _int_list(params[positional[0]]) and rest \
            and (len(rest) > 1 or _is_int(rest[0][1])) and all(_is_int(v) for _, v in rest):
        rest = [(rest[0][0], tuple(v for _, v in rest))]      # x.view(B, T, 4): the sizes as one list
    if len(rest) > len(positional):
        return None
    for (where, value), i in zip(rest, positional):
        values[names[i]], origin[names[i]] = value, ("arg", where)
    for key, value in kwargs.items():
        name = CANONICAL.get(key, key)
        if name not in names:
            name = KEYWORD_ALIASES.get(name, name)
        if name not in names or name in values:
            return None
        values[name], origin[name] = value, ("kw", key)
    for p, name in zip(params, names):
        if name in values:
            if not _accepts(str(p.real_type), values[name], numbers_as_tensors):
                return None
        elif p.has_default_value():
            values[name] = p.default_value
        else:
            return None
    return Bound(values, origin, str(schema))


def _int_list(param) -> bool:
    return str(param.real_type) in ("List[int]", "Optional[List[int]]")


# -- does a recorded value fit a schema type? ---------------------------------------------------------
def _is_tensor(v) -> bool:
    return isinstance(v, Ref) and v.value.shape is not None


def _is_scalar_ref(v) -> bool:
    """A number the run computed (x.item(), a symbolic size): a Ref with no shape."""
    return isinstance(v, Ref) and v.value.shape is None


_INTEGER_DTYPES = ("int", "int64", "int32", "int16", "int8", "uint8")


def _is_int(v) -> bool:
    """An int, a size, or a number the run computed: a SymInt, or a one-element integer tensor (torch.div of
    two sizes), which torch's parser takes for an int through __index__."""
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, Size)):
        return True
    return isinstance(v, Ref) and v.value.dtype in _INTEGER_DTYPES and (v.value.shape is None or v.value.shape == ())


def _is_number(v) -> bool:
    return isinstance(v, (int, float, complex, Size)) or _is_scalar_ref(v)


def _accepts(t: str, v, numbers_as_tensors: bool) -> bool:
    if t.startswith("Optional["):
        return v is None or _accepts(t[len("Optional["):-1], v, numbers_as_tensors)
    if t.startswith("List["):
        inner = t[len("List["):-1]
        if isinstance(v, (list, tuple)):
            return all(_accepts(inner, i, numbers_as_tensors) for i in v)
        return inner == "int" and _is_int(v)                # an int list given as one int (dim=-1)
    if _generic(t) or t == "Any":
        return True
    if t == "Tensor":
        return _is_tensor(v) or (numbers_as_tensors and _is_number(v))
    if t == "int":
        return _is_int(v)
    if t in ("float", "complex"):
        return _is_number(v) and not isinstance(v, bool)
    if t == "number":                                       # a Scalar: a number, or a tensor of one element
        return _is_number(v) or (_is_tensor(v) and len(v.value.shape) == 0)
    if t == "bool":
        return isinstance(v, (bool, Size))
    simple = {"str": str, "ScalarType": torch.dtype, "Layout": torch.layout, "MemoryFormat": torch.memory_format,
              "Generator": torch.Generator, "Device": (torch.device, str, int)}
    return t in simple and isinstance(v, simple[t])
