"""Lowering of torch.nn.functional: activations, dropout, linear maps, embeddings, layer norm, attention.

Each is written out as the math it computes (GELU as x Φ(x), layer norm with its μ and σ²) where the call's
settings allow; a setting the math here does not cover (a dropout that is active, max_norm) lowers the
call as itself.
"""

from __future__ import annotations

import math

from atlas.equations import ops_math as m
from atlas.equations import ops_nn as n
from atlas.equations import ops_tensor as t
from atlas.equations.lowering import Lowering
from atlas.equations.nodes import Num, SizeOf
from atlas.equations.scalars import Eps


def _relu(L: Lowering):
    return m.Max(L.operand(), Num(0))


def _silu(L: Lowering):
    x = L.operand()
    return m.Mul(x, m.Sigmoid(x))


def _gelu(L: Lowering):
    x = L.operand()
    if L.get("approximate", "none") == "tanh":
        inner = m.Mul(Num(math.sqrt(2 / math.pi)), m.Add(x, m.Mul(Num(0.044715), m.Pow(x, Num(3)))))
        return m.Mul(m.Div(x, Num(2)), m.Add(Num(1), m.Tanh(inner)))
    return m.Mul(x, m.Phi(x))


def _softplus(L: Lowering):
    return m.Softplus(L.operand()) if L.get("beta", 1) == 1 else L.generic()


def _dropout(L: Lowering):
    training = L.get("training", L.get("train", True))     # F.dropout(training=) / torch.dropout(train=)
    p = L.get("p", 0.5)
    if not training or p == 0:
        return L.operand()
    # the code's own True (training=True), not a module's mode: the model was recorded in evaluation
    return n.Dropout(L.operand(), Num(p), always=training is True)


def _linear(L: Lowering):
    return n.Linear(L.operand(), L.operand("weight"), L.optional("bias"))


def _embedding(L: Lowering):
    if L.get("max_norm") is not None:
        return L.generic()                          # rows renormalized in place
    ids = L.first("input", "indices")               # F.embedding(input, weight) / torch.embedding(weight, indices)
    return t.Rows(L.operand("weight"), L.node(ids))


def _layer_norm(L: Lowering):
    shape = L.data(L.need("normalized_shape"))
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if len(shape) != 1:
        return L.generic()
    eps = L.num("eps", 1e-5)
    if type(eps) is Num:
        eps = Eps(eps.value)
    x = L.operand()
    size = SizeOf(shape[0])
    mu = m.Mean(x, size, dim=-1, keepdim=True, hint="mu")
    var = m.Mean(m.Pow(m.Sub(x, mu), Num(2)), size, dim=-1, keepdim=True, hint="sigma2")
    out = m.Div(m.Sub(x, mu), m.Sqrt(m.Add(var, eps)))
    if L.has("weight"):
        out = m.Mul(L.operand("weight"), out)
    if L.has("bias"):
        out = m.Add(out, L.operand("bias"))
    return out


def _sdpa(L: Lowering):
    q_ref, k_ref = L.need("query"), L.need("key")
    if L.get("dropout_p", 0.0):
        return L.generic()
    qs, ks = L.shape(q_ref), L.shape(k_ref)
    groups = 1
    if L.get("enable_gqa", False) and qs and ks and isinstance(qs[-3], int) and isinstance(ks[-3], int) \
            and ks[-3] != qs[-3]:
        groups = qs[-3] // ks[-3]
    # the heads the kernel computes with, read off its operands: (B, h, T, d) queries, (B, h_kv, S, d) keys
    heads = qs[-3] if qs and len(qs) >= 4 and isinstance(qs[-3], int) else None
    kv_heads = ks[-3] if ks and len(ks) >= 4 and isinstance(ks[-3], int) else None
    return n.Attention(L.operand("query"), L.operand("key"), L.operand("value"), L.optional("attn_mask"),
                       causal=bool(L.get("is_causal", False)), scale=L.get("scale"), groups=groups,
                       head=qs[-1] if qs else 0, heads=heads, kv_heads=kv_heads)


TABLE: dict = {}


def _register(names: str, fn) -> None:
    for name in names.split():
        TABLE[name] = fn


_register("relu", _relu)
_register("silu", _silu)
_register("gelu", _gelu)
_register("softplus", _softplus)
_register("dropout", _dropout)
_register("linear", _linear)
_register("embedding", _embedding)
_register("layer_norm", _layer_norm)
_register("scaled_dot_product_attention", _sdpa)
