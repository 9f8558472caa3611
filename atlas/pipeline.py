"""One run of the stages, for the CLI and the site builder: load -> extract -> analyse -> render.

    document(loaded)        one model: its components, shapes, equations, costs, provenance
    generate(models)        every model's document, the reference pages of the torch.nn classes they use, and
                            every page rendered, in memory; the site-wide pages (reference, catalog) list the other
                            models given too, those the docs folder documents already

Writing the pages into a docs folder is the site stage's (atlas.site.builder). What only some models need (the
probes of a model whose symbolic run fails or that has lazy modules, the builders of recurrent and composite
layers) and what only pages need (jinja2, the site stage) is imported where it is used: a describe of the
Llama-3-70B config does without that code.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings
from dataclasses import dataclass, replace

from atlas import progress
from atlas.analyse import analysis
from atlas.document import EquationStatus, ModelDoc, ShapeStatus
from atlas.errors import AtlasError
from atlas.extract import extraction
from atlas.load.memory import DEFAULT_BUDGET_BYTES
from atlas.load.settings import Settings
from atlas.load.spec import DEFAULT_SPEC, Loaded, load

__all__ = ["Generated", "Settings", "assemble", "describe", "document", "generate", "load_models", "reference_page",
           "references"]
log = logging.getLogger("atlas")


@dataclass
class Generated:
    docs: list[ModelDoc]                # this run's models, in the order given
    files: dict[str, str]
    refs: list = None                   # atlas.analyse.reference.class_pages.ReferencePage, one per class used
    site: list[ModelDoc] = ()           # every model the site-wide pages list, as read back from its JSON, by slug
    sources: list[str] = ()             # the model code's files, for `mkdocs serve` to watch
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
        return self.count(lambda c: c.shapes is not None and c.shapes.status is ShapeStatus.NOT_DERIVED)


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


def document(loaded: Loaded, settings: Settings = Settings()) -> ModelDoc:
    """One loaded model through the stages: a checkpoint's listing (load), the record and the shapes (extract),
    everything read off them (analyse). A wrong checkpoint path fails before the slow stages. The checkpoint is the
    one given, else the one the SPEC brings (a save_pretrained folder's)."""
    listing = None
    if loaded.checkpoint and not settings.checkpoint:
        settings = replace(settings, checkpoint=loaded.checkpoint)
    if settings.checkpoint:
        from atlas.load import checkpoint_listing
        checkpoint_listing.locate(settings.checkpoint, settings.base_dir)
    with _quiet_runs():
        doc, trace = extraction.extract(loaded, settings)
        if settings.checkpoint:
            from atlas.load import checkpoint_listing
            listing = checkpoint_listing.read(settings.checkpoint, settings.base_dir)
        return analysis.analyse(loaded.model, doc, trace, settings, listing)


def describe(spec: str = DEFAULT_SPEC, inputs: list[str] | None = None,
             budget_bytes: int = DEFAULT_BUDGET_BYTES) -> ModelDoc:
    return document(load(spec), Settings(tuple(inputs) if inputs else None, budget_bytes))


def load_models(specs: list | None, settings: Settings = Settings()) -> list[tuple[object, Loaded, Settings]]:
    """(spec as given, the loaded model, its settings) for each spec: a string, or the mkdocs plugin's per-model
    config (spec, inputs[, checkpoint]). A model's checkpoint is the one given, else the one its SPEC brings."""
    out = []
    for given in specs or [DEFAULT_SPEC]:
        spec, own = given, settings
        if isinstance(given, tuple):
            spec, inputs, *rest = given
            own = replace(settings, inputs=tuple(inputs) if inputs else settings.inputs,
                          checkpoint=(rest[0] if rest and rest[0] else settings.checkpoint))
        loaded = load(spec)
        if loaded.checkpoint and not own.checkpoint:
            own = replace(own, checkpoint=loaded.checkpoint)
        out.append((given, loaded, own))
    return out


def generate(models: list[tuple[object, Loaded, Settings]], settings: Settings = Settings(),
             others: list[ModelDoc] = ()) -> Generated:
    """Every model documented, and every page rendered, in memory: nothing is written. `others`: the models the
    docs folder documents already, which the site-wide pages list too (see assemble)."""
    docs = []
    for _, loaded, own in models:
        doc = document(loaded, own)
        log.info("%s: %d components, %d parameters", doc.name, len(doc.components), doc.totals.parameters)
        if any(d.slug == doc.slug for d in docs):
            raise AtlasError(f"two models are both named {doc.name!r}; their pages would collide")
        docs.append(doc)
    return assemble(docs, settings, others)


def assemble(docs: list[ModelDoc], settings: Settings = Settings(), others: list[ModelDoc] = ()) -> Generated:
    """The pages of documented models, and the site-wide pages: the reference pages of the torch.nn classes used
    and their index, the catalog, the role pages and the comparison. Those list the whole site: `docs` and `others`
    (models documented before, read back from their JSON), every one as its JSON reads back and in slug order, so
    that they are the same pages whichever models a run names and in whatever order."""
    from atlas.render import model_pages, reference_pages, role_pages
    ours = {d.slug for d in docs}
    twice = sorted(ours & {d.slug for d in others})
    if twice:
        raise AtlasError(f"{twice[0]} is both documented in this run and one of the other models given")
    site = sorted([_read_back(d) for d in docs] + list(others), key=lambda d: d.slug)
    with progress.stage("reference") as bar:
        refs, index = references(site)
        bar.update()
    by_class = {r.qualname: r.slug for r in refs}
    env = model_pages.environment()
    files = {}
    with progress.stage("render") as bar:
        for doc in docs:
            files.update(model_pages.render(doc, env, settings.site_url, settings.site_name, by_class))
        files.update(reference_pages.render(refs, index, site, env))
        files.update(model_pages.render_catalog(site, env))
        files.update(role_pages.render(site, env))
        bar.update()
    return Generated(docs, files, refs, site)


def _read_back(doc: ModelDoc) -> ModelDoc:
    """The document as its JSON (docs/<slug>/atlas.json) reads back: what a later run that does not name the model
    makes the site-wide pages from."""
    from atlas.document import serialize
    return serialize.loads(serialize.dumps(serialize.as_dict(doc)))


def references(docs: list[ModelDoc]) -> tuple[list, object]:
    """The reference pages of the torch.nn classes the models use (and their comparison tables name), and the
    cross-model index: each class's small instance documented as a one-component model."""
    from atlas.analyse.reference import class_pages, class_uses
    used = class_uses.uses(docs)
    classes = class_pages.page_classes(used)
    slugs = {f"torch.nn.{c.__name__}": class_pages.slug(c) for c in classes}
    refs = [reference_page(c, used.get(c, []), slugs) for c in classes]
    return refs, class_uses.index(refs, docs)


def reference_page(cls: type, used_in: list = (), slugs: dict | None = None):
    """A torch.nn class's reference page (atlas.analyse.reference.class_pages), its small instance documented."""
    from atlas.analyse.reference import class_pages
    return class_pages.page(cls, *_small_instance(cls), list(used_in), slugs)


@functools.lru_cache(maxsize=None)
def _small_instance(cls: type) -> tuple:
    """(a class's small instance, that instance documented: its shapes and verified equations), once a process:
    a process that builds again (`mkdocs serve` after an edit, a test suite) makes each class's once."""
    from atlas.extract import small_instances
    instance = small_instances.build(cls)
    if not instance.runs:
        return instance, None
    loaded = Loaded(f"torch.nn.{cls.__name__}", instance.module, None)
    settings = Settings(inputs=tuple(i.text for i in instance.inputs))
    with progress.silenced():
        doc, trace = extraction.extract(loaded, settings)
        return instance, analysis.equations(instance.module, doc, trace, settings)
