"""Render ModelDocs to files: Markdown pages and JSON, as a dict of docs-relative path -> text."""

from __future__ import annotations

import html
import os
from pathlib import Path

import jinja2

from atlas import i18n
from atlas.document import ModelDoc, serialize
from atlas.render import citation, diagram, json_export, own_words, page_paths, tex_numbers, tree_html, view_data
from atlas.render.calculator_data import CALCULATOR_FILTERS
from atlas.render.filters import FILTERS, calculation, repeat_label, thousands
from atlas.render.line_breaks import LINE_FILTERS
from atlas.render.symbol_facts import SYMBOL_FILTERS
from atlas.resources import TEMPLATES

FINDINGS_SHOWN = 12         # a component page lists this many checkpoint findings; the model page lists them all


def templates_dir() -> Path:
    return Path(os.environ.get("ATLAS_TEMPLATES", TEMPLATES))


class _CompiledTemplates(jinja2.BytecodeCache):
    """Each template compiled once per process (compiling the templates takes longer than rendering a build's pages
    with them). Every environment() has the same options; a template's code is kept under its file and reused only
    while the file's source has the checksum it was compiled from, so an edited template (`mkdocs serve`) is
    compiled again."""

    def __init__(self) -> None:
        self._code: dict = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        checksum, code = self._code.get(bucket.key, (None, None))
        if checksum == bucket.checksum:
            bucket.code = code

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = (bucket.checksum, bucket.code)


_COMPILED = _CompiledTemplates()


def environment(directory: Path | None = None) -> jinja2.Environment:
    """A fresh environment per render: nothing it holds is shared but the templates' compiled code."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory or templates_dir())),
        bytecode_cache=_COMPILED,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,   # Markdown, not HTML: text from code goes through md_text
        extensions=["jinja2.ext.i18n"],
    )
    env.policies["ext.i18n.trimmed"] = True     # a {% trans %} block's line breaks are not part of its message
    env.install_gettext_callables(i18n.gettext, i18n.ngettext, newstyle=True)   # the active language's catalog
    env.filters.update(FILTERS | CALCULATOR_FILTERS | SYMBOL_FILTERS | LINE_FILTERS)
    env.filters["tree_item"] = tree_html.tree_item
    env.filters.update(own_summary=own_words.summary, quoted=own_words.quoted)
    return env


def component_context(doc: ModelDoc, comp, site_url: str | None = None, site_name: str = "Model Atlas",
                      references: dict | None = None) -> dict:
    rows = view_data.table_rows(doc, comp, repeat_label, thousands, calculation)
    here = page_paths.page_path(doc, comp)
    recon = view_data.in_reconstruction(doc, comp)
    language = None if i18n.active() == i18n.DEFAULT else i18n.active()
    cited = citation.cite(doc, comp, site_url, site_name, language)
    ref_slug = (references or {}).get(comp.cls)
    findings = view_data.checkpoint_findings(doc, comp)
    return {
        "checkpoint_check": None if doc.checkpoint is None else doc.checkpoint.component(comp.id),
        "checkpoint_findings": findings[:FINDINGS_SHOWN] if comp.id else findings,
        "checkpoint_more": len(findings) - FINDINGS_SHOWN if comp.id and len(findings) > FINDINGS_SHOWN else 0,
        "reference": None if ref_slug is None else (
            comp.cls.rsplit(".", 1)[-1], page_paths.link(here, f"reference/{ref_slug}.md")),
        "permalink": cited.url,
        "page_path": cited.path,
        "revision": cited.revision,
        "data_href": page_paths.link(here, page_paths.data_path(doc, comp)),
        "model_data_href": page_paths.link(here, page_paths.json_path(doc)),
        "cite_key": cited.key,
        "cite_bibtex": cited.bibtex,
        "cite_csl_json": cited.csl_json,
        "cite_ris": cited.ris,
        "cite_text": cited.text,
        "site_name": site_name,
        "doc": doc,
        "comp": comp,
        "crumbs": view_data.crumbs(doc, comp, repeat_label),
        "tag": view_data.tag(doc, comp).value,
        "repeating": view_data.repeating(doc, comp),
        "rows": rows,
        "shared_within": view_data.shared_within(comp, rows),
        "experts": view_data.experts_within(doc, comp),
        "reconstruction": recon,
        "reconstruction_href": None if recon is None else page_paths.link(here, page_paths.page_path(doc, recon)),
        "model_href": page_paths.link(here, page_paths.page_path(doc, doc.root)),
        "children": [doc.component(c) for c in comp.children],
        "child_href": lambda c: page_paths.link(here, page_paths.page_path(doc, c)),
        "step_href": lambda cid: page_paths.link(here, page_paths.page_path(doc, doc.component(cid))),
    }


COST_TABLE_DEPTH = 2                   # the model's children and grandchildren; deeper ones on their own pages


def _depth(doc: ModelDoc, comp) -> int:
    depth = 0
    while comp.parent is not None:
        depth, comp = depth + 1, doc.component(comp.parent)
    return depth


def cost_rows(doc: ModelDoc) -> list:
    """The FLOPs at the reference size of the components down to COST_TABLE_DEPTH, and their share of the
    whole model's (a page weighs what its table does: a deep model's every leaf would not fit)."""
    from types import SimpleNamespace

    from atlas.render.filters import at_reference
    if doc.cost is None or doc.cost_summary is None:
        return []
    ref = doc.cost_summary.reference
    whole = at_reference(doc.cost.flops, ref)
    rows = []
    for comp in doc.components[1:]:
        if comp.cost is None or _depth(doc, comp) > COST_TABLE_DEPTH:
            continue
        each = at_reference(comp.cost.flops, ref)
        total = each * comp.instances if comp.cost.flops_all_calls is None else \
            at_reference(comp.cost.flops_all_calls, ref)
        if each > 0 and whole > 0:
            rows.append(SimpleNamespace(comp=comp, each=each, total=total, share=total / whole))
    return rows


def model_context(doc: ModelDoc) -> dict:
    from atlas.render.filters import at_reference, has_positions
    here = page_paths.page_path(doc, doc.root)
    ref = dict(doc.cost_summary.reference) if doc.cost_summary else {}
    tokens = ref.get("B", 1) * ref["T"] if "T" in ref and has_positions(doc) else None
    return {
        "cost_rows": cost_rows(doc),
        "tokens": tokens if doc.cost is not None else None,
        "training_per_token": 3 * at_reference(doc.cost.flops, doc.cost_summary.reference) / tokens
        if doc.cost is not None and tokens else None,
        "doc": doc,
        "comp": doc.root,
        "frozen_parts": view_data.frozen_parts(doc),
        "reconstructions": view_data.reconstructions(doc),
        "explorer": view_data.tree(doc, lambda c: page_paths.url_link(doc, doc.root, c)),
        "diagram": diagram.svg(doc, doc.root, lambda c: page_paths.url_link(doc, doc.root, c)),
        "href": lambda c: page_paths.link(here, page_paths.page_path(doc, c)),
    }


def render(doc: ModelDoc, env: jinja2.Environment | None = None, site_url: str | None = None,
           site_name: str = "Model Atlas", references: dict | None = None) -> dict[str, str]:
    """Every language's pages, and the JSON once (its prose is in English, the source language)."""
    env = env or environment()
    files: dict[str, str] = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            files.update(_pages(own_words.localized(doc), env, site_url, site_name, references))
    for comp in doc.components:
        files[page_paths.data_path(doc, comp)] = serialize.dumps(
            json_export.component_page(doc, comp, page_paths.permalink(doc, comp, site_url)))
    files[page_paths.json_path(doc)] = serialize.dumps(json_export.as_dict(doc))
    return files


def _pages(doc: ModelDoc, env: jinja2.Environment, site_url: str | None, site_name: str,
           references: dict | None) -> dict[str, str]:
    """The active language's pages of one model."""
    files: dict[str, str] = {}
    component_t = env.get_template("component.md.j2")
    model_t = env.get_template("model.md.j2")
    for comp in doc.components:
        path = page_paths.localized(page_paths.page_path(doc, comp), i18n.active())
        if path in files:
            raise ValueError(f"two components map to the page {path}")
        context = component_context(doc, comp, site_url, site_name, references)
        if comp.id:
            page = component_t.render(**context)
        else:
            page = model_t.render({**context, **model_context(doc)})
        files[path] = tex_numbers.localized_page(page)
    return files


def render_catalog(docs, env: jinja2.Environment | None = None) -> dict[str, str]:
    """catalog/index.md in every language: the table that compares the documented models."""
    from atlas.render import comparison, role_pages
    env = env or environment()
    template = env.get_template("catalog.md.j2")
    files = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            roles = [(title, page_paths.link(comparison.PAGE, role_pages.PAGES[role]))
                     for role, title in role_pages.titles().items()]
            files[page_paths.localized(comparison.PAGE, code)] = tex_numbers.localized_page(
                template.render(rows=comparison.rows(docs), docs=docs, roles=roles,
                                compare=page_paths.link(comparison.PAGE, role_pages.COMPARE)))
    return files


def catalog_nav() -> list:
    from atlas.render import comparison
    return [{i18n.gettext("Catalog"): comparison.PAGE}]


def nav(doc: ModelDoc) -> list:
    """The mkdocs nav for one model, in tree order: composites are sections with their page first."""
    doc = own_words.localized(doc)

    def entry(comp):
        page = page_paths.page_path(doc, comp)
        title = html.escape(repeat_label(comp))     # the theme puts nav titles into HTML as they are
        if not comp.children:
            return {title: page}
        return {title: [page, *(entry(doc.component(c)) for c in comp.children)]}

    return [entry(doc.root)]
