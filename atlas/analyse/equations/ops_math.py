"""Elementwise arithmetic, comparisons and activations, each written out so that a check is independent of
torch's kernels."""

from __future__ import annotations

import math

import torch

from atlas.analyse.equations.nodes import ADD, ATOM, MUL, POW, Node, Num
from atlas.analyse.equations.notation import (
    THICK,
    Cases,
    Fenced,
    Frac,
    Glyph,
    Ident,
    Number,
    Product,
    Space,
    applied,
    fn,
    op,
    rm,
    row,
    sub,
    sup,
)
from atlas.analyse.equations.notation import Sqrt as Root


class Add(Node):
    prec, elementwise = ADD, True

    def notation(self, p):
        a, b = self.args
        return row(p.wrap(a, ADD), Glyph("+"), p.wrap(b, ADD))

    def run(self, ev, a, b):
        return a + b


class Sub(Node):
    prec, elementwise = ADD, True

    def notation(self, p):
        a, b = self.args
        return row(p.wrap(a, ADD), Glyph("−"), p.wrap(b, ADD, strict=True))

    def run(self, ev, a, b):
        return a - b


class Neg(Node):
    prec, elementwise = ADD, True

    def notation(self, p):
        return row(Glyph("−"), p.wrap(self.args[0], MUL))

    def run(self, ev, a):
        return -a


class Mul(Node):
    """Elementwise product: juxtaposition with a scalar, ⊙ between tensors."""

    prec, elementwise = MUL, True

    def notation(self, p):
        a, b = self.args
        left, right = p.wrap(a, MUL), p.wrap(b, MUL)
        if p.is_scalar(a) or p.is_scalar(b):
            return Product(left, right)
        return row(left, Glyph("⊙"), right)

    def run(self, ev, a, b):
        return a * b


class Div(Node):
    prec, elementwise = ATOM, True

    def notation(self, p):
        a, b = self.args
        return Frac(p.print(a), p.print(b))

    def run(self, ev, a, b):
        return a / b


class FloorDiv(Node):
    prec, elementwise = ATOM, True

    def notation(self, p):
        a, b = self.args
        return Fenced("⌊", "⌋", row(p.print(a), Glyph("/"), p.print(b)), "auto")

    def run(self, ev, a, b):
        return a // b


class Mod(Node):
    prec, elementwise = MUL, True

    def notation(self, p):
        a, b = self.args
        return row(p.wrap(a, MUL), Glyph("mod"), p.wrap(b, MUL))

    def run(self, ev, a, b):
        return a % b


class Pow(Node):
    prec, elementwise = POW, True

    def notation(self, p):
        a, b = self.args
        if isinstance(b, Num) and b.value == 0.5:
            return Root(p.print(a))
        return sup(p.base(a), p.print(b))

    def run(self, ev, a, b):
        return a ** b


class Sqrt(Node):
    prec, elementwise = ATOM, True

    def notation(self, p):
        return Root(p.print(self.args[0]))

    def run(self, ev, a):
        return torch.sqrt(a) if isinstance(a, torch.Tensor) else math.sqrt(a)


class Rsqrt(Node):
    prec, elementwise = ATOM, True

    def notation(self, p):
        return Frac(Number(1), Root(p.print(self.args[0])))

    def run(self, ev, a):
        return 1 / torch.sqrt(a) if isinstance(a, torch.Tensor) else 1 / math.sqrt(a)


class MachineEpsilon(Node):
    """The machine epsilon of the argument's floating-point type, computed in its opmath type (half and bfloat16
    in float32), as torch's norms use it when eps is None."""

    prec = ATOM

    def notation(self, p):
        return sub(Ident("ϵ"), rm("mach"))

    @staticmethod
    def of(dtype: str) -> float:
        return torch.finfo(getattr(torch, dtype)).eps

    def run(self, ev, x):
        dtype = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32
        return torch.tensor(torch.finfo(dtype).eps, dtype=x.dtype)


class Reciprocal(Node):
    prec, elementwise = ATOM, True

    def notation(self, p):
        return Frac(Number(1), p.print(self.args[0]))

    def run(self, ev, a):
        return 1 / a


def _unary(name: str, written, fn, big: bool = False):
    def notation(self, p):
        inner = p.print(self.args[0])
        if big:
            return applied(written, inner, size="Big")
        return applied(written, inner, gap=False)

    def run(self, ev, a):
        if isinstance(a, torch.Tensor):
            return fn(a)
        return fn(torch.tensor(a, dtype=torch.float64)).item()

    return type(name, (Node,), {"notation": notation, "run": run, "prec": ATOM, "elementwise": True, "__slots__": (),
                                "function": staticmethod(fn)})     # how the check's conditioning differentiates it


Tanh = _unary("Tanh", fn("tanh"), torch.tanh, big=True)
Exp = _unary("Exp", fn("exp"), torch.exp)
Log = _unary("Log", fn("log"), torch.log)
Cos = _unary("Cos", fn("cos"), torch.cos)
Sin = _unary("Sin", fn("sin"), torch.sin)
Erf = _unary("Erf", op("erf"), torch.erf)
Abs = _unary("Abs", op("abs"), torch.abs)
Sign = _unary("Sign", op("sign"), torch.sign)
Sigmoid = _unary("Sigmoid", Ident("σ"), lambda x: 1 / (1 + torch.exp(-x)))
Phi = _unary("Phi", Ident("Φ"), lambda x: 0.5 * (1 + torch.erf(x / math.sqrt(2))))
Softplus = _unary("Softplus", op("softplus"), lambda x: torch.where(x > 20, x, torch.log1p(torch.exp(x))))
Floor = _unary("Floor", op("floor"), torch.floor)


class Max(Node):
    """The larger of two values, elementwise."""

    prec, elementwise = ATOM, True

    def notation(self, p):
        a, b = self.args
        return applied(fn("max"), p.print(a), p.print(b), size="big", separator=(Glyph(","), THICK))

    def run(self, ev, a, b):
        return _pairwise(torch.maximum, max, a, b)


class Min(Node):
    prec, elementwise = ATOM, True

    def notation(self, p):
        a, b = self.args
        return applied(fn("min"), p.print(a), p.print(b), size="big", separator=(Glyph(","), THICK))

    def run(self, ev, a, b):
        return _pairwise(torch.minimum, min, a, b)


def _pairwise(tensor_fn, plain_fn, a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        like = a if isinstance(a, torch.Tensor) else b
        a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=like.dtype)
        b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=like.dtype)
        return tensor_fn(a, b)
    return plain_fn(a, b)


class Compare(Node):
    """a < b, a = b, ... elementwise, giving booleans."""

    prec, elementwise = ADD, True
    SIGNS = {"lt": "<", "le": "≤", "gt": ">", "ge": "≥", "eq": "=", "ne": "≠"}

    def notation(self, p):
        a, b = self.args
        return row(p.wrap(a, ADD), Glyph(self.SIGNS[self.meta["op"]]), p.wrap(b, ADD))

    def run(self, ev, a, b):
        return getattr(torch, self.meta["op"])(torch.as_tensor(a), torch.as_tensor(b)) \
            if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) else \
            {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[self.meta["op"]]


class Not(Node):
    """¬a, elementwise, on booleans (a mask turned over)."""

    prec, elementwise = ADD - 1, True          # below a comparison's: (¬a) = b is parenthesized, ¬(a = b) is not a

    def notation(self, p):
        return row(Glyph("¬"), p.wrap(self.args[0], MUL))

    def run(self, ev, a):
        return torch.logical_not(a) if isinstance(a, torch.Tensor) else not a


class Logical(Node):
    """a ∧ b, a ∨ b, a ⊕ b, elementwise, on booleans (two masks combined)."""

    prec, elementwise = ADD - 5, True        # below a comparison's, so that x<2 ∧ x≠0 needs no parentheses
    SIGNS = {"and": "∧", "or": "∨", "xor": "⊕"}

    def notation(self, p):
        a, b = self.args                        # one of them inside another is parenthesized: (a ∧ b) ∨ c
        spaced = Space("plain")
        return row(p.wrap(a, ADD - 1), spaced, Glyph(self.SIGNS[self.meta["op"]]), spaced, p.wrap(b, ADD - 1))

    def run(self, ev, a, b):
        return getattr(torch, f"logical_{self.meta['op']}")(torch.as_tensor(a), torch.as_tensor(b))


class Where(Node):
    """c ? a : b, elementwise."""

    prec = ATOM

    def notation(self, p):
        c, a, b = self.args
        return Cases(((p.print(a), p.print(c)), (p.print(b), None)), worded=True)

    def run(self, ev, c, a, b):
        if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
            return torch.where(c, a, b)     # two numbers (LongT5's where(mask != 0, 1.0, -1000.0)), as the code ran it
        like = a if isinstance(a, torch.Tensor) else b
        a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=like.dtype)
        b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=like.dtype)
        return torch.where(c, a, b)


