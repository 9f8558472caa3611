"""The language switch in Chromium: it keeps the place on the page (#cost), whichever way the reader uses it; and a
Spanish page reads in Spanish at both widths."""

from pathlib import Path

import pytest
from test_browser import CHROMIUM, browser, server  # noqa: F401  (fixtures)
from test_spanish import english_blocks

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is installed by `make test`")


def _switch(page, code: str) -> None:
    """Use the header's language switch, as a reader does: hover it, pick the language."""
    page.locator(".md-header .md-select").first.hover()
    page.locator(f'.md-select__link[hreflang="{code}"]').click()


def test_switching_language_on_cost_lands_on_cost(server, browser):  # noqa: F811
    base, _ = server
    page = browser.new_page()
    page.goto(base + "llama-3-8b/#cost")
    _switch(page, "es")
    page.wait_for_url("**/es/llama-3-8b/#cost")
    assert page.locator("html").get_attribute("lang") == "es"
    assert page.locator("#cost").inner_text().rstrip("¶") == "Coste"
    assert 0 <= page.locator("#cost").bounding_box()["y"] < 200         # scrolled to it, under the header
    # and back, from a section the reader went to after the page loaded
    page.goto(base + "es/ldlm/latent_encoder/blocks/")
    page.evaluate("location.hash = '#module-paths'")
    _switch(page, "en")
    page.wait_for_url("**/ldlm/latent_encoder/blocks/#module-paths")
    assert "/es/" not in page.url and page.locator("html").get_attribute("lang") == "en"
    page.close()


def test_the_switch_links_carry_the_anchor_for_the_keyboard_and_new_tabs(server, browser):  # noqa: F811
    base, _ = server
    page = browser.new_page()
    page.goto(base + "gpt-2/#cost")
    link = page.locator('.md-select__link[hreflang="es"]').first
    assert link.evaluate("a => a.href").endswith("/es/gpt-2/#cost")      # before any click: a copied link keeps it
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/es/gpt-2/#cost")
    page.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_spanish_page_reads_in_spanish(server, browser, width):  # noqa: F811
    base, _ = server
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(base + "es/ldlm/denoiser/layers/attn/")
    article = page.locator("article")
    assert "El denoiser del artículo no es público" in article.inner_text()
    assert english_blocks(article.evaluate("a => a.outerHTML")) == []
    page.close()
