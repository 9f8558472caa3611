"""Where a value comes from: the affine map (x W + b) that made it, seen through what a paper does not count as a new
value (a heads split, a slice of a fused projection, a rotation, a normalization per head), and the names roles give
weights: W_Q, W_KV, b_O, W_gate, W_1.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.notation import Ident, Number, Script, rm
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.match import bare, pair


@dataclass
class Projection:
    x: object                       # what it maps
    weight: object                  # the weight's symbol (a Sym), stored in × out or out × in
    bias: object = None             # the bias's symbol, where added
    sliced: bool = False            # the value is a slice of the map's output (one of a fused q, k, v)


def projection(node, g: Graph, through=()) -> Projection | None:
    """The affine map `node` is (a slice of), looking through heads splits and the node kinds in `through`."""
    sliced = False
    for _ in range(16):
        node = bare(node, g)
        if isinstance(node, (t.Heads,) + tuple(through)):
            node = node.args[0]
            continue
        if isinstance(node, t.Slice):
            node, sliced = node.args[0], True
            continue
        break
    if isinstance(node, n.Linear) and g.param(node.args[1]) is not None:
        return Projection(node.args[0], node.args[1], node.args[2], sliced)
    if isinstance(node, t.MatMul) and g.param(bare(node.args[1], g)) is not None:
        return Projection(node.args[0], bare(node.args[1], g), None, sliced)
    for a, b in pair(node, m.Add):
        inner = bare(a, g)
        if isinstance(inner, t.MatMul) and g.param(bare(inner.args[1], g)) is not None and g.param(bare(b, g)):
            return Projection(inner.args[0], bare(inner.args[1], g), bare(b, g), sliced)
    return None


def weight_name(mark) -> Script:
    """W with a role's subscript: W_Q, W_{QKV}, W_{gate}, W_1."""
    return Script(Ident("W"), sub=_mark(mark), tight="_" if isinstance(mark, int) or len(mark) == 1 else "")


def bias_name(mark) -> Script:
    return Script(Ident("b"), sub=_mark(mark), tight="_" if isinstance(mark, int) or len(mark) == 1 else "")


def gain_name(mark) -> Script:
    return Script(Ident("γ"), sub=_mark(mark), tight="_" if len(mark) == 1 else "")


def _mark(mark):
    if isinstance(mark, int):
        return Number(mark)
    return Ident(mark) if mark.isupper() or len(mark) == 1 else rm(mark)


def name_projection(p: Projection, mark, g: Graph) -> None:
    """W_mark and b_mark for the projection's weight and bias."""
    g.name_as(p.weight, weight_name(mark))
    if p.bias is not None:
        g.name_as(p.bias, bias_name(mark))
