"""A fingerprint of everything the generated pages are made from, stored in the docs tree, so that a build or
check with no change behind it can say so without regenerating.

What goes in (`current`):
- the atlas itself: every file of the package and of the templates, by content;
- the versions of Python (major.minor), torch, transformers, sympy and jinja2;
- the options: the specs, their inputs and checkpoints (a checkpoint by size and modification time), the
  memory budget, dims, site and repository URLs;
- every Python file a model's classes come from, and its spec's module (or config.json): by content, and by the
  revision and uncommitted state that pages print;
- the checkpoint a spec brings (a save_pretrained folder's), by the hash its pages cite;
- the JSON of every other model the docs folder documents (docs/<slug>/atlas.json), by content: the site-wide
  pages (catalog, reference) list those models too.

The store (`docs/.atlas-cache.json`; mkdocs skips dotfiles) keeps that fingerprint beside the SHA-256 of every
generated file. A build or check is skipped only when the fingerprint is equal and every generated file on disk
still has its hash, so a hand edit of a page is caught too. A file a factory reads at run time (a config JSON)
is not in the fingerprint: `--no-cache` forces the full run.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from importlib import metadata
from pathlib import Path

from atlas.resources import PACKAGE

STORE = ".atlas-cache.json"
FORMAT = 1
MAX_FINGERPRINTS = 4                # builds of the same files with other options (the CLI's, the mkdocs plugin's)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tree(root: Path) -> str:
    """One hash of a folder's files, by relative path and content (compiled files apart)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + _sha(path.read_bytes()).encode() + b"\0")
    return h.hexdigest()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def sources(model, spec_file: str | None) -> list[str]:
    """The Python files a model's classes come from, and its spec's module."""
    files = {spec_file} if spec_file else set()
    for module in model.modules():
        cls = type(module)
        if cls.__module__.startswith("torch."):
            continue
        try:
            path = inspect.getsourcefile(cls)
        except TypeError:
            path = None
        if path:
            files.add(path)
    return sorted(files)


def _source_entry(file: str, repo_url: str | None) -> dict:
    from atlas.load.source_revision import locate
    src = locate(file, repo_url)
    return {"file": src.file, "revision": src.revision, "dirty": src.dirty, "sha256": _sha(Path(file).read_bytes())}


def _options(settings) -> dict:
    checkpoint = None
    if settings.checkpoint:
        path = Path(settings.base_dir or ".") / settings.checkpoint
        stat = path.stat() if path.exists() else None
        checkpoint = [settings.checkpoint, stat.st_size if stat else None, stat.st_mtime_ns if stat else None]
    return {"inputs": list(settings.inputs or ()), "budget_bytes": settings.budget_bytes,
            "site_url": settings.site_url, "repo_url": settings.repo_url, "site_name": settings.site_name,
            "verify": settings.verify, "cost": settings.cost, "fixed_dims": [list(d) for d in settings.fixed_dims],
            "dim_bounds": [list(d) for d in settings.dim_bounds], "checkpoint": checkpoint}


def current(models: list, settings, templates: Path, others: dict | None = None) -> dict:
    """The fingerprint of one generation: `models` are (spec as given, atlas.load.spec.Loaded); `others`, the
    other models the docs folder documents, {slug: SHA-256 of its atlas.json} (atlas.site.documented.hashes)."""
    return {
        "atlas": _tree(PACKAGE),
        "templates": _tree(templates),
        "versions": {"python": f"{sys.version_info.major}.{sys.version_info.minor}",
                     **{d: _version(d) for d in ("torch", "transformers", "sympy", "jinja2")}},
        "options": _options(settings),
        # a spec as the CLI gives it, or as the mkdocs plugin does (spec, inputs, checkpoint): one form for both
        "models": [{"spec": [spec, [], None] if isinstance(spec, str) else [spec[0], list(spec[1] or ()), *spec[2:]],
                    "sources": [_source_entry(f, settings.repo_url)
                                for f in sources(loaded.model, loaded.source_file)],
                    **({"checkpoint": _brought(checkpoint, settings.base_dir)}
                       if (checkpoint := model_checkpoint(spec, loaded)) else {})}
                   for spec, loaded in models],
        "others": dict(sorted((others or {}).items())),
    }


def model_checkpoint(spec, loaded) -> str | None:
    """The checkpoint reconciled with one model: the mkdocs plugin's for that model, else the one its spec brings
    (a save_pretrained folder's)."""
    given = spec[2] if not isinstance(spec, str) and len(spec) > 2 else None
    return given or loaded.checkpoint


def _brought(checkpoint: str, base_dir: str | None) -> str:
    """A model's checkpoint, by the hash its pages cite: its header's, index's or listing's; the weights are not
    read."""
    from atlas.load.checkpoint_listing import read
    return read(checkpoint, base_dir).sha256


def _load(docs: Path) -> dict | None:
    try:
        stored = json.loads((docs / STORE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) and stored.get("format") == FORMAT else None


def save(docs: Path, fingerprint: dict, files: dict[str, str], folders: list[str], nav: dict) -> None:
    """Keep the fingerprint, each generated file's hash and what the mkdocs nav needs, in the docs tree. Builds
    that wrote the very same files (the CLI's and the mkdocs plugin's, whose options differ) share the record."""
    hashes = {path: _sha(text.encode()) for path, text in sorted(files.items())}
    before = _load(docs)
    others = []
    if before is not None and before.get("files") == hashes and before.get("folders") == folders:
        # the same files built with other options (the CLI's, the plugin's): the fingerprint of an older atlas, or
        # of older model sources, matches no more
        others = [p for p in before.get("fingerprints", []) if p != fingerprint
                  and all(p.get(k) == v for k, v in fingerprint.items() if k != "options")]
    others = sorted(others, key=_key)[:MAX_FINGERPRINTS - 1]
    prints = sorted([fingerprint, *others], key=_key)          # the new one always kept; the order, stable
    body = {"format": FORMAT, "fingerprints": prints, "folders": folders, "nav": nav, "files": hashes}
    text = json.dumps(body, indent=1, sort_keys=True) + "\n"
    if before is not None and (docs / STORE).read_text(encoding="utf-8") == text:
        return                                  # like every generated file: written only when it changes
    tmp = docs / (STORE + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, docs / STORE)


def _key(fingerprint: dict) -> str:
    return json.dumps(fingerprint, sort_keys=True)


def fresh(docs: Path, fingerprint: dict) -> dict | None:
    """The stored record when nothing the pages are made from changed and every generated file is as written;
    None otherwise (no store, another fingerprint, a file edited, added or removed)."""
    from atlas.site.sync import MARKER
    stored = _load(docs)
    if stored is None or fingerprint not in stored.get("fingerprints", []):
        return None
    on_disk = {}
    for folder in stored.get("folders", []):
        for path in (docs / folder).rglob("*"):
            if path.is_file() and path.name != MARKER:
                on_disk[path.relative_to(docs).as_posix()] = _sha(path.read_bytes())
    return stored if on_disk == stored.get("files") else None
