"""A CPU copy of one instance with seeded weights, for the check: its ties kept, its buffers' known values
put back, every weight filled from one pool of random numbers."""

from __future__ import annotations

import math

import torch
from torch import nn

from atlas.load import buffer_values
from atlas.load.module_copy import deep_copy, to_empty_cpu


def _retie(original: nn.Module, copy_: nn.Module) -> None:
    """Tensors the original shares between places (a tied embedding) are one tensor in the copy too:
    moving from the meta device makes a new tensor per place."""
    for listing, store in ((original.named_parameters, "_parameters"), (original.named_buffers, "_buffers")):
        first: dict[int, str] = {}
        for name, t in listing(remove_duplicate=False):
            if id(t) not in first:
                first[id(t)] = name
                continue
            owner, _, attr = name.rpartition(".")
            src_owner, _, src_attr = first[id(t)].rpartition(".")
            src = getattr(copy_.get_submodule(src_owner) if src_owner else copy_, store)[src_attr]
            getattr(copy_.get_submodule(owner) if owner else copy_, store)[attr] = src


_POOLS: dict = {}                       # seed -> its pool
_POOL_SIZE = 1_048_583                  # a prime: rows of any width start at different places in the pool


def _pool(seed: int) -> torch.Tensor:
    """One block of seeded uniform values in [-1, 1); every parameter of a checked copy is cut from it."""
    cached = _POOLS.get(seed)
    if cached is None:
        gen = torch.Generator().manual_seed(seed)
        cached = _POOLS[seed] = torch.rand(_POOL_SIZE, generator=gen, dtype=torch.float64) * 2 - 1
    return cached


def _fill(t: torch.Tensor, pool: torch.Tensor, offset: int) -> None:
    """Copy values from the pool into a tensor (cheaper than drawing random numbers for every element)."""
    flat = t.view(-1)
    n, start = flat.numel(), offset % _POOL_SIZE
    done = 0
    while done < n:
        take = min(n - done, _POOL_SIZE - start)
        flat[done:done + take].copy_(pool[start:start + take])
        done += take
        start = 0


def materialize(module: nn.Module, dtype: torch.dtype, seed: int) -> nn.Module:
    """A CPU copy of one instance with values cut from a seeded pool, not drawn by each layer's own init:
    matrices uniform with variance 1/fan_in (as informative as normal), gains and biases near one."""
    inst = deep_copy(module, values=False)
    inst.to(dtype) if any(t.device.type == "meta" for t in inst.parameters()) else None   # free on the meta device
    inst = to_empty_cpu(inst)                       # TorchScript modules too
    _retie(module, inst)
    pool = _pool(seed)
    offset = 0
    known = buffer_values.known(module)
    with torch.no_grad():
        for name, t in inst.named_buffers():        # integer and boolean buffers: the model's values where known
            if not t.is_floating_point() and not t.is_complex():
                t.copy_(known[name]) if name in known else t.zero_()
        for t in list(inst.parameters()) + list(inst.buffers()):
            if t.is_floating_point():
                _fill(t, pool, offset)
                if t.dim() >= 2:
                    t.mul_(math.sqrt(3.0 / max(1, t.shape[-1])))
                else:                   # gains, biases, statistics: near one, never zero, never negative
                    t.mul_(0.2).add_(1.0)
                offset += 7919 * (t.numel() % 104_729 + 1)
            elif isinstance(t, nn.Parameter):
                t.zero_()
    inst = inst.to(dtype)
    inst.eval()         # as a statement: a module may override train() without returning itself (LeViT's attention)
    return inst
