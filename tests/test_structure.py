"""The package's shape: stages that import one way, small modules with names of their own, a data model without
markup, and the model authors' hooks read in one place."""

from __future__ import annotations

import ast
import collections
import re

from conftest import ROOT

PACKAGE = ROOT / "atlas"
# Each part may import the parts before it, never one after it. The foundation (resources, errors, progress) is
# imported by every stage; the pipeline runs the stages up to render; site writes its files; the CLI is on top.
ORDER = ["resources", "errors", "progress", "i18n", "document", "load", "extract", "analyse", "render", "pipeline",
         "site", "cli", "__main__"]
MODELS = "zoo"          # model code shipped with the atlas: it imports no stage; only the site's tools list its models


def _modules() -> dict[str, object]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(path) -> list[tuple[str, str, int]]:
    """(module imported, name imported or "", line) for every import of an atlas module, at any depth."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("atlas") and not node.level:
            out += [(node.module, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno) for a in node.names if a.name.startswith("atlas")]
    return out


def _target(module: str, name: str) -> str:
    """The module an import reaches: `from atlas.x import y` is atlas.x.y where y is a module."""
    return f"{module}.{name}" if f"{module}.{name}" in MODULES else module


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_imports_go_one_way():
    backwards = []
    for module, path in MODULES.items():
        part = _part(module)
        for imported, name, line in _imports(path):
            other = _part(_target(imported, name))
            if module == "atlas" or imported == "atlas" or part == other:
                continue
            if MODELS in (part, other):
                if part == MODELS or part != "site":
                    backwards.append(f"{path.relative_to(ROOT)}:{line}: {part} imports {other} (model code)")
                continue
            if ORDER.index(other) > ORDER.index(part):
                backwards.append(f"{path.relative_to(ROOT)}:{line}: {part} imports {other} ({imported})")
    assert backwards == []


def test_the_order_checks_what_it_says():
    """A stage importing a later one is caught: the check above is not one that cannot fail."""
    assert ORDER.index("render") > ORDER.index("analyse") > ORDER.index("extract") > ORDER.index("document")
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} - {MODELS}
    assert packages == set(ORDER) - {"resources", "errors", "progress", "pipeline", "cli", "__main__"}
    assert _part(_target("atlas.render", "latex")) == "render" and _part("atlas.pipeline") == "pipeline"


def test_no_import_cycles():
    graph = collections.defaultdict(set)
    for module, path in MODULES.items():
        for imported, name, _ in _imports(path):
            target = _target(imported, name)
            if target in MODULES and target != module and "atlas" not in (module, target):
                graph[module].add(target)
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"
    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_modules_are_few_at_the_top_small_and_named_apart():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in MODULES.values()}
    assert {p: n for p, n in sizes.items() if n > 400} == {}
    names = collections.Counter(p.stem for p in MODULES.values() if p.stem != "__init__")
    assert [n for n, k in names.items() if k > 1] == []


def test_no_private_name_is_imported_across_modules():
    private = [f"{path.relative_to(ROOT)}:{line}: {imported}.{name}" for path in MODULES.values()
               for imported, name, line in _imports(path) if name.startswith("_") and not name.startswith("__")]
    assert private == []


def test_the_data_model_holds_no_markup_and_imports_no_machinery():
    """The data model imports neither torch, jinja2 nor a printer of equations, and no field holds LaTeX."""
    for path in (PACKAGE / "document").glob("*.py"):
        text = path.read_text()
        tree = ast.parse(text)
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & {"torch", "jinja2", "markupsafe"}, path
        stages = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                  and n.module.startswith("atlas.") and _part(n.module) not in ("document", "i18n", "errors")}
        assert stages == set(), path
        fields = [t.target.id for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for t in n.body
                  if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)]
        assert [f for f in fields if re.search(r"(^|_)(tex|latex|markup|html)(_|$)", f)] == [], path
        assert not re.search(r"\\\\(atlasref|htmlData|htmlClass|frac|operatorname)", text), path


def test_hooks_are_read_in_one_place():
    """Every `atlas_*` attribute of a model is read by atlas/load/hooks.py, and nothing else reads one."""
    reads = []
    for path in MODULES.values():
        if path.parts[-2] == MODELS or path.name == "hooks.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant) and str(node.args[1].value).startswith("atlas_"):
                reads.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("atlas_"):
                reads.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert reads == []


def test_evaluation_mode_is_switched_in_one_place():
    """Only atlas.load.forward_calls.evaluation puts a model in evaluation mode for a run (and restores every
    module's mode); a copy made for a check is put in it once, for good."""
    calls = [f"{p.relative_to(ROOT)}" for p in MODULES.values() if re.search(r"\.eval\(\)|\.train\(", p.read_text())]
    assert sorted(calls) == ["atlas/analyse/equations/materialize.py", "atlas/load/forward_calls.py"]
