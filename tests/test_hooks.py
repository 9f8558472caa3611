"""The model authors' hooks: read into a typed object, from the instance or its class; a hook of the wrong type
is no hook."""

from __future__ import annotations

from torch import nn

from atlas.load.hooks import Hooks, hooks_of


class Hinted(nn.Module):
    atlas_name = "  Encoder block "                    # a class attribute, stripped
    atlas_equations = ("y = x",)

    def __init__(self):
        super().__init__()
        self.atlas_inputs = "x:float32[B,T,4]"         # one input as a string is a tuple of one
        self.atlas_dims = {"T": "positions"}
        self.atlas_reference_sizes = {"B": 1, "T": 512}
        self.atlas_summary = 7                         # not a string: no summary
        self.atlas_published = []                      # not a mapping: nothing published


def test_hooks_are_typed_and_wrong_types_are_none():
    h = hooks_of(Hinted())
    assert h == Hooks(name="Encoder block", equations=("y = x",), inputs=("x:float32[B,T,4]",),
                      dims={"T": "positions"}, reference_sizes={"B": 1, "T": 512})
    assert hooks_of(nn.Linear(2, 2)) == Hooks()


def test_an_instance_attribute_overrides_the_class():
    m = Hinted()
    m.atlas_name = "Block 0"
    assert hooks_of(m).name == "Block 0" and hooks_of(Hinted()).name == "Encoder block"
