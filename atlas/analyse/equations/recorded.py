"""Reading a recorded call: its arguments by forward()'s parameter names, and the values inside encoded data.

The record encodes a call's arguments as it received them: tensors as `Ref`s, sizes as `Size`s, plain data
as itself, nested in tuples, lists and dicts. These helpers are shared by the builder and the check.
"""

from __future__ import annotations

from atlas.extract.trace.call_shapes import decided_by_data
from atlas.extract.trace.structures import Call, Ref, Size
from atlas.load.forward_calls import bind


def call_params(c: Call) -> dict:
    """A call's forward() parameters bound to the values it received: {parameter: Value id}."""
    try:
        bound = bind(c.module, c.args, c.kwargs, spread=False, method=c.method)
    except TypeError:
        return {}
    return {k: v.value.id for k, v in bound.items() if isinstance(v, Ref)}


def is_object(x) -> bool:
    """An argument that is neither a tensor, a size, nor plain data (a cache, a config)."""
    if x is None or isinstance(x, (Ref, Size, bool, int, float, str, bytes)):
        return False
    if isinstance(x, (tuple, list)):
        return any(is_object(i) for i in x)
    if isinstance(x, dict):
        return any(is_object(i) for i in x.values())
    return type(x).__module__.split(".")[0] not in ("torch", "builtins")


def input_sizes(expr) -> set:
    """The input symbols (B, T, H, W) among an expression's symbols; an unbacked one (u0) is not one."""
    return {s for s in getattr(expr, "free_symbols", set()) if not str(s).startswith(("u", "s"))}


def unbacked(expr) -> set:
    """The data-dependent symbols (u0, u1: a count the data decides) among an expression's symbols."""
    return {s for s in getattr(expr, "free_symbols", set()) if decided_by_data(str(s))}


def shape_symbols(values) -> set:
    """Every symbol in the shapes of these Values."""
    out = set()
    for v in values:
        for s in v.shape or ():
            out |= getattr(s, "free_symbols", set())
    return out
