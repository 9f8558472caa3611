"""The built site in a real Chromium (Debian's /usr/bin/chromium), driven by Playwright for Python."""

import functools
import http.server
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is installed by `make test`")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_site):
    site, _ = built_site
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", site
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, args=FLAGS,
                                                       headless=True, viewport={"width": 1280, "height": 1000})
        yield context
        context.close()


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


def test_every_page_loads_clean(server, browser):
    base, site = server
    page = browser.new_page()
    errors, failed = [], []
    page.on("console", lambda m: errors.append((page.url, m.text)) if m.type == "error" else None)
    # a request cut short because the crawl moved on (the search index loading in the background) is not a failure;
    # a missing file still answers 404, which the response listener catches
    page.on("requestfailed", lambda r: failed.append((page.url, r.url, r.failure))
            if "ERR_ABORTED" not in (r.failure or "") else None)
    page.on("response", lambda r: failed.append((page.url, r.url, r.status)) if r.status >= 400 else None)
    links: set[str] = set()
    checked = 0
    for rel in _pages(site):
        url = base + rel.removesuffix("index.html")
        page.goto(url, wait_until="load")
        html = (site / rel).read_text()
        assert page.locator(".katex-error").count() == 0, url
        if 'class="arithmatex"' in html:
            assert page.locator(".katex").count() > 0, url
        for attr in ("href", "src"):
            for value in page.eval_on_selector_all(f"[{attr}]", f"els => els.map(e => e.getAttribute('{attr}'))"):
                target = urllib.parse.urljoin(url, value)
                if target.startswith(base):
                    links.add(target.split("#", 1)[0])
        checked += 1
    page.close()
    assert errors == [] and failed == []
    import json
    components = len(json.loads((site / "ldlm" / "atlas.json").read_text())["components"])
    references = len(list((site / "reference").glob("*/index.html")))
    assert references == 6
    # every component page, reference page and the home, in English and in Spanish
    assert checked == 2 * (components + references + 1)
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
    summary = page.locator("details summary", has_text="All 26 steps")
    steps = page.locator("details .atlas-step-anchor")
    assert steps.count() == 26
    assert not page.locator("details .katex-display").first.is_visible()
    summary.click()
    displays = page.locator("details .katex-display")
    assert displays.count() == 26 and all(displays.nth(i).is_visible() for i in range(26))
    _screenshot(page, "encoder-block.png")
    page.goto(base + "ldlm/latent_encoder/blocks/attn/#step-17")
    page.wait_for_function("document.querySelector('details').open === true")
    assert page.locator("#step-17").is_visible() or page.locator("details").first.get_attribute("open") is not None
    page.close()


def test_diagram_box_navigates(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/")
    page.locator(".atlas-diagram svg a", has_text="Latent encoder").first.click()
    page.wait_for_url("**/ldlm/latent_encoder/")
    assert page.locator("h1").inner_text().rstrip("¶") == "Latent encoder"
    page.close()


def test_search_finds_layernorm(server, browser):
    base, _ = server
    page = browser.new_page()
    page.goto(base + "ldlm/")
    page.locator("label.md-search__icon, .md-search__input").first.click()
    page.locator(".md-search__input").fill("LayerNorm")
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15000)
    texts = " ".join(results.all_inner_texts())
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
    assert [h.rstrip("¶") for h in headings[:4]] == ["Definition", "Parameters", "Math", "Examples"]
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
    page.locator("details summary", has_text="Los 26 pasos").click()
    assert page.locator("details .katex-display").nth(25).is_visible()
    _screenshot(page, "encoder-block-es.png")
    page.goto(base + "es/reference/layernorm/")
    assert page.locator("h2").first.inner_text().rstrip("¶") == "Definición"
    _screenshot(page, "reference-layernorm-es.png")
    _switch_language(page, "en", "**/reference/layernorm/")
    assert page.url.endswith("/reference/layernorm/") and "/es/" not in page.url
    page.close()
