"""The state a forward hands back beside its results: the keys and values of a cache, by the module call that
made them."""

from __future__ import annotations

import torch
from torch import nn

from atlas.extract.trace.recorder import Recorder
from atlas.extract.trace.structures import Call, refs


def returned_state(output, expr, rec: Recorder, depth: int = 8) -> dict[str, tuple]:
    """{module path: (bytes, floating elements)} of the tensors the forward hands back inside what it returns,
    below its plain results: the keys and values a cache object holds (transformers' DynamicCache, each layer's),
    or pairs nested in a tuple (the legacy past_key_values); each under the module call that made it (a layer's
    attention), "" where no recorded call did. A tensor the output is, or holds as a field or element of its own
    (logits, a hidden state), is a result, not state; so is what a child module returned, handed back whole (a
    text tower's last hidden state and pooled output, which a CLIP-style model returns beside its scores: "KV
    cache: 128 bytes per token" on OWL-ViT's page). A list entry the run skipped wrote nothing: its first entry's
    bytes stand for it."""
    made_in: dict = {}              # op event -> the path of the call it ran in, made at the first state tensor
    out: dict[str, object] = {}
    seen: set = set()
    outs = (refs(call.out) for call in (rec.root.calls() if rec.root else ()) if call is not rec.root)
    returned = {tuple(id(r.value.obj) for r in rs) for rs in outs if len(rs) > 1}  # children's outputs of several

    def add(tensor: torch.Tensor) -> None:
        if not made_in and rec.root is not None:
            made_in.update((id(ev), call.path) for call in rec.root.calls() for ev in call.events
                           if not isinstance(ev, Call))
        numel = 1
        for size in tensor.shape:
            numel = numel * expr(size)
        value = rec.by_id.get(id(tensor))
        made = value.made_by if value is not None and value.obj is tensor else None
        path = made_in.get(id(made), "")
        nbytes, elements = out.get(path, (0, 0))
        out[path] = (nbytes + numel * tensor.element_size(), elements + (numel if tensor.is_floating_point() else 0))

    def walk(value, level: int) -> None:
        if id(value) in seen or level > depth or isinstance(value, (nn.Module, str, bytes, int, float, type)):
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            if level >= 2:
                add(value)
            return
        items = _items(value)
        if level >= 1 and returned and tuple(id(t) for t in _tensors_in(items)) in returned:
            return                          # a child's output, handed back as it was
        for item in items:
            walk(item, level + 1)
    walk(output, 0)
    return out


def _items(value) -> list:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple)):
        return list(value)
    return list(getattr(value, "__dict__", {}).values())


def _tensors_in(items, depth: int = 4) -> list:
    """The tensors inside, in the order the record encodes a call's output."""
    found = []
    for item in items:
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif depth and not isinstance(item, (nn.Module, str, bytes, int, float, type)) and item is not None:
            found += _tensors_in(_items(item), depth - 1)
    return found
