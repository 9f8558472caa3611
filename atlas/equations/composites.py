"""torch.nn modules made of others, whose forward() takes fused fast paths: MultiheadAttention and
TransformerEncoderLayer. Their equations are written from their configuration, then checked like any other."""

from __future__ import annotations

import math

import torch
from torch import nn

from atlas.equations import ops_math as m
from atlas.equations.leaves import REGISTRY, Leaf, LeafBuilder, Unsupported
from atlas.equations.nodes import ADD, ATOM, Node, Sym
from atlas.i18n import msg


class MHAOp(Node):
    """nn.MultiheadAttention: the output and the attention weights (averaged over the heads unless asked not to).
    The masks as F.multi_head_attention_forward applies them: `attn_mask` ([T, S], or [B·heads, T, S]) and
    `key_padding_mask` ([B, S]) added to the logits, a boolean one as −∞ where it is true; with is_causal, no padding
    mask and no weights asked for, torch takes the hint and applies the causal mask in place of attn_mask."""

    def _proj(self, p, x, w, b):
        core = p.wrap(x, ATOM) + r"\," + p.base(w) + "^{(h)}"
        return core if b is None else r"\left(" + core + "+" + p.base(b) + r"^{(h)}\right)"

    def _weights(self, p) -> str:
        """The attention weights of head h: softmax over the keys of the scaled logits and the masks."""
        q, k, _, wq, wk, _, bq, bk, _, _, _, mask, padding = self.args
        logits = (r"\frac{" + self._proj(p, q, wq, bq) + r"\," + self._proj(p, k, wk, bk) + r"^{\mathsf T}}{\sqrt{"
                  + str(self.meta["head_dim"]) + "}}")
        for extra in (mask, padding):
            if extra is not None:
                logits += "+" + p.wrap(extra, ADD)
        if self.meta.get("causal"):
            logits += r"+\atlasref{c.causal}"
        return r"\operatorname{softmax}\!\Big(" + logits + r"\Big)"

    def tex(self, p):
        return self.item_tex(p, 0)

    def item_tex(self, p, i: int) -> str:
        """Output 0, the attention's result; output 1, its weights, their mean over the heads by default."""
        _, _, v, _, _, wv, _, _, bv, wo, bo, _, _ = self.args
        if i == 1:
            heads = str(self.meta["heads"])
            return (r"\frac{1}{" + heads + r"}\sum_{h=1}^{" + heads + "}" + self._weights(p)
                    if self.meta.get("average", True) else self._weights(p))
        inner = self._weights(p) + r"\," + self._proj(p, v, wv, bv)
        out = r"\operatorname{concat}_h\!\Big(" + inner + r"\Big)\," + p.print(wo)
        return out if bo is None else out + "+" + p.print(bo)

    def run(self, ev, q, k, v, wq, wk, wv, bq, bk, bv, wo, bo, mask, padding):
        heads, batch_first = self.meta["heads"], self.meta["batch_first"]
        unbatched = q.dim() == 2                # one sequence [T, E]: torch runs it as a batch of one, sequence first
        if unbatched:
            q, k, v, batch_first = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), False
        if not batch_first:
            q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        B, T, S = q.shape[0], q.shape[1], k.shape[1]
        hs = wq.shape[-1] // heads

        def split(x, w, b, n):
            y = x @ w if b is None else x @ w + b
            return y.reshape(B, n, heads, hs).transpose(1, 2)

        Q, K, V = split(q, wq, bq, T), split(k, wk, bk, S), split(v, wv, bv, S)
        s = Q @ K.transpose(-2, -1) / math.sqrt(hs)
        if mask is not None:                    # [T, S] for every sequence and head, or [B·heads, T, S]
            s = s + (_additive(mask, s.dtype) if mask.dim() == 2 else _additive(mask, s.dtype).view(B, heads, T, S))
        if padding is not None:                 # [B, S], or [S] for one sequence: the keys each sequence ignores
            s = s + _additive(padding, s.dtype).view(B, 1, 1, S)
        if self.meta.get("causal"):
            s = s.masked_fill(torch.ones(T, S, dtype=torch.bool).triu(1), float("-inf"))
        e = torch.exp(s - s.amax(-1, keepdim=True))
        A = e / e.sum(-1, keepdim=True)
        o = (A @ V).transpose(1, 2).reshape(B, T, heads * hs) @ wo
        if bo is not None:
            o = o + bo
        if not batch_first:
            o = o.transpose(0, 1)
        weights = A.mean(1) if self.meta.get("average", True) else A
        if unbatched:
            return o.squeeze(1), weights.squeeze(0)
        return o, weights


def _additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A mask as the logits take it: a boolean one is −∞ where true (that key is left out), 0 elsewhere."""
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype).masked_fill(mask, float("-inf"))
    return mask.to(dtype)


def multihead_attention(b: LeafBuilder, query, key=None, value=None, *masks):
    mod = b.module
    if not mod._qkv_same_embed_dim or mod.bias_k is not None or mod.add_zero_attn:
        raise Unsupported(msg("MultiheadAttention with separate key/value sizes, bias_k or add_zero_attn"))
    named = b.named
    if masks and not named:             # by position alone, an attention mask and a padding mask look alike
        raise Unsupported(msg("%(layer)s called with a mask", layer="MultiheadAttention"))
    key = query if key is None else key
    value = key if value is None else value
    mask, padding = named.get("attn_mask"), named.get("key_padding_mask")
    if any(x is not None and not isinstance(x, Node) for x in (mask, padding)):
        raise Unsupported(msg("%(layer)s called with a mask", layer="MultiheadAttention"))
    # F.multi_head_attention_forward: the is_causal hint replaces the mask where nothing needs the mask itself
    causal = bool(named.get("is_causal", False)) and padding is None and not named.get("need_weights", True)
    E = mod.embed_dim
    path = b.path

    def part(name, base, i, transpose):
        tensor = getattr(mod, name, None)
        if tensor is None:
            return None
        key_ = f"p.{path}.{name}.{i}" if path else f"p.{name}.{i}"
        b.prog.add(key_, "param", ("param", path, name, transpose, (i * E, (i + 1) * E)), base=base, role=b.attr)
        return Sym(key_)

    wq, wk, wv = (part("in_proj_weight", f"W_{s}", i, True) for i, s in enumerate("QKV"))
    bq, bk, bv = (part("in_proj_bias", f"b_{s}", i, False) for i, s in enumerate("QKV"))
    out_path = f"{path}.out_proj" if path else "out_proj"
    out = LeafBuilder(mod.out_proj, b.prog, out_path, None)
    wo = out.param("weight", "W_O", transpose=True)
    bo = out.param("bias", "b_O")
    node = MHAOp(query, key, value, wq, wk, wv, bq, bk, bv, wo, bo, None if causal else mask, padding,
                 heads=mod.num_heads, batch_first=mod.batch_first, head_dim=mod.head_dim, causal=causal,
                 average=bool(named.get("average_attn_weights", True)))
    from atlas.equations.ops_tensor import Item
    return Leaf((Item(node, i=0), Item(node, i=1)), inline=False,
                summary=msg("Multi-head attention with %(heads)s heads of %(features)s features.",
                            heads=mod.num_heads, features=mod.head_dim))


class ActivationOp(Node):
    """The activation a TransformerEncoderLayer holds as a function, not a module."""

    def tex(self, p):
        return r"\operatorname{" + self.meta["name"] + r"}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x):
        return torch.relu(x) if self.meta["name"] == "ReLU" else 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def transformer_encoder_layer(b: LeafBuilder, src, *masks):
    """nn.TransformerEncoderLayer in evaluation mode, post- or pre-norm; its masks and is_causal go to its
    self-attention as its forward() passes them."""
    named = b.named
    if masks and not named:             # by position alone, an attention mask and a padding mask look alike
        raise Unsupported(msg("%(layer)s called with a mask", layer="TransformerEncoderLayer"))
    passed = {"attn_mask": named.get("src_mask"), "key_padding_mask": named.get("src_key_padding_mask"),
              "need_weights": False, "is_causal": bool(named.get("is_causal", False))}
    if any(x is not None and not isinstance(x, Node) for x in (passed["attn_mask"], passed["key_padding_mask"])):
        raise Unsupported(msg("%(layer)s called with a mask", layer="TransformerEncoderLayer"))
    from atlas.equations.ops_nn import Call
    from atlas.equations.ops_tensor import Item
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
        sym, st = b.step(hint, node, {"a": "a", "f": "f", "x_prime": "x'"}[hint])
        steps.append(st)
        return sym

    def attention(x):
        return Item(Call(sa, (x, x, x), passed if masks else {}), i=0)

    def feed_forward(x):
        hidden = Call(l1, (x,), {})
        acted = ActivationOp(hidden, name=act_name) if not isinstance(act, nn.Module) else Call(child("activation"), (hidden,), {})
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


REGISTRY[nn.MultiheadAttention] = multihead_attention
REGISTRY[nn.TransformerEncoderLayer] = transformer_encoder_layer
