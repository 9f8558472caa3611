"""The built site in a real Chromium (Debian's /usr/bin/chromium), driven by Playwright for Python."""

import contextlib
import functools
import html
import http.server
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT
from playwright.sync_api import TimeoutError as PlaywrightTimeout

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is installed by `make test`")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """The site as a static host serves it: the pages, and the assets every page shares (the theme's CSS and
    JavaScript, KaTeX's CSS and fonts) marked cacheable for an hour, as GitHub Pages marks them for ten minutes.
    Without that, each page made Chromium ask again for every asset (a 304 each): 10-15% of the crawl's CPU."""
    def log_message(self, *args):
        pass

    def send_response(self, code, message=None):
        super().send_response(code, message)
        if code == 200 and not self.path.split("?", 1)[0].endswith(("/", ".html")):    # a 404 is never kept
            self.send_header("Cache-Control", "max-age=3600")
        if code >= 400:
            self.server.errors.append((self.headers.get("Referer"), self.path, code))

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):     # the browser moved on before a response was sent
            pass


class _EmptySearch(_Quiet):
    """The site as it is, except each language's search index: its own config with no documents."""
    def do_GET(self):
        if not self.path.split("?", 1)[0].endswith("/search/search_index.json"):
            return super().do_GET()
        real = json.loads(Path(self.translate_path(self.path)).read_text())
        body = json.dumps({"config": real["config"], "docs": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Served(tuple):
    """(base URL, site folder) of a served site; `errors` holds (referring page, path, status) of every request
    the server answered with a status of 400 or more."""
    errors: list


@contextlib.contextmanager
def _serve(site: Path, handler):
    """The built site on 127.0.0.1 at a free port."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    httpd.errors = []
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    served = Served((f"http://127.0.0.1:{httpd.server_address[1]}/", site))
    served.errors = httpd.errors
    try:
        yield served
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def search_server(built_site):
    """The site as built, search index and all: for the tests that search."""
    with _serve(built_site[0], _Quiet) as served:
        yield served


@pytest.fixture(scope="module")
def server(built_site):
    """For every browser test that does not search: each page starts Material's search worker, which downloads and
    indexes the language's whole search index (1.8 MB, 2,000 sections) while the page is open; on a busy machine
    a page waits long enough for most of that to run, and it was the largest part of the browser tests' CPU. Served
    empty here: the real indexes are searched by the search tests (search_server) in both languages and read whole
    by test_site_build."""
    with _serve(built_site[0], _EmptySearch) as served:
        yield served


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, args=FLAGS,
                                                       headless=True, viewport={"width": 1280, "height": 1000})
        yield context
        context.close()


def open_page(browser, url: str, width: int = 1280):
    """A new page of `width` px opened at `url`, and the list its console errors and uncaught exceptions go to."""
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return page, errors


def _screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def _switch_language(page, code: str, url_glob: str) -> None:
    """Use the header's language switch, as a reader does: hover it, pick the language."""
    page.locator(".md-header .md-select").first.hover()
    page.locator(f'.md-select__link[hreflang="{code}"]').click()
    page.wait_for_url(url_glob)
    assert page.locator("html").get_attribute("lang") == code


def _pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))


# a start tag (quoted values may hold ">"), and each href or src in it: on all 478 pages of the site the same
# values as html.parser's, in an eighth of its time (0.8 s against 6.5 s for all of them)
_TAG = re.compile(r"""<[a-zA-Z](?:[^>"']|"[^"]*"|'[^']*')*>""")
_REF = re.compile(r"""\s(?:href|src)=(?:"([^"]*)"|'([^']*)')""")


def _refs(text: str) -> list[str]:
    """Every href and src of a page, as written (entities decoded)."""
    return [html.unescape(d or s) for tag in _TAG.findall(text) for d, s in _REF.findall(tag) if d or s]


def _static_checks(site: Path, rel: str, url: str) -> set[str]:
    """What the page's own HTML says, read from the file the server sends: the math was rendered by KaTeX at build
    time, so a KaTeX error or an unrendered formula is in the file. Returns the page's links inside the site."""
    text = (site / rel).read_text()
    assert "katex-error" not in text, url
    if 'class="arithmatex"' in text:
        assert 'class="katex"' in text, url
    return {urllib.parse.urljoin(url, value).split("#", 1)[0] for value in _refs(text)}


PHONE = 390             # the crawl's width: a phone's, where a page is likeliest to scroll sideways
# every block of steps opened and every tab shown, so that each equation of the page is laid out
SHOW_ALL = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const style = document.createElement('style');
  style.textContent = '.tabbed-set > .tabbed-content > .tabbed-block { display: block !important; }';
  document.head.appendChild(style);
}"""
# each equation box whose content (KaTeX's) is wider than the box: how much, and its first characters
WIDE_EQUATIONS = """() => Array.from(document.querySelectorAll('.arithmatex'))
  .filter(b => b.scrollWidth > b.clientWidth + 1)
  .map(b => [b.scrollWidth - b.clientWidth, b.textContent.slice(0, 50)])"""


def _crawl_groups(site: Path) -> dict[str, list[str]]:
    """The pages the crawl opens: in English, every page of the site; in Spanish, every page no model owns (home,
    catalog, reference), each model's home and every LDLM page with children (the pages with blocks of steps,
    diagrams and trees). The Spanish pages are the same templates in another language, and every one of them gets
    the checks of its HTML (test_every_spanish_page_is_whole). A page in Chromium takes 0.2–0.3 s and about 0.3 s
    of CPU over all of Chromium's processes (its renderer 0.18–0.21 s: the HTML's parse, Material's bundle, the first
    style and layout; its browser process 0.07–0.10 s; a page with one paragraph costs 0.11 s in all): with the
    site's build, about a third of the suite's CPU, its largest part. Chromium's renderers are not this process's
    children, so getrusage does not see them; /proc does."""
    models = {m.parent.name for m in site.glob("*/atlas.json")}

    def owner(rel: str) -> str:
        first = rel.removeprefix("es/").split("/", 1)[0]
        return first if first in models else ""

    def has_children(rel: str) -> bool:
        return any((site / rel).parent.glob("*/index.html"))

    return {"en": [rel for rel in _pages(site) if not rel.startswith("es/")],
            "es": [rel for rel in _pages(site) if rel.startswith("es/")
                   and (owner(rel) == "" or rel == f"es/{owner(rel)}/index.html"
                        or (owner(rel) == "ldlm" and has_children(rel)))]}


def test_every_page_loads_clean(server, browser):
    """Pages opened in Chromium as a reader opens a cited link on a phone, 390 px wide: no console error, no failed
    request and no sideways scroll on any of them, no broken link between them, and with every block of steps open
    and every tab shown, no equation box wider than its column (long equations break across lines). One test, one
    page after another: two Chromiums crawling side by side on the two cores cost about 60% more CPU than
    one, while the other xdist worker runs the rest of the suite.

    Each page is left as soon as its load event has fired; the search worker it starts gets an empty index
    (server). A request the site answered with an error is in the server's own list (the site asks nothing of
    another host): listening to every response in Playwright cost this process 0.01 s a page."""
    base, site = server
    page = browser.new_page()
    errors, failed = [], []
    page.on("console", lambda m: errors.append((page.url, m.text)) if m.type == "error" else None)
    # a request cut short because the crawl moved on (the search index loading in the background) is not a failure;
    # a missing file still answers 404, which the server lists
    page.on("requestfailed", lambda r: failed.append((page.url, r.url, r.failure))
            if "ERR_ABORTED" not in (r.failure or "") else None)
    answered = len(server.errors)
    wide, equations, opened = [], {}, []
    page.set_viewport_size({"width": PHONE, "height": 844})
    for pages in _crawl_groups(site).values():
        for rel in pages:
            page.goto(base + rel.removesuffix("index.html"), wait_until="load")
            if page.evaluate("document.documentElement.scrollWidth") > PHONE:      # no sideways scroll
                wide.append(rel)
            page.evaluate(SHOW_ALL)
            if found := page.evaluate(WIDE_EQUATIONS):
                equations[rel] = found
        opened += pages
    page.close()
    assert errors == [] and failed == [] and wide == [] and equations == {} and server.errors[answered:] == []
    assert len([rel for rel in opened if not rel.startswith("es/")]) > 200
    _links_resolve(base, site, opened)


def test_the_crawls_open_every_english_page_and_the_spanish_ones_they_name(built_site):
    """Every page of every model in English, every component page counted from the models' data; in Spanish, the
    LDLM's pages with children (counted from its data) and each model's home, as well as the pages no model
    owns."""
    site, _ = built_site
    groups = _crawl_groups(site)
    english = sorted(groups["en"])
    models = sorted(site.glob("*/atlas.json"))
    components = {m.parent.name: len(json.loads(m.read_text())["components"]) for m in models}
    references = len(list((site / "reference").glob("*/index.html")))
    guide = len(list((site / "guide").rglob("index.html")))      # the hand-written Guide (docs/guide/)
    catalog = len(list((site / "catalog").rglob("index.html")))  # the catalog, the comparison, the role pages
    assert len(models) == 7 and references >= 13 and (site / "reference" / "index.html").is_file() and guide > 1
    assert catalog == 2 + len({e["role"] for m in models for e in json.loads(m.read_text())["roles"]}) == 6
    # every component page of every model, every reference page, the reference index, the catalog's pages, the home
    # and the guide's pages
    assert english == sorted(r for r in _pages(site) if not r.startswith("es/"))
    assert len(english) == len(set(english)) == sum(components.values()) + references + 2 + catalog + guide
    spanish = groups["es"]
    ldlm = json.loads((site / "ldlm" / "atlas.json").read_text())["components"]
    parents = {c["id"].rpartition(".")[0] for c in ldlm if c["id"]}
    assert len(spanish) == len(parents) + references + 2 + catalog + guide + len(models) - 1
    assert {f"es/{slug}/index.html" for slug in components} <= set(spanish)


def test_every_spanish_page_is_whole(server):
    """The HTML of every Spanish page, opened in Chromium or not: math rendered, no KaTeX error, every link inside
    the site answered."""
    base, site = server
    _links_resolve(base, site, [r for r in _pages(site) if r.startswith("es/")])


def _links_resolve(base: str, site: Path, pages: list[str]) -> None:
    links = {link for rel in pages for link in _static_checks(site, rel, base + rel.removesuffix("index.html"))
             if link.startswith(base)}
    broken = []
    for link in sorted(links):
        try:
            with urllib.request.urlopen(link) as r:
                ok = r.status == 200
        except urllib.error.HTTPError:
            ok = False
        if not ok:
            broken.append(link)
    assert broken == [] and len(links) > 100


def test_hovering_q_highlights_every_q(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/latent_encoder/blocks/attn/")
    q = page.locator("[data-sym]:has(.atlas-stream-q)").first
    key = q.get_attribute("data-sym")
    occurrences = page.locator(f'[data-sym="{key}"]').count()
    assert occurrences > 2
    page.locator("details summary").first.click()
    q.hover()
    assert page.locator(f'[data-sym="{key}"].atlas-sym-active').count() == occurrences
    page.mouse.move(0, 0)
    assert page.locator(".atlas-sym-active").count() == 0
    # the keyboard does the same
    q.focus()
    assert page.locator(f'[data-sym="{key}"].atlas-sym-active').count() == occurrences
    color = q.evaluate("e => getComputedStyle(e.querySelector('.atlas-stream-q')).color")
    assert color == page.locator(".atlas-legend .atlas-stream-q").evaluate("e => getComputedStyle(e).color")
    page.close()


def test_all_steps_expand_and_open_from_a_link(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/latent_encoder/blocks/")
    paper = page.locator(".tabbed-block").first            # the paper view, the tab shown first
    summary = paper.locator("details summary", has_text="All 26 steps")
    steps = paper.locator("details .atlas-step-anchor")
    assert steps.count() == 26 and page.locator("details .atlas-step-anchor").count() == 52    # and the code's view
    assert not paper.locator("details .katex-display").first.is_visible()
    summary.click()
    displays = paper.locator("details .katex-display")
    assert displays.count() == 26 and all(displays.nth(i).is_visible() for i in range(26))
    _screenshot(page, "encoder-block.png")
    # a link to a step of the code's view shows that view's tab and opens its steps
    page.goto(base + "ldlm/latent_encoder/blocks/attn/#step-17")
    shown = "id => { const a = document.getElementById(id); return a.closest('details').open && " \
            "a.closest('.tabbed-block').offsetParent !== null }"
    page.wait_for_function(shown, arg="step-17")
    page.goto(base + "ldlm/latent_encoder/blocks/attn/#math-step-17")
    page.wait_for_function(shown, arg="math-step-17")
    page.close()


def test_diagram_box_navigates(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/")
    page.locator(".atlas-diagram svg a", has_text="Latent encoder").first.click()
    page.wait_for_url("**/ldlm/latent_encoder/")
    assert page.locator("h1").inner_text().rstrip("¶") == "Latent encoder"
    page.close()


def test_diagram_edges_and_pills_are_drawn_not_filled_black(server, browser):
    """The flow's edges are strokes and its input and output pills light, their names legible: unstyled, an SVG
    path fills black and a line draws nothing (the pills' names were black on black)."""
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/")
    style = page.evaluate("""() => {
        const s = (sel) => getComputedStyle(document.querySelector('.atlas-diagram ' + sel));
        const edge = s('.atlas-flow-edge'), pill = s('.atlas-flow-in'), name = s('.atlas-flow-name');
        return {edgeFill: edge.fill, edgeStroke: edge.stroke, pill: pill.fill, name: name.fill};
    }""")
    page.close()
    black = "rgb(0, 0, 0)"
    assert style["edgeFill"] == "none" and style["edgeStroke"] not in ("none", black), style
    assert style["pill"] != black and style["pill"] != style["name"], style


def test_search_finds_layernorm(search_server, browser):
    base, _ = search_server
    page = browser.new_page()
    page.goto(base + "ldlm/")
    _search(page, "LayerNorm")
    texts = " ".join(page.locator(".md-search-result__item").all_inner_texts())
    assert "LayerNorm" in texts
    page.close()


def test_screenshot_of_layernorm_page(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/latent_encoder/blocks/mlp/layer_norm/")
    assert page.locator(".katex").count() > 0
    _screenshot(page, "layernorm.png")
    page.close()


def test_reference_page(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "reference/layernorm/")
    headings = page.locator("h2").all_inner_texts()
    assert [h.rstrip("¶") for h in headings[:5]] == ["Definition", "Parameters", "Shapes", "Math", "Examples"]
    assert page.locator(".atlas-verified .katex, .arithmatex .katex").count() > 0
    assert "output shape: (4, 100, 512)" in " ".join(page.locator("pre").all_inner_texts())
    # "Used in" links to the component pages that instantiate it, and they link back
    page.locator("a", has_text="LDLM › LayerNorm").first.click()
    page.wait_for_url("**/ldlm/latent_encoder/blocks/mlp/layer_norm/")
    page.locator("a", has_text="torch.nn.LayerNorm").first.click()
    page.wait_for_url("**/reference/layernorm/")
    _screenshot(page, "reference-layernorm.png")
    page.close()


def test_spanish_site_and_language_switch(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/latent_encoder/blocks/")
    _switch_language(page, "es", "**/es/ldlm/latent_encoder/blocks/")
    text = page.locator("article").inner_text()
    assert "× 6 bloques = 49.587.456" in text and "Rutas del módulo" in text
    assert page.locator(".md-search__input").get_attribute("placeholder") == "Búsqueda"
    # the interactive parts work in Spanish too: the steps open, the math is rendered
    paper = page.locator(".tabbed-block").first
    assert page.locator(".tabbed-labels label").first.inner_text() == "Matemáticas"
    paper.locator("details summary", has_text="Los 26 pasos").click()
    assert paper.locator("details .katex-display").nth(25).is_visible()
    _screenshot(page, "encoder-block-es.png")
    page.goto(base + "es/reference/layernorm/")
    assert page.locator("h2").first.inner_text().rstrip("¶") == "Definición"
    _screenshot(page, "reference-layernorm-es.png")
    _switch_language(page, "en", "**/reference/layernorm/")
    assert page.url.endswith("/reference/layernorm/") and "/es/" not in page.url
    # a section's anchor is the same in both languages, and the switch keeps it
    page.goto(base + "ldlm/latent_encoder/blocks/#cost")
    _switch_language(page, "es", "**/es/ldlm/latent_encoder/blocks/#cost")
    assert page.locator("#cost").inner_text().rstrip("¶") == "Coste"
    page.close()


_RESULTS = """query => {
    // the results of this query: shown, with the query's word marked in them (a previous query's results are
    // still shown while the worker searches the new one); read in the same turn as the check
    const items = [...document.querySelectorAll(".md-search-result__item")];
    const word = query.toLowerCase();
    if (!items.some(i => [...i.querySelectorAll("mark")].some(m => m.textContent.toLowerCase().startsWith(word))))
        return null;
    return [...document.querySelectorAll(".md-search-result__item > a")].map(
        e => [e.href, (e.querySelector("h1, h2") || {innerText: ""}).innerText.trim()]);
}"""


def _search(page, query: str) -> list[tuple[str, str]]:
    """Search as a reader does; the results' links and titles. The search worker builds its index after the page
    loads (seconds on a busy machine); a query typed before it is ready finds nothing, so it is typed again."""
    box = page.locator(".md-search__input")
    box.click()
    deadline = time.monotonic() + 90
    while True:
        box.fill("")
        box.press_sequentially(query)       # keystrokes: a later query after `fill` alone is not searched
        try:
            return [tuple(r) for r in page.wait_for_function(_RESULTS, arg=query, timeout=5000).json_value()]
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise


def test_spanish_search_finds_spanish_pages_with_titles(search_server, browser):
    base, _ = search_server
    page = browser.new_page()
    page.goto(base + "es/ldlm/")
    results = _search(page, "LayerNorm")
    assert len(results) >= 5
    assert all(href.startswith(base + "es/") for href, _ in results), results
    assert all(title and "undefined" not in href for href, title in results), results
    titles = [t for _, t in results]
    assert any(t.startswith("LDLM · ") for t in titles), titles     # titles that read as the English ones are there
    # a Spanish word finds Spanish pages, and a result opens a Spanish page
    results = _search(page, "parámetros")
    assert results and all(href.startswith(base + "es/") for href, _ in results)
    page.locator(".md-search-result__item > a").first.click()
    page.wait_for_load_state()
    assert page.url.startswith(base + "es/") and page.locator("html").get_attribute("lang") == "es"
    # and the English site finds English pages only
    page.goto(base + "ldlm/")
    results = _search(page, "LayerNorm")
    assert results and not any("/es/" in href for href, _ in results)
    page.close()


def test_no_horizontal_scroll_at_390_px(server, browser):
    """English pages of each kind on a phone, with screenshots (the Spanish pages: in their crawl, all at 390 px)."""
    base, _ = server
    language = ""
    page = browser.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    for rel, name in (("ldlm/", "model"), ("ldlm/latent_encoder/blocks/", "encoder-block"),
                      ("ldlm/latent_encoder/blocks/mlp/layer_norm/", "layernorm"), ("catalog/", "catalog"),
                      ("llama-3-8b/", "llama-3-8b"), ("olmoe-1b-7b/model/layers/", "olmoe-layer")):
        page.goto(base + language + rel)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, rel
        if rel != "ldlm/latent_encoder/blocks/mlp/layer_norm/":
            _screenshot(page, f"{name}-{language.rstrip('/') or 'en'}-390.png")
    page.close()


def test_components_tree_columns_line_up_and_class_names_break_between_words(server, browser):
    base, _ = server
    page = browser.new_page()
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(base + "ldlm/")
        tree = page.locator(".atlas-tree")
        # every shown row's total ends at the same x, at every depth
        edges = page.eval_on_selector_all(
            ".atlas-tree .atlas-node-total", "els => els.filter(e => e.offsetParent)"
            ".map(e => Math.round(e.getBoundingClientRect().right))")
        assert len(edges) > 20 and len(set(edges)) == 1, (width, sorted(set(edges)))
        # a class name wraps only at its <wbr>: each of its words sits on one line
        split = page.eval_on_selector_all(".atlas-tree code", """els => els.filter(e => e.offsetParent).flatMap(e =>
            [...e.childNodes].filter(n => n.nodeType === 3).filter(n => {
                const r = document.createRange(); r.selectNodeContents(n);
                return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1; })
            .map(n => n.textContent))""")
        assert split == [], (width, split)
        # the frozen GPT-2 says so, instead of an empty 0.0% bar
        gpt2 = tree.locator("li").first.locator(".atlas-node").first
        assert gpt2.locator(".atlas-node-name a").inner_text() == "GPT-2"
        assert gpt2.locator(".atlas-node-share").inner_text() == "frozen"
        assert "0.0%" not in tree.inner_text()
    page.close()


def test_symbol_tab_stops_name_their_symbol(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/latent_encoder/blocks/")
    stops = page.locator('.katex [data-sym][tabindex="0"]')
    labels = stops.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    # one stop per distinct symbol shown: the two summary lines hold u′_n, u_n, Δ_attn, u_(n+1) and Δ_mlp,
    # and the constants line under them ("where ε = 10⁻⁵") holds ε
    assert labels == ["Highlight every occurrence of u′_n", "Highlight every occurrence of u_n",
                      "Highlight every occurrence of Δ_attn", "Highlight every occurrence of u_(n+1)",
                      "Highlight every occurrence of Δ_mlp", "Highlight every occurrence of ε"]
    shown_keys = page.eval_on_selector_all(".katex [data-sym]", "els => new Set(els.filter(e => !e.closest("
                                           "'details:not([open])')).map(e => e.dataset.sym)).size")
    assert stops.count() == shown_keys
    # opening "All 26 steps" adds a stop for each symbol that only the steps show, each named
    page.locator(".tabbed-block").first.locator("details summary", has_text="All 26 steps").click()
    page.wait_for_function("document.querySelectorAll('.katex [data-sym][tabindex=\"0\"]').length > 6")
    keys = stops.evaluate_all("els => els.map(e => e.dataset.sym)")
    assert len(keys) == len(set(keys)) == page.eval_on_selector_all(
        ".katex [data-sym]", "els => new Set(els.map(e => e.dataset.sym)).size")
    labels = stops.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    assert all(label.startswith("Highlight every occurrence of ") and len(label) > 30 for label in labels)
    assert "Highlight every occurrence of γ_a" in labels          # seed 002's name of the latents' gain
    # Tab walks the symbols one by one, and focus highlights every occurrence
    stops.first.focus()
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.dataset.sym")
    assert focused == keys[1]
    assert page.locator(".atlas-sym-active").count() == page.locator(f'[data-sym="{focused}"]').count()
    page.goto(base + "es/ldlm/latent_encoder/blocks/")
    assert page.locator('.katex [data-sym][tabindex="0"]').first.get_attribute("aria-label") == \
        "Resaltar cada aparición de u′_n"
    page.close()


def test_the_catalog_sorts_by_a_column_and_keeps_the_model_in_view(server, browser):
    """A column's heading sorts the models by its figures (ascending, then descending), in both languages'
    number formats; the model column stays in view while the table scrolls sideways."""
    base, site = server
    page = browser.new_page()
    for prefix in ("", "es/"):
        page.goto(base + prefix + "catalog/")
        heading = page.locator(".atlas-catalog thead th").nth(1)
        names = page.locator(".atlas-catalog tbody tr td:first-child")
        heading.locator("button").click()
        assert heading.get_attribute("aria-sort") == "ascending"
        totals = [int(re.sub(r"\D", "", t.split("\n")[0])) for t in
                  page.locator(".atlas-catalog tbody tr td:nth-child(2)").all_inner_texts()]
        assert totals == sorted(totals) and len(totals) == len(list(site.glob("*/atlas.json")))
        assert names.first.inner_text() == "Whisper base" and names.last.inner_text() == "Llama 3 8B"
        heading.locator("button").click()
        assert heading.get_attribute("aria-sort") == "descending" and names.first.inner_text() == "Llama 3 8B"
        wrap = page.locator(".atlas-catalog .md-typeset__scrollwrap")
        wrap.evaluate("e => { e.scrollLeft = 400; }")
        assert wrap.evaluate("e => e.scrollLeft") > 0
        left = wrap.evaluate("e => e.getBoundingClientRect().left")
        assert abs(names.first.bounding_box()["x"] - left) < 2
    page.close()
