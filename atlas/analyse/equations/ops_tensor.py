"""Products, layout and indexing: matmul, transposes, reshapes, heads, concatenation, slices, casts, constants.

Layout operations print visibly (a transpose shows ᵀ or its axes, a cast names its dtype), because a
page prints what runs.
"""

from __future__ import annotations

import sympy
import torch

from atlas.analyse.equations.nodes import ATOM, MUL, POW, Node, SizeOf
from atlas.analyse.equations.notation import (
    THICK,
    THIN,
    Fenced,
    Glyph,
    Group,
    Ident,
    Number,
    Size,
    Word,
    applied,
    digits,
    joined,
    op,
    rm,
    row,
    sub,
    sup,
)


def shape_notation(shape):
    """(B, T, 768) -> B × T × 768."""
    return joined([SizeOf(s).notation(None) if not isinstance(s, str) else Ident(s) for s in shape], Glyph("×"))


class MatMul(Node):
    prec = MUL

    def notation(self, p):
        a, b = self.args
        return row(p.wrap(a, MUL, strict=not isinstance(a, MatMul)), THIN, p.wrap(b, POW))

    def run(self, ev, a, b):
        return a @ b


class Transpose(Node):
    """Swap two axes: the last two print as ᵀ, others name their axes."""

    prec = POW

    def notation(self, p):
        x = self.args[0]
        d0, d1, ndim = self.meta["d0"], self.meta["d1"], self.meta.get("ndim")
        last = ndim is not None and {d0 % ndim, d1 % ndim} == {ndim - 2, ndim - 1}
        if last or {d0, d1} == {-1, -2}:
            return sup(p.base(x), Word("T", "sans"))
        return applied(op("transpose"), p.print(x), subscript=digits(f"{d0},{d1}"))

    def run(self, ev, x):
        return x.transpose(self.meta["d0"], self.meta["d1"])


class Permute(Node):
    def notation(self, p):
        order = ",".join(str(d) for d in self.meta["dims"])
        return applied(op("permute"), p.print(self.args[0]), subscript=digits("(" + order + ")"))

    def run(self, ev, x):
        return x.permute(*self.meta["dims"])


class Reshape(Node):
    """view / reshape to the shown shape (the code's sizes, with -1 resolved from the recorded shapes)."""

    def notation(self, p):
        return applied(op("reshape"), p.print(self.args[0]), subscript=shape_notation(self.meta["shown"]))

    def run(self, ev, x, sizes):
        return x.reshape(*sizes)


class Heads(Node):
    """x.view(B, T, h, d).transpose(1, 2): the features split into h heads of d, heads moved forward."""

    def notation(self, p):
        return sup(p.base(self.args[0]), Ident("h"))

    def run(self, ev, x, sizes):
        return x.reshape(*sizes).transpose(1, 2)


class MergeHeads(Node):
    """O.transpose(1, 2).reshape(B, T, h·d): the heads put back side by side."""

    def notation(self, p):
        return applied(op("concat"), p.print(self.args[0]), subscript=Ident("h"), tight=True)

    def run(self, ev, x, sizes):
        return x.transpose(1, 2).reshape(*sizes)


class Flatten(Node):
    def notation(self, p):
        a, b = self.meta["start"], self.meta["end"]
        return applied(op("flatten"), p.print(self.args[0]), subscript=digits(f"{a}:{b}"))

    def run(self, ev, x):
        return x.flatten(self.meta["start"], self.meta["end"])


class Unsqueeze(Node):
    def notation(self, p):
        return applied(op("unsqueeze"), p.print(self.args[0]), subscript=digits(str(self.meta["dim"])))

    def run(self, ev, x):
        return x.unsqueeze(self.meta["dim"])


class Squeeze(Node):
    def notation(self, p):
        d = self.meta.get("dim")
        return applied(op("squeeze"), p.print(self.args[0]), subscript=None if d is None else digits(str(d)))

    def run(self, ev, x):
        d = self.meta.get("dim")
        return x.squeeze() if d is None else x.squeeze(d)


class Expand(Node):
    """The same values seen at a larger size (broadcast), to the shown shape."""

    def notation(self, p):
        return applied(op("expand"), p.print(self.args[0]), subscript=shape_notation(self.meta["shown"]))

    def run(self, ev, x, sizes):
        return x.expand(*sizes)


class Repeat(Node):
    """Each slice along an axis repeated n times in place (repeat_interleave), as grouped-query attention does."""

    def notation(self, p):
        return applied(op("repeat"), p.print(self.args[0]), subscript=digits(str(self.meta["times"])))

    def run(self, ev, x):
        return x.repeat_interleave(self.meta["times"], dim=self.meta["dim"])


class Cat(Node):
    """[a; b] along an axis."""

    def notation(self, p):
        sep = (Glyph(";"), THICK) if self.meta.get("dim_is_sequence", True) else (THICK,)
        return Fenced("[", "]", row(THIN, joined([p.print(x) for x in self.args], sep), THIN))

    def run(self, ev, *parts):
        return torch.cat(parts, dim=self.meta["dim"])


class Stack(Node):
    def notation(self, p):
        return applied(op("stack"), *(p.print(x) for x in self.args))

    def run(self, ev, *parts):
        return torch.stack(parts, dim=self.meta["dim"])


class Slice(Node):
    """x[..., start:stop] along an axis, printed 1-based as the seed pages do: x_{1:768}."""

    def notation(self, p):
        x, start, stop = self.args
        rng = row(_plus_one(start), Glyph(":"), p.print(stop))
        if self.meta.get("last", True):
            return sub(p.base(x), rng)
        return sub(p.base(x), sub(Fenced("[", "]", rng), digits(str(self.meta["dim"]))))

    def run(self, ev, x, start, stop):
        return x.narrow(self.meta["dim"], int(start), int(stop) - int(start))


def _plus_one(start):
    if isinstance(start, SizeOf):
        e = start.expr
        return Number(e + 1) if isinstance(e, int) else Size(str(e + 1), compact=False)
    return Number(start.value + 1) if hasattr(start, "value") else Number(1)


class Index(Node):
    """x[...]: any indexing the code does, printed as the code writes it: Index(x, index)."""

    def notation(self, p):
        return row(p.base(self.args[0]), Fenced("[", "]", _index(p, self.args[1]), "auto"))

    def run(self, ev, x, index):
        return x[index]


def _index(p, index):
    parts = index if isinstance(index, tuple) else (index,)
    out = []
    for part in parts:
        if isinstance(part, slice):
            a = None if part.start is None else _plain(p, part.start)
            b = None if part.stop is None else _plain(p, part.stop)
            c = None if part.step is None else row(Glyph(":"), _plain(p, part.step))
            out.append(row(a, Group(Glyph(":")), b, c))
        elif part is None:
            out.append(rm("None"))
        elif part is Ellipsis:
            out.append(Glyph("…"))
        else:
            out.append(_plain(p, part))
    return joined(out)


def _plain(p, x):
    """An index as the code wrote it: a node, a size, a tuple, a number as Python writes it."""
    if isinstance(x, Node):
        return p.print(x)
    if isinstance(x, sympy.Basic):
        return Size(str(x), compact=False)
    if isinstance(x, (list, tuple)):
        return row(Glyph("("), joined([_plain(p, i) for i in x], Glyph(",")), Glyph(")"))
    if isinstance(x, int) and not isinstance(x, bool):
        return Number(x)
    return Ident(str(x))


class SetIndex(Node):
    """x with x[index] = value: a copy with some entries replaced: SetIndex(x, value, index)."""

    def notation(self, p):
        x, value, index = self.args
        return sub(row(p.base(x), Glyph("big|")),
                   row(Glyph("["), _index(p, index), Glyph("]"), THIN, Glyph("←"), THIN, p.print(value)))

    def run(self, ev, x, value, index):
        out = x.clone()
        out[index] = value
        return out


class Cast(Node):
    """x.to(dtype): printed with the dtype; the check runs float widths of 32 bits and more in its own precision."""

    def notation(self, p):
        return applied(op(self.meta["dtype"]), p.print(self.args[0]))

    def run(self, ev, x):
        dtype = getattr(torch, self.meta["dtype"])
        return x.to(ev.dtype_of(dtype)) if isinstance(x, torch.Tensor) else x


class StopGradient(Node):
    """x.detach(): the same value, through which no gradient flows back; sg(x) as the VQ-VAE and BYOL papers write
    it, so that a straight-through estimator, z + sg(z_q − z), does not print as z + z_q − z."""

    prec = ATOM

    def notation(self, p):
        return applied(op("sg"), p.print(self.args[0]))

    def run(self, ev, x):
        return x.detach() if isinstance(x, torch.Tensor) else x


class Rows(Node):
    """Rows of a table: E[ids]."""

    def notation(self, p):
        table, ids = self.args
        return row(p.wrap(table, ATOM), Fenced("[", "]", p.print(ids), "auto"))

    def run(self, ev, table, ids):
        return table[ids]


class Arange(Node):
    def notation(self, p):
        start, stop, step = self.args
        if _is_one(step) and isinstance(stop, SizeOf):
            last = stop.expr - 1
            end = Number(last) if isinstance(last, int) else Size(str(last), compact=False)
            return Fenced("(", ")", row(p.print(start), Glyph(","), Glyph("⋯"), Glyph(","), end))
        return row(op("range"), Fenced("(", ")", joined([p.print(a) for a in (start, stop, step)])))

    def run(self, ev, start, stop, step):
        dtype = self.meta.get("dtype")
        return torch.arange(start, stop, step, dtype=ev.dtype_of(dtype) if dtype is not None else None)


def _is_one(node) -> bool:
    return getattr(node, "value", None) == 1 or getattr(node, "expr", None) == 1


class Fill(Node):
    """A tensor of one value (zeros, ones, full) of the shown shape."""

    def notation(self, p):
        value = self.args[0]
        v = getattr(value, "value", None)
        if not self.meta["shown"]:          # a tensor of no dims is its one value: -1, not -1 1_{}
            return p.wrap(value, ATOM)
        ones = Word("1", "bold")
        body = Word("0", "bold") if v == 0 else (ones if v == 1 else row(p.print(value), THIN, ones))
        return sub(body, shape_notation(self.meta["shown"]))

    def run(self, ev, value, sizes):
        dtype = self.meta.get("dtype")
        dtype = ev.dtype_of(dtype) if dtype is not None else ev.dtype
        return torch.full(tuple(sizes), value, dtype=dtype)


class Constant(Node):
    """A tensor written in the code (torch.tensor([...])), kept as its values."""

    def notation(self, p):
        data = self.meta["data"]
        if isinstance(data, (int, float)) and not isinstance(data, bool):     # torch.tensor(8): the number
            return Number(data)
        if isinstance(data, (list, tuple)) and len(data) <= 4:
            items = [Number(x) if isinstance(x, (int, float)) else Ident(str(x)) for x in data]
            return Fenced("(", ")", joined(items, Glyph(",")), "auto")
        if isinstance(data, (list, tuple)) and not data:
            return Glyph("∅")
        return row(op("tensor"), Fenced("(", ")", Glyph("…")))

    def run(self, ev):
        dtype = self.meta.get("dtype")
        return torch.tensor(self.meta["data"], dtype=ev.dtype_of(dtype) if dtype is not None else None)


class Item(Node):
    """Element i of a tuple a call returns."""

    def notation(self, p):
        x = self.args[0]
        i = self.meta["i"]
        if hasattr(x, "item_notation"):
            return x.item_notation(p, i)
        if isinstance(i, str):
            return sub(p.base(x), rm(i))
        return sub(p.base(x), Number(i + 1))

    def run(self, ev, x):
        return x[self.meta["i"]]
