"""The stored fingerprint: a build or check with nothing changed behind it is skipped; any change to what the
pages are made from (the model's code, a page on disk, the templates, the options) runs in full."""

import json
import shutil
from pathlib import Path

from atlas.cli import main
from atlas.fingerprint import STORE

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
