"""Parts a parent uses through another method than forward(): timm's MaxViT reads `self.rel_pos.get_bias()`, and its
16 `RelPosMlp` parts read "not called". Such a call is recorded as a call of the part, with the method's name, where
the parent makes it; its equations are checked against that same method on the check's copy.

The models are in tests/fixtures/methods.py."""

import json

import jsonschema
import pytest
from conftest import ROOT

from atlas import pipeline
from atlas.analyse.equations.derive import EquationMismatch
from atlas.cli import main
from atlas.extract import walk
from atlas.extract.method_uses import methods_on_parts
from atlas.extract.record import plan
from atlas.extract.trace.structures import Call
from atlas.load import spec

METHODS = ROOT / "tests" / "fixtures" / "methods.py"


def test_the_parents_code_names_the_methods_it_calls_on_its_parts():
    model = spec.load(f"{METHODS}:rel_pos_attention").model
    assert methods_on_parts(model) == {"rel_pos": ["get_bias"]}
    assert methods_on_parts(model.rel_pos) == {}        # `self.get_bias()` is its own call, not a part's


def test_a_call_of_get_bias_is_a_call_of_the_part_where_the_parent_makes_it():
    loaded = spec.load(f"{METHODS}:rel_pos_attention")
    root = plan.record(loaded.model, walk.walk(loaded), None).trace.root
    children = [e for e in root.events if isinstance(e, Call)]
    assert [(c.path, c.method) for c in children] == [("qkv", None), ("rel_pos", "get_bias"), ("proj", None)]
    rel_pos = children[1]
    assert rel_pos.args == () and rel_pos.kwargs == {} and rel_pos.out.value.shape == (1, 2, 5, 5)
    assert [c.path for c in rel_pos.calls()][1:] == ["rel_pos.mlp", "rel_pos.mlp.0", "rel_pos.mlp.1", "rel_pos.mlp.2"]


def test_its_equations_are_checked_against_the_same_method(capsys):
    assert main(["describe", f"{METHODS}:rel_pos_attention", "--json", "--verify"]) == 0
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, json.loads((ROOT / "atlas" / "render" / "schema" / "model.schema.json").read_text()))
    comps = {c["id"]: c for c in data["components"]}
    rel_pos = comps["rel_pos"]
    assert rel_pos["shapes"]["called_as"] == "get_bias" and rel_pos["shapes"]["status"] == "derived"
    assert rel_pos["inputs"] == [] and rel_pos["outputs"][0]["shape"] == [1, 2, 5, 5]
    assert rel_pos["verification"] == {"verified": True, "max_error": 1e-12, "tolerance": 1e-9, "reason": None,
                                       "dtype": "float64", "note": None}
    assert comps[""]["verification"]["verified"] and "called_as" not in comps["qkv"]["shapes"]


def test_the_check_calls_the_method_and_not_forward(monkeypatch):
    """A copy whose get_bias() adds 0.5 to what the record's get_bias() computed: the check of the part fails by
    0.5 / max |bias| = 0.314, so it compared its equations with get_bias() (forward() needs `scores`, which the
    recorded call has not)."""
    from atlas.analyse.equations import verify
    real = verify.materialize

    def shifted(module, dtype, seed):
        inst = real(module, dtype, seed)
        if type(inst).__name__ == "RelPosMlp":
            own = inst.get_bias
            inst.get_bias = lambda: own() + 0.5
        return inst
    monkeypatch.setattr(verify, "materialize", shifted)
    with pytest.raises(EquationMismatch, match=r"rel_pos: the equations differ from forward\(\) by 0\.314 "):
        pipeline.document(spec.load(f"{METHODS}:rel_pos_attention"), pipeline.Settings(cost=False))


def test_a_method_that_returns_nothing_is_no_call(capsys):
    """`self.rnn.flatten_parameters()` before `self.rnn(x)`: the LSTM's call is its forward()."""
    loaded = spec.load(f"{METHODS}:recurrent")
    root = plan.record(loaded.model, walk.walk(loaded), None).trace.root
    assert [(c.path, c.method) for c in root.calls()] == [("", None), ("rnn", None), ("head", None)]


def test_the_page_says_which_method_in_both_languages(tmp_path, capsys):
    assert main(["build", f"{METHODS}:rel_pos_attention", "--docs", str(tmp_path)]) == 0
    page = tmp_path / "attention" / "rel_pos"
    assert ("*The parent's code calls this component's `get_bias()`, not its `forward()`: these shapes, its equations "
            "and their check are of that call.*") in (page / "index.md").read_text()
    assert ("*El código del padre llama a `get_bias()` de este componente, no a su `forward()`: estas formas, sus "
            "ecuaciones y su comprobación son las de esa llamada.*") in (page / "index.es.md").read_text()
    assert ("**Verified:** these equations, run in float64 on random inputs with a fixed seed in evaluation mode, "
            "reproduce `get_bias()` to within 1e-12 (tolerance 1e-09).") in (page / "index.md").read_text()
    assert "reproducen `get_bias()` con un error de hasta 1e-12" in (page / "index.es.md").read_text()
    assert "get_bias" not in (tmp_path / "attention" / "qkv.md").read_text()


def test_encodecs_quantizer_is_recorded_through_encode_on_the_cpu_run_too(capsys):
    """EnCodec's forward() runs on the CPU (an `.item()`), where hooks give the shapes: its quantizer, used through
    `encode()` and `decode()`, read "not called"; now its first call, `encode()`, gives its shapes and is checked."""
    assert main(["describe", f"{METHODS}:encodec", "--json", "--verify"]) == 0
    comps = {c["id"]: c for c in json.loads(capsys.readouterr().out)["components"]}
    for part in ("quantizer", "quantizer.layers.codebook"):
        assert comps[part]["shapes"]["called_as"] == "encode" and comps[part]["shapes"]["method"] == "cpu"
        assert comps[part]["verification"]["verified"], comps[part]["verification"]
    assert comps["quantizer"]["outputs"][0]["shape"][0] == 10       # codes: one row per quantizer
