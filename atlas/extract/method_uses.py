"""Why a part the forward never calls is not called: read from its parent's code, which may use it through methods
other than forward() (EnCodec's `self.quantizer.encode(...)` and `.decode(...)`). The record sees calls of
`forward`, through `__call__` or not; these other methods run inside the parent's call, as its own steps."""

from __future__ import annotations

import re

import torch
from torch import nn

from atlas.extract.source_spans import SourceFiles
from atlas.extract.trace.structures import refs
from atlas.i18n import msg, msgn


def not_called_reason(model: nn.Module, path: str):
    """The reason a page gives for a part the model's forward() never called."""
    methods = other_methods(model, path)
    if methods:
        # what the code does, not what this run did: on text alone, Chameleon's image tokenizer's encode() never runs
        return msgn("not called through its forward(): the parent's code calls its %(methods)s instead",
                    "not called through its forward(): the parent's code calls its %(methods)s instead",
                    len(methods), methods=tuple(f"`{name}()`" for name in methods))
    return msg("not called by the model's forward() with the example inputs")


def other_methods(model: nn.Module, path: str) -> list[str]:
    """Methods other than forward() that the parent's code calls on the part (`self.<name>.<method>(`), in the
    order its source first names them; [] when none, or for the model itself."""
    if not path:
        return []
    parent_path, _, name = path.rpartition(".")
    try:
        parent = model.get_submodule(parent_path)
    except AttributeError:
        return []
    return methods_on_parts(parent).get(name, [])


def methods_on_parts(parent: nn.Module) -> dict[str, list[str]]:
    """{child's name: the methods other than forward() the parent's code calls on it}, for the children that have
    such methods (`self.rel_pos.get_bias()`: {"rel_pos": ["get_bias"]}); what the class's code says, read once per
    class. A TorchScript module has none: its code runs in TorchScript's interpreter."""
    found: dict[str, list[str]] = {}
    if isinstance(parent, torch.jit.ScriptModule):
        return found
    for name, method in _called_on_attributes(type(parent)):
        part = parent._modules.get(name)
        attr = getattr(part, method, None) if part is not None else None
        if method != "forward" and method not in found.get(name, ()) and callable(attr) and \
                not isinstance(attr, nn.Module) and not hasattr(nn.Module, method):     # a method, no child
            found.setdefault(name, []).append(method)
    return found


_CALLED: dict = {}


def _called_on_attributes(klass: type) -> list[tuple[str, str]]:
    """(attribute, method) of each `self.<attribute>.<method>(` in the code of the class and its bases, in order."""
    known = _CALLED.get(klass)
    if known is not None:
        return known
    pairs: list[tuple[str, str]] = []
    files = SourceFiles()           # not inspect.getsource: it keeps every file it reads in linecache for good
    for base in klass.__mro__:
        if base in (nn.Module, object) or not issubclass(base, nn.Module):
            continue
        try:
            located = files.klass(base)
        except (OSError, SyntaxError):
            continue
        if located is not None:
            pairs += re.findall(r"\bself\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*\(", "".join(located[2]))
    _CALLED[klass] = pairs
    return pairs


def weights_read_by(trace, path: str) -> str | None:
    """The module path of the ancestor whose own operations compute with the part's parameters, where the forward
    never calls the part (nn.MultiheadAttention hands its `out_proj`'s weight and bias to
    F.multi_head_attention_forward); None where none does. Another module reading a weight tied to the part's (an
    embedding sharing an unused head's matrix) computes no part of it."""
    root = getattr(trace, "root", None)
    for call in (root.calls() if root is not None else ()):
        if not (call.path == "" or path.startswith(call.path + ".")):
            continue
        for ev in call.events:
            for r in refs((getattr(ev, "args", ()), getattr(ev, "kwargs", {}))):
                owner = r.value.owner if r.value.kind == "param" else None
                if owner is not None and (owner == path or owner.startswith(path + ".")):
                    return call.path
    return None
