"""How the forward is found and recorded: optional inputs added after a failure, module state left as it was,
writes through views, sizes the code needs exactly."""

import copy
import json

from atlas.cli import main
from atlas.pipeline import Settings, document
from atlas.spec import load

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
    loaded = load(f"{SPEC}:recurrent_stack")
    document(loaded, Settings(cost=False))
    assert all(layer.state is None for layer in loaded.model.layers)
    copy.deepcopy(loaded.model)                             # nothing with symbolic sizes was left behind


def test_writes_through_views_reach_the_base(capsys):
    data, _ = _describe(capsys, "copy_into_view")
    root = data["components"][0]
    assert root["verification"]["verified"], root["verification"]
    assert root["verification"]["max_error"] < 1e-9
