"""What the recognizers may read besides the op program: the values of small buffers (a rotary embedding's inverse
frequencies), and where each input of the component comes from in the record (the cosine table an attention is
given was computed from which buffer)."""

from __future__ import annotations

import torch
from torch import nn

from atlas.extract.trace.structures import OpEvent, refs
from atlas.load import buffer_values

MAX_BACK = 24                       # recorded calls looked through, back from an input, for the buffers it came from


class Context:
    def __init__(self, module: nn.Module | None = None, model: nn.Module | None = None, origins: dict | None = None):
        self.module = module        # the component's own module
        self.model = model          # the whole model, whose record the origins are in
        self.origins = origins or {}            # input key -> the recorded Value it was given
        self._known: dict = {}

    def _buffers(self, root: nn.Module | None) -> dict:
        if root is None:
            return {}
        if id(root) not in self._known:
            self._known[id(root)] = (root, buffer_values.known(root))
        return self._known[id(root)][1]

    def values(self, sym) -> torch.Tensor | None:
        """The values of a buffer of the component, where known (computed by its constructor, or real)."""
        if sym is None or sym.kind != "param" or not sym.binding or self.module is None:
            return None
        owner, attr = sym.binding[1], sym.binding[2]
        name = f"{owner}.{attr}" if owner else attr
        return self._buffers(self.module).get(name)

    def buffers_behind(self, sym) -> list[torch.Tensor]:
        """The values of the buffers an input of the component was computed from, nearest first."""
        if sym is None or sym.kind != "input" or self.model is None:
            return []
        value = self.origins.get(sym.key)
        known = self._buffers(self.model)
        out, seen, pending = [], set(), [value] if value is not None else []
        while pending and len(seen) < MAX_BACK:
            v = pending.pop(0)
            if id(v) in seen:
                continue
            seen.add(id(v))
            if v.kind == "buffer" and v.owner is not None:
                name = f"{v.owner}.{v.attr}" if v.owner else v.attr
                if name in known:
                    out.append(known[name])
                continue
            ev = v.made_by
            if isinstance(ev, OpEvent):
                pending.extend(r.value for r in refs(list(ev.args) + list(ev.kwargs.values())))
        return out
