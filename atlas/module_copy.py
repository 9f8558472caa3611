"""A deep copy of a model that torch's own deepcopy refuses.

torch.nn.utils.weight_norm (the original, not the parametrization) keeps the weight it computes as a plain
attribute of the layer: a tensor autograd made, which `copy.deepcopy` will not copy ("Only Tensors created
explicitly by the user (graph leaves) support the deepcopy protocol"). The layer's forward pre-hook computes it
again before every call, so the copy takes it detached.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


def deep_copy(model: nn.Module) -> nn.Module:
    memo: dict = {}
    for module in model.modules():
        for value in vars(module).values():
            if isinstance(value, torch.Tensor) and not value.is_leaf:
                memo[id(value)] = value.detach()
    return copy.deepcopy(model, memo)
