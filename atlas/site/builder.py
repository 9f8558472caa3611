"""The docs folder brought in line with the models: what the CLI's `build` and `check` and the mkdocs plugin run.

    generate(specs, settings, docs)     every page in memory (atlas.pipeline), with the fingerprint of what they are
                                        made from; a folder of the docs tree that Model Atlas did not write is refused
                                        before any model is run
    write(generated, docs)              the pages written where they changed, and the fingerprint kept
    check(specs, docs)                  the pages compared with the docs folder
    unchanged(specs, docs)              the stored record, where nothing the pages are made from changed
"""

from __future__ import annotations

from pathlib import Path

from atlas import i18n, pipeline
from atlas.load.settings import Settings
from atlas.render import model_pages, reference_pages
from atlas.site import fingerprint, sync


def generate(specs: list | None = None, settings: Settings = Settings(),
             docs_dir: str | Path | None = None) -> pipeline.Generated:
    """Everything in memory; nothing is written. Errors surface here, before any file is touched."""
    if docs_dir is not None:
        sync.check_owned(Path(docs_dir), "catalog")
    models = pipeline.load_models(specs, settings)
    if docs_dir is not None:
        from atlas.extract.walk import model_name
        for _, loaded, _ in models:
            sync.check_owned(Path(docs_dir), model_name(loaded.model)[1])
    generated = pipeline.generate(models, settings)
    loaded = [(given, m) for given, m, _ in models]
    generated.sources = _sources(loaded)
    generated.fingerprint = fingerprint.current(loaded, settings, model_pages.templates_dir())
    return generated


def build(specs: list | None = None, docs_dir: str | Path = "docs",
          settings: Settings = Settings()) -> tuple[pipeline.Generated, sync.SyncReport]:
    generated = generate(specs, settings, docs_dir)
    return generated, write(generated, docs_dir)


def write(generated: pipeline.Generated, docs_dir: str | Path = "docs") -> sync.SyncReport:
    report = sync.sync(Path(docs_dir), generated.files, generated.folders)
    if generated.fingerprint is not None:
        fingerprint.save(Path(docs_dir), generated.fingerprint, generated.files, generated.folders,
                         navigation(generated))
    return report


def check(specs: list | None = None, docs_dir: str | Path = "docs",
          settings: Settings = Settings()) -> tuple[pipeline.Generated, list[sync.Difference]]:
    generated = generate(specs, settings)
    return generated, sync.compare(Path(docs_dir), generated.files, generated.folders)


def unchanged(specs: list | None = None, docs_dir: str | Path = "docs", settings: Settings = Settings()) -> dict | None:
    """The stored record of the last build, when nothing its files are made from has changed since and every
    file is as it wrote it (atlas.site.fingerprint); None when the pages must be generated."""
    loaded = [(given, m) for given, m, _ in pipeline.load_models(specs, settings)]
    stored = fingerprint.fresh(Path(docs_dir), fingerprint.current(loaded, settings, model_pages.templates_dir()))
    if stored is not None:
        stored["sources"] = _sources(loaded)
    return stored


def navigation(generated: pipeline.Generated) -> dict:
    """The mkdocs nav of the generated pages, per language (kept with the fingerprint for unchanged builds)."""
    out = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            models = [entry for doc in generated.docs for entry in model_pages.nav(doc)]
            out[code] = model_pages.catalog_nav() + models + reference_pages.nav(generated.refs)
    return out


def _sources(loaded: list) -> list[str]:
    """The model code's files, for `mkdocs serve` to watch."""
    return sorted({f for _, m in loaded for f in fingerprint.sources(m.model, m.source_file)})
