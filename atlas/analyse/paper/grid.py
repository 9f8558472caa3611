"""Masks built from positions, in index notation: sequences of positions laid on the axes of a grid (the queries'
on one, the keys' on another, by unsqueezing), compared and combined elementwise. A paper writes the entry at (t, s):
M_{t,s} = (s > t − 4) ∧ (s ≤ t), a sliding window of 4; the code's unsqueezes and its scalar `new_ones` seed are how
it builds that grid.
"""

from __future__ import annotations

import torch

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.nodes import ATOM, Node, Num, Sym
from atlas.analyse.equations.notation import Ident, sub
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import Broadcast, Positions

LETTERS = ("s", "t", "u", "v")          # the index of an axis, from the last one


class Indexed(Node):
    """A sequence x laid on one axis of a grid of `rank` axes (every other of size one): x_t, or t itself for the
    positions 0, …, T − 1. meta: axis (counted from the last, 0 for the last), rank."""

    paper = True
    prec = ATOM

    def index_letter(self):
        return LETTERS[self.meta["axis"]]

    def notation(self, p):
        x = self.args[0]
        letter = Ident(self.index_letter())
        if isinstance(x, Positions):
            return letter
        return sub(p.base(x), letter, tight=True)

    def run(self, ev, x):
        shape = [1] * self.meta["rank"]
        shape[self.meta["rank"] - 1 - self.meta["axis"]] = -1
        return x.reshape(shape)


def _laid(node, g: Graph):
    """(sequence, rank, axis from the last) where `node` is a 1-axis sequence unsqueezed into a grid."""
    dims = []
    x = node
    while True:
        if isinstance(x, t.Unsqueeze):
            dims.append(x.meta["dim"])
            x = x.args[0]
        elif isinstance(x, Broadcast) and x.args[1] is None:
            dims.append(x.meta["dim"])
            x = x.args[0]
        elif isinstance(x, Sym) and x.key in g.nodes:
            x = g.nodes[x.key]
        else:
            break
    shape = g.shape(x)
    if not dims or shape is None or len(shape) != 1:
        return None
    rank, axis = 1, 0                   # axis: where the sequence's axis is, from the front
    for d in reversed(dims):
        pos = d if d >= 0 else rank + 1 + d
        if pos <= axis:
            axis += 1
        rank += 1
    return x, rank, rank - 1 - axis


def _operand(node, g: Graph):
    """A side of a comparison over a grid: a laid sequence, or arithmetic of one with numbers."""
    laid = _laid(node, g)
    if laid is not None and laid[1] >= 2:
        x, rank, axis = laid
        return Indexed(x, rank=rank, axis=axis)
    if isinstance(node, (m.Add, m.Sub)):
        args = [_operand(a, g) if isinstance(a, Node) and not isinstance(a, Num) else a for a in node.args]
        if all(a is not None for a in args) and any(isinstance(a, Indexed) for a in args):
            return node.rebuild(args)
    if isinstance(node, Num):
        return node
    return None


def comparisons(node, g: Graph):
    """a < b over positions laid on a grid's axes: the same comparison in index notation."""
    if not isinstance(node, m.Compare) or any(isinstance(a, Indexed) for a in node.args):
        return None
    args = [_operand(a, g) for a in node.args]
    if all(a is not None for a in args) and any(_holds(a) for a in args):
        return node.rebuild(args)
    return None


def _holds(node) -> bool:
    return isinstance(node, Node) and any(isinstance(x, Indexed) for x in node.distinct())


def _true_seed(node, g: Graph) -> bool:
    """new_ones(x, (), dtype=bool): the one value true, the seed a mask's conjunction starts from."""
    if not isinstance(node, n.Apply) or node.meta["name"] != "new_ones":
        return False
    args, kwargs = node.args
    return len(args) == 2 and tuple(args[1]) == () and kwargs.get("dtype") == torch.bool


def seeds(node, g: Graph):
    """true ∧ a: a."""
    if isinstance(node, m.Logical) and node.meta["op"] == "and":
        a, b = node.args
        if _true_seed(a, g):
            return b
        if _true_seed(b, g):
            return a
    return None


RULES = (comparisons, seeds)
