"""What a SPEC loads to, and the call that builds its model: the constructor run under a device (the meta device: no
weight is allocated), with the values of the small tensors it computes from Python numbers kept
(atlas.load.buffer_values). Every form of SPEC (atlas.load.spec, atlas.load.library_specs) builds through here, and
the library a SPEC names (transformers, timm, torchvision) is imported here, or named with the extra it needs."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

import torch
from torch import nn

from atlas.errors import SpecError, where
from atlas.load import buffer_values

# The extra of model-atlas (pyproject.toml) that installs each library a SPEC may need.
EXTRAS = {"transformers": "transformers", "huggingface_hub": "transformers", "timm": "timm",
          "torchvision": "torchvision"}


@dataclass(frozen=True)
class Loaded:
    spec: str                           # as pages show it: no path of this machine
    model: nn.Module
    source_file: str | None             # the SPEC's own file (its module, its config.json): in the fingerprint
    checkpoint: str | None = None       # the checkpoint the SPEC brings (a save_pretrained folder's), reconciled


def construct(factory, device: str):
    """`factory()` under `device`, its small computed tensors' values kept on the nn.Module it returns. What it
    raises goes to the caller, which names the SPEC."""
    watch = buffer_values.Watch()
    with torch.device(device), watch:
        model = factory()
    if isinstance(model, nn.Module):
        watch.keep(model)
    return model


def library(name: str, spec: str):
    """The library a SPEC needs, imported: one missing names the extra that installs it, and one that does not
    import (built against another torch) gives its error, each in one line."""
    if importlib.util.find_spec(name) is None:
        raise SpecError(f"SPEC {spec!r} needs the {name} library: pip install 'model-atlas[{EXTRAS[name]}]'")
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise SpecError(f"SPEC {spec!r}: the {name} library is installed but does not import: {where(exc)}") from None


def built(spec: str, factory, device: str, call: str):
    """The library's model, built under `device`; what its constructor raises, in one line."""
    try:
        return construct(factory, device)
    except (Exception, SystemExit) as exc:
        raise SpecError(f"SPEC {spec!r}: {call} raised {where(exc)}") from None
