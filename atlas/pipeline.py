"""The one build that the CLI and the mkdocs plugin call: spec -> load -> walk -> render -> docs."""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from pathlib import Path

from atlas import render, shapes, site
from atlas.equations.enrich import DEFAULT_BUDGET_BYTES, enrich
from atlas.model import EquationStatus, ModelDoc, ShapeStatus
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

    def count(self, predicate) -> int:
        return sum(1 for d in self.docs for c in d.components if predicate(c))

    @property
    def equations_not_derived(self) -> int:
        return self.count(lambda c: c.equations is not None and c.equations.status is EquationStatus.NOT_DERIVED)

    @property
    def verified(self) -> int:
        return self.count(lambda c: c.equations is not None and c.equations.verification is not None
                          and c.equations.verification.verified)

    @property
    def verification_skipped(self) -> int:
        return self.count(lambda c: c.equations is not None and c.equations.verification is not None
                          and not c.equations.verification.verified)

    @property
    def components(self) -> int:
        return self.count(lambda c: True)

    @property
    def shapes_not_derived(self) -> int:
        return sum(1 for d in self.docs for c in d.components
                   if c.shapes is not None and c.shapes.status is ShapeStatus.NOT_DERIVED)


def document(loaded, inputs: list[str] | None = None, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> ModelDoc:
    """walk -> shapes -> equations, for one loaded model."""
    doc = shapes.derive(loaded.model, walk(loaded), inputs)
    return enrich(loaded.model, doc, budget_bytes)


def describe(spec: str = DEFAULT_SPEC, inputs: list[str] | None = None,
             budget_bytes: int = DEFAULT_BUDGET_BYTES) -> ModelDoc:
    return document(load(spec), inputs, budget_bytes)


def _sources(model) -> set[str]:
    files = set()
    for module in model.modules():
        cls = type(module)
        if not cls.__module__.startswith("torch."):
            path = inspect.getsourcefile(cls)
            if path:
                files.add(path)
    return files


def generate(specs: list[str] | None = None, inputs: list[str] | None = None,
             budget_bytes: int = DEFAULT_BUDGET_BYTES) -> Generated:
    """Everything in memory; nothing is written. Errors surface here, before any file is touched."""
    specs = list(specs or [DEFAULT_SPEC])
    docs, files, sources = [], {}, set()
    env = render.environment()
    for spec in specs:
        loaded = load(spec)
        sources |= _sources(loaded.model)
        doc = document(loaded, inputs, budget_bytes)
        log.info("%s: %d components, %d parameters", doc.name, len(doc.components), doc.totals.parameters)
        if any(d.slug == doc.slug for d in docs):
            raise site.AtlasError(f"two models are both named {doc.name!r}; their pages would collide")
        docs.append(doc)
        files.update(render.render(doc, env))
    return Generated(docs, files, sorted(sources))


def build(specs: list[str] | None = None, docs_dir: str | Path = "docs", inputs: list[str] | None = None,
          budget_bytes: int = DEFAULT_BUDGET_BYTES) -> tuple[Generated, site.SyncReport]:
    generated = generate(specs, inputs, budget_bytes)
    report = site.sync(Path(docs_dir), generated.files, generated.folders)
    return generated, report


def check(specs: list[str] | None = None, docs_dir: str | Path = "docs", inputs: list[str] | None = None,
          budget_bytes: int = DEFAULT_BUDGET_BYTES) -> tuple[Generated, list[site.Difference]]:
    generated = generate(specs, inputs, budget_bytes)
    return generated, site.compare(Path(docs_dir), generated.files, generated.folders)
