"""Items inside nested lists, tuples, slices and dict values: the tensors of a call's arguments, or the arguments
with each item replaced."""

from __future__ import annotations


def leaves(x, kind) -> list:
    """Every item of type `kind` inside nested lists, tuples and dict values, in order."""
    if isinstance(x, kind):
        return [x]
    if isinstance(x, (list, tuple)):
        return [r for i in x for r in leaves(i, kind)]
    if isinstance(x, dict):
        return [r for i in x.values() for r in leaves(i, kind)]
    return []


def tensors(x) -> list:
    """Every tensor inside nested lists, tuples and dict values, in order."""
    import torch
    return leaves(x, torch.Tensor)


def mapped(x, leaf):
    """`x` with `leaf(item)` in place of each item inside nested tuples, lists, slices and dict values. A tuple of
    any kind (a named tuple, torch.Size) comes back a plain tuple."""
    if isinstance(x, tuple):
        return tuple(mapped(i, leaf) for i in x)
    if isinstance(x, list):
        return [mapped(i, leaf) for i in x]
    if isinstance(x, slice):
        return slice(mapped(x.start, leaf), mapped(x.stop, leaf), mapped(x.step, leaf))
    if isinstance(x, dict):
        return {k: mapped(v, leaf) for k, v in x.items()}
    return leaf(x)
