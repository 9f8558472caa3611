"""Where each component's page lives. A page's path comes from its component id alone,
so it stays put when unrelated code changes, and a citation keeps pointing at it."""

from __future__ import annotations

import posixpath
import re

from atlas.document import Component, ModelDoc
from atlas.i18n import DEFAULT

_UNSAFE = re.compile(r"[^A-Za-z0-9_,\-]")


def segments(cid: str) -> list[str]:
    return [_UNSAFE.sub("-", s) for s in cid.split(".")] if cid else []


def page_path(doc: ModelDoc, comp: Component) -> str:
    """docs-relative path: the model at <slug>/index.md, composites at .../<id>/index.md, leaves at .../<id>.md."""
    parts = [doc.slug, *segments(comp.id)]
    if comp.children or not comp.id:
        return "/".join(parts) + "/index.md"
    return "/".join(parts) + ".md"


def url(doc: ModelDoc, comp: Component) -> str:
    """The page's site URL (directory URLs), which is also its permalink path."""
    return "/".join([doc.slug, *segments(comp.id)]) + "/"


MODEL_JSON = "atlas.json"           # the model's JSON, in its folder


def json_path(doc: ModelDoc) -> str:
    return f"{doc.slug}/{MODEL_JSON}"


def link(from_page: str, to_page: str) -> str:
    """Relative Markdown link between two docs-relative page paths."""
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")


def data_path(doc: ModelDoc, comp: Component) -> str:
    """The component's JSON: `index.json` under its page's URL, so data and page share a permalink."""
    return url(doc, comp) + "index.json"


def permalink(doc: ModelDoc, comp: Component, site_url: str | None, language: str | None = None) -> str:
    """The page's stable URL; a language other than the default lives under /<language>/."""
    path = (f"{language}/" if language else "") + url(doc, comp)
    return f"{site_url.rstrip('/')}/{path}" if site_url else f"/{path}"


def localized(path: str, language: str) -> str:
    """A page's file in one language: "ldlm/mlp.md" -> "ldlm/mlp.es.md", the default language unchanged."""
    return path if language == DEFAULT else f"{path.removesuffix('.md')}.{language}.md"


def url_link(doc: ModelDoc, from_comp: Component, to_comp: Component) -> str:
    """A link inside raw HTML (which mkdocs does not rewrite): directory URL to directory URL."""
    return posixpath.relpath(url(doc, to_comp), url(doc, from_comp)) + "/"
