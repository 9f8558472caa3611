"""README.md is for users: short, its links real, no development log, and only the commands a test runs.

The commands themselves run in tests/test_wheel.py; tests/readme_commands.py lists them.
"""

import ast
import re

from conftest import ROOT
from readme_commands import COMMANDS, SETUP_COMMANDS, WHEEL

README = ROOT / "README.md"
LIMIT = 15 * 1024
# Words that tell the tool's history instead of describing it ("before", "an earlier run", "was mended").
HISTORY = re.compile(r"\b(before|earlier|mended|now|no longer)\b", re.I)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(_text()) if lang == language]


def _prose() -> str:
    """README without its code: fenced blocks and inline code spans."""
    return re.sub(r"`[^`\n]*`", " ", FENCE.sub(" ", _text()))


def test_readme_is_at_most_15_kb():
    assert len(README.read_bytes()) <= LIMIT


def test_every_relative_link_and_image_exists():
    prose = _prose()
    targets = re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", prose)
    targets += re.findall(r"<img[^>]*\ssrc=\"([^\"]+)\"", prose)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.I) and not t.startswith("#")]
    assert local, "README links nothing in the repository"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert missing == []


def test_the_picture_is_a_committed_png_of_a_modest_size():
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", _prose())
    assert images and all(i.endswith(".png") and i.startswith("docs/assets/") for i in images)
    assert all((ROOT / i).stat().st_size < 250 * 1024 for i in images)


def test_no_history_outside_code():
    found = sorted({m.group(0).lower() for m in HISTORY.finditer(_prose())})
    assert found == []


def test_the_history_check_can_fail():
    assert HISTORY.search("This was mended in an earlier run; it no longer fails") is not None
    assert HISTORY.search("Nowhere, beforehand") is None


def test_sh_blocks_hold_exactly_the_listed_commands():
    lines = [line.strip() for block in _blocks("sh") for line in block.splitlines() if line.strip()]
    assert [line for line in lines if line not in COMMANDS] == []
    assert [c for c in COMMANDS if c not in lines] == []
    assert len(lines) == len(set(lines))


def test_the_commands_module_lists_each_command_once():
    assert isinstance(COMMANDS, tuple) and all(isinstance(c, str) and c == c.strip() for c in COMMANDS)
    assert len(COMMANDS) == len(set(COMMANDS))
    assert set(SETUP_COMMANDS) <= set(COMMANDS)


def test_the_wheel_is_the_one_the_project_builds():
    text = (ROOT / "pyproject.toml").read_text()       # tomllib is Python 3.11's; the project runs on 3.10
    name, version = (re.search(rf'^{key} = "([^"]+)"', text, re.M).group(1) for key in ("name", "version"))
    assert WHEEL == f"dist/{name.replace('-', '_')}-{version}-py3-none-any.whl"


def test_the_first_python_block_is_a_torch_model_with_a_tiny_factory():
    tree = ast.parse(_blocks("python")[0])
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert "tiny" in functions
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported == {"torch"}


def test_ci_runs_make_test():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in lines


def _recipe(target: str) -> list[str]:
    """The recipe lines of a Makefile target (its tab-indented lines after `target:`)."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(rf"{re.escape(target)}\s*:(?!=)", line)]
    assert starts, f"no `{target}` target in the Makefile"
    recipe = []
    for line in lines[starts[0] + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_site_builds_the_site_strictly_and_make_test_runs_pytest():
    assert any("mkdocs build --strict" in line for line in _recipe("site"))
    assert any("pytest" in line for line in _recipe("test"))
