"""Lowering of torch.nn.functional: activations, dropout, linear maps, embeddings, layer norm, attention.

Each is written out as the math it computes (GELU as x Φ(x), layer norm with its μ and σ²) where the call's
settings allow; a setting the math here does not cover (a dropout that is active, max_norm) lowers the
call as itself.
"""

from __future__ import annotations

import math

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.lowering_context import Lowering
from atlas.analyse.equations.nodes import Num, SizeOf
from atlas.analyse.equations.scalars import Eps


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
    mu = red.Mean(x, size, dim=-1, keepdim=True, hint="mu")
    var = red.Mean(m.Pow(m.Sub(x, mu), Num(2)), size, dim=-1, keepdim=True, hint="sigma2")
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


def _mha_forward(L: Lowering):
    """F.multi_head_attention_forward called by the model's own code (WavLM's attention, fairseq's): the layer
    nn.MultiheadAttention computes, its weights given as F.linear stores them (out × in), sequence first. Learned
    key/value biases, zero attention, static keys and an active dropout lower the call as itself."""
    if any(L.get(name) is not None for name in ("bias_k", "bias_v", "static_k", "static_v")) \
            or L.get("add_zero_attn", False) or (L.get("training", True) and L.get("dropout_p", 0.0)):
        return L.generic()
    E, heads = L.get("embed_dim_to_check"), L.get("num_heads")
    if not isinstance(E, int) or not isinstance(heads, int) or E % heads:
        return L.generic()
    if L.get("use_separate_proj_weight", False):
        weights = [L.operand(f"{s}_proj_weight") for s in "qkv"]
    else:
        packed = L.operand("in_proj_weight")
        weights = [t.Slice(packed, Num(i * E), Num((i + 1) * E), dim=0, last=False) for i in range(3)]
    bias = L.optional("in_proj_bias")
    if isinstance(bias, t.Cat) and len(bias.args) == 3:        # torch.cat((q_proj.bias, k_proj.bias, v_proj.bias))
        biases = list(bias.args)
    else:
        biases = [None if bias is None else t.Slice(bias, Num(i * E), Num((i + 1) * E), dim=0) for i in range(3)]
    wq, wk, wv = (t.Transpose(w, d0=0, d1=1, ndim=2) for w in weights)
    padding, need_weights = L.optional("key_padding_mask"), bool(L.get("need_weights", True))
    causal = bool(L.get("is_causal", False)) and padding is None and not need_weights
    return n.MHAOp(L.operand("query"), L.operand("key"), L.operand("value"), wq, wk, wv, *biases,
                   t.Transpose(L.operand("out_proj_weight"), d0=0, d1=1, ndim=2), L.optional("out_proj_bias"),
                   None if causal else L.optional("attn_mask"), padding, heads=heads, batch_first=False,
                   head_dim=E // heads, causal=causal, average=bool(L.get("average_attn_weights", True)))


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
_register("multi_head_attention_forward", _mha_forward)
