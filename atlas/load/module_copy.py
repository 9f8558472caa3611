"""A deep copy of a model that torch's own deepcopy refuses.

torch.nn.utils.weight_norm (the original, not the parametrization) keeps the weight it computes as a plain
attribute of the layer: a tensor autograd made, which `copy.deepcopy` will not copy ("Only Tensors created
explicitly by the user (graph leaves) support the deepcopy protocol"). The layer's forward pre-hook computes it
again before every call, so the copy takes it detached.

A copy whose values are about to be replaced (`values=False`: the equations' check fills every parameter and
buffer from a seeded pool) takes its parameters and buffers on the meta device: copying a real model's weights only
to overwrite them would allocate and write them twice, faulting in every page of the first copy for nothing.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


def deep_copy(model: nn.Module, values: bool = True) -> nn.Module:
    memo: dict = {}
    for module in model.modules():
        for value in vars(module).values():
            if isinstance(value, torch.Tensor) and not value.is_leaf:
                memo[id(value)] = value.detach()
        if not values:
            for t in module._parameters.values():
                if type(t) is nn.Parameter and id(t) not in memo:    # a subclass keeps its own deepcopy
                    memo[id(t)] = nn.Parameter(torch.empty_like(t, device="meta"), requires_grad=t.requires_grad)
            for t in module._buffers.values():
                if type(t) is torch.Tensor and id(t) not in memo:
                    memo[id(t)] = torch.empty_like(t, device="meta")
    return copy.deepcopy(model, memo)
