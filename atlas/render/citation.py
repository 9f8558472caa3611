"""How to cite a page: BibTeX and a plain reference that work when pasted elsewhere.

With the site's address known (mkdocs.yml `site_url`), a citation gives the page's absolute URL.
Without it there is no address to give: the citation names the page's path on the site and the
revision of the model code it was generated from, and says that this is what it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atlas import i18n
from atlas.document import Component, ModelDoc
from atlas.i18n import msg
from atlas.render import page_paths

_BIBTEX_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$",
                    "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


@dataclass(frozen=True)
class Citation:
    key: str                    # the BibTeX key: atlas-<model>-<component path>[-<language>]
    url: str | None             # the page's absolute URL, when the site's address is known
    path: str                   # the page's path on the site: "es/ldlm/latent_encoder/blocks/"
    revision: str               # "atlas/zoo/ldlm.py, commit 16354bf4cdca"
    bibtex: str
    text: str                   # the plain reference, in the page's language


def bibtex_text(text: str) -> str:
    """Text for a BibTeX field, LaTeX specials escaped: latent_encoder -> latent\\_encoder."""
    return re.sub(r"[\\{}&%$#_~^]", lambda m: _BIBTEX_SPECIALS[m.group(0)], text)


def cite(doc: ModelDoc, comp: Component, site_url: str | None, site_name: str,
         language: str | None = None) -> Citation:
    """The citation of one component's page in `language` (None: the default language), rendered in the active one."""
    # a key per language: the Spanish page is another work than the English one, in a bibliography beside it
    key = "atlas-" + "-".join([doc.slug, *page_paths.segments(comp.id), *([language] if language else [])]) \
        .replace("_", "-").replace(",", "-")
    path = (f"{language}/" if language else "") + page_paths.url(doc, comp)
    url = page_paths.permalink(doc, comp, site_url, language) if site_url else None
    root = doc.root.source
    revision = f"{root.file}, {i18n.render(root.label)}" if root else i18n.render(msg("revision unknown"))
    title = f"{doc.name} · {comp.name}" if comp.id else doc.name
    component = comp.id or i18n.render(msg("(model)"))
    note = msg("Component %(component)s of %(model)s, %(class_name)s; generated from %(revision)s",
               component=component, model=doc.name, class_name=comp.cls, revision=revision)
    ck = doc.checkpoint
    if ck is not None:
        note = msg("%(note)s; checkpoint %(file)s, sha256 %(hash)s", note=note, file=ck.file, hash=ck.sha256)
    latex_path = f"\\path{{{path}}}"        # the url package's \path: a path, set as written
    where = f"\\url{{{url}}}" if url else i18n.render(msg("Page path %(path)s of the site", path=latex_path))
    bib = "\n".join([
        f"@misc{{{key},",
        f"  title        = {{{{{bibtex_text(title)}}}}},",
        f"  author       = {{{{{bibtex_text(site_name)}}}}},",
        f"  howpublished = {{{where}}},",
        f"  note         = {{{bibtex_text(i18n.render(note))}}}",
        "}",
    ])
    place = url or i18n.render(msg("Page path %(path)s of the site.", path=path))
    if ck is None:
        text = msg("%(site)s. “%(title)s”. Component %(component)s of %(model)s. Generated from %(revision)s. "
                   "%(place)s", site=site_name, title=title, component=component, model=doc.name,
                   revision=revision, place=place)
    else:
        text = msg("%(site)s. “%(title)s”. Component %(component)s of %(model)s. Generated from %(revision)s. "
                   "Checkpoint %(file)s, sha256 %(hash)s. %(place)s", site=site_name, title=title,
                   component=component, model=doc.name, revision=revision, file=ck.file, hash=ck.sha256,
                   place=place)
    return Citation(key, url, path, revision, bib, i18n.render(text))
