"""Which operations a paper does not print: layout, dtype casts and the machinery of kernels.

A view of a program that still holds one of these is the code's computation, not a paper view: reshape, view,
permute, transpose (other than of the last two axes, ᵀ), unsqueeze, squeeze, expand, flatten, repeat, a dtype cast,
ranges, in-place writes, and any torch call printed by its own name (grouped_mm, histc, cumsum, sort, empty_like,
index_add, scatter, gather). Heads split and put back side by side (x^h, concat_h) are the notation of multi-head
attention, defined on the page: they stay.
"""

from __future__ import annotations

from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.program import Program

LAYOUT = (t.Reshape, t.Permute, t.Unsqueeze, t.Squeeze, t.Expand, t.Flatten, t.Repeat, t.Cast, t.Arange,
          t.SetIndex, n.Apply)


def kernel_ops(prog: Program) -> list[str]:
    """The kernel-level operations the program's steps print, by name, each once, in order."""
    found: list[str] = []
    for step in prog.steps:
        for node in step.node.distinct():
            name = _kernel_name(node)
            if name is not None and name not in found:
                found.append(name)
    return found


def _kernel_name(node) -> str | None:
    if getattr(type(node), "paper", False):     # a paper view's own kind of a layout node (positions 0, …, T − 1)
        return None
    if isinstance(node, n.Apply):
        return node.meta["name"].strip("_")
    if isinstance(node, t.Transpose):
        ndim = node.meta.get("ndim")
        d0, d1 = node.meta["d0"], node.meta["d1"]
        last = {d0 % ndim, d1 % ndim} == {ndim - 2, ndim - 1} if ndim else {d0, d1} == {-1, -2}
        return None if last else "transpose"         # xᵀ, q kᵀ: the last two axes, as a paper writes it
    if isinstance(node, LAYOUT):
        return type(node).__name__.lower()
    return None
