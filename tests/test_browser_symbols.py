"""Symbols that explain themselves, and equations that fit a phone: the built site in Chromium (as test_browser)."""

import json
import re

import pytest
from test_browser import CHROMIUM, browser, server  # noqa: F401  (fixtures, shared with test_browser)

pytestmark = pytest.mark.skipif(not __import__("pathlib").Path(CHROMIUM).exists(),
                                reason="Debian's chromium is installed by `make test`")

POPOVER = ".atlas-symbol-popover:not([hidden])"


def _symbols(site, slug: str, cid: str) -> tuple[dict, dict]:
    """A component's symbols from the model's atlas.json, by hover key (the key with every character other than
    letters, digits, _ and - made a -), and the model's dim names."""
    data = json.loads((site / slug / "atlas.json").read_text())
    comp = next(c for c in data["components"] if c["id"] == cid)
    return {re.sub(r"[^A-Za-z0-9_-]", "-", s["key"]): s for s in comp["equations"]["symbols"]}, data["dims"]


def _shape(dims: list, names: dict) -> str:
    """A symbol's shape as the JSON gives it, with each dim named as the JSON's dim vocabulary names it."""
    fixed = {f["value"]: f["label"] for f in names["fixed"]}
    words = []
    for d in dims:
        if isinstance(d, dict):
            words.append(re.sub(r"(\d)\*", r"\1", d["symbol"]) + " " + d["name"])
        else:
            words.append(f"{d} {fixed[d]}" if d in fixed else str(d))
    return "[" + ", ".join(words) + "]"


def _apart(page, key: str) -> bool:
    """Whether the shown popover and the symbol it describes do not overlap, and the popover is inside the
    viewport's width."""
    return page.evaluate("""key => {
      const box = document.querySelector('.atlas-symbol-popover').getBoundingClientRect();
      const owner = document.querySelector('[aria-describedby="atlas-symbol-popover"]');
      if (!owner || owner.dataset.sym !== key) return false;
      const s = owner.getBoundingClientRect();
      const apart = box.bottom <= s.top || box.top >= s.bottom || box.right <= s.left || box.left >= s.right;
      return apart && box.left >= 0 && box.right <= document.documentElement.clientWidth;
    }""", key)


def test_hovering_a_symbol_shows_its_name_shape_and_line(server, browser):
    """On the LDLM encoder block's page, hovering Δ_attn shows its name, its shape with named dims and the line of
    ldlm.py that computes it, linked to that line in the page's Code excerpt; each as the model's atlas.json
    says. Llama 3's attention output o: [B batch, T positions, 4096], from modeling_llama.py."""
    base, site = server
    page = browser.new_page()
    symbols, dims = _symbols(site, "ldlm", "latent_encoder.blocks")
    attn = next(k for k, s in symbols.items() if s["plain"] == "Δ_attn")
    s = symbols[attn]
    assert s["kind"] == "value" and s["file"] == "ldlm.py" and s["line"] > 0
    assert _shape(s["shape"], dims) == "[B batch, T positions, 768 d]"
    page.goto(base + "ldlm/latent_encoder/blocks/")
    page.locator(f'.katex [data-sym="{attn}"]').first.hover()
    pop = page.locator(POPOVER)
    pop.wait_for()
    assert pop.locator(".atlas-symbol-popover__name strong").inner_text() == "Δ_attn"
    assert pop.locator(".atlas-symbol-popover__shape").inner_text() == "shape [B batch, T positions, 768 d]"
    assert pop.locator(".atlas-symbol-popover__source").inner_text() == f"computed at ldlm.py:{s['line']}"
    assert _apart(page, attn)
    # u′_n is computed by a line of the block's forward(), which the page's Code section shows: the popover links
    # to that line's anchor there
    residual = next(k for k, v in symbols.items() if v["plain"] == "u′_n")
    page.locator(f'.katex [data-sym="{residual}"]').first.hover()
    page.wait_for_function(f"document.querySelector('.atlas-symbol-popover').dataset.for === '{residual}'")
    line = symbols[residual]["line"]
    assert pop.locator(".atlas-symbol-popover__source").inner_text() == f"computed at ldlm.py:{line}"
    href = pop.locator(".atlas-symbol-popover__source a").get_attribute("href")
    assert re.fullmatch(rf"#__codelineno-\d+-{line}", href)
    assert page.locator(f'#code ~ * a[href="{href}"]').count() == 1
    # a parameter: where the code first reads it, its transposed shape [768 d, 2304 = 3d]
    qkv = next(k for k, v in symbols.items() if v["plain"] == "W_QKV")
    assert symbols[qkv]["shape"] == [768, 2304]       # 2304 = 3 × 768: the q, k and v features side by side
    page.locator(".tabbed-block").first.locator("details summary", has_text="All 26 steps").click()
    page.locator(f'.katex [data-sym="{qkv}"]').first.hover()
    page.wait_for_function(f"document.querySelector('.atlas-symbol-popover').dataset.for === '{qkv}'")
    assert pop.locator(".atlas-symbol-popover__shape").inner_text() == "shape [768 d, 2304 = 3d]"
    assert pop.locator(".atlas-symbol-popover__source").inner_text() == \
        f"first read at ldlm.py:{symbols[qkv]['line']}"
    # leaving the symbol closes it
    page.mouse.move(1, 1)
    page.wait_for_selector(POPOVER, state="hidden")

    symbols, dims = _symbols(site, "llama-3-8b", "model.layers.self_attn")
    o = next(k for k, v in symbols.items() if v["plain"] == "o")
    assert _shape(symbols[o]["shape"], dims) == "[B batch, T positions, 4096]"
    assert symbols[o]["file"] == "modeling_llama.py"
    page.goto(base + "llama-3-8b/model/layers/self_attn/")
    page.locator(f'.katex [data-sym="{o}"]').first.hover()
    pop.wait_for()
    assert pop.locator(".atlas-symbol-popover__shape").inner_text() == "shape [B batch, T positions, 4096]"
    assert pop.locator(".atlas-symbol-popover__source").inner_text() == \
        f"computed at modeling_llama.py:{symbols[o]['line']}"
    page.close()


def test_keyboard_focus_shows_the_popover_and_escape_closes_it(server, browser):
    """Tab to a symbol: its popover shows, and the symbol is described by it; Escape closes it. In Spanish the
    words are Spanish."""
    base, site = server
    symbols, dims = _symbols(site, "ldlm", "latent_encoder.blocks")
    page = browser.new_page()
    page.goto(base + "ldlm/latent_encoder/blocks/")
    stops = page.locator('.katex [data-sym][tabindex="0"]')
    stops.first.focus()
    page.keyboard.press("Tab")
    key = page.evaluate("document.activeElement.dataset.sym")
    pop = page.locator(POPOVER)
    pop.wait_for()
    assert page.evaluate("document.activeElement.getAttribute('aria-describedby')") == "atlas-symbol-popover"
    assert pop.get_attribute("role") == "tooltip" and pop.get_attribute("data-for") == key
    assert pop.locator(".atlas-symbol-popover__name strong").inner_text() == symbols[key]["plain"]
    assert pop.locator(".atlas-symbol-popover__shape").inner_text() == \
        "shape " + _shape(symbols[key]["shape"], dims)
    assert _apart(page, key)
    page.keyboard.press("Escape")
    page.wait_for_selector(POPOVER, state="hidden")
    assert page.evaluate("document.activeElement.dataset.sym") == key          # the focus stays on the symbol

    page.goto(base + "es/ldlm/latent_encoder/blocks/")
    attn = next(k for k, s in symbols.items() if s["plain"] == "Δ_attn")
    page.locator(f'.katex [data-sym="{attn}"]').first.focus()
    pop.wait_for()
    assert pop.locator(".atlas-symbol-popover__name").inner_text() == "Δ_attn: un valor calculado aquí"
    assert pop.locator(".atlas-symbol-popover__shape").inner_text() == "forma [B lote, T posiciones, 768 d]"
    assert pop.locator(".atlas-symbol-popover__source").inner_text() == \
        f"calculado en ldlm.py:{symbols[attn]['line']}"
    page.close()


def test_a_tap_shows_the_popover_on_a_phone(server, browser):
    """At 390 px a tap on a symbol shows its popover inside the screen, beside the symbol; a tap elsewhere
    closes it."""
    base, site = server
    symbols, _ = _symbols(site, "llama-3-8b", "model.layers.self_attn")
    page = browser.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(base + "llama-3-8b/model/layers/self_attn/")
    q = next(k for k, v in symbols.items() if v["plain"] == "W_O")
    page.locator(f'.katex [data-sym="{q}"]').first.click()
    page.locator(POPOVER).wait_for()
    assert _apart(page, q)
    page.locator("h1").click()
    page.wait_for_selector(POPOVER, state="hidden")
    page.close()
