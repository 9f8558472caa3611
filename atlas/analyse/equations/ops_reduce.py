"""Reductions over an axis, each written out so a check is independent of torch's kernels: mean, sum, the
Euclidean norm, variance, max, softmax and log-softmax."""

from __future__ import annotations

import sympy
import torch

from atlas.analyse.equations.nodes import ATOM, MUL, Node, SizeOf, Sym
from atlas.analyse.equations.notation import (
    Fenced,
    Frac,
    Glyph,
    Ident,
    Number,
    Script,
    Space,
    applied,
    fn,
    op,
    row,
    sub,
    sup,
)
from atlas.analyse.equations.ops_math import Pow, Sub


# -- reductions over axes ---------------------------------------------------------------------
def _dims(dim):
    if dim is None:
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)


class Mean(Node):
    """(1/n) Σ_j x_j over axes; n is the reduced size, read from the shapes."""

    prec = ATOM

    def notation(self, p):
        x, n = self.args
        return row(Frac(Number(1), p.print(n)), _sum_over("j", p.print(n)), _indexed(p, x))

    def run(self, ev, x, n):
        dims, keep = _dims(self.meta["dim"]), self.meta.get("keepdim", False)
        if dims is None:
            return x.sum() / x.numel()
        count = 1
        for d in dims:
            count *= x.shape[d]
        return x.sum(dim=dims, keepdim=keep) / count


class Sum(Node):
    prec = ATOM

    def notation(self, p):
        x, n = self.args
        return row(_sum_over("j", p.print(n)), _indexed(p, x))

    def run(self, ev, x, n):
        dims, keep = _dims(self.meta["dim"]), self.meta.get("keepdim", False)
        return x.sum() if dims is None else x.sum(dim=dims, keepdim=keep)


class Norm2(Node):
    """‖x‖₂ over an axis."""

    prec = ATOM

    def notation(self, p):
        return sub(Fenced("‖", "‖", p.print(self.args[0])), Number(2), tight=True)

    def run(self, ev, x):
        dims, keep = _dims(self.meta["dim"]), self.meta.get("keepdim", False)
        return torch.sqrt((x * x).sum(dim=dims, keepdim=keep))


class Var(Node):
    """The variance over an axis, with the code's correction (0: population)."""

    prec = ATOM

    def notation(self, p):
        x, n = self.args
        return applied(op("Var"), p.print(x), subscript=p.print(n))

    def run(self, ev, x, n):
        dims, keep = _dims(self.meta["dim"]), self.meta.get("keepdim", False)
        mu = x.mean(dim=dims, keepdim=True)
        count = 1
        for d in dims:
            count *= x.shape[d]
        return ((x - mu) ** 2).sum(dim=dims, keepdim=keep) / (count - self.meta.get("correction", 1))


class AMax(Node):
    prec = ATOM

    def notation(self, p):
        return row(sub(fn("max"), Ident("j")), _indexed(p, self.args[0]))

    def run(self, ev, x):
        dims, keep = _dims(self.meta["dim"]), self.meta.get("keepdim", False)
        return x.amax() if dims is None else x.amax(dim=dims, keepdim=keep)


class Softmax(Node):
    """exp(x_s) / Σ_u exp(x_u) over one axis; n, the axis's size, is printed from the shapes (2T keys)."""

    prec = ATOM

    def notation(self, p):
        x, n = self.args
        if not isinstance(x, Sym):
            return applied(op("softmax"), p.print(x), size="big")
        inner = p.base(x)
        at = lambda last: sub(inner, row(Ident("t"), Glyph(","), Ident(last)))  # noqa: E731
        return Frac(row(fn("exp"), Space("plain"), at("s")),
                    row(_sum_over("u", p.print(n)), fn("exp"), Space("plain"), at("u")))

    def run(self, ev, x, n):
        d = self.meta["dim"]
        e = torch.exp(x - x.amax(dim=d, keepdim=True))
        return e / e.sum(dim=d, keepdim=True)


class LogSoftmax(Node):
    prec = ATOM

    def notation(self, p):
        x, n = self.args
        return row(fn("log"), applied(op("softmax"), p.print(x), size="big"))

    def run(self, ev, x, n):
        d = self.meta["dim"]
        m = x.amax(dim=d, keepdim=True)
        return x - m - torch.log(torch.exp(x - m).sum(dim=d, keepdim=True))


def _indexed(p, x):
    """x_j, x_j^2 or (x_j - μ)^2: the summand of a sum over features."""
    if isinstance(x, Pow) and isinstance(x.args[0], Sub):
        a, b = x.args[0].args
        inner = row(sub(p.base(a), Ident("j"), tight=True), Glyph("−"), p.wrap(b, MUL))
        return sup(Fenced("(", ")", inner, "auto"), p.print(x.args[1]))
    if isinstance(x, Pow):
        return Script(p.base(x.args[0]), sub=Ident("j"), sup=p.print(x.args[1]), tight="_")
    return sub(p.base(x), Ident("j"), tight=True)


def _sum_over(index: str, n):
    """∑ from index = 1 to n."""
    return Script(Glyph("∑"), sub=row(Ident(index), Glyph("="), Number(1)), sup=n)


def n_of(shape, dim) -> SizeOf:
    """The size of the reduced axes, all of them without a dim, for printing: `768`, `T`, `2T`, `16B`."""
    if shape is None:
        return SizeOf(sympy.Symbol("n"))
    dims = _dims(dim)
    dims = range(len(shape)) if dims is None else dims
    size = 1
    for d in dims:
        size = size * shape[d]
    return SizeOf(size)
