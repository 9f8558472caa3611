"""Normalizations over the features: RMSNorm, with its gain (γ, or 1 + γ stored as the offset from one) and its ε
added under the root or as a floor of the root mean square; and LayerNorm written out in model code.

Recognized from the operations: x divided by (or times the reciprocal of) the square root of the mean of x²
over the last axis plus a constant, or by the 2-norm over √d floored at a constant; x less its mean over the
last axis, divided by the square root of its variance plus a constant. Each evaluator computes the statistic
itself from its definition.
"""

from __future__ import annotations

import torch

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations.nodes import ADD, MUL, Node, Num, SizeOf
from atlas.analyse.equations.notation import (
    Equation,
    Fenced,
    Frac,
    Glyph,
    Ident,
    Number,
    Script,
    applied,
    op,
    row,
    sub,
    sup,
)
from atlas.analyse.equations.notation import Sqrt as Root
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.match import bare, last_axis, number, one_plus, pair, site, vector_param
from atlas.document import Idiom
from atlas.i18n import msg


class RMSNorm(Node):
    """γ ⊙ x / √(mean_j x_j² + ε): args (x, gain or None, eps, n); meta `offset` (the gain is 1 + γ), `floor`
    (x / max(‖x‖₂/√n, ε), ε a floor of the root mean square, not added under the root)."""

    idiom = "rmsnorm"
    prec = MUL

    def notation(self, p):
        x, gain, eps, n = self.args
        if not self.meta.get("floor"):          # by its name, defined once in the notation: RMSNorm_γ(x)
            head = op("RMSNorm") if gain is None else Script(op("RMSNorm"), sub=p.print(gain))
            return applied(head, p.print(x), gap=False)
        core = m.Div(x, m.Max(m.Div(red.Norm2(x, dim=-1), m.Sqrt(n)), eps))
        if gain is None:
            return p.print(core)
        scale = m.Add(Num(1), gain) if self.meta.get("offset") else gain
        return row(p.wrap(scale, MUL), Glyph("⊙"), p.print(core))

    def definition(self, p):
        if self.meta.get("floor"):
            return None
        _, gain, eps, n = self.args
        x, d, j, g = Ident("x"), Ident("d"), Ident("j"), Ident("γ")
        mean = row(Frac(Number(1), d), Script(Glyph("∑"), row(j, Glyph("="), Number(1)), d),
                   sup(sub(x, j), Number(2)))
        core = Frac(x, Root(row(mean, Glyph("+"), p.print(eps))))
        if gain is None:
            return Equation(applied(op("RMSNorm"), x, gap=False), core), msg(
                "RMS normalization over the last axis, of d = %(d)s features", d=_features(n))
        scale = Fenced("(", ")", row(Number(1), Glyph("+"), g)) if self.meta.get("offset") else g
        return Equation(applied(Script(op("RMSNorm"), sub=g), x, gap=False), row(scale, Glyph("⊙"), core)), msg(
            "RMS normalization over the last axis, of d = %(d)s features, with the learned gain γ the subscript "
            "names", d=_features(n))

    def run(self, ev, x, gain, eps, n):
        if self.meta.get("floor"):
            rms = torch.sqrt((x * x).sum(-1, keepdim=True) / x.shape[-1])
            y = x / torch.clamp(rms, min=eps)
        else:
            y = x / torch.sqrt((x * x).sum(-1, keepdim=True) / x.shape[-1] + eps)
        if gain is None:
            return y
        return y * (1 + gain) if self.meta.get("offset") else y * gain


class LayerNormOp(Node):
    """γ ⊙ (x − μ_d(x)) / √(σ_d²(x) + ε) + β over the last axis: args (x, gain or None, bias or None, eps, n).
    μ_d and σ_d² are printed by name and defined once in the page's notation, as the seeds write a LayerNorm."""

    idiom = "layernorm"
    prec = ADD

    def notation(self, p):
        x, gain, bias, eps, n = self.args
        arg = p.print(x)
        mu, var = _statistic(Ident("μ"))(arg), _statistic(Ident("σ"), Number(2))(arg)
        core = Frac(row(arg, Glyph("−"), mu), Root(row(var, Glyph("+"), p.print(eps))))
        out = core if gain is None else row(p.wrap(gain, MUL), Glyph("⊙"), core)
        return out if bias is None else row(out, Glyph("+"), p.wrap(bias, ADD))

    def definition(self, p):
        width = _features(self.args[4])
        x, d, j = Ident("x"), Ident("d"), Ident("j")
        total = lambda body: row(Frac(Number(1), d), Script(Glyph("∑"), row(j, Glyph("="), Number(1)), d), body)
        xj = sub(x, j)
        mu = _statistic(Ident("μ"))(x)
        var = _statistic(Ident("σ"), Number(2))(x)
        return ((Equation(mu, total(xj)), msg("the mean of x over its last axis, of d = %(d)s features",
                                               d=width)),
                (Equation(var, total(sup(Fenced("(", ")", row(xj, Glyph("−"), mu), "auto"), Number(2)))),
                 msg("the variance of x over its last axis, of d = %(d)s features, the biased estimate",
                     d=width)))

    def run(self, ev, x, gain, bias, eps, n):
        mu = x.sum(-1, keepdim=True) / x.shape[-1]
        var = ((x - mu) ** 2).sum(-1, keepdim=True) / x.shape[-1]
        y = (x - mu) / torch.sqrt(var + eps)
        y = y if gain is None else y * gain
        return y if bias is None else y + bias


def _features(n) -> str:
    """The number of features a statistic is over, as a sentence gives it."""
    return str(n.expr) if isinstance(n, SizeOf) else "d"


def _statistic(letter, power=None):
    """μ_d(x), σ_d²(x): a statistic over the features of x, by name."""
    stat = Script(letter, sub=Ident("d"), sup=power, tight="_^")
    return lambda x: row(stat, Fenced("(", ")", x))


def _mean_square_of(node, g: Graph):
    """x where `node` is the mean of x² over the last axis."""
    node = bare(node, g)
    if not isinstance(node, red.Mean) or not last_axis(node.meta.get("dim"), g.shape(node.args[0])):
        return None
    inner = bare(node.args[0], g)
    if isinstance(inner, m.Pow) and number(inner.args[1], g) == 2.0:
        return inner.args[0]
    if isinstance(inner, m.Mul) and g.same(inner.args[0], inner.args[1]):
        return inner.args[0]
    return None


def _root_mean_square_plus(node, g: Graph):
    """(x, ε) where `node` is √(mean x² + ε)."""
    node = bare(node, g)
    if not isinstance(node, m.Sqrt):
        return None
    for s, eps in pair(bare(node.args[0], g), m.Add):
        x = _mean_square_of(s, g)
        if x is not None and number(eps, g) is not None:
            return x, eps
    return None


def _normalized(node, g: Graph):
    """(x, ε, floor) where `node` is x / √(mean x² + ε), x · 1/√(…), or x / max(‖x‖₂/√d, ε)."""
    node = bare(node, g)
    if isinstance(node, m.Div):
        x, den = node.args
        found = _root_mean_square_plus(den, g)
        if found is not None and g.same(bare(found[0], g), bare(x, g)):
            return x, found[1], False
        den = bare(den, g)
        for rms, eps in pair(den, m.Max):
            rms = bare(rms, g)
            if isinstance(rms, m.Div) and number(eps, g) is not None:
                norm, root = bare(rms.args[0], g), rms.args[1]
                d = number(root, g)
                if isinstance(norm, red.Norm2) and g.same(bare(norm.args[0], g), bare(x, g)) and d and \
                        last_axis(norm.meta.get("dim"), g.shape(norm.args[0])) and _is_root_of_width(d, x, g):
                    return x, eps, True
    for x, r in pair(node, m.Mul):
        r = bare(r, g)
        inner = r.args[0] if isinstance(r, m.Rsqrt) else None
        if isinstance(r, m.Reciprocal) and isinstance(bare(r.args[0], g), m.Sqrt):
            inner = bare(r.args[0], g).args[0]
        if inner is None:
            continue
        for s, eps in pair(bare(inner, g), m.Add):
            y = _mean_square_of(s, g)
            if y is not None and g.same(bare(y, g), bare(x, g)) and number(eps, g) is not None:
                return x, eps, False
    return None


def _is_root_of_width(d: float, x, g: Graph) -> bool:
    shape = g.shape(bare(x, g)) or g.shape(x)
    width = shape[-1] if shape else None
    return isinstance(width, int) and abs(d * d - width) < 1e-6 * width


def _width(x, g: Graph) -> SizeOf:
    shape = g.shape(bare(x, g)) or g.shape(x)
    return SizeOf(shape[-1]) if shape else SizeOf(0)


def _idiom(node, eps, g: Graph, gain: str, **extra) -> Idiom:
    params = [("eps", number(eps, g)), ("gain", gain)] + list(extra.items())
    return Idiom("rmsnorm", tuple(params), *site(node))


def rms_norm(node, g: Graph):
    """x/√(mean x² + ε) → RMSNorm(x); γ ⊙ RMSNorm(x) and RMSNorm(x) ⊙ (1 + γ) → RMSNorm(x) with its gain."""
    if isinstance(node, RMSNorm):
        return None
    found = _normalized(node, g)
    if found is not None:
        x, eps, floor = found
        out = RMSNorm(x, None, eps, _width(x, g), floor=floor)
        g.recognized(_idiom(node, eps, g, "none", floor=floor), out)
        return out
    for gain, core in pair(node, m.Mul):
        core = bare(core, g)
        if not isinstance(core, RMSNorm) or core.args[1] is not None:
            continue
        x, _, eps, n = core.args
        width = n.expr if isinstance(n, SizeOf) else None
        offset = one_plus(gain, g)
        if offset is not None and vector_param(offset, g, width) is not None:
            out = RMSNorm(x, offset, eps, n, offset=True, floor=core.meta.get("floor", False))
        elif vector_param(gain, g, width) is not None:
            out = RMSNorm(x, bare(gain, g), eps, n, floor=core.meta.get("floor", False))
        else:
            continue
        g.recognized(_idiom(node, eps, g, "1 + γ" if offset is not None else "γ",
                            floor=core.meta.get("floor", False)), out)
        return out
    return None


def _centred(node, g: Graph):
    """x where `node` is x − mean(x) over the last axis."""
    node = bare(node, g)
    if not isinstance(node, m.Sub):
        return None
    x, mu = node.args
    mu = bare(mu, g)
    if isinstance(mu, red.Mean) and g.same(bare(mu.args[0], g), bare(x, g)) and \
            last_axis(mu.meta.get("dim"), g.shape(mu.args[0])):
        return x
    return None


def _variance_of(node, g: Graph):
    """x where `node` is the population variance of x over the last axis."""
    node = bare(node, g)
    if isinstance(node, red.Var) and node.meta.get("correction", 1) == 0 and \
            last_axis(node.meta.get("dim"), g.shape(node.args[0])):
        return node.args[0]
    if isinstance(node, red.Mean) and last_axis(node.meta.get("dim"), g.shape(node.args[0])):
        inner = bare(node.args[0], g)
        if isinstance(inner, m.Pow) and number(inner.args[1], g) == 2.0:
            return _centred(inner.args[0], g)
    return None


def layer_norm(node, g: Graph):
    """(x − μ)/√(σ² + ε), then ⊙ γ and + β where the code applies them, as LayerNormOp."""
    if isinstance(node, LayerNormOp):
        return None
    if isinstance(node, m.Div):
        x = _centred(node.args[0], g)
        den = bare(node.args[1], g)
        if x is not None and isinstance(den, m.Sqrt):
            for v, eps in pair(bare(den.args[0], g), m.Add):
                y = _variance_of(v, g)
                if y is not None and g.same(bare(y, g), bare(x, g)) and number(eps, g) is not None:
                    out = LayerNormOp(x, None, None, eps, _width(x, g))
                    g.recognized(Idiom("layernorm", (("eps", number(eps, g)),), *site(node)), out)
                    return out
    for gain, core in pair(node, m.Mul):
        core = bare(core, g)
        if isinstance(core, LayerNormOp) and core.args[1] is None and core.args[2] is None:
            x, _, _, eps, n = core.args
            if vector_param(gain, g, n.expr if isinstance(n, SizeOf) else None) is not None:
                return LayerNormOp(x, bare(gain, g), None, eps, n)
    for bias, core in pair(node, m.Add):
        core = bare(core, g)
        if isinstance(core, LayerNormOp) and core.args[2] is None:
            x, gain, _, eps, n = core.args
            if vector_param(bias, g, n.expr if isinstance(n, SizeOf) else None) is not None:
                return LayerNormOp(x, gain, bare(bias, g), eps, n)
    return None


RULES = (rms_norm, layer_norm)
