"""SPECs that name where a library keeps a model, rather than code that builds it:

    path/to/config.json     transformers' classes build the model from the config (atlas.load.pretrained_folders)
    path/to/folder          a save_pretrained folder: its config.json, and its checkpoint reconciled with the code
    hf:<org>/<name>         such a folder in the local Hugging Face cache; nothing is ever downloaded
    timm:<name>             timm.create_model(name, pretrained=False)
    torchvision:<name>      torchvision.models.get_model(name, weights=None)

Each model is built on the meta device, as a factory SPEC is (atlas.load.meta_build). A library that is not
installed is named with the extra that installs it; one that is installed but does not import, with its error.
"""

from __future__ import annotations

from pathlib import Path

from atlas.errors import SpecError
from atlas.load import pretrained_folders
from atlas.load.meta_build import EXTRAS, Loaded, built, library

PREFIXES = ("hf:", "timm:", "torchvision:")


def claims(spec: str) -> bool:
    """Whether the SPEC is one of these forms: a library's prefix, or a path with no ':callable' (a folder, a .json
    file, or anything with a slash, so that a path that does not exist is named as such)."""
    if spec.startswith(PREFIXES):
        return True
    return bool(spec) and ":" not in spec and (spec.endswith(".json") or "/" in spec or Path(spec).is_dir())


def extra(spec: str) -> str | None:
    """The extra of model-atlas that installs the library a SPEC needs; None for a SPEC of the user's own code."""
    if not claims(spec):
        return None
    prefix = spec.partition(":")[0]
    return EXTRAS[prefix if prefix in ("timm", "torchvision") else "transformers"]


def load(spec: str, device: str = "meta") -> Loaded:
    prefix, _, name = spec.partition(":")
    if not spec.startswith(PREFIXES):
        return pretrained_folders.from_path(spec, device)
    if not name:
        raise SpecError(f"SPEC {spec!r} names no model after '{prefix}:'")
    if prefix == "hf":
        return pretrained_folders.from_hub_cache(spec, name, device)
    if prefix == "timm":
        return _timm(spec, name, device)
    return _torchvision(spec, name, device)


def _timm(spec: str, name: str, device: str) -> Loaded:
    timm = library("timm", spec)
    if not timm.is_model(name):
        raise SpecError(f"SPEC {spec!r}: timm has no model named {name!r} (timm.list_models() lists them)")
    model = built(spec, lambda: timm.create_model(name, pretrained=False), device, f"timm.create_model({name!r})")
    return Loaded(spec, model, None)


def _torchvision(spec: str, name: str, device: str) -> Loaded:
    torchvision = library("torchvision", spec)
    models = torchvision.models
    if name.lower() not in models.list_models():
        raise SpecError(f"SPEC {spec!r}: torchvision has no model named {name!r} "
                        "(torchvision.models.list_models() lists them)")
    model = built(spec, lambda: models.get_model(name, weights=None), device,
                  f"torchvision.models.get_model({name!r})")
    return Loaded(spec, model, None)
