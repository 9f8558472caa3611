"""One module object registered at several paths (`self.shared = m; self.block.inner = m`, or TCN's `self.conv1`
that is also `self.net[0]`): documented once, at the path its parent calls it through, as the record names it
(atlas.extract.trace.recorder: a call is named by the parent that makes it). The other registrations are left out
of the component tree, their parameters counted at the path kept."""

from __future__ import annotations

from torch import nn


def registrations(model: nn.Module) -> list[list[str]]:
    """The paths of each module registered at two paths or more, in module order."""
    paths: dict[int, list[str]] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        paths.setdefault(id(module), []).append(path)
    return [p for p in paths.values() if len(p) > 1]


def uncalled(model: nn.Module, trace) -> frozenset[str]:
    """The registrations of a twice-registered module that the record never called it through, where it called it
    through another: those a page would document a second time. None of a list's entries that all run (one layer
    shared by every position of a ModuleList) is left out."""
    if trace is None or trace.root is None:
        return frozenset()
    groups = registrations(model)
    if not groups:
        return frozenset()
    called = trace.first_calls()
    out = set()
    for paths in groups:
        if any(p in called for p in paths):
            out.update(p for p in paths if p not in called)
    return frozenset(p for p in out if not any(p.startswith(f"{q}.") for q in out))   # a subtree goes with its top


def left_out(path: str, skipped: frozenset[str]) -> bool:
    """Whether `path` is one of `skipped` or below one."""
    return any(path == s or path.startswith(f"{s}.") for s in skipped)
