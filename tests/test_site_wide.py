"""The site-wide pages (catalog, reference pages and their index, nav) list every model of the docs folder: a run's
own and those documented before, read back from their atlas.json; a run writes only its own models' folders and
the site-wide pages. With no SPEC, build and check take the models of mkdocs.yml's atlas plugin."""

import json
import shutil
from pathlib import Path

import pytest

from atlas.cli import main
from atlas.site.fingerprint import STORE

MODELS = '''from torch import nn


class Adder(nn.Module):
    """A: two Linear layers and a dropout (a class B does not use)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.drop = nn.Dropout(0.1)
        self.b = nn.Linear(8, 3)

    def forward(self, x):
        return self.b(self.drop(self.a(x).relu()))


class Lookup(nn.Module):
    """B: an embedding and a list of Linear layers."""

    atlas_inputs = ("ids:int64[B, T]",)

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.layers = nn.ModuleList([nn.Linear(6, 6), nn.Linear(6, 6)])

    def forward(self, ids):
        h = self.emb(ids)
        for layer in self.layers:
            h = layer(h)
        return h


def adder():
    return Adder()


def lookup():
    return Lookup()
'''
SKIPPED = "nothing they are made from changed since they were written"


def _files(docs: Path, skip=(STORE,)) -> dict[str, bytes]:
    return {p.relative_to(docs).as_posix(): p.read_bytes() for p in sorted(docs.rglob("*"))
            if p.is_file() and p.name not in skip}


def _stamps(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*")}


def _nav_models(docs: Path) -> list[str]:
    """The models of the nav the store keeps for the mkdocs plugin: each top entry's first page's folder."""
    nav = json.loads((docs / STORE).read_text())["nav"]["en"]
    firsts = [next(iter(entry.values())) for entry in nav]
    return [(page[0] if isinstance(page, list) else page).split("/")[0] for page in firsts]


@pytest.fixture
def specs(tmp_path):
    module = tmp_path / "two_models.py"
    module.write_text(MODELS)
    return f"{module}:adder", f"{module}:lookup"


def test_one_model_then_another_make_the_site_of_both(tmp_path, specs, capsys):
    a, b = specs
    one_by_one, together, reversed_ = tmp_path / "one", tmp_path / "together", tmp_path / "reversed"
    assert main(["build", a, "--docs", str(one_by_one)]) == 0
    before, stamps = _files(one_by_one / "adder"), _stamps(one_by_one / "adder")
    assert main(["build", b, "--docs", str(one_by_one)]) == 0
    out = capsys.readouterr().out
    assert "0 deleted" in out
    # A's folder: untouched, byte for byte and file for file
    assert _files(one_by_one / "adder") == before and _stamps(one_by_one / "adder") == stamps
    catalog = (one_by_one / "catalog" / "index.md").read_text()
    assert "[Adder](../adder/index.md)" in catalog and "[Lookup](../lookup/index.md)" in catalog
    assert catalog.index("[Adder]") < catalog.index("[Lookup]")                  # by slug
    linear = (one_by_one / "reference" / "linear.md").read_text()
    assert "../adder/a.md" in linear and "../lookup/layers.md" in linear
    # the page of a class only A uses is kept
    assert sorted(p.stem for p in (one_by_one / "reference").glob("*.md") if ".es" not in p.suffixes) == [
        "dropout", "embedding", "index", "linear", "modulelist"]
    assert "../adder/drop.md" in (one_by_one / "reference" / "dropout.md").read_text()
    index = (one_by_one / "reference" / "index.md").read_text()
    assert "../adder/a.md" in index and "../lookup/emb.md" in index
    assert _nav_models(one_by_one) == ["catalog", "catalog", "adder", "lookup", "reference"]   # catalog, compare
    # one build of both, in either order, writes the very same files
    assert main(["build", a, b, "--docs", str(together)]) == 0
    assert main(["build", b, "--docs", str(reversed_)]) == 0
    assert main(["build", a, "--docs", str(reversed_)]) == 0
    assert _files(one_by_one) == _files(together) == _files(reversed_)
    assert sorted({path.split("/")[0] for path in _files(together)}) == ["adder", "catalog", "lookup", "reference"]
    stored = [json.loads((d / STORE).read_text())["nav"] for d in (one_by_one, together, reversed_)]
    assert stored[0] == stored[1] == stored[2]


def test_check_compares_its_own_folders_and_the_site_wide_pages(tmp_path, specs, capsys):
    """Another model's files are not "extra" to a check; another model's atlas.json changed is: the fingerprint
    holds it, so the shortcut is not taken, and the full check finds the catalog stale."""
    a, b = specs
    docs = str(tmp_path / "docs")
    assert main(["build", a, "--docs", docs]) == 0
    assert main(["build", b, "--docs", docs]) == 0
    (tmp_path / "docs" / "adder" / "notes.md").write_text("another model's folder: not this check's\n")
    capsys.readouterr()
    assert main(["check", b, "--docs", docs]) == 0
    assert SKIPPED in capsys.readouterr().out
    assert main(["check", b, "--docs", docs, "--no-cache"]) == 0
    assert main(["check", a, "--docs", docs]) == 1
    assert "extra: adder/notes.md" in capsys.readouterr().err
    (tmp_path / "docs" / "adder" / "notes.md").unlink()
    model = tmp_path / "docs" / "adder" / "atlas.json"
    data = json.loads(model.read_text())
    data["totals"]["parameters"] += 1000
    model.write_text(json.dumps(data, indent=2) + "\n")
    assert main(["check", b, "--docs", docs]) == 1
    err = capsys.readouterr().err
    assert "stale: catalog/index.md" in err and "lookup/" not in err and "adder/" not in err
    assert main(["build", b, "--docs", docs]) == 0
    catalog = (tmp_path / "docs" / "catalog" / "index.md").read_text()
    assert "| [Adder](../adder/index.md) | 1,067<br>trained 67," in catalog          # 67 parameters, and the 1,000
    assert json.loads(model.read_text()) == data                                        # A's folder, as it was


def test_a_json_an_older_atlas_wrote_fails_the_build_naming_it(tmp_path, specs, capsys):
    a, b = specs
    docs = tmp_path / "docs"
    assert main(["build", a, "--docs", str(docs)]) == 0
    data = json.loads((docs / "adder" / "atlas.json").read_text())
    del data["class_uses"]
    (docs / "adder" / "atlas.json").write_text(json.dumps(data))
    before = _files(docs)
    capsys.readouterr()
    assert main(["build", b, "--docs", str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{docs / 'adder' / 'atlas.json'} does not read back" in err
    assert "(KeyError: 'class_uses')" in err and f"two_models.py:adder --docs {docs}`) or remove its folder" in err
    assert _files(docs) == before and not (docs / "lookup").exists()


def test_a_bare_build_and_check_take_the_models_of_mkdocs_yml(tmp_path, monkeypatch, capsys):
    """The atlas plugin's models, each with its inputs and its checkpoint (a path from mkdocs.yml's folder); the
    plugin's build and the CLI's write the same files and share the fingerprint."""
    from conftest import FIXTURES, two_model_project
    from fixtures.checkpoints import tiny_gpt2
    from mkdocs.config import load_config
    from safetensors.torch import save_model
    project = tmp_path / "project"
    two_model_project(project)
    monkeypatch.chdir(project)
    assert main(["build"]) == 0
    assert "Sequential, GPT-2:" in capsys.readouterr().out
    assert sorted(p.name for p in (project / "docs").iterdir() if (p / ".atlas").is_file()) == [
        "catalog", "gpt-2", "reference", "sequential"]
    data = json.loads((project / "docs" / "gpt-2" / "atlas.json").read_text())
    assert (data["checkpoint"]["path"], data["checkpoint"]["matched"]) == ("ck/gpt2.safetensors", 28)
    assert "**in:** $x$ [B batch, 3]" in (project / "docs" / "sequential" / "0.md").read_text()
    built = _files(project / "docs")
    # the plugin generates the same files: nothing written; the nav lists both models
    config = load_config(str(project / "mkdocs.yml"))
    plugin = config.plugins["atlas"]
    plugin.config.cache = False
    plugin.on_config(config)
    plugin.on_shutdown()
    assert _files(project / "docs") == built
    assert [next(iter(e)) for e in plugin.navs["en"]][:4] == ["Catalog", "Compare", "GPT-2", "Sequential"]
    capsys.readouterr()
    assert main(["build"]) == 0
    assert SKIPPED in capsys.readouterr().out
    assert main(["check"]) == 0                 # a check judges the checkpoint: never from the stored record
    assert "generated files match" in capsys.readouterr().out
    # the checkpoint rewritten without one tensor, no code changed: the check says so, and so would a build
    from safetensors.torch import load_file, save_file
    weights = load_file(str(project / "ck" / "gpt2.safetensors"))
    save_file({k: v for k, v in weights.items() if k != "transformer.ln_f.bias"}, str(project / "ck" / "gpt2.safetensors"))
    assert main(["check"]) == 1
    err = capsys.readouterr().err
    assert "does not match GPT-2: 1 missing" in err and "  missing: transformer.ln_f.bias" in err
    assert main(["build"]) == 0 and SKIPPED not in capsys.readouterr().out
    save_model(tiny_gpt2(), str(project / "ck" / "gpt2.safetensors"))
    assert main(["build"]) == 0
    # a SPEC given: that model only, and the other folder left alone
    shutil.rmtree(project / "docs" / "reference")
    assert main(["check", f"{FIXTURES}:two_layer_mlp", "--input", "x:float32[B,3]"]) == 1
    err = capsys.readouterr().err
    assert "missing: reference/linear.md" in err and "gpt-2/" not in err
    # from another folder, naming the mkdocs.yml: the checkpoint is found from mkdocs.yml's folder (pages show its
    # path from the working folder, as they show every path)
    monkeypatch.chdir(tmp_path)
    assert main(["build", "--mkdocs", str(project / "mkdocs.yml"), "--docs", "elsewhere"]) == 0
    data = json.loads((tmp_path / "elsewhere" / "gpt-2" / "atlas.json").read_text())
    assert (data["checkpoint"]["path"], data["checkpoint"]["matched"]) == ("project/ck/gpt2.safetensors", 28)


def test_the_plugins_models_are_read_one_way(tmp_path):
    from atlas.errors import AtlasError
    from atlas.site import plugin_models
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\nplugins:\n  - search\n  - atlas:\n      models:\n        - spec: a.b:c\n"
                      "          inputs: ['x:float32[B,3]']\n        - spec: d.e:f\n          checkpoint: w.pt\n"
                      "markdown_extensions:\n  - pymdownx.emoji:\n      emoji_index: !!python/name:material.x\n")
    found = plugin_models.read(config)
    assert found.specs == [("a.b:c", ("x:float32[B,3]",), None), ("d.e:f", (), "w.pt")]
    assert (found.memory_budget, found.base_dir) == (2.0, str(tmp_path.resolve()))
    config.write_text("site_name: t\nplugins:\n  search: {}\n  atlas: {}\n")
    assert plugin_models.read(config).specs == []                       # the plugin's default: the LDLM
    config.write_text("site_name: t\nplugins:\n  - search\n")
    assert plugin_models.read(config) is None
    assert plugin_models.read(tmp_path / "none.yml") is None
    config.write_text("site_name: t\nplugins:\n  - atlas:\n      models:\n        - spec: a.b:c\n          input: x\n")
    with pytest.raises(AtlasError, match=r"model 1 \(a.b:c\) has keys it does not know: input"):
        plugin_models.read(config)


def test_a_model_of_the_same_name_from_another_spec_is_refused(tmp_path, specs, capsys):
    """Two specs whose models are both named 'Adder', built by separate runs: the second is refused in one line,
    as one run naming both is, and the first model's folder is left as it was."""
    docs = tmp_path / "docs"
    assert main(["build", specs[0], "--docs", str(docs)]) == 0
    before = _files(docs)
    other = tmp_path / "copy_of_models.py"
    other.write_text(MODELS)
    capsys.readouterr()
    for command in ("build", "check"):
        assert main([command, f"{other}:adder", "--docs", str(docs)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "documents two_models.py:adder, and copy_of_models.py:adder is named 'Adder' " \
                                          "too" in err
    assert _files(docs) == before
