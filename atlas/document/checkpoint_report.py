"""A checkpoint's tensors, read from its headers, reconciled with the code's tensors by name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mismatch:
    """A tensor that both the code and the checkpoint hold, with another shape or dtype."""

    name: str                       # the code's name, e.g. "h.0.attn.c_attn.weight"
    code_shape: tuple[int, ...]
    checkpoint_shape: tuple[int, ...]
    code_dtype: str                 # torch's name without "torch.", e.g. "float32"
    checkpoint_dtype: str


@dataclass(frozen=True)
class TiedCopy:
    """A tied tensor's copy that the checkpoint leaves out, as save_pretrained does: it is saved once."""

    name: str                       # the code's name of the absent copy, e.g. "lm_head.weight"
    saved_as: str                   # the code's name of the same tensor, which the checkpoint holds


@dataclass(frozen=True)
class DtypeCount:
    """The checkpoint's tensors of one dtype."""

    dtype: str
    tensors: int
    parameters: int                 # elements
    bytes: int                      # bytes of tensor data on disk


@dataclass(frozen=True)
class ComponentCheck:
    """The code tensors at one component (all instances, children included), against the checkpoint."""

    id: str                         # the component's id
    tensors: int                    # the code's tensors: parameters (every tied copy) and persistent buffers
    matched: int                    # same name, shape and dtype in the checkpoint
    tied: int                       # absent copies of tied tensors that the checkpoint holds under another name
    unexpected: int                 # checkpoint tensors named under this component that the code does not hold
    parameters: int                 # elements of the distinct parameters that matched, directly or by their tie


@dataclass(frozen=True)
class CheckpointReport:
    """A checkpoint's tensors, read from its headers, reconciled with the code's tensors by name."""

    path: str                       # as given, relative to the working folder where it lies inside it
    format: str                     # "safetensors", "safetensors-sharded", "torch", "torch-sharded"
    file: str                       # the file read first: the .safetensors file, the index, the .bin
    shards: int                     # files holding tensor data
    sha256: str
    hashed: str                     # what the hash covers: "header", "index" or "listing"
    tensors: int
    parameters: int                 # elements of every tensor in the checkpoint
    bytes: int                      # bytes of tensor data on disk
    matched: int
    missing: tuple[str, ...]        # code names with no tensor in the checkpoint
    unexpected: tuple[str, ...]     # checkpoint names with no tensor in the code, as the checkpoint spells them
    mismatched: tuple[Mismatch, ...]
    tied: tuple[TiedCopy, ...]
    stripped: tuple[str, ...] = ()  # prefixes taken off the checkpoint's names, in the order applied
    added: str | None = None        # a prefix put before the checkpoint's names
    dtypes: tuple[DtypeCount, ...] = ()
    components: tuple[ComponentCheck, ...] = ()

    @property
    def problems(self) -> int:
        return len(self.missing) + len(self.unexpected) + len(self.mismatched)

    def code_name(self, name: str) -> str:
        """A checkpoint name as the code spells it, under this report's mapping."""
        return map_name(name, self.stripped, self.added)

    def component(self, cid: str) -> ComponentCheck | None:
        return next((c for c in self.components if c.id == cid), None)


WRAPPER = "_orig_mod."              # torch.compile's wrapper; it may sit at any depth


def map_name(name: str, stripped: tuple[str, ...], added: str | None) -> str:
    """Take the prefixes off a checkpoint name in order (torch.compile's `_orig_mod.` at any depth), then add one."""
    for prefix in stripped:
        if prefix == WRAPPER:
            name = ".".join(part for part in name.split(".") if part != WRAPPER[:-1])
        elif name.startswith(prefix):
            name = name[len(prefix):]
    if added and not name.startswith(added):
        name = added + name
    return name
