"""Products, layout and indexing: matmul, transposes, reshapes, heads, concatenation, slices, casts, constants.

Layout operations print visibly (a transpose shows ᵀ or its axes, a cast names its dtype), because a
page prints what runs.
"""

from __future__ import annotations

import sympy
import torch

from atlas.analyse.equations.nodes import ATOM, MUL, POW, Node, SizeOf, number_tex


def shape_tex(shape) -> str:
    """(B, T, 768) -> B\\times T\\times 768."""
    return r"\times ".join(SizeOf(s).tex(None) if not isinstance(s, str) else s for s in shape)


class MatMul(Node):
    prec = MUL

    def tex(self, p):
        a, b = self.args
        return p.wrap(a, MUL, strict=not isinstance(a, MatMul)) + r"\," + p.wrap(b, POW)

    def run(self, ev, a, b):
        return a @ b


class Transpose(Node):
    """Swap two axes: the last two print as ᵀ, others name their axes."""

    prec = POW

    def tex(self, p):
        x = self.args[0]
        d0, d1, ndim = self.meta["d0"], self.meta["d1"], self.meta.get("ndim")
        last = ndim is not None and {d0 % ndim, d1 % ndim} == {ndim - 2, ndim - 1}
        if last or {d0, d1} == {-1, -2}:
            return p.base(x) + r"^{\mathsf T}"
        return r"\operatorname{transpose}_{" + f"{d0},{d1}" + r"}\!\left(" + p.print(x) + r"\right)"

    def run(self, ev, x):
        return x.transpose(self.meta["d0"], self.meta["d1"])


class Permute(Node):
    def tex(self, p):
        order = ",".join(str(d) for d in self.meta["dims"])
        return r"\operatorname{permute}_{(" + order + r")}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x):
        return x.permute(*self.meta["dims"])


class Reshape(Node):
    """view / reshape to the shown shape (the code's sizes, with -1 resolved from the recorded shapes)."""

    def tex(self, p):
        return r"\operatorname{reshape}_{" + shape_tex(self.meta["shown"]) + r"}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x, sizes):
        return x.reshape(*sizes)


class Heads(Node):
    """x.view(B, T, h, d).transpose(1, 2): the features split into h heads of d, heads moved forward."""

    def tex(self, p):
        return p.base(self.args[0]) + "^{h}"

    def run(self, ev, x, sizes):
        return x.reshape(*sizes).transpose(1, 2)


class MergeHeads(Node):
    """O.transpose(1, 2).reshape(B, T, h·d): the heads put back side by side."""

    def tex(self, p):
        return r"\operatorname{concat}_h\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x, sizes):
        return x.transpose(1, 2).reshape(*sizes)


class Flatten(Node):
    def tex(self, p):
        a, b = self.meta["start"], self.meta["end"]
        return r"\operatorname{flatten}_{" + f"{a}:{b}" + r"}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x):
        return x.flatten(self.meta["start"], self.meta["end"])


class Unsqueeze(Node):
    def tex(self, p):
        return r"\operatorname{unsqueeze}_{" + str(self.meta["dim"]) + r"}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x):
        return x.unsqueeze(self.meta["dim"])


class Squeeze(Node):
    def tex(self, p):
        d = self.meta.get("dim")
        sub = "" if d is None else "_{" + str(d) + "}"
        return r"\operatorname{squeeze}" + sub + r"\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x):
        d = self.meta.get("dim")
        return x.squeeze() if d is None else x.squeeze(d)


class Expand(Node):
    """The same values seen at a larger size (broadcast), to the shown shape."""

    def tex(self, p):
        return r"\operatorname{expand}_{" + shape_tex(self.meta["shown"]) + r"}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x, sizes):
        return x.expand(*sizes)


class Repeat(Node):
    """Each slice along an axis repeated n times in place (repeat_interleave), as grouped-query attention does."""

    def tex(self, p):
        return (r"\operatorname{repeat}_{" + str(self.meta["times"]) + r"}\!\left(" + p.print(self.args[0])
                + r"\right)")

    def run(self, ev, x):
        return x.repeat_interleave(self.meta["times"], dim=self.meta["dim"])


class Cat(Node):
    """[a; b] along an axis."""

    def tex(self, p):
        sep = r";\;" if self.meta.get("dim_is_sequence", True) else r"\;"
        return r"[\," + sep.join(p.print(x) for x in self.args) + r"\,]"

    def run(self, ev, *parts):
        return torch.cat(parts, dim=self.meta["dim"])


class Stack(Node):
    def tex(self, p):
        return r"\operatorname{stack}\!\left(" + r",\,".join(p.print(x) for x in self.args) + r"\right)"

    def run(self, ev, *parts):
        return torch.stack(parts, dim=self.meta["dim"])


class Slice(Node):
    """x[..., start:stop] along an axis, printed 1-based as the seed pages do: x_{1:768}."""

    def tex(self, p):
        x, start, stop = self.args
        lo = _plus_one(start)
        rng = lo + ":" + p.print(stop)
        if self.meta.get("last", True):
            return p.base(x) + "_{" + rng + "}"
        return p.base(x) + r"_{[" + rng + r"]_{" + str(self.meta["dim"]) + "}}"

    def run(self, ev, x, start, stop):
        return x.narrow(self.meta["dim"], int(start), int(stop) - int(start))


def _plus_one(start) -> str:
    if isinstance(start, SizeOf):
        e = start.expr
        return str(e + 1) if isinstance(e, int) else sympy.latex(e + 1)
    return number_tex(start.value + 1) if hasattr(start, "value") else "1"


class Index(Node):
    """x[...]: any indexing the code does, printed as the code writes it: Index(x, index)."""

    def tex(self, p):
        return p.base(self.args[0]) + r"\left[" + _index_tex(p, self.args[1]) + r"\right]"

    def run(self, ev, x, index):
        return x[index]


def _index_tex(p, index) -> str:
    parts = index if isinstance(index, tuple) else (index,)
    out = []
    for part in parts:
        if isinstance(part, slice):
            a = "" if part.start is None else _plain(p, part.start)
            b = "" if part.stop is None else _plain(p, part.stop)
            c = "" if part.step is None else ":" + _plain(p, part.step)
            out.append(f"{a}{{:}}{b}{c}")
        elif part is None:
            out.append(r"\mathrm{None}")
        elif part is Ellipsis:
            out.append(r"\ldots")
        else:
            out.append(_plain(p, part))
    return r",\,".join(out)


def _plain(p, x) -> str:
    if isinstance(x, Node):
        return p.print(x)
    if isinstance(x, sympy.Basic):
        return sympy.latex(x)
    if isinstance(x, (list, tuple)):
        return "(" + ",".join(_plain(p, i) for i in x) + ")"
    return str(x)


class SetIndex(Node):
    """x with x[index] = value: a copy with some entries replaced: SetIndex(x, value, index)."""

    def tex(self, p):
        x, value, index = self.args
        return (p.base(x) + r"\big|_{[" + _index_tex(p, index) + r"]\,\leftarrow\," + p.print(value)
                + r"}")

    def run(self, ev, x, value, index):
        out = x.clone()
        out[index] = value
        return out


class Cast(Node):
    """x.to(dtype): printed with the dtype; the check runs float widths of 32 bits and more in its own precision."""

    def tex(self, p):
        return r"\operatorname{" + self.meta["dtype"] + r"}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x):
        dtype = getattr(torch, self.meta["dtype"])
        return x.to(ev.dtype_of(dtype)) if isinstance(x, torch.Tensor) else x


class StopGradient(Node):
    """x.detach(): the same value, through which no gradient flows back; sg(x) as the VQ-VAE and BYOL papers write
    it, so that a straight-through estimator, z + sg(z_q − z), does not print as z + z_q − z."""

    prec = ATOM

    def tex(self, p):
        return r"\operatorname{sg}\!\left(" + p.print(self.args[0]) + r"\right)"

    def run(self, ev, x):
        return x.detach() if isinstance(x, torch.Tensor) else x


class Rows(Node):
    """Rows of a table: E[ids]."""

    def tex(self, p):
        table, ids = self.args
        return p.wrap(table, ATOM) + r"\left[" + p.print(ids) + r"\right]"

    def run(self, ev, table, ids):
        return table[ids]


class Arange(Node):
    def tex(self, p):
        start, stop, step = self.args
        if _is_one(step) and isinstance(stop, SizeOf):
            last = stop.expr - 1
            return r"(" + p.print(start) + r",\dots," + (str(last) if isinstance(last, int) else sympy.latex(last)) + ")"
        return r"\operatorname{range}(" + r",\,".join(p.print(a) for a in (start, stop, step)) + ")"

    def run(self, ev, start, stop, step):
        dtype = self.meta.get("dtype")
        return torch.arange(start, stop, step, dtype=ev.dtype_of(dtype) if dtype is not None else None)


def _is_one(node) -> bool:
    return getattr(node, "value", None) == 1 or getattr(node, "expr", None) == 1


class Fill(Node):
    """A tensor of one value (zeros, ones, full) of the shown shape."""

    def tex(self, p):
        value = self.args[0]
        v = getattr(value, "value", None)
        if not self.meta["shown"]:          # a tensor of no dims is its one value: -1, not -1\,\mathbf{1}_{}
            return p.wrap(value, ATOM)
        body = r"\mathbf{0}" if v == 0 else (r"\mathbf{1}" if v == 1 else p.print(value) + r"\,\mathbf{1}")
        return body + "_{" + shape_tex(self.meta["shown"]) + "}"

    def run(self, ev, value, sizes):
        dtype = self.meta.get("dtype")
        dtype = ev.dtype_of(dtype) if dtype is not None else ev.dtype
        return torch.full(tuple(sizes), value, dtype=dtype)


class Constant(Node):
    """A tensor written in the code (torch.tensor([...])), kept as its values."""

    def tex(self, p):
        data = self.meta["data"]
        if isinstance(data, (int, float)) and not isinstance(data, bool):     # torch.tensor(8): the number
            return number_tex(data)
        if isinstance(data, (list, tuple)) and len(data) <= 4:
            return r"\left(" + ",".join(number_tex(x) if isinstance(x, (int, float)) else str(x) for x in data) + r"\right)"
        if isinstance(data, (list, tuple)) and not data:
            return r"\varnothing"
        return r"\operatorname{tensor}(\ldots)"

    def run(self, ev):
        dtype = self.meta.get("dtype")
        return torch.tensor(self.meta["data"], dtype=ev.dtype_of(dtype) if dtype is not None else None)


class Item(Node):
    """Element i of a tuple a call returns."""

    def tex(self, p):
        x = self.args[0]
        i = self.meta["i"]
        if hasattr(x, "item_tex"):
            return x.item_tex(p, i)
        if isinstance(i, str):
            return p.base(x) + r"_{\mathrm{" + i.replace("_", r"\_") + "}}"
        return p.base(x) + "_{" + str(i + 1) + "}"

    def run(self, ev, x):
        return x[self.meta["i"]]
