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


@pytest.fixture(scope="session")
def ldlm_doc():
    from atlas import describe
    return describe()


@pytest.fixture(scope="session")
def ldlm_files(ldlm_doc):
    from atlas import render
    return render.render(ldlm_doc)
