"""What a forward() decided from its data: the booleans and integers its Python code took out of tensors.

A forward that branches on its data (`if mask.any():`, `flag = mask.any().item()`) can take, on the check's
random inputs, a path the record did not: Longformer's encoder reads whether any position attends globally from
a mask, and passes the answer to its layers as a plain bool. The booleans and integers read (`bool()`,
`.item()`, `.tolist()`, `int()`, `torch.equal`, `x in t`) are its path; two runs with the same ones took the
same path. Floats read (a scale, a norm) decide no path: any input changes them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from torch.overrides import TorchFunctionMode

from atlas.resources import is_model_code

_READS = frozenset({"__bool__", "item", "tolist", "__int__", "__index__", "equal", "allclose",
                    "is_nonzero", "__contains__"})


class DataReads(TorchFunctionMode):
    """Within it, `self.values` collects (what was called, the value it gave) for each read of a tensor's data."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[tuple[str, object]] = []
        self.sites: list[tuple[str, str]] = []      # (what was called, "file.py:line" of the model's code reading)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in _READS:
            self.values.append((name, out))
            if _decides(out):
                self.sites.append((name, _site()))
        return out

    @property
    def path(self) -> list[tuple[str, object]]:
        """The reads that decide a path: booleans, integers, lists of them."""
        return [(name, value) for name, value in self.values if _decides(value)]


def _decides(value) -> bool:
    if isinstance(value, (bool, int)):
        return True
    return isinstance(value, list) and all(_decides(v) for v in value)


def _site() -> str:
    """The line of the model's code (outside torch and atlas's machinery) that read the data."""
    frame = sys._getframe(2)
    while frame is not None:
        if is_model_code(frame.f_code.co_filename):
            return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"
