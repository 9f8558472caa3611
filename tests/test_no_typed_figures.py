"""No figure is typed into the generator or its templates: pages derive them."""

import re

from conftest import ROOT

SEED_FIGURES = re.compile(r"8[,_ ]?264[,_ ]?576|3[,_ ]?540[,_ ]?608|4[,_ ]?723[,_ ]?968|49[,_ ]?587[,_ ]?456|"
                          r"124[,_ ]?442[,_ ]?112|306[,_ ]?011[,_ ]?162|124[,_ ]?439[,_ ]?808|9[,_]?216|1[,_]?536")


def test_no_seed_figures_outside_the_zoo():
    paths = [p for p in (ROOT / "atlas").rglob("*.py") if "zoo" not in p.parts]
    paths += list((ROOT / "templates").rglob("*"))
    hits = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in paths if p.is_file()
            for m in SEED_FIGURES.finditer(p.read_text())]
    assert hits == []


def test_no_placeholder_words():
    # TODO and TBD as the markers they are, in capitals: "todo" is an ordinary Spanish word ("todo el lote").
    words = re.compile(r"\b(TODO|TBD|(?i:lorem|placeholder|coming soon|pendiente de traducir))\b")
    paths = list((ROOT / "templates").rglob("*")) + [p for p in (ROOT / "docs").rglob("*.md")]
    paths += list((ROOT / "atlas").rglob("*.py")) + list((ROOT / "atlas" / "i18n" / "locale").rglob("*.po"))
    # a page's source excerpts quote the model's code as it is (transformers' own TODOs); our words are outside them
    fences = re.compile(r"(?ms)^([ \t]*)(`{3,}).*?^\1\2")

    def text(p):
        return fences.sub("", p.read_text()) if p.suffix == ".md" else p.read_text()
    assert [str(p) for p in paths if p.is_file() and words.search(text(p))] == []
