"""The Spanish site is in Spanish: no sentence of the site's own words in English, and no formula whose numbers are
written the English way, on any page of the built site. Quoted library text (docstrings, code) stays as written,
marked as English (lang="en"), and so are the hand-written guide's pages, which are in English only.

The detector reads a page's text outside code, math and what is marked English, block by block, and calls a block
English when it holds English function words, which Spanish does not have."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from atlas import i18n

# words that make most English sentences, none of them a Spanish word
ENGLISH_WORDS = {"the", "of", "and", "is", "are", "with", "from", "this", "that", "which", "for", "its", "not", "by",
                 "to", "into", "has", "have", "was", "were", "each", "every", "when", "where", "what", "how", "it",
                 "be", "or", "at", "on", "in", "an", "as", "than", "then", "there", "their", "they", "we", "you"}
_SKIPPED = {"script", "style", "code", "pre", "svg", "math", "kbd", "samp", "textarea"}
_SKIPPED_CLASSES = {"arithmatex", "katex", "katex-display", "highlight", "linenodiv"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_BLOCKS = {"p", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "div", "summary", "figcaption", "dt", "dd",
           "nav", "label", "a", "title", "blockquote", "span", "button", "caption", "option"}


class _Text(HTMLParser):
    """A page's text blocks, outside code, math and elements marked as another language than the page's."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, bool]] = []      # (tag, skipped)
        self.blocks: list[str] = []
        self.words: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        a = dict(attrs)
        skipped = (tag in _SKIPPED or bool(_SKIPPED_CLASSES & set((a.get("class") or "").split()))
                   or (a.get("lang") or "es").split("-")[0] != "es" or "hidden" in a)
        if tag in _BLOCKS:
            self._flush()
        self.open.append((tag, skipped or (self.open[-1][1] if self.open else False)))

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        while self.open and self.open.pop()[0] != tag:
            pass
        if tag in _BLOCKS:
            self._flush()

    def handle_data(self, data):
        if not (self.open and self.open[-1][1]):
            self.words.append(data)

    def _flush(self):
        text = " ".join("".join(self.words).split())
        self.words = []
        if text:
            self.blocks.append(text)

    def close(self):
        super().close()
        self._flush()


def english_blocks(page: str) -> list[str]:
    """The blocks of a page's text that read as English: two or more English function words."""
    parser = _Text()
    parser.feed(page)
    parser.close()
    return [b for b in parser.blocks
            if sum(w.lower() in ENGLISH_WORDS for w in re.findall(_WORD, b)) >= 2]


_WORD = re.compile(r"\w+(?:\.\w+)*(?:'[a-z]+)?")     # an identifier (fc_in, mlp.fc_in) is one word, none of English's


_MATH_LABEL = re.compile(r'class="arithmatex"[^>]*?aria-label="([^"]*)"')
ENGLISH_NUMBER = re.compile(r"\d,\d{3}|\d\.\d")


def formula_numbers_in_english(page: str) -> list[str]:
    """Each formula of a page (its TeX, which the page carries as the formula's aria-label) with a number grouped
    by commas or with a decimal point."""
    return [tex for tex in map(html.unescape, _MATH_LABEL.findall(page)) if ENGLISH_NUMBER.search(tex)]


def spanish_pages(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in sorted((site / "es").rglob("*.html"))}


# the detector and the checks, on pages written here

PLANTED = "Part of Denoiser, a reconstruction: The paper's denoiser is not public."


def test_the_detector_finds_an_english_sentence_and_skips_what_is_marked_english():
    page = (f'<html lang="es"><body><article><h1>Capa</h1><p>Parte de un bloque: la capa normaliza cada posición.</p>'
            f'<p>{PLANTED}</p><p class="atlas-quote"><em>En el código del modelo:</em> '
            f'<span lang="en">“Normalize the input, then project it back to the width of the model.”</span></p>'
            f'<pre><code>x = the_model(x) if not y else z  # as it is in the code</code></pre>'
            f'<div class="arithmatex">\\(\\text{{the sum of x and y}}\\)</div></article></body></html>')
    assert english_blocks(page) == [PLANTED]
    assert english_blocks(page.replace(f"<p>{PLANTED}</p>", "")) == []


def test_the_formula_check_finds_english_numbers():
    page = ('<span class="arithmatex" role="math" aria-label="F = 6,144\\,B\\,T^{2}"></span>'
            '<span class="arithmatex" role="math" aria-label="{768}^{-0.5}"></span>'
            '<span class="arithmatex" role="math" aria-label="F = 6{.}144\\,B\\,T^{2} + 0{,}125"></span>')
    assert formula_numbers_in_english(page) == ["F = 6,144\\,B\\,T^{2}", "{768}^{-0.5}"]


def test_numbers_in_formulas_follow_the_language():
    from atlas.render.filters import cost_tex, tex_thousands
    from atlas.render.tex_numbers import localized_page
    assert (tex_thousands(16515072), tex_thousands(4096)) == ("16{,}515{,}072", "4{,}096")
    with i18n.language("es"):
        assert (tex_thousands(16515072), tex_thousands(4096)) == ("16{.}515{.}072", "4096")
        assert cost_tex("6144*B*T**2 + 16515072*B*T") == "6144\\,B\\,T^{2}+16{.}515{.}072\\,B\\,T"
    page = ("El paso $x_{0.1}$ vale 0.5 en `p = 0.5`:\n\n$$\n{768}^{-0.5} + 12{.}345\n$$\n\n"
            "    ```python\n    y = 0.125 * x  # $0.5$\n    ```\n")
    assert localized_page(page, "es") == (
        "El paso $x_{0{,}1}$ vale 0.5 en `p = 0.5`:\n\n$$\n{768}^{-0{,}5} + 12{.}345\n$$\n\n"
        "    ```python\n    y = 0.125 * x  # $0.5$\n    ```\n")
    assert localized_page(page, "en") == page


def test_decimals_in_sentences_follow_the_language():
    from atlas.i18n import msg
    rate, rates = msg("dropout %(p)s", p="0.1"), msg("dropout %(p)s", p="0.1, 0.2")
    tiny, word = msg("dropout %(p)s", p="1e-05"), msg("%(setting)s %(value)s", setting="mode", value="arXiv 2605.07933")
    assert [i18n.render(t) for t in (rate, rates, tiny)] == ["dropout 0.1", "dropout 0.1, 0.2", "dropout 1e-05"]
    with i18n.language("es"):
        assert [i18n.render(t) for t in (rate, rates, tiny, word)] == \
            ["dropout 0,1", "dropout 0,1 y 0,2", "dropout 1e-05", "mode arXiv 2605.07933"]


def test_names_read_off_identifiers_are_the_identifiers_in_spanish():
    from types import SimpleNamespace

    from atlas.render import own_words

    def comp(name, cid, cls):
        return SimpleNamespace(name=name, id=cid, cls=cls, name_is_prose=True)
    read = [comp("Q projection", "model.layers.self_attn.q_proj", "torch.nn.modules.linear.Linear"),
            comp("Latent encoder", "latent_encoder", "atlas.zoo.ldlm.LatentEncoder"),
            comp("Post attention layernorm", "model.layers.post_attention_layernorm", "x.LlamaRMSNorm"),
            comp("Norm (norm)", "blocks.norm", "torch.nn.modules.normalization.LayerNorm")]
    terms = [comp("MLP", "blocks.mlp", "atlas.zoo.ldlm.MLP"), comp("FC1", "layers.fc1", "torch.nn.Linear"),
             comp("Dropout", "dropout", "torch.nn.modules.dropout.Dropout"),
             comp("LN 1", "h.ln_1", "torch.nn.modules.normalization.LayerNorm"),
             comp("Encoder block", "blocks", "atlas.zoo.ldlm.EncoderBlock")]
    assert [own_words.read_off_identifier(c) for c in read] == [True] * 4
    assert [own_words.read_off_identifier(c) for c in terms] == [False] * 5


def test_the_zoo_sentences_are_translated(ldlm_files):
    page = ldlm_files["ldlm/denoiser/layers/attn/index.es.md"]
    english = ldlm_files["ldlm/denoiser/layers/attn/index.md"]
    assert "a reconstruction: The paper's denoiser is not public" in english
    assert "una reconstrucción: El denoiser del artículo no es público" in page and "The paper's" not in page
    assert "[6 × Bloque codificador]" in ldlm_files["ldlm/latent_encoder/blocks/mlp/index.es.md"]


# the built site

@pytest.fixture(scope="module")
def pages(built_site):
    site, _ = built_site
    found = spanish_pages(site)
    assert len(found) > 200 and "es/ldlm/denoiser/index.html" in found
    return found


def test_no_english_sentence_of_the_sites_own_words_on_spanish_pages(pages):
    found = {path: blocks for path, page in pages.items() if (blocks := english_blocks(page))}
    assert found == {}, "\n".join(f"{p}: {b[:3]}" for p, b in list(found.items())[:20])
    # not a check that cannot fail: the same pages, with one English sentence planted, fail it
    page = pages["es/ldlm/denoiser/layers/attn/index.html"]
    planted = page.replace("</article>", f"<p>{PLANTED}</p></article>", 1)
    assert english_blocks(planted) == [PLANTED]
    # what the pages quote from the code is there, marked English
    assert '<span lang="en">“' in pages["es/whisper-base/model/encoder/layers/activation_fn/index.html"]


def test_the_guide_is_marked_english_and_says_so(pages):
    page = pages["es/guide/cli/index.html"]
    assert "Esta página solo está escrita en inglés." in page and '<div lang="en">' in page
    assert '<nav class="md-nav md-nav--secondary" lang="en"' in page
    assert "Guía (en inglés)" in page and "Línea de órdenes" in page


def test_no_formula_number_written_the_english_way_on_spanish_pages(pages, built_site):
    found = {path: bad for path, page in pages.items() if (bad := formula_numbers_in_english(page))}
    assert found == {}, "\n".join(f"{p}: {b[:2]}" for p, b in list(found.items())[:20])
    # the numbers are there, in Spanish: grouped with a braced point, decimals with a braced comma
    spanish = pages["es/whisper-base/model/decoder/layers/encoder_attn/index.html"]
    english = (built_site[0] / "whisper-base/model/decoder/layers/encoder_attn/index.html").read_text()
    assert "0{,}125" in spanish and "0.125" in english and "0{,}125" not in english
    labels = " ".join(_MATH_LABEL.findall(pages["es/ldlm/index.html"]))
    assert re.search(r"\d\{\.\}\d{3}", labels)
