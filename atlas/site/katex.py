"""Math rendered to HTML at build time by KaTeX, run in-process by an embedded V8 (mini-racer), so a LaTeX error
fails the build instead of reaching a reader as red text, and pages need no math JavaScript at all. KaTeX is the
copy the wheel carries (atlas.resources.KATEX): a project needs neither node nor npm."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

from atlas.errors import AtlasError
from atlas.resources import KATEX

# pymdownx.arithmatex (generic) wraps math as \[...\] in a div and \(...\) in a span; exclude_from_search marks it.
BLOCK = re.compile(r'<div class="arithmatex"(?: data-search-exclude)?>\\\[(.*?)\\\]</div>', re.S)
INLINE = re.compile(r'<span class="arithmatex"(?: data-search-exclude)?>\\\((.*?)\\\)</span>', re.S)
# Only \htmlClass and \htmlData are trusted; strict about everything but the HTML extension, which carries the
# stream classes and symbol keys. Pages carry role="math" and the LaTeX as aria-label instead of MathML.
RENDER = r"""
function atlasRender(tex, display) {
  try {
    return JSON.stringify({html: katex.renderToString(tex, {
      displayMode: display, throwOnError: true, output: "html",
      strict: function (code) { return code === "htmlExtension" ? "ignore" : "error"; },
      trust: function (c) { return c.command === "\\htmlClass" || c.command === "\\htmlData"; }})});
  } catch (err) {
    return JSON.stringify({error: String(err && err.message ? err.message : err)});
  }
}
"""


def exclude_from_search(content: str) -> str:
    """A page's math, still LaTeX, marked for Material's search to leave out. Rendered first, it would read in the
    index as glyph soup ("μd(x)σd2(x)yε=7681j=1∑768..."), and parsing KaTeX's markup would take about half of the
    site build; the page is rendered (Renderer.page) after the search has read it."""
    return (content.replace('<div class="arithmatex">', '<div class="arithmatex" data-search-exclude>')
            .replace('<span class="arithmatex">', '<span class="arithmatex" data-search-exclude>'))


def _readable(tex: str) -> str:
    """The LaTeX without the site's markup (stream classes, symbol keys), for screen readers."""
    from atlas.render.math_markup import strip_markup
    return " ".join(strip_markup(tex, keep_streams=False).split())


def katex_dist() -> Path:
    if not (KATEX / "katex.min.js").is_file():
        raise AtlasError(f"KaTeX is not in {KATEX}: a wheel built from the repository carries it; in a clone of "
                         "the repository, run `npm ci` (make site does)")
    return KATEX


class Renderer:
    """One V8 context holding KaTeX; one call per equation."""

    def __init__(self) -> None:
        from py_mini_racer import MiniRacer
        self.context = MiniRacer()
        self.context.eval((katex_dist() / "katex.min.js").read_text(encoding="utf-8"))
        self.context.eval(RENDER)
        self.cache: dict[tuple[str, bool], str] = {}

    def render(self, tex: str, display: bool) -> str:
        """One equation's HTML; each language's pages show the same math, so it is rendered once."""
        key = (tex, display)
        if key not in self.cache:
            self.cache[key] = self._render(tex, display)
        return self.cache[key]

    def _render(self, tex: str, display: bool) -> str:
        reply = json.loads(self.context.call("atlasRender", tex, display))
        if "error" in reply:
            raise ValueError(reply["error"])
        return reply["html"]

    def page(self, content: str, where: str) -> str:
        def sub(display: bool):
            def replace(m):
                tex = html.unescape(m.group(1)).strip()
                try:
                    out = self.render(tex, display)
                except ValueError as exc:
                    raise AtlasError(f"{where}: LaTeX error in `{tex[:160]}`: {exc}") from None
                tag = "div" if display else "span"
                label = html.escape(_readable(tex), quote=True)
                return f'<{tag} class="arithmatex" role="math" aria-label="{label}">{out}</{tag}>'
            return replace
        content = BLOCK.sub(sub(True), content)
        return INLINE.sub(sub(False), content)

    def close(self) -> None:
        self.context.close()


def copy_assets(site_dir: Path) -> None:
    """KaTeX's CSS and its woff2 fonts into the built site (never committed to the repository)."""
    dist = katex_dist()
    target = site_dir / "assets" / "katex"
    (target / "fonts").mkdir(parents=True, exist_ok=True)
    shutil.copy2(dist / "katex.min.css", target / "katex.min.css")
    for font in (dist / "fonts").glob("*.woff2"):
        shutil.copy2(font, target / "fonts" / font.name)
