"""torch.nn reference pages: generated from the real class, examples executed, facts checked."""

import pytest
import torch
from torch import nn

from atlas import reference
from atlas.errors import AtlasError


@pytest.fixture(scope="module")
def refs(ldlm_doc):
    return {r.slug: r for r in (reference.page(c, [ldlm_doc]) for c in reference.used_classes([ldlm_doc]))}


@pytest.fixture(scope="module")
def ref_files(refs, ldlm_doc):
    from atlas import render
    return render.render_reference(list(refs.values()), [ldlm_doc])


def test_ldlm_classes_have_pages(refs):
    assert set(refs) == {"layernorm", "linear", "gelu", "dropout", "embedding", "silu"}


def test_layernorm_page_has_the_seed_parts(ref_files):
    page = ref_files["reference/layernorm.md"]
    for part in ("## Definition", "## Parameters", "## Math", "## Examples", "### 3D and 4D inputs",
                 "### Inside a Transformer block", "### Without learned parameters",
                 "## Normalization layers compared", "## FAQ", "## Use cases", "## Used in"):
        assert part in page, part
    assert "torch.nn.LayerNorm(normalized_shape, eps=1e-05, elementwise_affine=True, bias=True)" in page
    assert "- **`eps`**" in page and "default `1e-05`" in page
    assert f"As defined in torch {torch.__version__}." in page
    from conftest import page_math
    assert r"\varepsilon &= 10^{-5}" in page_math(page)


def test_layernorm_examples_print_correct_shapes(refs):
    out = {e.title: e.output for e in refs["layernorm"].examples}
    assert "input shape: (4, 10)\noutput shape: (4, 10)" in out["Basic use"]
    assert "mean of each row: [0.0, 0.0, 0.0, 0.0]" in out["Basic use"]
    assert out["3D and 4D inputs"] == "3D: (2, 10, 64) -> (2, 10, 64)\n4D: (2, 8, 8, 128) -> (2, 8, 8, 128)"
    assert out["Inside a Transformer block"] == "input shape: (4, 100, 512)\noutput shape: (4, 100, 512)"
    assert "parameters: 0" in out["Without learned parameters"]


def test_every_example_ran(refs):
    for ref in refs.values():
        assert ref.examples and all(e.output for e in ref.examples), ref.cls
        assert ref.equations.verification.verified


def test_an_example_that_raises_fails(tmp_path):
    with pytest.raises(AtlasError, match="the example raised ZeroDivisionError"):
        reference.run_example("print(1 / 0)", "test example")


def test_used_in_and_links(refs, ref_files, ldlm_files):
    ln = refs["layernorm"]
    used = {u.component: u.instances for u in ln.used_in}
    assert used["latent_encoder.blocks.mlp.layer_norm"] == 6 and used["frozen_lm.transformer.h.ln_1"] == 12
    page = ref_files["reference/layernorm.md"]
    assert "[LDLM › LayerNorm](../ldlm/latent_encoder/blocks/mlp/layer_norm.md) `latent_encoder.blocks.mlp.layer_norm`, × 6" in page
    from conftest import ROOT     # the committed page, built with its reference links (kept current by atlas check)
    component = (ROOT / "docs" / "ldlm" / "latent_encoder" / "blocks" / "mlp" / "layer_norm.md").read_text()
    assert "**reference:** [torch.nn.LayerNorm](../../../../reference/layernorm.md)" in component


def _batch_dependent(module: nn.Module, shape) -> bool:
    """Does one sample's output change when another sample in the batch changes?"""
    module.train()
    torch.manual_seed(0)
    x = torch.randn(*shape)
    y = module(x)
    x2 = x.clone()
    x2[1:] = torch.randn_like(x2[1:]) * 3 + 2
    return not torch.allclose(module(x2)[0], y[0])


FACT_MODULES = {
    "torch.nn.BatchNorm1d": (nn.BatchNorm1d(4), (6, 4, 5)), "torch.nn.LayerNorm": (nn.LayerNorm(5), (6, 4, 5)),
    "torch.nn.InstanceNorm1d": (nn.InstanceNorm1d(4), (6, 4, 5)), "torch.nn.GroupNorm": (nn.GroupNorm(2, 4), (6, 4, 5)),
    "torch.nn.ReLU": (nn.ReLU(), (6, 4)), "torch.nn.GELU": (nn.GELU(), (6, 4)), "torch.nn.SiLU": (nn.SiLU(), (6, 4)),
    "torch.nn.Tanh": (nn.Tanh(), (6, 4)),
}


def test_family_facts_are_true_of_the_code():
    checked = 0
    for family in reference.families().values():
        for member in family["members"]:
            module, shape = FACT_MODULES[member["class"]]
            assert _batch_dependent(module, shape) == member["batch_dependent"], member["class"]
            checked += 1
    assert checked == 8
