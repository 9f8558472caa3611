"""Lower each recorded torch call to a node of the op tree.

The table below gives the math its notation (x W, softmax, ‖x‖₂, q kᵀ). A call it does not list becomes
`Apply`: printed by its name and run as the same call, never dropped and never guessed.
"""

from __future__ import annotations

import torch

from atlas.equations import ops_math as m
from atlas.equations import ops_nn as n
from atlas.equations import ops_tensor as t
from atlas.equations.nodes import Node, Num, SizeOf
from atlas.equations.scalars import Eps, scalar_on_left
from atlas.trace.structures import OpEvent, Ref, Size

DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
                 "long": "int64", "int": "int32", "bool": "bool"}


class Lowering:
    """One recorded call, with its arguments as nodes (tensors, sizes, numbers) or data (dims, shapes)."""

    def __init__(self, ev: OpEvent, node_of) -> None:
        self.ev = ev
        self.name = ev.name.removeprefix("Tensor.")
        self.is_method = ev.name.startswith("Tensor.")
        self._node_of = node_of             # Ref -> Node (the builder's environment)

    # -- arguments ---------------------------------------------------------------------------
    def arg(self, i: int, key: str | None = None, default=None):
        if i < len(self.ev.args):
            return self.ev.args[i]
        if key is not None and key in self.ev.kwargs:
            return self.ev.kwargs[key]
        return default

    def num(self, i: int, key: str | None = None, default=None):
        """Argument i as a node; a Python float as the expression the source computed it with (√768)."""
        raw = self.arg(i, key, default)
        if isinstance(raw, float):
            from atlas.equations.scalars import scalar_node
            where_key = key if i >= len(self.ev.args) else None
            found = scalar_node(self.ev, i, where_key, raw)
            if found is not None:
                return found
        return self.node(raw)

    def node(self, x):
        if isinstance(x, Ref):
            return self._node_of(x)
        if isinstance(x, Size):
            return SizeOf(x.expr)
        if isinstance(x, bool):
            return Num(x)
        if isinstance(x, (int, float)):
            return Num(x)
        if isinstance(x, Node):
            return x
        return x

    def data(self, x):
        """An argument kept as data: tensors inside become nodes, sizes stay sympy expressions."""
        if isinstance(x, Ref):
            return self._node_of(x)
        if isinstance(x, Size):
            return x.expr
        if isinstance(x, tuple):
            return tuple(self.data(i) for i in x)
        if isinstance(x, list):
            return [self.data(i) for i in x]
        if isinstance(x, slice):
            return slice(self.data(x.start), self.data(x.stop), self.data(x.step))
        if isinstance(x, dict):
            return {k: self.data(v) for k, v in x.items()}
        return x

    def shape(self, x) -> tuple | None:
        return x.value.shape if isinstance(x, Ref) else None

    def out_shape(self, i: int = 0):
        out = self.ev.out
        if isinstance(out, tuple):
            out = out[i]
        return out.value.shape if isinstance(out, Ref) else None

    def ndim(self, x) -> int | None:
        s = self.shape(x)
        return None if s is None else len(s)

    def sizes(self, first: int = 1):
        """The sizes of view/reshape/expand: given as separate args or as one sequence."""
        rest = self.ev.args[first:]
        if not rest and "size" in self.ev.kwargs:
            rest = (self.ev.kwargs["size"],)
        if not rest and "shape" in self.ev.kwargs:
            rest = (self.ev.kwargs["shape"],)
        if len(rest) == 1 and isinstance(rest[0], (tuple, list)):
            rest = tuple(rest[0])
        return tuple(self.data(s) for s in rest)

    def generic(self) -> Node:
        args = tuple(self.data(a) for a in self.ev.args)
        kwargs = {k: self.data(v) for k, v in self.ev.kwargs.items()}
        return n.Apply(args, kwargs, func=self.ev.func, name=self.name)


def _alpha(L: Lowering, a, b, op):
    alpha = L.ev.kwargs.get("alpha")
    if alpha is not None and alpha != 1:
        b = m.Mul(L.node(alpha), b)
    return op(a, b)


def _binary(op, reverse=False):
    def lower(L: Lowering):
        a, b = L.num(0, "input"), L.num(1, "other")
        if reverse or (op in (m.Add, m.Mul) and not isinstance(L.arg(1), Ref) and scalar_on_left(L.ev)):
            a, b = b, a
        return _alpha(L, a, b, op) if op in (m.Add, m.Sub) else op(a, b)
    return lower


def _div(L: Lowering):
    a, b = L.num(0, "input"), L.num(1, "other")
    mode = L.ev.kwargs.get("rounding_mode")
    if mode == "floor":
        return m.FloorDiv(a, b)
    return m.Div(a, b) if mode is None else L.generic()


def _unary(op):
    return lambda L: op(L.node(L.arg(0, "input")))


def _gelu(L: Lowering):
    x = L.node(L.arg(0, "input"))
    if L.arg(1, "approximate", "none") == "tanh":
        import math
        inner = m.Mul(Num(math.sqrt(2 / math.pi)), m.Add(x, m.Mul(Num(0.044715), m.Pow(x, Num(3)))))
        return m.Mul(m.Div(x, Num(2)), m.Add(Num(1), m.Tanh(inner)))
    return m.Mul(x, m.Phi(x))


def _reduce(op, with_n=True):
    def lower(L: Lowering):
        x_ref = L.arg(0, "input")
        dim = L.data(L.arg(1, "dim", None))
        if L.name == "max" and not isinstance(dim, (int, list, tuple)):
            return L.generic()
        keep = bool(L.arg(2, "keepdim", False))
        if op is m.Norm2:
            return m.Norm2(L.node(x_ref), dim=dim, keepdim=keep)
        if op is m.AMax:
            return m.AMax(L.node(x_ref), dim=dim, keepdim=keep)
        if L.ev.kwargs.get("dtype") is not None:
            return L.generic()
        return op(L.node(x_ref), m.n_of(L.shape(x_ref), dim), dim=dim, keepdim=keep)
    return lower


def _norm(L: Lowering):
    p = L.arg(1, "p", 2) if L.name == "norm" else L.arg(1, "ord", 2)
    if p not in (2, 2.0, "fro", None):
        return L.generic()
    x_ref = L.arg(0, "input")
    dim = L.data(L.arg(2, "dim", None))
    keep = bool(L.arg(3, "keepdim", False))
    return m.Norm2(L.node(x_ref), dim=dim, keepdim=keep)


def _var(L: Lowering):
    x_ref = L.arg(0, "input")
    dim = L.data(L.arg(1, "dim", None))
    correction = L.ev.kwargs.get("correction")
    if correction is None:
        unbiased = L.ev.kwargs.get("unbiased", True if len(L.ev.args) < 3 else L.ev.args[2])
        correction = 1 if unbiased else 0
    return m.Var(L.node(x_ref), m.n_of(L.shape(x_ref), dim), dim=dim, keepdim=bool(L.ev.kwargs.get("keepdim", False)),
                 correction=correction)


def _softmax(op):
    def lower(L: Lowering):
        x_ref = L.arg(0, "input")
        dim = L.arg(1, "dim")
        if dim is None:
            return L.generic()
        shape = L.shape(x_ref)
        size = shape[dim] if shape is not None else None
        return op(L.node(x_ref), SizeOf(size) if size is not None else SizeOf(0), dim=dim)
    return lower


def _matmul(L: Lowering):
    return t.MatMul(L.node(L.arg(0, "input")), L.node(L.arg(1, "other") if L.arg(1) is not None else L.arg(1, "mat2")))


def _rmatmul(L: Lowering):
    return t.MatMul(L.node(L.arg(1)), L.node(L.arg(0)))


def _addmm(L: Lowering):
    bias, a, b = (L.node(L.arg(i)) for i in range(3))
    beta, alpha = L.ev.kwargs.get("beta", 1), L.ev.kwargs.get("alpha", 1)
    prod = t.MatMul(a, b) if alpha == 1 else m.Mul(Num(alpha), t.MatMul(a, b))
    return m.Add(prod, bias if beta == 1 else m.Mul(Num(beta), bias))


def _transpose(L: Lowering):
    x_ref = L.arg(0, "input")
    d0, d1 = L.arg(1, "dim0"), L.arg(2, "dim1")
    x = L.node(x_ref)
    nd = L.ndim(x_ref)
    if isinstance(x, t.Reshape) and nd == 4 and {d0 % 4, d1 % 4} == {1, 2} and _splits_last(x, L):
        out = L.out_shape()
        return t.Heads(x.args[0], x.args[1], heads=out[1], features=out[3])
    return t.Transpose(x, d0=d0, d1=d1, ndim=nd)


def _splits_last(node: t.Reshape, L: Lowering) -> bool:
    """A reshape (B, T, h·d) -> (B, T, h, d): the last axis split into heads."""
    before = node.meta.get("in_shape")
    after = node.meta.get("shown")
    return (before is not None and after is not None and len(before) == 3 and len(after) == 4
            and tuple(before[:2]) == tuple(after[:2]))


def _t_prop(L: Lowering):
    x_ref = L.arg(0)
    nd = L.ndim(x_ref) or 2
    return t.Transpose(L.node(x_ref), d0=nd - 2, d1=nd - 1, ndim=nd)


def _reshape(L: Lowering):
    x_ref = L.arg(0, "input")
    x = L.node(x_ref)
    sizes = L.sizes()
    shown = L.out_shape()
    before = L.shape(x_ref)
    if isinstance(x, t.Transpose) and {x.meta["d0"] % 4, x.meta["d1"] % 4} == {1, 2} and before is not None \
            and len(before) == 4 and shown is not None and len(shown) == 3:
        return t.MergeHeads(x.args[0], sizes)
    if before is not None and shown is not None and tuple(before) == tuple(shown):
        return x                                    # a reshape to the shape it already has
    return t.Reshape(x, sizes, shown=shown, in_shape=before)


def _permute(L: Lowering):
    dims = L.ev.args[1:] if len(L.ev.args) > 2 else L.arg(1, "dims")
    return t.Permute(L.node(L.arg(0)), dims=tuple(dims))


def _unsqueeze(L: Lowering):
    return t.Unsqueeze(L.node(L.arg(0)), dim=L.arg(1, "dim"))


def _squeeze(L: Lowering):
    return t.Squeeze(L.node(L.arg(0)), dim=L.arg(1, "dim"))


def _expand(L: Lowering):
    if L.name == "expand_as":
        other = L.arg(1)
        return t.Expand(L.node(L.arg(0)), tuple(L.shape(other)), shown=L.out_shape())
    return t.Expand(L.node(L.arg(0)), L.sizes(), shown=L.out_shape())


def _flatten(L: Lowering):
    return t.Flatten(L.node(L.arg(0)), start=L.arg(1, "start_dim", 0), end=L.arg(2, "end_dim", -1))


def _cat(L: Lowering):
    parts = L.arg(0, "tensors")
    dim = L.arg(1, "dim", 0)
    kept = [p for p in parts if not (isinstance(p, Ref) and _empty(p.value.shape))]
    if len(kept) == 1:
        return L.node(kept[0])                  # a cache's empty start: the concatenation is the part itself
    return t.Cat(*(L.node(p) for p in kept), dim=dim)


def _empty(shape) -> bool:
    return shape is not None and any(isinstance(s, int) and s == 0 for s in shape)


def _stack(L: Lowering):
    return t.Stack(*(L.node(p) for p in L.arg(0, "tensors")), dim=L.arg(1, "dim", 0))


def _split(L: Lowering):
    x_ref = L.arg(0)
    size = L.data(L.arg(1, "split_size_or_sections") if L.arg(1) is not None else L.ev.kwargs.get("split_size"))
    dim = L.arg(2, "dim", 0)
    shape = L.shape(x_ref)
    x = L.node(x_ref)
    outs = L.ev.out
    pieces, start = [], 0
    nd = len(shape) if shape else None
    last = nd is not None and dim % nd == nd - 1
    for i, o in enumerate(outs):
        width = o.value.shape[dim]
        pieces.append(t.Slice(x, SizeOf(start), SizeOf(start + width), dim=dim, last=last))
        start = start + width
    return tuple(pieces)


def _chunk(L: Lowering):
    return _split(L)


def _unbind(L: Lowering):
    x = L.node(L.arg(0))
    dim = L.arg(1, "dim", 0)
    return tuple(t.Index(x, tuple([slice(None)] * dim) + (i,)) if dim >= 0 else t.Index(x, (Ellipsis, i))
                 for i in range(len(L.ev.out)))


def _getitem(L: Lowering):
    x_ref = L.arg(0)
    index = L.data(L.arg(1))
    x = L.node(x_ref)
    shape = L.shape(x_ref)
    # x[..., a:b] or x[:, :, a:b] on the last axis: the seed's x_{a+1:b}
    parts = index if isinstance(index, tuple) else (index,)
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


def _negative(v) -> bool:
    if isinstance(v, int):
        return v < 0
    return bool(getattr(v, "is_negative", False))


def _setitem(L: Lowering):
    x = L.node(L.arg(0))
    index = L.data(L.arg(1))
    value = L.node(L.arg(2))
    return t.SetIndex(x, value, index)


def _to(L: Lowering):
    x_ref = L.arg(0)
    dtype = L.ev.kwargs.get("dtype")
    for a in L.ev.args[1:]:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, Ref):                      # .to(other): other's dtype
            dtype = getattr(torch, a.value.dtype, None)
    return _cast(L, x_ref, dtype)


def _cast(L: Lowering, x_ref, dtype):
    x = L.node(x_ref)
    before = x_ref.value.dtype if isinstance(x_ref, Ref) else None
    if dtype is None:
        return x
    name = str(dtype).removeprefix("torch.")
    if name == before:
        return x
    return t.Cast(x, dtype=name)


def _dtype_method(L: Lowering):
    return _cast(L, L.arg(0), getattr(torch, DTYPE_METHODS[L.name]))


def _type_as(L: Lowering):
    other = L.arg(1)
    return _cast(L, L.arg(0), getattr(torch, other.value.dtype))


def _alias(L: Lowering):
    return L.node(L.arg(0))


def _dropout(L: Lowering):
    training = L.arg(2, "training", True if L.name != "dropout" else False)
    if L.name == "dropout" and not L.is_method:
        training = L.arg(2, "training", True)
    p = L.arg(1, "p", 0.5)
    if not training or p == 0:
        return L.node(L.arg(0, "input"))
    return n.Dropout(L.node(L.arg(0, "input")), Num(p))


def _linear(L: Lowering):
    bias = L.arg(2, "bias")
    return n.Linear(L.node(L.arg(0, "input")), L.node(L.arg(1, "weight")), L.node(bias) if bias is not None else None)


def _embedding(L: Lowering):
    ids, table = L.arg(0, "input"), L.arg(1, "weight")
    if any(L.ev.kwargs.get(k) is not None for k in ("max_norm",)) or len(L.ev.args) > 3:
        return L.generic()
    return t.Rows(L.node(table), L.node(ids))


def _layer_norm(L: Lowering):
    x_ref = L.arg(0, "input")
    shape = L.data(L.arg(1, "normalized_shape"))
    if len(shape) != 1:
        return L.generic()
    w, b = L.arg(2, "weight"), L.arg(3, "bias")
    eps = L.num(4, "eps", 1e-5)
    if type(eps) is Num:
        eps = Eps(eps.value)
    x = L.node(x_ref)
    size = SizeOf(shape[0])
    mu = m.Mean(x, size, dim=-1, keepdim=True, hint="mu")
    var = m.Mean(m.Pow(m.Sub(x, mu), Num(2)), size, dim=-1, keepdim=True, hint="sigma2")
    out = m.Div(m.Sub(x, mu), m.Sqrt(m.Add(var, eps)))
    if w is not None:
        out = m.Mul(L.node(w), out)
    if b is not None:
        out = m.Add(out, L.node(b))
    return out


def _sdpa(L: Lowering):
    q_ref, k_ref, v_ref = L.arg(0, "query"), L.arg(1, "key"), L.arg(2, "value")
    mask = L.arg(3, "attn_mask")
    dropout = L.arg(4, "dropout_p", 0.0)
    causal = bool(L.arg(5, "is_causal", False))
    scale = L.ev.kwargs.get("scale")
    gqa = bool(L.ev.kwargs.get("enable_gqa", False))
    qs, ks = L.shape(q_ref), L.shape(k_ref)
    groups = 1
    if gqa and qs and ks and isinstance(qs[-3], int) and isinstance(ks[-3], int) and ks[-3] != qs[-3]:
        groups = qs[-3] // ks[-3]
    if dropout:
        return L.generic()
    return n.Attention(L.node(q_ref), L.node(k_ref), L.node(v_ref), L.node(mask) if mask is not None else None,
                       causal=causal, scale=scale, groups=groups, head=qs[-1] if qs else 0)


def _masked_fill(L: Lowering):
    x, mask, value = L.node(L.arg(0)), L.node(L.arg(1, "mask")), L.node(L.arg(2, "value"))
    return m.Where(mask, value, x)


def _where(L: Lowering):
    if len(L.ev.args) + len(L.ev.kwargs) < 3:
        return L.generic()
    return m.Where(L.node(L.arg(0, "condition")), L.node(L.arg(1, "input")), L.node(L.arg(2, "other")))


def _clamp(L: Lowering):
    x = L.node(L.arg(0))
    lo, hi = (1, "min"), (2, "max")
    if L.name in ("clamp_min", "clamp_min_"):
        lo, hi = (1, "min"), None
    if L.name in ("clamp_max", "clamp_max_"):
        lo, hi = None, (1, "max")
    out = x
    if lo is not None and L.arg(*lo) is not None:
        out = m.Max(out, L.num(*lo))
    if hi is not None and L.arg(*hi) is not None:
        out = m.Min(out, L.num(*hi))
    return out


def _arange(L: Lowering):
    args = [a for a in L.ev.args]
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    else:
        start, stop = args[0], args[1]
        step = args[2] if len(args) > 2 else L.ev.kwargs.get("step", 1)
    if "end" in L.ev.kwargs:
        start, stop = (args[0] if args else 0), L.ev.kwargs["end"]
    dtype = L.ev.kwargs.get("dtype")
    return t.Arange(L.node(start), L.node(stop), L.node(step), dtype=dtype)


def _fill(value):
    def lower(L: Lowering):
        if L.name.endswith("_like"):
            sizes = tuple(L.shape(L.arg(0)))
            fill = L.arg(1, "fill_value") if L.name == "full_like" else value
            dtype = L.ev.kwargs.get("dtype") or getattr(torch, L.arg(0).value.dtype)
        elif L.name == "full":
            sizes = tuple(L.data(s) for s in L.arg(0, "size"))
            fill, dtype = L.arg(1, "fill_value"), L.ev.kwargs.get("dtype")
        else:
            sizes, fill, dtype = L.sizes(0), value, L.ev.kwargs.get("dtype")
        return t.Fill(L.node(fill), sizes, shown=L.out_shape(), dtype=dtype)
    return lower


def _tensor(L: Lowering):
    data = L.arg(0, "data")
    if isinstance(data, (Ref, Size)) or _has_ref(data):
        return L.generic()
    return t.Constant(data=data, dtype=L.ev.kwargs.get("dtype"))


def _has_ref(x) -> bool:
    if isinstance(x, (Ref, Size)):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_ref(i) for i in x)
    return False


def _repeat_interleave(L: Lowering):
    times = L.arg(1, "repeats")
    dim = L.arg(2, "dim")
    if not isinstance(times, int) or dim is None:
        return L.generic()
    return t.Repeat(L.node(L.arg(0)), times=times, dim=dim)


TABLE = {}


def _register(names, fn):
    for name in names.split():
        TABLE[name] = fn


_register("add __add__ add_ __iadd__", _binary(m.Add))
_register("__radd__", _binary(m.Add, reverse=True))
_register("sub __sub__ sub_ __isub__ subtract", _binary(m.Sub))
_register("rsub __rsub__", _binary(m.Sub, reverse=True))
_register("mul __mul__ mul_ __imul__ multiply", _binary(m.Mul))
_register("__rmul__", _binary(m.Mul, reverse=True))
_register("div __truediv__ div_ __itruediv__ true_divide divide", _div)
_register("__rtruediv__", _binary(m.Div, reverse=True))
_register("floor_divide __floordiv__", _binary(m.FloorDiv))
_register("remainder __mod__", _binary(m.Mod))
_register("pow __pow__ pow_", _binary(m.Pow))
_register("__rpow__", _binary(m.Pow, reverse=True))
_register("neg __neg__ negative", _unary(m.Neg))
_register("exp", _unary(m.Exp))
_register("log", _unary(m.Log))
_register("tanh", _unary(m.Tanh))
_register("sigmoid", _unary(m.Sigmoid))
_register("sqrt", _unary(m.Sqrt))
_register("rsqrt", _unary(m.Rsqrt))
_register("reciprocal", _unary(m.Reciprocal))
_register("sin", _unary(m.Sin))
_register("cos", _unary(m.Cos))
_register("erf", _unary(m.Erf))
_register("abs __abs__", _unary(m.Abs))
_register("sign", _unary(m.Sign))
_register("floor", _unary(m.Floor))
_register("relu", lambda L: m.Max(L.node(L.arg(0, "input")), Num(0)))
_register("silu", lambda L: m.Mul(L.node(L.arg(0, "input")), m.Sigmoid(L.node(L.arg(0, "input")))))
_register("gelu", _gelu)
_register("softplus", lambda L: m.Softplus(L.node(L.arg(0))) if L.arg(1, "beta", 1) == 1 else L.generic())
_register("mean", _reduce(m.Mean))
_register("sum", _reduce(m.Sum))
_register("amax", _reduce(m.AMax))
_register("var", _var)
_register("norm vector_norm linalg_vector_norm", _norm)
_register("softmax", _softmax(m.Softmax))
_register("log_softmax", _softmax(m.LogSoftmax))
_register("matmul __matmul__ mm bmm", _matmul)
_register("__rmatmul__", _rmatmul)
_register("addmm baddbmm", _addmm)
_register("transpose swapaxes", _transpose)
_register("t T mT", _t_prop)
_register("view reshape", _reshape)
_register("permute", _permute)
_register("unsqueeze", _unsqueeze)
_register("squeeze", _squeeze)
_register("expand expand_as", _expand)
_register("flatten", _flatten)
_register("cat concat concatenate", _cat)
_register("stack", _stack)
_register("split", _split)
_register("chunk", _chunk)
_register("unbind", _unbind)
_register("__getitem__", _getitem)
_register("__setitem__", _setitem)
_register("to", _to)
_register("float double half bfloat16 long int bool", _dtype_method)
_register("type_as", _type_as)
_register("contiguous clone detach", _alias)
_register("dropout", _dropout)
_register("linear", _linear)
_register("embedding", _embedding)
_register("layer_norm", _layer_norm)
_register("scaled_dot_product_attention", _sdpa)
_register("masked_fill masked_fill_", _masked_fill)
_register("where", _where)
_register("clamp clamp_ clamp_min clamp_min_ clamp_max clamp_max_ clip", _clamp)
_register("maximum", _binary(m.Max))
_register("minimum", _binary(m.Min))
_register("lt __lt__", lambda L: m.Compare(L.node(L.arg(0)), L.node(L.arg(1)), op="lt"))
_register("le __le__", lambda L: m.Compare(L.node(L.arg(0)), L.node(L.arg(1)), op="le"))
_register("gt __gt__", lambda L: m.Compare(L.node(L.arg(0)), L.node(L.arg(1)), op="gt"))
_register("ge __ge__", lambda L: m.Compare(L.node(L.arg(0)), L.node(L.arg(1)), op="ge"))
_register("eq __eq__", lambda L: m.Compare(L.node(L.arg(0)), L.node(L.arg(1)), op="eq"))
_register("ne __ne__", lambda L: m.Compare(L.node(L.arg(0)), L.node(L.arg(1)), op="ne"))
_register("arange", _arange)
_register("zeros zeros_like", _fill(0))
_register("ones ones_like", _fill(1))
_register("full full_like", _fill(None))
_register("tensor", _tensor)
_register("repeat_interleave", _repeat_interleave)


def lower(ev: OpEvent, node_of):
    """The node (or, for calls returning several tensors, the tuple of nodes) a recorded call computes."""
    L = Lowering(ev, node_of)
    fn = TABLE.get(L.name)
    if fn is None:
        return L.generic()
    return fn(L)
