import json

import jsonschema
import pytest
from conftest import ROOT, fixture_spec

from atlas.document import serialize
from atlas.extract import walk
from atlas.load import spec

SCHEMA = json.loads((ROOT / "atlas" / "render" / "schema" / "model.schema.json").read_text())


def _published(doc) -> dict:
    """The JSON as published (atlas.render.json_export), read back."""
    from atlas.render import json_export
    return json.loads(serialize.dumps(json_export.as_dict(doc)))


def test_ldlm_json_validates(ldlm_doc):
    jsonschema.validate(_published(ldlm_doc), SCHEMA)


def _no_constant(name):
    raise ValueError(f"{name} is no JSON")


@pytest.mark.parametrize("path", sorted((ROOT / "docs").glob("*/atlas.json")), ids=lambda p: p.parent.name)
def test_committed_json_is_strict_json(path):
    """Every published atlas.json parses in a strict reader (a browser's JSON.parse): a causal mask's −∞ is the
    string "-Infinity", read back as a float, never the bare constant Python's json writes by default."""
    text = path.read_text()
    json.loads(text, parse_constant=_no_constant)
    if '"-Infinity"' in text:
        assert float("-inf") in _numbers(serialize.loads(text))


def _numbers(doc) -> set:
    from atlas.document.math_tree import Number
    found = set()

    def walk_node(x):
        if isinstance(x, Number):
            found.add(x.value)
        elif isinstance(x, tuple | list):
            for v in x:
                walk_node(v)
        elif hasattr(x, "__dataclass_fields__"):
            for name in x.__dataclass_fields__:
                walk_node(getattr(x, name))
    walk_node(doc)
    return found


def test_committed_json_validates():
    jsonschema.validate(json.loads((ROOT / "docs" / "ldlm" / "atlas.json").read_text()), SCHEMA)


@pytest.mark.parametrize("name", ["tied", "buffers", "reused", "nested"])
def test_round_trip(name):
    doc = walk.walk(spec.load(fixture_spec(name)))
    data = _published(doc)
    jsonschema.validate(data, SCHEMA)
    assert serialize.loads(serialize.dumps(data)) == doc


def test_round_trip_ldlm(ldlm_doc):
    assert serialize.loads(serialize.dumps(serialize.as_dict(ldlm_doc))) == ldlm_doc


def test_schema_rejects_missing_totals(ldlm_doc):
    data = _published(ldlm_doc)
    del data["totals"]["frozen"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)
