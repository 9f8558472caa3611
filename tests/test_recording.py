"""How the forward is found and recorded: optional inputs added after a failure, module state left as it was,
writes through views, sizes the code needs exactly, repeated entries run once, the record let go."""

import collections
import copy
import gc
import json
import linecache
import math
import re
import types
import weakref

import pytest
import sympy
import torch
from conftest import ROOT
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.nn import functional as F

from atlas.cli import main
from atlas.document.input_specs import InputSpec
from atlas.document.math_tree import from_data
from atlas.extract.probes import probe_runs
from atlas.extract.trace import runs
from atlas.load import spec
from atlas.load.spec import load
from atlas.pipeline import Settings, document
from atlas.render.math_markup import names_of

SPEC = "tests/fixtures/recording_models.py"


def _describe(capsys, name: str) -> tuple[dict, str]:
    assert main(["describe", f"{SPEC}:{name}", "--json", "--verify"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_second_optional_input_added_after_a_failure(capsys):
    data, err = _describe(capsys, "two_tower")
    assert [i.split(":")[0] for i in data["example_inputs"]] == ["input_ids", "pixel_values"]
    assert "`pixel_values` was added after a forward without it failed" in err
    assert all(c["verification"]["verified"] for c in data["components"])
    root = data["components"][0]
    assert root["outputs"][0]["shape"] == [{"symbol": "B", "name": "batch"}, {"symbol": "B", "name": "batch"}]
    assert [d["symbol"] for d in data["dims"]["symbols"]] == ["B", "T", "H", "W"]


def test_state_kept_on_modules_is_put_back(capsys):
    data, err = _describe(capsys, "recurrent_stack")
    assert all(c["shapes"]["status"] == "derived" for c in data["components"])
    assert all(c["verification"]["verified"] for c in data["components"])
    # the sizes the loop fixed, where, and at which size the equations hold
    assert "the code needs exact values of T = " in err and "recording_models.py:" in err
    assert "the equations are written, and checked, at T = " in err
    # the costs hold where the record does: at the pinned T, put into them (two layers of T steps of an 8 × 8
    # linear), and the pages evaluate them there
    t = data["cost_reference"]["pinned"]["T"]
    assert data["cost_reference"]["sizes"]["T"] == t and t == int(err.split("at T = ")[1].split()[0].rstrip(","))
    b = sympy.Symbol("B", positive=True, integer=True)
    assert sympy.sympify(data["totals"]["cost"]["flops"], locals={"B": b}) == 2 * t * 2 * 8 * 8 * b
    loaded = load(f"{SPEC}:recurrent_stack")
    document(loaded, Settings(cost=False))
    assert all(layer.state is None for layer in loaded.model.layers)
    copy.deepcopy(loaded.model)                             # nothing with symbolic sizes was left behind


def test_hooks_a_forward_installs_behind_a_flag_are_put_back_with_it():
    """The flag and the hooks go together: runs after the first find neither, install both once, and collect one
    output per block (SegFormer's decode head got every stage twice and failed on its second run)."""
    loaded = load(f"{SPEC}:captures_once")
    for _ in range(2):
        doc = document(loaded, Settings(cost=False))
        assert [d.symbol or d.value for d in doc.root.shapes.outputs[0].dims] == [2, "B", 4]
        assert all(c.equations.verification.verified for c in doc.components)
    assert not any(block._forward_hooks for block in loaded.model.blocks)
    assert not hasattr(loaded.model, "hooks_installed")


def test_a_child_gets_the_flag_the_data_decided_as_recorded(capsys):
    """The flag is u0 == 1 over a data-dependent u0, assumed false when recorded: the child's check gets it false,
    as the record had it (it was not run: float() of an Equality)."""
    data, _ = _describe(capsys, "flagged")
    assert [c["verification"]["verified"] for c in data["components"]] == [True, True, True]


def test_a_value_named_like_a_size_symbol_gets_a_name_of_its_own():
    """One symbol never names two values on a page: the batch is B, so the code's B is B'."""
    doc = document(load(f"{SPEC}:names_its_value_b"), Settings(cost=False))
    names = names_of(doc.root.equations)
    assert names["v1"] == "B'" and "B" not in names.values()
    assert [d.symbol for d in doc.root.equations.steps[0].shape[:2]] == ["B", "T"]      # the batch keeps B
    assert doc.root.equations.verification.verified


def test_a_usual_letter_that_is_a_size_symbol_is_not_used():
    """Scores are S in papers; beside a source length S they keep their own name, not S' (one letter, two
    meanings to a reader: LongT5's `S' = einsum(...)` above `o[:, :S]`)."""
    doc = document(load(f"{SPEC}:scores_beside_s"), Settings(cost=False))
    names = list(names_of(doc.root.equations).values())
    assert r"\mathrm{scores}" in names and "A" in names and "x" in names
    assert not any(n.startswith("S") for n in names), names
    assert doc.root.equations.verification.verified


def test_upsampling_keeps_its_sizes_symbolic(capsys):
    """F.interpolate to a size (its composite kernel refused symbolic sizes) and by a scale (its Python pinned every
    size to its hint): both run through aten's decompositions, and the record stays a formula in B, H, W."""
    data, err = _describe(capsys, "upsampler")
    assert "needs exact values" not in err and "failed" not in err, err
    root = data["components"][0]
    assert [d.get("symbol", d) if isinstance(d, dict) else d for d in root["outputs"][0]["shape"]] == \
        ["B", 4, "2*H", "2*W"]
    assert data["cost_reference"]["pinned"] == {}
    assert all(c["verification"]["verified"] for c in data["components"])


def test_a_table_of_fixed_size_resized_to_the_image_keeps_the_sizes_symbolic(capsys):
    """F.interpolate of a parameter (a fixed size) to a size made from the image's: only the size asked for is
    symbolic, and the composite kernel refused it. DINOv2 (Depth Anything's backbone) resizes its positions so, and
    every shape of it came from probes at H = 40, W = 56; here the record stays a formula in H and W."""
    data, err = _describe(capsys, "resized_positions")
    assert "failed" not in err and "needs exact values" not in err, err
    root = data["components"][0]
    assert [d.get("symbol", d) if isinstance(d, dict) else d for d in root["outputs"][0]["shape"]] == \
        ["B", "floor(H/4)*floor(W/4)", 8]
    assert data["cost_reference"]["pinned"] == {}
    assert all(c["verification"]["verified"] for c in data["components"])


def test_a_flag_decided_from_a_size_keeps_the_record_symbolic(capsys):
    """`is_causal=self.is_causal and T > 1` is a SymBool, which scaled_dot_product_attention refused ("must be bool,
    not SymBool"): the shapes came from probes at B = 2, T = 6, the FLOPs were one number and the activation
    memory read 0. It is decided as an `if` on it would be, and the record stays a formula in B and T."""
    data, err = _describe(capsys, "causal_when_longer")
    assert "failed" not in err and "needs exact values" not in err, err
    root = data["components"][0]
    assert root["cost"]["flops"] == "64*B*T**2 + 1536*B*T" and root["cost"]["flops_causal"] == "32*B*T**2 + 1568*B*T"
    assert root["cost"]["activation_bytes"] != "0" and data["cost_reference"]["pinned"] == {}
    assert root["verification"]["verified"]


def test_a_table_the_code_caches_per_length_runs_on_symbolic_sizes(capsys):
    """An lru_cache keyed by a length cannot take a symbolic one ("unhashable type: non-nested SymInt"): the inputs
    found were [B, 16], run at B = 16 ("B = 16: the code stops at other sizes"), where the same model without the
    cache gets [B, T, 16]. While the atlas records, the code calls the function itself."""
    data, err = _describe(capsys, "cached_table")
    assert "stops at other sizes" not in err and "SymInt" not in err, err
    assert data["example_inputs"] == ["x:float32[B,T,16]"]
    assert [d.get("symbol", d) if isinstance(d, dict) else d for d in data["components"][0]["outputs"][0]["shape"]] \
        == ["B", "T", 16]
    assert all(c["verification"]["verified"] for c in data["components"])


def test_buffers_a_constructor_computes_keep_their_values_on_the_meta_device():
    """Built on the meta device, the buffers have no values; the CPU copies that check the equations and run the
    fallback probes get the ones the constructor computed (zeros broke EnCodec: a conv padded by 0, "too small")."""
    from atlas.analyse.equations.materialize import materialize
    from atlas.load import buffer_values
    model = load(f"{SPEC}:sizes_in_buffers").model
    assert model.padding_total.device.type == "meta"
    known = buffer_values.known(model)
    assert sorted(known) == ["inv_freq", "kernel_size", "padding_total", "position_ids"]     # no weight
    assert (int(known["kernel_size"]), int(known["padding_total"])) == (3, 2)
    assert torch.equal(known["position_ids"], torch.arange(8).expand((1, -1)))
    assert torch.allclose(known["inv_freq"], torch.tensor([1.0, 0.01]))
    from atlas.extract.probes.probe_runs import cpu_copy
    for copy_ in (cpu_copy(model), materialize(model, torch.float64, 0)):
        assert int(copy_.padding_total) == 2 and copy_.position_ids[0, -1] == 7
        assert copy_(torch.zeros(1, 2, 5, dtype=copy_.conv.weight.dtype)).shape == (1, 2, 5)


def test_warnings_about_made_up_inputs_stay_quiet():
    """The model's warnings about the inputs the atlas made for it are noise on stderr; the atlas's own lines stay."""
    import logging
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "atlas", "describe", f"{SPEC}:chatty", "--verify"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "verified for 2" in out.stdout, out.stderr
    assert "attention_mask" not in out.stderr and "padded" not in out.stderr, out.stderr
    before = logging.getLogger("transformers").level
    document(load(f"{SPEC}:chatty"), Settings(cost=False))
    assert logging.getLogger("transformers").level == before


def test_a_forward_that_disagrees_with_itself_is_not_compared():
    """Two forwards on the same inputs and weights differ: no equations can match it, and that is no mismatch."""
    doc = document(load(f"{SPEC}:noisy"), Settings(cost=False))
    v = doc.root.equations.verification
    assert not v.verified and v.max_error is None and "different outputs on the same inputs" in v.reason
    assert doc.component("lin").equations.verification.verified


def test_a_number_made_from_a_size_pins_it(capsys):
    """int(ceil(T / 2) * 2) guards 2*ceiling(T/2) == 6: the record holds at T = 5 or 6 only. It read as the
    constant 3 in every formula; now T is pinned, said so with the line, and the shapes come from probes."""
    data, err = _describe(capsys, "rounds_up")
    assert "the code needs exact values of T = 6 (recording_models.py:" in err
    root = data["components"][0]
    assert [d["symbol"] if isinstance(d, dict) else d for d in root["outputs"][0]["shape"]] == \
        ["B", "ceiling(T/2)", 2]
    assert data["cost_reference"]["pinned"] == {"T": 6}


def test_an_activation_that_changes_its_input_in_place_is_in_the_equations():
    """nn.ReLU(inplace=True) returns its input object, changed: it was taken for a module returning its input
    unchanged, so the ReLU fell out of the parent's equations (y = (x W + b) W' + b', exit 1 with --verify)."""
    from conftest import lines
    doc = document(load(f"{SPEC}:in_place"), Settings(cost=False))
    assert all(c.equations.verification.verified for c in doc.components), \
        [(c.id, c.equations.verification.reason) for c in doc.components]
    assert r"\max\!\big(x\,{W_{\mathrm{0}}}" in lines(doc, "body")[-1]
    root = lines(doc, "")      # the flag is no part of the math: not printed (and not passed when the check runs)
    assert root[0].startswith(r"h = \operatorname{leaky\_relu}") and root[1].startswith(r"{h'} = \operatorname{hardtanh}")
    assert not any("inplace" in line for line in root), root


@pytest.mark.parametrize("name", ["small_vae", "mc_dropout"])
def test_random_numbers_forward_draws_are_drawn_again_by_the_equations(name):
    """A VAE's randn_like and Monte-Carlo dropout: forward() and the equations draw from the same random state,
    in the same order, so they agree. The equations drew from another state and missed (exit 1, nothing built)."""
    doc = document(load(f"{SPEC}:{name}"), Settings(cost=False))
    assert [c.id for c in doc.components if not c.equations.verification.verified] == [], \
        [(c.id, c.equations.verification.reason) for c in doc.components]


def test_a_failed_check_keeps_the_inputs_it_ran_on(capsys):
    """Exit 1 on a mismatch, and stderr still says how the inputs were found: the failure's context."""
    assert main(["describe", f"{SPEC}:lies", "--verify"]) == 1
    err = capsys.readouterr().err
    assert "atlas: Lies: x:float32[B,3], inferred:" in err and "atlas: error: Lies: the equations of 1" in err
    assert err.index("inferred:") < err.index("atlas: error:")


def test_probes_run_in_evaluation_mode(capsys):
    """The shapes from probes are evaluation mode's, as the pages say: a model built stays in training mode, and
    the probes ran it there (SEW's SpecAugment masks failed them; dropout ran)."""
    data, err = _describe(capsys, "trains_differently")
    assert "the code needs exact values of T" in err
    root = data["components"][0]
    assert [d["symbol"] if isinstance(d, dict) else d for d in root["outputs"][0]["shape"]] == ["B", "T", 4]
    loaded = load(f"{SPEC}:trains_differently")
    document(loaded, Settings(cost=False))
    assert loaded.model.training and loaded.model.lin.training          # the user's model keeps its mode


def test_the_buffer_watch_never_fails_the_factory():
    """A call whose arguments the watch cannot rebuild (a named tuple holding a small tensor) runs as it would
    without the watch; that tensor just gets no value."""
    import collections

    from atlas.load import buffer_values
    Pair = collections.namedtuple("Pair", "a b")
    with torch.device("meta"), buffer_values.Watch() as watch:
        small = torch.arange(4)
        out = torch.stack(Pair(small, small))
    assert out.shape == (2, 4) and out.device.type == "meta"
    assert id(small) in watch.shadows and id(out) not in watch.shadows


def test_nan_only_where_forward_gives_it():
    from atlas.analyse.equations.tolerances import nan_only_in
    nan = float("nan")
    assert nan_only_in([torch.tensor([nan, 1.0, nan])], [torch.tensor([0.5, 1.0, nan])]) == (1, 3)
    assert nan_only_in([torch.tensor([1.0]), torch.tensor([3])], [torch.tensor([nan]), torch.tensor([3])]) is None


def test_writes_through_views_reach_the_base(capsys):
    data, _ = _describe(capsys, "copy_into_view")
    root = data["components"][0]
    assert root["verification"]["verified"], root["verification"]
    assert root["verification"]["max_error"] < 1e-9


def _pyramid_trace():
    model = load(f"{SPEC}:pyramid").model
    groups = [[f"blocks.{i}" for i in range(4)]]
    return runs.symbolic(model, [InputSpec("x", "float32", ("B", 8))], {"B": 2}, groups)


def test_repeated_entries_run_once_unless_their_inputs_differ():
    trace = _pyramid_trace()
    assert trace.error is None
    calls = {c.path: c for c in trace.root.calls()}
    # blocks 1 and 2 saw block 0's inputs: skipped, their layers never called; block 3 saw [2B, 8] and ran
    assert [calls[f"blocks.{i}"].skipped for i in range(4)] == [False, True, True, False]
    assert "blocks.1.0" not in calls and "blocks.2.0" not in calls
    assert [str(s) for s in calls["blocks.3.0"].out.value.shape] == ["2*B", "8"]
    assert [str(s) for s in calls["blocks.2"].out.value.shape] == ["B", "8"]


def test_only_entries_that_run_get_fake_weights(monkeypatch):
    """The modules below a later list entry get no copy of their state, no fake weights and no hooks unless the
    entry runs: a 126-layer model pays for the one layer it runs. Block 3 runs, so its Linear's weights are made
    fake then, and known as that module's; everything is put back after the run."""
    from atlas.extract.trace import module_state
    made = []
    fake_like = module_state.fake_like
    monkeypatch.setattr(module_state, "fake_like", lambda t, mode: made.append(t) or fake_like(t, mode))
    model = load(f"{SPEC}:pyramid").model
    trace = runs.symbolic(model, [InputSpec("x", "float32", ("B", 8))], {"B": 2}, [[f"blocks.{i}" for i in range(4)]])
    assert trace.error is None
    assert len(made) == 4                      # blocks.0.0 and blocks.3.0: weight and bias each, of 8
    weights = {(v.owner, v.attr) for v in trace.values if v.kind == "param"}
    assert weights == {("blocks.0.0", "weight"), ("blocks.0.0", "bias"), ("blocks.3.0", "weight"),
                       ("blocks.3.0", "bias")}
    assert all(p.device.type == "meta" for p in model.parameters())
    assert not any("forward" in vars(m) for m in model.modules())


def test_alike_entries_that_compute_differently_are_components_apart(capsys):
    """List entries with the same class and parameter shapes are one component only if they compute the same: the
    run runs the first entry of each kind of plain settings (not an index every entry carries) and compares what
    they computed. The block without its tanh gets its own page and equations; the heads whose label differs stay
    one component."""
    data, _ = _describe(capsys, "settings")
    comps = {c["id"]: c for c in data["components"]}
    assert {cid: c["instances"] for cid, c in comps.items() if c["parent"] == ""} == \
        {"blocks.0-2": 3, "blocks.3": 1, "heads": 4}
    tanh = lambda cid: "tanh" in json.dumps(comps[cid]["equations"]["summary"])
    assert tanh("blocks.0-2") and not tanh("blocks.3") and tanh("heads")
    assert all(c["verification"]["verified"] for c in data["components"]), \
        [c["id"] for c in data["components"] if not c["verification"]["verified"]]
    why = "set apart from the alike entries of its list: its settings differ (`squash` = {}), and so does what it " \
          "computes"      # pages said nothing of it: two pages alike but for their paths (GPT-OSS's sliding layers)
    assert [comps[cid]["set_apart"] for cid in ("blocks.0-2", "blocks.3", "heads")] == \
        [why.format(True), why.format(False), None]


def test_a_page_says_why_its_component_is_set_apart(tmp_path, capsys):
    assert main(["build", f"{SPEC}:settings", "--docs", str(tmp_path)]) == 0
    capsys.readouterr()
    page = tmp_path / "settings" / "blocks" / "3"
    assert ("This component is set apart from the alike entries of its list: its settings differ (<code>squash</code> = "
            "False), and so does what it computes.") in (page / "index.md").read_text()
    assert "Este componente está separado de las entradas parecidas de su lista" in (page / "index.es.md").read_text()


def test_the_record_is_let_go_with_its_trace():
    """autograd's saved-tensor hooks and the ShapeEnv's guard listener must not keep the record alive."""
    trace = _pyramid_trace()
    root = weakref.ref(trace.root)
    del trace
    gc.collect()
    assert root() is None


def _alive() -> collections.Counter:
    gc.collect()
    return collections.Counter(type(o).__name__ for o in gc.get_objects()
                               if isinstance(o, (FakeTensor, FakeTensorMode, ShapeEnv)))


def test_the_run_leaves_nothing_behind():
    """The run's fake tensors, fake mode and ShapeEnv go with it, and linecache is as it was. Tanh saves its output
    for its own backward, a cycle through C++ if autograd kept the tensor itself; torch's class-level caches (the
    ShapeEnv's lru caches, the fake mode's dispatch cache) would keep the ShapeEnv for good."""
    made_by = FakeTensorMode.__init__.__code__.co_filename
    linecache.cache.pop(made_by, None)          # the file whose stack the fake mode keeps: not read before
    before, lines = _alive(), set(linecache.cache)
    trace = _pyramid_trace()
    assert trace.error is None and trace.saved            # autograd did save tensors (Tanh's output among them)
    del trace
    assert _alive() == before
    assert set(linecache.cache) - lines == set()


def test_a_cpu_copy_of_a_meta_model_indexes_with_its_position_ids(capsys):
    """Built on the meta device, whose buffers hold no values: the CPU copy the shapes fall back to gets position ids
    that index the table (uninitialized memory indexed out of range, and every shape was lost without a word)."""
    data, err = _describe(capsys, "positions_buffer")
    assert data["forward_failure"] is None
    root = data["components"][0]
    assert root["shapes"]["status"] == "derived"
    assert [d["symbol"] if isinstance(d, dict) else d for d in root["outputs"][0]["shape"]] == ["B", "T", 8]


def test_a_module_the_forward_never_calls_says_its_shapes_are_its_own(capsys):
    """The dropout the fused kernel makes unused gets shapes from a call of its own; the JSON, the table and the
    page say so, and the page claims nothing about what the model passes it."""
    from atlas.render import model_pages
    data, _ = _describe(capsys, "fused_attention")
    drop = next(c for c in data["components"] if c["id"] == "dropout")
    assert drop["shapes"]["method"] == "own" and data["components"][0]["shapes"]["method"] == "fake"
    assert main(["describe", f"{SPEC}:fused_attention"]) == 0
    assert "(own call: not called by forward)" in next(line for line in capsys.readouterr().out.splitlines()
                                                        if line.strip().startswith("Dropout"))
    doc = document(load(f"{SPEC}:fused_attention"), Settings())
    page = model_pages.render(doc)[f"{doc.slug}/dropout.md"]
    assert "does not call this component with the example inputs" in page
    assert "with the shapes shown above at every probed input size" not in page


def test_a_pinned_forward_that_runs_at_no_probed_size_is_the_models_failure(capsys):
    """The code pins T (a loop over positions), the meta forward reads a value, and a CPU forward is over the
    memory budget: no shapes anywhere. That is the model's failure, on stderr, in the JSON and for --strict; it was
    left in each component's shapes, with exit 0."""
    assert main(["describe", f"{SPEC}:positions_buffer", "--json", "--strict", "--memory-budget", "0.000001"]) == 1
    captured = capsys.readouterr()
    failure = json.loads(captured.out)["forward_failure"]
    assert failure.startswith("the model's forward() did not run on the example inputs") and "budget" in failure
    assert "did not run on the example inputs" in captured.err


def test_a_branch_a_remainder_decides_is_said(capsys):
    """Zamba2 pads T to a multiple of 16 only if it is not one: the record made at T = 32 took the branch that does
    not pad and held its shapes (16·⌈T/16⌉ read as T) for every T, in silence. The condition is said, with its
    line, on stderr and on the model's page: as T's remainder (T mod 16 ≠ 0), not as sympy's Mod(15*T, 16) of the code's
    (-T) % 16, nor its Mod(T, 16) > 0."""
    data, err = _describe(capsys, "pads_to_chunks")
    line = next(i for i, text in enumerate(open(ROOT / "tests" / "fixtures" / "recording_models.py"), 1)
                if "if pad > 0:" in text)
    assert f"the code took a branch that holds where T mod 16 ≠ 0 (recording_models.py:{line}), at T = " in err
    assert [note for note in data["input_notes"] if "branch" in note] == [next(
        line for line in err.splitlines() if "branch" in line).removeprefix("atlas: PadsToChunks: ")]


def test_a_branch_a_rounding_decides_is_said(capsys):
    """SEW pools T by 2, upsamples, and pads back to T when T was odd: the record made at an even T held
    2·⌊T/2⌋ positions for every T, in silence (wrong at odd T). Its condition has no remainder in it, only a floor;
    it is said, with its line."""
    data, err = _describe(capsys, "pools_then_pads_back")
    line = next(i for i, text in enumerate(open(ROOT / "tests" / "fixtures" / "recording_models.py"), 1)
                if "if up.shape[1] < x.shape[1]:" in text)
    assert f"the code took a branch that holds where 2*floor(T/2) ≥ T (recording_models.py:{line}), at T = " in err
    assert any("2*floor(T/2) ≥ T" in note for note in data["input_notes"])


@pytest.mark.parametrize("name", ["blocks_of_layers", "blocks_of_layers_exact"])
def test_a_list_of_lists_runs_every_inner_list(capsys, name):
    """Funnel's encoder is a list of blocks, each a list of layers its loop iterates. The later blocks were left out
    of the symbolic run as repeats of the first, and a list is never called, so its layers ran on the meta device
    (a device mismatch); the probes' stand-in for a later block could not be iterated ("'_SameAsFirst' object is
    not iterable" on every page). Every layer now runs, and every component checks."""
    data, err = _describe(capsys, name)
    assert data["forward_failure"] is None and "failed" not in err and "SameAsFirst" not in json.dumps(data)
    assert all(c["verification"]["verified"] for c in data["components"]
               if c["class"] != "torch.nn.modules.container.ModuleList")
    layer = next(c for c in data["components"] if c["class"] == "torch.nn.modules.linear.Linear")
    assert layer["instances"] == 3 and [d.get("symbol", d) for d in layer["outputs"][0]["shape"][:2]] == ["B", "T"]


def test_layers_called_with_one_tensor_for_two_inputs_are_apart_from_the_others(capsys):
    """The first layer gets one tensor as query and key, the later two a memory of the same shape as key. They
    were one component, the later calls skipped as the first's repeats, and its equations, read from the first
    call, used the query for the key: verified, and wrong for two of the three layers. Each way of calling it is now
    a component of its own, and both check."""
    data, err = _describe(capsys, "self_then_cross")
    layers = [c for c in data["components"] if c["class"].endswith("QueryTimesKey")]
    assert [(c["module_paths"], c["verification"]["verified"]) for c in layers] == \
        [(["layers.0"], True), (["layers.1", "layers.2"], True)]
    reads = [{ref for line in c["equations"]["steps"] for ref in ("in.query", "in.key")
              if ref in from_data(line["formula"]).refs()}
             for c in layers]
    assert reads == [{"in.query"}, {"in.query", "in.key"}]
    assert {c["set_apart"] for c in layers} == {"set apart from the other instances: the model calls it with other "
                                                "inputs (one tensor passed to other arguments, or other sizes)"}


def test_layers_called_at_other_lengths_are_apart(capsys):
    """Alike layers, the positions halved before the second and the third: one component, whose page gave every
    layer the first one's length T. Each length is now a component of its own, with its shapes, and checks."""
    data, err = _describe(capsys, "pooled_between_layers")
    import sympy
    layers = [c for c in data["components"] if c["class"] == "torch.nn.modules.linear.Linear"]
    at_9 = [int(sympy.sympify(c["outputs"][0]["shape"][1]["symbol"]).subs("T", 9)) for c in layers]
    assert [(c["module_paths"], c["verification"]["verified"]) for c in layers] == \
        [(["layers.0"], True), (["layers.1"], True), (["layers.2"], True)] and at_9 == [9, 5, 3]


def test_a_branch_that_holds_at_every_size_is_not_said(capsys):
    """Padded to a multiple of 4, then asked whether it is one: the condition is true at every size. It was said as
    "the code took a branch that holds where True (...), at : ...", on stderr and on the page."""
    data, err = _describe(capsys, "pads_then_asks")
    assert "branch" not in err and not [note for note in data["input_notes"] if "branch" in note]
    assert data["forward_failure"] is None and all(c["verification"]["verified"] for c in data["components"])


def test_sizes_the_code_asserts_are_the_sizes_recorded(capsys):
    """`assert h == self.image_size` stopped the run at the 40 x 56 image discovery made (torchvision's ViT, timm's
    EVA-02 and CoaT: no shapes at all, 0 components verified). The run is made again at the size the failed
    comparison names, H first and then W, whose assert comes once H passes; stderr says so, the example input
    carries the sizes, and every component checks."""
    data, err = _describe(capsys, "fixed_size_patches")
    assert "H = 32, W = 32: the code stops at other sizes (recording_models.py:" in err
    assert data["example_inputs"] == ["x:float32[B,3,32,32]"]
    assert data["forward_failure"] is None
    assert data["components"][0]["outputs"][0]["shape"][0]["symbol"] == "B"
    assert all(c["verification"]["verified"] for c in data["components"])


def test_parts_the_forward_never_calls_invent_no_sizes_and_cost_nothing(capsys):
    """An empty Sequential has no sizes to record it at: not called (it was recorded at made-up [B, T] and
    "verified", equations empty). A Linear keeps its own record, from its own sizes, and no cost: it is no part of
    a forward, so no made-up T reaches the sizes the pages count at (ShuffleNet's had T = 1024 beside H and W)."""
    data, err = _describe(capsys, "spare_parts")
    by_id = {c["id"]: c for c in data["components"]}
    assert by_id["shortcut"]["shapes"]["status"] == "not called" and by_id["shortcut"]["verification"] is None
    head = by_id["spare_head"]
    assert head["shapes"]["status"] == "derived" and head["cost"] is None
    assert head["cost_reason"].startswith("Not counted: the model's forward() does not call it")
    assert sorted(data["cost_reference"]["sizes"]) == ["B", "H", "W"]


def test_a_failure_names_the_models_sizes_not_the_runs_symbols(capsys):
    """torch's message names the run's own symbols ("shape '[s93, -1, 7, 8]' is invalid for input of size
    8*s93*s44"), which the user never gave: stderr writes them as the model's B and T."""
    assert main(["describe", f"{SPEC}:sevens", "--input", "x:float32[B,T,8]"]) == 0
    err = capsys.readouterr().err
    assert "shape '[B, -1, 7, 8]' is invalid for input of size 8*T*B (recording_models.py:" in err
    assert not re.search(r"\bs\d+\b", err)


def test_a_fixed_size_the_code_cannot_take_is_a_failure_not_a_guess(capsys):
    """`--dim T=80` beside a table of 64 positions added to the input: the fallback probes ran at other T and the
    shapes came out in a free T, the costs left out with no word, and --strict exited 0 (DistilBERT at T = 600).
    The probes keep T = 80, none runs, and the failure is reported: exit 1 with --strict."""
    args = ["describe", f"{SPEC}:added_table", "--input", "x:float32[B,T,8]"]
    assert main([*args, "--dim", "T=80", "--strict", "--json"]) == 1
    captured = capsys.readouterr()
    assert "the model's forward() did not run on the example inputs (RuntimeError: The size of tensor a (80) " \
           "must match the size of tensor b (64)" in captured.err
    assert all(c["shapes"]["status"] == "not derived" for c in json.loads(captured.out)["components"])
    assert main([*args, "--dim", "T=48", "--strict"]) == 0


def test_a_forward_on_fake_tensors_that_runs_past_its_time_stops_and_says_so(capsys, monkeypatch):
    """A symbolic run that never ends (transformers' Swin given H, W >= 224 ran past 300 s, silent) stops at
    runs.RECORD_SECONDS: stderr says so, the shapes come from concrete probes, and the alarm is put back."""
    import signal
    import time
    monkeypatch.setattr(runs, "RECORD_SECONDS", 1)
    start = time.perf_counter()
    assert main(["describe", f"{SPEC}:slow_on_fake_tensors", "--input", "x:float32[B,T,8]", "--json"]) == 0
    assert time.perf_counter() - start < 20
    captured = capsys.readouterr()
    assert "the forward with symbolic sizes failed (RecordTimeout: the forward on fake tensors ran past 1 s" \
           in captured.err
    assert all(c["shapes"]["status"] == "derived" for c in json.loads(captured.out)["components"])
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


class _NeverRuns(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        raise ValueError("this forward never runs")


def test_no_input_is_said_to_replace_another_when_neither_ran():
    """Every candidate failed: the notes say what was inferred and that the forward did not run, not that the last
    candidate was taken "instead of" the first, "with which forward() failed", as if it had not."""
    from atlas.load.spec import Loaded
    doc = document(Loaded("inline", _NeverRuns(), None), Settings(verify=False))
    notes = [str(n) for n in doc.input_notes]
    assert doc.forward_failure and "this forward never runs" in doc.forward_failure
    assert notes and not any("instead of" in n for n in notes), notes


class _NumpyInside(nn.Module):
    """Runs only on real tensors (numpy() has no fake or meta tensor), and defines a layer it never calls."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.unused = nn.Dropout(0.1)

    def forward(self, x):
        y = self.fc(x)
        return y * float(y.detach().numpy().shape[-1])


def test_a_part_never_called_gets_its_own_record_where_the_shapes_come_from_probes():
    """The symbolic run fails, so the shapes come from forwards at several sizes, which know nothing of calls: the
    layer the forward never calls had shapes `[B, ?]` made up by the probes, marked as seen on the CPU."""
    from atlas.load.spec import Loaded
    doc = document(Loaded("inline", _NumpyInside(), None), Settings(inputs=("x:float32[B,4]",), verify=False))
    assert doc.component("fc").shapes.method == "cpu"
    unused = doc.component("unused").shapes
    assert (unused.method, str(unused.reason)) == ("own", "inputs made up from its sizes"), unused


@pytest.mark.parametrize("name", ["squeezed", "squeezed_loop"])
def test_a_layer_whose_forward_the_code_calls_itself_is_called(capsys, name):
    """An encoder that runs `layer.forward(x)` (SqueezeBERT's) fires none of the layer's hooks: the layers read "not
    called by the model's forward()" while their linears ran, and the encoder's equations were its layers' ops
    flattened. Symbolic or at several exact sizes, the layers are now calls with their own shapes, equations and
    counts, and the encoder's equations call them."""
    data, err = _describe(capsys, name)
    comps = {c["id"]: c for c in data["components"]}
    assert sorted(comps) == ["", "head", "layers", "layers.down", "layers.up"]
    assert all(c["shapes"]["status"] == "derived" and c["verification"]["verified"] for c in comps.values())
    layer = comps["layers"]
    assert layer["instances"] == 3
    assert [[d["symbol"] if isinstance(d, dict) else d for d in o["shape"]] for o in layer["outputs"]] == \
        [["B", "T", 8]]
    # 2·8·16 + 2·16·8 a position (the bias adds, relu and residual are no contractions), at the T the loop pinned
    pinned = data["cost_reference"]["pinned"]
    assert layer["cost"]["flops"] == (f"{512 * pinned['T']}*B" if name == "squeezed_loop" else "512*B*T")
    assert ("the code needs exact values of T" in err) == (name == "squeezed_loop") and "not called" not in err


def test_a_module_converted_to_the_dtype_it_has_runs_symbolically(capsys):
    """A forward that runs `self.classifier = self.classifier.to(self.dtype)` (Switch's router): torch's conversion
    of a module swaps its parameters, which fake tensors refuse, and the symbolic run failed ("Couldn't swap
    Linear.weight"), leaving the shapes to forwards at exact sizes. A conversion that changes nothing now leaves
    the module as it is, and torch's conversion is torch's again after the run. Checked in float64, the router
    converts itself back to float32: its equations ran on float32 weights and float64 inputs ("the equations did
    not run", exit 1); a forward that converts its own weights is checked in float32, as it runs."""
    data, err = _describe(capsys, "converts_its_router")
    assert "symbolic sizes failed" not in err and "exact values" not in err
    out = data["components"][0]["outputs"][0]["shape"]
    assert [d["symbol"] if isinstance(d, dict) else d for d in out] == ["B", "T", 4]
    assert all(c["shapes"]["status"] == "derived" for c in data["components"])
    assert torch.nn.Module.to.__qualname__ == "Module.to"
    checks = {c["id"]: c["verification"] for c in data["components"]}
    assert (checks[""]["verified"], checks[""]["dtype"]) == (True, "float32")
    assert (checks["classifier"]["verified"], checks["classifier"]["dtype"]) == (True, "float64")


def test_the_cpu_copy_is_the_same_on_every_run_and_leaves_the_global_stream():
    """The made-up weights of the CPU copy (the probes at exact sizes) came from torch's global generator, unseeded:
    a router's choices, and with them which experts ran and on how many tokens, changed from run to run (Switch's
    expert rows read [8B, 64], "not called" or [B - 1, S - 7, 128] from one run to the next)."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(8, 4), nn.LayerNorm(4))
    state = torch.random.get_rng_state()
    first, second = probe_runs.cpu_copy(model), probe_runs.cpu_copy(model)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    assert first[0].weight.std() > 0


def test_a_layer_that_calls_its_own_forward_is_one_call(capsys):
    """A layer that takes one sequence unbatched by running `self.forward(x[None])[0]`: the watch on forward()
    calls that go around `__call__` took the inner call for a call of its own, and the probes at exact sizes, which
    keep the first call to finish, gave the layer the inner call's [1, T, 8]."""
    data, err = _describe(capsys, "holds_unbatched")
    comps = {c["id"]: c for c in data["components"]}
    shape = [d["symbol"] if isinstance(d, dict) else d for d in comps["layer"]["outputs"][0]["shape"]]
    assert shape == ["T", 8] and "the code needs exact values of T" in err
    assert all(c["verification"]["verified"] for c in comps.values())


def test_no_symbolic_run_the_cpu_takes_the_preferred_inputs():
    """Where no symbolic run works, the CPU run takes the choices in their order: the image the config fixes
    (16 x 16) runs; any H x W, the choice tried last, was the one run, at a size the position table does not
    take, and nothing was derived."""
    doc = document(load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:fixed_image"), Settings(verify=False))
    assert doc.inputs == ("pixel_values:float32[B,3,16,16]",)
    assert [str(d.symbol or d.value) for d in doc.root.shapes.outputs[0].dims] == ["B", "16", "8"]
    assert doc.forward_failure is None


def test_a_record_remade_at_the_reference_keeps_its_divisors():
    """A record remade at the reference sizes keeps H and W apart by doubling one, not by adding one: at 32 x 33
    (224 x 225 before the config's size was the reference) the image took the branch that pads pixels up to whole
    patches, which no 32 x 32 image takes, and its pages held there."""
    doc = document(load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:windowed_image"), Settings(verify=False))
    branches = [str(note) for note in doc.input_notes if "took a branch" in str(note)]
    assert any("holds where W mod 4 = 0" in b and "at W = 64" in b for b in branches), branches
    assert not any("≠" in b for b in branches), branches


def test_a_size_the_code_compares_with_a_table_is_found_by_solving_for_it():
    """A vision transformer written from scratch adds a learned table of (32 // 4)² + 1 rows to floor(H/4)·floor(W/4)
    + 1 patches: no config names the image size, and the run failed at H × W ("the size of tensor a
    (((W//4))*((H//4)) + 1) must match ... (65)"), 0 of 4 components. The comparison the code made is solved for
    its sizes, a square image, and the run made again there."""
    from conftest import fixture_spec

    from atlas import pipeline
    doc = pipeline.describe(fixture_spec("scratch_vit"))
    assert doc.forward_failure is None and doc.inputs == ("x:float32[B,3,32,32]",)
    assert any(str(note).startswith("H = 32, W = 32: the code stops at other sizes (models.py:")
               for note in doc.input_notes)
    assert all(c.equations.verification.verified for c in doc.components)
    assert [d.value for d in doc.component("norm").shapes.outputs[0].dims[1:]] == [65, 16]


def test_two_inputs_checked_against_each_other_keep_their_batch_a_symbol():
    """nn.TransformerDecoder's cross-attention checks floor(16·B/B′) = 16 between the target's batch and the memory's:
    an equality with a number, read as B fixed at 3 ("the code needs exact values of B = 3"), so the shapes came
    from probes and the equations and FLOPs were written at B = 3. It is a relation between the two: B stays B."""
    doc = document(load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:decoder_on_memory"), Settings())
    assert doc.inputs == ("tgt:int64[B,T]", "memory:float32[B,S,16]")
    assert not any("exact values" in str(note) for note in doc.input_notes)
    assert doc.root.shapes.method == "fake"
    assert [d.symbol or d.value for d in doc.root.shapes.outputs[0].dims] == ["B", "T", 50]
    assert "B" not in dict(doc.cost_summary.pinned)
    assert all(c.equations.verification.verified for c in doc.components)


class PatchRounded(nn.Module):
    """Rounds its feature map up to whole 2 x 2 patches with int(math.ceil(...)), as MobileViT does: the code needs
    exact sizes, and the model states its image size in its config."""

    def __init__(self):
        super().__init__()
        self.config = types.SimpleNamespace(image_size=24, num_channels=3)
        self.conv = nn.Conv2d(3, 4, 3, stride=4, padding=1)

    def forward(self, pixel_values):
        x = self.conv(pixel_values)
        h, w = x.shape[-2:]
        new_h, new_w = int(math.ceil(h / 2) * 2), int(math.ceil(w / 2) * 2)
        if new_h != h or new_w != w:
            x = F.interpolate(x, size=(new_h, new_w), mode="bilinear", align_corners=False)
        return x.flatten(1)


def test_sizes_the_code_pins_are_the_model_s_stated_ones():
    """Pinned by int(), the record held at the run's own 40 x 56 image, and a branch taken there was said to hold
    where "ceiling(W/4) ≠ 14", a number made from the pinned width: the record is made again at the config's
    24 x 24, and no condition on a pinned size is said."""
    model = PatchRounded()
    doc = document(spec.Loaded("inline", model, None), Settings(cost=True))
    assert dict(doc.cost_summary.reference) == {"B": 1, "H": 24, "W": 24}
    assert not any("branch that holds where" in str(n) for n in doc.input_notes)
    assert any("exact values of H = 24" in str(n) and "W = 24" in str(n) for n in doc.input_notes), doc.input_notes
