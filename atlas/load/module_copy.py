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


def to_empty_cpu(model: nn.Module) -> nn.Module:
    """`model.to_empty(device="cpu")`, where TorchScript modules below it, which refuse `to_empty`, take new empty
    CPU tensors for their parameters and buffers one by one, out of the way of the rest's `to_empty`."""
    scripted = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.jit.ScriptModule)]
    if not scripted:
        return model.to_empty(device="cpu")
    for _, m in scripted:
        for store in (m._parameters, m._buffers):
            for name, t in list(store.items()):
                if t is not None and t.device.type != "cpu":
                    empty = torch.empty_like(t, device="cpu")
                    store[name] = nn.Parameter(empty, t.requires_grad) if isinstance(t, nn.Parameter) else empty
    if isinstance(model, torch.jit.ScriptModule):
        return model
    tops = [(name, m) for name, m in scripted if not any(name.startswith(f"{o}.") for o, _ in scripted)]
    held = []
    for name, m in tops:                # out of the tree while the rest moves, then back where they were
        owner, _, attr = name.rpartition(".")
        parent = model.get_submodule(owner) if owner else model
        held.append((parent, attr, m))
        parent._modules[attr] = None
    try:
        model = model.to_empty(device="cpu")
    finally:
        for parent, attr, m in held:
            parent._modules[attr] = m
    return model
