"""Small readers of op trees shared by the recognizers: operands seen through format casts and broadcasting views,
numbers, parameters, and where the code computes a node."""

from __future__ import annotations

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations.nodes import Node, Sym
from atlas.analyse.equations.scalars import value_of
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import Broadcast, Real


def bare(node, g: Graph):
    """The node a symbol, a format cast or a broadcasting view stands for."""
    for _ in range(32):
        node = g.resolve(node)
        if isinstance(node, (Real, Broadcast)):
            node = node.args[0]
            continue
        return node
    return node


def number(node, g: Graph) -> float | None:
    """The number a node is, where it is one: a literal, a constant stated once (ε), or arithmetic on those."""
    node = bare(node, g)
    sym = g.symbol(node)
    if sym is not None:
        b = sym.binding
        if sym.kind == "const" and b is not None and isinstance(b[1], (int, float)) and not isinstance(b[1], bool):
            return float(b[1])
        return None
    value = value_of(node) if isinstance(node, Node) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def pair(node, kind):
    """(a, b) of a commutative operation of type `kind`, both ways round: [(a, b), (b, a)]; [] otherwise."""
    if not isinstance(node, kind):
        return []
    a, b = node.args
    return [(a, b), (b, a)]


def vector_param(node, g: Graph, size=None):
    """The symbol of a 1-axis parameter (a gain, a bias), of `size` entries where given; else None."""
    node = bare(node, g)
    sym = g.param(node)
    if sym is None or sym.shape is None or len(sym.shape) != 1:
        return None
    if size is not None and sym.shape[0] != size:
        return None
    return node


def one_plus(node, g: Graph):
    """γ where the node is 1 + γ (a gain stored as its offset from one), else None."""
    for a, b in pair(bare(node, g), m.Add):
        if number(a, g) == 1.0 and vector_param(b, g) is not None:
            return bare(b, g)
    return None


def site(node) -> tuple:
    """(file name, line) where the code computes the node: the name only, so nothing depends on where a machine
    keeps its files."""
    if not isinstance(node, Node):
        return None, None
    for n in node.walk():
        file, line = n.meta.get("site") or (None, None)
        if file:
            return file.replace("\\", "/").rsplit("/", 1)[-1], line
    return None, None


def last_axis(dim, shape) -> bool:
    """Whether an operation's `dim` is the last axis of a value of `shape`."""
    d = dim[0] if isinstance(dim, (tuple, list)) and len(dim) == 1 else dim
    if not isinstance(d, int):
        return False
    return d == -1 or (shape is not None and d == len(shape) - 1)


def is_sym(node, key: str) -> bool:
    return isinstance(node, Sym) and node.key == key
