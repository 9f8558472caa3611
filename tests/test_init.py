"""`atlas init [SPEC]`: the files a model repository needs, never one overwritten, nothing written on bad input.
(tests/test_wheel.py runs the files it writes: `atlas build`, `mkdocs build --strict`, the hook.)"""

import yaml
from conftest import FIXTURES

from atlas.cli import main

FILES = ["mkdocs.yml", "docs/index.md", ".github/workflows/atlas.yml", ".pre-commit-config.yaml"]


def _written(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_init_writes_the_four_files_naming_the_spec(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    spec = f"{FIXTURES}:two_layer_mlp"
    assert main(["init", spec]) == 0
    assert _written(tmp_path) == sorted(FILES + ["pyproject.toml"])
    assert capsys.readouterr().out.startswith(f"atlas: wrote {', '.join(FILES)};")
    config = yaml.safe_load((tmp_path / "mkdocs.yml").read_text())
    assert config["site_name"] == tmp_path.name and config["theme"] == {"name": "material", "font": False}
    assert config["plugins"][1] == {"atlas": {"models": [{"spec": spec}]}}
    assert [lang["locale"] for lang in config["plugins"][2]["i18n"]["languages"]] == ["en", "es"]
    steps = yaml.safe_load((tmp_path / ".github/workflows/atlas.yml").read_text())["jobs"]["pages"]["steps"]
    runs = [s.get("run") for s in steps if "run" in s]
    assert runs[1:] == ["pip install -e . 'model-atlas==0.1.0'", "atlas check", "mkdocs build --strict"]
    assert steps[0]["with"]["fetch-depth"] == 0
    hook = yaml.safe_load((tmp_path / ".pre-commit-config.yaml").read_text())["repos"][0]
    assert hook["repo"] == "local" and hook["hooks"][0]["entry"] == "atlas check"


def test_init_names_the_extra_a_library_spec_needs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from atlas.site import project_files
    assert project_files._install_line(tmp_path, "hf:openai-community/gpt2") == "'model-atlas[transformers]==0.1.0'"
    (tmp_path / "requirements.txt").write_text("torch\n")
    assert project_files._install_line(tmp_path, "timm:resnet18") == "-r requirements.txt 'model-atlas[timm]==0.1.0'"


def test_init_installs_model_atlas_from_the_git_repository_it_came_from(tmp_path, monkeypatch):
    """pip records where a package came from (direct_url.json): a git repository's commit is what CI installs."""
    from atlas.site import project_files

    class Installed:
        version = "0.1.0"

        def __init__(self, origin):
            self.origin = origin

        def read_text(self, name):
            return self.origin if name == "direct_url.json" else None

    origin = '{"url": "https://github.com/example/model-atlas.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}'
    monkeypatch.setattr(project_files.metadata, "distribution", lambda name: Installed(origin))
    assert project_files._install_line(tmp_path, "timm:resnet18") == \
        "'model-atlas[timm] @ git+https://github.com/example/model-atlas.git@abc123'"
    monkeypatch.setattr(project_files.metadata, "distribution",
                        lambda name: Installed('{"url": "file:///tmp/dist/model_atlas-0.1.0-py3-none-any.whl"}'))
    assert project_files._install_line(tmp_path, "m.py:f") == "'model-atlas==0.1.0'"


def test_init_never_overwrites_and_writes_nothing_then(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n")
    assert main(["init", f"{FIXTURES}:two_layer_mlp"]) == 2
    err = capsys.readouterr().err
    assert err == ("atlas: error: .pre-commit-config.yaml already exists; `atlas init` never overwrites a file "
                   "(move it aside or edit it by hand)\n")
    assert _written(tmp_path) == [".pre-commit-config.yaml"]
    assert (tmp_path / ".pre-commit-config.yaml").read_text() == "repos: []\n"


def test_init_with_a_bad_spec_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "missing.py:factory"]) == 2
    assert capsys.readouterr().err == "atlas: error: SPEC 'missing.py:factory': no such file missing.py\n"
    assert _written(tmp_path) == []
