"""The model pages' size and dtype calculator in a real Chromium: sizes typed, dtypes picked, figures read as a
reader reads them, in English and Spanish, and the figures it starts from against the ones the static page prints."""

import json
import re
from pathlib import Path

import pytest
import sympy
from babel.numbers import get_decimal_symbol
from test_browser import CHROMIUM, browser, server  # noqa: F401  (fixtures)

from atlas import i18n

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is installed by `make test`")


def _calculator(browser, url: str, width: int = 1280):  # noqa: F811
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_selector(".atlas-calc:not([hidden]) .atlas-calc-results [data-figure]")
    return page, errors


def _figure(page, key: str) -> tuple[str, str]:
    """(value, how it was computed) of one of the calculator's figures, as the page shows them."""
    row = page.locator(f'.atlas-calc [data-figure="{key}"]')
    return row.locator(".atlas-calc-value").inner_text(), row.locator(".atlas-calc-how").inner_text()


def _kv_from_config(data: dict) -> int:
    """Llama's cache elements per token from the configuration figures its atlas.json reads off the code: keys and
    values (2) · layers · KV heads · head dim."""
    layers = data["architecture"]["layers"][0]["value"]
    attention = next(i["params"] for c in data["components"] for i in c["idioms"]
                     if i["kind"] == "attention" and c["id"] == "model.layers.self_attn")
    return 2 * layers * attention["kv_heads"] * attention["head_dim"]


@pytest.mark.parametrize("language", ["en", "es"])
def test_llama_kv_cache_at_32k_positions_in_bf16(server, browser, language):  # noqa: F811
    """T = 32,768 typed, a bf16 cache picked: 2 · 32 layers · 8 KV heads · 128 · 2 bytes = 131,072 bytes per token,
    and that times T (B = 1): 4,294,967,296 bytes; in Spanish written 131.072 and 4.294.967.296."""
    base, site = server
    data = json.loads((site / "llama-3-8b" / "atlas.json").read_text())
    per_token = _kv_from_config(data) * 2                                   # bf16: 2 bytes an element
    t, b = 32768, data["cost_reference"]["sizes"]["B"]
    prefix = "" if language == "en" else f"{language}/"
    page, errors = _calculator(browser, f"{base}{prefix}llama-3-8b/", 1280 if language == "en" else 390)
    page.locator('.atlas-calc input[data-symbol="T"]').fill(str(t))
    page.locator('.atlas-calc select[data-dtype="kv"]').select_option("bf16")
    with i18n.language(language):
        n = i18n.number
        value, how = _figure(page, "kv_per_token")
        assert value.startswith(f"{n(per_token)} ") and "(bf16)" in how, (value, how)
        assert how.startswith(f"{n(_kv_from_config(data))} ")
        value, how = _figure(page, "kv_all")
        assert value.startswith(f"{n(per_token * t * b)} "), value
        assert how.startswith(f"{n(per_token)} ") and f"× {n(t)} × {n(b)}" in how, how
        # int4 weights: half a byte a parameter, exact; their gradients in bf16, Adam's two states in fp32
        page.locator('.atlas-calc select[data-dtype="weights"]').select_option("int4")
        parameters, trained = data["totals"]["parameters"], data["totals"]["trained"]
        half = f"0{get_decimal_symbol(language)}5"
        value, how = _figure(page, "weights")
        assert value.startswith(f"{n(parameters // 2)}{half[1:] if parameters % 2 else ''} ") and \
            how == f"{n(parameters)} {'parameters' if language == 'en' else 'parámetros'} × {half} bytes (int4)", how
        value, how = _figure(page, "training")
        assert value.startswith(f"{n(parameters // 2 + trained * (2 + 2 * 4))} ") and "bf16" in how, (value, how)
    assert per_token == 131072 and per_token * t * b == 4294967296          # the issue's own figures
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    assert errors == []
    page.close()


def _static_flops(html_text: str) -> str:
    """The forward's FLOPs as the page's Cost section prints them: "At B = 1, T = 1024: 15.9 TFLOPs."."""
    cost = html_text[html_text.index('id="cost"'):]
    return re.search(r"(?:At [^:<]+: |That is )([0-9.,]+ [kMGTPE]?FLOPs)\.", cost).group(1)


def test_calculator_flops_at_the_pages_sizes_are_the_static_figures(server, browser):  # noqa: F811
    """On every model page with a calculator: at the sizes it starts with, its forward FLOPs are the formula's exact
    value there, and rounded they are the figure the page prints without JavaScript."""
    base, site = server
    seen = []
    for path in sorted(site.glob("*/atlas.json")):
        data = json.loads(path.read_text())
        if not data["totals"]["cost"]:
            continue
        slug = data["slug"]
        page, errors = _calculator(browser, f"{base}{slug}/")
        value = page.locator('.atlas-calc [data-figure="flops"] .atlas-calc-value').inner_text()
        exact = sympy.sympify(data["totals"]["cost"]["flops"]).subs(data["cost_reference"]["sizes"])
        static = _static_flops((site / slug / "index.html").read_text())
        with i18n.language("en"):
            assert value == f"{i18n.number(int(exact))} FLOPs ({static})", slug
        assert errors == []
        seen.append(slug)
        page.close()
    assert "llama-3-8b" in seen and len(seen) >= 6


def test_the_calculator_by_keyboard(server, browser):  # noqa: F811
    """Tab reaches the sizes and the dtypes; typing a size and choosing a dtype with the arrow keys recomputes; the
    reset button brings back the page's figures."""
    base, site = server
    page, errors = _calculator(browser, f"{base}llama-3-8b/")
    before = _figure(page, "weights")[0]
    page.locator('.atlas-calc input[data-symbol="B"]').focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('data-symbol')") == "T"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('data-dtype')") == "weights"
    page.keyboard.press("ArrowDown")                    # fp32 -> bf16
    weights = _figure(page, "weights")
    data = json.loads((site / "llama-3-8b" / "atlas.json").read_text())
    with i18n.language("en"):
        assert weights[0].startswith(f"{i18n.number(data['totals']['parameters'] * 2)} ") and "(bf16)" in weights[1]
    page.locator('.atlas-calc input[data-symbol="T"]').fill("0")
    assert page.locator(".atlas-calc-invalid").inner_text() == "T must be a whole number from 1."
    page.locator(".atlas-calc-reset").focus()
    page.keyboard.press("Enter")
    assert _figure(page, "weights")[0] == before and page.locator(".atlas-calc-invalid").is_hidden()
    assert errors == []
    page.close()
