"""Reconcile a checkpoint's tensors with the code's, by name, from the headers alone.

The code's tensors are its state dict on the meta device: every parameter under each name that holds it
(a tied tensor under each of its names) and the persistent buffers; non-persistent buffers are not saved,
so they are not expected. Each code tensor is then one of:
- matched: the checkpoint holds it under its name (after the name mapping), with its shape and dtype;
- mismatched: the checkpoint holds that name with another shape or dtype;
- a tied copy: absent, but the same tensor is in the checkpoint under another of its names, as
  `save_pretrained` and safetensors' `save_model` save a tied tensor once;
- missing.
A checkpoint tensor that no code tensor takes is unexpected.

The name mapping: torch.compile's `_orig_mod.` (at any depth) and DDP's leading `module.` come off the
checkpoint's names, and a leading `model.` or `transformer.` comes off (or goes on) when that makes more
names match. Of all these mappings the one that matches the most names wins; ties go to the simplest.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import torch
from torch import nn

from atlas.document import (
    WRAPPER,
    CheckpointReport,
    ComponentCheck,
    DtypeCount,
    Mismatch,
    ModelDoc,
    TiedCopy,
    map_name,
)
from atlas.errors import AtlasError, where
from atlas.extract import accounting
from atlas.load.checkpoint_listing import Listing, SavedTensor

log = logging.getLogger("atlas")

DDP = "module."
BASE_PREFIXES = ("model.", "transformer.")


@dataclass(frozen=True)
class CodeTensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    parameter: bool             # False for a persistent buffer
    key: int                    # the tensor's identity: tied names share it
    numel: int


def code_tensors(model: nn.Module) -> list[CodeTensor]:
    """The tensors a checkpoint of this model holds, in state-dict order."""
    try:
        state = model.state_dict(keep_vars=True)
    except Exception as exc:  # a module's own state-dict hook failed on the meta device
        raise AtlasError(f"cannot list the model's state dict to reconcile a checkpoint: {where(exc)}") from None
    parameters = {id(p) for p in model.parameters()}
    return [CodeTensor(name, accounting.shape_of(t), str(t.dtype).removeprefix("torch."), id(t) in parameters,
                       id(t), accounting.numel(t))
            for name, t in state.items() if isinstance(t, torch.Tensor)]     # not a module's _extra_state


def mappings(saved_names: list[str]) -> list[tuple[tuple[str, ...], str | None]]:
    """Every candidate (prefixes stripped, prefix added), simplest first."""
    wrappers = tuple(p for p in (WRAPPER, DDP)
                     if any(n.startswith(p) or (p == WRAPPER and "." + p in n) for n in saved_names))
    out: list[tuple[tuple[str, ...], str | None]] = []
    for wrap in ((), wrappers) if wrappers else ((),):
        out.append((wrap, None))
        for prefix in BASE_PREFIXES:
            out.append((wrap + (prefix,), None))
            out.append((wrap, prefix))
    return out


def choose_mapping(saved_names: list[str], code_names: set[str]) -> tuple[tuple[str, ...], str | None]:
    """The mapping under which the most checkpoint names are code names; the first (simplest) among equals."""
    best, best_hits = ((), None), -1
    for stripped, added in mappings(saved_names):
        hits = sum(1 for n in saved_names if map_name(n, stripped, added) in code_names)
        if hits > best_hits:
            best, best_hits = (stripped, added), hits
    stripped, added = best
    used, names = [], list(saved_names)
    for prefix in stripped:                         # say only what was taken off some name
        after = [map_name(n, (prefix,), None) for n in names]
        if after != names:
            used.append(prefix)
        names = after
    return tuple(used), added


def reconcile(model: nn.Module, doc: ModelDoc, listing: Listing) -> CheckpointReport:
    code = code_tensors(model)
    by_name = {t.name: t for t in code}
    stripped, added = choose_mapping([t.name for t in listing.tensors], set(by_name))
    saved: dict[str, SavedTensor] = {}
    unexpected: list[SavedTensor] = []
    for t in listing.tensors:
        mapped = map_name(t.name, stripped, added)
        if mapped in by_name and mapped not in saved:
            saved[mapped] = t
        else:
            unexpected.append(t)
    status: dict[str, str] = {}
    mismatched: list[Mismatch] = []
    for t in code:
        s = saved.get(t.name)
        if s is None:
            continue
        if (s.shape, s.dtype) == (t.shape, t.dtype):
            status[t.name] = "matched"
        else:
            status[t.name] = "mismatched"
            mismatched.append(Mismatch(t.name, t.shape, s.shape, t.dtype, s.dtype))
    present = {}                                    # tensor identity -> the first of its names the checkpoint holds
    for t in code:
        if t.name in saved:
            present.setdefault(t.key, t.name)
    missing, tied = [], []
    for t in code:
        if t.name in saved:
            continue
        if t.key in present:
            status[t.name] = "tied"
            tied.append(TiedCopy(t.name, present[t.key]))
        else:
            status[t.name] = "missing"
            missing.append(t.name)
    report = CheckpointReport(
        path=listing.path, format=listing.format, file=listing.file, shards=listing.shards,
        sha256=listing.sha256, hashed=listing.hashed,
        tensors=len(listing.tensors), parameters=sum(t.numel for t in listing.tensors),
        bytes=sum(t.nbytes for t in listing.tensors),
        matched=sum(1 for s in status.values() if s == "matched"),
        missing=tuple(missing), unexpected=tuple(t.name for t in unexpected), mismatched=tuple(mismatched),
        tied=tuple(tied), stripped=stripped, added=added, dtypes=dtype_counts(listing.tensors),
    )
    report = replace(report, components=component_checks(doc, code, status, report, unexpected))
    log.info("checkpoint %s: %d matched, %d tied, %d missing, %d unexpected, %d mismatched", listing.path,
             report.matched, len(tied), len(missing), len(unexpected), len(mismatched))
    return report


def dtype_counts(tensors) -> tuple[DtypeCount, ...]:
    counts: dict[str, list[int]] = {}
    for t in tensors:
        c = counts.setdefault(t.dtype, [0, 0, 0])
        c[0] += 1
        c[1] += t.numel
        c[2] += t.nbytes
    return tuple(DtypeCount(d, *counts[d]) for d in sorted(counts))


def component_checks(doc: ModelDoc, code: list[CodeTensor], status: dict[str, str], report: CheckpointReport,
                     unexpected: list[SavedTensor]) -> tuple[ComponentCheck, ...]:
    """Each component's tensors (all instances, children included) and what became of them."""
    at = doc.paths
    ids = [c.id for c in doc.components]
    tally = {cid: [0, 0, 0, 0] for cid in ids}               # tensors, matched, tied, unexpected
    params: dict[str, dict[int, int]] = {cid: {} for cid in ids}

    def holders(name: str) -> list[str]:
        """The components whose module paths are prefixes of a tensor name: the model and down."""
        parts = name.split(".")
        return [at[p] for p in ("", *(".".join(parts[:i]) for i in range(1, len(parts)))) if p in at]

    for t in code:
        for cid in holders(t.name):
            row = tally[cid]
            row[0] += 1
            if status[t.name] == "matched":
                row[1] += 1
            elif status[t.name] == "tied":
                row[2] += 1
            if t.parameter and status[t.name] in ("matched", "tied"):
                params[cid][t.key] = t.numel
    for t in unexpected:
        for cid in holders(report.code_name(t.name)):
            tally[cid][3] += 1
    return tuple(ComponentCheck(cid, *tally[cid], sum(params[cid].values())) for cid in ids)
