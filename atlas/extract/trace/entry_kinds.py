"""Entries of one list that look alike but may compute differently: their plain settings tell them apart.

A decoder's layers have the same class and the same parameter shapes, yet a layer can carry a setting that changes
what it computes: one without rotary positions every fourth layer (`self.use_rope = 0`), a sliding-window layer
beside full-attention ones (`self.is_sliding`). The symbolic run runs the first entry of each kind and compares
what they computed; kinds that computed differently are documented as components of their own.
"""

from __future__ import annotations

import torch
from torch import nn

from atlas.extract.trace.structures import Call, Ref, Size, Value

_PLAIN = (bool, int, float, str, type(None))


def called(entry: nn.Module) -> bool:
    """Whether a list entry is called: it has a forward of its own. The inner lists of a list of lists are iterated
    by their parent's code, never called, so nothing can stand in for one (Funnel's blocks of layers)."""
    return type(entry).forward is not nn.Module.forward


def settings(module: nn.Module) -> dict[str, object]:
    """{relative path.attribute: value} of every plain public attribute of the module and the modules below it."""
    out = {}
    for path, m in module.named_modules():
        for name, value in vars(m).items():
            if isinstance(value, _PLAIN) and not name.startswith("_") and name != "training":
                out[f"{path}.{name}" if path else name] = value
    return out


def kinds(entries: list[nn.Module]) -> list[tuple]:
    """A key per entry: the settings that vary between the entries, but for one that numbers them (a distinct int
    per entry, increasing with the entry's position: a layer index every layer carries)."""
    table = [settings(m) for m in entries]
    names = sorted(set().union(*table))
    varying = []
    for name in names:
        values = [repr(t.get(name, "<unset>")) for t in table]
        if len(set(values)) > 1 and not _numbering([t.get(name) for t in table]):
            varying.append(name)
    return [tuple((name, repr(t.get(name, "<unset>"))) for name in varying) for t in table]


def _numbering(values: list) -> bool:
    return all(type(v) is int for v in values) and all(a < b for a, b in zip(values, values[1:]))


def computation(call: Call) -> tuple:
    """What a call computed, as its page states it: its ops in order with their constant arguments and the shapes
    they gave, and the same of the calls inside it, by class."""
    out = []
    for ev in call.events:
        if isinstance(ev, Call):
            out.append((type(ev.module).__qualname__, ev.skipped, computation(ev)))
        else:
            out.append((ev.name, _constant(ev.args), _constant(ev.kwargs), _constant(ev.out)))
    return tuple(out)


def shared(args, kwargs) -> frozenset:
    """The groups of argument places (positions, keywords) a call passes one tensor to: self-attention's query, key
    and value. The arguments as recorded (Refs) or as passed (tensors)."""
    by_object: dict = {}
    for place, x in [*enumerate(args), *kwargs.items()]:
        x = x.value if isinstance(x, Ref) else x
        if isinstance(x, (torch.Tensor, Value)):
            by_object.setdefault(id(x), []).append(place)
    return frozenset(frozenset(places) for places in by_object.values() if len(places) > 1)


def _constant(x):
    if isinstance(x, Ref):
        shape = x.value.shape
        return ("tensor", None if shape is None else tuple(str(s) for s in shape), x.value.dtype)
    if isinstance(x, Size):
        return ("size", str(x.expr))
    if isinstance(x, (tuple, list)):
        return tuple(_constant(i) for i in x)
    if isinstance(x, dict):
        return tuple((k, _constant(v)) for k, v in x.items())
    if isinstance(x, slice):
        return ("slice", _constant(x.start), _constant(x.stop), _constant(x.step))
    return repr(x) if isinstance(x, _PLAIN) else type(x).__qualname__
