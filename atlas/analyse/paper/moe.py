"""Mixtures of experts: a router's top-k choice of experts per token, and each token's output as the sum of its
chosen experts' outputs, weighted by the router.

The router: a top-k over the probabilities (softmax or sigmoid) of a linear map of the token. The experts: their
weights stacked on a leading axis of E experts, and applied the way a kernel applies them, to the tokens sorted by
expert and counted per expert (sort, histc, cumsum, grouped_mm), then put back in order and summed over the k
choices. Recognized by that structure: two grouped matrix products with weights of E experts, the computation between
them one expert's (its activation), the tokens they read, and the router's weights and indices the result is combined
with. The node that replaces them computes y_t = Σ_j w_{t,j} FFN_{i_{t,j}}(x_t) with a loop over the experts, as the
definition reads; the check against forward() says whether the structure was read right.
"""

from __future__ import annotations

import torch

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.nodes import ATOM, Node, Num, SizeOf, Sym
from atlas.analyse.equations.notation import (
    THIN,
    Equation,
    Fenced,
    Glyph,
    Ident,
    Number,
    Script,
    applied,
    op,
    rm,
    row,
    sub,
)
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import Broadcast
from atlas.analyse.paper.match import bare, number, site
from atlas.document import Idiom
from atlas.i18n import msg

_H = "moe.h"                            # the symbol standing for one expert's first product, inside its body


class TopK(Node):
    """The k largest values along an axis and their indices: (values, indices)."""

    def notation(self, p):
        x, k = self.args
        return applied(Script(op("TopK"), sub=p.print(k)), p.print(x), gap=False)

    def run(self, ev, x, k):
        return torch.topk(x, int(k), dim=self.meta.get("dim", -1), largest=self.meta.get("largest", True),
                          sorted=self.meta.get("sorted", True))


def topk(node, g: Graph):
    """torch.topk as the selection it is."""
    if not isinstance(node, n.Apply) or node.meta["name"] != "topk":
        return None
    args, kwargs = node.args
    if len(args) < 2 or kwargs.get("largest", True) is False:
        return None
    return TopK(args[0], args[1], dim=kwargs.get("dim", args[2] if len(args) > 2 else -1),
                sorted=kwargs.get("sorted", True))


class ExpertInput(Node):
    """x W_{e} inside an expert's body: the token times expert e's first weight (its rows `rows`, where the
    weight holds the gate and the up projection one after the other)."""

    def notation(self, p):
        role = self.meta.get("role")
        mark = row(rm(role), Glyph(","), Ident("e")) if role else row(Number(1), Glyph(","), Ident("e"))
        return row(Ident("x"), THIN, Script(Ident("W"), sub=mark))

    def run(self, ev):
        h = ev.env[_H]
        rows = self.meta.get("rows")
        return h if rows is None else h[..., rows[0]:rows[1]]


class MixtureOfExperts(Node):
    """y_t = Σ_j w_{t,j} FFN_{i_{t,j}}(x_t): args (x, weights, indices, B1, B2), B1 and B2 the experts' weights as the
    products take them ([E, d, h] and [E, h, d]); meta body (one expert's computation between its two products, on
    the symbol standing for the first), experts, k, out_shape."""

    idiom = "moe"
    prec = ATOM

    def notation(self, p):
        x, w, idx, _, _ = self.args
        j, tt = Ident("j"), Ident("t")
        ffn = Script(op("FFN"), sub=sub(p.base(idx), row(tt, Glyph(","), j)))
        term = row(sub(p.base(w), row(tt, Glyph(","), j)), THIN,
                   applied(ffn, sub(p.base(x), tt, tight=True), gap=False))
        total = Script(Glyph("∑"), sub=row(j, Glyph("="), Number(1)), sup=Number(self.meta["k"]))
        return row(total, term)

    def lhs_index(self):
        return Ident("t")

    def definition(self, p):
        e = Ident("e")
        body = p.print(self.meta["body"])
        down = row(THIN, Script(Ident("W"), sub=row(rm("down") if self.meta.get("gated") else Number(2),
                                                    Glyph(","), e)))
        line = Equation(applied(Script(op("FFN"), sub=e, tight="_"), Ident("x"), gap=False),
                        row(Fenced("(", ")", body, "auto"), down))
        ffn = (line, msg("the feed-forward network of expert e, e = 1, …, %(experts)s, with its own weights: the "
                         "token's output sums those of its %(k)s chosen experts i_{t,j}, weighted by w_{t,j}",
                         experts=self.meta["experts"], k=self.meta["k"]))
        inside = [x.definition(p) for x in self.meta["body"].distinct() if hasattr(x, "definition")]
        return (ffn,) + tuple(d for d in inside if d is not None)       # and the activations its body names

    def run(self, ev, x, w, idx, b1, b2):
        k = self.meta["k"]
        tokens = x.reshape(-1, x.shape[-1])
        weights, chosen = w.reshape(-1, k), idx.reshape(-1, k)
        y = torch.zeros(tokens.shape[0], b2.shape[-1], dtype=tokens.dtype)
        for e in range(b1.shape[0]):
            rows, slots = (chosen == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            ev.env[_H] = tokens[rows] @ b1[e]
            hidden = ev.value(self.meta["body"])
            out = (hidden @ b2[e]) * weights[rows, slots].unsqueeze(-1).to(tokens.dtype)
            y = y.index_add(0, rows, out)
        ev.env.pop(_H, None)
        return y.reshape(*x.shape[:-1], b2.shape[-1])


def _grouped(node) -> bool:
    return isinstance(node, n.Apply) and node.meta["name"].strip("_") == "grouped_mm"


def _matrices(gm):
    args, _ = gm.args
    return args[0], args[1]


def _leading_merge(node, g: Graph):
    """x where `node` is x with its leading axes merged into one (tokens in rows)."""
    from atlas.analyse.paper.identities import merged_rows
    node_ = bare(node, g)
    return node_.args[0] if merged_rows(node_) is not None else None


def _rows_read(a, g: Graph):
    """(x, k) where `a` is x[⌊order/k⌋]: the rows of x each of its k copies is sorted to."""
    a = bare(a, g)
    if not isinstance(a, t.Index) or not isinstance(a.args[1], m.FloorDiv):
        return None
    k = number(a.args[1].args[1], g)
    return (a.args[0], int(k)) if k is not None and k == int(k) else None


def _body(a2, gm1, g: Graph):
    """The computation of `a2` from the product `gm1`, with an ExpertInput in its place; None where `a2` reads
    anything else that is no number."""
    memo = {}

    def build(node):
        if g.same(node, gm1):
            return ExpertInput()
        if isinstance(node, (Num, SizeOf)):
            return node
        sym = g.symbol(node)
        if sym is not None and sym.kind == "const":
            return node
        node_ = g.resolve(node)
        if id(node_) in memo:
            return memo[id(node_)]
        if not isinstance(node_, Node) or isinstance(node_, Sym):
            raise LookupError
        if isinstance(node_, t.Slice) and g.same(node_.args[0], gm1):
            a, b = _int(node_.args[1]), _int(node_.args[2])
            if a is None or b is None:
                raise LookupError
            out = memo.setdefault((a, b), ExpertInput(rows=(a, b)))     # one node per half, however reached
        else:
            args = [build(x) if isinstance(x, Node) else x for x in node_.args]
            out = node_.rebuild(args)
        memo[id(node_)] = out
        return out

    try:
        return _activations(build(a2), g, {})
    except LookupError:
        return None


def _activations(node, g: Graph, memo: dict):
    """The body with the activations it computes recognized (SiLU(x W_gate,e), not x W_gate,e ⊙ σ(x W_gate,e)): the
    body is built outside the graph, after the pass that recognizes them there."""
    from atlas.analyse.paper.activations import activation
    if not isinstance(node, Node) or isinstance(node, (ExpertInput, Num, SizeOf, Sym)):
        return node
    if id(node) not in memo:
        args = [_activations(a, g, memo) for a in node.args]
        new = node.rebuild(args) if any(a is not b for a, b in zip(args, node.args)) else node
        memo[id(node)] = (activation(new, g) if getattr(new, "elementwise", False) else None) or new
    return memo[id(node)]


def name_roles(g: Graph) -> None:
    """A mixture's router weights w, its chosen experts i and its output y, as the notation of FFN_e says."""
    for key in g.order:
        node = g.nodes[key]
        if not isinstance(node, MixtureOfExperts):
            continue
        _, w, idx, _, _ = node.args
        g.name_as(w, Ident("w"))
        g.name_as(idx, Ident("i"))
        g.name_as(Sym(key), Ident("y"))
        # shown first: the router's choice of experts, then the weighted sum of their networks
        chosen = [k for k in g.order if isinstance(bare(g.nodes[k], g), TopK)]
        if not g.prog.headline:             # a block's residual structure, where it has one, comes first
            g.prog.headline = chosen[-1:] + [key]


def _int(node):
    value = getattr(node, "value", None) if not isinstance(node, SizeOf) else node.expr
    return value if isinstance(value, int) else None


def _roles(body) -> bool:
    """Name the halves of a gated expert's first product: the one under the activation is the gate. True where the
    body is gated."""
    from atlas.analyse.paper.activations import Activation
    halves = [x for x in body.distinct() if isinstance(x, ExpertInput) and x.meta.get("rows")]
    if len(halves) < 2:
        return False
    gates = {id(x.args[0]) for x in body.distinct() if isinstance(x, Activation) and isinstance(x.args[0], ExpertInput)}
    for half in halves:
        half.meta["role"] = "gate" if id(half) in gates else "up"
    return True


def _combined(node, gm2, g: Graph):
    """(weights, sorted indices node) the output of `gm2` is weighted with, each row by its router weight."""
    for x in _reachable(node, g):
        if isinstance(x, m.Mul) and any(g.same(a, gm2) for a in x.args):
            other = next(a for a in x.args if not g.same(a, gm2))
            other = bare(other, g)
            if isinstance(other, Broadcast):
                other = other.args[0]
            other = bare(other, g)
            if isinstance(other, t.Index):
                w = bare(other.args[0], g)
                w = w.args[0] if isinstance(w, t.Reshape) else w
                return w, other.args[1]
    return None


def _indices(order, g: Graph):
    """The router's indices the tokens were sorted by: order is the second output of sort(flatten(indices))."""
    order = bare(order, g)
    if not isinstance(order, t.Item):
        return None
    s = bare(order.args[0], g)
    if not isinstance(s, n.Apply) or s.meta["name"] != "sort":
        return None
    flat = bare(s.args[0][0], g)
    return flat.args[0] if isinstance(flat, t.Reshape) else flat


def experts(node, g: Graph):
    """The sum over each token's k choices of the experts' grouped products: MixtureOfExperts."""
    if not isinstance(node, red.Sum):
        return None
    gms = [x for x in _reachable(node, g) if _grouped(x)]
    if len(gms) != 2:
        return None
    first, second = gms
    if not any(g.same(x, first) for x in _reachable(_matrices(second)[0], g)):
        first, second = second, first
    (a1, b1), (a2, b2) = _matrices(first), _matrices(second)
    read = _rows_read(a1, g)
    combined = _combined(node, second, g)
    if read is None or combined is None:
        return None
    x, k = read
    w, order = combined
    idx = _indices(order, g)
    body = _body(a2, first, g)
    shape1 = g.shape(b1) or g.shape(bare(b1, g))
    if idx is None or body is None or not shape1 or len(shape1) != 3:
        return None
    gated = _roles(body)
    whole = _leading_merge(x, g)
    x = whole if whole is not None else x
    out = MixtureOfExperts(x, w, idx, b1, b2, body=body, experts=shape1[0], k=k, gated=gated,
                           out_shape=g.shape(x) or g.shape(bare(x, g)))
    g.recognized(Idiom("moe", (("experts", shape1[0]), ("top_k", k)) + _router(w, g), *site(node)), out)
    return out


def _router(w, g: Graph) -> tuple:
    """How the router scores the experts (softmax, sigmoid) and whether the top-k weights are divided by their sum."""
    found = next(("softmax" if isinstance(x, red.Softmax) else "sigmoid" for x in _reachable(w, g)
                  if isinstance(x, (red.Softmax, m.Sigmoid))), None)
    top = bare(w, g)
    renormalized = isinstance(top, m.Div) and any(isinstance(x, red.Sum) for x in _reachable(top.args[1], g))
    return ((("router", found),) if found else ()) + (("renormalized", renormalized),)


def _reachable(node, g: Graph):
    seen, pending = set(), [node]
    while pending:
        x = g.resolve(pending.pop())
        if not isinstance(x, Node) or id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        pending.extend(a for a in x.children())


RULES = (topk, experts)
