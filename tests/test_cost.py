"""Cost: FLOPs equal torch's FlopCounterMode for every contraction, symbolically; causal counts by hand;
activation bytes against MemTracker."""

import json
import os
import re

import flop_reference
import pytest
import sympy
import torch
from conftest import ROOT
from torch._subclasses.fake_tensor import FakeTensorMode

from atlas import pipeline
from atlas.cli import main
from atlas.document import input_specs as inputs_mod
from atlas.extract.trace.runs import DTYPES, fake_tensors
from atlas.extract.trace.symbolic_inputs import SymbolicInputs
from atlas.load import spec

os.environ.setdefault("HF_HUB_OFFLINE", "1")
B, T = sympy.Symbol("B", positive=True, integer=True), sympy.Symbol("T", positive=True, integer=True)
SUITE = ROOT / "tests" / "fixtures" / "hf_suite.py"
FIXTURES = ROOT / "tests" / "fixtures" / "models.py"


def flop_counter(model, texts) -> dict:
    """FlopCounterMode's counts per module path ("" for the model), as expressions in B and T."""
    vocab = inputs_mod.vocabulary(getattr(model, "atlas_dims", None), getattr(model, "atlas_fixed_dims", None))
    specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in texts], vocab)
    si = SymbolicInputs({s: h for s, h in zip(symbols, (2, 6, 7))}, "cpu")
    inputs = {s.name: si.tensor(s.name, s.dims, DTYPES[s.dtype]) for s in specs}
    model.eval()
    with fake_tensors(model, si.mode), si.mode, flop_reference.flop_counter() as counter, torch.enable_grad():
        model(**inputs)
    out = {}
    for name, ops in counter.get_flop_counts().items():
        if name == "Global":
            continue
        path = name.split(".", 1)[1] if "." in name else ""
        out[path] = sympy.expand(sum((si.expr(v) for v in ops.values()), sympy.Integer(0)))
    return out


def flop_counter_at(model, texts, sizes: dict[str, int]) -> dict:
    """FlopCounterMode's counts per module path at concrete sizes: fake tensors without symbols, so the run costs
    a sixth of the symbolic one (flop_counter)."""
    vocab = inputs_mod.vocabulary(getattr(model, "atlas_dims", None), getattr(model, "atlas_fixed_dims", None))
    specs, _ = inputs_mod.resolve([inputs_mod.parse_input(t) for t in texts], vocab)
    mode = FakeTensorMode()
    with mode:
        inputs = {s.name: torch.zeros([sizes.get(d, d) for d in s.dims], dtype=DTYPES[s.dtype]) for s in specs}
    model.eval()
    with fake_tensors(model, mode), mode, flop_reference.flop_counter() as counter, torch.enable_grad():
        model(**inputs)
    return flop_reference.by_module(counter)


def _check_against_flop_counter(doc, model, texts, at: tuple[dict[str, int], ...] = ()):
    """Every component's FLOPs against FlopCounterMode's: as expressions, or at each of the sizes `at`."""
    runs = [(sizes, flop_counter_at(model, texts, sizes)) for sizes in at] or [(None, flop_counter(model, texts))]
    compared = 0
    for comp in doc.components:
        path = comp.module_paths[0]
        if comp.cost is None or path not in runs[0][1]:
            continue
        for sizes, counted in runs:
            if sizes is None:
                names = {str(s): s for s in counted[path].free_symbols}
                got = sympy.sympify(comp.cost.flops, locals=names) - counted[path]
            else:
                got = sympy.sympify(comp.cost.flops).subs({sympy.Symbol(k): v for k, v in sizes.items()})
                got = got.subs({s: sympy.Symbol(str(s)) for s in got.free_symbols}) - counted[path]
            assert sympy.expand(got) == 0, (comp.id, sizes, comp.cost.flops, counted[path])
        compared += 1
    return compared


@pytest.fixture(scope="module")
def gpt2_native():
    loaded = spec.load("atlas.zoo.gpt2:gpt2_small")
    return loaded, pipeline.document(loaded, pipeline.Settings(verify=False))


def test_ldlm_flops_equal_flop_counter(ldlm_doc):
    """At three sizes, none of them the run's (the symbolic comparison is made on GPT-2, Llama and the MoE layer:
    on the LDLM's 276 modules it took 14 s of the suite)."""
    loaded = spec.load("atlas.zoo.ldlm:ldlm")
    at = ({"B": 2, "T": 5}, {"B": 3, "T": 17}, {"B": 5, "T": 29})
    assert _check_against_flop_counter(ldlm_doc, loaded.model, ldlm_doc.inputs, at) >= 40
    own = [c for c in ldlm_doc.components if c.shapes.method == "own"]
    assert [c.id for c in own] == ["frozen_lm"]     # the forward calls its transformer and its head, not it
    assert own[0].cost is None and own[0].cost_reason.startswith("Not counted: the model's forward() does not call")
    for comp in ldlm_doc.components:
        if comp not in own:
            assert comp.cost is not None and comp.cost.flops and comp.cost.activation_bytes, comp.id


def test_native_gpt2_flops_and_a_hand_count_of_causal_attention(gpt2_native):
    loaded, doc = gpt2_native
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) >= 8
    cfg = loaded.model.cfg
    flops = sympy.sympify(doc.cost.flops, locals={"B": B, "T": T})
    causal = sympy.sympify(doc.cost.flops_causal, locals={"B": B, "T": T})
    # per layer, q kᵀ and A v: 2 · B · heads · (query-key pairs) · (head size), twice; dense pairs T², causal T(T+1)/2
    d_head = cfg.d // cfg.heads
    dense_attn = cfg.layers * 2 * 2 * B * cfg.heads * T * T * d_head
    causal_attn = cfg.layers * 2 * 2 * B * cfg.heads * T * (T + 1) / 2 * d_head
    assert sympy.expand(causal - (flops - dense_attn + causal_attn)) == 0
    assert sympy.expand(flops - (36864 * B * T**2 + 247064064 * B * T)) == 0     # GPT-2 small with its LM head
    assert doc.cost_summary.kv_cache_bytes_per_token is None        # its code keeps no cache: nothing to state


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_transformers_flops_equal_flop_counter(name):
    pytest.importorskip("transformers")
    loaded = spec.load(f"{SUITE}:{name}")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) >= 8


def test_moe_layer_flops_equal_flop_counter():
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'golden_models.py'}:moe")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) >= 5
    assert {"softmax", "topk", "scatter"} & set(doc.cost.uncounted) == {"softmax"}   # listed, not silently zero


def test_activation_bytes_against_mem_tracker(gpt2_native):
    """MemTracker (on meta) holds at its peak what autograd saved, plus the block's output; it runs attention
    written out (the T×T weights kept) where the record ran the fused CPU kernel (a log-sum-exp per head)."""
    from torch.distributed._tools.mem_tracker import MemTracker
    loaded, doc = gpt2_native
    cfg = loaded.model.cfg
    block = loaded.model.transformer.h[0]
    ours = sympy.sympify(doc.component("transformer.h").cost.activation_bytes, locals={"B": B, "T": T})
    for t in (16, 32):
        x = torch.empty(2, t, cfg.d, device="meta")
        block.train()
        tracker = MemTracker()
        tracker.track_external(block)
        with tracker:
            block(x)
        measured = next(iter(tracker.get_tracker_snapshot("peak").values()))
        act = next(v for k, v in measured.items() if str(k).endswith("ACT"))
        item = 4
        expected = (ours - B * T * cfg.heads * item + B * cfg.heads * T * T * item + B * T * cfg.d * item)
        assert int(expected.subs({B: 2, T: t})) == act


def test_contractions_with_keyword_operands_equal_flop_counter():
    """baddbmm's batch1 and addmm's mat1 given by name (BLOOM's alibi.baddbmm(batch1=q, ...)) are counted as
    FlopCounterMode counts them, not read by position."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:keyword_attention")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) >= 2
    flops = sympy.sympify(doc.cost.flops, locals={"B": B, "T": T})
    # qkv 2·BT·16·48, scores 2·2B·T·T·8, weights·v 2·2B·T·8·T, out 2·BT·16·16
    assert sympy.expand(flops - (2 * B * T * 16 * 48 + 2 * 2 * (2 * B * T * T * 8) + 2 * B * T * 16 * 16)) == 0


def test_cross_attention_costs_target_times_source_positions():
    """An encoder-decoder's source length S is its own symbol: the cross-attention's scores and weighted values
    cost 2·B·T·S·d each, not 2·B·T²·d."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:seq2seq")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    assert doc.inputs == ("src:int64[B,S]", "tgt:int64[B,T]")
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) >= 5
    S = sympy.Symbol("S", positive=True, integer=True)
    cross = next(c for c in doc.components if c.module_paths[0].endswith("multihead_attn"))
    # q and out projections over T, k and v over S (2·32·32 each per position), then q kᵀ and A v
    assert sympy.expand(sympy.sympify(cross.cost.flops, locals={"B": B, "T": T, "S": S})
                        - (2 * 2048 * B * T + 2 * 2048 * B * S + 2 * 2 * B * T * S * 32)) == 0


@pytest.mark.parametrize("name, total", [
    ("golden_models.py:encoder_layer", lambda B, T, S: 128 * B * T**2 + 16384 * B * T),
    # projections 2B(32·32·T + 16·32·S + 24·32·S + 32·32·T); q kᵀ and A v over S + 1 keys (the learned bias)
    ("contractions.py:cross_attention", lambda B, T, S: 4096 * B * T + 2560 * B * S + 128 * B * T * (S + 1))])
def test_torch_multi_head_attention_flops_equal_flop_counter(name, total):
    """nn.MultiheadAttention runs as one call of F.multi_head_attention_forward: its projections and attention are
    counted (they were listed as uncounted, and the layer cost 0), as FlopCounterMode counts them."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures'}/{name}")          # torch's own layer, then its bare attention
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) >= 1
    S = sympy.Symbol("S", positive=True, integer=True)
    flops = sympy.sympify(doc.cost.flops, locals={"B": B, "T": T, "S": S})
    assert sympy.expand(flops - total(B, T, S)) == 0
    assert "multi_head_attention_forward" not in doc.cost.uncounted


def test_a_negative_position_limit_is_no_limit():
    """XLNet's config says max_position_embeddings = -1 ("no limit"): pages were evaluated at T = -1, and a
    negative FLOP count printed. A limit is a positive size; discovery bounds T by none either."""
    from types import SimpleNamespace

    from atlas.extract.discover.discovery import discover
    from atlas.extract.discover.reference_sizes import reference_sizes

    class Unlimited(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.config = SimpleNamespace(max_position_embeddings=-1, n_ctx=0, vocab_size=128)
            self.embedding = torch.nn.Embedding(128, 8)

        def forward(self, input_ids):
            return self.embedding(input_ids)
    model = Unlimited()
    assert reference_sizes(model, ("B", "T")) == (("B", 1), ("T", 1024))
    assert discover(model).texts() == ("input_ids:int64[B,T]",) and discover(model).bound("T") is None
    model.config.n_positions = 512
    assert reference_sizes(model, ("B", "T")) == (("B", 1), ("T", 512))
    assert discover(model).bound("T").maximum == 512


def test_a_size_fixed_with_dim_is_where_the_pages_evaluate():
    """--dim T=16 records at T = 16: the formulas have it put in, so the pages evaluate them at T = 16 too, not at
    the reference T (they printed the FLOPs at 16 beside "At T = 1024")."""
    from atlas.render.filters import at_reference
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:keyword_attention")
    free = pipeline.document(loaded, pipeline.Settings(verify=False))
    fixed = pipeline.document(loaded, pipeline.Settings(verify=False, fixed_dims=(("T", 16),)))
    assert dict(fixed.cost_summary.reference) == {"B": 1, "T": 16} and fixed.cost_summary.pinned == ()
    assert at_reference(fixed.cost.flops, fixed.cost_summary.reference) == \
        at_reference(free.cost.flops, (("B", 1), ("T", 16)))


def test_causal_counts_at_a_pinned_size_are_exact():
    """At a size the code pinned, T(T+1)/2 was a Python float: '4281088.0*B' in Jamba's causal FLOPs."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:pinned_causal")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    t = dict(doc.cost_summary.pinned)["T"]
    assert "." not in doc.cost.flops_causal
    # the projection 2·T·8·24 per batch row, then q kᵀ and A v over the T(T+1)/2 pairs, 2·8 each
    assert sympy.sympify(doc.cost.flops_causal, locals={"B": B}) == B * (2 * t * 8 * 24 + 2 * 2 * 8 * t * (t + 1) // 2)


def test_a_cost_the_data_decides_says_so():
    """Tokens per expert are the data's to decide: no figure holds at the reference sizes, and the page says why
    rather than leaving the cost out (it was null, with no reason)."""
    from atlas.render.model_pages import render
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:routed_experts")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    # the call that decided the sizes, where the code makes it; not the run's own name for them (u0)
    assert doc.cost is None and doc.root.cost_reason.startswith("Not counted: one forward's cost depends on sizes")
    code = (ROOT / "tests" / "fixtures" / "contractions.py").read_text().splitlines()
    line = next(i for i, text in enumerate(code, 1) if ".nonzero()" in text)
    assert doc.root.cost_reason.endswith(f"here, the sizes returned by Tensor.nonzero (contractions.py:{line}).")
    assert not re.search(r"\bu\d", doc.root.cost_reason)
    assert doc.component("router").cost is not None and doc.component("router").cost_reason is None
    page = render(doc)[f"{doc.slug}/index.md"]
    assert "## Cost {#cost}\n\nNot counted: one forward" in page


def test_recurrent_layers_count_their_weight_products():
    """Each weight matrix of an RNN multiplies one vector per position and sequence. GRU(5, 6), two bidirectional
    layers: 18×5 + 18×6 per direction in the first, 18×12 + 18×6 in the second; the kernel was 'uncounted'."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:gru")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    t = dict(doc.cost_summary.pinned).get("T", T)         # the kernel's decomposition loops over time: T pinned
    assert sympy.sympify(doc.cost.flops, locals={"B": B, "T": T}) == 2 * B * t * 2 * (18 * 5 + 18 * 6 + 18 * 12 + 18 * 6)
    assert "gru" not in doc.cost.uncounted


def test_grouped_experts_are_recorded_in_the_models_own_dtype():
    """torch's meta kernel for grouped_mm takes bfloat16 only (CUDA's rule); the CPU kernel takes float32. A float32
    MoE model was recorded in bfloat16 "because its forward failed": half the activation bytes, bfloat16 outputs,
    and casts on its pages that its code never makes. Its activations are the tokens (B × 8 × 4 bytes), not the
    experts' weights."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:grouped_experts")
    doc = pipeline.document(loaded, pipeline.Settings())
    root = doc.root
    assert doc.input_notes == () and root.shapes.outputs[0].dtype == "float32"
    assert root.equations.verification.verified
    assert (root.cost.flops, root.cost.activation_bytes) == ("128*B", "32*B")       # 2 · B · 8 · 8; x saved


@pytest.mark.parametrize("name, limit", [("table_16", 16), ("assert_32", 32), ("buffer_24", 24)])
def test_reference_and_check_sizes_stay_within_the_positions_the_code_allows(name, limit):
    """A table of 16 positions: the check ran forward() at T = 17 ("not run: index out of range") and pages
    evaluated costs at T = 1024, past the model's own context; the same for nanoGPT's `assert t <= block_size` and
    a buffer of 24 rows cut by T."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:{name}")
    doc = pipeline.document(loaded, pipeline.Settings(inputs=("idx:int64[B,T]",)))
    assert dict(doc.cost_summary.reference)["T"] == limit
    assert all(c.equations.verification.verified for c in doc.components), \
        [(c.id, c.equations.verification.reason) for c in doc.components]


def test_a_dim_bound_holds_for_the_reference_sizes_too():
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:assert_32")
    doc = pipeline.document(loaded, pipeline.Settings(inputs=("idx:int64[B,T]",), verify=False,
                                                      dim_bounds=(("T", None, 12),)))
    assert dict(doc.cost_summary.reference)["T"] == 12


def test_a_dim_past_a_position_table_is_said():
    """--dim T=20 on a table of 16 positions: fake tensors check no index, so the record holds, and the describe
    printed shapes at T = 20 with nothing on stderr; the note says the forward fails there. T = 16 fits: no note."""
    from atlas import i18n
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:table_16")
    past = pipeline.document(loaded, pipeline.Settings(inputs=("idx:int64[B,T]",), verify=False,
                                                       fixed_dims=(("T", 20),)))
    said = [i18n.render(n) for n in past.input_notes if "positions in a table" in i18n.render(n)]
    assert said == ["wpe looks up 20 positions in a table of 16: forward() fails at these sizes, and their shapes "
                    "and counts are the code's arithmetic, not a run's"], past.input_notes
    within = pipeline.document(loaded, pipeline.Settings(inputs=("idx:int64[B,T]",), verify=False,
                                                         fixed_dims=(("T", 16),)))
    assert not [n for n in within.input_notes if "positions in a table" in i18n.render(n)]


def test_counts_from_a_record_at_concrete_sizes_say_which():
    """A forward that runs on no fake tensors is recorded at the probes' sizes: its counts hold there, and the pages
    said "At : 64 FLOPs", naming none. A forward that stops halfway gives no shapes, and no counts at all (a layer
    that ran before the failure had a count at sizes no page states)."""
    from atlas.render.model_pages import render
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:through_numpy"),
                            pipeline.Settings(verify=False))
    b = dict(doc.cost_summary.pinned)["B"]
    assert dict(doc.cost_summary.reference) == {"B": b} and doc.root.cost.flops == str(2 * 4 * 4 * b)
    page = render(doc)[f"{doc.slug}/index.md"]
    assert f"At B = {b}: " in page and "At :" not in page
    stopped = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:stops_halfway"),
                                pipeline.Settings(verify=False))
    assert [c.cost for c in stopped.components] == [None, None]


def test_a_softmax_is_attention_only_over_scores(ldlm_doc):
    """A router's softmax, over logits from a weight matrix, was reported as attention written out; the LDLM's
    latent encoder weighs q kᵀ (softcapped), its frozen GPT-2 runs the fused kernel."""
    experts = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:top_two_experts"),
                                pipeline.Settings(verify=False))
    assert experts.cost_summary.attention is None and experts.root.cost_reason is not None
    kinds = {c.id: c.cost.attention for c in ldlm_doc.components if c.cost is not None}
    assert (kinds[""], kinds["latent_encoder.blocks.attn"], kinds["frozen_lm.transformer.h.attn"]) == \
        ("both", "explicit", "fused")


def test_an_einsum_over_an_ellipsis_is_counted():
    """LongT5's transient-global attention contracts with "...qhd,...khd->...hqk": it counted 0 FLOPs, and its page
    listed einsum with the elementwise operations. FlopCounterMode agrees, symbolically."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:ellipsis_scores")
    doc = pipeline.document(loaded, pipeline.Settings())
    assert "einsum" not in doc.root.cost.uncounted
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) >= 2
    # the projection 2·8·24 per position, then q kᵀ and A v: 2 · 2 heads · T² · 4, twice
    assert sympy.sympify(doc.root.cost.flops, locals={"B": B, "T": T}) == 384 * B * T + 32 * B * T ** 2
    assert all(c.equations.verification.verified for c in doc.components)      # where(scores > 0, 1.0, 0.5) runs


def test_a_module_whose_train_returns_nothing_is_checked():
    """The check's `inst.to(dtype).eval()` was None for it: a traceback, exit 1, nothing built (LeViT)."""
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:train_returns_nothing"),
                            pipeline.Settings(cost=False))
    assert all(c.equations.verification.verified for c in doc.components)


def test_what_weights_alone_make_is_no_activation():
    """weight_norm makes the Linear's weight on every forward, g · v / ‖v‖, from weights alone: the norms it saves
    for the backward pass were counted as activations (a constant beside 16·B), against "weights not counted"."""
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:weight_normed"),
                            pipeline.Settings())
    assert doc.root.cost.activation_bytes == "16*B"            # the input, 4 floats a row, saved for the weight's grad
    assert all(c.equations.verification.verified for c in doc.components)


def test_instances_at_sizes_of_their_own_are_summed_not_multiplied():
    """Two identical strided convs, the second on half the frames (Hubert's feature extractor): one component of two
    instances, "Across its 2 instances" doubled the first one's count, and the model page's table gave the children
    more FLOPs than their parent. Each is now a component of its own, with its own length and its own count, and
    the model's is their sum. Given as [B, 1, T], the stack also ran at the default T = 17, too short for its
    strides; it now starts where discovery says the convs fit."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:strided_stack")
    doc = pipeline.document(loaded, pipeline.Settings())
    assert doc.root.shapes.status.value == "derived" and all(c.equations.verification.verified for c in doc.components)
    tf = sympy.Symbol("T", positive=True, integer=True)
    flops = {c.id: sympy.sympify(c.cost.flops, locals={"B": B, "T": tf}) for c in doc.components}
    assert [c.instances for c in doc.components] == [1, 1, 1, 1] and sorted(flops) == ["", "0", "1", "2"]
    assert sympy.expand(flops["2"] - 96 * B * (sympy.floor(tf / 20) - 1)) == 0     # the third: 4·4·3·2 a frame
    assert sympy.expand(flops[""] - flops["0"] - flops["1"] - flops["2"]) == 0


def test_the_cache_per_token_is_one_sequences_where_the_record_pinned_the_batch():
    """The code loops over the batch in Python, so the record is made at B = 2: the cache's growth per token was
    both sequences' (64 bytes; Reformer's read three times its own). It is one sequence's: 2 × 4 float32."""
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:batch_loop_with_cache"),
                            pipeline.Settings(verify=False))
    assert dict(doc.cost_summary.pinned) == {"B": 2} and doc.cost_summary.kv_cache_bytes_per_token == 32


def test_a_cache_at_a_length_the_code_fixed_is_said_not_counted_per_token(tmp_path, capsys):
    """DeepSeek-V2's rotary table pins T: the cache the forward returns is a number of bytes at that length, no
    formula in T, and the model page said nothing of it, as of a model that keeps none. It says why there is no
    figure per token, and what the state holds at the fixed length: 2 × 4 float32 numbers per token, all of them."""
    spec_ = f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:position_loop_with_cache"
    doc = pipeline.document(spec.load(spec_), pipeline.Settings(verify=False))
    t = dict(doc.cost_summary.pinned)["T"]
    assert doc.cost_summary.kv_cache_bytes_per_token is None
    assert doc.cost_summary.kv_cache_note == (f"not counted per token: the code fixed T = {t}, and the state the "
                                              f"forward returns holds {32 * t:,} bytes for one sequence at that length")
    assert main(["build", spec_, "--docs", str(tmp_path)]) == 0
    capsys.readouterr()
    page = (tmp_path / "positionloopwithcache" / "index.md").read_text()
    assert f"KV cache: not counted per token: the code fixed T = {t}, and the state" in page


def test_an_image_model_has_no_per_token_figures():
    """A CNN with a padding layer its forward never calls: that layer is probed on made-up [B, T] inputs, and the
    T it brought made the model page and the catalog give FLOPs "per token" (per 1,024 of nothing)."""
    from atlas.render.comparison import rows
    from atlas.render.model_pages import render
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'models.py'}:conv_with_spare_padding"),
                            pipeline.Settings(verify=False))
    assert sorted(dict(doc.cost_summary.reference)) == ["B", "H", "W"]    # the spare layer's made-up T: not there
    page = render(doc)[f"{doc.slug}/index.md"]
    assert "per token" not in page and rows([doc])[0].cells["flops"][1] is False


def test_a_size_that_was_1_at_the_runs_sizes_pins_nothing():
    """Given [B, 3, H, W], the run's 6 x 5 image left the map 1 x 1 after two stride-4 convs, and the scale's
    broadcast took its size-1 path: H and W were pinned, and the FLOPs were a constant (DeepLabV3's −99 % at 224 x
    224; GoogLeNet's −84 %, at H = 40). The record is made again at larger sizes: nothing is pinned, the equations
    check at the sizes it was made at, and the FLOPs equal FlopCounterMode's on real forwards at two sizes."""
    from atlas import i18n
    from tests.fixtures.contractions import squeeze_excite
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:squeeze_excite")
    doc = pipeline.document(loaded, pipeline.Settings(inputs=("x:float32[B,3,H,W]",)))
    assert doc.cost_summary.pinned == ()
    assert not any("exact values" in i18n.render(note) for note in doc.input_notes)
    assert all(c.equations.verification.verified for c in doc.components)
    flops = sympy.sympify(doc.cost.flops)
    assert {str(s) for s in flops.free_symbols} == {"B", "H", "W"}
    model = squeeze_excite().eval()
    for b, h, w in ((1, 224, 224), (2, 193, 161)):
        with torch.no_grad(), flop_reference.flop_counter() as counter:
            model(torch.randn(b, 3, h, w))
        assert flops.subs({"B": b, "H": h, "W": w}) == counter.get_total_flops()


def test_a_branch_the_runs_sizes_decided_is_taken_as_at_the_reference_sizes():
    """At T = 6 there is one window and the mixing branch is not run; at the reference T = 1024 it is. The record is
    made again at T = 1024, so the counts the pages print there hold (Swin's attention FLOPs at 224 x 224 were
    2.7 times too many, from a record with one window per map); equal to FlopCounterMode's on a real forward."""
    from tests.fixtures.contractions import windows
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:windows")
    doc = pipeline.document(loaded, pipeline.Settings(inputs=("x:float32[B,T,8]",)))
    assert dict(doc.cost_summary.reference)["T"] == 1024
    assert doc.component("mix").cost is not None
    assert all(c.equations.verification.verified for c in doc.components)
    flops = sympy.sympify(doc.cost.flops)
    model = windows().eval()
    for b, t in ((1, 1024), (2, 1000)):
        with torch.no_grad(), flop_reference.flop_counter() as counter:
            model(torch.randn(b, t, 8))
        assert flops.subs({"B": b, "T": t}) == counter.get_total_flops()


def test_a_mixture_of_experts_says_the_6n_rule_overstates_it(ldlm_files):
    """OLMoE's page set 7.48 GFLOPs a token, exact, beside 41.5 GFLOPs by the 6N rule, with no word on why: N counts
    all 64 experts, a token runs 8. A model whose architecture has experts says so; one without does not."""
    from atlas.render.model_pages import render
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:grouped_experts_lm"),
                            pipeline.Settings())
    assert [(t.value, t.component) for t in doc.architecture.experts] == [(2, "blocks.experts")]
    assert doc.root.cost.flops == "512*B*T"                  # per token: two blocks of 2·8·8, and the head's 2·8·16
    page = render(doc)[f"{doc.slug}/index.md"]
    said = "N counts every expert's weights, while each token runs only the experts its router picks"
    assert said in page and "by the 6N rule with N = 528 trained parameters, 3.17 kFLOPs." in page
    assert "by the 6N rule" in ldlm_files["ldlm/index.md"] and said not in ldlm_files["ldlm/index.md"]


def test_a_cache_at_a_pinned_batch_and_length_is_one_sequences():
    """With the batch pinned too, the state's bytes were the whole batch's, said of one sequence."""
    spec_ = f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:batch_and_position_loop_with_cache"
    doc = pipeline.document(spec.load(spec_), pipeline.Settings(verify=False))
    pinned = dict(doc.cost_summary.pinned)
    assert set(pinned) == {"B", "T"} and doc.cost_summary.kv_cache_bytes_per_token is None
    assert f"holds {32 * pinned['T']:,} bytes for one sequence" in doc.cost_summary.kv_cache_note


def test_sizes_all_given_the_cost_is_a_number_said_once(capsys):
    """With every input size given as a number there is no size to evaluate the counts at: the page read
    "At : 4.87 MFLOPs." and the table "forward at ; the model's", an empty list of sizes."""
    from conftest import fixture_spec

    from atlas.render import model_pages
    doc = pipeline.describe(fixture_spec("two_layer_mlp"), ["input:float32[2,3]"])
    assert doc.cost_summary.reference == ()
    flops = doc.cost.flops
    page = model_pages.render(doc)[f"{doc.slug}/index.md"]
    assert "At :" not in page and f"$$\nF = {int(flops):,}\n$$\n\nThat is ".replace(",", "{,}") in page
    assert "**Where the FLOPs go**\n\n| " in page and "Where the FLOPs go** (" not in page
    assert main(["describe", fixture_spec("two_layer_mlp"), "--input", "input:float32[2,3]"]) == 0
    table = capsys.readouterr().out
    assert " at ;" not in table and f"FLOPs of one instance's forward; the model's: {int(flops)}" in table


def test_images_are_counted_at_the_configs_image_size():
    """A config that states its image size is where an image model's costs are evaluated (MobileViT's small
    config, 64 x 64, was counted at 224 x 225)."""
    from conftest import fixture_spec
    doc = pipeline.describe(fixture_spec("small_image_convnet"))
    assert dict(doc.cost_summary.reference) == {"B": 1, "H": 32, "W": 32}
    assert sympy.sympify(doc.cost.flops).subs({"B": 1, "H": 32, "W": 32}) == 2 * 16 * 16 * 4 * 27


def test_probes_on_the_meta_device_take_a_kernels_dtype():
    """A record whose T the code pins has its shapes from probes on the meta device, where F.grouped_mm takes
    bfloat16 only: the probes ran on a CPU copy ("the meta-device forward failed"), Jamba's too. That call alone
    now runs in bfloat16 there, and the shapes keep the model's dtype."""
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:pinned_grouped_experts"),
                            pipeline.Settings(verify=False))
    assert not any("meta-device forward failed" in str(note) for note in doc.input_notes)
    experts = doc.component("blocks.experts")
    assert experts.shapes.method == "meta" and [t.dtype for t in experts.shapes.outputs] == ["float32"]


def test_rnn_cells_count_their_weight_products():
    """A GRUCell and an LSTMCell stepped over T positions in Python: each step multiplies one vector per sequence by
    each weight matrix, 2 · B · (18×5 + 18×6) for the GRU cell and 2 · B · (12×6 + 12×3) for the LSTM cell. The cells
    counted 0, "not counted: gru_cell", and the model page called the rest exact."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:cell_loop")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    pinned = dict(doc.cost_summary.pinned)                # the Python loop over time pins the sizes
    b, t = pinned.get("B", B), pinned.get("T", T)
    per_step = {"gru": 2 * b * (18 * 5 + 18 * 6), "lstm": 2 * b * (12 * 6 + 12 * 3)}
    for name, flops in per_step.items():
        comp = doc.component(name)
        assert sympy.sympify(comp.cost.flops, locals={"B": B}) == flops, name
        assert not {"gru_cell", "lstm_cell"} & set(comp.cost.uncounted)
    assert sympy.sympify(doc.cost.flops, locals={"B": B, "T": T}) == t * sum(per_step.values())


def test_a_custom_autograd_function_leaves_no_torch_internals_among_the_uncounted():
    """autograd.Function.apply asks torch.ops.prim for its input's device: "Not counted in F: device.default" was
    printed beside the model's own sign."""
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:binary_linear"),
                            pipeline.Settings())
    assert doc.root.cost.uncounted == ("sign",) and doc.root.cost.flops == "64*B"
    assert doc.root.equations.verification.verified


def test_transposed_convolutions_count_each_input_elements_products():
    """A DCGAN generator's FLOPs were four to sixteen times FlopCounterMode's: a transposed convolution was counted
    as 2 · numel(output) · C_in · k, and a 3-d one not at all ("not counted: conv_transpose3d")."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:transposed_convs")
    doc = pipeline.document(loaded, pipeline.Settings(verify=False))
    assert _check_against_flop_counter(doc, loaded.model, doc.inputs) == 4
    H, W = (sympy.Symbol(s, positive=True, integer=True) for s in "HW")
    flops = {c.id: sympy.sympify(c.cost.flops, locals={"B": B, "H": H, "W": W}) for c in doc.components}
    assert sympy.expand(flops["up2"] - 2 * (B * 8 * H * W) * 2 * 16) == 0       # C_out/groups = 2, 4 × 4 kernel
    assert sympy.expand(flops["up1"] - 2 * (B * 8 * H * W) * 2 * 3) == 0
    assert sympy.expand(flops["up3"] - 2 * (B * 4 * 2 * H * 2 * W) * 2 * 9) == 0    # on up2's map, twice as large
    assert not doc.root.cost.uncounted


def test_matrix_vector_and_dot_products_are_contractions():
    """spectral_norm's σ = uᵀ(W v) by torch.mv and torch.vdot: "Not counted in F: mv, vdot (F counts contractions
    only)" contradicted itself, and F read 0. W v is 2 · 4 · 6 FLOPs, the dot 2 · 4."""
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:power_iteration"),
                            pipeline.Settings())
    assert sympy.expand(sympy.sympify(doc.root.cost.flops, locals={"B": B}) - (2 * 4 * 6 + 2 * 4 + 2 * B * 4 * 6)) == 0
    assert not {"mv", "vdot"} & set(doc.root.cost.uncounted)
    assert doc.root.equations.verification.verified


def test_a_module_called_twice_counts_both_calls_in_all():
    """A Siamese encoder runs on two inputs: the model page's "Where the FLOPs go" gave it one call, 49.6% of the
    model beside a head's 0.8% (a decoder stepped five times read 16.9% where it is 84.6%). Its calls are counted:
    "in all" is both, the shares of the model's children add up to the whole, and its page says so."""
    from atlas.render import model_pages
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:shared_encoder"),
                            pipeline.Settings(verify=False))
    encoder, head = doc.component("encoder"), doc.component("head")
    assert (encoder.cost.calls, head.cost.calls, head.cost.flops_all_calls) == (2, 1, None)
    assert sympy.sympify(encoder.cost.flops, locals={"B": B}) == 2 * B * (8 * 16 + 16 * 16)
    assert sympy.sympify(encoder.cost.flops_all_calls, locals={"B": B}) == 2 * 2 * B * (8 * 16 + 16 * 16)
    rows = {r.comp.id: r for r in model_pages.cost_rows(doc)}
    assert rows["encoder"].total == 2 * rows["encoder"].each and rows["encoder.0"].total == 2 * rows["encoder.0"].each
    assert rows["encoder"].share + rows["head"].share == 1
    from atlas.render import page_paths
    files = model_pages.render(doc)
    assert "Called 2 times in one forward: 1.54 kFLOPs in all." in files[page_paths.page_path(doc, encoder)]
    assert "| 1 (2 calls) | 768 FLOPs | 1.54 kFLOPs | 92.3% |" in files[page_paths.page_path(doc, doc.root)]
    assert "Llamado 2 veces en un forward: 1,54 kFLOPs en total." in files[page_paths.localized(
        page_paths.page_path(doc, encoder), "es")]


def test_repeated_blocks_are_called_once_each(ldlm_doc):
    """The LDLM's six encoder blocks are recorded once and the rest taken from it: each instance is still one call,
    and "in all" is the instances' (the first count of calls read the one recorded call for all six)."""
    repeated = [c for c in ldlm_doc.components if c.cost is not None and c.instances > 1]
    assert len(repeated) > 10
    assert all((c.cost.calls, c.cost.flops_all_calls) == (c.instances, None) for c in repeated), \
        [(c.id, c.instances, c.cost.calls) for c in repeated if c.cost.calls != c.instances]


def test_a_towers_outputs_handed_back_are_no_cache():
    """A model that returns its tower's (hidden states, pooled) beside its scores keeps no cache; the page said "KV
    cache: 128 bytes per token" (the hidden width × 4 bytes), as OWL-ViT's and X-CLIP's did."""
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:tower_outputs_returned"),
                            pipeline.Settings(verify=False))
    assert doc.cost_summary.kv_cache_bytes_per_token is None and doc.cost_summary.kv_cache_note is None


def test_an_encoder_decoders_source_length_has_its_own_limit():
    """Speech2Text's reference S was capped by max_target_positions (64 frames with a target of 64 positions),
    though its source limit is max_source_positions: each length takes its own."""
    from types import SimpleNamespace

    from atlas.extract.discover import reference_sizes
    model = torch.nn.Linear(2, 2)
    model.config = SimpleNamespace(max_target_positions=64, max_source_positions=256)
    assert dict(reference_sizes.reference_sizes(model, ["B", "T", "S"])) == {"B": 1, "T": 64, "S": 256}
    model.config = SimpleNamespace(max_position_embeddings=512)
    assert dict(reference_sizes.reference_sizes(model, ["B", "T", "S"])) == {"B": 1, "T": 512, "S": 512}


def _saved_bytes(model, x) -> int:
    """What autograd saves in one forward of `model` in evaluation mode, each storage once, weights left out."""
    weights = {p.untyped_storage()._cdata for p in model.parameters()}
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage._cdata not in weights:
            seen[storage._cdata] = storage.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model.eval()(x)
    return sum(seen.values())


def test_a_record_on_the_cpu_counts_what_autograd_saves(capsys):
    """A forward that runs only on a CPU copy (it reads its input through NumPy) is recorded with gradients on, as
    the symbolic run is: its activation memory is what autograd saves (it read 0 B: Longformer's page said
    "M = 0"). One that runs only without gradients says its memory was not measured."""
    from fixtures.models import reads_numpy
    assert main(["describe", f"{FIXTURES}:reads_numpy", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    B = data["cost_reference"]["pinned"]["B"]
    assert int(data["totals"]["cost"]["activation_bytes"]) == _saved_bytes(reads_numpy(), torch.randn(B, 4)) == 16 * B
    assert main(["describe", f"{FIXTURES}:writes_its_weight", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["cost"]["activation_bytes"] is None and int(data["totals"]["cost"]["flops"]) == 32 * B


class LastRows(torch.nn.Module):
    """Adds the last T rows of a 64-row table, found as MPT finds its ALiBi rows: max(0, 64 - T)."""

    atlas_inputs = ("x:float32[B,T,8]",)

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(1, 64, 8))
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        start = max(0, 64 - x.size(1))
        return self.fc(x + self.table[:, start:])


def test_a_reference_size_the_record_holds_below_says_where():
    """The record holds for T < 64 (the branch of max it took): costs are at T = 63, and the page said nothing of
    why (MPT's read "At B = 1, T = 255" beside a context of 256)."""
    doc = pipeline.document(spec.Loaded("inline", LastRows(), None), pipeline.Settings())
    line = next(n for n, text in enumerate(open(__file__).read().splitlines(), 1) if "max(0, 64 - x.size(1))" in text)
    assert dict(doc.cost_summary.reference)["T"] == 63
    assert doc.cost_summary.capped == (("T", 63, f"test_cost.py:{line}"),)
    from atlas.render import model_pages
    page = model_pages.render(doc)["lastrows/index.md"]
    assert f"T = 63: the largest size at which the recorded forward holds (`test_cost.py:{line}`)" in page
