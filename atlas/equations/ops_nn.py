"""Network operations: attention, convolution, dropout, child modules, loops, and any other torch call.

Attention runs written out (q kᵀ, mask, softmax as exp/sum, grouped heads repeated), so a check of a page
that uses it does not lean on torch's fused kernel.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from atlas.equations.nodes import ADD, ATOM, Node, Num, SizeOf, kids


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
        e = torch.exp(s - s.amax(-1, keepdim=True))
        return (e / e.sum(-1, keepdim=True)) @ v


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
        return self.meta["func"](*args, **{k: v for k, v in kwargs.items() if k != "inplace"})


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
