"""The options of one run of the atlas: the CLI's flags, or the mkdocs plugin's config. Every stage reads the part
it needs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from atlas.load.memory import DEFAULT_BUDGET_BYTES


@dataclass(frozen=True)
class Settings:
    inputs: tuple[str, ...] | None = None
    budget_bytes: int = DEFAULT_BUDGET_BYTES
    site_url: str | None = None         # permalinks are absolute when the site's URL is known
    repo_url: str | None = None         # links to model code at its commit
    site_name: str = "Model Atlas"
    verify: bool = True                 # run every component's equations against forward()
    cost: bool = True                   # FLOPs and activation memory (describe --no-cost leaves them out)
    fixed_dims: tuple = ()              # (symbol, size) pairs from --dim T=64
    dim_bounds: tuple = ()              # (symbol, low, high) from --dim T>=400
    checkpoint: str | None = None       # a checkpoint to reconcile with the code, read from its headers only
    base_dir: str | None = None         # where a relative checkpoint path starts (default: the working folder)

    @property
    def bounds(self) -> dict:
        """{symbol: (low, high)} from --dim's bounds."""
        return {s: (lo, hi) for s, lo, hi in self.dim_bounds}


def mkdocs_settings(path: str | Path = "mkdocs.yml") -> dict:
    """site_url, repo_url and site_name from an mkdocs.yml, read as plain `key: value` lines."""
    out = {}
    file = Path(path)
    if file.is_file():
        for key in ("site_url", "repo_url", "site_name"):
            m = re.search(rf"^{key}:\s*(\S.*?)\s*$", file.read_text(), re.M)
            if m:
                out[key] = m.group(1).strip("'\"")
    return out
