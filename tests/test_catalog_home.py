"""The catalog's legend and cards, and the home page's list of models, from the models the docs folder documents
(docs/*/atlas.json): every figure is the JSON's, in both languages."""
import json
import re
from pathlib import Path

import pytest

from atlas import i18n
from atlas.document import serialize
from atlas.render import model_pages
from atlas.site import home_models

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _data() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(DOCS.glob("*/atlas.json"))]


def _grouped(n: int, language: str) -> str:
    with i18n.language(language):
        return i18n.number(n)


@pytest.fixture(scope="module")
def catalog() -> dict[str, str]:
    return model_pages.render_catalog([serialize.from_dict(d) for d in _data()])


@pytest.mark.parametrize("language,page", [("en", "catalog/index.md"), ("es", "catalog/index.es.md")])
def test_legend_gives_a_models_totals_and_its_published_ones(catalog, language, page):
    text = catalog[page]
    legend = text[text.index('<div class="atlas-catalog-legend" markdown>'):text.index('<div class="atlas-catalog"')]
    published = [d for d in _data() if d["published"]]
    assert published, "a documented model with published totals (the LDLM) shows the legend's third line"
    d = published[0]
    t, p = d["totals"], d["published"]
    n = lambda v: _grouped(v, language)          # noqa: E731
    words = {"en": ("For {m}: {a} in all; {tr} trained and {fr} frozen.", "trained {ptr}, frozen {pfr}"),
             "es": ("Para {m}: {a} en total; {tr} entrenados y {fr} congelados.", "entrenados {ptr}, congelados {pfr}")}
    sentence, figures = words[language]
    assert sentence.format(m=d["model"], a=n(t["parameters"]), tr=n(t["trained"]), fr=n(t["frozen"])) in legend
    assert figures.format(ptr=n(p["trained"]), pfr=n(p["frozen"])) in legend and p["source"] in legend
    assert t["parameters"] == t["trained"] + t["frozen"]


@pytest.mark.parametrize("language,page", [("en", "catalog/index.md"), ("es", "catalog/index.es.md")])
def test_each_card_and_row_carries_the_jsons_totals(catalog, language, page):
    text = catalog[page]
    cards = text[text.index('<div class="atlas-catalog-cards" markdown>'):]
    table = text[text.index('<div class="atlas-catalog" markdown>'):text.index('<div class="atlas-catalog-cards"')]
    blocks = cards.split('<div class="atlas-catalog-card" markdown>')[1:]
    assert len(blocks) == len(_data())
    for d in _data():
        card = next(b for b in blocks if f"**[{d['model']}](../{d['slug']}/index.md)**" in b)
        t = d["totals"]
        cell = f"{_grouped(t['parameters'], language)}<br>"
        assert cell in card and cell in table
        for word, n in (("trained" if language == "en" else "entrenados", t["trained"]),
                        ("frozen" if language == "en" else "congelados", t["frozen"])):
            assert f"{word} {_grouped(n, language)}" in card
        assert len(re.findall(r"^- ", card, re.M)) == 11        # the table's columns but the model's name


@pytest.mark.parametrize("language", ["en", "es"])
def test_home_page_lists_every_model_folder_with_its_summary(language):
    page = "index.md" if language == "en" else "index.es.md"
    source = (DOCS / page).read_text()
    assert source.count(home_models.MARKER) == 1
    with i18n.language(language):
        filled = home_models.fill(source, page, DOCS)
    assert home_models.MARKER not in filled
    folders = sorted(p.parent.name for p in DOCS.glob("*/atlas.json"))
    assert len(folders) == 7
    for d in _data():
        summary = next(c for c in d["components"] if c["id"] == "")["summary"]
        line = next(x for x in filled.splitlines() if x.startswith(f"- [{d['model']}]("))
        assert line.startswith(f"- [{d['model']}]({d['slug']}/index.md): ")
        shown = line.removeprefix(f"- [{d['model']}]({d['slug']}/index.md): ").replace("\\", "")
        with i18n.language(language):
            translated = i18n.gettext(summary)
        if language == "en" or translated != summary:
            assert shown == translated
        else:                                   # the model author's words, quoted and marked English
            assert shown == f'<span lang="en">“{summary}”</span>'

    assert [x.split("](")[1].split("/")[0] for x in filled.splitlines() if x.startswith("- [")] == folders


def test_a_page_elsewhere_links_up_and_a_page_without_the_marker_is_unchanged(tmp_path):
    listed = home_models.fill(f"# Models\n\n{home_models.MARKER}\n", "guide/models.md", DOCS)
    assert "](../ldlm/index.md): " in listed
    assert home_models.fill("# Guide\n", "guide/index.md", DOCS) == "# Guide\n"
    quoted = f"Place `{home_models.MARKER}` on a page.\n\n```\n{home_models.MARKER}\n```\n"
    assert home_models.fill(quoted, "guide/pages.md", DOCS) == quoted     # in code it is text, not a marker
    with i18n.language("es"):
        assert home_models.fill(home_models.MARKER, "index.es.md", tmp_path) == \
            "Aún no hay ningún modelo documentado: `atlas build` escribe sus páginas."


def test_init_writes_the_marker():
    assert home_models.MARKER in (ROOT / "templates" / "init" / "index.md.j2").read_text()
