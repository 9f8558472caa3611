"""Citations in three formats (BibTeX, CSL-JSON, RIS), each with the title, the URL where the site has one, the model
code's real revision and its commit date, and the atlas version; no clock read, a key per language, nothing made
up for code that is an installed library's release."""
import importlib.metadata
import json
import re
import subprocess
from pathlib import Path

from atlas import i18n
from atlas.document import serialize
from atlas.render import citation

ROOT = Path(__file__).resolve().parents[1]
SITE = "https://atlas.example.org/docs/"
PAGE = "ldlm/latent_encoder/blocks/mlp/layer_norm"


def _commit(path: str) -> tuple[str, str]:
    """The real last commit of a file of this checkout, and its date, as git gives them."""
    out = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%H %cd", "--date=short", "--", path],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], out[1]


def _blocks(page: str) -> dict[str, str]:
    """The code blocks of the page's citation tabs, by tab title, unindented."""
    found = {}
    for title, body in re.findall(r'=== "([^"]+)"\n\n    ```\w+\n(.*?)\n    ```', page, re.S):
        found[title] = "\n".join(line.removeprefix("    ") for line in body.split("\n"))
    return found


def _ris(text: str) -> list[tuple[str, str]]:
    lines = text.split("\n")
    assert all(re.fullmatch(r"[A-Z][A-Z0-9]  - .*", line) for line in lines), lines
    return [(line[:2], line[6:]) for line in lines]


def test_three_formats_carry_the_real_revision_and_its_date(ldlm_doc, ldlm_files):
    commit, date = _commit("atlas/zoo/ldlm.py")
    assert ldlm_doc.root.source.revision == commit[:12] and ldlm_doc.root.source.date == date
    version = importlib.metadata.version("model-atlas")
    tabs = _blocks(ldlm_files[f"{PAGE}.md"])
    assert list(tabs) == ["BibTeX", "CSL-JSON", "RIS"]
    bib = tabs["BibTeX"]
    assert bib.startswith("@misc{atlas-ldlm-latent-encoder-blocks-mlp-layer-norm,\n") and bib.endswith("\n}")
    fields = dict(re.findall(r"^  (\w+) += \{(.*)\},?$", bib, re.M))
    assert fields["year"] == date[:4] and fields["date"] == date
    assert fields["version"] == f"commit {commit[:12]}"
    assert "url" not in fields and "\\path{ldlm/latent_encoder/blocks/mlp/layer_norm/}" in fields["howpublished"]
    assert f"commit {commit[:12]} (commit date {date})" in fields["howpublished"]
    assert fields["note"].endswith(f"by Model Atlas {version}")
    item, = json.loads(tabs["CSL-JSON"])
    assert item["id"] == "atlas-ldlm-latent-encoder-blocks-mlp-layer-norm" and item["type"] == "webpage"
    assert item["title"] == "LDLM · " + ldlm_doc.component("latent_encoder.blocks.mlp.layer_norm").name
    assert item["issued"] == {"date-parts": [[int(x) for x in date.split("-")]]}
    assert item["version"] == f"commit {commit[:12]}" and "URL" not in item
    assert "ldlm/latent_encoder/blocks/mlp/layer_norm/" in item["medium"] and version in item["note"]
    ris = _ris(tabs["RIS"])
    assert ris[0] == ("TY", "ELEC") and ris[-1] == ("ER", "")
    tags = dict(ris[:-1])
    assert tags["TI"] == item["title"] and tags["PY"] == date[:4] and tags["ET"] == f"commit {commit[:12]}"
    assert "UR" not in tags


def test_with_site_url_each_format_has_the_url_and_a_key_per_language(ldlm_doc):
    comp = ldlm_doc.component("latent_encoder.blocks.mlp.layer_norm")
    with i18n.language("es"):
        cited = citation.cite(ldlm_doc, comp, SITE, "Model Atlas", "es")
    english = citation.cite(ldlm_doc, comp, SITE, "Model Atlas")
    url = f"{SITE}es/{PAGE}/"
    assert cited.url == url and cited.key == english.key + "-es"
    assert f"  url          = {{{url}}},\n  howpublished = {{\\url{{{url}}}}}," in cited.bibtex
    assert "  language     = {es}," in cited.bibtex and "  language     = {en}," in english.bibtex
    item, = json.loads(cited.csl_json)
    assert item["URL"] == url and item["id"] == cited.key and item["language"] == "es"
    assert ("UR", url) in _ris(cited.ris) and ("ID", cited.key) in _ris(cited.ris)
    # regenerating gives the same bytes: nothing reads the clock
    assert citation.cite(ldlm_doc, comp, SITE, "Model Atlas") == english


def test_an_installed_library_is_cited_by_its_release_without_a_date():
    """Llama 3 8B's code is transformers' modeling file as installed: its version, said so, and no year made up."""
    data = json.loads((ROOT / "docs" / "llama-3-8b" / "atlas.json").read_text())
    doc = serialize.from_dict(data)
    source = data["components"][0]["source"]
    assert source["origin"] == "package" and source["date"] is None
    cited = citation.cite(doc, doc.root, SITE, "Model Atlas")
    release = source["label"]                                   # "transformers 5.24.0"
    assert f"  version      = {{{release}}}," in cited.bibtex
    assert "year" not in cited.bibtex and "date " not in cited.bibtex
    assert f"of the installed library {release} (a release: it states no commit date)" in cited.bibtex
    item, = json.loads(cited.csl_json)
    assert "issued" not in item and item["version"] == release
    tags = dict(_ris(cited.ris))
    assert "PY" not in tags and "DA" not in tags and tags["ET"] == release


def test_the_note_wraps_inside_its_box():
    css = (ROOT / "templates" / "assets" / "citation.css").read_text()
    assert ".atlas-cite pre > code { white-space: pre-wrap; overflow-wrap: anywhere; }" in css


def _plugin_run(tmp_path, site_url: str | None, capsys, caplog) -> tuple[str, list]:
    from mkdocs.config import load_config
    fixtures = ROOT / "tests" / "fixtures" / "models.py"
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\n" + (f"site_url: {site_url}\n" if site_url else "") + "theme: material\nplugins:\n  - atlas:\n"
        f"      models:\n        - spec: '{fixtures}:two_layer_mlp'\n          inputs: ['x:float32[B,3]']\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))
    plugin = config.plugins["atlas"]
    capsys.readouterr()
    with caplog.at_level("WARNING"):
        plugin.on_config(config)
    plugin.on_shutdown()
    return capsys.readouterr().err, [r for r in caplog.records if r.levelname == "WARNING"]


def test_no_site_url_is_one_line_on_stderr_not_a_warning_strict_fails_on(tmp_path, capsys, caplog):
    err, warnings = _plugin_run(tmp_path / "none", None, capsys, caplog)
    assert err == ("atlas: mkdocs.yml has no site_url: citations give each page's path on the site and the model "
                   "code's revision instead of its address\n")
    assert warnings == []
    page = (tmp_path / "none" / "docs" / "sequential" / "0.md").read_text()
    assert "site_url" not in page and "howpublished = {Page path \\path{sequential/0/} of the site, " in page
    err, _ = _plugin_run(tmp_path / "some", "https://atlas.example.org/", capsys, caplog)
    assert "site_url" not in err
