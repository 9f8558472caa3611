"""The data the model pages' size and dtype calculator reads: element counts where a figure depends on a dtype,
read off the record and checked against the model's own configuration and against the bytes in the model's dtype."""

import json
import os

import pytest
import sympy
import torch
from conftest import ROOT

from atlas import pipeline
from atlas.load import spec
from atlas.render.calculator_data import calculator_data, dtype_bytes, dtype_name, polynomial

os.environ.setdefault("HF_HUB_OFFLINE", "1")
CONTRACTIONS = ROOT / "tests" / "fixtures" / "contractions.py"
LLAMA = "atlas.zoo.transformers_models:llama3_8b"


def _atlas_json(site, slug: str) -> dict:
    return json.loads((site / slug / "atlas.json").read_text())


def _element_size(dtype: str) -> int:
    return torch.empty(0, dtype=getattr(torch, dtype)).element_size()


def test_llama_kv_cache_elements_are_its_configs_layers_kv_heads_and_head_dim(built_site):
    """Llama 3 8B's cache per token, in elements: keys and values (2) of every layer, each KV head's head_dim
    numbers, as its LlamaConfig sets them (2 · 32 · 8 · 128); its bytes are those in the model's dtype."""
    model = spec.load(LLAMA).model
    config = model.config
    data = _atlas_json(built_site[0], "llama-3-8b")["cost_reference"]
    expected = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim
    assert data["kv_cache_elements_per_token"] == expected
    assert data["dtype"] == str(next(model.parameters()).dtype).removeprefix("torch.")
    assert data["kv_cache_bytes_per_token"] == expected * _element_size(data["dtype"])


def test_activation_bytes_are_floating_elements_in_the_dtype_and_the_rest(built_site):
    """On every documented model whose activations were measured: the bytes in the model's dtype are its floating
    elements at that dtype's size plus the integers and masks, in their own. Llama keeps no dropout mask and routes
    no token: the only integers it saves are its input ids, which the embedding keeps for its backward pass, 8 bytes
    (int64) each, B · T of them. OLMoE's router keeps more: the experts it picked."""
    site = built_site[0]
    checked = 0
    for path in sorted(site.glob("*/atlas.json")):
        data = json.loads(path.read_text())
        for c in [data["totals"]["cost"], *(comp["cost"] for comp in data["components"])]:
            if not c or c["activation_bytes"] is None:
                continue
            size = _element_size(data["cost_reference"]["dtype"])
            parts = [sympy.sympify(c[k]) for k in ("activation_bytes", "activation_elements", "activation_fixed_bytes")]
            assert sympy.expand(parts[0] - size * parts[1] - parts[2]) == 0, path
            checked += 1
    assert checked > 100
    llama = _atlas_json(site, "llama-3-8b")
    assert llama["example_inputs"] == ["input_ids:int64[B,T]"] and llama["totals"]["cost"]["activation_fixed_bytes"] \
        == "8*B*T"
    olmoe = sympy.sympify(_atlas_json(site, "olmoe-1b-7b")["totals"]["cost"]["activation_fixed_bytes"])
    assert sympy.expand(olmoe - 8 * sympy.Symbol("B") * sympy.Symbol("T")) != 0


def test_a_float_input_saved_for_a_weights_gradient_is_elements_and_no_fixed_bytes():
    """weight_norm's Linear keeps its input, 4 float32 numbers a row, for its weight's gradient: 16 bytes a row are
    4 elements, and nothing of it keeps its own dtype."""
    doc = pipeline.document(spec.load(f"{CONTRACTIONS}:weight_normed"), pipeline.Settings())
    cost = doc.root.cost
    assert (cost.activation_bytes, cost.activation_elements, cost.activation_fixed_bytes) == ("16*B", "4*B", "0")


def test_the_cache_elements_per_token_are_one_sequences():
    """The batch looped over in Python (record at B = 2): one sequence's cache grows by 2 × 4 float32 numbers per
    token, 32 bytes and 8 elements."""
    doc = pipeline.document(spec.load(f"{CONTRACTIONS}:batch_loop_with_cache"), pipeline.Settings(verify=False))
    summary = doc.cost_summary
    assert (summary.kv_cache_bytes_per_token, summary.kv_cache_elements_per_token, summary.dtype) == \
        (32, 8, "float32")
    data = calculator_data(doc)
    assert data["kv_cache_elements_per_token"] == 8 and data["pinned"] == {"B": 2}    # B is no input: held at 2
    assert [s["symbol"] for s in data["sizes"]] == [s for s, _ in summary.reference if s != "B"]


def test_the_calculator_reads_polynomials_only():
    assert polynomial("524288*B*T**2 + 15009316864*B*T", ["B", "T"]) == "524288*B*T**2 + 15009316864*B*T"
    assert polynomial("3*B*T/2 + 7", ["B", "T"]) == "3*B*T/2 + 7"
    assert polynomial("96*B*(floor(T/20) - 1)", ["B", "T"]) is None     # no polynomial: not recomputed
    assert polynomial("4*B*H", ["B", "T"]) is None                      # a size the calculator has no input for
    assert polynomial(None, ["B"]) is None


def test_dtype_names_and_sizes():
    assert [dtype_name(d) for d in ("float32", "bfloat16", "float16")] == ["fp32", "bf16", "fp16"]
    assert [dtype_bytes(d) for d in ("fp32", "bf16", "fp8", "int4", "fp16")] == [4, 2, 1, 0.5, 2]
    with pytest.raises(ValueError, match="no dtype 'int3'"):
        dtype_bytes("int3")


def test_a_figure_whose_formula_is_no_polynomial_is_said_not_recomputed():
    """Hubert-like strided convs: their FLOPs are a floor of T, which the calculator does not evaluate; it keeps the
    figure's row and says it is not recomputed, instead of dropping it or guessing."""
    doc = pipeline.document(spec.load(f"{CONTRACTIONS}:strided_stack"), pipeline.Settings())
    data = calculator_data(doc)
    assert "floor" in doc.root.cost.flops and data["flops"] is None and "flops" in data["unread"]
