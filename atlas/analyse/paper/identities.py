"""Rewrites that change no value a paper speaks of: casts between number formats, broadcasting views, and dropout in
evaluation, and a map of the last axis written on the rows of a flattened tensor.

A cast to a floating dtype keeps the real number a value stands for (an integer position is the same number as a
float): it prints as its operand and still runs, so the check computes what forward() computes. A view that only
lines an operand up for an elementwise operation (cos unsqueezed over the heads of q ⊙ cos) prints as its operand
where the result has the other operand's shape, as broadcasting is written on paper; an outer product
(positions[:, None] · frequencies) keeps its view, since writing it away would read as an elementwise product.
"""

from __future__ import annotations

import math

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.lowering_context import same_size
from atlas.analyse.equations.nodes import ATOM, Node, Num, SizeOf, Sym
from atlas.analyse.equations.notation import (
    Equation,
    Fenced,
    Glyph,
    Ident,
    Number,
    Script,
    Word,
    applied,
    op,
    row,
    sub,
    sup,
)
from atlas.analyse.paper.graph import Graph
from atlas.i18n import msg

FLOATS = ("float16", "bfloat16", "float32", "float64")
_ELEMENTWISE = (m.Add, m.Sub, m.Mul, m.Div)


class AsOperand(Node):
    """A node the math reads as its first operand (a view, a layout, heads shared in place): printed as it."""

    transparent = True

    def notation(self, p):
        return p.print(self.args[0])

    @property
    def prec(self):
        x = self.args[0]
        return x.prec if isinstance(x, Node) else ATOM


class Real(AsOperand):
    """A value as the number it stands for, whatever format holds it: printed as its operand, run as the cast. A
    step that is only this, of a symbol, is that symbol on the page."""

    idiom = None

    def run(self, ev, x):
        return t.Cast.run(self, ev, x)


class Broadcast(AsOperand):
    """An operand lined up with the other of an elementwise operation: printed as it is, run as the view
    (unsqueeze at `dim`, or expand to the sizes in args[1])."""

    idiom = None

    def run(self, ev, x, sizes):
        return x.unsqueeze(self.meta["dim"]) if sizes is None else x.expand(*sizes)


INTEGERS = ("int8", "int16", "int32", "int64", "uint8")


def real_casts(node, g: Graph):
    """A cast that keeps the number a value stands for: to a floating dtype, between integer dtypes, and a truth value
    as 0 or 1 (an Iverson bracket). Not a floating value to an integer one, which rounds."""
    if not isinstance(node, t.Cast):
        return None
    target, source = node.meta["dtype"], node.meta.get("source")
    if target in FLOATS or (target in INTEGERS and source in INTEGERS + ("bool",)):
        return Real(node.args[0], **node.meta)
    return None


def evaluation_dropout(node, g: Graph):
    """Dropout in evaluation mode, where every page is checked, is the identity."""
    if isinstance(node, n.Dropout) and not node.meta.get("always"):
        return node.args[0]
    return None


def broadcast_views(node, g: Graph):
    """x ⊙ unsqueeze(c) where the result has x's shape: x ⊙ c, c broadcast."""
    if not isinstance(node, _ELEMENTWISE):
        return None
    out = g.shape(node)
    if out is None:
        return None
    args = list(node.args)
    changed = False
    for i, a in enumerate(args):
        other = args[1 - i]
        if isinstance(a, (t.Unsqueeze, t.Expand)) and not isinstance(a, Broadcast) and \
                g.shape(other) is not None and tuple(g.shape(other)) == tuple(out):
            args[i] = (Broadcast(a.args[0], None, dim=a.meta["dim"]) if isinstance(a, t.Unsqueeze)
                       else Broadcast(a.args[0], a.args[1]))
            changed = True
    return node.rebuild(args) if changed else None


class Positions(t.Arange):
    """0, 1, …, n − 1: the positions of a sequence, as the code counts them."""

    paper = True                # a sequence of numbers, not the kernel that makes it

    def notation(self, p):
        start, stop, _ = self.args
        last = getattr(stop, "value", None)
        if isinstance(last, int):               # a fixed length: (0, ⋯, 1499)
            return Fenced("(", ")", row(p.print(start), Glyph(","), Glyph("⋯"), Glyph(","), Number(last - 1)))
        return super().notation(p)


def numbers_first(node, g: Graph):
    """x · c, c a number: c x, as a paper writes a scalar multiple."""
    if isinstance(node, m.Mul) and isinstance(node.args[1], Num) and not isinstance(node.args[0], Num):
        return node.rebuild((node.args[1], node.args[0]))
    return None


def positions(node, g: Graph):
    """range(0, n, 1): the sequence of positions it is."""
    if type(node) is t.Arange and getattr(node.args[0], "value", None) == 0 and \
            getattr(node.args[2], "value", getattr(node.args[2], "expr", None)) == 1:
        return Positions(*node.args, **node.meta)
    return None


def leading_views(node, g: Graph):
    """A new leading axis of one (unsqueeze(x, 0)), or axes of one repeated (expand): the same values, for every
    sequence of a batch."""
    if isinstance(node, t.Unsqueeze) and node.meta.get("dim") == 0:
        return Broadcast(node.args[0], None, dim=0)
    if isinstance(node, t.Expand):
        before, after = g.shape(node.args[0]), node.meta.get("shown")
        if before and after and len(before) <= len(after):
            before = (1,) * (len(after) - len(before)) + tuple(before)
            if all(a == 1 or same_size(a, b) for a, b in zip(before, after)):
                return Broadcast(node.args[0], node.args[1])
    if isinstance(node, n.Apply) and node.meta["name"] == "repeat":     # x.repeat(B, 1) of a (1, T): a tiling that
        args, kwargs = node.args                                        # only copies axes of one
        before, counts = g.shape(args[0]), args[1:]
        if before and len(counts) == len(before) and not kwargs and \
                all(isinstance(c, int) and c == 1 or b == 1 for b, c in zip(before, counts)):
            return Broadcast(args[0], tuple(c if b == 1 else -1 for b, c in zip(before, counts)))
    return None


class PrefixSum(Node):
    """Σ_{s ≤ t} x_s along an axis: the running total the code takes with cumsum."""

    paper = True
    prec = ATOM

    def notation(self, p):
        s, t_ = Ident("s"), Ident("t")
        head = Script(Glyph("∑"), sub=row(s, Glyph("≤"), t_))
        return row(head, sub(p.base(self.args[0]), s, tight=True))

    def run(self, ev, x):
        return x.cumsum(self.meta["dim"]) if self.meta.get("dtype") is None else \
            x.cumsum(self.meta["dim"], dtype=ev.dtype_of(self.meta["dtype"]))


class Take(Node):
    """x[index] along the last axis (torch.gather over it): each position's entry of x at its index."""

    paper = True

    def notation(self, p):
        x, index = self.args
        return row(p.wrap(x, ATOM), Fenced("[", "]", p.print(index), "auto"))

    def run(self, ev, x, index):
        return x.gather(self.meta["dim"], index)


def prefix_sums(node, g: Graph):
    """cumsum(x, dim): Σ_{s ≤ t} x_s."""
    if isinstance(node, n.Apply) and node.meta["name"] == "cumsum":
        args, kwargs = node.args
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if isinstance(dim, int) and set(kwargs) <= {"dim", "dtype"}:
            return PrefixSum(args[0], dim=dim, dtype=kwargs.get("dtype"))
    return None


def gathers(node, g: Graph):
    """gather(x, dim=last, index) of a 2-axis x: x[index], each row read at its indices."""
    if isinstance(node, n.Apply) and node.meta["name"] == "gather":
        args, kwargs = node.args
        x = args[0] if args else kwargs.get("input")
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        index = kwargs.get("index", args[2] if len(args) > 2 else None)
        shape = g.shape(x) or g.shape(getattr(x, "args", (None,))[0])
        if isinstance(index, Node) and shape and dim in (-1, len(shape) - 1) and len(shape) == 2:
            return Take(x, index, dim=dim)
    return None


def last_two_axes(node, g: Graph):
    """permute(0, 2, 1) of a 3-axis value: its last two axes swapped, xᵀ."""
    if isinstance(node, t.Permute) and tuple(node.meta["dims"]) in ((0, 2, 1),):
        return t.Transpose(node.args[0], d0=1, d1=2, ndim=3)
    return None


class Channels(AsOperand):
    """A grid's channels moved to the last axis (x.permute(0, 2, 3, 1)), or back (permute(0, 3, 1, 2)): the same
    values, the maps between reading each position's channels as its features. Printed as its operand; the notation
    says where the channels go."""

    paper = True

    def definition(self, p):
        if not self.meta["last"]:
            return None
        return (Equation(sup(Ident("x"), Ident("c")), Ident("x")),
                msg("between the convolutions, each position's channels are its features: normalizations and linear "
                    "maps act on the channels of each position"))

    def run(self, ev, x):
        return x.permute(*self.meta["dims"])


def channels(node, g: Graph):
    """permute(0, 2, …, 1) and permute(0, n − 1, 1, …): channels last and back."""
    if not isinstance(node, t.Permute):
        return None
    dims = tuple(node.meta["dims"])
    rank = len(dims)
    if rank >= 3 and dims == (0, *range(2, rank), 1):
        return Channels(node.args[0], dims=dims, last=True)
    if rank >= 3 and dims == (0, rank - 1, *range(1, rank - 1)):
        return Channels(node.args[0], dims=dims, last=False)
    return None


def single_channel(node, g: Graph):
    """A convolution of x[:, None]: of x as one channel."""
    from atlas.analyse.equations.ops_nn import Conv
    if isinstance(node, Conv) and isinstance(node.args[0], t.Unsqueeze) and node.meta.get("nd") == 1 and \
            node.args[0].meta.get("dim") == 1:
        return node.rebuild((Broadcast(node.args[0].args[0], None, dim=1),) + tuple(node.args[1:]))
    return None


class GridTokens(Node):
    """A (B, C, H, W) grid as a sequence of H·W tokens of C features, in raster order: flatten(2) then ᵀ."""

    paper = True

    def notation(self, p):
        return applied(op("tokens"), p.print(self.args[0]), gap=False)

    def definition(self, p):
        x = Ident("x")
        return (Equation(applied(op("tokens"), x, gap=False), sup(applied(op("vec"), x, gap=False), Word("T", "sans"))),
                msg("the positions of a grid of features, row by row, as a sequence of tokens"))

    def run(self, ev, x):
        return x.flatten(2).transpose(1, 2)


def grid_tokens(node, g: Graph):
    """flatten(x, 2, −1)ᵀ: the grid's positions as tokens."""
    if isinstance(node, t.Transpose) and {node.meta["d0"] % 3, node.meta["d1"] % 3} == {1, 2}:
        inner = node.args[0]
        if isinstance(inner, t.Flatten) and inner.meta["start"] == 2 and inner.meta["end"] in (-1, 3):
            shape = g.shape(inner.args[0])
            if shape and len(shape) == 4:
                return GridTokens(inner.args[0])
    return None


def merged_rows(node) -> tuple | None:
    """The leading axes of x where `node` is reshape(x) to (their product, the last axis of x)."""
    if not isinstance(node, t.Reshape):
        return None
    before, after = node.meta.get("in_shape"), node.meta.get("shown")
    if not before or not after or len(after) != 2 or len(before) < 2 or not same_size(after[1], before[-1]):
        return None
    return tuple(before[:-1]) if same_size(after[0], math.prod(before[:-1])) else None


def _rowwise(node, g: Graph, lead: list, depth: int = 0):
    """`node` computed on x in place of the rows of reshape(x) it reads, where every operation on the way acts on
    each row alone: a matmul by a matrix, adding a vector or a number, elementwise functions. None otherwise."""
    if depth > 16:
        return None
    node = g.resolve(node)
    rows = merged_rows(node)
    if rows is not None:
        if lead and not all(same_size(a, b) for a, b in zip(lead[0], rows)) or lead and len(lead[0]) != len(rows):
            return None
        lead.append(rows)
        return node.args[0]
    if isinstance(node, t.MatMul):
        w = node.args[1]
        shape = g.shape(w)
        inner = _rowwise(node.args[0], g, lead, depth + 1)
        return None if inner is None or not shape or len(shape) != 2 else node.rebuild((inner, w))
    if isinstance(node, (m.Add, m.Sub, m.Mul, m.Div)):
        args = []
        for a in node.args:
            shape = g.shape(a)
            if isinstance(a, (Num, SizeOf)) or (shape is not None and len(shape) <= 1 and not _has_rows(a, g)):
                args.append(a)
                continue
            inner = _rowwise(a, g, lead, depth + 1)
            if inner is None:
                return None
            args.append(inner)
        return node.rebuild(args) if any(a is not b for a, b in zip(args, node.args)) else None
    if isinstance(node, Node) and node.elementwise and len(node.args) == 1 and isinstance(node.args[0], Node):
        inner = _rowwise(node.args[0], g, lead, depth + 1)
        return None if inner is None else node.rebuild((inner,))
    return None


def _has_rows(node, g: Graph) -> bool:
    return any(merged_rows(n) is not None for n in g.resolve(node).distinct()) if isinstance(node, Node) else False


def flattened_rows(node, g: Graph):
    """reshape(f(reshape(x))), the inner reshape merging x's leading axes into rows, f acting on each row alone, the
    outer giving the leading axes back: f(x), as a paper writes a map of the last axis."""
    if not isinstance(node, t.Reshape) or isinstance(node.args[0], Sym) and node.args[0].key not in g.nodes:
        return None
    after = node.meta.get("shown")
    lead: list = []
    inner = _rowwise(node.args[0], g, lead)
    if inner is None or not lead or not after or len(after) != len(lead[0]) + 1:
        return None
    return inner if all(same_size(a, b) for a, b in zip(after[:-1], lead[0])) else None


def same_shape(node, g: Graph):
    """A reshape to the shape its operand already has."""
    if not isinstance(node, t.Reshape):
        return None
    before, after = g.shape(node.args[0]), node.meta.get("shown")
    if before and after and len(before) == len(after) and all(same_size(a, b) for a, b in zip(before, after)):
        return node.args[0]
    return None


RULES = (real_casts, evaluation_dropout, broadcast_views, flattened_rows, same_shape, positions, leading_views,
         numbers_first, prefix_sums, gathers, last_two_axes, grid_tokens, channels, single_channel)
