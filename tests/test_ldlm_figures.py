"""The seed pages' figures, out of the LDLM code: from the data and from the rendered pages."""

import re

import pytest
import torch

from atlas.extract import accounting


def comp(doc, cid):
    return doc.component(cid)


SEED = [
    # component id, per instance, instances, total
    ("latent_encoder.blocks.mlp.layer_norm", 1536, 6, 9216),
    ("latent_encoder.blocks.attn", 3540608, 6, 3540608 * 6),
    ("latent_encoder.blocks.mlp", 4723968, 6, 4723968 * 6),
    ("latent_encoder.blocks", 8264576, 6, 49587456),
]


@pytest.mark.parametrize("cid,per,instances,total", SEED)
def test_seed_figures_in_data(ldlm_doc, cid, per, instances, total):
    c = comp(ldlm_doc, cid)
    assert (c.parameters_per_instance, c.instances, c.parameters_total) == (per, instances, total)


def test_model_totals(ldlm_doc):
    t = ldlm_doc.totals
    assert t.frozen == 124_442_112
    assert comp(ldlm_doc, "frozen_lm").parameters_per_instance == 124_439_808
    assert t.trained + t.frozen == t.parameters
    assert ldlm_doc.published.trained == 306_011_162


def test_invariant_against_torch(ldlm_doc):
    from atlas.load.spec import load
    model = load("atlas.zoo.ldlm:ldlm").model
    assert sum(p.numel() for p in model.parameters()) == ldlm_doc.totals.parameters
    trained, frozen = accounting.tree_total(ldlm_doc)
    assert trained + frozen - ldlm_doc.totals.parameters == 0


def test_layernorm_rows(ldlm_doc):
    ln = comp(ldlm_doc, "latent_encoder.blocks.mlp.layer_norm")
    assert [(r.label, r.factors, r.count, r.trained) for r in ln.rows] == [
        ("Learned gain", (768,), 768, True), ("Learned bias", (768,), 768, True)]


def test_linear_rows_in_math_orientation(ldlm_doc):
    qkv = comp(ldlm_doc, "latent_encoder.blocks.attn.qkv")
    (row,) = qkv.rows
    assert row.shape == (2304, 768) and row.factors == (768, 2304) and row.count == 1769472


def test_tied_head_counted_once(ldlm_doc):
    head = comp(ldlm_doc, "frozen_lm.lm_head")
    (row,) = head.rows
    assert not row.counted and row.shared_with == ("frozen_lm.transformer.wte.weight",)
    wte = comp(ldlm_doc, "frozen_lm.transformer.wte")
    assert wte.rows[0].counted and wte.rows[0].shared_with == ("frozen_lm.lm_head.weight",)


def test_breadcrumb_and_names(ldlm_doc, ldlm_files):
    page = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    assert "[LDLM](../../../index.md) › [Latent encoder](../../index.md) › [6 encoder blocks](../index.md) › [MLP](index.md)" in page
    assert "\n# LayerNorm\n" in page


def test_layernorm_page(ldlm_files):
    page = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    assert "**parameters:** 1,536 · × 6 blocks = 9,216" in page
    assert "| Learned gain `weight` | 768 | 768 |" in page
    assert "| Learned bias `bias` | 768 | 768 |" in page
    assert "| **Per-instance total** | | **1,536** |" in page
    assert "Across 6 blocks: 1,536 × 6 = 9,216 parameters." in page
    assert 'atlas-tag--learned">learned<' in page


def test_block_page(ldlm_files):
    page = ldlm_files["ldlm/latent_encoder/blocks/index.md"]
    assert "**parameters:** 8,264,576 · × 6 blocks = 49,587,456" in page
    assert "| [Perceiver attention](attn/index.md) | 3,540,608 across its components | 3,540,608 |" in page
    assert "| [MLP](mlp/index.md) | 4,723,968 across its components | 4,723,968 |" in page
    assert "124,442,112 are frozen" in page


def test_attention_and_mlp_pages(ldlm_files):
    assert "**parameters:** 3,540,608 · × 6 blocks" in ldlm_files["ldlm/latent_encoder/blocks/attn/index.md"]
    assert "**parameters:** 4,723,968 · × 6 blocks" in ldlm_files["ldlm/latent_encoder/blocks/mlp/index.md"]
    assert "| Weight matrix `weight` | 768 × 2304 | 1,769,472 |" in ldlm_files["ldlm/latent_encoder/blocks/attn/qkv.md"]


def test_model_page_totals_and_published(ldlm_files):
    page = ldlm_files["ldlm/index.md"]
    assert "| Frozen | 124,442,112 |" in page
    assert "| Trained | 306,011,162 | 191,710,464 | −114,300,698 |" in page
    assert "[GPT-2](frozen_lm/index.md) 124,439,808" in page
    assert "[Feature standardizer](feature_standardizer.md) 1,536" in page
    assert "[mask vector (Latent decoder)](latent_decoder/index.md) 768" in page
    assert "inferred, not confirmed" in page
    for name in ("Denoiser", "Latent decoder", "Feature standardizer"):
        assert re.search(rf"- \[{name}\]\([^)]+\): ", page), name


def test_reconstruction_note_on_pages(ldlm_files):
    assert '!!! warning "Reconstruction"' in ldlm_files["ldlm/denoiser/index.md"]
    assert "Part of [Denoiser]" in ldlm_files["ldlm/denoiser/layers/mlp/index.md"]
    assert "Reconstruction" not in ldlm_files["ldlm/latent_encoder/blocks/index.md"]


def test_meta_device_walk_allocates_nothing():
    from atlas.load.spec import load
    model = load("atlas.zoo.ldlm:ldlm").model
    assert all(p.device.type == "meta" for p in model.parameters())
    assert torch.device("meta") == next(model.parameters()).device
