"""Rotary position embeddings: the angle tables a model computes from positions and inverse frequencies, and the
rotation it applies to queries and keys.

The tables: positions times a vector ω of inverse frequencies (an outer product), concatenated with themselves, their
cosine and sine. ω is read from the buffer's values: where ω_i = θ^(−2(i−1)/d) for one θ, that θ is the base the
page states (the simplest number that gives the buffer's values in its own precision), and where it is not (a scaled
RoPE), no θ is stated. The rotation: x ⊙ cos + rotate_half(x) ⊙ sin, rotate_half(x) = [−x₂; x₁] the halves of the
features, is each pair of features (i, i + d/2) rotated by its angle; the evaluator rotates the pairs.
"""

from __future__ import annotations

import torch

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.nodes import ATOM, MUL, Node, SizeOf, Sym
from atlas.analyse.equations.notation import (
    Equation,
    Fenced,
    Glyph,
    Group,
    Ident,
    Number,
    Ref,
    applied,
    fn,
    op,
    row,
    sub,
    sup,
)
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import Broadcast, Real
from atlas.analyse.paper.match import bare, pair, site
from atlas.document import Idiom
from atlas.i18n import msg

_X, _I, _T = Ident("x"), Ident("i"), Ident("t")


def theta_of(values: torch.Tensor, dim: int) -> float | None:
    """θ where values[i] = θ^(−2i/dim) for every i (inverse frequencies of a rotary embedding), the number with the
    fewest significant digits that gives the values in their dtype; None where no θ gives them."""
    if values is None or values.dim() != 1 or values.numel() < 2 or not values.is_floating_point():
        return None
    w = values.double()
    if float(w[0]) != 1.0 or bool((w <= 0).any()):
        return None
    i = torch.arange(1, w.numel(), dtype=torch.float64)
    logs = -torch.log(w[1:]) * dim / (2 * i)
    estimate = float(torch.exp(logs.mean()))
    exps = torch.arange(0, w.numel(), dtype=torch.float64) * 2 / dim
    for digits in range(1, 10):
        candidate = float(f"{estimate:.{digits}g}")
        made = (1.0 / candidate ** exps).to(values.dtype)
        if torch.allclose(made.double(), w, rtol=4 * torch.finfo(values.dtype).eps, atol=0):
            return candidate
    return None


class Outer(Node):
    """a ⊗ b over the last axis: a[..., None] · b, b a vector."""

    prec = MUL

    def notation(self, p):
        a, b = self.args
        return row(p.wrap(a, MUL), Glyph("⊗"), p.wrap(b, MUL))

    def run(self, ev, a, b):
        return a.unsqueeze(-1) * b


class RotaryAngles(Outer):
    """Positions times the inverse frequencies ω of a rotary embedding, ω_i = θ^(−2(i−1)/d): meta theta, dim."""

    idiom = "rope"

    def definition(self, p):
        w = self.args[1]
        d = self.meta["dim"]
        exponent = row(Glyph("−"), Number(2), Fenced("(", ")", row(_I, Glyph("−"), Number(1)), "auto"), Glyph("/"),
                       Number(d))
        omega = Group(Ref(w.key)) if isinstance(w, Sym) else Ident("ω")
        line = Equation(sub(omega, _I, tight=True), sup(Ident("θ"), exponent))
        return line, msg("the inverse frequencies of the rotary embedding, i = 1, …, %(n)s, with θ = %(theta)s",
                         n=d // 2, theta=_theta_text(self.meta["theta"]))


def _theta_text(theta: float) -> str:
    return f"{int(theta):,}" if float(theta).is_integer() else f"{theta:g}"


class RoPE(Node):
    """Each pair of features (i, i + h) of x rotated by the angle whose cosine and sine the tables hold at i:
    args (x, cos, sin); meta half (h), theta (where known)."""

    idiom = "rope"
    prec = ATOM

    def notation(self, p):
        return applied(op("RoPE"), p.print(self.args[0]), gap=False)

    def definition(self, p):
        h = self.meta["half"]
        i2 = row(_I, Glyph("+"), Number(h))
        x_i, x_j = sub(_X, _I, tight=True), sub(_X, i2)
        phi = sub(Ident("φ"), _I, tight=True)
        cos, sin = row(fn("cos"), phi), row(fn("sin"), phi)
        lhs = Fenced("(", ")", row(sub(applied(op("RoPE"), _X, gap=False), _I), Glyph(","),
                                   sub(applied(op("RoPE"), _X, gap=False), i2)), "auto")
        rhs = Fenced("(", ")", row(x_i, cos, Glyph("−"), x_j, sin, Glyph(","), x_j, cos, Glyph("+"), x_i, sin), "auto")
        theta = self.meta.get("theta")
        if theta is not None:
            return Equation(lhs, rhs), msg(
                "rotary position embedding: each pair of features (i, i + %(h)s) rotated by the angle "
                "φ_i = t·θ^(−2(i−1)/%(d)s) of its position t, with θ = %(theta)s",
                h=h, d=2 * h, theta=_theta_text(theta))
        return Equation(lhs, rhs), msg(
            "rotary position embedding: each pair of features (i, i + %(h)s) rotated by the angle φ_i of its position, "
            "whose cosine and sine the model's tables hold", h=h)

    def run(self, ev, x, cos, sin):
        h = self.meta["half"]
        x1, x2 = x[..., :h], x[..., h:2 * h]
        c1, s1 = cos[..., :h], sin[..., :h]
        c2, s2 = cos[..., h:2 * h], sin[..., h:2 * h]
        return torch.cat((x1 * c1 - x2 * s1, x2 * c2 + x1 * s2), dim=-1)


def outer(node, g: Graph):
    """unsqueeze(a, −1) ⊙ b, b a vector: a ⊗ b; positions ⊗ inverse frequencies of one θ: their rotary angles."""
    for a, b in pair(node, m.Mul):
        a_ = a.args[0] if isinstance(a, Real) else a
        if not isinstance(a_, t.Unsqueeze) or a_.meta.get("dim") not in (-1, len(g.shape(a_.args[0]) or ())):
            continue
        if isinstance(b, Broadcast) and b.args[1] is None and b.meta.get("dim") == 0:
            b = b.args[0]                       # b[None, :]: the same vector, for every row of a
        shape = g.shape(b)
        if shape is None or len(shape) != 1:
            continue
        inner = a_.args[0] if not isinstance(a, Real) else Real(a_.args[0], **a.meta)
        theta = _theta(b, g)
        if theta is not None:
            d = 2 * int(shape[0])
            g.name_as(b, Ident("ω"))
            out = RotaryAngles(inner, b, theta=theta, dim=d)
            g.recognized(Idiom("rope", (("theta", theta), ("rotary_dim", d)), *site(node)), out)
            return out
        return Outer(inner, b)
    return None


def _theta(node, g: Graph) -> float | None:
    values = g.context.values(g.symbol(bare(node, g)))
    shape = g.shape(node)
    return theta_of(values, 2 * int(shape[0])) if values is not None and shape else None


def _rotate_half(node, g: Graph):
    """(x, h) where `node` is [−x_{h+1:2h}; x_{1:h}] along the last axis."""
    node = bare(node, g)
    if not isinstance(node, t.Cat) or len(node.args) != 2 or node.meta.get("dim") not in (-1, _last(node, g)):
        return None
    neg, first = (bare(a, g) for a in node.args)
    if not isinstance(neg, m.Neg):
        return None
    second = bare(neg.args[0], g)
    if not (isinstance(first, t.Slice) and isinstance(second, t.Slice)):
        return None
    x = first.args[0]
    if not g.same(bare(x, g), bare(second.args[0], g)):
        return None
    a0, a1 = _int(first.args[1]), _int(first.args[2])
    b0, b1 = _int(second.args[1]), _int(second.args[2])
    if None in (a0, a1, b0, b1) or a0 != 0 or b0 != a1 or b1 != 2 * a1:
        return None
    shape = g.shape(x) or g.shape(bare(x, g))
    if shape is None or shape[-1] != 2 * a1:
        return None
    return x, a1


def _last(node, g: Graph):
    shape = g.shape(node)
    return len(shape) - 1 if shape else None


def _int(node):
    if isinstance(node, SizeOf) and isinstance(node.expr, int):
        return node.expr
    value = getattr(node, "value", None)
    return value if isinstance(value, int) else None


def rotation(node, g: Graph):
    """x ⊙ cos + rotate_half(x) ⊙ sin: RoPE(x)."""
    for first, second in pair(node, m.Add):
        for x, c in pair(first, m.Mul):
            for r, s in pair(second, m.Mul):
                found = _rotate_half(r, g)
                if found is None or not g.same(bare(found[0], g), bare(x, g)):
                    continue
                theta = _table_theta(c, g)
                out = RoPE(x, c, s, half=found[1], theta=theta)
                params = (("theta", theta), ("rotary_dim", 2 * found[1])) if theta is not None \
                    else (("rotary_dim", 2 * found[1]),)
                g.recognized(Idiom("rope", params, *site(node)), out)
                return out
    return None


def _table_theta(table, g: Graph) -> float | None:
    """θ of the inverse frequencies a cosine table was computed from, where the record shows them."""
    for values in g.context.buffers_behind(g.symbol(bare(table, g))):
        if values is not None and values.dim() == 1:
            theta = theta_of(values, 2 * values.numel())
            if theta is not None:
                return theta
    return None


RULES = (outer, rotation)
