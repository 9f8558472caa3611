"""Equations: derived from the code, filled with real hyper-parameters, verified against forward()."""

import json
import shutil

import pytest
import torch
from torch import nn

from atlas import pipeline, shapes, spec, walk
from atlas.cli import main
from atlas.equations.enrich import enrich
from atlas.equations.ops import plain_tex
from atlas.model import EquationStatus
from conftest import ROOT, fixture_spec

SOFTCAP = r"F = 50\,\tanh\!\Big(\frac{S}{50\,\sqrt{64}}\Big)"
Q_NORM = (r"{\htmlClass{atlas-stream-q}{Q}} = \gamma_{\mathrm{q\,norm}}\odot \frac{{\htmlClass{atlas-stream-q}{q}}^{h}}"
          r"{\max\!\big(\frac{\lVert {\htmlClass{atlas-stream-q}{q}}^{h}\rVert_2}{\sqrt{64}},\;\varepsilon\big)}")
CAT_K = (r"{\htmlClass{atlas-stream-k}{k}} = [\,{\htmlClass{atlas-stream-k}{k_{a}}};\;"
         r"{\htmlClass{atlas-stream-k}{k_{b}}}\,]")
CAT_V = (r"{\htmlClass{atlas-stream-v}{v}} = [\,{\htmlClass{atlas-stream-v}{v_{a}}};\;"
         r"{\htmlClass{atlas-stream-v}{v_{b}}}\,]")


def page_of(files, path):
    """A page's text as a reader sees the math: without the symbol keys the site uses for highlighting."""
    return plain_tex(files[path])


def test_layernorm_page(ldlm_files):
    page = page_of(ldlm_files, "ldlm/latent_encoder/blocks/mlp/layer_norm.md")
    assert r"\mu_d(x) &= \frac{1}{768}\sum_{j=1}^{768}x_j" in page
    assert r"\sigma_d^2(x) &= \frac{1}{768}\sum_{j=1}^{768}\left(x_j-\mu\right)^{2}" in page
    assert r"y &= \gamma\odot \frac{x-\mu}{\sqrt{\sigma^2+\varepsilon}}+\beta" in page
    assert r"\varepsilon &= 10^{-5}" in page
    assert "Center and scale each position's features, then apply learned gain and bias." in page


def test_attention_page(ldlm_files):
    page = page_of(ldlm_files, "ldlm/latent_encoder/blocks/attn/index.md")
    for line in (SOFTCAP, Q_NORM, CAT_K, CAT_V, r"A = \operatorname{softmax}\!\big(F\big)"):
        assert line in page, line
    # p_a is split at the real width: q, k_a, v_a are columns 1-768, 769-1536, 1537-2304
    assert r"{\htmlClass{atlas-stream-v}{v_{a}}} = {p_{a}}_{1537:2304}" in page


def test_mlp_page_exact_gelu(ldlm_files):
    page = page_of(ldlm_files, "ldlm/latent_encoder/blocks/mlp/index.md")
    assert r"g = \operatorname{dropout}_{0.1}\!\left(h\odot \Phi\left(h\right)\right)" in page


def test_block_page(ldlm_files):
    page = page_of(ldlm_files, "ldlm/latent_encoder/blocks/index.md")
    assert "$$\nu' = u+\\Delta_{\\mathrm{attn}}\n$$" in page
    assert "$$\ny = u'+\\Delta_{\\mathrm{mlp}}\n$$" in page
    assert '??? abstract "All 30 steps"' in page
    assert "**Perceiver attention**" in page and "**MLP**" in page
    assert SOFTCAP in page


def test_every_ldlm_component_verified(ldlm_doc):
    unverified = [c.id for c in ldlm_doc.components
                  if not (c.equations.verification and c.equations.verification.verified)]
    assert unverified == []
    assert len(ldlm_doc.components) == 76


def test_json_keys(ldlm_doc):
    from atlas import serialize
    comp = {c["id"]: c for c in serialize.as_dict(ldlm_doc)["components"]}["latent_encoder.blocks.attn"]
    assert SOFTCAP in [plain_tex(s["tex"]) for s in comp["equations"]["steps"]]
    v = comp["verification"]
    assert v["verified"] is True and v["tolerance"] == 1e-9 and v["max_error"] == 1e-12 and v["reason"] is None


# -- mutations of the reference code ------------------------------------------------------------
BLOCK_INPUTS = ["u:float32[B,T,768]", "h:float32[B,T,768]"]


@pytest.fixture
def ldlm_copy(tmp_path):
    path = tmp_path / "ldlm_copy.py"
    shutil.copy(ROOT / "atlas" / "zoo" / "ldlm.py", path)
    path.write_text(path.read_text() + "\n\ndef block():\n    return EncoderBlock(LDLMConfig())\n")
    return path


def block_doc(path, mutate=None):
    if mutate:
        old, new = mutate
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))
    return pipeline.describe(f"{path}:block", BLOCK_INPUTS)


def steps(doc, cid):
    return "\n".join(plain_tex(s.tex) for s in doc.component(cid).equations.steps)


def test_mutation_eps(ldlm_copy):
    doc = block_doc(ldlm_copy, ("eps: float = 1e-5", "eps: float = 1e-6"))
    assert r"\varepsilon = 10^{-6}" in steps(doc, "mlp.layer_norm")
    assert r"\varepsilon = 10^{-6}" in steps(doc, "attn")
    assert doc.component("mlp.layer_norm").equations.verification.verified


def test_mutation_tanh_gelu(ldlm_copy):
    doc = block_doc(ldlm_copy, ("self.gelu = nn.GELU()", 'self.gelu = nn.GELU(approximate="tanh")'))
    text = steps(doc, "mlp.gelu")
    assert r"\tanh" in text and r"\Phi" not in text and "0.044715" in text
    assert doc.component("mlp").equations.verification.verified


def test_mutation_softcap(ldlm_copy):
    doc = block_doc(ldlm_copy, ("softcap: float = 50.0", "softcap: float = 30.0"))
    text = steps(doc, "attn")
    assert r"F = 30\,\tanh\!\Big(\frac{S}{30\,\sqrt{64}}\Big)" in text and SOFTCAP not in text
    assert doc.component("attn").equations.verification.verified


def test_mutation_residual_removed(ldlm_copy):
    before = block_doc(ldlm_copy)
    assert "y = u'+\\Delta_{\\mathrm{mlp}}" in map(plain_tex, before.root.equations.summary)
    after = block_doc(ldlm_copy, ("        return u_prime + delta_mlp\n", "        return delta_mlp\n"))
    assert "y = u'+\\Delta_{\\mathrm{mlp}}" not in map(plain_tex, after.root.equations.summary)
    assert after.root.equations.verification.verified


def test_override_that_lies_fails_the_build(ldlm_copy, tmp_path, capsys):
    override = '    atlas_name = "RMS norm"\n    atlas_equations = ("y = gain * (x / Max(norm(x) / sqrt(features), eps))",)\n'
    text = ldlm_copy.read_text().replace('    atlas_name = "RMS norm"\n', override)
    ldlm_copy.write_text(text)
    doc = block_doc(ldlm_copy)
    norm = doc.component("attn.norm_latents").equations
    assert norm.status is EquationStatus.OVERRIDE and norm.verification.verified
    # the code changes; the override still claims the old formula
    block_doc_args = ("/ math.sqrt(self.features)", "/ self.features")
    ldlm_copy.write_text(ldlm_copy.read_text().replace(*block_doc_args))
    args = ["describe", f"{ldlm_copy}:block", "--json", "--verify"] + [a for i in BLOCK_INPUTS for a in ("--input", i)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "attn.norm_latents: the equations do not reproduce forward(): max error" in err


# -- generality ----------------------------------------------------------------------------------
def verified_share(doc):
    ok = [c for c in doc.components if c.equations.verification and c.equations.verification.verified]
    return len(ok) / len(doc.components)


@pytest.mark.parametrize("name", ["gpt", "encoder_layer", "encoder_layer_norm_first"])
def test_third_party_models(name):
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'nanogpt.py'}:{name}")
    assert verified_share(doc) >= 0.9
    assert doc.root.equations.verification.verified


def test_nanogpt_attention_derived():
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'nanogpt.py'}:gpt")
    attn = "\n".join(plain_tex(s.tex) for s in doc.component("transformer.h.attn").equations.steps)
    assert r"\sqrt{8}}+M\Big)" in attn      # n_embd 32 / 4 heads: the real head size, causal mask


def test_unsupported_construct_is_reported_not_crashed(tmp_path, capsys):
    assert main(["build", fixture_spec("unsupported"), "--docs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "not derived for 1" in out
    page = (tmp_path / "unsupported" / "index.md").read_text()
    assert "**Equations not derived:** unsupported tensor method .permute() (models.py:" in page
    spanish = (tmp_path / "unsupported" / "index.es.md").read_text()
    assert "**Ecuaciones no derivadas:** método de tensor .permute() no admitido (models.py:" in spanish


def test_subclass_with_own_forward_is_not_a_linear():
    doc = pipeline.describe(fixture_spec("my_linear"))
    e = doc.root.equations
    assert e.verification.verified and "2" in e.steps[-1].tex and not e.aligned


def test_override_verified():
    doc = pipeline.describe(fixture_spec("rms_override"))
    assert doc.root.equations.status is EquationStatus.OVERRIDE and doc.root.equations.verification.verified


def test_lying_override_fails():
    from atlas.errors import AtlasError
    with pytest.raises(AtlasError, match="do not reproduce forward"):
        pipeline.describe(fixture_spec("lying_override"))


def test_memory_budget_skips_verification(capsys):
    assert main(["describe", fixture_spec("tied"), "--json", "--verify", "--input", "ids:int64[B,T]",
                 "--memory-budget", "1e-7"]) == 0
    data = json.loads(capsys.readouterr().out)
    v = data["components"][0]["verification"]
    assert v["verified"] is False and "over the" in v["reason"] and "budget" in v["reason"]


# -- the leaf registry ------------------------------------------------------------------------------
LEAVES = [
    (nn.Linear(6, 5), "float32[B,6]"), (nn.Linear(6, 5, bias=False), "float32[B,T,6]"),
    (nn.LayerNorm(6), "float32[B,T,6]"), (nn.LayerNorm(6, elementwise_affine=False), "float32[B,6]"),
    (nn.RMSNorm(6, eps=1e-6), "float32[B,T,6]"), (nn.Embedding(11, 4), "int64[B,T]"),
    (nn.GELU(), "float32[B,7]"), (nn.GELU(approximate="tanh"), "float32[B,7]"), (nn.Dropout(0.3), "float32[B,7]"),
    (nn.ReLU(), "float32[B,7]"), (nn.SiLU(), "float32[B,7]"), (nn.Tanh(), "float32[B,7]"),
    (nn.Sigmoid(), "float32[B,7]"), (nn.Softmax(dim=-1), "float32[B,7]"), (nn.Identity(), "float32[B,7]"),
    (nn.Conv1d(3, 4, 3, stride=2, padding=1), "float32[B,3,T]"), (nn.Conv2d(3, 4, 3, padding="same"), "float32[B,3,T,9]"),
    (nn.BatchNorm1d(3), "float32[B,3,T]"), (nn.BatchNorm2d(3), "float32[B,3,T,5]"), (nn.GroupNorm(2, 4), "float32[B,4,T]"),
    (nn.MultiheadAttention(8, 2, batch_first=True), None),
]


@pytest.mark.parametrize("module,shape", LEAVES, ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else "")
def test_leaf_registry(module, shape):
    if isinstance(module, nn.MultiheadAttention):
        inputs = ["query:float32[B,T,8]", "key:float32[B,T,8]", "value:float32[B,T,8]"]
    else:
        inputs = [f"input:{shape}"]
    loaded = spec.Loaded("inline", module, None)
    doc = enrich(module, shapes.derive(module, walk.walk(loaded), inputs))
    e = doc.root.equations
    assert e.status is EquationStatus.DERIVED, e.reason
    assert e.verification.verified, e.verification.reason


def test_leaf_equations_follow_hyperparameters():
    def tex(module, shape):
        loaded = spec.Loaded("inline", module, None)
        doc = enrich(module, shapes.derive(module, walk.walk(loaded), [f"input:{shape}"]))
        return "\n".join(map(plain_tex, doc.root.equations.summary))
    assert r"10^{-6}" in tex(nn.LayerNorm(4, eps=1e-6), "float32[B,4]")
    assert r"+\beta" not in tex(nn.LayerNorm(4, bias=False), "float32[B,4]")
    assert "+b" not in tex(nn.Linear(4, 2, bias=False), "float32[B,4]")
    assert "0.25" in tex(nn.Dropout(0.25), "float32[B,4]")
    assert torch.is_tensor(torch.zeros(1))
