"""Inputs other libraries' conventions call for, found with no --input: a conditioning input along the data flow,
optional inputs the code reads without a test, a stated image size, graphs, several modalities; and the value of
an index buffer filled in place. Each model documents with every component verified against forward()."""

import pytest
import torch
from conftest import ROOT

from atlas import pipeline
from atlas.load import spec

FIXTURES = ROOT / "tests" / "fixtures" / "library_conventions.py"


def _document(name: str):
    doc = pipeline.document(spec.load(f"{FIXTURES}:{name}"), pipeline.Settings())
    unverified = [c.id for c in doc.components if not (c.equations and c.equations.verification
                                                       and c.equations.verification.verified)]
    assert doc.forward_failure is None and unverified == []
    return doc


def test_a_conditioning_input_is_sized_by_the_layer_its_data_reaches():
    """The UNet's encoder_hidden_states goes down through a zip of resnets and attentions that reading the code
    cannot follow; a run on fake tensors follows it to the cross-attention's to_k, Linear(24 -> 16)."""
    doc = _document("conditional_unet")
    assert doc.inputs == ("sample:float32[B,4,H,W]", "timestep:float32[B]", "encoder_hidden_states:float32[B,T,24]")
    said = doc.input_notes[2]
    assert "`down_blocks.0.attentions.0.attn.to_k`" in said and "in_features = 24" in said
    assert dict(doc.cost_summary.reference)["H"] == 8 == dict(doc.cost_summary.reference)["W"]   # sample_size, not 224


def test_optional_inputs_the_code_reads_are_filled_and_a_square_image_at_the_stated_size():
    doc = _document("class_conditional_dit")
    assert doc.inputs == ("hidden_states:float32[B,4,8,8]", "timestep:float32[B]", "class_labels:int64[B]")
    notes = "\n".join(doc.input_notes)
    assert "`timestep` was added after a forward without it failed" in notes
    assert "`class_labels` was added" in notes and "`labels`, Embedding(10, 16)" in notes
    assert "H = 8, W = 8, the image size config.sample_size states" in notes
    assert "library_conventions.py:108" in notes                            # the reshape that refused 40 x 56


def test_a_graph_takes_node_features_and_edges():
    doc = _document("graph_net")
    assert doc.inputs == ("x:float32[N,6]", "edge_index:int64[2,E]")
    assert doc.component("conv1").shapes.outputs[0].dims[0].symbol == "N"


def test_a_rebound_name_is_not_the_input_any_more():
    """x-transformers rebinds x to the embedding's output: its output head `to_logits` is not where the ids go."""
    doc = _document("token_wrapper")
    assert doc.inputs == ("x:int64[B,T]",)
    assert "`token_emb.emb`, Embedding(40, 16)" in doc.input_notes[0]


def test_every_modality_of_a_model_with_no_required_input_runs():
    doc = _document("two_towers")
    assert doc.inputs == ("image:float32[B,3,H,W]", "text:int64[B,T]")
    assert doc.component("token_embedding").shapes is not None and doc.component("visual").shapes is not None


def test_an_index_buffer_filled_in_place_has_the_value_the_model_computed():
    """torch.empty's memory is no value: the buffer is what init_non_persistent_buffers() copied into it."""
    from atlas.load.buffer_values import known
    loaded = spec.load(f"{FIXTURES}:filled_index")
    assert loaded.model.index.device.type == "meta"
    index = known(loaded.model)["index"]
    assert torch.equal(index, torch.tensor([[3, 2, 1, 0], [4, 3, 2, 1], [5, 4, 3, 2], [6, 5, 4, 3]]))
    _document("filled_index")


@pytest.mark.parametrize("name", ["conditional_unet", "graph_net"])
def test_totals_are_exact(name):
    loaded = spec.load(f"{FIXTURES}:{name}")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    assert doc.totals.parameters == sum(p.numel() for p in loaded.model.parameters())


def test_an_attention_output_projection_to_fewer_features_is_counted_at_its_size():
    """F.multi_head_attention_forward's output projection is its weight's size, 16 -> 4, not 16 -> 16: with T
    positions, 2·T·16·16 for each of q, k and v, 2·T·16·4 out, and 2·2·T·T·16 for the scores and the mix."""
    import sympy
    doc = _document("attention_pool")
    T = sympy.Symbol("T", positive=True, integer=True)
    B = sympy.Symbol("B", positive=True, integer=True)
    expected = B * (3 * 2 * T * 16 * 16 + 2 * T * 16 * 4 + 4 * T * T * 16)
    assert sympy.expand(sympy.sympify(doc.cost.flops, locals={"B": B, "T": T}) - expected) == 0


@pytest.mark.parametrize("name", ["patches_by_function", "patches_by_layer"])
def test_an_image_cut_into_patches_by_einops_is_read_back_from_the_pattern(name):
    """LayerNorm(48) after `b c (h p1) (w p2) -> b (h w) (p1 p2 c)` with p1 = p2 = 4: c = 3, and H and W are
    multiples of 4; the 16 patches of the position table make it 16 x 16."""
    doc = _document(name)
    assert doc.inputs == ("img:float32[B,3,16,16]",)
    assert "through `b c (h p1) (w p2) -> b (h w) (p1 p2 c)` (c = 3)" in doc.input_notes[0]
    (norm,) = [c for c in doc.components if c.cls.endswith("LayerNorm")]
    assert [d.value for d in norm.shapes.inputs[0].dims] == [None, 16, 48]     # [B, 16 patches, 4 · 4 · 3]
