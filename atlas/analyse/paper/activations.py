"""Activations, recognized by their values: an elementwise expression of one tensor and numbers is evaluated on a
range of test points and compared with each known activation there. `x ⊙ σ(x)`, `0.5·x·(1 + tanh(√(2/π)(x +
0.044715x³)))` and `x · sigmoid(1.702x)` are found whatever way the code writes them; an expression that matches none
stays as written.
"""

from __future__ import annotations

import math

import torch

from atlas.analyse.equations.nodes import ATOM, Evaluator, Node, Num, SizeOf, Sym
from atlas.analyse.equations.notation import (
    Equation,
    Fenced,
    Frac,
    Glyph,
    Ident,
    Number,
    Product,
    Script,
    applied,
    fn,
    op,
    row,
    sup,
)
from atlas.analyse.equations.notation import Sqrt as Root
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import Broadcast, Real
from atlas.analyse.paper.match import site
from atlas.document import Idiom
from atlas.i18n import msg

MAX_NODES = 40                          # an activation is a short expression
PROBE = torch.linspace(-5.0, 5.0, 41, dtype=torch.float64)
AGREE = 1e-7                            # far below the distance between any two activations on the probe

_X = Ident("x")
_SQRT_2_PI = math.sqrt(2 / math.pi)

KNOWN = {
    "gelu": lambda t: 0.5 * t * (1 + torch.erf(t / math.sqrt(2))),
    "gelu_tanh": lambda t: 0.5 * t * (1 + torch.tanh(_SQRT_2_PI * (t + 0.044715 * t ** 3))),
    "silu": lambda t: t / (1 + torch.exp(-t)),
    "quick_gelu": lambda t: t / (1 + torch.exp(-1.702 * t)),
    "relu": lambda t: torch.clamp(t, min=0),
    "relu2": lambda t: torch.clamp(t, min=0) ** 2,
    "mish": lambda t: t * torch.tanh(torch.log1p(torch.exp(t))),
}


def _definition(kind: str):
    """The activation's definition, f(x) = …, as a formula."""
    x = _X
    if kind == "gelu":
        return row(x, applied(Ident("Φ"), x, gap=False)), msg("the exact GELU: x times the standard normal CDF Φ at x")
    if kind == "gelu_tanh":
        inner = Product(Root(Frac(Number(2), Ident("π"))),
                        Fenced("(", ")", row(x, Glyph("+"), Product(Number(0.044715), sup(x, Number(3)))), "auto"))
        return (Product(Frac(x, Number(2)), Fenced("(", ")", row(Number(1), Glyph("+"),
                                                                applied(fn("tanh"), inner, size="Big")), "auto")),
                msg("GELU in its tanh approximation"))
    if kind == "silu":
        return row(x, applied(Ident("σ"), x, gap=False)), msg("SiLU, also called swish: x times its logistic sigmoid σ")
    if kind == "quick_gelu":
        return (row(x, applied(Ident("σ"), Product(Number(1.702), x), gap=False)),
                msg("the sigmoid approximation of GELU: x times the logistic sigmoid σ of 1.702 x"))
    if kind == "relu":
        return applied(fn("max"), x, Number(0), gap=False), msg("the rectified linear unit")
    if kind == "relu2":
        return sup(applied(fn("max"), x, Number(0), gap=False), Number(2)), msg("the squared rectified linear unit")
    return (row(x, applied(fn("tanh"), applied(op("softplus"), x), gap=False)),
            msg("Mish: x times the tanh of its softplus"))


NAMES = {"gelu": ("GELU", None), "gelu_tanh": ("GELU", "tanh"), "silu": ("SiLU", None),
         "quick_gelu": ("QuickGELU", None), "relu": ("ReLU", None), "relu2": ("ReLU²", None), "mish": ("Mish", None)}


IDIOMS = {"gelu": ("gelu", (("approximate", "none"),)), "gelu_tanh": ("gelu", (("approximate", "tanh"),)),
          "silu": ("silu", ()), "quick_gelu": ("quick_gelu", ()), "relu": ("relu", ()), "relu2": ("relu2", ()),
          "mish": ("mish", ())}


class Activation(Node):
    """An activation applied elementwise, printed by its name and defined once in the page's notation."""

    idiom = "activation"
    prec = ATOM
    elementwise = True

    def head(self):
        name, mark = NAMES[self.meta["kind"]]
        word = op(name)
        return word if mark is None else Script(word, sub=fn(mark) if mark == "tanh" else op(mark))

    def notation(self, p):
        return applied(self.head(), p.print(self.args[0]), gap=False)

    def definition(self, p):
        formula, sentence = _definition(self.meta["kind"])
        return Equation(applied(self.head(), _X, gap=False), formula), sentence

    def run(self, ev, x):
        return KNOWN[self.meta["kind"]](x)


def _variable(node, g: Graph):
    """The one tensor an elementwise expression computes from, where it has exactly one; numbers aside. The walk
    stops at anything that is not elementwise arithmetic: that is the tensor."""
    found, pending, seen = [], [node], set()
    while pending:
        n = pending.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if len(seen) > MAX_NODES:
            return None
        if isinstance(n, (Num, SizeOf)):
            continue
        sym = g.symbol(n)
        if sym is not None and sym.kind == "const":
            continue
        if isinstance(n, Sym) or not (n.elementwise or isinstance(n, (Real, Broadcast))):
            if not any(g.same(n, f) for f in found):
                found.append(n)
            continue
        pending.extend(a for a in n.args if isinstance(a, Node))
        if any(not isinstance(a, Node) and a is not None and not isinstance(a, (int, float)) for a in n.args):
            return None                 # settings this walk does not read
    return found[0] if len(found) == 1 else None


def _probe(node, var, g: Graph):
    """The expression's values at the probe points, `var` standing for them."""
    env = {k: s.binding[1] for k, s in g.prog.symbols.items() if s.kind == "const" and s.binding}
    ev = Evaluator(env, {}, torch.float64, working=torch.float64)
    memo = {}

    def value(n):
        if n is var or (isinstance(n, Sym) and isinstance(var, Sym) and n.key == var.key):
            return PROBE
        if id(n) in memo:
            return memo[id(n)]
        if isinstance(n, Sym):
            out = ev.env[n.key]
        elif isinstance(n, (Num, SizeOf)):
            out = n.run(ev)
        else:
            out = n.run(ev, *[value(a) if isinstance(a, Node) else ev.data(a) for a in n.args])
        memo[id(n)] = out
        return out

    out = value(node)
    return out if isinstance(out, torch.Tensor) and out.shape == PROBE.shape else None


def activation(node, g: Graph):
    """An elementwise expression of one tensor that equals a known activation: that activation of the tensor."""
    if isinstance(node, Activation) or not node.elementwise or isinstance(node, (Real, Broadcast)):
        return None
    var = _variable(node, g)
    if var is None or var is node:
        return None
    try:
        with torch.no_grad():
            values = _probe(node, var, g)
    except Exception:  # an expression the probe cannot run (a comparison, a where): no activation
        return None
    if values is None or not values.is_floating_point() or not bool(torch.isfinite(values).all()):
        return None
    for kind, f in KNOWN.items():
        if float((values - f(PROBE)).abs().max()) <= AGREE * (1 + float(f(PROBE).abs().max())):
            out = Activation(var, kind=kind)
            g.recognized(Idiom(*IDIOMS[kind], *site(node)), out)
            return out
    return None


RULES = (activation,)
