"""A run that failed for want of an input: the optional forward() parameters to add, those the error or its line
of the model's code names first, then the usual ones; and whether an error is a dtype's."""

from __future__ import annotations

import logging
import re

from torch import nn

from atlas.errors import site_of
from atlas.extract.discover.conventions import USUAL_OPTIONAL
from atlas.extract.discover.discovery import Discovery, discover
from atlas.load.forward_calls import parameters

log = logging.getLogger("atlas")

_DTYPE_ERROR = re.compile(r"dtype|BF16|bfloat16|Half|float16|expected scalar type|same type", re.IGNORECASE)


def dtype_error(error: str | None) -> bool:
    return bool(error) and bool(_DTYPE_ERROR.search(error))


def escalate(model: nn.Module, discovery: Discovery, error: str | None, attempt):
    """No discovered choice ran: add optional forward() parameters one at a time, those the error or its line
    names first, then the usual names (a CLIP model needs `pixel_values` beside `input_ids`; DeBERTa on meta runs
    once `attention_mask` is given), then those that default to None, in the signature's order (a DiT's `timestep`,
    then its `class_labels`: its code reads both without testing for None). One that took the run further, to a
    line that names another parameter or to another line of the code, stays for the next tries: a Decision
    Transformer's states, actions, returns and timesteps are all None by default, and its code stops at each in
    turn. `attempt(discovery)` runs a discovery's choices: (ran, its error, result). Returns (result, discovery) of
    the first that ran, or None."""
    also, queue, seen = discovery.also, optional_extras(model, error, discovery), set()
    while queue:
        extra = queue.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        again = discover(model, also=also + (extra,))
        if again.unresolved or extra not in {f.name for f in again.inputs}:
            continue
        ran, later_error, result = attempt(again)
        if ran:
            return result, again
        further = [p for p in optional_extras(model, later_error, again, usual=False) if p not in seen]
        if further or _moved_on(error, later_error):          # those skipped before may find their layer now
            also, error, seen = also + (extra,), later_error, set()
            queue = list(dict.fromkeys(further + optional_extras(model, later_error, again)))
    return None


def optional_extras(model: nn.Module, error: str | None, discovery: Discovery, usual: bool = True,
                    unset: int = 8) -> list[str]:
    """Optional forward() parameters to add: those the error or its line of the model's code names, then the
    usual names, then (at most `unset` of) those that default to None."""
    params = parameters(model)
    have = {f.name for f in discovery.inputs}
    said = f"{error} {_error_line(model, error)}" if error else ""
    named = [p for p in params if re.search(rf"\b{re.escape(p)}\b", said)]
    usual_names = [p for p in USUAL_OPTIONAL if usual and p in params]
    none = [name for name, p in params.items() if usual and p.default is None
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)][:unset]
    return [p for p in dict.fromkeys(named + usual_names + none) if p not in have]


def _moved_on(before: str | None, after: str | None) -> bool:
    """Whether a run stopped at another line of the code than the one before it."""
    return bool(before and after) and site_of(before) != site_of(after)


def _error_line(model: nn.Module, error: str) -> str:
    """The line of the model's code an error names (`... (modeling_x.py:618)`, errors.where), found among the
    source files of the model's classes; "" when none has that name."""
    import inspect
    import linecache
    site = site_of(error)
    if site is None:
        return ""
    for cls in dict.fromkeys(type(m) for m in model.modules()):
        try:
            path = inspect.getsourcefile(cls)
        except (TypeError, OSError):
            continue
        if path and path.rsplit("/", 1)[-1] == site[0]:
            return linecache.getline(path, site[1])
    return ""
