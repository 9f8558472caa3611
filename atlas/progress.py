"""Progress bars on a terminal, silence elsewhere (CI, pipes, the mkdocs plugin's log)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

_enabled = False


def enable(flag: bool | None = None) -> None:
    """Bars only when stderr is a terminal and CI is not set, unless told otherwise."""
    global _enabled
    _enabled = (sys.stderr.isatty() and not os.environ.get("CI")) if flag is None else flag


class _Null:
    def update(self, n: int = 1) -> None:
        pass


@contextmanager
def stage(name: str, total: int | None = None):
    if not _enabled:
        yield _Null()
        return
    from tqdm import tqdm
    bar = tqdm(total=total, desc=f"atlas: {name:<13}", unit=" components" if total else "", leave=False,
               file=sys.stderr, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def silenced():
    """No bars inside: the stages of a small run within a stage that has its own bar."""
    global _enabled
    was, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = was
