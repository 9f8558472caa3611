"""Two languages: Babel catalogs complete for every string, CLDR numbers, pages in pairs."""

import pickle
import re
import shutil

import pytest
from conftest import ROOT

from atlas import i18n
from atlas.i18n import msg, msgn
from atlas.render import page_paths
from atlas.site import message_catalogs


def test_every_message_has_a_spanish_translation():
    assert message_catalogs.missing("es") == []


def test_a_new_template_string_without_translation_fails(tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(ROOT / "templates", templates)
    page = templates / "component.md.j2"
    page.write_text(page.read_text() + '\n{{ _("A sentence no translator has seen") }}\n')
    assert message_catalogs.missing("es", templates) == ["atlas: no es translation of 'A sentence no translator has seen'"]


def test_the_message_templates_are_current():
    """atlas/i18n/locale/<domain>.pot holds what `python -m atlas.site.message_catalogs update` extracts now."""
    from babel.messages.pofile import read_po
    for domain in i18n.DOMAINS:
        with (i18n.LOCALE_DIR / f"{domain}.pot").open("rb") as f:
            stored = {m.id for m in read_po(f) if m.id}
        assert stored == {m.id for m in message_catalogs.extract(domain) if m.id}, domain


@pytest.mark.parametrize("code, small, large", [("en", "9,216", "49,587,456"), ("es", "9216", "49.587.456")])
def test_numbers_follow_cldr(code, small, large):
    with i18n.language(code):
        assert (i18n.number(9216), i18n.number(49587456)) == (small, large)


def test_no_sentence_is_given_a_number_already_grouped():
    """A number handed to msg() as f"{n:,}" keeps its English commas on the Spanish pages: arguments are ints, and
    each language groups them (test_numbers_follow_cldr)."""
    import ast
    found = []
    for path in sorted((ROOT / "atlas").rglob("*.py")):
        for call in ast.walk(ast.parse(path.read_text())):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("msg", "msgn"):
                for kw in call.keywords:
                    specs = [n.format_spec for n in ast.walk(kw.value) if isinstance(n, ast.FormattedValue)]
                    if any("," in ast.unparse(s) for s in specs if s is not None):
                        found.append(f"{path.relative_to(ROOT)}:{call.lineno} {kw.arg}")
    assert found == []


def test_text_is_english_until_rendered_in_a_language():
    t = msg("%(name)s owns its %(owned)s: %(count)s parameters per instance.", name="LayerNorm",
            owned=(msg("Learned gain").lowered(), msg("Learned bias").lowered()), count=1536)
    assert t == "LayerNorm owns its learned gain and learned bias: 1,536 parameters per instance."
    with i18n.language("es"):
        assert i18n.render(t) == "LayerNorm posee ganancia aprendida y sesgo aprendido: 1536 parámetros por instancia."
    assert pickle.loads(pickle.dumps(t)).translated() == t
    assert msgn("forward() computes the step shown above, checked against it on random inputs "
                "(max error within %(error)s).",
                "forward() computes the %(n)s steps shown above, checked against it on random inputs "
                "(max error within %(error)s).", 30, error="1e-12").startswith("forward() computes the 30 steps")


def test_every_page_has_its_spanish_pair(ldlm_files):
    english = {p for p in ldlm_files if p.endswith(".md") and not p.endswith(".es.md")}
    spanish = {p for p in ldlm_files if p.endswith(".es.md")}
    assert len(english) == 76 and spanish == {page_paths.localized(p, "es") for p in english}


def test_spanish_encoder_block_page(ldlm_files):
    page = ldlm_files["ldlm/latent_encoder/blocks/index.es.md"]
    assert "**parámetros:** 8.264.576 · × 6 bloques = 49.587.456" in page
    assert "En 6 bloques: 8.264.576 × 6 = 49.587.456 parámetros." in page
    assert "## Rutas del módulo" in page and "Los 26 pasos" in page and "donde $" in page
    assert "**Verificado:** estas ecuaciones" in page
    # the math is the same in both languages
    english = ldlm_files["ldlm/latent_encoder/blocks/index.md"]
    assert [l for l in page.splitlines() if l.startswith("\\htmlData")] == \
        [l for l in english.splitlines() if l.startswith("\\htmlData")]


def test_spanish_layernorm_page(ldlm_files):
    page = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.es.md"]
    assert "**parámetros:** 1536 · × 6 bloques = 9216" in page
    assert "| Ganancia aprendida `weight` | 768 | 768 |" in page
    assert "`es/ldlm/latent_encoder/blocks/mlp/layer_norm/`" in page


def test_spanish_pages_translate_the_words_the_atlas_adds(ldlm_files):
    """The zoo's names are the site's words, translated; the counts, their nouns and the dim words are in Spanish."""
    page = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.es.md"]
    english = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    assert "› [6 × Bloque codificador](../index.md) › [MLP](index.md)</nav>" in page
    assert "› [6 encoder blocks](../index.md) › [MLP](index.md)</nav>" in english
    assert "**entrada:** $u'_n$ [B lote, T posiciones, 768 d]" in page
    assert "**in:** $u'_n$ [B batch, T positions, 768 d]" in english
    assert page.startswith('---\ntitle: "LDLM · LayerNorm"\n') and english.startswith('---\ntitle: "LDLM · LayerNorm"\n')
    assert "Símbolos: B lote, T posiciones;" in ldlm_files["ldlm/index.es.md"]


@pytest.mark.parametrize("path, en, es", [
    ("ldlm/latent_encoder/blocks/index", "one of 6 blocks", "uno de 6 bloques"),      # el bloque
    ("ldlm/denoiser/layers/index", "one of 12 layers", "una de 12 capas"),            # la capa
])
def test_repeat_tags_agree_with_their_noun(ldlm_files, path, en, es):
    assert f'<span class="atlas-repeat">{en}</span>' in ldlm_files[path + ".md"]
    assert f'<span class="atlas-repeat">{es}</span>' in ldlm_files[path + ".es.md"]


def test_repeated_names_without_a_known_noun_are_counted_with_a_sign():
    from types import SimpleNamespace

    from atlas.render import repeat_words
    mlp = SimpleNamespace(name="MLP", name_is_prose=True, repeat=6)
    layer = SimpleNamespace(name="LlamaDecoderLayer", name_is_prose=False, repeat=32)
    block = SimpleNamespace(name="GPT-2 block", name_is_prose=True, repeat=12)
    expected = {"en": ("6 × MLP", "one of 6 instances", "32 × LlamaDecoderLayer", "one of 32 layers", "32 layers",
                       "12 GPT-2 blocks", "12 instances"),
                "es": ("6 × MLP", "una de 6 instancias", "32 × LlamaDecoderLayer", "una de 32 capas", "32 capas",
                       "12 × GPT-2 block", "12 instancias")}
    for code, want in expected.items():
        with i18n.language(code):
            assert (repeat_words.label(mlp), repeat_words.one_of(mlp), repeat_words.label(layer), repeat_words.one_of(layer),
                    repeat_words.count(layer, 32), repeat_words.label(block), repeat_words.count(None, 12)) == want


def test_nav_labels_are_the_breadcrumb_labels_in_each_language(ldlm_doc, ldlm_files):
    from atlas.render import model_pages

    def labels(entries):
        for e in entries:
            for title, value in e.items() if isinstance(e, dict) else ():
                yield title
                if isinstance(value, list):
                    yield from labels(value)

    # English counts a name's noun ("6 encoder blocks"); Spanish counts the name it translates with a sign, as it
    # counts a class name, so that no label puts English words after a Spanish noun ("6 bloques encoder")
    for code, crumb, gpt2 in (("en", "6 encoder blocks", "12 transformer blocks"),
                              ("es", "6 × Bloque codificador", "12 × Bloque Transformer")):
        with i18n.language(code):
            nav = list(labels(model_pages.nav(ldlm_doc)))
        assert crumb in nav and gpt2 in nav, nav
        assert code == "es" or not any("×" in t for t in nav), nav
        page = ldlm_files[page_paths.localized("ldlm/latent_encoder/blocks/mlp/index.md", code)]
        assert f"[{crumb}](../index.md)" in page


def test_spanish_reference_page(ldlm_generated):
    files = ldlm_generated.files
    page = files["reference/layernorm.es.md"]
    for title in ("## Definición", "## Parámetros", "## Matemáticas", "## Ejemplos", "## Preguntas frecuentes",
                  "## Casos de uso", "## Se usa en", "## Comparación de capas de normalización"):
        assert title in page, title
    assert "| [BatchNorm1d](batchnorm1d.md) | el lote (por canal) | sí |" in page
    # the same examples, their comments and printed words in Spanish, each run as written
    english = files["reference/layernorm.md"]
    assert page.count("```python") == english.count("```python") and "forma de la salida: (4, 100, 512)" in page


def test_english_without_babel_is_what_cldr_says():
    from babel.lists import format_list
    from babel.numbers import format_decimal
    for n in (0, 7, 999, 1000, 9216, 12345, 49587456, 70553706496, -4608):
        assert i18n.english_number(n) == format_decimal(n, locale="en")
    for items in (["a"], ["a", "b"], ["a", "b", "c"], ["GPT-2", "Latent encoder", "Denoiser", "Latent decoder"]):
        assert i18n.english_list(items) == format_list(items, locale="en")


def test_numbers_in_spanish_formulas_are_grouped_as_the_spanish_text():
    """A cost formula's coefficients are grouped as the page's text groups numbers: 16{.}515{.}072 in Spanish (the
    point braced, so that no separator between digits reads as a decimal point), never English's 16{,}515{,}072,
    which the English pages keep. Spanish's decimal comma is braced too: 0{,}125."""
    grouped = re.compile(r"(?<![\d{}])[1-9]\d{0,2}(?:\{,\}\d{3})+(?!\d)")
    spanish = sorted((ROOT / "docs").rglob("*.es.md"))
    assert len(spanish) > 200
    assert [p.relative_to(ROOT).as_posix() for p in spanish if grouped.search(p.read_text())] == []
    english = ROOT / "docs" / "ldlm" / "latent_encoder" / "blocks" / "index.md"
    numbers = grouped.findall(english.read_text())
    assert "16{,}515{,}072" in numbers
    from atlas.render.filters import tex_thousands
    with i18n.language("es"):
        written = {tex_thousands(int(n.replace("{,}", ""))) for n in numbers}
    assert "16{.}515{.}072" in written and "6144" in written         # Spanish groups from five digits
    assert all(n in english.with_suffix(".es.md").read_text() for n in written)


def test_a_dim_name_the_catalogs_hold_reads_in_the_pages_language():
    """The LDLM's fixed dims are its own words (atlas.zoo.own_words): "50257 vocabulario" on a Spanish page; a name a
    model declares that no catalog holds stays as its code writes it."""
    from atlas.document.input_specs import dim_words
    with i18n.language("es"):
        assert dim_words("vocabulary") == "vocabulario" and dim_words("batch × positions") == "lote × posiciones"
        assert dim_words("mel bins") == "mel bins"
    assert dim_words("vocabulary") == "vocabulary"
