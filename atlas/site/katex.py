"""Math rendered to HTML at build time by KaTeX in node, so a LaTeX error fails the build
instead of reaching a reader as red text, and pages need no math JavaScript at all."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from atlas.errors import AtlasError

SCRIPT = Path(__file__).with_name("katex_render.js")
# pymdownx.arithmatex (generic) wraps math as \[...\] in a div and \(...\) in a span; exclude_from_search marks it.
BLOCK = re.compile(r'<div class="arithmatex"(?: data-search-exclude)?>\\\[(.*?)\\\]</div>', re.S)
INLINE = re.compile(r'<span class="arithmatex"(?: data-search-exclude)?>\\\((.*?)\\\)</span>', re.S)


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


def katex_dist(root: Path) -> Path:
    dist = root / "node_modules" / "katex" / "dist"
    if not (dist / "katex.min.css").is_file():
        raise AtlasError(f"KaTeX is not installed in {root / 'node_modules'}: run `npm ci` (make site does)")
    return dist


class Renderer:
    """A long-lived node process; one request per equation."""

    def __init__(self, root: Path) -> None:
        katex_dist(root)
        node = shutil.which("node")
        if node is None:
            raise AtlasError("node is not on PATH; it renders the pages' math with KaTeX")
        self.proc = subprocess.Popen([node, str(SCRIPT)], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={"NODE_PATH": str(root / "node_modules"), "PATH": "/usr/bin:/bin"})
        self.cache: dict[tuple[str, bool], str] = {}

    def render(self, tex: str, display: bool) -> str:
        """One equation's HTML; each language's pages show the same math, so it is rendered once."""
        key = (tex, display)
        if key not in self.cache:
            self.cache[key] = self._render(tex, display)
        return self.cache[key]

    def _render(self, tex: str, display: bool) -> str:
        self.proc.stdin.write(json.dumps({"tex": tex, "display": display}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
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
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


def copy_assets(root: Path, site_dir: Path) -> None:
    """KaTeX's CSS and its woff2 fonts into the built site (never committed to the repository)."""
    dist = katex_dist(root)
    target = site_dir / "assets" / "katex"
    (target / "fonts").mkdir(parents=True, exist_ok=True)
    shutil.copy2(dist / "katex.min.css", target / "katex.min.css")
    for font in (dist / "fonts").glob("*.woff2"):
        shutil.copy2(font, target / "fonts" / font.name)
