"""The docs folder brought in line with the models: what the CLI's `build` and `check` and the mkdocs plugin run.

    generate(specs, settings, docs)     every page in memory (atlas.pipeline), with the fingerprint of what they are
                                        made from; a folder of the docs tree that Model Atlas did not write is refused
                                        before any model is run
    write(generated, docs)              the pages written where they changed, and the fingerprint kept
    check(specs, docs)                  the pages compared with the docs folder
    unchanged(specs, docs)              the stored record, where nothing the pages are made from changed

A run writes (or compares) its own models' folders and the site-wide pages (reference/, catalog/, the nav); those
list every model the docs folder documents: the run's, and the others, read back from their atlas.json
(atlas.site.documented), whose folders the run leaves as they are.
"""

from __future__ import annotations

from pathlib import Path

from atlas import i18n, pipeline
from atlas.load.settings import Settings
from atlas.render import model_pages, reference_pages, role_pages
from atlas.site import documented, fingerprint, sync


def generate(specs: list | None = None, settings: Settings = Settings(),
             docs_dir: str | Path | None = None, writing: bool = True) -> pipeline.Generated:
    """Everything in memory; nothing is written. Errors surface here, before any file is touched. `docs_dir`: the
    docs folder whose other models the site-wide pages list; `writing`, a build's run into it, which refuses a
    folder there that Model Atlas did not write."""
    docs = None if docs_dir is None else Path(docs_dir)
    if docs is not None and writing:
        sync.check_owned(docs, "catalog")
    models = pipeline.load_models(specs, settings)
    slugs = _slugs(models)
    if docs is not None:
        from atlas.extract.walk import model_name
        for _, loaded, _ in models:
            name, slug = model_name(loaded.model)
            if writing:
                sync.check_owned(docs, slug)
            documented.check_same_model(docs, slug, loaded.spec, name)
    others = [] if docs is None else documented.read(docs, slugs)
    generated = pipeline.generate(models, settings, others)
    loaded = [(given, m) for given, m, _ in models]
    generated.sources = _sources(loaded)
    generated.fingerprint = fingerprint.current(loaded, settings, model_pages.templates_dir(),
                                                {} if docs is None else documented.hashes(docs, slugs))
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
    generated = generate(specs, settings, docs_dir, writing=False)
    return generated, sync.compare(Path(docs_dir), generated.files, generated.folders)


def unchanged(specs: list | None = None, docs_dir: str | Path = "docs", settings: Settings = Settings(),
              checkpoints_judged: bool = False) -> dict | None:
    """The stored record of the last build, when nothing its files are made from has changed since and every
    file is as it wrote it (atlas.site.fingerprint); None when the pages must be generated, and, where
    `checkpoints_judged` (a check's exit status says whether each checkpoint matches its model), when a model has a
    checkpoint: that verdict is never taken from the record."""
    models = pipeline.load_models(specs, settings)
    if checkpoints_judged and any(fingerprint.model_checkpoint(given, m) for given, m, _ in models):
        return None
    loaded = [(given, m) for given, m, _ in models]
    others = documented.hashes(Path(docs_dir), _slugs(models))
    stored = fingerprint.fresh(Path(docs_dir), fingerprint.current(loaded, settings, model_pages.templates_dir(),
                                                                   others))
    if stored is not None:
        stored["sources"] = _sources(loaded)
    return stored


def navigation(generated: pipeline.Generated) -> dict:
    """The mkdocs nav of the generated pages, per language (kept with the fingerprint for unchanged builds): every
    model of the site, in the site-wide pages' order."""
    out = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            models = [entry for doc in generated.site for entry in model_pages.nav(doc)]
            out[code] = model_pages.catalog_nav() + role_pages.nav() + models + reference_pages.nav(generated.refs)
    return out


def _slugs(models: list) -> set[str]:
    """The folders of a run's models, known as soon as they are loaded."""
    from atlas.extract.walk import model_name
    return {model_name(loaded.model)[1] for _, loaded, _ in models}


def _sources(loaded: list) -> list[str]:
    """The model code's files, for `mkdocs serve` to watch."""
    return sorted({f for _, m in loaded for f in fingerprint.sources(m.model, m.source_file)})
