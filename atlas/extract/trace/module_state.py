"""A module tree's state across a recorded run: every module's attributes put back afterwards, and its meta
tensors stood in for by fake ones while it runs."""

from __future__ import annotations

import contextlib

import torch
from torch import nn


@contextlib.contextmanager
def kept_state(model: nn.Module, closed=()):
    """Every module's plain attributes as they were before the run, and what its containers (hook dicts, dicts,
    lists, sets) held: a forward that keeps a cache on the module (`self.state = h`) must not leave fake tensors
    with symbolic sizes behind for later copies and runs; and one that installs hooks behind a flag it sets
    (transformers' hidden-states capture) must not find the hooks without the flag next time, and add them twice.

    `closed`: modules whose submodules are left alone for now (the repeated list entries a run may skip); yields
    the function that keeps more modules' state, for when one of them must run after all."""
    saved, kept = [], set()

    def keep(modules) -> None:
        for m in modules:
            if id(m) not in kept:
                kept.add(id(m))
                saved.append((m, dict(m.__dict__), _contents(m.__dict__)))
    keep(_outside(model, closed))
    try:
        yield keep
    finally:
        for m, before, held in saved:
            for key in [k for k in m.__dict__ if k not in before]:
                del m.__dict__[key]
            for key, value in before.items():
                if m.__dict__.get(key) is not value:
                    m.__dict__[key] = value
            for container, items in held:
                _put_back(container, items)


def _outside(model: nn.Module, closed) -> list[nn.Module]:
    """The model's modules, each once, but for those reached only through the modules below a closed one: a
    126-layer model's skipped layers cost no copies of their state and no fake weights."""
    shut = {id(m) for m in closed}
    seen, pending, out = set(), [model], []
    while pending:
        m = pending.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        out.append(m)
        if id(m) not in shut:
            pending.extend(reversed(list(m.children())))
    return out


def _contents(attrs: dict) -> list:
    """(container, a copy of its items) for each container among a module's attributes; an empty one keeps no copy."""
    return [(v, v.copy() if v else None) for v in attrs.values() if isinstance(v, (dict, list, set))]


def _put_back(container, items) -> None:
    if items is None:
        if container:
            container.clear()
    elif isinstance(container, dict):
        if container.keys() != items.keys() or any(container[k] is not v for k, v in items.items()):
            container.clear()
            container.update(items)
    elif isinstance(container, list):
        if len(container) != len(items) or any(a is not b for a, b in zip(container, items)):
            container[:] = items
    elif container != items:
        container.clear()
        container.update(items)


class _Fakes:
    """The model's meta tensors replaced by fake ones, module by module; `restore` puts every one back."""

    def __init__(self, mode) -> None:
        self.mode = mode
        self.originals: dict = {}       # id(fake) -> the real tensor
        self._swapped: list = []
        self._flat: list = []           # RNNs keep their own list of weights

    def swap(self, modules) -> None:
        for module in modules:
            for store in (module._parameters, module._buffers):
                for name, t in list(store.items()):
                    if t is None or t.device.type != "meta":
                        continue
                    fake = fake_like(t, self.mode)
                    store[name] = fake
                    self._swapped.append((store, name, t))
                    self.originals[id(fake)] = t
            if hasattr(module, "_init_flat_weights"):
                module._init_flat_weights()
                self._flat.append(module)

    def restore(self) -> None:
        for store, name, t in self._swapped:
            store[name] = t
        for m in self._flat:
            m._init_flat_weights()


@contextlib.contextmanager
def fake_tensors(model: nn.Module, mode, closed=()):
    """The model's meta tensors replaced, for one run, by fake tensors on the CPU: the code takes the paths it
    takes on the CPU, where its equations are checked (transformers' MoE counts tokens per expert differently
    on the meta device). Those below `closed` modules are swapped only if one of them runs (`swap`)."""
    fakes = _Fakes(mode)
    fakes.swap(_outside(model, closed))
    try:
        yield fakes
    finally:
        fakes.restore()


def fake_like(t: torch.Tensor, mode) -> torch.Tensor:
    """A fake CPU tensor of `t`'s sizes, strides and dtype, made as the fake mode wraps its factory ops' meta
    outputs, and a parameter as nn.Parameter makes one of a tensor subclass (its flags, without the detach()):
    no dispatch per weight, so a deep model's thousands of weights cost little."""
    elem = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
    fake = mode.fake_tensor_converter.from_meta_and_device(mode, elem, torch.device("cpu"))
    if isinstance(t, nn.Parameter):
        fake.requires_grad_(t.requires_grad)
        fake._is_param = True
    return fake
