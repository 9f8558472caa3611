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
