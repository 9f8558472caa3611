"""Models that break naive tools: each is documented, marked where something cannot be derived,
and never crashes the build or leaves a traceback."""

import html

import pytest
from conftest import ROOT, mkdocs_build

from atlas.cli import main
from atlas.extract import accounting, walk
from atlas.load import spec

ROBUST = ROOT / "tests" / "fixtures" / "robust.py"


def build(name, tmp_path, capsys):
    docs = tmp_path / "docs"
    rc = main(["build", f"{ROBUST}:{name}", "--docs", str(docs)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "Traceback" not in out.err
    return docs


@pytest.mark.parametrize("name", ["lazy", "lazy_no_inputs", "weight_norm", "spectral", "empty", "buffers", "nasty"])
def test_documented_without_crash(name, tmp_path, capsys):
    docs = build(name, tmp_path, capsys)
    assert list(docs.rglob("index.md"))


@pytest.mark.parametrize("name", ["weight_norm", "spectral", "empty", "buffers", "lazy"])
def test_accounting_reconciles(name):
    loaded = spec.load(f"{ROBUST}:{name}")
    from atlas.extract.probes import probe_runs
    probe_runs.materialize_lazy(loaded.model, None)
    doc = walk.walk(loaded)
    trained, frozen = accounting.tree_total(doc)
    assert trained + frozen == sum(p.numel() for p in loaded.model.parameters()) == doc.totals.parameters


def test_parametrization_originals_are_rows():
    doc = walk.walk(spec.load(f"{ROBUST}:weight_norm"))
    ids = [c.id for c in doc.components]
    holder = next(c for c in doc.components if any(r.name == "original0" for r in c.rows))
    assert holder.id in ids and {r.name for r in holder.rows} == {"original0", "original1"}
    assert doc.totals.parameters == 4 * 3 + 4 + 4


def test_lazy_without_inputs_says_so(tmp_path, capsys):
    docs = build("lazy_no_inputs", tmp_path, capsys)
    page = (docs / "sequential" / "0.md").read_text()
    assert "uninitialized: a lazy module's size is set by its first forward" in page


def test_lazy_with_inputs_is_sized_on_meta():
    loaded = spec.load(f"{ROBUST}:lazy")
    from atlas.extract.probes import probe_runs
    assert probe_runs.materialize_lazy(loaded.model, None)
    assert loaded.model[0].weight.shape == (4, 3) and loaded.model[0].weight.device.type == "meta"


def test_zero_element_parameters(tmp_path, capsys):
    doc = walk.walk(spec.load(f"{ROBUST}:empty"))
    assert [r.count for r in doc.root.rows] == [0] and doc.totals.parameters == 0


def test_complex_and_integer_buffers():
    doc = walk.walk(spec.load(f"{ROBUST}:buffers"))
    dtypes = {b.name: b.dtype for b in doc.root.buffers}
    assert dtypes == {"c": "complex64", "i": "int32"} and doc.totals.buffers == 5


def test_ten_thousand_children():
    doc = walk.walk(spec.load(f"{ROBUST}:many"))
    assert len(doc.components) == 2 and doc.component("0-9999").instances == 10000
    assert doc.totals.parameters == 60000


def test_hostile_names_are_escaped(tmp_path, capsys):
    docs = build("nasty", tmp_path, capsys)
    import re
    page = next(p for p in sorted(docs.rglob("index.md")) if "catalog" not in p.parts).read_text()   # the model page
    prose = re.sub(r"(?ms)^([ \t]*)(`{3,}).*?^\1\2", "", page)       # code excerpts are escaped by the highlighter
    assert "<script>" not in prose and "<b>Evil</b>" not in prose
    assert "&lt;script&gt;" in page and "\\{\\{ config \\}\\}" in page and "\\$x^2\\$" in page
    assert 'title: "&lt;b&gt;Evil&lt;/b&gt;' in page
    from atlas import pipeline
    from atlas.render import model_pages
    doc = pipeline.describe(f"{ROBUST}:nasty")
    assert "<b>" not in str(model_pages.nav(doc))


def test_hostile_names_in_a_built_site(tmp_path):
    """A real mkdocs build: nothing from the model's names or docstrings becomes markup."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "mkdocs.yml").write_text(
        f"site_name: t\ntheme:\n  name: material\n  font: false\nplugins:\n  - atlas:\n      models: [{{spec: '{ROBUST}:nasty'}}]\n"
        "markdown_extensions: [admonition, pymdownx.details, pymdownx.superfences, attr_list, md_in_html, tables,"
        " {pymdownx.arithmatex: {generic: true}}]\n")
    code, log = mkdocs_build(tmp_path)
    assert code == 0, log[-2000:]
    for page in (tmp_path / "site").rglob("*.html"):
        text = page.read_text()
        assert "<script>alert(1)</script>" not in text and "<b>Evil</b>" not in text, page
    assert html.escape("<b>Evil</b>") in (tmp_path / "site" / "b-evil-b-x-y" / "index.html").read_text()


def test_torchscript_child_is_an_opaque_leaf(tmp_path, capsys):
    """A `torch.jit.script` child takes no hooks: its parameters are counted, its page says why it has no
    equations, and the model around it is recorded and checked."""
    from atlas import pipeline
    doc = pipeline.describe(f"{ROBUST}:scripted")
    scripted = doc.component("scripted")
    assert scripted.parameters_per_instance == 20 and doc.totals.parameters == 50
    assert "TorchScript" in str(scripted.equations.reason) and not scripted.equations.steps
    # the aten calls TorchScript's interpreter makes are counted: x W^T + b at B = 2 (TorchScript pins B)
    assert scripted.cost.flops == "64" and not scripted.cost.uncounted and doc.root.cost.flops == "160"
    for comp in (doc.root, doc.component("pre"), doc.component("post")):
        assert comp.equations.verification.verified, comp.id
    docs = build("scripted", tmp_path, capsys)
    page = next(p for p in docs.rglob("scripted.md")).read_text()
    assert "runs in TorchScript's interpreter" in page


def test_a_divisor_made_from_a_size_that_is_zero_is_no_answer():
    """Sizes at which a floor division or remainder in a size expression divides by 0 have no value, never an
    exception (Swin's window count at a small image raised ZeroDivisionError from `refused_sizes`)."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv, Mod

    from atlas.extract.trace.size_values import value_at
    w = sympy.Symbol("w", integer=True, positive=True)
    assert value_at(FloorDiv(w, FloorDiv(w, 4)), {w: 2}) is None
    assert value_at(Mod(7, FloorDiv(w, 4)), {w: 3}) is None
    assert value_at(sympy.floor(7 / sympy.floor(w / 4)), {w: 3}) is None
    assert value_at(FloorDiv(w, FloorDiv(w, 4)), {w: 5}) == 5


def test_a_size_solved_past_a_division_by_zero(capsys):
    """`assert w // (w // 4) == 5` at the run's width: solving for the width meets widths 2 and 3, where w // 4 is
    0, and goes on to 5."""
    assert main(["describe", f"{ROBUST}:windows"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "ZeroDivisionError" not in out.err
    assert "W = 5: the code stops at other sizes (robust.py:" in out.err
    assert "x:float32[B,5]" in out.out


def test_a_module_at_two_paths_is_documented_once_where_it_is_called(tmp_path, capsys):
    """`self.shared = m; self.block.inner = m`, and only the block calls it: one component, `block.inner`, its
    parameters counted there, checked through the block's call; `shared` is no page of its own."""
    from atlas import pipeline
    doc = pipeline.describe(f"{ROBUST}:shared")
    assert [c.id for c in doc.components] == ["", "block", "block.inner", "block.out"]
    inner = doc.component("block.inner")
    assert inner.parameters_per_instance == 20 and not inner.counted_elsewhere
    assert all(r.counted for r in inner.rows) and doc.totals.parameters == 40
    for comp in doc.components:
        assert comp.equations.verification.verified, comp.id
    docs = build("shared", tmp_path, capsys)
    assert not [p for p in docs.rglob("shared.md")] and list(docs.rglob("inner.md"))


def test_a_cost_the_data_decides_is_said_on_stderr_once(capsys):
    """`x[x.sum(-1) > 0]` keeps as many rows as the data says: the cost of the model and of its Linear is left
    uncounted, which each page and the JSON say, and stderr says once for the model."""
    assert main(["describe", f"{ROBUST}:masked"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "not counted" in line]
    assert lines == ["atlas: Masked: the cost of 2 components is not counted, (model) first: it depends on sizes the "
                     "data decided, returned by Tensor.__getitem__ (robust.py:161)"]


@pytest.mark.parametrize("name, note, shown", [
    ("multiple", "atlas: Limits: W = 8: the code requires floor(W/2) to be a multiple of 4 (robust.py:183), which it "
                 "is from 8 to 9, the nearest sizes above the run's 6", "W = 224"),
    ("most", "atlas: Limits: W ≤ 5: the code refuses larger sizes (robust.py:185), and the run's 6 was one", "W = 5"),
    ("least", "atlas: Limits: W ≥ 8: the code refuses smaller sizes (robust.py:187), and the run's 6 was one",
     "W = 224"),
])
def test_a_size_the_code_asks_for_is_solved_and_stays_a_symbol(name, note, shown, capsys):
    """A multiple (MaxViT's `height must be divisible by window`), a maximum (SD3's `Height cannot be greater than
    pos_embed_max_size`), a minimum: the run's width 6 fails each; the width solved for, and the line that asked,
    are said; W stays a symbol (the costs are evaluated at W = 224, or at the maximum), and the equations check."""
    assert main(["describe", "--verify", f"{ROBUST}:{name}"]) == 0
    out = capsys.readouterr()
    assert note in out.err.splitlines() and "Traceback" not in out.err
    assert "x:float32[B,W]" in out.out and f"at B = 1, {shown};" in out.out
    assert "verified for 2" in out.out


def test_the_solved_sizes_of_a_run():
    """What `refused_sizes` gives a run that stopped: the width solved for, its kind, and the line."""
    from atlas.extract.record.attempts import Attempts
    from atlas.extract.trace import runs
    from atlas.load import spec as specs
    for name, size, line, extra in (("multiple", 8, 183, {"first": 8, "last": 9, "modulus": 4, "step": 8}),
                                    ("most", 5, 185, {}), ("least", 8, 187, {})):
        model = specs.load(f"{ROBUST}:{name}").model
        r = Attempts(model, walk.walk(specs.Loaded(name, model, None)), None, None, None)
        found, symbols = r.resolved(r.choices[0].texts, {})
        trace = runs.symbolic(model, found, r.hints(symbols, {}, r.bounds), r.repeats)
        assert trace.error is not None and trace.hints["W"] == 6
        (req,) = [q for q in trace.refused if q.name == "W"]
        assert (req.kind, req.size, req.site, req.hint) == (name, size, f"robust.py:{line}", 6)
        assert all(getattr(req, k) == v for k, v in extra.items()), req


def test_distinct_sizes_stay_within_a_maximum():
    """SD3's H and W, both at most 33: the run's sizes are 33 and 32, not 33 and 34 (past the maximum)."""
    from atlas.extract.record.attempts import Attempts
    from atlas.extract.trace.size_values import most_halved
    assert Attempts.hints(["H", "W"], {"H": 40, "W": 40}, {"H": (None, 33), "W": (None, 33)}) == {"H": 33, "W": 32}
    assert most_halved(61, 64) == 64 and most_halved(8, 9) == 8 and most_halved(225, 256) == 256


def test_a_torchscript_block_is_one_leaf_and_a_torchscript_model_is_refused(capsys):
    """A scripted Sequential's children are no components (TorchScript refuses `get_submodule`): their parameters
    are the block's rows, counted. A model that is TorchScript itself is refused, saying why, without a traceback."""
    from atlas import pipeline
    doc = pipeline.describe(f"{ROBUST}:scripted_block")
    body = doc.component("body")
    assert [c.id for c in doc.components] == ["", "body", "head"] and not body.children
    assert [(r.name, r.count, r.counted) for r in body.rows] == [("0.weight", 16, True), ("0.bias", 4, True)]
    assert doc.totals.parameters == 30 and doc.root.equations.verification.verified
    assert main(["describe", f"{ROBUST}:scripted_whole"]) != 0
    err = capsys.readouterr().err
    assert "returned a TorchScript module (torch.jit.script)" in err and "Traceback" not in err
