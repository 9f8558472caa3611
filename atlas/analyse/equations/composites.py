"""torch.nn modules made of others, whose forward() takes fused fast paths: MultiheadAttention and
TransformerEncoderLayer. Their equations are written from their configuration, then checked like any other."""

from __future__ import annotations

import math

import torch
from torch import nn

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations.leaves import Leaf, LeafBuilder, Unsupported
from atlas.analyse.equations.nodes import Node, Sym
from atlas.analyse.equations.notation import applied, op
from atlas.analyse.equations.ops_nn import MHAOp
from atlas.analyse.equations.symbols import HINTS
from atlas.i18n import msg


def multihead_attention(b: LeafBuilder, query, key=None, value=None, *masks):
    mod = b.module
    if mod.bias_k is not None or mod.add_zero_attn:
        raise Unsupported(msg("MultiheadAttention with bias_k or add_zero_attn"))
    named = b.named
    if masks and not named:             # by position alone, an attention mask and a padding mask look alike
        raise Unsupported(msg("%(layer)s called with a mask", layer="MultiheadAttention"))
    if named:                           # by name: keywords come after the positions, in the order the call wrote them
        query, key, value = named.get("query"), named.get("key"), named.get("value")
    key = query if key is None else key
    value = key if value is None else value
    if not all(isinstance(x, Node) for x in (query, key, value)):
        raise Unsupported(msg("no equations for %(cls_name)s", cls_name="MultiheadAttention"))
    mask, padding = named.get("attn_mask"), named.get("key_padding_mask")
    if any(x is not None and not isinstance(x, Node) for x in (mask, padding)):
        raise Unsupported(msg("%(layer)s called with a mask", layer="MultiheadAttention"))
    # F.multi_head_attention_forward: the is_causal hint replaces the mask where nothing needs the mask itself
    causal = bool(named.get("is_causal", False)) and padding is None and not named.get("need_weights", True)
    E = mod.embed_dim
    path = b.path

    def part(name, base, i, transpose, whole=False):
        """Rows i·E to (i + 1)·E of a packed tensor; `whole`: a tensor of its own."""
        tensor = getattr(mod, name, None)
        if tensor is None:
            return None
        key_ = (f"p.{path}.{name}" if path else f"p.{name}") + ("" if whole else f".{i}")
        rows = None if whole else (i * E, (i + 1) * E)
        b.prog.add(key_, "param", ("param", path, name, transpose, rows), base=base, role=b.attr)
        return Sym(key_)

    if mod._qkv_same_embed_dim:
        wq, wk, wv = (part("in_proj_weight", f"W_{s}", i, True) for i, s in enumerate("QKV"))
    else:                               # kdim or vdim set: a weight each, E × kdim and E × vdim
        wq, wk, wv = (part(f"{s.lower()}_proj_weight", f"W_{s}", i, True, whole=True) for i, s in enumerate("QKV"))
    bq, bk, bv = (part("in_proj_bias", f"b_{s}", i, False) for i, s in enumerate("QKV"))
    out_path = f"{path}.out_proj" if path else "out_proj"
    out = LeafBuilder(mod.out_proj, b.prog, out_path, None)
    wo = out.param("weight", "W_O", transpose=True)
    bo = out.param("bias", "b_O")
    node = MHAOp(query, key, value, wq, wk, wv, bq, bk, bv, wo, bo, None if causal else mask, padding,
                 heads=mod.num_heads, batch_first=mod.batch_first, head_dim=mod.head_dim, causal=causal,
                 average=bool(named.get("average_attn_weights", True)))
    from atlas.analyse.equations.ops_tensor import Item
    return Leaf((Item(node, i=0), Item(node, i=1)), inline=False,
                summary=msg("Multi-head attention with %(heads)s heads of %(features)s features.",
                            heads=mod.num_heads, features=mod.head_dim))


class ActivationOp(Node):
    """The activation a TransformerEncoderLayer holds as a function, not a module."""

    def notation(self, p):
        return applied(op(self.meta["name"]), p.print(self.args[0]))

    def run(self, ev, x):
        return torch.relu(x) if self.meta["name"] == "ReLU" else 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def transformer_encoder_layer(b: LeafBuilder, src, *masks):
    """nn.TransformerEncoderLayer in evaluation mode, post- or pre-norm; its masks and is_causal go to its
    self-attention as its forward() passes them."""
    named = b.named
    if masks and not named:             # by position alone, an attention mask and a padding mask look alike
        raise Unsupported(msg("%(layer)s called with a mask", layer="TransformerEncoderLayer"))
    src = named.get("src", src) if named else src
    passed = {"attn_mask": named.get("src_mask"), "key_padding_mask": named.get("src_key_padding_mask"),
              "need_weights": False, "is_causal": bool(named.get("is_causal", False))}
    if any(x is not None and not isinstance(x, Node) for x in (passed["attn_mask"], passed["key_padding_mask"])):
        raise Unsupported(msg("%(layer)s called with a mask", layer="TransformerEncoderLayer"))
    from atlas.analyse.equations.ops_nn import Call
    from atlas.analyse.equations.ops_tensor import Item
    mod = b.module
    act = mod.activation
    act_name = {"relu": "ReLU", "gelu": "GELU"}.get(getattr(act, "__name__", ""), type(act).__name__)

    def child(attr):
        rel = f"{b.path}.{attr}" if b.path else attr
        key = f"m.{rel}"
        b.prog.add(key, "module", ("module", rel), base=type(getattr(mod, attr)).__name__, role=attr)
        return Sym(key)

    sa, n1, n2, l1, l2 = (child(a) for a in ("self_attn", "norm1", "norm2", "linear1", "linear2"))
    steps = []

    def step(hint, node):
        sym, st = b.step(hint, node, lambda _, name=HINTS[hint]: name)
        steps.append(st)
        return sym

    def attention(x):
        return Item(Call(sa, (x, x, x), passed if masks else {}), i=0)

    def feed_forward(x):
        hidden = Call(l1, (x,), {})
        acted = (Call(child("activation"), (hidden,), {}) if isinstance(act, nn.Module)
                 else ActivationOp(hidden, name=act_name))
        return Call(l2, (acted,), {})

    if mod.norm_first:
        a = step("a", attention(Call(n1, (src,), {})))
        x1 = step("x_prime", m.Add(src, a))
        f = step("f", feed_forward(Call(n2, (x1,), {})))
        out = m.Add(x1, f)
    else:
        a = step("a", attention(src))
        x1 = step("x_prime", Call(n1, (m.Add(src, a),), {}))
        f = step("f", feed_forward(x1))
        out = Call(n2, (m.Add(x1, f),), {})
    kw = {"heads": mod.self_attn.num_heads, "activation": act_name}
    summary = (msg("A pre-norm transformer encoder layer: self-attention with %(heads)s heads, then a %(activation)s "
                   "feed-forward network, each with a residual connection.", **kw) if mod.norm_first else
               msg("A post-norm transformer encoder layer: self-attention with %(heads)s heads, then a %(activation)s "
                   "feed-forward network, each with a residual connection.", **kw))
    return Leaf(out, steps, inline=False, summary=summary)
