"""The reference section of the site: a page per torch.nn class, the cross-model index, and their nav.

    reference/index.md          the index: each torch.nn class, attention variant and form of normalization,
                                with the models and components that use it
    reference/<class>.md        a class's page (atlas/analyse/reference/class_pages.py)
each with its Spanish pair, <page>.es.md.
"""

from __future__ import annotations

import jinja2

from atlas import i18n
from atlas.analyse.reference import class_pages
from atlas.analyse.reference.class_uses import Index
from atlas.document import ModelDoc
from atlas.render import page_paths, tex_numbers

INDEX = "reference/index.md"


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
                files[page_paths.localized(here, code)] = tex_numbers.localized_page(page_t.render(
                    ref=ref, href=_linker(here, docs), language=code, translated=class_pages.translated))
            files[page_paths.localized(INDEX, code)] = tex_numbers.localized_page(index_t.render(
                index=index, href=_linker(INDEX, docs), language=code))
    return files


def nav(refs) -> list:
    """The nav section of the reference pages, titled in the active language: the index, then each class."""
    if not refs:
        return []
    return [{i18n.gettext("Reference"): [INDEX, *({ref.cls: f"reference/{ref.slug}.md"} for ref in refs)]}]
