"""Tensor shapes with named symbolic dims: [B batch, T positions, 768 d]."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from atlas.document.math_tree import Node


@dataclass(frozen=True)
class Dim:
    """One dimension of a tensor: a fixed size, or an expression in the input symbols."""

    value: int | None = None        # a fixed size
    symbol: str | None = None       # a sympy expression in the input symbols, e.g. "T", "2*T", "B*T"
    name: str | None = None         # the main symbol's name, e.g. "positions"

    @property
    def symbolic(self) -> bool:
        return self.symbol is not None


@dataclass(frozen=True)
class TensorShape:
    name: str                       # the forward() parameter, "output", or "output[0]"
    dims: tuple[Dim, ...]
    dtype: str
    math: Node | None = None             # its symbol in the equations that call the component (a math_tree Node): u′_n


class ShapeStatus(str, Enum):
    DERIVED = "derived"
    NOT_DERIVED = "not derived"
    NOT_CALLED = "not called"


@dataclass(frozen=True)
class Shapes:
    status: ShapeStatus
    inputs: tuple[TensorShape, ...] = ()
    outputs: tuple[TensorShape, ...] = ()
    method: str | None = None       # which forward gave them: "fake" (symbolic), "meta", "cpu"; "own": a call of its
                                    # own, on inputs made up for a component the model's forward() does not call
    reason: str | None = None       # why they are missing, why the CPU was needed, or what an own call ran on
    called_as: str | None = None    # the method the parent's code called instead of forward() (`get_bias`): the
                                    # shapes, the equations and their check are of that call
