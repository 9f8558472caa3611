"""The check against forward(), on constructs it once got wrong: inputs written in place, a Sequential documented
as a component, cached multi-output tables, integer and complex inputs the model computes, data-dependent loops.

Each model is in tests/fixtures/checks.py and goes through the CLI, `describe SPEC --json --verify`."""

import json

import pytest
from conftest import ROOT

from atlas.cli import main
from atlas.extract import walk
from atlas.extract.record import plan
from atlas.extract.trace.structures import Guard
from atlas.load import spec

CHECKS = ROOT / "tests" / "fixtures" / "checks.py"
LOOP = "data-dependent loop: the count or index at checks.py:{line} comes from the data (u0, assumed 2 when " \
       "recorded), so the recorded steps hold only for data that takes the same path"


def describe(name: str, capsys) -> dict:
    """The JSON document of a fixture model, described and checked; the command must succeed."""
    code = main(["describe", f"{CHECKS}:{name}", "--json", "--verify"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return {c["id"]: c for c in json.loads(out.out)["components"]}


def verified(comp: dict) -> bool:
    v = comp["verification"]
    return v is not None and v["verified"] is True and v["max_error"] <= v["tolerance"]


def line_of(text: str, nth: int = 0) -> int:
    found = [i for i, line in enumerate(CHECKS.read_text().splitlines(), 1) if text in line]
    return found[nth]


def test_forward_that_writes_into_its_input_is_checked_on_its_own_copy(capsys):
    comps = describe("stateful", capsys)
    cell = comps["cell"]
    assert cell["equations"]["status"] == "derived"
    assert verified(cell) and cell["verification"]["dtype"] == "float64"
    assert verified(comps[""])


def test_a_sequential_component_reads_its_own_entries(capsys):
    comps = describe("seq_child", capsys)
    body = comps["body"]
    assert body["class"] == "torch.nn.modules.container.Sequential"
    assert verified(body)
    assert [s["links"] for s in body["equations"]["steps"]] == [["body.0-1"]]     # one loop over both entries


def test_a_cached_meshgrid_is_made_again_in_the_component_that_reuses_it(capsys):
    comps = describe("cached_meshgrid", capsys)
    assert comps["b"]["equations"]["status"] == "derived"       # made in a's call, read in b's
    assert verified(comps["a"]) and verified(comps["b"]) and verified(comps[""])


def test_bucket_indices_the_model_computes_are_remade_for_the_check(capsys):
    comps = describe("position_buckets", capsys)
    assert [i["name"] for i in comps["bias"]["inputs"]] == ["x", "relative_position_buckets"]
    assert verified(comps["bias"])              # made-up positions 0..T-1 would index past its 4 buckets


def test_a_complex_table_the_model_computes_is_remade(capsys):
    comps = describe("complex_rope", capsys)
    rot = comps["rot"]
    assert rot["inputs"][1]["dtype"] == "complex64"
    assert verified(rot) and verified(comps[""])


def test_a_complex_table_that_cannot_be_remade_is_made_up_as_complex(capsys):
    comps = describe("buffer_rope", capsys)     # computed from the parent's buffer: random complex values
    assert verified(comps["rot"])


def test_an_index_that_cannot_be_remade_is_not_run_with_its_reason(capsys):
    comps = describe("routed", capsys)
    v = comps["lookup"]["verification"]
    assert v["verified"] is False and v["max_error"] is None     # not run: no mismatch, exit 0
    line = line_of("return x + self.table[idx + 2]")
    assert v["reason"] == ("not run: `idx` could not be made as the model makes it (it is computed from "
                           "`router.weight`, a weight of another component), and forward() failed on a made-up "
                           f"one: IndexError: index 3 is out of bounds for dimension 0 with size 3 (checks.py:{line})")
    assert verified(comps[""])


def test_a_data_dependent_loop_is_not_derived(capsys):
    comps = describe("loop_moe", capsys)
    root = comps[""]
    assert root["equations"]["status"] == "not derived"
    assert root["equations"]["reason"] == LOOP.format(line=line_of("for e in torch.unique(choice).tolist()"))
    assert root["verification"] is None


def test_a_data_dependent_child_is_a_linked_step_of_its_parent(capsys):
    comps = describe("dispatch", capsys)
    moe = comps["moe"]
    assert moe["equations"]["status"] == "not derived"
    assert moe["equations"]["reason"] == LOOP.format(line=line_of("for e in torch.unique(choice).tolist()", 1))
    root = comps[""]
    assert [s["links"] for s in root["equations"]["steps"]] == [[], ["moe"]]
    assert verified(root)
    # the module the loop calls takes u3 rows: checked at the two rows the record assumed
    expert = comps["moe.expert"]
    assert expert["equations"]["status"] == "derived" and verified(expert)
    assert expert["outputs"][0]["shape"] == [{"symbol": "u3", "name": "decided by the data"}, 8]


def test_a_size_the_data_decides_is_named_so_in_the_table_and_on_pages(tmp_path, capsys):
    assert main(["describe", f"{CHECKS}:dispatch"]) == 0
    table = capsys.readouterr().out
    assert "[u3, 8]" in table and \
        "u3: decided by the data, as the record had it (a count of routed tokens, of a mask's true values)" in table
    assert main(["build", f"{CHECKS}:dispatch", "--docs", str(tmp_path)]) == 0
    capsys.readouterr()
    page = tmp_path / "dispatch" / "moe" / "expert"
    assert "[u3 decided by the data, 8]" in (page / "index.md").read_text()
    assert "[u3 decidido por los datos, 8]" in (page / "index.es.md").read_text()


def test_the_record_notes_where_code_needed_a_data_dependent_number():
    loaded = spec.load(f"{CHECKS}:loop_moe")
    trace = plan.record(loaded.model, walk.walk(loaded), None).trace
    loop = line_of("for e in torch.unique(choice).tolist()")
    index = line_of("out[idx] = self.experts[e](x[idx])")
    assert [(str(g.expr), g.value, g.site) for g in trace.root.guards] == [
        ("u0", 2, f"checks.py:{loop}"), ("u1", 2, f"checks.py:{index}"), ("u2", 2, f"checks.py:{index}")]
    assert all(isinstance(g, Guard) for g in trace.root.guards)
    assert trace.assumed["u0"] == 2


def test_pages_say_why_in_both_languages(tmp_path, capsys):
    assert main(["build", f"{CHECKS}:loop_moe", "--docs", str(tmp_path)]) == 0
    assert "equations verified for 3, not derived for 1, verification not run for 0" in capsys.readouterr().out
    line = line_of("for e in torch.unique(choice).tolist()")
    english = (tmp_path / "loopmoe" / "index.md").read_text()
    assert f"**Equations not derived:** {LOOP.format(line=line)}." in english
    spanish = (tmp_path / "loopmoe" / "index.es.md").read_text()
    assert ("**Ecuaciones no derivadas:** bucle que depende de los datos: el número de vueltas o el índice en "
            f"checks.py:{line} sale de los datos (u0, supuesto 2 al registrar)") in spanish


def test_costs_in_a_number_the_data_decides_are_not_given(capsys):
    comps = describe("loop_moe", capsys)
    assert comps[""]["cost"] is None                        # the experts' FLOPs depend on the routing
    assert comps["router"]["cost"]["flops"] == "64*B"


@pytest.mark.parametrize("name", ["masked_positions", "mask_like_input"])
def test_a_float_mask_the_model_computes_is_remade_when_made_up_values_do_not_run(name, capsys):
    comps = describe(name, capsys)                  # a float32 mask, remade in the float64 check too (ones_like)
    assert comps["positions"]["inputs"][0]["dtype"] == "float32"
    v = comps["positions"]["verification"]
    assert verified(comps["positions"]) and v["dtype"] == "float64", v     # random values: negative positions
    assert verified(comps[""])


def test_a_forward_that_reads_its_mask_to_choose_its_path_is_checked_on_the_mask_the_model_computes(tmp_path,
                                                                                                    capsys):
    comps = describe("global_flag", capsys)        # random mask values: the other path, "differ by" before
    encoder = comps["encoder"]["verification"]
    assert verified(comps["encoder"]) and encoder["dtype"] == "float64"
    assert encoder["note"] == ("Inputs taken as the model computes them, not at random: `mask`; on random values "
                               "forward() reads them and takes another path than on the model's own")
    assert comps["attend"]["verification"]["note"] is None      # random values run on the same path: stay random
    assert all(verified(c) for c in comps.values())
    assert main(["build", f"{CHECKS}:global_flag", "--docs", str(tmp_path)]) == 0
    capsys.readouterr()
    english = (tmp_path / "globalflag" / "encoder" / "index.md").read_text()
    assert ("(tolerance 1e-09). Inputs taken as the model computes them, not at random: <code>mask</code>; on random "
            "values forward() reads them and takes another path than on the model's own.") in english
    spanish = (tmp_path / "globalflag" / "encoder" / "index.es.md").read_text()
    assert ("Entradas tomadas como las calcula el modelo, no al azar: <code>mask</code>; con valores al azar forward() los "
            "lee y toma otro camino que con los del propio modelo.") in spanish


def test_alike_instances_whose_first_is_not_called_are_described_by_the_first_that_is(tmp_path, capsys):
    comps = describe("first_expert_idle", capsys)
    experts = comps["experts"]
    assert experts["module_paths"] == ["experts.0", "experts.1", "experts.2"] and experts["lead"] == 1
    assert experts["shapes"]["status"] == "derived" and experts["cost"]["flops"] == "128*B*T"
    assert comps["experts.up"]["lead"] == 1 and comps["experts.up"]["cost"]["flops"] == "64*B*T"
    assert all(verified(c) for c in comps.values())
    assert comps[""]["lead"] == 0 and comps[""]["cost"]["flops"] == "256*B*T"     # two experts ran, not three
    assert main(["build", f"{CHECKS}:first_expert_idle", "--docs", str(tmp_path)]) == 0
    capsys.readouterr()
    page = tmp_path / "firstexpertidle" / "experts"
    assert ("Shapes, equations and costs on this page are those of `experts.1`, the first instance the model's "
            "`forward()` called: it did not call `experts.0` with the example inputs.") in (page / "index.md").read_text()
    assert "son los de `experts.1`, la primera instancia" in (page / "index.es.md").read_text()
    assert "the first instance the model" not in (tmp_path / "firstexpertidle" / "index.md").read_text()


def test_writes_into_a_view_of_a_view_change_the_tensor_it_views(capsys):
    comps = describe("block_writes", capsys)        # "differ by" before: probs kept its value from before the writes
    assert verified(comps[""]) and comps[""]["verification"]["dtype"] == "float64"
    steps = [s["tex"] for s in comps[""]["equations"]["steps"]]
    assert any(r"\operatorname{reshape}_{B\times 8\times 8}" in s for s in steps), steps


def test_a_float_read_on_the_same_path_keeps_the_random_mask_and_the_disagreement(capsys):
    """A float read of the data decides no path; the model's own mask, all zeros, would hide what the equations
    leave out (they were verified, 'taking another path', on the first version of the retry)."""
    code = main(["describe", f"{CHECKS}:hides_the_mask", "--json", "--verify"])
    err = capsys.readouterr().err
    assert code == 1 and "inner: the equations differ from forward() by" in err


def test_every_write_through_one_view_reaches_the_tensor_it_views(capsys):
    """The second write into one reshaping view was dropped ('differ by 0.5'): it was compared with the view's
    value after its own write."""
    comps = describe("writes_twice_through_a_view", capsys)
    assert verified(comps[""]) and comps[""]["verification"]["dtype"] == "float64"
    comps = describe("writes_twice_through_a_view_of_a_view", capsys)     # the tensor above is a view too
    assert verified(comps[""]) and comps[""]["verification"]["dtype"] == "float64"


def test_experts_whose_first_is_not_called_are_still_experts_in_the_catalog():
    from atlas import pipeline
    doc = pipeline.document(spec.load(f"{CHECKS}:routed_rows_first_idle"), pipeline.Settings(verify=False))
    experts = doc.component("experts")
    assert experts.lead == 1 and [t.value for t in doc.architecture.experts] == [4]
    assert doc.architecture.layers == ()


def test_a_mismatch_names_where_forward_read_its_data(capsys):
    """forward() decides its path from its data where the record, on fake tensors, took the other one (PaliGemma's
    mask, transformers' is_tracing): the failure still exits 1, and says which line of the model's code read the
    data (it said only "differ by 1.26")."""
    code = main(["describe", f"{CHECKS}:tracing_aware", "--json", "--verify"])
    err = capsys.readouterr().err
    line = next(n for n, text in enumerate(CHECKS.read_text().splitlines(), 1) if "bool(torch.isfinite(h).all())" in text)
    assert code == 1 and "(model): the equations differ from forward() by" in err
    assert f"forward() decides its path from its data (`bool()` at checks.py:{line})" in err


def test_a_weight_normed_layer_is_copied_and_checked(capsys):
    """torch.nn.utils.weight_norm keeps its computed weight as a tensor autograd made, which torch's deepcopy
    refuses: the check's copy of the model crashed with a traceback."""
    from torch import nn
    from torch.nn.utils import weight_norm

    from atlas import pipeline
    layer = weight_norm(nn.Conv1d(4, 4, 3, padding=1))
    doc = pipeline.document(spec.Loaded("inline", layer, None), pipeline.Settings(cost=False))
    assert doc.root.equations.verification.verified, doc.root.equations.verification.reason


def test_a_forward_that_writes_into_its_weights_is_checked_from_where_it_started(capsys):
    """PixelCNN's `self.weight.data *= self.mask` changes the instance the check ran forward() on: the equations,
    run on that instance after it, masked the weights a second time (the check's mask is random) and "differ by
    0.905" failed a correct model."""
    code = main(["describe", f"{CHECKS}:masked_conv_stack", "--json", "--verify"])
    out = capsys.readouterr()
    assert code == 0, out.err
    comps = {c["id"]: c for c in json.loads(out.out)["components"]}
    assert verified(comps[""]) and verified(comps["net.1"])


def test_a_child_registered_twice_is_the_call_of_both_its_names(capsys):
    """`self.conv1` is also `self.net[0]`, and the forward runs `self.net`: the calls were named `conv1`, so the
    Sequential's equations looked for `conv1` inside it and "did not run" (exit 1), and `net.0` and `net.1` read
    "not called by forward", the ReLU at a made-up [B, T]. Each is documented once, where the Sequential calls it
    (atlas.extract.aliases): `net.0`, `net.1`; and the two blocks, alike, are one component."""
    code = main(["describe", f"{CHECKS}:aliased_blocks", "--json", "--verify"])
    out = capsys.readouterr()
    assert code == 0, out.err
    comps = {c["id"]: c for c in json.loads(out.out)["components"]}
    assert sorted(comps) == ["", "0-1", "0-1.net", "0-1.net.0", "0-1.net.1"]
    for cid in ("0-1.net", "0-1.net.0", "0-1.net.1", ""):
        assert verified(comps[cid]), cid
        assert comps[cid]["shapes"]["method"] == "fake", cid
    relu = comps["0-1.net.1"]["outputs"][0]["shape"]
    assert [d["symbol"] if isinstance(d, dict) else d for d in relu] == ["B", 4, "T"]


def test_a_tolerance_looser_than_the_check_s_dtype_says_why(capsys):
    """A cast to float32 in the record gives float32's tolerance to a float64 check: the page read "run in float64
    ... (tolerance 2e-04)" and no more."""
    from torch import nn

    from atlas import pipeline

    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            return (h > 0).to(h.dtype) * h / 3.0

    model = Gate()
    model.atlas_inputs = ("x:float32[B,4]",)
    v = pipeline.document(spec.Loaded("inline", model, None), pipeline.Settings(cost=False)).root.equations.verification
    assert v.verified and v.dtype == "float64" and v.tolerance == 2e-4
    assert str(v.note) == "The tolerance is float32's: in the recorded run the code casts to float32, which forward() may compute in"


def test_a_twice_registered_entry_the_record_skipped_takes_the_call_it_repeats(capsys):
    """`self.chomp2` is also `self.net[4]`, alike `self.net[1]`: the record skips it as a repeat, and under its
    first name it read "the code uses a tensor that is neither an input, ..." (TCN: 49 of 52 verified). It is
    documented once, where the Sequential calls it: `net.4`, with `net.1`."""
    code = main(["describe", f"{CHECKS}:aliased_chomps", "--json", "--verify"])
    out = capsys.readouterr()
    assert code == 0, out.err
    comps = {c["id"]: c for c in json.loads(out.out)["components"]}
    assert all(verified(c) for c in comps.values()), [i for i, c in comps.items() if not verified(c)]
    assert "chomp2" not in comps and comps["net.1,4"]["shapes"]["method"] == "fake"


def test_a_verified_error_is_reported_in_decades_of_the_tolerance():
    """A page says the smallest of tolerance/1000, /100, /10 and the tolerance that the error is within: a float32
    rotary table's 2.7e-07 under float32's 2e-04 reads "within 2e-06", not "within 2e-04"."""
    from atlas.analyse.equations.tolerances import reported_bound
    assert reported_bound(2.7e-7, 2e-4) == 2e-6
    assert reported_bound(1.4e-7, 2e-4) == 2e-7
    assert reported_bound(3e-5, 2e-4) == 2e-4
    assert reported_bound(1.5e-5, 2e-4) == 2e-5
    assert reported_bound(0.0, 1e-9) == 1e-12
    assert reported_bound(2e-12, 1e-9) == 1e-11
