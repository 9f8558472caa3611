"""One recorded call being lowered: its arguments by name, as nodes (tensors, sizes, numbers) or as data.

A lowering asks for what the op needs by the name torch's signature gives it (`L.operand("batch1")`,
`L.dim()`); `atlas.analyse.equations.arguments` has matched the call against that signature first. A required
argument the call does not have raises `MissingArgument`, and the call is then lowered as itself (Apply):
no node is ever built over a `None` where the op needs a value.
"""

from __future__ import annotations

import sympy

from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations.arguments import Bound, bind
from atlas.analyse.equations.nodes import Node, Num, SizeOf
from atlas.document.expressions import parse
from atlas.extract.trace.structures import OpEvent, Ref, Size
from atlas.load.nested import mapped


class MissingArgument(Exception):
    """A lowering needs an argument the call does not give (or gives in a form it does not read)."""


class Lowering:
    """One recorded call, with its arguments bound by name."""

    def __init__(self, ev: OpEvent, node_of) -> None:
        self.ev = ev
        self.name = ev.name.removeprefix("Tensor.")
        self.is_method = ev.name.startswith("Tensor.")
        self._node_of = node_of             # Ref -> Node (the builder's environment)
        self._bound: Bound | None = bind(ev)

    # -- arguments by name ---------------------------------------------------------------------
    @property
    def bound(self) -> bool:
        return self._bound is not None

    def has(self, name: str) -> bool:
        return self._bound is not None and self._bound.values.get(name) is not None

    def get(self, name: str, default=None):
        """The recorded value of an argument (a Ref, a Size, a constant), or `default` where it is None."""
        if self._bound is None:
            raise MissingArgument(f"{self.ev.name} fits no signature of the op")
        value = self._bound.values.get(name)
        return default if value is None else value

    def first(self, *names: str):
        """The first of several names the op's overloads give one argument (`other`, `mat2`)."""
        for name in names:
            if self.has(name):
                return self.get(name)
        raise MissingArgument(f"{self.ev.name} has none of {names}")

    def need(self, name: str):
        """A required argument's recorded value."""
        value = self.get(name)
        if value is None:
            raise MissingArgument(f"{self.ev.name} has no argument {name}")
        return value

    def operand(self, name: str = "input") -> Node:
        """A required argument as a node: a tensor, a size or a number."""
        node = self.node(self.need(name))
        if node is None:
            raise MissingArgument(f"{self.ev.name}: {name} is None")
        return node

    def optional(self, name: str) -> Node | None:
        value = self.get(name)
        return None if value is None else self.node(value)

    def num(self, name: str, default=None) -> Node:
        """A number argument as a node; a Python float as the expression the source computed it with (√768)."""
        raw = self.get(name, default)
        if raw is None:
            raise MissingArgument(f"{self.ev.name} has no argument {name}")
        if isinstance(raw, float):
            from atlas.analyse.equations.scalars import scalar_node
            where = self._bound.origin.get(name)
            if where is not None:
                index, key = (where[1], None) if where[0] == "arg" else (len(self.ev.args), where[1])
                found = scalar_node(self.ev, index, key, raw)
                if found is not None:
                    return found
        return self.node(raw)

    def dim(self, name: str = "dim", default=None, of: str = "input") -> int:
        """An axis argument, counted from the front (dim=-3 of a 5-axis tensor is axis 2)."""
        d = self.get(name, default)
        if isinstance(d, bool) or not isinstance(d, int):
            raise MissingArgument(f"{self.ev.name}: {name} is not an axis number")
        if d >= 0:
            return d
        nd = self.ndim(self.get(of))
        if nd is None or d < -nd:
            raise MissingArgument(f"{self.ev.name}: axis {d} of a tensor of unknown rank")
        return d % nd

    def sizes(self, name: str) -> tuple:
        """A shape argument (view, reshape, expand, zeros) as data: ints and size expressions."""
        value = self.need(name)
        if not isinstance(value, (tuple, list)):
            value = (value,)
        return tuple(self.data(s) for s in value)

    # -- values ---------------------------------------------------------------------------------
    def node(self, x):
        if isinstance(x, Ref):
            return self._node_of(x)
        if isinstance(x, Size):
            return SizeOf(x.expr)
        if isinstance(x, (bool, int, float)):
            return Num(x)
        return x

    def data(self, x):
        """An argument kept as data: tensors inside become nodes, sizes stay sympy expressions."""
        return mapped(x, self._datum)

    def _datum(self, x):
        if isinstance(x, Ref):
            return self._node_of(x)
        if isinstance(x, Size):
            return x.expr
        return x

    @staticmethod
    def shape(x) -> tuple | None:
        return x.value.shape if isinstance(x, Ref) else None

    def ndim(self, x) -> int | None:
        s = self.shape(x)
        return None if s is None else len(s)

    def out_shape(self, i: int = 0):
        out = self.ev.out
        if isinstance(out, tuple):
            out = out[i]
        return out.value.shape if isinstance(out, Ref) else None

    def generic(self) -> Node:
        """The call as itself, printed by its name and run as the same call with the recorded arguments."""
        args = tuple(self.data(a) for a in self.ev.args)
        kwargs = {k: self.data(v) for k, v in self.ev.kwargs.items()}
        return n.Apply(args, kwargs, func=self.ev.func, name=self.name)


def same_size(a, b) -> bool:
    """Two sizes (ints or expressions in the input symbols) that are equal for every input size."""
    if a is None or b is None:
        return False
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return sympy.expand(parse(a) - parse(b)) == 0
