"""Exact parameter accounting: rows per owned tensor, tensor identity, model totals, the invariant.

Tied or shared tensors are counted once, by tensor identity: `named_parameters()`
de-duplicates the same way, while `state_dict()` and `remove_duplicate=False` do not
(a tied LM head shares one tensor with the token embedding: count it once).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

from atlas.document import BufferRow, CountedElsewhere, ModelDoc, ParamRow, Totals
from atlas.errors import AtlasError
from atlas.i18n import msg

# Reader's names for the tensors of torch.nn leaves, looked up along the class's MRO.
_LABELS: dict[type, dict[str, object]] = {
    nn.LayerNorm: {"weight": msg("Learned gain"), "bias": msg("Learned bias")},
    nn.RMSNorm: {"weight": msg("Learned gain")},
    nn.GroupNorm: {"weight": msg("Learned gain"), "bias": msg("Learned bias")},
    nn.modules.batchnorm._NormBase: {"weight": msg("Learned gain"), "bias": msg("Learned bias")},
    nn.Linear: {"weight": msg("Weight matrix"), "bias": msg("Bias")},
    nn.Embedding: {"weight": msg("Embedding table")},
    nn.modules.conv._ConvNd: {"weight": msg("Kernels"), "bias": msg("Bias")},
    nn.MultiheadAttention: {"in_proj_weight": msg("Input projection (Q, K, V)"),
                            "in_proj_bias": msg("Input projection bias")},
}


def _lookup(table: dict[type, dict[str, str]], module: nn.Module, name: str) -> str | None:
    for cls in type(module).__mro__:
        if cls in table and name in table[cls]:
            return table[cls][name]
    return None


def label(module: nn.Module, name: str) -> str:
    return _lookup(_LABELS, module, name) or name.replace("_", " ").capitalize()


def factors(module: nn.Module, name: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The calculation's factors. A Linear weight is written in × out, as in the pages' `x W` equations."""
    if isinstance(module, nn.Linear) and name == "weight" and len(shape) == 2:
        return (shape[1], shape[0])
    return shape


def tensor_owners(model: nn.Module) -> dict[int, list[str]]:
    """id(parameter) -> every "module.param" path holding it, in module order; the first one counts it."""
    owners: dict[int, list[str]] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        for name, p in module._parameters.items():
            if p is not None:
                owners.setdefault(id(p), []).append(_join(path, name))
    return owners


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def marker(owners: dict[int, list[str]], path: str, name: str, p: nn.Parameter) -> str:
    """"own" where this place counts the tensor, else the place that does."""
    first = owners[id(p)][0]
    return "own" if first == _join(path, name) else first


def is_lazy(t) -> bool:
    """A lazy module's parameter or buffer, whose shape is known only after a first forward."""
    return isinstance(t, (UninitializedParameter, UninitializedBuffer))


def has_lazy(model: nn.Module) -> bool:
    """A model with lazy modules: sizes only a first forward tells."""
    return any(is_lazy(p) for p in model.parameters()) or any(is_lazy(b) for b in model.buffers())


def numel(t) -> int:
    return 0 if is_lazy(t) else int(t.numel())


def shape_of(t) -> tuple[int, ...]:
    return () if is_lazy(t) else tuple(int(s) for s in t.shape)


def own_tensors(module: nn.Module, store: str) -> list[tuple[str, object]]:
    """A module's own parameters (`store` "_parameters") or buffers ("_buffers") by name; a TorchScript module's
    children's too ("0.weight"): the atlas documents it as one opaque leaf, its children no components."""
    if isinstance(module, torch.jit.ScriptModule):
        return list(module.named_parameters() if store == "_parameters" else module.named_buffers())
    return list(getattr(module, store).items())


def param_rows(module: nn.Module, path: str, owners: dict[int, list[str]]) -> tuple[ParamRow, ...]:
    rows = []
    for name, p in own_tensors(module, "_parameters"):
        if p is None:
            continue
        here = _join(path, name)
        holders = owners[id(p)]
        shape = shape_of(p)
        rows.append(ParamRow(
            name=name,
            label=msg("%(label)s (uninitialized: a lazy module's size is set by its first forward)",
                      label=label(module, name)) if is_lazy(p) else label(module, name),
            shape=shape,
            factors=factors(module, name, shape),
            count=numel(p),
            trained=bool(p.requires_grad),
            counted=holders[0] == here,
            shared_with=tuple(h for h in holders if h != here),
        ))
    return tuple(rows)


def buffer_rows(module: nn.Module) -> tuple[BufferRow, ...]:
    return tuple(
        BufferRow(
            name=name,
            shape=shape_of(b),
            dtype=str(b.dtype).removeprefix("torch."),
            count=numel(b),
            persistent=name not in getattr(module, "_non_persistent_buffers_set", ()),
        )
        for name, b in own_tensors(module, "_buffers")
        if b is not None
    )


def unique_numel(module: nn.Module) -> int:
    """Elements of the distinct tensors a module holds, itself and its children included."""
    return sum(numel(p) for p in module.parameters())


def counted_elsewhere(module: nn.Module, path: str, owners: dict[int, list[str]]) -> tuple[CountedElsewhere, ...]:
    """The distinct tensors `module` (at `path`) holds that the model counts at a place outside it, by that place."""
    inside = path + "."
    out = {}
    for p in module.parameters():
        first = owners[id(p)][0]
        if path and not first.startswith(inside):
            out[first] = numel(p)
    return tuple(CountedElsewhere(at, count) for at, count in out.items())


def totals(model: nn.Module) -> Totals:
    params = list(model.parameters())          # distinct tensors, by identity
    buffers = list(model.buffers())
    trained = sum(numel(p) for p in params if p.requires_grad)
    frozen = sum(numel(p) for p in params if not p.requires_grad)
    return Totals(
        parameters=trained + frozen,
        trained=trained,
        frozen=frozen,
        buffers=sum(numel(b) for b in buffers),
        buffer_tensors=len(buffers),
    )


def tree_total(doc: ModelDoc) -> tuple[int, int]:
    """(trained, frozen) summed over the component tree, each counted row times its instances."""
    trained = frozen = 0
    for comp in doc.components:
        for row in comp.rows:
            if row.counted:
                if row.trained:
                    trained += row.count * comp.instances
                else:
                    frozen += row.count * comp.instances
    return trained, frozen


def check_invariant(doc: ModelDoc) -> None:
    """The tree's total equals torch's unique parameter count, with zero residual."""
    trained, frozen = tree_total(doc)
    t = doc.totals
    if (trained, frozen) != (t.trained, t.frozen):
        raise AtlasError(
            f"{doc.name}: parameter accounting does not reconcile: tree {trained + frozen} "
            f"(trained {trained}, frozen {frozen}) vs torch {t.parameters} "
            f"(trained {t.trained}, frozen {t.frozen}); residual {trained + frozen - t.parameters}"
        )
