"""The one build that the CLI and the mkdocs plugin call: spec -> load -> walk -> render -> docs."""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from atlas import progress
from atlas.analyse import data_flow
from atlas.analyse.architecture import traits
from atlas.analyse.cost import component_costs
from atlas.analyse.equations.derive import enrich
from atlas.analyse.provenance import claims
from atlas.document import EquationStatus, ModelDoc, ShapeStatus
from atlas.document import input_specs as inputs_mod
from atlas.errors import AtlasError
from atlas.extract.accounting import has_lazy
from atlas.extract.record import plan
from atlas.extract.walk import model_name, walk
from atlas.load.hooks import hooks_of
from atlas.load.memory import DEFAULT_BUDGET_BYTES
from atlas.load.spec import DEFAULT_SPEC, load

if TYPE_CHECKING:
    from atlas.site import sync

log = logging.getLogger("atlas")
# What only a build or a check uses (atlas.site.sync writes the docs tree, atlas.site.fingerprint keeps its record, jinja2
# renders the pages) and what only some models need (atlas.extract.probes.probe_shapes, the probes of a model whose symbolic run fails or
# that has lazy modules) is imported where it is used. With the fallbacks of atlas.extract.discover.discovery, atlas.extract.record.plan and
# atlas.analyse.equations.leaves imported where they are used too, a describe of the Llama-3-70B config does without 14
# modules' code: 0.6 MB of its peak RSS.


@dataclass
class Generated:
    docs: list[ModelDoc]
    files: dict[str, str]
    sources: list[str]                  # the model code's files, for `mkdocs serve` to watch

    refs: list = None                   # reference.ReferencePage, one per torch.nn class used
    fingerprint: dict | None = None     # of everything the files are made from (atlas.site.fingerprint)

    @property
    def folders(self) -> list[str]:
        return [d.slug for d in self.docs] + (["reference"] if self.refs else []) + ["catalog"]

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


@dataclass(frozen=True)
class Settings:
    """Options of one build: the CLI's flags, or the mkdocs plugin's config."""

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


@contextlib.contextmanager
def _quiet_runs():
    """The model's warnings about the inputs the atlas made up for it ("We strongly recommend passing in an
    `attention_mask`", a symbolic size's name in a sentence) say nothing to its reader: transformers' logger and
    Python warnings are quiet while the atlas runs the model. Its construction, the user's own, is not."""
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def document(loaded, settings: Settings = Settings()) -> ModelDoc:
    """walk -> shapes -> equations -> provenance (-> checkpoint, when given), for one loaded model."""
    with _quiet_runs():
        return _document(loaded, settings)


def _document(loaded, settings: Settings) -> ModelDoc:
    inputs = list(settings.inputs) if settings.inputs else None
    if settings.checkpoint:             # a wrong path fails before the slow stages; the headers are read after them
        from atlas.load import checkpoint_listing
        checkpoint_listing.locate(settings.checkpoint, settings.base_dir)
    if inputs:
        _inputs_fit_forward(loaded.model, inputs)
    if has_lazy(loaded.model):
        from atlas.extract.probes.probe_runs import materialize_lazy
        materialize_lazy(loaded.model, inputs)
    with progress.stage("walk") as bar:
        doc = walk(loaded)
        bar.update()
    with progress.stage("shapes") as bar:
        outcome = _recorded(loaded, doc, inputs, settings)
        if outcome.apart:               # alike list entries that computed differently: a component per kind
            outcome = _recorded(loaded, walk(loaded, outcome.apart), inputs, settings)
        doc, trace = replace(outcome.doc, forward_failure=outcome.failure), outcome.trace
        bar.update()
    _dims_are_symbols(doc, settings)

    if settings.cost:
        doc = component_costs.enrich(loaded.model, doc, trace, dict(settings.fixed_dims))
    hooks = hooks_of(loaded.model)
    vocab = inputs_mod.vocabulary(hooks.dims, hooks.fixed_dims)
    with progress.stage("equations", len(doc.components)) as bar:
        doc = enrich(loaded.model, doc, trace, vocab, settings.budget_bytes, bar.update, settings.verify)
    doc = data_flow.enrich(traits.enrich(loaded.model, doc, trace), trace)
    with progress.stage("provenance") as bar:
        doc = claims.enrich(loaded.model, doc, settings.repo_url)
        bar.update()
    if settings.checkpoint:
        from atlas.analyse import checkpoint_reconcile
        from atlas.load import checkpoint_listing
        with progress.stage("checkpoint") as bar:
            listing = checkpoint_listing.read(settings.checkpoint, settings.base_dir)
            doc = replace(doc, checkpoint=checkpoint_reconcile.reconcile(loaded.model, doc, listing))
            bar.update()
    return doc


def _inputs_fit_forward(model, texts: list[str]) -> None:
    """Inputs given with --input that leave a parameter of forward() without a value are bad input, said before
    any run: the run would fail on a TypeError inside the atlas's call of the model."""
    from atlas.load.forward_calls import missing as missing_parameters
    names = [inputs_mod.parse_input(text).name for text in texts]
    missing = missing_parameters(model, names)
    if missing:
        raise AtlasError(f"--input gives {', '.join(names)}; {type(model).__name__}.forward() also needs "
                              f"{', '.join(missing)}")


def _dims_are_symbols(doc: ModelDoc, settings: Settings) -> None:
    """A --dim for a symbol the example inputs do not have would fix nothing: said, not ignored."""
    if not doc.inputs:
        return
    specs = [inputs_mod.parse_input(text) for text in doc.inputs]
    symbols = list(dict.fromkeys(d for spec in specs for d in spec.dims if isinstance(d, str)))
    given = [sym for sym, _ in settings.fixed_dims] + [sym for sym, _, _ in settings.dim_bounds]
    unknown = [sym for sym in dict.fromkeys(given) if sym not in symbols]
    if unknown:
        raise AtlasError(f"--dim {unknown[0]}: {unknown[0]} is no symbol of the example inputs "
                              f"({', '.join(doc.inputs)}); their symbols: {', '.join(symbols) or 'none'}")


def _recorded(loaded, doc: ModelDoc, inputs, settings: Settings):
    return plan.record(loaded.model, doc, inputs, settings.budget_bytes, dict(settings.fixed_dims),
                            {s: (lo, hi) for s, lo, hi in settings.dim_bounds})


def describe(spec: str = DEFAULT_SPEC, inputs: list[str] | None = None,
             budget_bytes: int = DEFAULT_BUDGET_BYTES) -> ModelDoc:
    return document(load(spec), Settings(tuple(inputs) if inputs else None, budget_bytes))


def generate(specs: list[str] | None = None, settings: Settings = Settings(),
             docs_dir: str | Path | None = None) -> Generated:
    """Everything in memory; nothing is written. Errors surface here, before any file is touched. Given the docs
    folder the files are for, a folder there that Model Atlas did not write is refused before any model is run."""
    from atlas.site import sync
    specs = list(specs or [DEFAULT_SPEC])
    owned = (lambda folder: sync.check_owned(Path(docs_dir), folder)) if docs_dir is not None else (lambda _: None)
    owned("catalog")
    docs, loaded_models = [], []
    for given in specs:
        spec, model_settings = _model_settings(given, settings)
        loaded = load(spec)
        owned(model_name(loaded.model)[1])
        loaded_models.append((given, loaded))
        doc = document(loaded, model_settings)
        log.info("%s: %d components, %d parameters", doc.name, len(doc.components), doc.totals.parameters)
        if any(d.slug == doc.slug for d in docs):
            raise AtlasError(f"two models are both named {doc.name!r}; their pages would collide")
        docs.append(doc)
    return assemble(docs, loaded_models, settings)


def assemble(docs: list[ModelDoc], loaded_models: list, settings: Settings = Settings()) -> Generated:
    """The pages of documented models: theirs, the reference pages of the torch.nn classes they use, the catalog.
    `loaded_models` pairs each doc's spec as given with its loaded model."""
    from atlas.render import model_pages, reference_pages
    from atlas.site import fingerprint
    files, sources = {}, set()
    for _, loaded in loaded_models:
        sources |= set(fingerprint.sources(loaded.model, loaded.source_file))
    env = model_pages.environment()
    with progress.stage("reference") as bar:
        refs, index = reference_pages.build([(doc, m.model) for doc, (_, m) in zip(docs, loaded_models)])
        bar.update()
    by_class = {r.qualname: r.slug for r in refs}
    with progress.stage("render") as bar:
        for doc in docs:
            files.update(model_pages.render(doc, env, settings.site_url, settings.site_name, by_class))
        files.update(reference_pages.render(refs, index, docs, env))
        files.update(model_pages.render_catalog(docs, env))
        bar.update()
    return Generated(docs, files, sorted(sources), refs,
                     fingerprint.current(loaded_models, settings, model_pages.templates_dir()))


def _model_settings(given, settings: Settings) -> tuple[str, Settings]:
    """A spec and its settings: (spec, inputs[, checkpoint]) is the mkdocs plugin's per-model config."""
    if not isinstance(given, tuple):
        return given, settings
    spec, inputs, *rest = given
    return spec, replace(settings, inputs=tuple(inputs) if inputs else settings.inputs,
                         checkpoint=(rest[0] if rest and rest[0] else settings.checkpoint))


def unchanged(specs: list | None = None, docs_dir: str | Path = "docs", settings: Settings = Settings()) -> dict | None:
    """The stored record of the last build, when nothing its files are made from has changed since and every
    file is as it wrote it (atlas.site.fingerprint); None when the pages must be generated."""
    from atlas.render import model_pages
    from atlas.site import fingerprint
    loaded = [(given, load(_model_settings(given, settings)[0])) for given in (specs or [DEFAULT_SPEC])]
    stored = fingerprint.fresh(Path(docs_dir), fingerprint.current(loaded, settings, model_pages.templates_dir()))
    if stored is not None:              # the model code's files, for `mkdocs serve` to watch
        stored["sources"] = sorted({f for _, m in loaded for f in fingerprint.sources(m.model, m.source_file)})
    return stored


def navigation(generated: Generated) -> dict:
    """The mkdocs nav of the generated pages, per language (kept with the fingerprint for unchanged builds)."""
    from atlas import i18n
    from atlas.render import model_pages, reference_pages
    out = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            out[code] = model_pages.catalog_nav() + [entry for doc in generated.docs for entry in model_pages.nav(doc)] + \
                reference_pages.nav(generated.refs)
    return out


def build(specs: list[str] | None = None, docs_dir: str | Path = "docs",
          settings: Settings = Settings()) -> tuple[Generated, sync.SyncReport]:
    generated = generate(specs, settings, docs_dir)
    return generated, write(generated, docs_dir)


def write(generated: Generated, docs_dir: str | Path = "docs") -> sync.SyncReport:
    from atlas.site import fingerprint, sync
    report = sync.sync(Path(docs_dir), generated.files, generated.folders)
    if generated.fingerprint is not None:
        fingerprint.save(Path(docs_dir), generated.fingerprint, generated.files, generated.folders,
                         navigation(generated))
    return report


def check(specs: list[str] | None = None, docs_dir: str | Path = "docs",
          settings: Settings = Settings()) -> tuple[Generated, list[sync.Difference]]:
    from atlas.site import sync
    generated = generate(specs, settings)
    return generated, sync.compare(Path(docs_dir), generated.files, generated.folders)


def mkdocs_settings(path: str | Path = "mkdocs.yml") -> dict:
    """site_url, repo_url and site_name from an mkdocs.yml, read as plain `key: value` lines."""
    import re
    out = {}
    file = Path(path)
    if file.is_file():
        for key in ("site_url", "repo_url", "site_name"):
            m = re.search(rf"^{key}:\s*(\S.*?)\s*$", file.read_text(), re.M)
            if m:
                out[key] = m.group(1).strip("'\"")
    return out
