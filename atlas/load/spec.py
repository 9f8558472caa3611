"""Load a model from a SPEC: "package.module:callable" or "path/to/file.py:callable"; or where a library keeps
it: a config.json or a save_pretrained folder, hf:<org>/<name>, timm:<name>, torchvision:<name>
(atlas.load.library_specs).

The callable is called under the meta device, so constructors allocate no weights.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

import torch
from torch import nn

from atlas.errors import SpecError
from atlas.load import library_specs
from atlas.load.meta_build import Loaded, construct
from atlas.resources import is_machinery

DEFAULT_SPEC = "atlas.zoo.ldlm:ldlm"


def parse(spec: str) -> tuple[str, str]:
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr or not attr.replace(".", "_").isidentifier():
        raise SpecError(f"bad SPEC {spec!r}: expected 'package.module:callable', 'path/to/file.py:callable', a "
                        "config.json or a folder holding one, 'hf:<org>/<name>', 'timm:<name>' or 'torchvision:<name>'")
    return target, attr


def _import(target: str, spec: str):
    try:
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise SpecError(f"SPEC {spec!r}: no such file {target}")
            name = _module_name(path)
            mod_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[name] = module
            mod_spec.loader.exec_module(module)
            return module
        return importlib.import_module(target)
    except SpecError:
        raise
    except (Exception, SystemExit) as exc:  # the user's module failed while importing (sys.exit() included)
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name == target.partition(".")[0] and \
                Path(target.replace(".", "/") + ".py").is_file():
            hint = f"; for the file, write '{target.replace('.', '/')}.py:{spec.rpartition(':')[2]}'"
        raise SpecError(f"SPEC {spec!r}: cannot import {target}: {_last_frame(exc)}{hint}") from None


def _module_name(path: Path) -> str:
    """The file's stem, so class names read `models.Block` on every machine, not a path."""
    name = path.stem if path.stem.isidentifier() else "user_model"
    existing = sys.modules.get(name)
    if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() != path.resolve():
        name = f"{name}__atlas"
    return name


def _last_frame(exc: BaseException) -> str:
    """`Type: message (file.py:line)`: the line a syntax error is on, else the last frame outside Python's import
    machinery."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{type(exc).__name__}: {exc.msg} ({Path(exc.filename).name}:{exc.lineno})"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen ")
              and "importlib" not in Path(f.filename).parts and not is_machinery(f.filename)]
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def load(spec: str, device: str = "meta") -> Loaded:
    """Import the SPEC's module, call its factory under `device`, and check it returns an nn.Module; a SPEC naming
    where a library keeps the model is built by that library (atlas.load.library_specs): `hf:org/name` holds a
    colon too, so those are told apart first."""
    if library_specs.claims(spec):
        return library_specs.load(spec, device)
    target, attr = parse(spec)
    with _beside(target):
        return _load(spec, target, attr, device)


@contextlib.contextmanager
def _beside(target: str):
    """A file's folder first on sys.path while it is imported and its factory runs, as `python path/to/file.py`
    has it: `from models import Block` in a SPEC file finds models.py beside it, from any working folder."""
    folder = str(Path(target).resolve().parent) if target.endswith(".py") else None
    if folder is None or folder in sys.path:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        if folder in sys.path:
            sys.path.remove(folder)


def _load(spec: str, target: str, attr: str, device: str) -> Loaded:
    module = _import(target, spec)
    factory = module
    for part in attr.split("."):
        if not hasattr(factory, part):
            raise SpecError(f"SPEC {spec!r}: {target} has no attribute {attr!r}")
        factory = getattr(factory, part)
    if isinstance(factory, nn.Module):
        model = factory
    elif callable(factory):
        try:
            model = construct(factory, device)
        except (Exception, SystemExit) as exc:
            raise SpecError(f"SPEC {spec!r}: {attr}() raised {_last_frame(exc)}") from None
    else:
        raise SpecError(f"SPEC {spec!r}: {attr} is a {type(factory).__name__}, not a callable")
    if not isinstance(model, nn.Module):
        raise SpecError(f"SPEC {spec!r}: {attr}() returned {type(model).__name__}, not a torch.nn.Module")
    if isinstance(model, torch.jit.ScriptModule):       # no hooks, no submodules by path: nothing to record
        raise SpecError(f"SPEC {spec!r}: {attr}() returned a TorchScript module (torch.jit.script), whose forward "
                        "runs in TorchScript's interpreter, out of the atlas's sight; give the Python module it was "
                        "scripted from (a TorchScript child of a Python model is documented as an opaque leaf)")
    return Loaded(spec=display_spec(target, attr), model=model, source_file=getattr(module, "__file__", None))


def display_spec(target: str, attr: str) -> str:
    """The SPEC as pages show it: a file path relative to the working folder, else its name alone,
    so that no page depends on where the machine keeps the code."""
    if not target.endswith(".py"):
        return f"{target}:{attr}"
    path = Path(target).resolve()
    try:
        shown = path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        shown = path.name
    return f"{shown}:{attr}"
