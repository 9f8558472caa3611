"""Lowering of layout and indexing: transposes, reshapes, attention heads, concatenation, splits, slices,
casts and tensors made from constants.

Axes given from the end (dim=-3) are counted from the front against the tensor's rank before they are used
in an index, so `x.unbind(dim=-3)` selects along the third axis from the end, not the last one.
"""

from __future__ import annotations

import torch

from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.lowering_context import Lowering, MissingArgument, same_size
from atlas.analyse.equations.nodes import Node, SizeOf
from atlas.extract.trace.structures import Ref, Size

DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
                 "long": "int64", "int": "int32", "bool": "bool"}


# -- axes --------------------------------------------------------------------------------------------
def _transpose(L: Lowering):
    x_ref = L.need("input")
    d0, d1 = L.get("dim0"), L.get("dim1")
    if not isinstance(d0, int) or not isinstance(d1, int):
        raise MissingArgument(f"{L.ev.name}: the axes are not numbers")
    x = L.operand()
    nd = L.ndim(x_ref)
    if isinstance(x, t.Reshape) and nd == 4 and {d0 % 4, d1 % 4} == {1, 2} and splits_last(x):
        out = L.out_shape()
        return t.Heads(x.args[0], x.args[1], heads=out[1], features=out[3])
    return t.Transpose(x, d0=d0, d1=d1, ndim=nd)


def splits_last(node: t.Reshape) -> bool:
    """A reshape (B, T, h·d) -> (B, T, h, d): the last axis split into heads."""
    before, after = node.meta.get("in_shape"), node.meta.get("shown")
    return (before is not None and after is not None and len(before) == 3 and len(after) == 4
            and same_size(before[0], after[0]) and same_size(before[1], after[1]))


def _t_prop(L: Lowering):
    nd = L.ndim(L.need("input")) or 2
    return t.Transpose(L.operand(), d0=nd - 2, d1=nd - 1, ndim=nd)


def _reshape(L: Lowering):
    if L.has("dtype"):
        return L.generic()                          # x.view(torch.int8): the same bytes read as another dtype
    x_ref = L.need("input")
    x = L.operand()
    sizes = L.sizes("shape" if L.has("shape") else "size")
    shown, before = L.out_shape(), L.shape(x_ref)
    if _merges_heads(x, before, shown):
        return t.MergeHeads(x.args[0], sizes)
    if before is not None and shown is not None and tuple(before) == tuple(shown):
        return x                                    # a reshape to the shape it already has
    return t.Reshape(x, sizes, shown=shown, in_shape=before)


def _merges_heads(x, before, shown) -> bool:
    """O (B, h, T, d) -> transpose(1, 2) -> (B, T, h, d) -> reshape (B, T, h·d): the heads side by side.
    A reshape of the same transpose that merges other axes (batch and heads: (B·h, T, d)) is not."""
    if not isinstance(x, t.Transpose) or {x.meta["d0"] % 4, x.meta["d1"] % 4} != {1, 2}:
        return False
    if before is None or shown is None or len(before) != 4 or len(shown) != 3:
        return False
    return (same_size(shown[0], before[0]) and same_size(shown[1], before[1])
            and same_size(shown[2], before[2] * before[3]))


def _permute(L: Lowering):
    dims = L.need("dims")
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if not all(isinstance(d, int) for d in dims):
        raise MissingArgument(f"{L.ev.name}: the axes are not numbers")
    nd = L.ndim(L.need("input"))
    moved = [i for i, d in enumerate(dims) if d % nd != i] if nd == len(dims) else None
    if moved is not None and len(moved) == 2:       # two axes swapped: a transpose, as the math reads it
        return t.Transpose(L.operand(), d0=moved[0], d1=moved[1], ndim=nd)
    return t.Permute(L.operand(), dims=dims)


def _unsqueeze(L: Lowering):
    return t.Unsqueeze(L.operand(), dim=L.need("dim"))


def _squeeze(L: Lowering):
    return t.Squeeze(L.operand(), dim=L.get("dim"))


def _expand(L: Lowering):
    if L.name == "expand_as":
        return t.Expand(L.operand(), tuple(L.shape(L.need("other"))), shown=L.out_shape())
    return t.Expand(L.operand(), L.sizes("size"), shown=L.out_shape())


def _flatten(L: Lowering):
    if not isinstance(L.get("start_dim", 0), int) or not isinstance(L.get("end_dim", -1), int):
        return L.generic()                          # flatten over named axes
    return t.Flatten(L.operand(), start=L.get("start_dim", 0), end=L.get("end_dim", -1))


def _repeat_interleave(L: Lowering):
    times = L.get("repeats")
    if not isinstance(times, int) or not L.has("dim"):
        return L.generic()
    return t.Repeat(L.operand(), times=times, dim=L.dim())


# -- joining and cutting -------------------------------------------------------------------------------
def _cat(L: Lowering):
    parts = list(L.need("tensors"))
    kept = [p for p in parts if not (isinstance(p, Ref) and _empty(p.value.shape))]
    if not kept:
        return L.generic()
    if len(kept) == 1:
        return L.node(kept[0])                  # a cache's empty start: the concatenation is the part itself
    return t.Cat(*(L.node(p) for p in kept), dim=_axis_of_parts(L, kept, 0))


def _axis_of_parts(L: Lowering, parts, extra: int) -> int:
    """The axis of cat (extra 0) or stack (extra 1, a new axis), counted from the front."""
    d = L.get("dim", 0)
    if isinstance(d, bool) or not isinstance(d, int):
        raise MissingArgument(f"{L.ev.name}: the axis is not a number")
    if d >= 0:
        return d
    nd = L.ndim(parts[0]) if parts else None
    if nd is None or d < -(nd + extra):
        raise MissingArgument(f"{L.ev.name}: axis {d} of tensors of unknown rank")
    return d % (nd + extra)


def _empty(shape) -> bool:
    return shape is not None and any(isinstance(s, int) and s == 0 for s in shape)


def _stack(L: Lowering):
    parts = list(L.need("tensors"))
    return t.Stack(*(L.node(p) for p in parts), dim=_axis_of_parts(L, parts, 1))


def _split(L: Lowering):
    """split / chunk: the pieces as slices, each as wide as the recorded piece."""
    x_ref = L.need("input")
    dim = L.dim(default=0)
    x = L.operand()
    nd = L.ndim(x_ref)
    pieces, start = [], 0
    for o in _pieces(L):
        width = o.value.shape[dim]
        pieces.append(t.Slice(x, SizeOf(start), SizeOf(start + width), dim=dim, last=dim == nd - 1))
        start = start + width
    return tuple(pieces)


def _pieces(L: Lowering) -> tuple:
    """The tensors a call that cuts one into several returned."""
    out = L.ev.out
    if not isinstance(out, tuple) or not all(isinstance(o, Ref) for o in out):
        raise MissingArgument(f"{L.ev.name}: the pieces are not a tuple of tensors")
    return out


def _unbind(L: Lowering):
    x, dim = L.operand(), L.dim(default=0)
    return tuple(t.Index(x, (slice(None),) * dim + (i,)) for i in range(len(_pieces(L))))


def _select(L: Lowering):
    index = L.need("index")
    if not isinstance(index, (int, Size)):
        return L.generic()
    return t.Index(L.operand(), (slice(None),) * L.dim() + (L.data(index),))


def _narrow(L: Lowering):
    start, length = L.need("start"), L.need("length")
    if not isinstance(start, (int, Size)) or not isinstance(length, (int, Size)):
        return L.generic()
    dim, nd = L.dim(), L.ndim(L.need("input"))
    lo, width = L.data(start), L.data(length)
    if _negative(lo):
        return L.generic()
    return t.Slice(L.operand(), SizeOf(lo), SizeOf(lo + width), dim=dim, last=dim == nd - 1)


def _getitem(L: Lowering):
    x_ref = L.need("input")
    index = L.data(L.get("indices"))               # x[None]: the index may be None itself
    x = L.operand()
    shape = L.shape(x_ref)
    # x[..., a:b] or x[:, :, a:b] on the last axis: the seed's x_{a+1:b}
    parts = index if isinstance(index, tuple) else (index,)
    if parts and all(p is Ellipsis or _whole(p) for p in parts):
        return x                                    # x[:, 0:, :] (transformers' logits_to_keep = 0) is x
    new_axes = _new_axes(parts)
    if new_axes:                                    # x[:, None], x[..., None]: the unsqueezes it is
        for dim in new_axes:
            x = t.Unsqueeze(x, dim=dim)
        return x
    if shape and parts and isinstance(parts[-1], slice) and parts[-1].step is None and all(
            p is Ellipsis or (isinstance(p, slice) and p == slice(None)) for p in parts[:-1]) \
            and (parts[0] is Ellipsis or len(parts) == len(shape)):
        s = parts[-1]
        size = shape[-1]
        lo = 0 if s.start is None else s.start
        hi = size if s.stop is None else s.stop
        if not isinstance(lo, Node) and not isinstance(hi, Node):
            lo, hi = (v + size if _negative(v) else v for v in (lo, hi))      # x[..., -T:] is x[..., 0:T]
            if not _negative(lo) and not _negative(hi):
                return t.Slice(x, SizeOf(lo), SizeOf(hi), dim=len(shape) - 1, last=True)
    return t.Index(x, index)


def _new_axes(parts: tuple) -> list[int]:
    """Where an index that only adds axes (None) and keeps the others whole puts them, in the order unsqueeze
    adds them: x[None, :, None] is axes 0 and 2, x[..., None] axis -1; [] for any other index."""
    if None not in parts or not all(p is None or p is Ellipsis or _whole(p) for p in parts):
        return []
    if Ellipsis not in parts:
        return [i for i, p in enumerate(parts) if p is None]
    if parts[0] is Ellipsis and Ellipsis not in parts[1:] and all(p is None for p in parts[1:]):
        return [-1] * (len(parts) - 1)
    return []


def _whole(p) -> bool:
    """A slice that keeps a whole axis: `:`, `0:`, `::1`."""
    return isinstance(p, slice) and p.start in (None, 0) and p.stop is None and p.step in (None, 1) and \
        not any(isinstance(v, bool) for v in (p.start, p.step))


def _negative(v) -> bool:
    if isinstance(v, int):
        return v < 0
    return bool(getattr(v, "is_negative", False))


def _setitem(L: Lowering):
    return t.SetIndex(L.operand(), L.num("values"), L.data(L.get("indices")))


# -- casts -----------------------------------------------------------------------------------------------
def _to(L: Lowering):
    dtype = L.get("dtype")
    if L.has("other"):                              # .to(other): other's dtype
        dtype = getattr(torch, L.get("other").value.dtype, None)
    return _cast(L, dtype)


def _cast(L: Lowering, dtype):
    x_ref = L.need("input")
    x = L.operand()
    if dtype is None:
        return x
    name = str(dtype).removeprefix("torch.")
    if isinstance(x_ref, Ref) and name == x_ref.value.dtype:
        return x
    return t.Cast(x, dtype=name, source=x_ref.value.dtype if isinstance(x_ref, Ref) else None)


def _dtype_method(L: Lowering):
    return _cast(L, getattr(torch, DTYPE_METHODS[L.name]))


def _type_as(L: Lowering):
    return _cast(L, getattr(torch, L.need("other").value.dtype))


def _alias(L: Lowering):
    return L.operand()


# -- tensors made from constants -------------------------------------------------------------------------
def _arange(L: Lowering):
    start, end, step = L.get("start", 0), L.need("end"), L.get("step", 1)
    return t.Arange(L.node(start), L.node(end), L.node(step), dtype=L.get("dtype"))


def _fill(value):
    def lower(L: Lowering):
        if L.name.endswith("_like"):
            x_ref = L.need("input")
            sizes = tuple(L.shape(x_ref))
            fill = L.need("fill_value") if L.name == "full_like" else value
            dtype = L.get("dtype") or getattr(torch, x_ref.value.dtype)
        else:
            sizes = L.sizes("size")
            fill = L.need("fill_value") if L.name == "full" else value
            dtype = L.get("dtype")
        return t.Fill(L.node(fill), sizes, shown=L.out_shape(), dtype=dtype)
    return lower


def _tensor(L: Lowering):
    data = L.first("data", "t")                     # torch.tensor([...]) or torch.tensor(2.0)
    if _has_ref(data):
        return L.generic()
    return t.Constant(data=data, dtype=L.get("dtype"))


def _has_ref(x) -> bool:
    if isinstance(x, (Ref, Size)):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_ref(i) for i in x)
    return False


TABLE: dict = {}


def _register(names: str, fn) -> None:
    for name in names.split():
        TABLE[name] = fn


_register("transpose swapaxes swapdims", _transpose)
_register("t T mT", _t_prop)
_register("view reshape", _reshape)
_register("permute", _permute)
_register("unsqueeze", _unsqueeze)
_register("squeeze", _squeeze)
_register("expand expand_as", _expand)
_register("flatten", _flatten)
_register("repeat_interleave", _repeat_interleave)
_register("cat concat concatenate", _cat)
_register("stack", _stack)
_register("split chunk", _split)
_register("unbind", _unbind)
_register("select", _select)
_register("narrow", _narrow)
_register("__getitem__", _getitem)
_register("__setitem__", _setitem)
_register("to", _to)
_register(" ".join(DTYPE_METHODS), _dtype_method)
_register("type_as", _type_as)
_register("contiguous clone", _alias)
_register("detach", lambda L: t.StopGradient(L.operand()))
_register("arange", _arange)
_register("zeros zeros_like", _fill(0))
_register("ones ones_like", _fill(1))
_register("full full_like", _fill(None))
_register("tensor", _tensor)
