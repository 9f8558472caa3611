"""Model Atlas as a user gets it: a wheel built from this repository, installed (not editable) into a fresh venv
outside it, used in a git repository of its own that holds one model file, the one README.md shows.

The README's commands are run here verbatim, in README order: the pip commands in a copy of this repository, the
rest in the model repository (tests/readme_commands.py lists them; test_readme keeps README to that list). Then
the site opens in Chromium, an edit to the model makes `atlas check` fail until `atlas build`, and this
repository's pre-commit hook (`pre-commit try-repo`) fails on stale pages, then passes.

The set-up path pins torch as `make test` does (PIP_CONSTRAINT=constraints.txt); everything else comes from the
package registries.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from readme_commands import COMMANDS, SETUP_COMMANDS

CHROMIUM = "/usr/bin/chromium"
WHEEL_COMMANDS = ("pip wheel", "pip install")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)


def readme_commands() -> list[str]:
    return [line.strip() for block in _blocks("sh") for line in block.splitlines() if line.strip()]


class Fresh:
    """The fresh venv, the copy of this repository the wheel is built from, and the model repository."""

    def __init__(self, root: Path):
        self.root = root
        self.venv = root / "venv"
        self.source = root / "model-atlas"
        self.repo = root / "my-model"
        self.ran: list[str] = []
        bin_dir = str(self.venv / "bin")
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(self.venv),
                    "PIP_CONSTRAINT": str(ROOT / "constraints.txt"), "NO_MKDOCS_2_WARNING": "1",
                    "PRE_COMMIT_HOME": str(root / "pre-commit"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                    "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        for name in ("PYTHONPATH", "PYTHONHASHSEED"):
            self.env.pop(name, None)

    def run(self, command: str, cwd: Path, expect: int | None = 0, record: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(command, shell=True, cwd=cwd, env=self.env, capture_output=True, text=True,
                              timeout=900)
        if expect is not None:
            assert proc.returncode == expect, f"`{command}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n" \
                                              f"{proc.stderr[-3000:]}"
        if record:
            self.ran.append(command)
        return proc

    def python(self, code: str, cwd: Path) -> str:
        return subprocess.run([str(self.venv / "bin" / "python"), "-c", code], cwd=cwd, env=self.env,
                              capture_output=True, text=True, check=True, timeout=600).stdout


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Atlas Test", "-c", "user.email=test@example.org", *args], cwd=folder,
                   check=True, capture_output=True)


def _copy_repository(target: Path) -> None:
    """This repository's files as a clone has them (what git tracks, and what it would, uncommitted), without the
    docs, tests and benchmark that the wheel does not carry: one commit, so pre-commit can clone it."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split("\n")
    for rel in listed:
        if rel and not rel.startswith(("docs/", "tests/", "bench/")) and (ROOT / rel).is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, target / rel)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "model-atlas")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The README's install commands, run in a copy of this repository with a fresh venv's pip; the model
    repository holding the README's model file, and the README's save_pretrained GPT-2 (its second python block)."""
    f = Fresh(tmp_path_factory.mktemp("user"))
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(f.venv)], check=True)
    f.source.mkdir()
    _copy_repository(f.source)
    assert not (f.source / "node_modules").exists()      # KaTeX comes from the npm registry at wheel-build time
    for command in readme_commands():
        if command.startswith(WHEEL_COMMANDS):
            f.run(command, f.source)
    f.run("pip install transformers", f.source, record=False)   # what `atlas describe gpt2-tiny` needs
    f.repo.mkdir()
    (f.repo / "mymodel.py").write_text(_blocks("python")[0])
    _git(f.repo, "init", "-q")
    _git(f.repo, "add", "mymodel.py")
    _git(f.repo, "commit", "-q", "-m", "the model")
    f.python(_blocks("python")[1], f.repo)                 # the README's save_pretrained GPT-2
    f.gpt2_parameters = int(f.python(
        "from transformers import AutoConfig, AutoModelForCausalLM\n"
        "m = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained('gpt2-tiny'))\n"
        "print(sum(p.numel() for p in m.parameters()))", f.repo))
    return f


def _widen(model: Path) -> None:
    """The model file with its first size of two digits or more grown by 8: a change the pages must show."""
    text = model.read_text()
    edited = re.sub(r"\b\d{2,}\b", lambda m: str(int(m.group()) + 8), text, count=1)
    assert edited != text, "the README's model names no size to edit"
    model.write_text(edited)


def _total(table: str) -> int:
    return int(re.search(r"^parameters ([\d,]+)", table, re.M).group(1).replace(",", ""))


def test_the_readme_walkthrough_in_a_model_repository(fresh):
    """Every README command in order: describe, init, build, `mkdocs build --strict`, check, and a save_pretrained
    folder described with its checkpoint reconciled; each table's total is the model's sum(p.numel())."""
    f = fresh
    installed = f.python("import atlas; print(atlas.__file__)", f.root)
    assert "/site-packages/atlas/" in installed and str(ROOT) not in installed
    outputs = {}
    for command in readme_commands():
        if command.startswith(WHEEL_COMMANDS) or command in SETUP_COMMANDS:
            continue
        outputs[command] = f.run(command, f.repo).stdout
    tiny = int(f.python("import mymodel; print(sum(p.numel() for p in mymodel.tiny().parameters()))", f.repo))
    assert _total(outputs["atlas describe mymodel.py:tiny"]) == tiny
    assert _total(outputs["atlas describe gpt2-tiny"]) == f.gpt2_parameters
    assert re.search(r"checkpoint gpt2-tiny\S* \(\d+ tensors\) against .*: \d+ matched, 1 tied .*0 missing, "
                     r"0 unexpected, 0 mismatched", outputs["atlas describe gpt2-tiny"])
    for name in ("mkdocs.yml", "docs/index.md", ".github/workflows/atlas.yml", ".pre-commit-config.yaml"):
        assert (f.repo / name).is_file(), name
    shown = yaml.safe_load(_blocks("yaml")[0])             # README's mkdocs.yml: init's, and a second model
    shown["plugins"][1]["atlas"]["models"][1:] = []
    assert yaml.safe_load((f.repo / "mkdocs.yml").read_text()) == shown
    again = f.run("atlas init mymodel.py:tiny", f.repo, expect=2, record=False)
    assert again.stderr.count("\n") == 1 and "mkdocs.yml" in again.stderr and "never overwrites" in again.stderr
    assert not (f.repo / "node_modules").exists()
    assert len(list((f.repo / "site").rglob("index.html"))) > 20
    assert set(COMMANDS) <= set(f.ran) | set(SETUP_COMMANDS), "a README command this test does not run"


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is installed by `make test`")
def test_the_built_site_renders_math_in_chromium(fresh):
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM as BROWSER, FLAGS, _Quiet, _serve
    site = fresh.repo / "site"
    pages = sorted(p for p in site.rglob("index.html") if 'class="katex"' in p.read_text() and "/es/" not in str(p))
    assert pages, "no page with math"
    errors = []
    with _serve(site, _Quiet) as served, sync_playwright() as p:
        url = served[0]
        browser = p.chromium.launch(executable_path=BROWSER, args=FLAGS, headless=True)
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        for path in (pages[0], site / "es" / pages[0].relative_to(site)):
            page.goto(url + path.parent.relative_to(site).as_posix() + "/")
            page.wait_for_load_state("networkidle")
            assert page.locator(".katex").count() > 0
        browser.close()
        assert served.errors == []
    assert errors == []


def test_check_fails_after_a_model_edit_until_build(fresh):
    f = fresh
    _widen(f.repo / "mymodel.py")
    stale = f.run("atlas check", f.repo, expect=1, record=False)
    assert "differ from docs/" in stale.stderr
    f.run("atlas build", f.repo, record=False)
    f.run("atlas check", f.repo, record=False)


def test_the_pre_commit_hook_fails_on_stale_pages_then_passes(fresh):
    f = fresh
    _widen(f.repo / "mymodel.py")
    _git(f.repo, "add", "-A")
    hook = f"{sys.executable} -m pre_commit try-repo {f.source} atlas-check --all-files"
    failed = f.run(hook, f.repo, expect=1, record=False)
    assert "differ from docs/" in failed.stdout
    f.run("atlas build", f.repo, record=False)
    _git(f.repo, "add", "-A")
    f.run(hook, f.repo, record=False)
