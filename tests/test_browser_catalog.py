"""The catalog, the home page's list of models and the citation tabs in a real Chromium, in English and Spanish: at
390 px the catalog is one card per model and nothing is wider than the screen; at 1280 px it is the table."""

import json
import re

import pytest
from conftest import ROOT
from test_browser import CHROMIUM, Path, browser, open_page, server  # noqa: F401  (fixtures)

from atlas import i18n

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is installed by `make test`")

LANGUAGES = [("", "Parameters"), ("es/", "Parámetros")]


def _models() -> list[dict]:
    """Each model folder's JSON, as the site's docs folder holds it."""
    return [json.loads(p.read_text()) for p in sorted((ROOT / "docs").glob("*/atlas.json"))]


def _wider_than_the_screen(page) -> list:
    """Visible tables and code blocks wider than the viewport, and whether the page itself scrolls sideways."""
    return page.evaluate("""() => {
        const out = [];
        for (const el of document.querySelectorAll('article table, article pre')) {
            const r = el.getBoundingClientRect();
            if (el.offsetParent !== null && (r.right > innerWidth + 0.5 || el.scrollWidth > el.clientWidth + 1))
                out.push(el.tagName + ' ' + Math.round(r.width) + '/' + el.scrollWidth);
        }
        if (document.documentElement.scrollWidth > document.documentElement.clientWidth) out.push('page');
        return out;
    }""")


@pytest.mark.parametrize("prefix,parameters", LANGUAGES)
def test_catalog_is_cards_at_390_and_a_table_at_1280(server, browser, prefix, parameters):
    models = _models()
    page, errors = open_page(browser, f"{server[0]}{prefix}catalog/", 390)
    cards = page.locator(".atlas-catalog-card")
    assert cards.count() == len(models)
    assert page.locator(".atlas-catalog table").first.is_hidden()
    assert _wider_than_the_screen(page) == []
    names = [cards.nth(i).locator("strong a").inner_text() for i in range(cards.count())]
    assert sorted(names) == sorted(m["model"] for m in models)
    llama = cards.filter(has=page.locator("strong a", has_text="Llama 3 8B"))
    assert re.search(rf"{parameters}: 8[.,]030[.,]261[.,]248\b", llama.inner_text())
    assert page.locator(".atlas-catalog-legend").is_visible()
    assert errors == []
    page.close()

    page, errors = open_page(browser, f"{server[0]}{prefix}catalog/", 1280)
    assert page.locator(".atlas-catalog table").first.is_visible()
    assert page.locator(".atlas-catalog-cards").is_hidden()
    assert page.locator(".atlas-catalog table tbody tr").count() == len(models)
    assert page.locator(".atlas-catalog-legend").is_visible() and errors == []
    page.close()


@pytest.mark.parametrize("prefix", ["", "es/"])
def test_home_page_lists_every_model_with_its_summary(server, browser, prefix):
    page, errors = open_page(browser, f"{server[0]}{prefix}", 1280)
    items = page.locator(".atlas-home-models li")
    models = _models()
    assert items.count() == len(models)
    for m in models:
        summary = next(c for c in m["components"] if c["id"] == "")["summary"]
        with i18n.language("es" if prefix else "en"):
            shown = i18n.gettext(summary)               # a summary the catalogs hold reads in the page's language
        item = items.filter(has=page.locator("a", has_text=m["model"]))
        assert item.count() == 1 and shown in item.inner_text()
        assert item.locator("a").get_attribute("href").rstrip("/").endswith(m["slug"])
    item.locator("a").click()
    page.wait_for_url(re.compile(rf"/{prefix}{models[-1]['slug']}/$"))
    assert errors == []
    page.close()


@pytest.mark.parametrize("prefix", ["", "es/"])
def test_citation_tabs_fit_a_phone(server, browser, prefix):
    page, errors = open_page(browser, f"{server[0]}{prefix}ldlm/latent_encoder/blocks/mlp/layer_norm/", 390)
    cite = page.locator(".atlas-cite")
    cite.scroll_into_view_if_needed()
    assert cite.locator(".tabbed-labels label").all_inner_texts() == ["BibTeX", "CSL-JSON", "RIS"]
    assert "note" in cite.locator("pre").first.inner_text()
    for label in ("CSL-JSON", "RIS"):
        cite.locator(".tabbed-labels label", has_text=label).click()
        shown = cite.locator(".tabbed-block").filter(has=page.locator("pre:visible"))
        text = shown.locator("pre").inner_text()
        if label == "RIS":
            assert text.startswith("TY  - ELEC") and text.rstrip().endswith("ER  -")
        else:
            assert json.loads(text)[0]["id"].startswith("atlas-ldlm-latent-encoder-blocks-mlp-layer-norm")
        assert _wider_than_the_screen(page) == []
    assert "site_url" not in page.locator("article").inner_text()
    assert errors == []
    page.close()
