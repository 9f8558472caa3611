"""The one build that the CLI and the mkdocs plugin call: spec -> load -> walk -> render -> docs."""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from pathlib import Path

from atlas import render, site
from atlas.model import ModelDoc
from atlas.spec import DEFAULT_SPEC, load
from atlas.walk import walk

log = logging.getLogger("atlas")


@dataclass
class Generated:
    docs: list[ModelDoc]
    files: dict[str, str]
    sources: list[str]                  # the model code's files, for `mkdocs serve` to watch

    @property
    def folders(self) -> list[str]:
        return [d.slug for d in self.docs]


def describe(spec: str = DEFAULT_SPEC) -> ModelDoc:
    return walk(load(spec))


def _sources(model) -> set[str]:
    files = set()
    for module in model.modules():
        cls = type(module)
        if not cls.__module__.startswith("torch."):
            path = inspect.getsourcefile(cls)
            if path:
                files.add(path)
    return files


def generate(specs: list[str] | None = None) -> Generated:
    """Everything in memory; nothing is written. Errors surface here, before any file is touched."""
    specs = list(specs or [DEFAULT_SPEC])
    docs, files, sources = [], {}, set()
    env = render.environment()
    for spec in specs:
        loaded = load(spec)
        sources |= _sources(loaded.model)
        doc = walk(loaded)
        log.info("%s: %d components, %d parameters", doc.name, len(doc.components), doc.totals.parameters)
        if any(d.slug == doc.slug for d in docs):
            raise site.AtlasError(f"two models are both named {doc.name!r}; their pages would collide")
        docs.append(doc)
        files.update(render.render(doc, env))
    return Generated(docs, files, sorted(sources))


def build(specs: list[str] | None = None, docs_dir: str | Path = "docs") -> tuple[Generated, site.SyncReport]:
    generated = generate(specs)
    report = site.sync(Path(docs_dir), generated.files, generated.folders)
    return generated, report


def check(specs: list[str] | None = None, docs_dir: str | Path = "docs") -> tuple[Generated, list[site.Difference]]:
    generated = generate(specs)
    return generated, site.compare(Path(docs_dir), generated.files, generated.folders)
