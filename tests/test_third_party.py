"""Model code nobody here wrote (Hugging Face transformers), documented from config on the meta device."""

import os
import subprocess
import sys

import pytest

transformers = pytest.importorskip("transformers")

from atlas import accounting, pipeline, spec  # noqa: E402
from atlas.cli import main  # noqa: E402
from atlas.equations.ops import plain_tex  # noqa: E402
from conftest import ROOT  # noqa: E402

HF = ROOT / "tests" / "fixtures" / "hf_models.py"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
INPUTS = {"gpt2": ["input_ids:int64[B,T]"], "bert": ["input_ids:int64[B,T]"], "llama": ["input_ids:int64[B,T]"],
          "t5": ["input_ids:int64[B,T]", "decoder_input_ids:int64[B,T]"]}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_totals_match_torch(name):
    loaded = spec.load(f"{HF}:{name}")
    doc = pipeline.document(loaded, pipeline.Settings(inputs=tuple(INPUTS[name])))
    assert doc.totals.parameters == sum(p.numel() for p in loaded.model.parameters())
    trained, frozen = accounting.tree_total(doc)
    assert trained + frozen == doc.totals.parameters
    assert all(p.device.type == "meta" for p in loaded.model.parameters())
    # every component is documented: verified, or marked with the reason
    for c in doc.components:
        e = c.equations
        assert (e.verification is not None and e.verification.verified) or e.reason, c.id
    verified = sum(1 for c in doc.components if c.equations.verification and c.equations.verification.verified)
    assert verified >= len(doc.components) // 3


def test_gpt2_tied_head_and_conv1d():
    doc = pipeline.describe(f"{HF}:gpt2", INPUTS["gpt2"])
    head = doc.component("lm_head")
    assert not head.rows[0].counted and head.rows[0].shared_with == ("transformer.wte.weight",)
    conv = doc.component("transformer.h.attn.c_attn")
    assert conv.cls == "transformers.pytorch_utils.Conv1D"
    assert [r.factors for r in conv.rows] == [(64, 192), (192,)]
    assert "not derived" in conv.equations.status.value and "pytorch_utils.py:" in conv.equations.reason


def test_llama_rmsnorm_keeps_its_float32():
    doc = pipeline.describe(f"{HF}:llama", INPUTS["llama"])
    norm = doc.component("model.layers.input_layernorm").equations
    assert norm.verification.verified
    assert any(r"\mathrm{variance}" in plain_tex(s.tex) for s in norm.steps)


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
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
