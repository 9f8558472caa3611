"""Where a component's code lives, pinned at a revision, and the claims tied to its lines."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Excerpt:
    start: int                      # first line, 1-based
    end: int                        # last line, inclusive
    text: str


@dataclass(frozen=True)
class Source:
    """Where a component's class is written, pinned at a revision."""

    file: str                       # "atlas/zoo/ldlm.py", "torch/nn/modules/normalization.py"
    origin: str                     # "git" (a checkout), "package" (an installed distribution), "file"
    revision: str | None            # short commit, or the package version
    label: str                      # how pages name the revision
    dirty: bool = False             # the file has uncommitted changes
    url: str | None = None          # the file at that revision, without a line anchor
    excerpts: tuple[Excerpt, ...] = ()
    date: str | None = None         # "git": the commit's date, "2026-11-30" (a package's version has none it states)


@dataclass(frozen=True)
class Claim:
    """A sentence the atlas established, the lines it comes from, and the check behind it."""

    text: str
    check: str                      # "accounting", "equations verified", "shape probes", "structure"
    file: str
    start: int
    end: int
    excerpt: str
    source: Source | None = None    # the file's own source, where it is not the component's (an inherited __init__)
