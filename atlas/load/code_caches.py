"""Caches in a model's own code (functools.lru_cache, as BEiT's relative position index has, or transformers'
wrapper around one) keep the tensors of the run that filled them: the record's fake tensors. A real forward that
reads one computes with a stale, meaningless tensor (BEiT's attention would give NaN at every value in the check). They
are cleared before each forward the atlas runs, so it computes its own.

On symbolic sizes a cache cannot even be asked: its key holds a size, and a symbolic size has no hash ("unhashable
type: non-nested SymInt", RT-DETR's sine table). While `uncached` is open, the model's code calls the functions
themselves, as a cache that never hits would."""

from __future__ import annotations

import contextlib
import sys

from torch import nn


def clear(module: nn.Module) -> None:
    """Empty every cache of the code that defines `module` and the modules inside it (torch's own excepted)."""
    emptied = set()
    for _, _, _, cache in _bindings({type(m) for m in module.modules()}):
        if id(cache) not in emptied:
            emptied.add(id(cache))
            cache.cache_clear()


@contextlib.contextmanager
def uncached(module: nn.Module):
    """The model's cached functions called through, not their caches, while open (see the module's docstring)."""
    undo = []
    for owner, name, obj, cache in _bindings({type(m) for m in module.modules()}):
        plain = getattr(cache, "__wrapped__", None)
        if plain is None:                   # a cache that does not say what it wraps stays, emptied before each run
            continue
        if name is None:                    # a closure's cell: transformers' wrapper around a cached function
            undo.append((owner, None, obj))
            owner.cell_contents = plain
            continue
        replacement = type(obj)(plain) if isinstance(obj, (staticmethod, classmethod)) else plain
        undo.append((owner, name, obj))
        if isinstance(owner, dict):         # a module's globals
            owner[name] = replacement
        else:                               # a class
            setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, before in reversed(undo):
            if name is None:
                owner.cell_contents = before
            elif isinstance(owner, dict):
                owner[name] = before
            else:
                setattr(owner, name, before)


def _bindings(classes) -> list:
    """(a module's globals, a class or a closure's cell; the name bound, or None for a cell; the object bound; the
    cache) for every cache the classes' own code binds, by name or inside a function's closure."""
    out, seen = [], set()
    for cls in classes:
        if cls.__module__.split(".")[0] == "torch":
            continue
        code = sys.modules.get(cls.__module__)
        owners = [(vars(code), vars(code))] if code is not None else []
        owners += [(c, c.__dict__) for c in cls.__mro__ if c.__module__ == cls.__module__]
        for owner, space in owners:
            for name, obj in list(space.items()):
                fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
                if _is_cache(fn) and (id(owner), name) not in seen:
                    seen.add((id(owner), name))
                    out.append((owner, name, obj, fn))
                for cell in getattr(fn, "__closure__", None) or ():
                    inner = _content(cell)
                    if _is_cache(inner) and id(cell) not in seen:
                        seen.add(id(cell))
                        out.append((cell, None, inner, inner))
    return out


def _is_cache(obj) -> bool:
    return callable(getattr(obj, "cache_clear", None)) and hasattr(obj, "cache_info")


def _content(cell):
    try:
        return cell.cell_contents
    except ValueError:              # a cell not filled yet
        return None
