"""A model built from its transformers config: a config.json alone (the code, no checkpoint), a folder that
save_pretrained wrote (its checkpoint reconciled with the code), or such a folder in the local Hugging Face cache
(`hf:<org>/<name>`: looked up on the disk only, never downloaded).

The class the config names in `architectures` builds the model where transformers has it (GPT2LMHeadModel, with its
head), else AutoModel; in the config's dtype, as from_pretrained loads the weights, so a bfloat16 checkpoint meets
bfloat16 code.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path

import torch

from atlas.errors import AtlasError, SpecError, where
from atlas.load import checkpoint_listing
from atlas.load.meta_build import Loaded, built, library

log = logging.getLogger("atlas")
CONFIG = "config.json"


def from_path(spec: str, device: str) -> Loaded:
    """A config.json, or a folder holding one; the folder's checkpoint, where it holds one, comes along."""
    path = Path(spec).expanduser()
    if path.is_dir():
        config, folder = path / CONFIG, path
        if not config.is_file():
            raise SpecError(f"SPEC {spec!r}: the folder holds no {CONFIG}")
    elif path.is_file() and path.suffix == ".json":
        config, folder = path, None
    elif path.exists():
        raise SpecError(f"SPEC {spec!r}: neither a config.json nor a folder holding one (a Python file is named with "
                        "its factory: 'path/to/file.py:callable')")
    else:
        raise SpecError(f"SPEC {spec!r}: no such file or folder")
    model = from_config(spec, config, device)
    checkpoint = folder is not None and checkpoint_in(folder, spec)
    return Loaded(shown(path), model, str(config.absolute()), str(folder.absolute()) if checkpoint else None)


def from_hub_cache(spec: str, repo: str, device: str) -> Loaded:
    """The snapshot of `repo` that the local cache's refs/main names (HF_HUB_CACHE, else HF_HOME/hub), as a
    save_pretrained folder; a repo the cache does not hold is an error, never a download. transformers is
    imported only for a repo the cache holds."""
    hub = library("huggingface_hub", spec)
    from huggingface_hub import constants
    from huggingface_hub.utils import HFValidationError, validate_repo_id
    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        raise SpecError(f"SPEC {spec!r}: not a Hugging Face repo id 'org/name': {' '.join(str(exc).split())}") from None
    cache = Path(constants.HF_HUB_CACHE)
    found = hub.try_to_load_from_cache(repo, CONFIG, cache_dir=cache)
    if not isinstance(found, str):
        held = (cache / f"models--{repo.replace('/', '--')}").is_dir()
        what = f"holds no config.json of {repo} at refs/main" if held else f"does not hold {repo}"
        raise SpecError(f"SPEC {spec!r}: the local Hugging Face cache {cache} {what}; the atlas never downloads: "
                        f"fetch it first (hf download {repo})")
    config = Path(found)
    model = from_config(spec, config, device)
    checkpoint = checkpoint_in(config.parent, spec)
    return Loaded(spec, model, str(config), str(checkpoint) if checkpoint else None)


def from_config(spec: str, config_file: Path, device: str):
    transformers = library("transformers", spec)
    try:
        config = transformers.AutoConfig.from_pretrained(str(config_file), local_files_only=True,
                                                         trust_remote_code=False)
    except Exception as exc:
        own = _own_code(config_file)
        if own:
            raise SpecError(f"SPEC {spec!r}: {config_file.name} names code of its own ({own}), which the atlas does "
                            "not run from a config: give a 'path/to/file.py:callable' SPEC that builds the model "
                            "with that code") from None
        raise SpecError(f"SPEC {spec!r}: transformers cannot read {config_file.name}: {where(exc)}") from None
    factory, call = _factory(spec, transformers, config)
    with _default_dtype(config):
        return built(spec, factory, device, call)


def _factory(spec: str, transformers, config) -> tuple:
    """(the call that builds the model, its name for messages): the first class of `architectures` that
    transformers has, else AutoModel."""
    for name in getattr(config, "architectures", None) or ():
        try:
            cls = getattr(transformers, name, None)
            usable = isinstance(cls, type) and hasattr(cls, "_from_config")
        except Exception as exc:  # a class whose backend is missing raises on use (transformers' dummy objects)
            raise SpecError(f"SPEC {spec!r}: transformers cannot provide {name}: {where(exc)}") from None
        if usable:
            return (lambda: cls._from_config(config)), f"transformers.{name}"
    return (lambda: transformers.AutoModel.from_config(config, trust_remote_code=False)), \
        "transformers.AutoModel.from_config"


def _own_code(config_file: Path) -> str:
    """The classes a config's `auto_map` names in its repository's own code (remote code), joined; "" for none."""
    try:
        auto_map = json.loads(config_file.read_text()).get("auto_map")
    except (OSError, ValueError, AttributeError):
        return ""
    return ", ".join(sorted({str(v) for v in auto_map.values()})) if isinstance(auto_map, dict) else ""


@contextlib.contextmanager
def _default_dtype(config):
    """torch's default dtype set to the config's floating dtype while the model is built (transformers before 4.56
    does not set it itself)."""
    dtype = vars(config).get("dtype") or vars(config).get("torch_dtype")
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        yield
        return
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def checkpoint_in(folder: Path, spec: str) -> Path | None:
    """The checkpoint save_pretrained wrote in the folder (atlas.load.checkpoint_listing.locate); None for a folder
    that holds the config alone, or an index whose shards are not all there (a download cut short: said so)."""
    try:
        found = checkpoint_listing.locate(str(folder))
    except AtlasError:
        return None
    if found.name.endswith(".index.json"):
        try:
            shards = set(json.loads(found.read_text())["weight_map"].values())
            absent = sorted(s for s in shards if not (folder / s).is_file())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return found            # checkpoint_listing.read names what is wrong with it
        if absent:
            log.warning("%s: %s names %d shards, %d of them absent (%s first): the checkpoint is not reconciled",
                        spec, found.name, len(shards), len(absent), absent[0])
            return None
    return found


def shown(path: Path) -> str:
    """The path as pages show it: relative to the working folder where it lies inside it, else its name."""
    text = checkpoint_listing.display_path(path, str(path))
    return path.resolve().name if text == "." else text
