"""The CLI: bad input, describe --json, build/check, and check failing after a model edit."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, fixture_spec

from atlas.cli import main

BAD = [
    ("no_colon_here", "bad SPEC"),
    (f"{FIXTURES.parent / 'broken_import.py'}:model", "cannot import"),
    ("atlas.zoo.nonexistent_module:model", "cannot import atlas.zoo.nonexistent_module"),
    (fixture_spec("missing_factory"), "has no attribute 'missing_factory'"),
    (fixture_spec("raises"), "raised ValueError: config has no layers (models.py:"),
    (fixture_spec("not_a_module"), "returned dict, not a torch.nn.Module"),
    (fixture_spec("NOT_CALLABLE"), "NOT_CALLABLE is a int, not a callable"),
    ("does/not/exist.py:model", "no such file"),
    ("", "bad SPEC ''"),
]


@pytest.mark.parametrize("spec,message", BAD)
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, spec, message):
    docs = tmp_path / "docs"
    assert main(["build", spec, "--docs", str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("atlas: error: ") and message in err
    assert "Traceback" not in err
    assert not docs.exists()


def test_a_factory_that_exits_or_a_module_named_as_a_file_get_one_line(tmp_path, capsys, monkeypatch):
    """sys.exit() in a factory is its failure, not the atlas's exit status; a module named without its .py is
    pointed to the file spec; a --mkdocs that is not there is named, never taken for the default."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quits.py").write_text("import sys\n\n\ndef model():\n    sys.exit(3)\n")
    assert main(["describe", "quits.py:model"]) == 2
    assert capsys.readouterr().err == "atlas: error: SPEC 'quits.py:model': model() raised SystemExit: 3 (quits.py:5)\n"
    command = Path(sys.executable).parent / "atlas"         # the console script: the working folder is no import root
    proc = subprocess.run([str(command), "describe", "quits:model"], capture_output=True, text=True)
    assert (proc.returncode, proc.stderr) == (2, "atlas: error: SPEC 'quits:model': cannot import quits: "
                                              "ModuleNotFoundError: No module named 'quits'; for the file, write "
                                              "'quits.py:model'\n")
    assert main(["check", "--mkdocs", "missing.yml"]) == 2
    assert capsys.readouterr().err == "atlas: error: --mkdocs missing.yml: no such file\n"


def test_raising_factory_names_last_frame(capsys):
    assert main(["describe", fixture_spec("raises"), "--json"]) == 2
    assert "helper_that_fails" not in capsys.readouterr().out


def test_bad_input_from_a_real_process(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "atlas", "build", fixture_spec("raises"), "--docs", str(tmp_path / "d")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert not (tmp_path / "d").exists()


# Code a describe needs only for some models (the probes of a failed symbolic run, input discovery from the first
# layer, recurrent and composite layers' builders) or only for pages (writing the docs tree, its fingerprint, jinja2's
# filters): a model that needs none of it leaves it unimported, and its memory free (atlas.pipeline).
ONLY_WHEN_NEEDED = ("atlas.extract.probes.probe_shapes", "atlas.extract.probes.dim_fitting", "atlas.extract.probes.probe_runs", "atlas.load.module_copy", "atlas.extract.record.escalation",
                    "atlas.extract.discover.first_consumer", "atlas.extract.discover.layer_inputs", "atlas.extract.trace.upsample",
                    "atlas.analyse.equations.composites", "atlas.analyse.equations.recurrent", "atlas.analyse.equations.verify",
                    "atlas.site.sync", "atlas.site.fingerprint", "atlas.render.filters", "atlas.render.repeat_words", "atlas.render.model_pages")
_IMPORTED_BY_DESCRIBE = """
import contextlib, io, json, sys
from atlas.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["describe", sys.argv[1], "--json"])
print(json.dumps([code, json.loads(out.getvalue())["model"], sorted(m for m in sys.modules if m.startswith("atlas"))]))
"""


def test_describe_imports_only_what_the_model_needs():
    """transformers' Llama: input_ids from its main_input_name, one symbolic run, no layer of a builder elsewhere."""
    proc = subprocess.run([sys.executable, "-c", _IMPORTED_BY_DESCRIBE, "tests/fixtures/hf_models.py:llama"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    code, model, modules = json.loads(proc.stdout.splitlines()[-1])
    assert (code, model) == (0, "LlamaForCausalLM"), proc.stderr
    assert "atlas.extract.record.plan" in modules and "atlas.analyse.equations.derive" in modules
    assert [m for m in ONLY_WHEN_NEEDED if m in modules] == []


def test_describe_json_keys(ldlm_doc):
    """The LDLM's describe --json data (the CLI prints exactly json_export.as_dict: test_describe_verify_prints_json)."""
    from atlas.document import serialize
    from atlas.render import json_export
    data = json.loads(serialize.dumps(json_export.as_dict(ldlm_doc)))
    assert data["model"] == "LDLM"
    assert all(c["verification"]["verified"] for c in data["components"])
    assert {"parameters", "trained", "frozen", "buffers"} <= set(data["totals"])
    assert data["totals"]["frozen"] == 124442112
    comp = {c["id"]: c for c in data["components"]}["latent_encoder.blocks.mlp.layer_norm"]
    for key in ("id", "class", "instances", "module_paths", "parameters_per_instance", "parameters_total", "rows"):
        assert key in comp
    assert comp["class"] == "torch.nn.modules.normalization.LayerNorm"
    assert (comp["instances"], comp["parameters_per_instance"], comp["parameters_total"]) == (6, 1536, 9216)
    assert comp["rows"][0] == {**comp["rows"][0], "name": "weight", "shape": [768], "calculation": "768",
                               "count": 768, "trained": True}


def test_describe_verify_prints_json(capsys):
    from atlas import pipeline
    from atlas.document import serialize
    from atlas.load import spec
    from atlas.render import json_export
    assert main(["describe", "tests/fixtures/nanogpt.py:gpt", "--json", "--verify"]) == 0
    out = capsys.readouterr().out
    doc = pipeline.document(spec.load("tests/fixtures/nanogpt.py:gpt"), pipeline.Settings())
    assert out == serialize.dumps(json_export.as_dict(doc))
    data = json.loads(out)
    assert data["components"] and all(c["verification"]["verified"] for c in data["components"])


def test_describe_fixture_by_file(capsys):
    assert main(["describe", fixture_spec("tied"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["parameters"] == 60


# Tests about files, not equations: a small budget skips verifying the largest instances, to keep them quick.
SMALL = ["--memory-budget", "0.1"]
NANOGPT = ROOT / "tests" / "fixtures" / "nanogpt.py"


def test_build_is_incremental_and_deterministic(tmp_path, capsys):
    a = tmp_path / "a"
    assert main(["build", f"{NANOGPT}:gpt", "--docs", str(a)]) == 0
    assert "written" in capsys.readouterr().out
    stamp = {p: p.stat().st_mtime_ns for p in a.rglob("*") if p.is_file()}
    assert main(["build", f"{NANOGPT}:gpt", "--docs", str(a)]) == 0         # the fingerprint: nothing changed
    assert "nothing they are made from changed" in capsys.readouterr().out
    assert stamp == {p: p.stat().st_mtime_ns for p in a.rglob("*") if p.is_file()}
    # generated again in full, in this process: the same bytes, so nothing is written
    assert main(["build", f"{NANOGPT}:gpt", "--docs", str(a), "--no-cache"]) == 0
    assert "nothing written" in capsys.readouterr().out
    assert stamp == {p: p.stat().st_mtime_ns for p in a.rglob("*") if p.is_file()}


def test_check_fails_after_model_edit_until_rebuilt(tmp_path, capsys):
    model = tmp_path / "mymodel.py"
    shutil.copy(NANOGPT, model)
    spec, docs = f"{model}:gpt", str(tmp_path / "docs")
    assert main(["build", spec, "--docs", docs]) == 0
    assert main(["check", spec, "--docs", docs]) == 0
    page = (tmp_path / "docs" / "gpt" / "transformer" / "h" / "index.md").read_text()
    assert "× 2 blocks = 25,408" in page
    capsys.readouterr()
    model.write_text(model.read_text().replace("n_layer: int = 2", "n_layer: int = 3"))
    assert main(["check", spec, "--docs", docs]) == 1
    err = capsys.readouterr().err
    assert "stale: gpt/transformer/h/index.md" in err and "run `atlas build`" in err
    assert main(["build", spec, "--docs", docs]) == 0
    assert main(["check", spec, "--docs", docs]) == 0
    page = (tmp_path / "docs" / "gpt" / "transformer" / "h" / "index.md").read_text()
    assert "× 3 blocks = 38,112" in page


def test_removed_components_pages_are_deleted(tmp_path, capsys):
    model = tmp_path / "m.py"
    model.write_text(
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a = nn.Linear(2, 2)\n"
        "        self.b = nn.Linear(2, 3)\n"
        "def net():\n    return Net()\n")
    docs = tmp_path / "docs"
    assert main(["build", f"{model}:net", "--docs", str(docs)]) == 0
    assert (docs / "net" / "b.md").is_file()
    model.write_text(model.read_text().replace("        self.b = nn.Linear(2, 3)\n", ""))
    assert main(["build", f"{model}:net", "--docs", str(docs)]) == 0
    assert not (docs / "net" / "b.md").exists() and (docs / "net" / "a.md").is_file()


def test_refuses_to_overwrite_foreign_folder(tmp_path, capsys, monkeypatch):
    """Refused before any model is documented: the folder is checked as soon as the model's name is known."""
    from atlas import pipeline
    (tmp_path / "ldlm").mkdir()
    (tmp_path / "ldlm" / "notes.md").write_text("mine")
    monkeypatch.setattr(pipeline, "document", lambda *a: pytest.fail("documented a model whose folder is foreign"))
    monkeypatch.chdir(tmp_path)         # no mkdocs.yml: the default model, the LDLM
    assert main(["build", "--docs", str(tmp_path)]) == 2
    assert "not generated by Model Atlas" in capsys.readouterr().err
    assert (tmp_path / "ldlm" / "notes.md").read_text() == "mine"
    (tmp_path / "catalog").mkdir()
    assert main(["build", f"{NANOGPT}:gpt", "--docs", str(tmp_path)]) == 2
    assert "catalog exists and was not generated by Model Atlas" in capsys.readouterr().err


def test_describe_without_verify_runs_nothing(capsys):
    assert main(["describe", "tests/fixtures/nanogpt.py:gpt", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(c["verification"] is None for c in data["components"])
    assert any(c["equations"]["steps"] for c in data["components"])


def test_interrupted_sync_leaves_whole_files(tmp_path, monkeypatch):
    """A build killed while files move into place leaves each file whole (old or new) and no staging behind."""
    from atlas.site import sync
    docs = tmp_path / "docs"
    old = {"m/a.md": "old a\n", "m/b.md": "old b\n", "m/c.md": "old c\n"}
    sync.sync(docs, old, ["m"])
    new = {"m/a.md": "new a\n" * 100, "m/b.md": "new b\n" * 100, "m/c.md": "new c\n" * 100}
    moves = []
    real_replace = sync.os.replace

    def replace_then_die(src, dst):
        if len(moves) == 2:
            raise KeyboardInterrupt
        moves.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(sync.os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        sync.sync(docs, new, ["m"])
    for rel in old:
        text = (docs / rel).read_text()
        assert text in (old[rel], new[rel])
    assert not list(docs.glob(".atlas-stage-*"))



def test_describe_table_indents_by_the_tree(capsys):
    """A list whose first entry differs from the rest: the entry listed on its own (inner.layers.0) and the repeated
    ones (inner.layers, ×2) are siblings in the tree and sit at one depth, not one under the other."""
    assert main(["describe", "tests/fixtures/attention_layouts.py:mixed"]) == 0
    lines = capsys.readouterr().out.splitlines()
    depth = {line.split()[0]: len(line) - len(line.lstrip()) for line in lines if line[:2] == "  "}
    assert depth["Inner"] == 2 and depth["Linear"] == depth["Block"] == 4


def test_strict_fails_when_the_checks_real_forward_does_not_run(capsys):
    """`--dim T=20` beside a table of 16 positions: the record (fake tensors check no index) runs, the check's real
    forward() does not. That was exit 0 with --strict and a silent stderr; the components said "not run"."""
    args = ["describe", fixture_spec("table_16"), "--input", "idx:int64[B,T]", "--dim", "T=20", "--verify"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "atlas: PositionLimited: forward() failed on the inputs the check made for 2 component(s), (model) " \
           "first: IndexError: index out of range in self (models.py:" in err
    assert main([*args, "--strict"]) == 1


def test_a_tied_head_is_marked_tied_not_a_sliver_of_the_parameters(capsys):
    """nanoGPT's LM head holds the token embedding's weight, counted there: the tree gave it "< 0.1%" of the trained
    parameters and the table its 3,072 with no mark, so the rows added up to more than the total."""
    from atlas import pipeline
    from atlas.render.model_pages import render
    spec = f"{ROOT / 'tests' / 'fixtures' / 'nanogpt.py'}:gpt"
    assert main(["describe", spec]) == 0
    head = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("LM head"))
    assert head.endswith("(tied: counted at transformer.wte.weight)"), head
    doc = pipeline.describe(spec)
    page = render(doc)[f"{doc.slug}/index.md"]
    item = next(li for li in page.split("<li") if ">LM head</a>" in li)
    assert 'atlas-tag--tied">tied<' in item and "&lt; 0.1%" not in item and "< 0.1%" not in item


def test_one_shot_describe_lets_go_of_the_source_lines_python_cached(capsys):
    """A one-shot describe (atlas/__main__.py freezes the collector) drops linecache's file entries after the model is
    built: torch's import leaves 2.7 MB of lines there that nothing reads. Code registered for tracebacks stays, and
    a describe from a program that calls main() leaves the cache alone."""
    import gc
    import linecache

    read = str(FIXTURES)
    registered = ("<atlas-test-registered>", (7, None, ["x = 1\n"], "<atlas-test-registered>"))
    for frozen in (False, True):
        linecache.getlines(read)
        linecache.cache[registered[0]] = registered[1]
        if frozen:
            gc.freeze()
        try:
            assert main(["describe", "tests/fixtures/nanogpt.py:gpt", "--json"]) == 0
        finally:
            gc.unfreeze()
        capsys.readouterr()
        assert (read in linecache.cache) is not frozen
        assert linecache.cache.pop(registered[0]) == registered[1]


def test_describe_table_shows_each_components_flops_and_check(capsys):
    """The table gave parameters and shapes only: a component's FLOPs and whether its equations checked were in
    --json alone. c_fc, 32 -> 128 features at B = 1, T = 64: 2 · 64 · 32 · 128 FLOPs, checked; a part the forward
    never calls counts none."""
    assert main(["describe", "tests/fixtures/nanogpt.py:gpt", "--verify"]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(line.split() for line in lines if line.strip().startswith("c_fc"))
    assert row[3:7] == ["4,224", f"{2 * 64 * 32 * 128 / 1000:.0f}", "k", "✓"]
    unused = next(line for line in lines if "not called by forward" in line).split()
    assert unused[-10:-8] == ["—", "✓"]
    assert "FLOPs of one instance's forward at B = 1, T = 64; the model's: " in lines[-2]


def test_the_table_asks_for_verify_only_when_there_is_something_to_verify(capsys):
    """A forward that fails derives no equations: the table's last line told the user to run with --verify, which
    they had given."""
    assert main(["describe", fixture_spec("always_fails"), "--verify"]) == 0
    out = capsys.readouterr().out
    assert "equations for 0\n" in out and "--verify" not in out
    assert main(["describe", fixture_spec("two_layer_mlp")]) == 0
    assert "equations for 4 (run with --verify to check them)" in capsys.readouterr().out


def test_a_dim_bound_past_what_the_model_takes_is_bad_input(capsys):
    """`--dim T>=600` for a model of 256 positions: there was no size to run at, and the equations and FLOPs came
    out at B = 3, T = 2, against the bound, with exit 0. It is bad input: one line, exit 2."""
    pytest.importorskip("transformers")
    assert main(["describe", f"{ROOT / 'tests' / 'fixtures' / 'hf_suite.py'}:distilbert", "--dim", "T>=600"]) == 2
    err = capsys.readouterr().err
    assert err == ("atlas: error: --dim T>=600 asks for more than the model takes: T at most "
                   "config.max_position_embeddings = 256\n")


def test_a_dim_for_a_symbol_the_inputs_do_not_have_is_bad_input(tmp_path, capsys):
    """`--dim Q=4` on a model whose inputs are `[B, 3]` fixed nothing, said nothing and put "Q = 4" among the sizes
    its FLOPs are counted at. It is bad input, for describe and for build alike: one line, exit 2, no docs."""
    assert main(["describe", fixture_spec("two_layer_mlp"), "--dim", "Q=4"]) == 2
    assert capsys.readouterr().err == ("atlas: error: --dim Q: Q is no symbol of the example inputs "
                                       "(input:float32[B,3]); their symbols: B\n")
    assert main(["build", fixture_spec("two_layer_mlp"), "--docs", str(tmp_path / "docs"), "--dim", "T<=9"]) == 2
    assert "--dim T: T is no symbol of the example inputs" in capsys.readouterr().err
    assert not (tmp_path / "docs").exists()
    assert main(["describe", fixture_spec("two_layer_mlp"), "--dim", "B=4"]) == 0
    assert "FLOPs of one instance's forward at B = 4;" in capsys.readouterr().out


def test_the_sizes_of_the_counts_are_said_where_the_model_has_no_count(capsys):
    """A router decides how many rows each expert gets: the model has no count, its router has one; the table gave
    the router's FLOPs and never said at what sizes."""
    assert main(["describe", fixture_spec("top_two_experts")]) == 0
    out = capsys.readouterr().out
    assert "FLOPs of one instance's forward at B = 1; the model's: not counted (sizes the data decides)" in out
    router = next(line for line in out.splitlines() if line.strip().startswith("Router"))
    assert router.split()[:5] == ["Router", "Linear", "1", "36", f"{2 * 8 * 4:.1f}"]     # 2 · d · experts · B, B = 1


def test_a_spec_file_imports_the_files_beside_it(tmp_path, capsys):
    """`from beside_parts import Block` in a SPEC file finds beside_parts.py in its folder, as `python file.py`
    would, whatever the working folder; it exited 2 with "No module named". sys.path is as it was afterwards."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "beside_parts.py").write_text(
        "from torch import nn\n\n\nclass Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n")
    (folder / "net.py").write_text("from beside_parts import Block\n\n\ndef net():\n    return Block()\n")
    before = list(sys.path)
    try:
        assert main(["describe", f"{folder / 'net.py'}:net"]) == 0
    finally:
        sys.modules.pop("beside_parts", None)
    assert "parameters 10 (trained 10, frozen 0)" in capsys.readouterr().out
    assert sys.path == before


def test_inputs_that_leave_a_parameter_of_forward_without_a_value_are_bad_input(capsys):
    """`--input x:...` alone for forward(x, edge_index): it ran, failed on a TypeError named at a line of the atlas's
    own code, advised to give --input, and exited 0. It is bad input, said before any run: one line, exit 2."""
    spec = fixture_spec("message_passing")
    assert main(["describe", spec, "--input", "x:float32[N,8]"]) == 2
    assert capsys.readouterr().err == ("atlas: error: --input gives x; MessagePassing.forward() also needs "
                                       "edge_index\n")
    assert main(["describe", spec, "--input", "nodes:float32[N,8]"]) == 2      # a label, passed in order
    assert capsys.readouterr().err.endswith("MessagePassing.forward() also needs edge_index\n")
    assert main(["describe", spec, "--input", "x:float32[N,8]", "--input", "edge_index:int64[2,E]"]) == 0


def test_a_forward_that_fails_on_given_inputs_is_not_told_to_give_inputs(capsys):
    """Inputs given with --input that forward() fails on: stderr says to check them, not to give some."""
    assert main(["describe", fixture_spec("two_layer_mlp"), "--input", "x:float32[B,5]"]) == 0
    err = capsys.readouterr().err
    assert "forward() did not run" in err and "check the --input given against what forward() takes" in err
    assert "give example inputs with --input" not in err


@pytest.mark.parametrize("argv, said", [
    (["describe", "tests/fixtures/nanogpt.py:gpt", "--dim", "T=0"], "bad --dim 'T=0': a size is a positive whole number"),
    (["describe", "--dim", "T"], "expected SYMBOL=SIZE"),
    (["build", "--bogus"], "unrecognized arguments: --bogus"),
    (["describe", "--memory-budget", "x"], "not a number of gigabytes")])
def test_bad_arguments_get_one_line_and_exit_2(capsys, argv, said):
    """argparse printed its usage block, four lines, above the error, and `--dim T=0` was told to give
    SYMBOL=SIZE, which it had: one line, what is wrong, where to look."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and said in err and "--help" in err, err
