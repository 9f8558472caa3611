"""Network operations: attention, convolution, dropout, child modules, loops, and any other torch call.

Attention runs written out (q kᵀ, mask, softmax as exp/sum, grouped heads repeated), so a check of a page
that uses it does not lean on torch's fused kernel.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from atlas.analyse.equations.nodes import ADD, ATOM, Node, Num, SizeOf, kids
from atlas.analyse.equations.notation import (
    THIN,
    Fenced,
    Frac,
    Glyph,
    Group,
    Ident,
    Number,
    Ref,
    Script,
    Word,
    applied,
    digits,
    joined,
    op,
    rm,
    row,
    sup,
)
from atlas.analyse.equations.notation import Sqrt as Root
from atlas.analyse.equations.ops_tensor import Transpose


class Attention(Node):
    """softmax(q kᵀ · scale + M) v, M the causal mask when the code asks for it."""

    def notation(self, p):
        q, k, v, mask = self.args
        m = self.meta
        groups = m.get("groups", 1)
        repeated = lambda x: applied(op("repeat"), p.print(x), subscript=digits(str(groups)))  # noqa: E731
        kt = sup(p.base(k) if groups == 1 else Group(repeated(k)), Word("T", "sans"))
        vv = p.wrap(v, ATOM) if groups == 1 else repeated(v)
        return self.softmax_of(p, q, kt, vv, mask)

    def softmax_of(self, p, q, kt, vv, mask):
        """softmax(q kᵀ/√d + M) v, the keys and values as the caller prints them."""
        m = self.meta
        head = m["head"]
        if m.get("scale") is None or (isinstance(head, int) and head > 0 and abs(m["scale"] - head ** -0.5) < 1e-12):
            logits = Frac(row(p.print(q), THIN, kt), Root(p.print(SizeOf(head))))
        elif m["scale"] == 1:           # no scaling (T5): q kᵀ as it is
            logits = row(p.print(q), THIN, kt)
        else:
            logits = row(p.print(Num(m["scale"])), THIN, p.print(q), THIN, kt)
        if mask is not None and not (isinstance(mask, Num) and mask.value is None):
            logits = row(logits, Glyph("+"), p.wrap(mask, ADD))
        if m.get("causal"):
            logits = row(logits, Glyph("+"), Ref("c.causal"))
        return row(applied(op("softmax"), logits, size="Big"), THIN, vv)

    def run(self, ev, q, k, v, mask):
        m = self.meta
        g = m.get("groups", 1)
        if g > 1:
            k, v = k.repeat_interleave(g, dim=-3), v.repeat_interleave(g, dim=-3)
        scale = m["scale"] if m.get("scale") is not None else 1 / math.sqrt(q.shape[-1])
        return masked_softmax((q @ k.transpose(-2, -1)) * scale, mask, m.get("causal")) @ v


def masked_softmax(s, mask, causal: bool):
    """softmax over the last axis of the scores s, a boolean mask keeping, a float one added, a causal one hiding
    the later keys; a query whose every key is masked gets zeros, as scaled_dot_product_attention returns them
    (not 0/0)."""
    if isinstance(mask, torch.Tensor):
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    top = s.amax(-1, keepdim=True)
    e = torch.exp(s - torch.where(torch.isinf(top), torch.zeros_like(top), top))
    total = e.sum(-1, keepdim=True)
    return torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), 0.0)


class MHAOp(Node):
    """nn.MultiheadAttention: the output and the attention weights (averaged over the heads unless asked not to).
    The masks as F.multi_head_attention_forward applies them: `attn_mask` ([T, S], or [B·heads, T, S]) and
    `key_padding_mask` ([B, S]) added to the logits, a boolean one as −∞ where it is true; with is_causal, no padding
    mask and no weights asked for, torch takes the hint and applies the causal mask in place of attn_mask."""

    @property
    def masks(self) -> tuple:
        """The attention mask and the padding mask, each None where the call has none."""
        return self.args[11], self.args[12]

    def _proj(self, p, x, w, b):
        # a weight stored out × in, as F.multi_head_attention_forward takes it: head h's rows, transposed
        h = row(Glyph("("), Ident("h"), Glyph(")"))
        head = (sup(p.base(w.args[0]), row(h, Word("T", "sans"))) if isinstance(w, Transpose)
                and w.meta.get("ndim") == 2 else sup(p.base(w), h))
        core = row(p.wrap(x, ATOM), THIN, head)
        return core if b is None else Fenced("(", ")", row(core, Glyph("+"), sup(p.base(b), h)), "auto")

    def _weights(self, p):
        """The attention weights of head h: softmax over the keys of the scaled logits and the masks."""
        q, k, _, wq, wk, _, bq, bk, _, _, _, mask, padding = self.args
        logits = Frac(row(self._proj(p, q, wq, bq), THIN, sup(self._proj(p, k, wk, bk), Word("T", "sans"))),
                      Root(Number(self.meta["head_dim"])))
        for extra in (mask, padding):
            if extra is not None:
                logits = row(logits, Glyph("+"), p.wrap(extra, ADD))
        if self.meta.get("causal"):
            logits = row(logits, Glyph("+"), Ref("c.causal"))
        return applied(op("softmax"), logits, size="Big")

    def notation(self, p):
        return self.item_notation(p, 0)

    def item_notation(self, p, i: int):
        """Output 0, the attention's result; output 1, its weights, their mean over the heads by default."""
        _, _, v, _, _, wv, _, _, bv, wo, bo, _, _ = self.args
        if i == 1:
            heads = Number(self.meta["heads"])
            mean = row(Frac(Number(1), heads), Script(Glyph("∑"), sub=row(Ident("h"), Glyph("="), Number(1)),
                                                      sup=heads))
            return row(mean, self._weights(p)) if self.meta.get("average", True) else self._weights(p)
        inner = row(self._weights(p), THIN, self._proj(p, v, wv, bv))
        out = row(applied(op("concat"), inner, subscript=Ident("h"), tight=True, size="Big"), THIN, p.print(wo))
        return out if bo is None else row(out, Glyph("+"), p.print(bo))

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


class Conv(Node):
    """W ⋆ x + b with the module's stride, padding, dilation and groups."""

    prec = ADD

    def notation(self, p):
        x, w, b = self.args
        core = row(p.wrap(w, ATOM), Glyph("⋆"), p.wrap(x, ATOM))
        return core if b is None else row(core, Glyph("+"), p.print(b))

    def run(self, ev, x, w, b):
        m = self.meta
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[m["nd"]]
        return fn(x, w, b, m["stride"], m["padding"], m["dilation"], m["groups"])


class Dropout(Node):
    """Dropout while training; the identity in evaluation, where pages are checked. Where the code asks for it in
    evaluation too (F.dropout(x, p, training=True): Monte-Carlo dropout), meta["always"]: the check draws the mask,
    from the random state forward() drew its own from."""

    def notation(self, p):
        x, rate = self.args
        return applied(op("dropout"), p.print(x), subscript=p.print(rate))

    def run(self, ev, x, rate):
        return F.dropout(x, rate, training=True) if self.meta.get("always") else x


class Apply(Node):
    """Any other torch call, printed by its name and run as the same call: Apply(args, kwargs). An `inplace` flag
    is no part of the math (F.leaky_relu(h, 0.2, inplace=True) computes what it computes out of place): neither
    printed nor passed, so a run never changes a value another step reads."""

    def notation(self, p):
        args, kwargs = self.args
        shown = [_arg(p, a) for a in args] + [row(rm(k), Group(Glyph("=")), _arg(p, v))
                                              for k, v in kwargs.items() if v is not None and k != "inplace"]
        # torch's spellings of its private and in-place calls are no part of the math: _grouped_mm is grouped_mm,
        # __invert__ of an integer is invert, scatter_ is scatter
        return applied(op(self.meta["name"].strip("_")), *shown)

    def run(self, ev, args, kwargs):
        out = self.meta["func"](*args, **{k: v for k, v in kwargs.items() if k != "inplace"})
        # a tensor made from nothing (torch.randn(B, 8, T)) comes in torch's default float32, as forward() drew it;
        # the check computes in its own precision, as forward() then does once the code casts it (VITS's)
        if isinstance(out, torch.Tensor) and out.is_floating_point() and ev.dtype_of(out.dtype) != out.dtype:
            out = out.to(ev.dtype_of(out.dtype))
        return out


def _arg(p, x):
    """An argument as the call received it: a node, a number, a size, a dtype, a tuple of those."""
    import sympy
    if isinstance(x, Node):
        return p.print(x)
    if isinstance(x, bool) or x is None:
        return rm(str(x))
    if isinstance(x, (int, float)):
        return Num(x).notation(p)
    if isinstance(x, sympy.Basic):
        return SizeOf(x).notation(p)
    if isinstance(x, (tuple, list)):
        return row(Glyph("("), joined([_arg(p, i) for i in x], Glyph(",")), Glyph(")"))
    if isinstance(x, torch.dtype):
        return rm(str(x).removeprefix("torch."))
    return rm(str(x).replace("{", "").replace("}", ""))


class Call(Node):
    """A child module applied to its arguments, Call(module, args, kwargs); the check calls the real module, or
    the method of it the code called (meta "method": `get_bias`)."""

    def notation(self, p):
        module, args, kwargs = self.args
        return applied(p.print(module), *(p.print(a) for a in kids((args, kwargs))))

    def run(self, ev, module, args, kwargs):
        method = self.meta.get("method")
        return getattr(module, method)(*args, **kwargs) if method else module(*args, **kwargs)


class Loop(Node):
    """The entries of a module list applied in turn, each to the previous one's result:
    Loop(modules, start, args, kwargs), the running value inserted in `args` at `slot`."""

    def notation(self, p):
        raise TypeError("a loop is printed as a step of its own")

    def run(self, ev, modules, start, args, kwargs):
        value, out = start, start
        slot = self.meta["slot"]
        for module in modules:
            call_args = list(args)
            call_args.insert(slot, value)
            out = module(*call_args, **kwargs)
            value = out
            for key in self.meta.get("carry", ()):       # the running value inside (hidden, None)
                value = value[key]
        return out


class Linear(Node):
    """x Wᵀ + b as F.linear computes it (W stored out × in)."""

    prec = ADD

    def notation(self, p):
        x, w, b = self.args
        core = row(p.wrap(x, ATOM), THIN, sup(p.base(w), Word("T", "sans")))
        return core if b is None else row(core, Glyph("+"), p.print(b))

    def run(self, ev, x, w, b):
        y = x @ w.transpose(-2, -1) if w.dim() > 1 else x @ w
        return y if b is None else y + b
