"""The op tree: each node kind prints itself and runs itself, so what a page prints is what was checked.

Leaves are references to named symbols (`Sym`), numbers (`Num`) and sizes (`SizeOf`, a sympy expression
in the model's input symbols). Every other node is an operation with a `notation` printer and a `run`
evaluator side by side. Printing gives a formula (atlas.document.math_tree) in which each symbol is a reference
to its key; the page's namer gives the names, and the render layer writes the LaTeX, the hover keys and the
stream colors.
"""

from __future__ import annotations

import sympy
import torch

from atlas.document.math_tree import Fenced, Group, Number, Ref, Size, Word
from atlas.load.nested import mapped

ADD, MUL, POW, ATOM = 40, 50, 60, 1000


class Node:
    """An operation over child nodes. Subclasses set `prec` and define `notation` and `run`.

    `args` hold child nodes, or data with nodes inside (a tuple of sizes, a dict of keyword arguments);
    `meta` holds plain settings (an axis, a dtype's name). Nodes are numbered as they are made, and
    every node is made after its children, so the numbers order any set of nodes as the code ran.
    """

    prec = ATOM
    elementwise = False
    __slots__ = ("args", "meta", "seq")
    _count = 0

    def __init__(self, *args, **meta) -> None:
        self.args = args
        self.meta = meta
        Node._count += 1
        self.seq = Node._count

    def children(self):
        return list(kids(self.args))

    def notation(self, p: "Printer"):
        raise NotImplementedError

    def run(self, ev: "Evaluator", *values):
        raise NotImplementedError

    def walk(self):
        """This node and every node under it, parents first (a shared node once per use)."""
        yield self
        for a in self.children():
            yield from a.walk()

    def distinct(self):
        """This node and every node under it, each once, in walk()'s order of first visits: a node shared by many
        (a dense block's concatenated features, each layer's input holding every earlier output) is under walk()
        once per path to it, which grows with the square of the depth and beyond."""
        seen, pending = set(), [self]
        while pending:
            node = pending.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            pending.extend(reversed(node.children()))

    def rebuild(self, args):
        """A copy with other arguments, the same kind and settings."""
        new = object.__new__(type(self))
        new.args, new.meta, new.seq = tuple(args), self.meta, self.seq
        return new

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.args))})"


def kids(x):
    """The nodes inside an argument: itself, or those in a tuple, list, dict or slice."""
    if isinstance(x, Node):
        yield x
    elif isinstance(x, (list, tuple)):
        for i in x:
            yield from kids(i)
    elif isinstance(x, dict):
        for i in x.values():
            yield from kids(i)
    elif isinstance(x, slice):
        yield from kids((x.start, x.stop, x.step))


def substitute(x, table: dict, top=None):
    """`x` with every node whose id is in `table` (other than `top`) replaced by table[id]."""
    if isinstance(x, Node):
        if x is not top and id(x) in table:
            return table[id(x)]
        if isinstance(x, (Sym, Num, SizeOf)):
            return x
        args = [substitute(a, table) for a in x.args]
        if all(n is o for n, o in zip(args, x.args)):
            return x                                    # nothing below changed: keep the node itself
        return x.rebuild(args)
    if isinstance(x, (tuple, list)):
        items = [substitute(i, table) for i in x]
        return x if all(n is o for n, o in zip(items, x)) else type(x)(items)
    if isinstance(x, dict):
        items = {k: substitute(v, table) for k, v in x.items()}
        return x if all(items[k] is x[k] for k in x) else items
    if isinstance(x, slice):
        parts = [substitute(i, table) for i in (x.start, x.stop, x.step)]
        return x if all(n is o for n, o in zip(parts, (x.start, x.stop, x.step))) else slice(*parts)
    return x


class Sym(Node):
    """A named value: an input, a parameter, a constant, a child module, or an earlier step."""

    __slots__ = ()

    def __init__(self, key: str) -> None:
        super().__init__(key)

    @property
    def key(self) -> str:
        return self.args[0]

    def children(self):
        return []

    def notation(self, p):
        return Ref(self.key)

    def run(self, ev):
        return ev.env[self.key]

    def __eq__(self, other):
        return isinstance(other, Sym) and other.key == self.key

    def __hash__(self):
        return hash(("Sym", self.key))


class Num(Node):
    """A number written in the code (50, 0.5, 1e-5)."""

    __slots__ = ()

    def children(self):
        return []

    @property
    def value(self):
        return self.args[0]

    def notation(self, p):
        return Number(self.value)

    @property
    def prec(self):
        return ADD if isinstance(self.value, (int, float)) and self.value < 0 else ATOM

    def run(self, ev):
        return self.value


class SizeOf(Node):
    """A size from the input dims: `T`, `2*T`, `768`; printed as math, run with the check's sizes."""

    __slots__ = ()

    def children(self):
        return []

    @property
    def expr(self):
        return self.args[0]

    def notation(self, p):
        e = self.expr
        return Number(int(e)) if isinstance(e, int) else Size(str(e))

    @property
    def prec(self):
        e = self.expr
        if isinstance(e, int):
            return ATOM if e >= 0 else ADD
        return ADD if isinstance(e, sympy.Add) else (MUL if isinstance(e, sympy.Mul) else ATOM)

    def run(self, ev):
        return ev.size(self.expr)


class Printer:
    """Prints op trees. Symbol names are filled in later, so printing never depends on them."""

    def __init__(self, scalars: set[str] = frozenset()) -> None:
        self.scalars = set(scalars)      # keys of scalar symbols (ε): a product with them is juxtaposition

    def __call__(self, node):
        return self.print(node)

    def print(self, node):
        """The formula of a node, or of a plain argument: a number, a size, a name."""
        if isinstance(node, Node):
            return node.notation(self)
        if isinstance(node, (int, float)):
            return Number(node)
        if isinstance(node, sympy.Basic):
            return Size(str(node), compact=False)
        return Word(str(node), "roman")

    def wrap(self, node, prec: int, strict: bool = False):
        """Print `node`, in parentheses when it binds looser than `prec`."""
        inner = self.print(node)
        own = node.prec if isinstance(node, Node) else ATOM
        if own < prec or (strict and own == prec):
            return Fenced("(", ")", inner, "auto")
        return inner

    def base(self, node):
        """A node as the base of a sub- or superscript: a group, so `{p_{a}}_{1:768}` stays one."""
        return Group(self.wrap(node, ATOM))

    def is_scalar(self, node) -> bool:
        if isinstance(node, Num):
            return True
        if isinstance(node, SizeOf):
            return True
        if isinstance(node, Sym):
            return node.key in self.scalars
        if isinstance(node, Node) and node.elementwise:
            return all(self.is_scalar(a) for a in node.args if isinstance(a, Node))
        return False


class DataDependentSize(Exception):
    """A size the equations need that the data decided when the forward was recorded (u0), and that no step of
    theirs computes: they cannot be run on other data."""

    def __init__(self, symbols: list[str]) -> None:
        super().__init__(", ".join(symbols))
        self.symbols = symbols


class Evaluator:
    """What running an op tree needs: symbol values, the check's sizes, and the working dtype."""

    def __init__(self, env: dict, sizes: dict, dtype: torch.dtype, device: str = "cpu",
                 working: torch.dtype = torch.float32, watch=None) -> None:
        self.env = env
        self.watch = watch              # called with each node, its arguments' values and its value (the check's
                                        # conditioning, tolerances.Conditioning)
        self.working = working          # the record's dtype: a cast to it is a cast to the check's precision
        self.sizes = sizes              # {"B": 2, "T": 6}
        self.dtype = dtype
        self.device = device
        self._size_cache: dict = {}

    def size(self, expr):
        if isinstance(expr, int):
            return expr
        known = self._size_cache.get(expr)
        if known is None:
            subs = {s: self.sizes[str(s)] for s in expr.free_symbols if str(s) in self.sizes}
            value = expr.subs(subs)
            if value.free_symbols:
                raise DataDependentSize(sorted(str(s) for s in value.free_symbols))
            known = int(value) if value.is_Integer else float(value)
            self._size_cache[expr] = known
        return known

    def dtype_of(self, dtype):
        """Floating dtypes of 32 bits or more are the working precision of the check."""
        if isinstance(dtype, torch.dtype) and dtype in (torch.float32, torch.float64, self.working):
            return self.dtype
        return dtype

    def value(self, node):
        if isinstance(node, Node):
            kids = [self.value(a) if isinstance(a, Node) else self.data(a) for a in node.args]
            if isinstance(node, (Sym, Num, SizeOf)):
                return node.run(self)
            out = node.run(self, *kids)
            if self.watch is not None:
                self.watch(node, kids, out)
            return out
        return self.data(node)

    def data(self, x):
        """Non-node arguments: nested structures with nodes inside, sizes, dtypes, devices."""
        return mapped(x, self._item)

    def _item(self, x):
        if isinstance(x, Node):
            return self.value(x)
        if isinstance(x, sympy.Basic):
            return self.size(x)
        if isinstance(x, torch.device):
            return torch.device(self.device)
        if isinstance(x, torch.dtype):
            return self.dtype_of(x)
        return x
