"""Lower each recorded torch call to a node of the op tree.

The tables of `lower_math`, `lower_tensor` and `lower_nn` give the math its notation (x W, softmax, ‖x‖₂,
q kᵀ); each lowering reads the call's arguments by name (`atlas.analyse.equations.arguments` binds them against the
op's signature first). A call no table lists, a call that fits no signature, and a call whose lowering
misses an argument it needs all become `Apply`: printed by its name and run as the same call with the
recorded arguments, never dropped and never guessed.
"""

from __future__ import annotations

from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.lower_math import TABLE as MATH
from atlas.analyse.equations.lower_nn import TABLE as FUNCTIONAL
from atlas.analyse.equations.lower_tensor import DTYPE_METHODS
from atlas.analyse.equations.lower_tensor import TABLE as LAYOUT
from atlas.analyse.equations.lowering_context import Lowering, MissingArgument
from atlas.analyse.equations.nodes import Node
from atlas.extract.trace.structures import OpEvent

__all__ = ["DTYPE_METHODS", "TABLE", "lower"]

TABLE = {**MATH, **LAYOUT, **FUNCTIONAL}

# Node kinds with an argument that may be absent: position -> what its absence means.
OPTIONAL_ARGS = {n.Linear: {2}, n.Attention: {3},     # no bias; no attention mask
                 n.MHAOp: {6, 7, 8, 10, 11, 12},      # no q, k, v or output bias; no attention or padding mask
                 t.Index: {1}, t.SetIndex: {2}}       # x[None]: a new axis


def lower(ev: OpEvent, node_of):
    """The node (or, for calls returning several tensors, the tuple of nodes) a recorded call computes."""
    L = Lowering(ev, node_of)
    fn = TABLE.get(L.name)
    if fn is None or not L.bound:
        return L.generic()
    made_after = Node._count
    try:
        result = fn(L)
    except MissingArgument:
        return L.generic()
    if _has_hole(result, made_after):
        return L.generic()
    return result


def _has_hole(result, made_after: int) -> bool:
    """A node this lowering made with None where its op needs a value (it would print `0.25 None None`)."""
    stack = list(result) if isinstance(result, tuple) else [result]
    if not all(isinstance(node, Node) for node in stack):
        return True
    while stack:
        node = stack.pop()
        if node.seq <= made_after:
            continue                                # made before this call (its children too): checked then
        allowed = OPTIONAL_ARGS.get(type(node), ())
        if any(a is None and i not in allowed for i, a in enumerate(node.args)):
            return True
        stack.extend(node.children())
    return False
