"""The list of every documented model on a hand-written page: a marker the page's author places (the home page has
it; `atlas init` writes one into a new site's), filled by the mkdocs plugin in each language's build.

    <!-- atlas:models -->

becomes one line per model folder of the docs folder (atlas.site.documented): its name, linked to its page, and its
one-line summary, the model's root component's as its atlas.json holds it. A summary that is one of the atlas's own
sentences without arguments (or a zoo model's, which the catalogs hold) reads in the page's language; a model
author's words read as written, quoted and marked as English on a page in another language. The list is read
from the docs folder at each build, so it follows the models a build documented, and a page without the marker is
left as it is.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from atlas import i18n
from atlas.i18n import msg
from atlas.render.filters import md_text
from atlas.render.page_paths import MODEL_JSON
from atlas.site import documented

MARKER = "<!-- atlas:models -->"


def models(docs: Path) -> list[tuple[str, str, str]]:
    """(folder, name, summary) of each documented model, by folder name."""
    out = []
    for folder in documented.folders(docs):
        data = json.loads((folder / MODEL_JSON).read_text(encoding="utf-8"))
        root = next(c for c in data["components"] if c["id"] == "")
        out.append((folder.name, data["model"], root["summary"]))
    return out


def listing(entries: list[tuple[str, str, str]], page: str) -> str:
    """The Markdown list for the page at docs-relative path `page`, in the active language."""
    if not entries:
        return i18n.render(msg("No model is documented yet: `atlas build` writes their pages."))
    lines = []
    for folder, name, summary in entries:
        link = posixpath.relpath(f"{folder}/index.md", posixpath.dirname(page) or ".")
        lines.append(f"- [{md_text(name)}]({link}): {_summary(summary)}")
    return '<div class="atlas-home-models" markdown>\n\n' + "\n".join(lines) + "\n\n</div>"


def _summary(text: str) -> str:
    """The summary in the page's language where the catalogs hold it; else the model author's English, quoted and
    marked as English on a page in another language."""
    found = i18n.gettext(text)
    if i18n.active() == i18n.DEFAULT or found != text:
        return md_text(found)
    return f'<span lang="en">“{md_text(text)}”</span>'


def fill(markdown: str, page: str, docs: Path) -> str:
    """The page's Markdown with each marker that stands on a line of its own, outside fenced code, replaced by the
    list; a page without one unchanged (a marker quoted in code, `<!-- atlas:models -->`, stays as written)."""
    if MARKER not in markdown:
        return markdown
    lines, fence, found = markdown.split("\n"), None, False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = None if fence and stripped.startswith(fence) else fence or stripped[:3]
        elif fence is None and stripped == MARKER:
            lines[i], found = listing(models(docs), page), True
    return "\n".join(lines) if found else markdown
