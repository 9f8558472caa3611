import os
import re
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "models.py"
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    """The process that runs tests documents models in it, as the CLI does in its own: the allocator as the CLI
    sets it, and under xdist (`make test` runs two workers on two cores) one torch thread each. xdist's controller
    runs no test, and imports neither torch nor atlas (2.6 s of CPU)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker and getattr(config.option, "numprocesses", None):
        return
    if worker:
        import torch
        torch.set_num_threads(1)
    from atlas.load import memory
    memory.keep_freed_memory()


# the models of the default site, as mkdocs.yml lists them for the atlas plugin
SITE_SPECS = re.findall(r"^\s*- spec: (\S+)", (ROOT / "mkdocs.yml").read_text(), re.M)


def fixture_spec(name: str) -> str:
    return f"{FIXTURES}:{name}"


def lines(doc, cid: str) -> list[str]:
    """A component's steps as a reader sees them: plain LaTeX, every symbol by its name."""
    from atlas.render.math_markup import names_of, plain
    e = doc.component(cid).equations
    return [plain(s.formula, names_of(e)) for s in e.steps]


def summary(doc, cid: str) -> list[str]:
    from atlas.render.math_markup import names_of, plain
    e = doc.component(cid).equations
    return [plain(s, names_of(e)) for s in e.summary]


def page_math(text: str) -> str:
    """A generated page with the site's symbol keys and stream classes removed."""
    from atlas.render.math_markup import strip_markup
    return strip_markup(text, keep_streams=False)


# a process the suite starts while both workers run: one torch thread, as each worker has (the LDLM's run took
# 23.8 s in the suite with torch's two threads against the site's build on the other core, 14 s with one)
ONE_THREAD = {"OMP_NUM_THREADS": "1"} if os.environ.get("PYTEST_XDIST_WORKER") else {}
HASH_SEED = "987"       # the LDLM's one documentation run of the suite runs with it (ldlm_doc)
_DESCRIBE = ("import pickle, sys\nfrom atlas import describe\nfrom atlas.load import memory\nmemory.keep_freed_memory()\n"
             "open(sys.argv[1], 'wb').write(pickle.dumps(describe()))")


@pytest.fixture(scope="session")
def ldlm_doc(tmp_path_factory):
    """The LDLM, documented and verified once per test run, in a process of its own with a fixed hash seed
    (HASH_SEED): the pages rendered from it are compared with the committed ones, which `make site` made in a
    process with a random seed (test_output_does_not_depend_on_the_hash_seed). The first xdist worker to need it
    runs that process; the other reads its result (pickled: its messages stay translatable, which its JSON, in
    English, would not keep)."""
    import pickle
    import subprocess

    from filelock import FileLock
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    path = shared / "ldlm_doc.pickle"
    with FileLock(f"{path}.lock"):
        if not path.is_file():
            proc = subprocess.run([sys.executable, "-c", _DESCRIBE, str(path)], cwd=ROOT, capture_output=True,
                                  text=True, env={**os.environ, "PYTHONHASHSEED": HASH_SEED, **ONE_THREAD})
            assert proc.returncode == 0, proc.stderr[-3000:]
        return pickle.loads(path.read_bytes())


@pytest.fixture(scope="session")
def ldlm_generated(ldlm_doc):
    """Everything `atlas build` generates for the LDLM alone (its pages, the reference pages of the torch.nn classes
    it uses, the catalog), assembled from the one LDLM doc of the run."""
    from atlas import pipeline
    return pipeline.assemble([ldlm_doc])


@pytest.fixture(scope="session")
def ldlm_files(ldlm_doc):
    from atlas.render import model_pages
    return model_pages.render(ldlm_doc)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """One real `mkdocs build --strict` of the repository's config, in a temporary copy: once per test run, shared
    by the xdist workers (the first one to need it builds it, under a lock; the others wait and read it)."""
    from filelock import FileLock
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    work = shared / "site-src"
    with FileLock(f"{work}.lock"):
        log = work / "build.log"
        if not log.is_file():
            _build_site(work, log)
    return work / "site", log.read_text()


def _build_site(work: Path, log: Path) -> None:
    import shutil
    import subprocess
    if work.exists():                   # a build that failed earlier in this run
        shutil.rmtree(work)
    work.mkdir()
    shutil.copytree(ROOT / "docs", work / "docs")
    shutil.copy(ROOT / "mkdocs.yml", work / "mkdocs.yml")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=work,
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log.write_text(proc.stderr)


def mkdocs_build(folder: Path, *flags: str) -> tuple[int, str]:
    """`mkdocs build FLAGS` in FOLDER, through mkdocs's own command line, in this process: its exit status and its
    log. The worker has imported everything a build needs; a process of its own spent 2-4 s importing it again."""
    import contextlib
    import io

    from mkdocs.__main__ import cli
    log, code = io.StringIO(), 0
    # the command's log handler writes to the stderr of when it is made, and is removed with the command
    with contextlib.chdir(folder), contextlib.redirect_stderr(log):
        try:
            cli.main(["build", *flags], prog_name="mkdocs")
        except SystemExit as exc:
            code = exc.code or 0
    return code, log.getvalue()


SYMBOL = re.compile(r"\\htmlData\{sym=([^}]*)\}\{")


def _symbols(page: str) -> list[tuple[str, str]]:
    """(hover key, name) of every symbol occurrence on a page."""
    out = []
    for m in SYMBOL.finditer(page):
        depth, j = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(page[j], 0)
            j += 1
        out.append((m.group(1), page_math(page[m.end():j - 1])))
    return out


def symbols_checked(files: dict) -> int:
    """Every page of `files`: no symbol names two values, no hover key two names, and no step defines a symbol
    by itself (`x = x`). Returns how many symbol occurrences were checked."""
    checked = 0
    for path, text in files.items():
        if not path.endswith(".md"):
            continue
        by_name, by_key = {}, {}
        for key, name in _symbols(text):
            assert by_name.setdefault(name, key) == key, (path, name, key, by_name[name])
            assert by_key.setdefault(key, name) == name, (path, key)
            checked += 1
        for line in re.findall(r"\$\$\n\s*(.*?)\n\s*\$\$", text):
            lhs, sep, rhs = page_math(line).partition(" = ")
            assert not sep or lhs.strip() != rhs.strip(), (path, line)
    return checked


@pytest.hookimpl(tryfirst=True)        # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """One test of the built site first, so one worker builds it while the other runs the rest; the other tests of
    the site last, when it is there for both. The tests that share a module-scoped fixture (one Chromium, one
    documented GPT-2, a saved checkpoint) run on one worker (--dist loadgroup), so that it is made once: split
    between the two, each made its own."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        shared = info is not None and any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs)
        if shared and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    site = [item for item in items if "built_site" in getattr(item, "fixturenames", ())]
    if site:
        rest = [item for item in items if item not in site]
        items[:] = site[:1] + rest + site[1:]


def two_model_project(folder: Path) -> None:
    """A project whose mkdocs.yml names two models of the atlas plugin: one with example inputs of its own, one with
    a checkpoint of its own (a path from mkdocs.yml's folder, written here); the Markdown extensions left to the
    plugin."""
    import torch
    from fixtures.checkpoints import tiny_gpt2
    from safetensors.torch import save_model
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "index.md").write_text("# Home\n")
    (folder / "ck").mkdir()
    torch.manual_seed(0)
    save_model(tiny_gpt2(), str(folder / "ck" / "gpt2.safetensors"))
    (folder / "mkdocs.yml").write_text(
        "site_name: t\ntheme:\n  name: material\n  font: false\nplugins:\n  - atlas:\n      memory_budget: 0.5\n"
        f"      models:\n        - spec: '{FIXTURES}:two_layer_mlp'\n          inputs: ['x:float32[B,3]']\n"
        f"        - spec: '{ROOT / 'tests' / 'fixtures' / 'checkpoints.py'}:tiny_gpt2'\n"
        "          checkpoint: ck/gpt2.safetensors\n")
