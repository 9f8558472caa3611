"""The catalog: architecture figures read off the code, the record and the config, one table across models;
and the data flow each forward recorded."""

import pytest

from atlas import pipeline
from atlas.document import Architecture, Trait
from atlas.load.spec import load
from atlas.render.comparison import _experts_of

SUITE = "tests/fixtures/hf_suite.py"


def _doc(spec):
    return pipeline.document(load(spec), pipeline.Settings(verify=False, cost=False))


@pytest.fixture(scope="module")
def llama():
    return _doc(f"{SUITE}:llama")


def values(traits):
    return [t.value for t in traits]


def test_ldlm_architecture(ldlm_doc):
    a = ldlm_doc.architecture
    assert values(a.layers) == [12, 6, 12, 6]
    assert [t.component for t in a.layers] == ["frozen_lm.transformer.h", "latent_encoder.blocks", "denoiser.layers",
                                               "latent_decoder.blocks"]
    assert values(a.width) == [768] and values(a.heads) == [12] and values(a.kv_heads) == [12]
    assert values(a.ffn) == [3072] and values(a.experts) == []
    assert values(a.vocabulary) == [50257] and values(a.context) == [1024]
    assert values(a.norms) == ["LayerNorm", "RMSNorm"]
    assert values(a.positions) == ["frozen", "learned"]           # GPT-2's table is frozen here
    assert values(a.activations) == ["GELU"]


def test_grouped_query_rotary_gated(llama):
    a = llama.architecture
    assert values(a.heads) == [4] and values(a.kv_heads) == [2]
    assert values(a.positions) == ["rotary"] and a.positions[0].component == "model.layers.self_attn"
    assert values(a.activations) == ["gated SiLU"] and values(a.norms) == ["RMSNorm"]
    assert [(t.value, t.source) for t in a.context] == [(256, "max_position_embeddings")]


def test_a_partial_rotary_says_how_many_dims_it_rotates():
    """GPT-NeoX rotates 4 of each head's 16 dims (partial_rotary_factor 0.25) and passes the rest: the catalog said
    "rotary" as for a whole head. Phi-3 cuts q from its fused qkv projection before splitting heads, and rotates
    each head whole: no partial rotary."""
    from atlas import i18n
    from atlas.render.comparison import rows
    neox = _doc(f"{SUITE}:gpt_neox")
    assert [(t.value, t.component) for t in neox.architecture.positions] == [("rotary 4/16",
                                                                              "gpt_neox.layers.attention")]
    assert rows([neox])[0].cells["positions"].parts[0][0] == "rotary on 4 of 16 dims"
    with i18n.language("es"):
        assert rows([neox])[0].cells["positions"].parts[0][0] == "rotatorias en 4 de 16 dimensiones"
    assert values(_doc(f"{SUITE}:phi3").architecture.positions) == ["rotary"]


def test_rotary_positions_on_interleaved_pairs():
    """GLM-4 (and Helium, Moonshine) rotate interleaved pairs, their cosines and sines repeated element by element
    (repeat_interleave): the catalog read no positions at all. GLM-4 rotates half of each head's dims (its config's
    partial_rotary_factor, 0.5 by default)."""
    a = _doc("tests/fixtures/hf_models.py:glm4").architecture
    assert [(t.value, t.component) for t in a.positions] == [("rotary 8/16", "layers.self_attn")]


def test_a_norms_gain_is_no_position_table_and_a_list_never_run_no_layers():
    """Chameleon's q_norm, a LayerNorm over heads × features, adds a [heads, features] bias row by row: the catalog
    read "learned" positions there; and its VQ-VAE's blocks, never run on text, read as a second stack of layers."""
    a = _doc("tests/fixtures/models.py:head_normed").architecture
    assert a.positions == () and [(t.value, t.component) for t in a.layers] == [(2, "layers")]


def test_learned_positions_not_token_types():
    a = _doc(f"{SUITE}:bert").architecture
    assert [(t.value, t.component) for t in a.positions] == [("learned", "embeddings.position_embeddings")]
    assert values(a.activations) == ["GELU"] and values(a.norms) == ["LayerNorm"]


def test_experts_counted():
    a = _doc(f"{SUITE}:olmoe").architecture
    assert values(a.experts) == [4] and values(a.ffn) == [128]      # not the fused gate-and-up's 256


def test_catalog_links_every_model(ldlm_doc, llama):
    from atlas.render import model_pages
    files = model_pages.render_catalog([ldlm_doc, llama])
    page, es = files["catalog/index.md"], files["catalog/index.es.md"]
    assert "| [LDLM](../ldlm/index.md) | 316,152,576" in page
    assert "[12](../ldlm/frozen_lm/transformer/h/index.md) + [6](../ldlm/latent_encoder/blocks/index.md)" in page
    assert "[4 / 2](../llamaforcausallm/model/layers/self_attn/index.md)" in page
    assert "[gated SiLU](../llamaforcausallm/model/layers/mlp/act_fn.md)" in page
    assert "`max_position_embeddings`" in page
    assert "| Modelo |" in es and "tabla aprendida" in es and "SiLU con compuerta" in es


def test_ldlm_data_flow(ldlm_doc):
    flow = ldlm_doc.root.flow
    labels = [n.label for n in flow.nodes]
    assert labels == ["input_ids", "GPT-2 trunk", "Feature standardizer", "Latent encoder", "t", "noise", "Denoiser",
                      "Latent decoder", "LM head", "output"]
    assert (3, 6) in flow.edges and (4, 6) in flow.edges and (5, 6) in flow.edges
    block = ldlm_doc.component("latent_encoder")
    assert [(n.label, n.calls) for n in block.flow.nodes if n.kind == "module"][1] == ("Query norm", 1)
    assert any(n.calls == 6 for n in block.flow.nodes)              # the loop over the blocks: one node


def test_relative_position_buckets_are_no_context_length():
    """T5 indexes its relative-attention table with buckets computed from an arange: 32 buckets bound no context,
    and T5's config states none, so no context length is given (LDLM's comes from GPT-2's positions table)."""
    a = _doc(f"{SUITE}:t5").architecture
    assert values(a.context) == []
    assert [(t.value, t.component) for t in a.positions] == \
        [("learned", "encoder.block.0.layer.0.SelfAttention.relative_attention_bias")]


def test_a_sigmoid_weighing_its_own_input_is_swish_not_a_gate():
    """CLIP's quick GELU is x·σ(1.702x): the sigmoid's result multiplies the tensor it came from, no second
    projection, so no gate (Llama's SiLU times its up projection stays gated SiLU, above)."""
    a = _doc(f"{SUITE}:clip_vision").architecture
    assert values(a.activations) == ["Swish"]
    assert a.activations[0].component == "encoder.layers.mlp.activation_fn"


def test_token_ids_reshaped_before_the_lookup_still_give_the_vocabulary():
    """OPT (and CLIP's text model) look up `input_ids.view(-1, T)`: the table is still the vocabulary."""
    a = _doc(f"{SUITE}:opt").architecture
    assert [(t.value, t.component) for t in a.vocabulary] == [(128, "model.decoder.embed_tokens")]
    assert values(a.context) == [256] and values(a.activations) == ["ReLU"]


@pytest.mark.parametrize("name, named", [("swish", "Swish"), ("gated_swish", "gated Swish"), ("scaled", "sigmoid"),
                                         ("gated", "gated sigmoid"),
                                         ("gelu_tanh", "GELU"), ("gelu_tanh_bloom", "GELU"), ("tanh", "tanh"),
                                         ("relu_squared", "squared ReLU"), ("routed", "SiLU"),
                                         ("masked_tanh", "tanh")])
def test_what_an_activation_is_combined_with_names_it(name, named):
    """A sigmoid times itself (through a number): Swish. Only a number: a sigmoid. A learned gate's output times
    the stream it read: gated, though the stream is where the gate came from. One plus a tanh of a cubic in x, times
    x: GELU written out (gelu_new, BLOOM's); a tanh alone stays one. A ReLU squared: squared ReLU. A sigmoid whose
    scores a top-k choice reads is a router, not an activation (DeepSeek-V3's). A tanh times a mask kept as a buffer
    (a RealNVP coupling layer's log-scale) is no gate: the buffer weighs every input alike ("gated tanh" before)."""
    a = _doc(f"tests/fixtures/activations.py:{name}").architecture
    assert [(t.value, t.component) for t in a.activations] == [(named, "blocks")]


def test_spectral_normed_layers_are_no_stack_of_blocks():
    """spectral_norm gives each Conv2d of a Sequential a child (its parametrization): the catalog read five
    "layers" and took the feature maps' sizes (32, 16, 8) for widths. The same network without it reads neither."""
    a = _doc("tests/fixtures/activations.py:spectral_normed_convs").architecture
    assert (a.layers, a.width, a.ffn) == ((), (), ())


def test_an_activation_weighed_by_a_gate_made_from_itself_is_not_gated():
    """Squeeze-and-excitation (EfficientNet's): a SiLU's result times a sigmoid of its own pooled, projected values.
    The SiLU was called gated, as if it multiplied a second projection; the sigmoid is the gate, and gates it."""
    a = _doc("tests/fixtures/activations.py:squeeze_excite").architecture
    assert [(t.value, t.component) for t in a.activations] == [("SiLU", "blocks"), ("gated sigmoid", "blocks")]


def test_token_ids_transposed_before_the_lookup_still_give_the_vocabulary():
    """XLNet looks up `input_ids.transpose(0, 1)`: a transpose is a layout, like a view; the vocabulary was empty."""
    a = _doc("tests/fixtures/models.py:time_first").architecture
    assert [(t.value, t.component) for t in a.vocabulary] == [(50, "embed")]


def test_a_positions_table_called_with_the_token_ids_is_no_vocabulary():
    """BART's learned positions are called with input_ids (for their shape) and look up an arange: the suite's
    258-row positions table is larger than its 128-token vocabulary, and was taken for it."""
    a = _doc(f"{SUITE}:bart").architecture
    assert [(t.value, t.component) for t in a.vocabulary] == [(128, "model.encoder.embed_tokens")]
    assert [(t.value, t.source) for t in a.context] == [(256, "max_position_embeddings")]


@pytest.mark.parametrize("name, heads, kv_heads", [("qk_norm", 4, 2), ("multi_query", 4, 1)])
def test_heads_of_attention_split_otherwise(name, heads, kv_heads):
    """Query heads normalized before their transpose (only v split the usual way: its 2 heads are not the
    queries' 4), and one key/value head shared by every query head: read off the split and the kernel's
    operands."""
    doc = pipeline.document(load(f"tests/fixtures/attention_layouts.py:{name}"), pipeline.Settings(cost=False))
    a = doc.architecture
    assert values(a.heads) == [heads] and values(a.kv_heads) == [kv_heads]
    attn = next(c for c in doc.components if c.id == "layers.attn")
    assert attn.equations.verification.verified


def test_a_list_whose_entries_differ_is_one_stack_of_all_its_layers():
    """layers.0 (multi-query) is listed apart from layers.1-3 (grouped-query): the stack has four layers, and
    both kinds give their heads (DeepSeek-V3's first dense layers, Jamba's interleaving, BEiT's stochastic depth)."""
    a = _doc("tests/fixtures/attention_layouts.py:interleaved").architecture
    assert [(t.value, t.component) for t in a.layers] == [(4, "layers.1-3")]
    assert values(a.heads) == [4] and values(a.kv_heads) == [1, 2] and values(a.width) == [32]


def test_a_normalization_subclassed_in_the_models_code_is_a_norm():
    """A GroupNorm subclass (PoolFormer's) is not under torch.nn's path: its equations, which divide by each
    group's standard deviation, make it a norm."""
    doc = _doc("tests/fixtures/norms.py:own_group_norm")
    assert [(t.value, t.component) for t in doc.architecture.norms] == [("GroupNorm", "blocks.norm")]
    assert doc.component("blocks.norm").equations.normalizes


def test_queries_keys_and_values_split_at_once_give_the_heads():
    """timm's and Timesformer's attention split one projection into queries, keys and values at once,
    `reshape(B, N, 3, heads, d)`, Hiera with a window axis before; the catalog found no heads. The same reshape where
    nothing attends gives none."""
    doc = _doc("tests/fixtures/attention_layouts.py:fused_split")
    a = doc.architecture
    assert [(t.value, t.component) for t in a.heads] == [(4, "layers.attn")] and values(a.kv_heads) == [4]
    facts = {f.kind: f.value for f in doc.component("layers.attn").equations.facts}
    assert (facts["heads"], facts["head_features"]) == (4, 8)
    assert _doc("tests/fixtures/attention_layouts.py:three_colours").architecture.heads == ()
    windowed = _doc("tests/fixtures/attention_layouts.py:windowed_split")      # Hiera's, a window axis before
    assert [(t.value, t.component) for t in windowed.architecture.heads] == [(4, "layers.attn")]


def test_a_block_that_attends_in_its_own_forward_gives_the_heads():
    """No attention module: the block's own verified equations split the heads, and the catalog reads them there."""
    a = _doc("tests/fixtures/attention_layouts.py:inline_attention").architecture
    assert [(t.value, t.component) for t in a.heads] == [(4, "blocks")] and values(a.kv_heads) == [4]


def test_a_global_response_norm_is_no_rms_norm():
    """ConvNeXt-V2's global response norm divides by a 2-norm, and the catalog called it an RMS norm: an RMS norm
    takes its scale over each position's features, the last axis; the response norm over the height and width."""
    doc = _doc("tests/fixtures/norms.py:two_norms")
    assert [(t.value, t.component) for t in doc.architecture.norms] == [("RMSNorm", "rms")]
    assert doc.component("grn").equations.normalizes and doc.component("rms").equations.normalizes


def test_a_list_of_experts_is_no_stack_of_layers():
    """Four expert blocks in a ModuleList, each run on the rows routed to it: the catalog read 4 layers and no
    experts. A list is a stack where each entry runs on the one before's result."""
    a = _doc("tests/fixtures/models.py:top_two_experts").architecture
    assert a.layers == () and [(t.value, t.component) for t in a.experts] == [(4, "experts")]


def test_a_list_of_experts_inside_a_list_of_layers_is_counted():
    """Each of two layers routes its rows to a list of four experts: the catalog counted the layers and read the
    experts' list, inside one of them, as nothing (only the outermost lists were looked at)."""
    a = _doc("tests/fixtures/models.py:layers_of_experts").architecture
    assert values(a.layers) == [2] and [(t.value, t.component) for t in a.experts] == [(4, "layers.experts")]


def test_a_table_of_positions_added_cut_to_the_length_is_learned_positions_and_the_context():
    """`x + self.pos[:t]` with a [16, 8] parameter: the record was capped at T = 16 by it, and the catalog read no
    positions and no context (it knew tables looked up by positions, or added whole)."""
    a = _doc("tests/fixtures/models.py:sliced_positions").architecture
    assert [(t.value, t.component) for t in a.positions] == [("learned", "")]
    assert [(t.value, t.component) for t in a.context] == [(16, "")]


def test_per_channel_weights_and_per_stage_heads_are_no_experts():
    """RWKV keeps per-channel mixing weights as [1, 1, d]: the catalog read one expert and an FFN width of 1.
    Segformer's decode head runs one projection per encoder stage, side by side: it read them as experts."""
    a = _doc("tests/fixtures/models.py:per_stage_heads").architecture
    assert a.experts == () and [(t.value, t.component) for t in a.ffn] == [(32, "blocks.feed_forward.up")]
    assert values(a.layers) == [2]


def test_only_the_experts_width_reads_as_so_many_experts():
    """DeepSeek-V3's first layer is one dense MLP of 128 beside 8 experts of 32 in the others: the cell read
    "8 × 128, 8 × 32", every width taken for the experts'."""
    from atlas.render.comparison import rows
    olmoe = _doc(f"{SUITE}:olmoe")
    assert rows([olmoe])[0].cells["ffn"].parts[0][0] == "4 × 128"
    dense_then_moe = Architecture(ffn=(Trait(128, "layers.0.mlp.gate_proj"), Trait(32, "layers.1.mlp.experts")),
                                  experts=(Trait(8, "layers.1.mlp.experts"),))
    assert [e and e.value for e in map(lambda f: _experts_of(dense_then_moe, f), dense_then_moe.ffn)] == [None, 8]


def test_cosines_an_attention_projects_are_no_rotary_positions():
    """Funnel's attention receives sinusoidal embeddings and contracts them with its queries (relative positions):
    the catalog read "rotary" wherever an attention received cosines and sines. Rotary multiplies them into q, k."""
    from atlas.analyse.architecture.traits import _rotation
    from atlas.extract.trace.structures import Call, OpEvent, Ref, Value

    def made(name, *inputs):
        v = Value(id(object()), "op", (4, 8))
        v.made_by = OpEvent(None, name, tuple(Ref(i) for i in inputs), {}, Ref(v), None)
        return v
    x, w = Value(1, "input", (4, 8)), Value(2, "param", (8, 8))
    cos = made("cos", made("arange"))
    rotated = Call(None, "attn", (Ref(x), Ref(cos)), {})
    q = made("linear", x, w)
    rotated.events = [q.made_by, made("Tensor.mul", q, made("Tensor.unsqueeze", cos)).made_by]
    projected = Call(None, "attn", (Ref(x), Ref(cos)), {})
    projected.events = [q.made_by, made("linear", cos, w).made_by, made("einsum", q, cos).made_by]
    assert _rotation(rotated) == () and _rotation(projected) is None


def test_a_state_space_mixers_inner_width_is_no_ffn():
    """Mamba's in_proj/out_proj around a depthwise conv over time were read as the FFN (FalconMamba, which has
    none, showed 128); the block's MLP is the FFN."""
    a = _doc("tests/fixtures/models.py:hybrid").architecture
    assert [(t.value, t.component) for t in a.ffn] == [(24, "layers.mlp.0")] and values(a.layers) == [2]


def test_meta_llama_code_names_its_heads_and_rotary_positions():
    """Meta's reference code names its streams xq, xk, xv (and keys, values) and rotates by a complex product with
    freqs_cis: the catalog had no heads, no key/value heads and no positions for it."""
    a = _doc("tests/fixtures/models.py:meta_llama").architecture
    assert (values(a.heads), values(a.kv_heads), values(a.positions)) == ([4], [2], ["rotary"])


def test_a_fused_gate_and_up_beside_a_square_down_projection_gives_the_width():
    """GPT-OSS's experts fuse gate and up in one [d, 2h] weight and project down by a square [h, d] (h = d): the
    catalog read an FFN width of 2h, the fused weight's, the square one being no evidence of a hidden width."""
    a = _doc("tests/fixtures/contractions.py:interleaved_experts_lm").architecture
    assert values(a.experts) == [2] and values(a.ffn) == [8] and values(a.width) == [8]


def test_a_bias_added_to_each_heads_queries_is_no_position_table():
    """XLNet adds a learned [heads, d] bias to its [T, B, heads, d] queries: the catalog read "Positions: learned
    table" for a model whose positions are sinusoidal and relative."""
    assert _doc("tests/fixtures/models.py:head_biased_attention").architecture.positions == ()
