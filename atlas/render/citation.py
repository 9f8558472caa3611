"""How to cite a page: BibTeX, CSL-JSON, RIS and a plain reference that work when pasted elsewhere.

Each names the page's title, the revision of the model code it was generated from (a commit, with its date and so
its year; or, for code read from an installed library, that library's release, which states no date) and the
version of Model Atlas that generated it. With the site's address known (mkdocs.yml `site_url`) a citation gives the
page's absolute URL; without it there is no address to give, and it names the page's path on the site and the
revision instead. No clock is read: regenerating a page gives the same bytes.
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import dataclass

from atlas import i18n
from atlas.document import Component, ModelDoc, Source
from atlas.i18n import msg
from atlas.render import page_paths
from atlas.render.citation_formats import Work, bibtex, bibtex_text, csl_json, ris

__all__ = ["Citation", "atlas_version", "bibtex_text", "cite"]

DISTRIBUTION = "model-atlas"


@dataclass(frozen=True)
class Citation:
    key: str                    # the BibTeX key: atlas-<model>-<component path>[-<language>]
    url: str | None             # the page's absolute URL, when the site's address is known
    path: str                   # the page's path on the site: "es/ldlm/latent_encoder/blocks/"
    revision: str               # "atlas/zoo/ldlm.py, commit 16354bf4cdca (commit date 2026-11-30)"
    bibtex: str
    csl_json: str
    ris: str
    text: str                   # the plain reference, in the page's language


@functools.lru_cache(maxsize=1)
def atlas_version() -> str:
    """The installed Model Atlas's version (the wheel's metadata); a checkout that is not installed fails loud."""
    return importlib.metadata.version(DISTRIBUTION)


def _revision(source: Source | None) -> tuple[str, str, str | None]:
    """(the revision in a sentence, the revision alone, its date) of the model code's root file."""
    if source is None:
        unknown = i18n.render(msg("revision unknown"))
        return unknown, unknown, None
    label = i18n.render(source.label)
    if source.origin == "package":
        return (i18n.render(msg("%(file)s of the installed library %(release)s (a release: it states no commit "
                                "date)", file=source.file, release=label)), label, None)
    if source.date:
        return (i18n.render(msg("%(file)s, %(revision)s (commit date %(date)s)", file=source.file, revision=label,
                                date=source.date)), label, source.date)
    return f"{source.file}, {label}", label, None


def cite(doc: ModelDoc, comp: Component, site_url: str | None, site_name: str,
         language: str | None = None) -> Citation:
    """The citation of one component's page in `language` (None: the default language), rendered in the active one."""
    # a key per language: the Spanish page is another work than the English one, in a bibliography beside it
    key = "atlas-" + "-".join([doc.slug, *page_paths.segments(comp.id), *([language] if language else [])]) \
        .replace("_", "-").replace(",", "-")
    path = (f"{language}/" if language else "") + page_paths.url(doc, comp)
    url = page_paths.permalink(doc, comp, site_url, language) if site_url else None
    revision, version, date = _revision(doc.root.source)
    title = f"{doc.name} · {comp.name}" if comp.id else doc.name
    component = comp.id or i18n.render(msg("(model)"))
    note = msg("Component %(component)s of %(model)s, %(class_name)s; generated from %(revision)s by Model Atlas "
               "%(version)s", component=component, model=doc.name, class_name=comp.cls, revision=revision,
               version=atlas_version())
    ck = doc.checkpoint
    if ck is not None:
        note = msg("%(note)s; checkpoint %(file)s, sha256 %(hash)s", note=note, file=ck.file, hash=ck.sha256)
    where = i18n.render(msg("Page path %(path)s of the site, %(revision)s", path=path, revision=revision))
    work = Work(key, title, site_name, i18n.active(), url, path, version, date, where, i18n.render(note))
    latex_path = "\\path{" + path + "}"         # the url package's \path: a path, set as written
    where_latex = i18n.render(msg("Page path %(path)s of the site, %(revision)s", path=latex_path,
                                  revision=bibtex_text(revision)))
    place = url or i18n.render(msg("Page path %(path)s of the site.", path=path))
    if ck is None:
        text = msg("%(site)s. “%(title)s”. Component %(component)s of %(model)s. Generated from %(revision)s by "
                   "Model Atlas %(version)s. %(place)s", site=site_name, title=title, component=component,
                   model=doc.name, revision=revision, version=atlas_version(), place=place)
    else:
        text = msg("%(site)s. “%(title)s”. Component %(component)s of %(model)s. Generated from %(revision)s by "
                   "Model Atlas %(version)s. Checkpoint %(file)s, sha256 %(hash)s. %(place)s", site=site_name,
                   title=title, component=component, model=doc.name, revision=revision, version=atlas_version(),
                   file=ck.file, hash=ck.sha256, place=place)
    return Citation(key, url, path, revision, bibtex(work, where_latex), csl_json(work), ris(work),
                    i18n.render(text))
