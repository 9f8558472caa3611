"""One citation's fields written as BibTeX, CSL-JSON and RIS: the three formats reference managers import.

Every field comes from the page's Work (atlas.render.citation); a field the work does not have (a URL on a site
without `site_url`, a date for code that is an installed library's release) is left out, never made up. Nothing
here reads a clock: the same page gives the same bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_BIBTEX_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$",
                    "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


@dataclass(frozen=True)
class Work:
    """What a citation of one page says, in the page's language."""

    key: str                    # atlas-<model>-<component path>[-<language>]
    title: str
    author: str                 # the site's name, as an organization
    language: str               # "en", "es"
    url: str | None             # the page's absolute URL, when the site's address is known
    path: str                   # the page's path on the site: "es/ldlm/latent_encoder/blocks/"
    version: str                # the model code's revision: "commit 16354bf4cdca", "transformers 5.24.0"
    date: str | None            # that commit's date, "2026-11-30"; None for a release
    where: str                  # without a URL: the page's path and the revision, as a sentence
    note: str                   # the component, its class, the revision and the atlas version


def bibtex_text(text: str) -> str:
    """Text for a BibTeX field, LaTeX specials escaped: latent_encoder -> latent\\_encoder."""
    return re.sub(r"[\\{}&%$#_~^]", lambda m: _BIBTEX_SPECIALS[m.group(0)], text)


def bibtex(w: Work, where_latex: str) -> str:
    """A @misc entry; `where_latex` is the howpublished text without a URL, its path set with \\path."""
    fields = [("title", f"{{{bibtex_text(w.title)}}}"), ("author", f"{{{bibtex_text(w.author)}}}")]
    if w.date:
        fields += [("year", w.date[:4]), ("date", w.date)]
    fields.append(("version", bibtex_text(w.version)))
    if w.url:
        fields += [("url", w.url), ("howpublished", f"\\url{{{w.url}}}")]
    else:
        fields.append(("howpublished", where_latex))
    fields += [("language", w.language), ("note", bibtex_text(w.note))]
    lines = [f"  {name:<12} = {{{value}}}" for name, value in fields]
    return f"@misc{{{w.key},\n" + ",\n".join(lines) + "\n}"


def csl_json(w: Work) -> str:
    """A CSL-JSON list of one item (what Zotero, Mendeley and pandoc's citeproc read)."""
    item: dict = {"id": w.key, "type": "webpage", "title": w.title, "author": [{"literal": w.author}],
                  "language": w.language, "version": w.version}
    if w.date:
        item["issued"] = {"date-parts": [[int(part) for part in w.date.split("-")]]}
    if w.url:
        item["URL"] = w.url
    else:
        item["medium"] = w.where
    item["note"] = w.note
    return json.dumps([item], ensure_ascii=False, indent=2)


def ris(w: Work) -> str:
    """An RIS record: TY first, ER last, each line `XX  - value`."""
    tags = [("TY", "ELEC"), ("ID", w.key), ("TI", w.title), ("AU", w.author)]
    if w.date:
        tags += [("PY", w.date[:4]), ("DA", w.date.replace("-", "/"))]
    tags.append(("ET", w.version))
    tags.append(("UR", w.url) if w.url else ("N1", w.where))
    tags += [("LA", w.language), ("N1", w.note), ("ER", "")]
    return "\n".join(f"{tag}  - {value}" for tag, value in tags)
