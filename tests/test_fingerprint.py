"""The stored fingerprint: a build or check with nothing changed behind it is skipped; any change to what the
pages are made from (the model's code, a page on disk, the templates, the options) runs in full."""

import json
import shutil
from pathlib import Path

from atlas.cli import main
from atlas.site.fingerprint import STORE

MODEL = '''from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 3)

    def forward(self, x):
        return self.b(self.a(x).relu())


def net():
    return Net()
'''
SKIPPED = "nothing they are made from changed since they were written"


def _setup(tmp_path):
    model = tmp_path / "net_model.py"
    model.write_text(MODEL)
    return model, f"{model}:net", str(tmp_path / "docs")


def test_unchanged_check_is_skipped_and_a_code_change_is_caught(tmp_path, capsys):
    model, spec, docs = _setup(tmp_path)
    assert main(["build", spec, "--docs", docs]) == 0
    assert "written" in capsys.readouterr().out
    stored = json.loads((Path(docs) / STORE).read_text())
    assert [s["file"].endswith("net_model.py") for s in stored["fingerprints"][0]["models"][0]["sources"]] == [True]
    assert main(["check", spec, "--docs", docs]) == 0
    assert SKIPPED in capsys.readouterr().out
    # a full check agrees
    assert main(["check", spec, "--docs", docs, "--no-cache"]) == 0
    assert SKIPPED not in capsys.readouterr().out
    # a change to the model's code: the fingerprint differs, the full check finds the stale pages
    model.write_text(MODEL.replace("nn.Linear(8, 3)", "nn.Linear(8, 5)"))
    assert main(["check", spec, "--docs", docs]) == 1
    assert "stale: net/b.md" in capsys.readouterr().err
    assert main(["build", spec, "--docs", docs]) == 0
    assert main(["check", spec, "--docs", docs]) == 0
    assert SKIPPED in capsys.readouterr().out


def test_a_hand_edited_page_is_caught(tmp_path, capsys):
    _, spec, docs = _setup(tmp_path)
    assert main(["build", spec, "--docs", docs]) == 0
    page = Path(docs) / "net" / "a.md"
    page.write_text(page.read_text().replace("Linear", "Lineal", 1))
    capsys.readouterr()
    assert main(["check", spec, "--docs", docs]) == 1
    assert "stale: net/a.md" in capsys.readouterr().err
    (Path(docs) / "net" / "extra.md").write_text("mine")
    assert main(["build", spec, "--docs", docs]) == 0
    assert not (Path(docs) / "net" / "extra.md").exists()


def test_templates_and_options_are_in_the_fingerprint(tmp_path, capsys, monkeypatch):
    _, spec, docs = _setup(tmp_path)
    assert main(["build", spec, "--docs", docs]) == 0
    capsys.readouterr()
    assert main(["check", spec, "--docs", docs, "--memory-budget", "1"]) == 0     # another option: a full run
    assert SKIPPED not in capsys.readouterr().out
    templates = tmp_path / "templates"
    shutil.copytree(Path(__file__).resolve().parent.parent / "templates", templates)
    component = templates / "component.md.j2"
    component.write_text(component.read_text() + "\n")
    monkeypatch.setenv("ATLAS_TEMPLATES", str(templates))
    assert main(["check", spec, "--docs", docs]) == 1                               # the pages would change
    assert "stale: net/a.md" in capsys.readouterr().err


def test_a_new_fingerprint_is_kept_however_many_came_before(tmp_path):
    """Pages an atlas change leaves as they were: the store takes the new fingerprint (it used to keep the four
    that sorted last, so a new one that sorted first was dropped and every later check ran in full)."""
    from atlas.site import fingerprint

    docs, files = tmp_path / "docs", {"m/index.md": "# m\n"}
    (docs / "m").mkdir(parents=True)
    (docs / "m" / "index.md").write_text(files["m/index.md"])

    def made_by(code: str, site_url=None) -> dict:
        return {"atlas": code, "templates": "t", "versions": {"torch": "2"}, "options": {"site_url": site_url},
                "models": []}

    for code in ("c1", "c2", "c3", "c4", "c5"):
        fingerprint.save(docs, made_by(code), files, ["m"], {})
    fingerprint.save(docs, made_by("c0"), files, ["m"], {})                    # sorts before every other one
    assert fingerprint.fresh(docs, made_by("c0")) is not None
    assert fingerprint.fresh(docs, made_by("c5")) is None                     # an older atlas's: no match now
    fingerprint.save(docs, made_by("c0", "https://example.org/"), files, ["m"], {})   # the plugin's options
    assert fingerprint.fresh(docs, made_by("c0")) is not None
    assert fingerprint.fresh(docs, made_by("c0", "https://example.org/")) is not None
    text = (docs / STORE).read_text()
    fingerprint.save(docs, made_by("c0"), files, ["m"], {})                    # again: byte-identical
    assert (docs / STORE).read_text() == text
    for edit in ("e1", "e2", "e3", "e4"):      # model edits that leave the pages as they were, built both ways
        cli, plugin = (dict(made_by("c0", url), models=[edit]) for url in (None, "https://example.org/"))
        fingerprint.save(docs, cli, files, ["m"], {})
        fingerprint.save(docs, plugin, files, ["m"], {})
        assert fingerprint.fresh(docs, cli) is not None and fingerprint.fresh(docs, plugin) is not None, edit


def test_templates_are_compiled_once_and_again_when_edited(tmp_path):
    """Every environment of a process shares the templates' compiled code; an edited template (mkdocs serve) is
    compiled from its new source."""
    from atlas.render import model_pages

    (tmp_path / "page.md.j2").write_text("{{ name }} one\n")
    first = model_pages.environment(tmp_path).get_template("page.md.j2")
    again = model_pages.environment(tmp_path).get_template("page.md.j2")
    assert again.root_render_func.__code__ is first.root_render_func.__code__
    (tmp_path / "page.md.j2").write_text("{{ name }} two\n")
    edited = model_pages.environment(tmp_path).get_template("page.md.j2")
    assert edited.render(name="x") == "x two\n" and first.render(name="x") == "x one\n"
