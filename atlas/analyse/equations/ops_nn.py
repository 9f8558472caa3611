"""Network operations: attention, convolution, dropout, child modules, loops, and any other torch call.

Attention runs written out (q kᵀ, mask, softmax as exp/sum, grouped heads repeated), so a check of a page
that uses it does not lean on torch's fused kernel.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from atlas.analyse.equations.nodes import ADD, ATOM, Node, Num, SizeOf, kids
from atlas.analyse.equations.ops_tensor import Transpose


class Attention(Node):
    """softmax(q kᵀ · scale + M) v, M the causal mask when the code asks for it."""

    def tex(self, p):
        q, k, v, mask = self.args
        m = self.meta
        kk = k if m.get("groups", 1) == 1 else None
        kt = (p.base(k) if kk is not None else
              r"{\operatorname{repeat}_{" + str(m["groups"]) + r"}\!\left(" + p.print(k) + r"\right)}") + r"^{\mathsf T}"
        vv = p.wrap(v, ATOM) if m.get("groups", 1) == 1 else \
            r"\operatorname{repeat}_{" + str(m["groups"]) + r"}\!\left(" + p.print(v) + r"\right)"
        head = m["head"]
        if m.get("scale") is None or (isinstance(head, int) and head > 0 and abs(m["scale"] - head ** -0.5) < 1e-12):
            logits = r"\frac{" + p.print(q) + r"\," + kt + r"}{\sqrt{" + p.print(SizeOf(head)) + "}}"
        elif m["scale"] == 1:           # no scaling (T5): q kᵀ as it is
            logits = p.print(q) + r"\," + kt
        else:
            logits = p.print(Num(m["scale"])) + r"\," + p.print(q) + r"\," + kt
        if mask is not None and not (isinstance(mask, Num) and mask.value is None):
            logits += "+" + p.wrap(mask, ADD)
        if m.get("causal"):
            logits += r"+\atlasref{c.causal}"
        return r"\operatorname{softmax}\!\Big(" + logits + r"\Big)\," + vv

    def run(self, ev, q, k, v, mask):
        m = self.meta
        g = m.get("groups", 1)
        if g > 1:
            k, v = k.repeat_interleave(g, dim=-3), v.repeat_interleave(g, dim=-3)
        scale = m["scale"] if m.get("scale") is not None else 1 / math.sqrt(q.shape[-1])
        s = (q @ k.transpose(-2, -1)) * scale
        if isinstance(mask, torch.Tensor):
            s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
        if m.get("causal"):
            L, S = s.shape[-2], s.shape[-1]
            s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
        # a query whose every key is masked gets zeros, as scaled_dot_product_attention returns them (not 0/0)
        top = s.amax(-1, keepdim=True)
        e = torch.exp(s - torch.where(torch.isinf(top), torch.zeros_like(top), top))
        total = e.sum(-1, keepdim=True)
        return torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), 0.0) @ v


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
        head = (p.base(w.args[0]) + r"^{(h)\mathsf T}" if isinstance(w, Transpose) and w.meta.get("ndim") == 2
                else p.base(w) + "^{(h)}")
        core = p.wrap(x, ATOM) + r"\," + head
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


class Conv(Node):
    """W ⋆ x + b with the module's stride, padding, dilation and groups."""

    prec = ADD

    def tex(self, p):
        x, w, b = self.args
        core = p.wrap(w, ATOM) + r"\star " + p.wrap(x, ATOM)
        return core + ("" if b is None else "+" + p.print(b))

    def run(self, ev, x, w, b):
        m = self.meta
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[m["nd"]]
        return fn(x, w, b, m["stride"], m["padding"], m["dilation"], m["groups"])


class Dropout(Node):
    """Dropout while training; the identity in evaluation, where pages are checked. Where the code asks for it in
    evaluation too (F.dropout(x, p, training=True): Monte-Carlo dropout), meta["always"]: the check draws the mask,
    from the random state forward() drew its own from."""

    def tex(self, p):
        x, rate = self.args
        return r"\operatorname{dropout}_{" + p.print(rate) + r"}\!\left(" + p.print(x) + r"\right)"

    def run(self, ev, x, rate):
        return F.dropout(x, rate, training=True) if self.meta.get("always") else x


class Apply(Node):
    """Any other torch call, printed by its name and run as the same call: Apply(args, kwargs). An `inplace` flag
    is no part of the math (F.leaky_relu(h, 0.2, inplace=True) computes what it computes out of place): neither
    printed nor passed, so a run never changes a value another step reads."""

    def tex(self, p):
        args, kwargs = self.args
        shown = [_arg_tex(p, a) for a in args] + [r"\mathrm{" + k.replace("_", r"\_") + "}{=}" + _arg_tex(p, v)
                                                  for k, v in kwargs.items() if v is not None and k != "inplace"]
        # torch's spellings of its private and in-place calls are no part of the math: _grouped_mm is grouped_mm,
        # __invert__ of an integer is invert, scatter_ is scatter
        name = self.meta["name"].strip("_").replace("_", r"\_")
        return r"\operatorname{" + name + r"}\!\left(" + r",\,".join(shown) + r"\right)"

    def run(self, ev, args, kwargs):
        out = self.meta["func"](*args, **{k: v for k, v in kwargs.items() if k != "inplace"})
        # a tensor made from nothing (torch.randn(B, 8, T)) comes in torch's default float32, as forward() drew it;
        # the check computes in its own precision, as forward() then does once the code casts it (VITS's)
        if isinstance(out, torch.Tensor) and out.is_floating_point() and ev.dtype_of(out.dtype) != out.dtype:
            out = out.to(ev.dtype_of(out.dtype))
        return out


def _arg_tex(p, x) -> str:
    """An argument as the call received it: a node, a number, a size, a dtype, a tuple of those."""
    import sympy
    if isinstance(x, Node):
        return p.print(x)
    if isinstance(x, bool) or x is None:
        return r"\mathrm{" + str(x) + "}"
    if isinstance(x, (int, float)):
        return Num(x).tex(p)
    if isinstance(x, sympy.Basic):
        return SizeOf(x).tex(p)
    if isinstance(x, (tuple, list)):
        return "(" + ",".join(_arg_tex(p, i) for i in x) + ")"
    if isinstance(x, torch.dtype):
        return r"\mathrm{" + str(x).removeprefix("torch.") + "}"
    return r"\mathrm{" + str(x).replace("_", r"\_").replace("{", "").replace("}", "") + "}"


class Call(Node):
    """A child module applied to its arguments, Call(module, args, kwargs); the check calls the real module."""

    def tex(self, p):
        module, args, kwargs = self.args
        shown = list(kids((args, kwargs)))
        return p.print(module) + r"\!\left(" + r",\,".join(p.print(a) for a in shown) + r"\right)"

    def run(self, ev, module, args, kwargs):
        return module(*args, **kwargs)


class Loop(Node):
    """The entries of a module list applied in turn, each to the previous one's result:
    Loop(modules, start, args, kwargs), the running value inserted in `args` at `slot`."""

    def tex(self, p):
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

    def tex(self, p):
        x, w, b = self.args
        core = p.wrap(x, ATOM) + r"\," + p.base(w) + r"^{\mathsf T}"
        return core if b is None else core + "+" + p.print(b)

    def run(self, ev, x, w, b):
        y = x @ w.transpose(-2, -1) if w.dim() > 1 else x @ w
        return y if b is None else y + b
