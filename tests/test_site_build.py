"""A real `mkdocs build --strict` of the repository's config, in a temporary copy."""

import os

import pytest
from conftest import FIXTURES, HASH_SEED, ROOT, SITE_SPECS, mkdocs_build


def test_mkdocs_build_strict(built_site):
    site, log = built_site
    page = (site / "ldlm" / "latent_encoder" / "blocks" / "mlp" / "layer_norm" / "index.html").read_text()
    assert "9,216" in page and "Learned gain" in page
    assert (site / "ldlm" / "atlas.json").is_file()
    assert (site / "ldlm" / "latent_encoder" / "blocks" / "mlp" / "layer_norm" / "index.json").is_file()
    # math is rendered at build time; KaTeX's CSS and fonts ship with the site, not the repository
    assert 'class="katex"' in page and "katex-error" not in page
    assert (site / "assets" / "katex" / "katex.min.css").is_file()
    assert list((site / "assets" / "katex" / "fonts").glob("*.woff2"))
    # the plugin regenerated nothing: the committed pages are current
    assert "0 pages written, 0 deleted" in log


def test_page_weight(built_site):
    site, _ = built_site
    pages = list(site.rglob("*.html"))
    heaviest = max(pages, key=lambda p: p.stat().st_size)
    assert heaviest.stat().st_size < 200 * 1024, heaviest
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    assert total < 60 * 1024 * 1024     # issue 15: a page at most 200 KB, the site at most 60 MB


def test_one_search_index_per_language_with_every_page_titled(built_site):
    """Each language searches its own pages, and every page has an entry with its title (none dropped as a
    duplicate of its pair: "LDLM" and "torch.nn.LayerNorm" read the same in both languages)."""
    import json
    site, log = built_site
    english = json.loads((site / "search" / "search_index.json").read_text())
    spanish = json.loads((site / "es" / "search" / "search_index.json").read_text())
    assert (english["config"]["lang"], spanish["config"]["lang"]) == (["en"], ["es"])
    for index, root, skip in ((english, site, site / "es"), (spanish, site / "es", None)):
        pages = {("" if p.parent == root else p.parent.relative_to(root).as_posix() + "/")
                 for p in root.rglob("index.html") if skip is None or skip not in p.parents}
        titled = {d["location"]: d["title"] for d in index["docs"] if "#" not in d["location"] and d["title"].strip()}
        assert set(titled) == pages and "ldlm/" in pages
        assert all(not d["location"].startswith("es/") for d in index["docs"])
    assert titled["ldlm/"] == "LDLM" and titled["reference/layernorm/"] == "torch.nn.LayerNorm"
    # the Guide is written in English only: the Spanish site shows (and searches) its English pages
    spanish_text = " ".join(d["text"] for d in spanish["docs"] if not d["location"].startswith("guide/"))
    assert any(d["location"] == "guide/" for d in spanish["docs"])
    assert "Rutas del módulo" in spanish_text and "Module paths" not in spanish_text


def test_search_reads_code_as_its_text(built_site):
    """Material's search parser finds the same sections, titles and texts in a page whole and in the page as the
    atlas gives it to the search (atlas.site.search_text: code blocks without their markup), on the pages of the LDLM's
    latent encoder and every reference page (110 blocks); and the indexed text still holds the excerpts' code."""
    import json
    import re

    from material.plugins.search.plugin import Parser

    from atlas.site.search_text import for_search
    site, _ = built_site

    def sections(html: str) -> list[tuple]:
        parser = Parser()
        parser.feed(html)
        parser.close()
        return [(s.el.tag, s.id, s.depth, "".join(s.title), "".join(s.text)) for s in parser.data]
    code = re.compile(r"<pre><span></span><code[^>]*>(.*?)</code></pre>", re.S)
    blocks = 0
    for page in sorted(site.glob("ldlm/latent_encoder/**/index.html")) + sorted(site.glob("reference/*/index.html")):
        html = page.read_text()
        light = for_search(html)
        assert sections(light) == sections(html), page
        texts = code.findall(light)
        assert len(texts) == len(code.findall(html)) and not any("<" in t for t in texts), page
        blocks += len(texts)
    assert blocks > 50
    index = json.loads((site / "search" / "search_index.json").read_text())
    text = " ".join(d["text"] for d in index["docs"] if d["location"].startswith("ldlm/latent_encoder/blocks/mlp/"))
    assert "class LayerNorm(Module):" in text and "def forward(self, input: Tensor) -&gt; Tensor:" in text


def test_latex_error_fails_the_build(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Broken\n\n$$\n\\frac{1}{\n$$\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\ntheme:\n  name: material\nplugins:\n  - atlas:\n      models: [{spec: '" + str(FIXTURES) + ":two_layer_mlp'}]\n"
        "markdown_extensions:\n  - pymdownx.arithmatex:\n      generic: true\n")
    code, log = mkdocs_build(tmp_path, "--strict")
    assert code != 0
    assert "index.md: LaTeX error in `\\frac{1}{`" in log


def test_committed_docs_are_current(monkeypatch, capsys):
    """What CI relies on: the committed pages match the model code. A bare `atlas check` in the repository checks
    the models of mkdocs.yml's atlas plugin, as the plugin builds them: every file the plugin's build wrote."""
    import json

    from atlas.cli import main
    from atlas.site.fingerprint import STORE
    assert len(SITE_SPECS) == 7
    monkeypatch.chdir(ROOT)
    assert main(["check"]) == 0
    stored = json.loads((ROOT / "docs" / STORE).read_text())
    assert len(stored["folders"]) == 9 and f"atlas: {len(stored['files'])} generated files match docs/" in \
        capsys.readouterr().out


def test_output_does_not_depend_on_the_hash_seed(ldlm_generated):
    """Set or dict order must never reach a page: the LDLM documented in a process whose hash seed is HASH_SEED
    (ldlm_doc) renders to the very files of the LDLM that `make site` wrote from a process with a random seed (the
    committed pages are current: test_committed_docs_are_current)."""
    assert os.environ.get("PYTHONHASHSEED") != HASH_SEED
    files = {path: text for path, text in ldlm_generated.files.items() if path.startswith("ldlm/")}
    differ = [path for path, text in files.items() if (ROOT / "docs" / path).read_text() != text]
    assert len(files) > 200 and differ == [], f"{len(differ)} LDLM files differ (run `make site`?): {differ[:5]}"
    assert sorted(files) == sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs" / "ldlm").rglob("*")
                                   if p.is_file() and p.name != ".atlas")


def test_plugin_takes_per_model_inputs_and_checkpoints(tmp_path):
    """One model with example inputs of its own, one with a checkpoint of its own (a path from the config's
    folder), in one real `mkdocs build --strict`."""
    import json

    from conftest import two_model_project
    two_model_project(tmp_path)
    code, log = mkdocs_build(tmp_path, "--strict")
    assert code == 0, log[-2000:]
    page = (tmp_path / "docs" / "sequential" / "0.md").read_text()
    assert "**in:** $x$ [B batch, 3]" in page
    html = (tmp_path / "site" / "sequential" / "0" / "index.html").read_text()
    assert 'class="katex"' in html
    page = (tmp_path / "docs" / "gpt-2" / "transformer" / "h" / "index.md").read_text()
    assert "Checkpoint counted: 24 of 24 tensors match, 99,968 parameters, in `ck/gpt2.safetensors`." in page
    assert "Checkpoint" not in (tmp_path / "docs" / "sequential" / "0.md").read_text()
    data = json.loads((tmp_path / "docs" / "gpt-2" / "atlas.json").read_text())
    assert (data["checkpoint"]["path"], data["checkpoint"]["matched"]) == ("ck/gpt2.safetensors", 28)


def test_language_switch_links_pairs(built_site):
    """Every page, in each language, links its language switch to the same page in the other one."""
    import re
    import urllib.parse
    site, _ = built_site
    english = sorted(p for p in site.rglob("index.html") if not p.relative_to(site).as_posix().startswith("es/")
                     and p.parent != site / "search")
    import json
    components = sum(len(json.loads(m.read_text())["components"]) for m in site.glob("*/atlas.json"))
    references = len(list((site / "reference").glob("*/index.html")))
    guide = len(list((site / "guide").rglob("index.html")))      # the hand-written Guide, in English in both builds
    catalog = len(list((site / "catalog").rglob("index.html")))  # the catalog, the comparison and the four role pages
    # the home, the catalog's pages, every component page of the seven models, the reference pages and their index,
    # the guide
    assert len(english) == 1 + catalog + components + references + 1 + guide
    assert components == 221 and guide > 1 and catalog == 6
    for page in english:
        rel = page.relative_to(site)
        pair = site / "es" / rel
        assert pair.is_file(), rel
        for here, other, lang in ((page, pair, "es"), (pair, page, "en")):
            html = here.read_text()
            assert f'<html lang="{"en" if lang == "es" else "es"}"' in html
            href = re.search(rf'<a href="([^"]*)" hreflang="{lang}"', html).group(1)
            # the home pages link the other language's root, as the plugin's `link` says: "/es/", "/"
            target = urllib.parse.urljoin("/" + here.relative_to(site).as_posix(), href).lstrip("/")
            target = target + "index.html" if target.endswith("/") or target == "" else target
            assert (site / target).resolve() == other.resolve(), (here, href)
    spanish = (site / "es" / "reference" / "layernorm" / "index.html").read_text()
    assert "Preguntas frecuentes" in spanish and "Definición" in spanish


def test_serve_keeps_the_configured_permalinks(tmp_path):
    """`mkdocs serve` sets site_url to its own address; the pages written to docs/ must not take it."""
    from mkdocs.config import load_config
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nsite_url: https://atlas.example.org/\ntheme: material\nplugins:\n  - atlas:\n"
        f"      models:\n        - spec: '{FIXTURES}:two_layer_mlp'\n          inputs: ['x:float32[B,3]']\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))
    config.site_url = "http://127.0.0.1:8000/"          # what serve does before the plugins run
    plugin = config.plugins["atlas"]
    plugin.on_startup(command="serve", dirty=False)
    plugin.on_config(config)
    plugin.on_shutdown()
    page = (tmp_path / "docs" / "sequential" / "0.md").read_text()
    assert "https://atlas.example.org/sequential/0/" in page and "127.0.0.1" not in page


def test_the_plugin_sets_up_what_the_pages_need(tmp_path):
    """A mkdocs.yml naming only the theme and the plugin gets the extensions, the theme overrides and the assets;
    an option that contradicts what the pages need is one line naming it."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import PluginError

    from atlas.resources import THEME
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: t\ntheme: material\nplugins:\n  - atlas\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))
    from atlas.site import site_setup
    site_setup.configure(config)
    site_setup.configure(config)                        # once only, however often mkdocs configures
    assert config.mdx_configs["pymdownx.arithmatex"] == {"generic": True}
    assert config.markdown_extensions.count("pymdownx.tabbed") == 1
    assert config.theme.dirs[0] == str(THEME) and config.theme.dirs.count(str(THEME)) == 1
    # every stylesheet and script of the assets folder, in name order (atlas.css, catalog.css, citation.css, ...)
    from atlas.resources import TEMPLATES
    sheets = sorted(p.name for p in (TEMPLATES / "assets").glob("*.css"))
    scripts = sorted(p.name for p in (TEMPLATES / "assets").glob("*.js"))
    assert {"atlas.css", "citation.css", "language.css"} <= set(sheets) and {"atlas.js", "language.js"} <= set(scripts)
    assert config.extra_css == ["assets/katex/katex.min.css", *(f"assets/{name}" for name in sheets)]
    assert [str(s) for s in config.extra_javascript] == [f"assets/{name}" for name in scripts]
    (tmp_path / "mkdocs.yml").write_text("site_name: t\ntheme: material\nplugins:\n  - atlas\n"
                                         "markdown_extensions:\n  - pymdownx.arithmatex:\n      generic: false\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))
    with pytest.raises(PluginError, match="the pages need `pymdownx.arithmatex` with `generic: true`, not false"):
        config.plugins["atlas"].on_config(config)
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  - atlas\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))
    with pytest.raises(PluginError, match="written for the Material theme"):
        config.plugins["atlas"].on_config(config)
