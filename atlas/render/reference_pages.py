"""The reference section of the site: a page per torch.nn class, the cross-model index, and their nav.

    reference/index.md          the index: each torch.nn class, attention variant and form of normalization,
                                with the models and components that use it
    reference/<class>.md        a class's page (atlas/analyse/reference/class_pages.py)
each with its Spanish pair, <page>.es.md.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import jinja2

from atlas import i18n
from atlas.analyse.reference import class_pages, class_uses
from atlas.document import ModelDoc
from atlas.render import page_paths

log = logging.getLogger("atlas")
INDEX = "reference/index.md"


@dataclass(frozen=True)
class Index:
    classes: tuple[tuple[str, str, tuple], ...]         # (torch.nn.X, slug, uses), by class name
    kinds: tuple[class_uses.Kind, ...]
    models: tuple[tuple[str, str], ...]                 # (name, slug), in site order
    pages: tuple[tuple[str, str], ...]                  # (qualified class, slug) of every class page

    def kinds_of(self, prefix: str) -> list:
        """The attention variants ("attention/") or the forms of normalization ("norm/")."""
        return [k for k in self.kinds if k.key.startswith(prefix)]

    def page_of(self, qualname: str) -> str | None:
        return dict(self.pages).get(qualname)


def build(models: list[tuple[ModelDoc, object]]) -> tuple[list[class_pages.ReferencePage], Index]:
    """The pages and the index of the documented models: (ModelDoc, nn.Module) pairs."""
    start = time.perf_counter()
    used = class_uses.uses(models)
    classes = class_pages.page_classes(used)
    slugs = {f"torch.nn.{c.__name__}": class_pages.slug(c) for c in classes}
    refs = [class_pages.page(c, used.get(c, []), slugs) for c in classes]
    docs = [doc for doc, _ in models]
    log.info("reference: %d classes in %.1f s", len(refs), time.perf_counter() - start)
    index = Index(tuple((r.cls, r.slug, r.used_in) for r in refs if r.used_in),
                  tuple(class_uses.kinds(docs)), tuple((d.name, d.slug) for d in docs),
                  tuple((r.qualname, r.slug) for r in refs))
    return refs, index


def _linker(here: str, docs: list[ModelDoc]):
    by_slug = {d.slug: d for d in docs}

    def href(slug: str, cid: str) -> str:
        doc = by_slug[slug]
        return page_paths.link(here, page_paths.page_path(doc, doc.component(cid)))
    return href


def render(refs, index: Index, docs: list[ModelDoc], env: jinja2.Environment) -> dict[str, str]:
    """Every language's reference pages and index."""
    page_t = env.get_template("reference.md.j2")
    index_t = env.get_template("reference/index.md.j2")
    files = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            for ref in refs:
                here = f"reference/{ref.slug}.md"
                files[page_paths.localized(here, code)] = page_t.render(
                    ref=ref, href=_linker(here, docs), language=code, translated=class_pages.translated)
            files[page_paths.localized(INDEX, code)] = index_t.render(
                index=index, href=_linker(INDEX, docs), language=code)
    return files


def nav(refs) -> list:
    """The nav section of the reference pages, titled in the active language: the index, then each class."""
    if not refs:
        return []
    return [{i18n.gettext("Reference"): [INDEX, *({ref.cls: f"reference/{ref.slug}.md"} for ref in refs)]}]
