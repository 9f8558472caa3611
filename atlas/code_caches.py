"""Caches in a model's own code (functools.lru_cache, as BEiT's relative position index has, or transformers'
wrapper around one) keep the tensors of the run that filled them: the record's fake tensors. A real forward that
reads one computes with a stale, meaningless tensor (BEiT's attention gave NaN at every value in the check). They
are cleared before each real forward of the check, so it computes its own."""

from __future__ import annotations

import sys

from torch import nn


def clear(module: nn.Module) -> None:
    """Empty every cache of the code that defines `module` and the modules inside it (torch's own excepted)."""
    for cache in _caches({type(m) for m in module.modules()}):
        cache.cache_clear()


def _caches(classes) -> list:
    found, seen = [], set()
    for cls in classes:
        if cls.__module__.split(".")[0] == "torch":
            continue
        code = sys.modules.get(cls.__module__)
        spaces = [vars(code)] if code is not None else []
        spaces += [vars(c) for c in cls.__mro__ if c.__module__ == cls.__module__]
        for space in spaces:
            for obj in list(space.values()):
                fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
                cells = getattr(fn, "__closure__", None) or ()
                for candidate in (fn, *(_content(c) for c in cells)):
                    if callable(getattr(candidate, "cache_clear", None)) and hasattr(candidate, "cache_info") \
                            and id(candidate) not in seen:
                        seen.add(id(candidate))
                        found.append(candidate)
    return found


def _content(cell):
    try:
        return cell.cell_contents
    except ValueError:              # a cell not filled yet
        return None
