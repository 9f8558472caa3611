"""Items of one kind inside nested lists, tuples and dict values: the tensors of a call's arguments."""

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
