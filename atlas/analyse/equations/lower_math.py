"""Lowering of arithmetic: elementwise operators, reductions, softmax, products, comparisons and selections.

Each function takes a `Lowering` (the call, its arguments by name) and returns a node of `ops_math` or
`ops_tensor`; `TABLE` maps torch's names for a call (function, method, operator, in-place form) to it.
"""

from __future__ import annotations

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.lowering_context import Lowering
from atlas.analyse.equations.nodes import SizeOf
from atlas.analyse.equations.scalars import scalar_on_left
from atlas.extract.trace.structures import Ref


def _scaled(L: Lowering, name: str, x):
    """x times the call's `alpha` (or `beta`), left out where it is 1."""
    if not L.has(name) or L.get(name) == 1:
        return x
    return m.Mul(L.num(name), x)


def _binary(op, reverse=False):
    def lower(L: Lowering):
        other = "exponent" if op is m.Pow and L.has("exponent") else "other"       # torch.pow(x, exponent)
        if _changes_nothing(L, op) and not (reverse and op is m.Sub):       # 0 - x is no x
            return L.operand()
        a, b = L.num("input"), L.num(other)
        if reverse or (op in (m.Add, m.Mul) and not isinstance(L.get(other), Ref) and scalar_on_left(L.ev)):
            a, b = b, a
        if op in (m.Add, m.Sub):                # torch.add(a, b, alpha=2) is a + 2 b (rsub: b - 2 a)
            return op(a, _scaled(L, "alpha", b))
        return op(a, b)
    return lower


def _changes_nothing(L: Lowering, op) -> bool:
    """x * 1, x + 0 or x - 0 with a number (a scale the config sets to 1.0, as transformers' rotary
    attention_scaling; `score = 0; score += c2p` in DeBERTa) that keeps x's dtype: x itself, as `_scaled` leaves
    out an alpha of 1, so that a page prints no "cos(emb) · 1", which reads like a typo."""
    neutral = {m.Mul: 1, m.Add: 0, m.Sub: 0}.get(op)
    x, number = L.get("input"), L.get("other")
    return neutral is not None and isinstance(x, Ref) and isinstance(number, (int, float)) and \
        not isinstance(number, bool) and number == neutral and isinstance(L.ev.out, Ref) and \
        L.ev.out.value.dtype == x.value.dtype


def _div(L: Lowering):
    a, b = L.num("input"), L.num("other")
    mode = L.get("rounding_mode")
    if mode == "floor":
        return m.FloorDiv(a, b)
    return m.Div(a, b) if mode is None else L.generic()


def _unary(op):
    return lambda L: op(L.operand())


def _reduce(op):
    def lower(L: Lowering):
        x_ref = L.need("input")
        dim = L.data(L.get("dim"))
        keep = bool(L.get("keepdim", False))
        if op is red.AMax:
            return red.AMax(L.operand(), dim=dim, keepdim=keep)
        if L.get("dtype") is not None:
            return L.generic()
        return op(L.operand(), red.n_of(L.shape(x_ref), dim), dim=dim, keepdim=keep)
    return lower


def _norm(L: Lowering):
    p = L.get("ord", 2) if L.has("ord") else L.get("p", 2)
    if p not in (2, 2.0, "fro") or L.get("dtype") is not None:
        return L.generic()
    dim = L.data(L.get("dim"))
    return red.Norm2(L.operand(), dim=dim, keepdim=bool(L.get("keepdim", False)))


def _var(L: Lowering):
    x_ref = L.need("input")
    dim = L.data(L.get("dim"))
    if dim is None:
        return L.generic()
    correction = L.get("correction")
    if correction is None:
        correction = 1 if L.get("unbiased", True) else 0
    return red.Var(L.operand(), red.n_of(L.shape(x_ref), dim), dim=dim, keepdim=bool(L.get("keepdim", False)),
                 correction=correction)


def _softmax(op):
    def lower(L: Lowering):
        x_ref = L.need("input")
        dim = L.get("dim")
        if not isinstance(dim, int):
            return L.generic()
        x = L.operand()
        dtype = L.get("dtype")
        if dtype is not None and str(dtype).removeprefix("torch.") != x_ref.value.dtype:
            x = t.Cast(x, dtype=str(dtype).removeprefix("torch."))     # softmax(x, dtype=float32) casts first
        shape = L.shape(x_ref)
        return op(x, SizeOf(shape[dim] if shape is not None else 0), dim=dim)
    return lower


def _matmul(L: Lowering):
    return t.MatMul(L.operand(), L.node(L.first("other", "mat2")))


def _rmatmul(L: Lowering):
    return t.MatMul(L.operand("other"), L.operand())


def _addmm(L: Lowering):
    """addmm / baddbmm: beta · input + alpha · (a b)."""
    a, b = L.node(L.first("mat1", "batch1")), L.node(L.first("mat2", "batch2"))
    prod = _scaled(L, "alpha", t.MatMul(a, b))
    if L.has("beta") and L.get("beta") == 0:
        return prod                                 # beta = 0: input is not read at all
    return m.Add(prod, _scaled(L, "beta", L.operand()))


def _masked_fill(L: Lowering):
    return m.Where(L.operand("mask"), L.num("value"), L.operand())


def _where(L: Lowering):
    if not (L.has("input") and L.has("other")):
        return L.generic()                          # where(condition) alone: the indices, not a selection
    return m.Where(L.operand("condition"), L.num("input"), L.num("other"))


def _clamp(L: Lowering):
    out = L.operand()
    if L.has("min"):
        out = m.Max(out, L.num("min"))
    if L.has("max"):
        out = m.Min(out, L.num("max"))
    return out


def _compare(op: str):
    return lambda L: m.Compare(L.operand(), L.num("other"), op=op)


def _booleans(L: Lowering, *names: str) -> bool:
    return all(isinstance(v, Ref) and v.value.dtype == "bool" for v in (L.get(name) for name in names))


def _not(L: Lowering):
    """~mask and logical_not: ¬ on booleans; on integers, ~ is a bitwise not, written as the call itself."""
    return m.Not(L.operand()) if L.name == "logical_not" or _booleans(L, "input") else L.generic()


def _logical(op: str):
    def lower(L: Lowering):
        if L.name.startswith("logical_") or _booleans(L, "input", "other"):
            return m.Logical(L.operand(), L.operand("other"), op=op)
        return L.generic()
    return lower


TABLE: dict = {}


def _register(names: str, fn) -> None:
    for name in names.split():
        TABLE[name] = fn


_register("add __add__ add_ __iadd__", _binary(m.Add))
_register("__radd__", _binary(m.Add, reverse=True))
_register("sub __sub__ sub_ __isub__ subtract", _binary(m.Sub))
_register("rsub __rsub__", _binary(m.Sub, reverse=True))
_register("mul __mul__ mul_ __imul__ multiply", _binary(m.Mul))
_register("__rmul__", _binary(m.Mul, reverse=True))
_register("div __truediv__ div_ __itruediv__ true_divide divide", _div)
_register("__rtruediv__ __rdiv__", _binary(m.Div, reverse=True))
_register("floor_divide __floordiv__", _binary(m.FloorDiv))
_register("remainder __mod__", _binary(m.Mod))
_register("pow __pow__ pow_", _binary(m.Pow))
_register("__rpow__", _binary(m.Pow, reverse=True))
_register("maximum", _binary(m.Max))
_register("minimum", _binary(m.Min))
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
_register("mean", _reduce(red.Mean))
_register("sum", _reduce(red.Sum))
_register("amax", _reduce(red.AMax))
_register("var", _var)
_register("norm vector_norm linalg_vector_norm", _norm)
_register("softmax", _softmax(red.Softmax))
_register("log_softmax", _softmax(red.LogSoftmax))
_register("matmul __matmul__ mm bmm", _matmul)
_register("__rmatmul__", _rmatmul)
_register("addmm baddbmm", _addmm)
_register("masked_fill masked_fill_", _masked_fill)
_register("where", _where)
_register("__invert__ bitwise_not logical_not", _not)
for _op in ("and", "or", "xor"):
    _register(f"__{_op}__ __i{_op}__ bitwise_{_op} logical_{_op}", _logical(_op))
_register("clamp clamp_ clamp_min clamp_min_ clamp_max clamp_max_ clip", _clamp)
for _op, _names in (("lt", "lt __lt__"), ("le", "le __le__"), ("gt", "gt __gt__"), ("ge", "ge __ge__"),
                    ("eq", "eq __eq__"), ("ne", "ne __ne__")):
    _register(_names, _compare(_op))
