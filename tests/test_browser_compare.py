"""The comparison of two models and the role pages in a real Chromium: the reader picks Llama 3 8B and OLMoE 1B-7B
and reads their attention and feed-forward side by side, in English and Spanish, at 1280 and 390 px."""

import re

import pytest
from test_browser import CHROMIUM, Path, browser, open_page, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is installed by `make test`")


def _cells(page, caption: str, label: str) -> list:
    """The two models' cells of one row (by its label) of one role's table (by its caption)."""
    table = page.locator(".atlas-compare-table table").filter(
        has=page.locator("caption", has_text=re.compile(f"^{re.escape(caption)}$")))
    row = table.locator("tbody tr").filter(has=page.locator("th", has_text=re.compile(f"^{re.escape(label)}$")))
    return [row.first.locator("td").nth(i) for i in (0, 1)]


def _no_page_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def test_compare_llama_with_olmoe(server, browser):
    page, errors = open_page(browser, server[0] + "catalog/compare/")
    page.locator("select[name=a]").select_option(label="Llama 3 8B")
    page.locator("select[name=b]").select_option(label="OLMoE 1B-7B")
    page.wait_for_selector('.atlas-compare-result[data-pair="llama-3-8b olmoe-1b-7b"]')
    assert page.url.endswith("?a=llama-3-8b&b=olmoe-1b-7b")
    a, b = _cells(page, "Attention", "Kind")
    assert a.inner_text().endswith("GQA 32/8") and b.inner_text().endswith("MHA 16/16")
    assert "atlas-differs" in a.get_attribute("class") and a.locator(".atlas-sr").count() == 1
    a, b = _cells(page, "Attention", "KV heads")
    assert a.inner_text().endswith("8") and b.inner_text().endswith("16")
    a, b = _cells(page, "Attention", "head dim")            # equal: not marked
    assert a.inner_text() == b.inner_text() == "128" and not a.get_attribute("class")
    a, b = _cells(page, "MLP and mixtures of experts", "Kind")
    assert a.inner_text().endswith("dense SwiGLU") and b.inner_text().endswith("64 experts (top-8)")
    a, b = _cells(page, "Totals", "Active parameters per token")
    assert a.inner_text().endswith("8,030,261,248") and b.inner_text().endswith("1,282,017,280")
    a, b = _cells(page, "Totals", "KV cache per token, whole model")
    assert a.inner_text().endswith("262,144 bytes") and b.inner_text() == "262,144 bytes"
    link = _cells(page, "Attention", "Component")[0].locator("a")
    assert link.get_attribute("href").endswith("/llama-3-8b/model/layers/self_attn/")
    assert errors == []
    page.close()


def test_compare_deep_link_in_spanish_at_390px(server, browser):
    page, errors = open_page(browser, server[0] + "es/catalog/compare/?a=llama-3-8b&b=olmoe-1b-7b", 390)
    page.wait_for_selector('.atlas-compare-result[data-pair="llama-3-8b olmoe-1b-7b"]')
    assert page.locator("select[name=a]").input_value() == "llama-3-8b"
    a, b = _cells(page, "MLP y mezclas de expertos", "Tipo")
    assert a.inner_text().endswith("SwiGLU denso") and b.inner_text().endswith("64 expertos (top-8)")
    a, b = _cells(page, "Totales", "Parámetros")
    assert a.inner_text().endswith("8.030.261.248")
    link = _cells(page, "Atención", "Componente")[0].locator("a")
    assert "/es/llama-3-8b/model/layers/self_attn/" in link.get_attribute("href")
    _no_page_scroll(page)
    assert errors == []
    page.close()


@pytest.mark.parametrize("role", ["attention", "normalization", "mlp", "positions"])
def test_role_page_at_390px(server, browser, role):
    for prefix in ("", "es/"):
        page, errors = open_page(browser, server[0] + f"{prefix}catalog/{role}/", 390)
        assert page.locator(".atlas-roles table tbody tr").count() > 0
        assert page.locator(".atlas-roles .katex").count() > 0
        _no_page_scroll(page)
        assert errors == []
        page.close()
