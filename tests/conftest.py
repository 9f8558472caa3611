import os
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "models.py"
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
sys.path.insert(0, str(ROOT))


def fixture_spec(name: str) -> str:
    return f"{FIXTURES}:{name}"


def lines(doc, cid: str) -> list[str]:
    """A component's steps as a reader sees them: plain LaTeX, every symbol by its name."""
    from atlas.equations.markup import plain
    e = doc.component(cid).equations
    return [plain(s.tex, e.names()) for s in e.steps]


def summary(doc, cid: str) -> list[str]:
    from atlas.equations.markup import plain
    e = doc.component(cid).equations
    return [plain(s, e.names()) for s in e.summary]


def page_math(text: str) -> str:
    """A generated page with the site's symbol keys and stream classes removed."""
    from atlas.equations.markup import strip_markup
    return strip_markup(text, keep_streams=False)


@pytest.fixture(scope="session")
def ldlm_doc():
    from atlas import describe
    return describe()


@pytest.fixture(scope="session")
def ldlm_files(ldlm_doc):
    from atlas import render
    return render.render(ldlm_doc)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """One real `mkdocs build --strict` of the repository's config, in a temporary copy."""
    import shutil
    import subprocess
    work = tmp_path_factory.mktemp("site-src")
    shutil.copytree(ROOT / "docs", work / "docs")
    shutil.copy(ROOT / "mkdocs.yml", work / "mkdocs.yml")
    (work / "templates").symlink_to(ROOT / "templates")         # the theme overrides
    (work / "node_modules").symlink_to(ROOT / "node_modules")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=work,
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work / "site", proc.stderr
