"""Where a source file is published, and at which revision: a path relative to its git checkout or to
site-packages, the commit or the package version, and a link to the file there. Nothing depends on where a machine
keeps its files, nor on the clock."""

from __future__ import annotations

import functools
import importlib.metadata
import re
import subprocess
from pathlib import Path

import torch

from atlas.document import Source
from atlas.i18n import msg

TORCH_REPO = "https://github.com/pytorch/pytorch/blob"


# Where an installed library's files are published at a release: the repository, the tag of a version, and the
# folder its package sits in there. A library not listed is named by its version, without a link.
PACKAGE_SOURCES = {
    "transformers": ("https://github.com/huggingface/transformers", "v{version}", "src/"),
    "diffusers": ("https://github.com/huggingface/diffusers", "v{version}", "src/"),
    "timm": ("https://github.com/huggingface/pytorch-image-models", "v{version}", ""),
}


def _git(directory: str, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", directory, *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _site_packages(path: Path) -> Path | None:
    for parent in path.parents:
        if parent.name in ("site-packages", "dist-packages"):
            return parent
    return None


def locate(file: str, repo_url: str | None) -> Source:
    """The display path and revision of a source file, as the file and its checkout are now (a pass asks once per
    file: a process that builds again, `mkdocs serve`, must see a commit made in between)."""
    path = Path(file).resolve()
    packages = _site_packages(path)
    if packages is not None:
        rel = path.relative_to(packages).as_posix()
        top = rel.split("/", 1)[0]
        if top == "torch":
            git = torch.version.git_version
            return Source(rel, "package", git[:12], f"torch {torch.__version__} ({git[:12]})",
                          url=f"{TORCH_REPO}/{git}/{rel}")
        dist = _distribution_of(top)
        try:
            version = metadata_field(importlib.metadata.distribution(dist), "Version")
        except importlib.metadata.PackageNotFoundError:
            version = None
        known = PACKAGE_SOURCES.get(dist)
        url = (f"{known[0]}/blob/{known[1].format(version=version)}/{known[2]}{rel}"
               if known and version else None)
        return Source(rel, "package", version, f"{dist} {version}" if version else dist, url=url)
    top = _git(str(path.parent), "rev-parse", "--show-toplevel")
    if top:
        rel = path.relative_to(Path(top).resolve()).as_posix()
        commit, _, date = (_git(top, "log", "-1", "--format=%H %cd", "--date=short", "--", rel) or "").partition(" ")
        dirty = bool(_git(top, "status", "--porcelain", "--", rel))
        if commit:
            label = (msg("commit %(commit)s, with uncommitted changes", commit=commit[:12]) if dirty
                     else msg("commit %(commit)s", commit=commit[:12]))
            url = f"{repo_url.rstrip('/')}/blob/{commit}/{rel}" if repo_url else None
            return Source(rel, "git", commit[:12], label, dirty, url, date=date or None)
        return Source(rel, "git", None, msg("not yet committed"), True)
    return Source(path.name, "file", None, msg("not under version control"))


@functools.lru_cache(maxsize=None)
def _distribution_of(top: str) -> str:
    """The distribution that installs the import package `top`: the one of that name when its file list has it,
    else the first whose top_level.txt names it, else the first whose file list has it. Reading every installed
    distribution's file list up front would cost megabytes of peak memory for the one or two packages a model
    comes from. The one of that name is taken when the package sits where it installs files: transformers' file
    list has 3,000 lines (3.5 MB as path objects, 1.7 MB as text) for that one answer."""
    installed = re.compile(rf"^\"?{re.escape(top)}(/|\.py\b)", re.M)

    def installs(dist) -> bool:
        record = dist.read_text("RECORD")      # a wheel's: one "path,hash,size" line per file
        if record is not None:
            return installed.search(record) is not None
        return any(f.parts and f.parts[0] in (top, f"{top}.py") for f in dist.files or ())
    try:
        dist = importlib.metadata.distribution(top)
        here = Path(dist.locate_file(""))
        if (here / top).is_dir() or (here / f"{top}.py").is_file() or installs(dist):
            return metadata_field(dist, "Name") or top
    except importlib.metadata.PackageNotFoundError:
        pass
    dists = list(importlib.metadata.distributions())
    for dist in dists:
        if top in (dist.read_text("top_level.txt") or "").split():
            return metadata_field(dist, "Name") or top
    return next((metadata_field(dist, "Name") or top for dist in dists if installs(dist)), top)


def metadata_field(dist, name: str) -> str | None:
    """One field of a distribution's core metadata, read from the header block alone: the email parser behind
    `dist.metadata` reads the long description too (transformers' README, 0.4 MB of parsing for a name and a
    version)."""
    text = (dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "").replace("\r\n", "\n")
    found = re.search(rf"^{re.escape(name)}:[ \t]*(.*?)[ \t]*$", text.split("\n\n", 1)[0], re.M | re.I)
    return found.group(1) if found else None
