"""Model code nobody here wrote (Hugging Face transformers), documented from config on the meta device."""

import os

import pytest

transformers = pytest.importorskip("transformers")

from conftest import ROOT, lines, mkdocs_build, symbols_checked  # noqa: E402

from atlas import pipeline
from atlas.cli import main  # noqa: E402
from atlas.extract import accounting
from atlas.load import spec  # noqa: E402
from atlas.render.latex import latex

HF = ROOT / "tests" / "fixtures" / "hf_models.py"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
INPUTS = {"gpt2": ["input_ids:int64[B,T]"], "bert": ["input_ids:int64[B,T]"], "llama": ["input_ids:int64[B,T]"],
          "t5": ["input_ids:int64[B,T]", "decoder_input_ids:int64[B,T]"]}


@pytest.fixture(scope="module")
def hf_docs():
    return {name: pipeline.document(spec.load(f"{HF}:{name}"), pipeline.Settings(inputs=tuple(inputs)))
            for name, inputs in INPUTS.items()}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_totals_match_torch_and_every_component_is_verified(name, hf_docs):
    doc = hf_docs[name]
    loaded = spec.load(f"{HF}:{name}")
    assert doc.totals.parameters == sum(p.numel() for p in loaded.model.parameters())
    trained, frozen = accounting.tree_total(doc)
    assert trained + frozen == doc.totals.parameters
    assert all(p.device.type == "meta" for p in loaded.model.parameters())
    unverified = [c.id for c in doc.components
                  if not (c.equations.verification and c.equations.verification.verified)]
    assert unverified == []


def test_gpt2_tied_head_and_conv1d(hf_docs):
    doc = hf_docs["gpt2"]
    head = doc.component("lm_head")
    assert not head.rows[0].counted and head.rows[0].shared_with == ("transformer.wte.weight",)
    conv = doc.component("transformer.h.attn.c_attn")
    assert conv.cls == "transformers.pytorch_utils.Conv1D"
    assert [r.factors for r in conv.rows] == [(64, 192), (192,)]
    # HF's Conv1D is x W + b through addmm on a flattened view: recorded, printed and checked
    text = "\n".join(lines(doc, "transformer.h.attn.c_attn"))
    assert r"\operatorname{reshape}" in text and "W" in text
    assert doc.component("transformer.h.attn.c_attn").equations.verification.verified


def test_llama_attention_rope_and_grouped_heads(hf_docs):
    doc = hf_docs["llama"]
    attn = "\n".join(lines(doc, "model.layers.self_attn"))
    assert r"\operatorname{repeat}_{2}" in attn                       # 4 query heads share 2 key/value heads
    assert r"{q}_{9:16};\;{q}_{1:8}" in attn                          # rotate_half, written out
    assert r"\sqrt{16}}+M\Big)" in attn                               # head size 16, causal mask M
    e = doc.component("model.layers.self_attn").equations
    assert any(latex(n[0]).startswith(r"\atlasref{c.causal}") for n in e.notations)


def test_llama_rmsnorm_keeps_its_float32(hf_docs):
    norm = hf_docs["llama"].component("model.layers.input_layernorm").equations
    assert norm.verification.verified and norm.verification.dtype == "float64"
    assert norm.verification.tolerance == 2e-4        # forward() computes in float32 even when checked in float64
    assert any(r"\mathrm{variance}" in line for line in lines(hf_docs["llama"], "model.layers.input_layernorm"))


def test_pages_build(tmp_path, capsys):
    docs = tmp_path / "docs"
    (docs).mkdir()
    (docs / "index.md").write_text("# Models\n")
    args = ["build", f"{HF}:gpt2", "--docs", str(docs)] + [a for i in INPUTS["gpt2"] for a in ("--input", i)]
    assert main(args) == 0
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\ntheme:\n  name: material\n  font: false\n"
        "markdown_extensions: [admonition, pymdownx.details, pymdownx.superfences, attr_list, md_in_html, tables,"
        " {pymdownx.arithmatex: {generic: true}}, {pymdownx.highlight: {anchor_linenums: true}}]\n")
    code, log = mkdocs_build(tmp_path, "--strict")
    assert code == 0, log[-2000:]


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_pages_name_each_value_once(name, hf_docs):
    """Over every generated page of code we did not write: no symbol names two values, no step defines itself."""
    from atlas.render import model_pages
    files = model_pages.render(hf_docs[name])
    assert symbols_checked(files) > 100


def test_kv_cache_is_what_the_returned_cache_grows_by(hf_docs):
    """Per token, what the cache the forward returns gains: layers × (keys + values) × kv heads × head size × 4
    bytes, each layer counted though the run skipped all but the first. BERT returns no cache: none (CLIP's text
    encoder, causal and cacheless, was said to keep 1,024 bytes per token; a decoder whose attention is written out,
    not one `is_causal` call, was said to keep none: XGLM's, BioGPT's)."""
    eager = spec.load(f"{HF}:llama_eager")
    docs = {**hf_docs, "llama_eager": pipeline.document(eager, pipeline.Settings(verify=False))}
    for name in ("gpt2", "llama", "llama_eager"):
        cfg = spec.load(f"{HF}:{name}").model.config
        heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        expected = cfg.num_hidden_layers * 2 * heads * (cfg.hidden_size // cfg.num_attention_heads) * 4
        assert docs[name].cost_summary.kv_cache_bytes_per_token == expected
        assert docs[name].cost_summary.kv_cache_elements_per_token == expected // 4     # float32: 4 bytes each
    assert hf_docs["bert"].cost_summary.kv_cache_bytes_per_token is None
