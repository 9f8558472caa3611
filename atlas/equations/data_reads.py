"""What a forward() read from its data: the values its Python code took out of tensors.

A forward that branches on its data (`if mask.any():`, `flag = mask.any().item()`) can take, on the check's
random inputs, a path the record did not: Longformer's encoder reads whether any position attends globally from
a mask, and passes the answer to its layers as a plain bool. The values read (`bool()`, `.item()`, `.tolist()`,
`int()`, `float()` of a tensor) tell two runs' paths apart; with the same reads, two runs took the same path.
"""

from __future__ import annotations

from torch.overrides import TorchFunctionMode

_READS = frozenset({"__bool__", "item", "tolist", "__int__", "__float__", "__index__"})


class DataReads(TorchFunctionMode):
    """Within it, `self.values` collects (what was called, the value it gave) for each read of a tensor's data."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[tuple[str, object]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in _READS:
            self.values.append((name, out))
        return out
