"""Equations: derived from what forward() runs, filled with real hyper-parameters, verified against it."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from conftest import ROOT, fixture_spec, lines, page_math, summary, symbols_checked
from torch import nn

from atlas import pipeline
from atlas.analyse.equations.derive import EquationMismatch, with_equations
from atlas.cli import main
from atlas.document import EquationStatus
from atlas.document import input_specs as inputs_mod
from atlas.extract import walk
from atlas.extract.record import plan
from atlas.load import spec
from atlas.render.latex import latex

SOFTCAP = r"F = 50\,\tanh\!\Big(\frac{S}{50\,\sqrt{64}}\Big)"
Q_NORM = (r"Q = {\gamma_Q}\odot \frac{{q}^{h}}"
          r"{\max\!\big(\lVert {q}^{h}\rVert_2/\sqrt{64},\;\varepsilon\big)}")
SOFTMAX = r"{A}_{t,s} = \frac{\exp {F}_{t,s}}{\sum_{u=1}^{2T}\exp {F}_{t,u}}"


def page_of(files, path):
    return page_math(files[path])


def test_layernorm_page(ldlm_files):
    page = page_of(ldlm_files, "ldlm/latent_encoder/blocks/mlp/layer_norm.md")
    assert r"{\mu_d(x)} &= \frac{1}{768}\sum_{j=1}^{768}{x}_j" in page
    assert r"{\sigma_d^2(x)} &= \frac{1}{768}\sum_{j=1}^{768}\left({x}_j-{\mu_d(x)}\right)^{2}" in page
    assert r"y &= \gamma\odot \frac{x-{\mu_d(x)}}{\sqrt{{\sigma_d^2(x)}+\varepsilon}}+\beta" in page
    assert r"\varepsilon &= 10^{-5}" in page
    assert "Center and scale each position's features, then apply learned gain and bias." in page


def test_attention_page(ldlm_doc):
    text = lines(ldlm_doc, "latent_encoder.blocks.attn")
    for line in (SOFTCAP, Q_NORM, SOFTMAX, r"k = [\,{k_{a}};\;{k_{b}}\,]", r"v = [\,{v_{a}};\;{v_{b}}\,]",
                 r"\bar{u} = {\gamma_a}\odot \frac{u}{\max\!\big(\lVert u\rVert_2/\sqrt{768},\;\varepsilon\big)}"):
        assert line in text, line
    # p_a is split at the real width: q, k_a, v_a are columns 1-768, 769-1536, 1537-2304
    assert r"{v_{a}} = {{p_{a}}}_{1537:2304}" in text
    e = ldlm_doc.component("latent_encoder.blocks.attn").equations
    # the softmax runs over 2T keys: the step's own shape says so
    softmax = next(s for s in e.steps if "exp" in latex(s.formula))
    assert [d.symbol or d.value for d in softmax.shape] == ["B", 12, "T", "2*T"]
    assert {x.stream for x in e.symbols} == {"q", "k", "v", None}


def test_block_page_carries_the_block_index(ldlm_doc):
    assert summary(ldlm_doc, "latent_encoder.blocks") == [r"{u'_n} = {u_n}+{\Delta_{\mathrm{attn}}}",
                                                          r"{u_{n+1}} = {u'_n}+{\Delta_{\mathrm{mlp}}}"]
    text = lines(ldlm_doc, "latent_encoder.blocks")
    assert r"{\bar{u'}_n} = \operatorname{LayerNorm}\!\left({u'_n}\right)" in text     # the LayerNorm of u', not x̄
    assert r"g = {h_{\mathrm{mlp}}}\odot \Phi\left({h_{\mathrm{mlp}}}\right)" in text    # h of the MLP, not the input h
    assert SOFTCAP in text
    e = ldlm_doc.component("latent_encoder.blocks").equations
    assert len(e.steps) == 26 and tuple(map(latex, e.constants)) == (r"\atlasref{c.eps.1e-05} = 10^{-5}",)   # ε stated once


def test_block_page_markup(ldlm_files):
    page = ldlm_files["ldlm/latent_encoder/blocks/index.md"]
    assert '??? abstract "All 26 steps"' in page
    assert "**Perceiver attention**" in page and "**MLP**" in page
    assert r"where $\htmlData{sym=c-eps-1e-05}{\varepsilon} = 10^{-5}$" in page
    assert '<span class="atlas-step-shape" title="shape of the value this step defines">[B, 12, T, 2T]</span>' in page


def test_every_ldlm_component_verified(ldlm_doc):
    unverified = [c.id for c in ldlm_doc.components
                  if not (c.equations.verification and c.equations.verification.verified)]
    assert unverified == []
    assert len(ldlm_doc.components) == 76


def test_json_keys(ldlm_doc):
    """Each line as a formula (structure, symbols by key), as LaTeX with the names in, and as plain text."""
    from atlas.document.math_tree import from_data
    from atlas.render import json_export
    comp = {c["id"]: c for c in json_export.as_dict(ldlm_doc)["components"]}["latent_encoder.blocks.attn"]
    assert SOFTCAP in [s["tex"] for s in comp["equations"]["steps"]]
    step = next(s for s in comp["equations"]["steps"] if s["tex"] == SOFTCAP)
    assert step["plain"] == "F = 50 tanh(S/(50 √64))"
    refs = from_data(step["formula"]).refs()
    assert refs[0] == step["defines"] and set(refs) <= {s["key"] for s in comp["equations"]["symbols"]}
    v = comp["verification"]
    assert v["verified"] is True and v["tolerance"] == 1e-9 and v["max_error"] == 1e-12 and v["reason"] is None


def test_no_symbol_names_two_values_and_no_step_defines_itself(ldlm_files):
    assert symbols_checked(ldlm_files) > 1000


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


def test_mutations_follow_the_code(ldlm_copy):
    doc = block_doc(ldlm_copy, ("eps: float = 1e-5", "eps: float = 1e-6"))
    assert r"\varepsilon &= 10^{-6}" in "\n".join(summary(doc, "mlp.layer_norm")).replace(" = ", " &= ")
    assert tuple(map(latex, doc.component("attn").equations.constants)) == (r"\atlasref{c.eps.1e-06} = 10^{-6}",)
    for old, new, present, absent in (
            ("softcap: float = 50.0", "softcap: float = 30.0",
             r"F = 30\,\tanh\!\Big(\frac{S}{30\,\sqrt{64}}\Big)", SOFTCAP),
            ("self.gelu = nn.GELU()", 'self.gelu = nn.GELU(approximate="tanh")', "0.044715", r"\Phi")):
        doc = block_doc(ldlm_copy, (old, new))
        text = "\n".join(lines(doc, "") + lines(doc, "attn") + lines(doc, "mlp.gelu"))
        assert present in text and absent not in "\n".join(lines(doc, "attn") + lines(doc, "mlp.gelu")), old
        assert all(c.equations.verification.verified for c in doc.components)


def test_mutation_residual_removed(ldlm_copy):
    before = block_doc(ldlm_copy)                 # one block on its own: no block index
    assert summary(before, "") == [r"{u'} = u+{\Delta_{\mathrm{attn}}}", r"y = {u'}+{\Delta_{\mathrm{mlp}}}"]
    after = block_doc(ldlm_copy, ("        return u_prime + delta_mlp\n", "        return delta_mlp\n"))
    assert not any(r"{u'}+{\Delta_{\mathrm{mlp}}}" in line for line in lines(after, ""))
    assert after.root.equations.verification.verified


def test_override_that_lies_fails_the_build(ldlm_copy, tmp_path, capsys):
    named = '    atlas_name = own_words("RMS norm")\n'
    override = named + '    atlas_equations = ("y = gain * (x / Max(norm(x) / sqrt(features), eps))",)\n'
    assert named in ldlm_copy.read_text()
    ldlm_copy.write_text(ldlm_copy.read_text().replace(named, override))
    doc = block_doc(ldlm_copy)
    norm = doc.component("attn.norm_latents").equations
    assert norm.status is EquationStatus.OVERRIDE and norm.verification.verified
    # the code changes; the override still claims the old formula: describe --verify and build both exit 1
    ldlm_copy.write_text(ldlm_copy.read_text().replace("/ math.sqrt(self.features)", "/ self.features"))
    inputs = [a for i in BLOCK_INPUTS for a in ("--input", i)]
    assert main(["describe", f"{ldlm_copy}:block", "--json", "--verify"] + inputs) == 1
    err = capsys.readouterr().err
    assert "attn.norm_latents: the equations differ from forward() by" in err
    docs = tmp_path / "docs"
    assert main(["build", f"{ldlm_copy}:block", "--docs", str(docs)] + inputs) == 1
    assert not (docs / "block").exists()                      # nothing is written


# -- generality ----------------------------------------------------------------------------------
def verified_share(doc):
    ok = [c for c in doc.components if c.equations.verification and c.equations.verification.verified]
    return len(ok) / len(doc.components)


@pytest.mark.parametrize("name", ["gpt", "encoder_layer", "encoder_layer_norm_first"])
def test_third_party_models(name):
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'nanogpt.py'}:{name}")
    assert verified_share(doc) == 1.0
    assert doc.root.equations.verification.verified


def test_nanogpt_attention_derived():
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'nanogpt.py'}:gpt")
    attn = "\n".join(lines(doc, "transformer.h.attn"))
    assert r"\sqrt{8}}+M\Big)" in attn      # n_embd 32 / 4 heads: the real head size, causal mask
    assert "the causal mask" in str(doc.component("transformer.h.attn").equations.notations)


@pytest.mark.parametrize("name", ["unsupported", "decorated"])
def test_unsupported_construct_is_reported_with_the_models_own_line(name, tmp_path, capsys):
    assert main(["build", fixture_spec(name), "--docs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "not derived for 1" in out
    slug = {"unsupported": "unsupported", "decorated": "decorated"}[name]
    page = (tmp_path / slug / "index.md").read_text()
    found = [i for i, text in enumerate((ROOT / "tests/fixtures/models.py").read_text().splitlines(), 1)
             if "return y * self.scale" in text]
    line = found[0] if name == "unsupported" else found[1]
    assert ("**Equations not derived:** the code uses a tensor that is neither an input, a parameter or buffer, "
            f"nor computed in forward() (models.py:{line})") in page
    spanish = (tmp_path / slug / "index.es.md").read_text()
    assert f"(models.py:{line})" in spanish and "**Ecuaciones no derivadas:**" in spanish


def test_loop_over_an_empty_list():
    doc = pipeline.describe(fixture_spec("stages"))
    assert doc.root.equations.verification.verified
    last = r"\max\!\big({x''}\,{W_{\mathrm{blocks\,2}}}+{b_{\mathrm{blocks\,2}}},\;0\big)+{x''}"
    assert lines(doc, "")[-1] == "{x" + "'" * 3 + "} = " + last


def test_subclass_with_own_forward_is_not_a_linear():
    doc = pipeline.describe(fixture_spec("my_linear"))
    e = doc.root.equations
    assert e.verification.verified and not e.aligned and "2" in lines(doc, "")[-1]


def test_override_verified():
    doc = pipeline.describe(fixture_spec("rms_override"))
    assert doc.root.equations.status is EquationStatus.OVERRIDE and doc.root.equations.verification.verified


def test_lying_override_fails():
    with pytest.raises(EquationMismatch, match="differ from forward"):
        pipeline.describe(fixture_spec("lying_override"))


def test_memory_budget_skips_verification(capsys):
    assert main(["describe", fixture_spec("tied"), "--json", "--verify", "--input", "ids:int64[B,T]",
                 "--memory-budget", "1e-7"]) == 0
    data = json.loads(capsys.readouterr().out)
    v = data["components"][0]["verification"]
    assert v["verified"] is False and "over the" in v["reason"] and "budget" in v["reason"]



def test_memory_budget_counts_the_largest_tensor(capsys):
    """20 weights, and at T = 2048 a [2, 2048, 2048] score tensor (34 MB in float32): the check of the whole model
    is not run within 20 MB, and says which tensor; its layer, [2, 2048, 4], is checked. A float64 check of Gemma 2's
    eager attention at T = 8192 made 6 GB tensors, several at once, until the machine ran out of memory."""
    assert main(["describe", fixture_spec("pair_scores"), "--json", "--verify", "--dim", "T=2048",
                 "--memory-budget", "0.02"]) == 0
    by_id = {c["id"]: c["verification"] for c in json.loads(capsys.readouterr().out)["components"]}
    assert by_id[""]["verified"] is False
    assert "at B = 2, the sizes of the record, its largest tensor is [2, 2048, 2048]" in by_id[""]["reason"]
    assert "8,388,628 elements, 33,554,512 bytes even in float32" in by_id[""]["reason"]
    assert by_id["proj"]["verified"] is True

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
    (nn.MultiheadAttention(8, 2, batch_first=True), None), (nn.MultiheadAttention(8, 2, bias=False), None),
    (nn.LSTM(5, 6, num_layers=2, batch_first=True), "float32[B,T,5]"), (nn.GRU(5, 6, bidirectional=True), "float32[T,B,5]"),
    (nn.RNN(5, 6), "float32[T,B,5]"), (nn.MaxPool2d(2), "float32[B,3,T,6]"), (nn.AdaptiveAvgPool1d(1), "float32[B,3,T]"),
    # one unbatched sequence, [T, features]: torch runs it as a batch of one, whatever batch_first says
    (nn.LSTM(5, 6, num_layers=2, batch_first=True), "float32[T,5]"), (nn.GRU(5, 6, bidirectional=True), "float32[T,5]"),
    (nn.MultiheadAttention(8, 2, batch_first=True), "unbatched"),
    # keys and values of widths of their own: a projection weight each
    (nn.MultiheadAttention(8, 2, batch_first=True, kdim=4, vdim=6), None),
]


def _leaf_doc(module, inputs):
    loaded = spec.Loaded("inline", module, None)
    out = plan.record(module, walk.walk(loaded), inputs)
    return with_equations(module, out.doc, out.trace, inputs_mod.vocabulary(None, None))


@pytest.mark.parametrize("module,shape", LEAVES, ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else "")
def test_leaf_registry(module, shape):
    if isinstance(module, nn.MultiheadAttention):
        order = "T" if shape == "unbatched" else "B,T" if module.batch_first else "T,B"
        memory = order.replace("T", "S")
        inputs = [f"query:float32[{order},8]", f"key:float32[{memory},{module.kdim}]",
                  f"value:float32[{memory},{module.vdim}]"]
    else:
        inputs = [f"input:{shape}"]
    doc = _leaf_doc(module, inputs)
    e = doc.root.equations
    assert e.status is EquationStatus.DERIVED, e.reason
    assert e.verification.verified, e.verification.reason


def test_leaf_equations_follow_hyperparameters():
    def tex(module, shape):
        return "\n".join(summary(_leaf_doc(module, [f"input:{shape}"]), ""))
    assert r"10^{-6}" in tex(nn.LayerNorm(4, eps=1e-6), "float32[B,4]")
    assert r"+\beta" not in tex(nn.LayerNorm(4, bias=False), "float32[B,4]")
    assert "+b" not in tex(nn.Linear(4, 2, bias=False), "float32[B,4]")
    assert "0.25" in tex(nn.Dropout(0.25), "float32[B,4]")
    lstm = tex(nn.LSTM(3, 4), "float32[T,B,3]")
    assert r"{c_t} = {f_t}\odot {c_{t-1}}+{i_t}\odot {g_t}" in lstm and r"{h_t} = {o_t}\odot \tanh" in lstm


def test_attention_called_with_a_mask_writes_the_mask():
    """nn.MultiheadAttention called with a mask (torch's seq2seq with its causal target mask) adds it to the logits;
    its equations were not derived, and a layer around it was checked with the real module in its place."""
    loaded = spec.load(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:masked_seq2seq")
    doc = pipeline.document(loaded, pipeline.Settings(cost=False))
    sa = doc.component("transformer.decoder.layers.self_attn")
    assert sa.equations.status is EquationStatus.DERIVED and sa.equations.verification.verified
    assert [t.name for t in sa.shapes.inputs] == ["query", "key", "value", "attn_mask"]
    tex = "\n".join(summary(doc, sa.id))
    assert r"{\sqrt{8}}+{\mathrm{attn}_{\mathrm{mask}}}\Big)" in tex
    assert doc.component("transformer.decoder.layers").equations.verification.verified
    assert doc.component("transformer.encoder.layers.self_attn").equations.verification.verified


def test_causal_hint_is_the_causal_mask():
    """TransformerEncoder(x, mask=causal, is_causal=True), as torch's docs write a language model: the layers and
    their attention are written and checked (they were not derived: "called with a mask"), the attention with the
    causal mask M explained beside it, since torch takes the hint in place of the mask it was given."""
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:causal_encoder_lm")
    for cid in ("blocks.layers", "blocks.layers.self_attn"):
        e = doc.component(cid).equations
        assert e.status is EquationStatus.DERIVED and e.verification.verified, (cid, e.reason)
    tex = "\n".join(summary(doc, "blocks.layers.self_attn"))
    assert r"{\sqrt{8}}+M\Big)" in tex
    notation = doc.component("blocks.layers.self_attn").equations.notations
    assert [latex(f) for f, _ in notation] == [r"\atlasref{c.causal}_{t,s}=\begin{cases}0 & s\le t\\-\infty & s>t\end{cases}"]
    # its heads, from its configuration, are the catalog's (it had none for models on nn.MultiheadAttention)
    facts = {f.kind: f.value for f in doc.component("blocks.layers.self_attn").equations.facts}
    assert facts["heads"] == 2 and facts["head_features"] == 8
    assert [t.value for t in doc.architecture.heads] == [2]
    layer = "\n".join(summary(doc, "blocks.layers"))
    assert r"\left(\mathrm{src}\right),\,{\mathrm{src}_{\mathrm{mask}}}\right)" in layer


def test_a_padding_mask_input_is_a_boolean_per_key():
    """A padding mask the model takes as an input is inferred from the argument it is passed as, [B, T] booleans
    (it was taken for the attention's query, float32[B, T, 16], and forward() failed), and the per-head weights asked
    for are written per head, not averaged."""
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:padded_attention")
    assert doc.inputs == ("x:float32[B,T,16]", "padding:bool[B,T]")
    e = doc.component("attn").equations
    assert e.status is EquationStatus.DERIVED and e.verification.verified, e.reason
    tex = "\n".join(summary(doc, "attn"))
    assert r"\sum_{h=1}" not in tex and tex.count(r"\operatorname{softmax}") == 2


def test_values_of_a_sequential_are_named_not_numbered():
    """A container entry's index is no name: the CNN's values read `0 = W ⋆ x + b` and `BatchNorm2d_1(0)`, BatchNorm
    seemingly applied to the number 0, and its output was `6`, not y."""
    doc = pipeline.describe(fixture_spec("conv_stack"))
    got = lines(doc, "")
    assert got[0].startswith("z = ") and got[-1].startswith("y = "), got
    assert not any(line[:1].isdigit() or r"\left(0\right)" in line for line in got), got
    assert doc.root.equations.verification.verified


def test_names_with_a_capital_and_an_underscore_are_written_as_tex():
    """`B_mat` was written as it is, which KaTeX reads as B with the subscript m, then "at"."""
    doc = pipeline.describe(fixture_spec("capital_names"))
    assert lines(doc, "") == [r"y = \mathrm{coords}\,{B_{\mathrm{mat}}}\odot \exp\left({A_{\mathrm{log}}}\right)\odot W"]


class _MaskedMeanLoss(nn.Module):
    def forward(self, x, mask):
        return (x * mask).sum() / mask.sum()


def test_a_sum_over_every_axis_counts_every_element():
    """A reduction without a dim sums all B·4 elements: its n is that size, printed and evaluated (it was an
    unknown `n`, and the equations were not run: ViTMAE's masked loss)."""
    loaded = spec.Loaded("inline", _MaskedMeanLoss(), None)
    doc = pipeline.document(loaded, pipeline.Settings(inputs=("x:float32[B,4]", "mask:float32[B,4]")))
    e = doc.root.equations
    assert e.verification.verified, e.verification.reason
    assert r"\sum_{j=1}^{4B}" in "".join(lines(doc, "")) and "{n}" not in "".join(lines(doc, ""))


def test_a_number_numpy_computed_prints_as_a_number(capsys):
    """`np.sqrt(32)` is a numpy float: the page printed `np.float64(5.656854249492381)` (Reformer's, eight times)."""
    assert main(["describe", fixture_spec("numpy_scale"), "--json", "--verify"]) == 0
    root = json.loads(capsys.readouterr().out)["components"][0]
    tex = " ".join(line["tex"] for line in root["equations"]["steps"] + root["equations"]["summary"])
    assert "5.656854249492381" in tex and "np." not in tex and root["verification"]["verified"]


def test_two_branches_added_are_no_residual():
    """DeepSeek's MoE layer: the routed experts' result plus the shared experts' result, each computed from the
    layer's input, neither from the other; its page said "a residual connection". A residual around the layer,
    whose branch runs the children two steps before the add, is one."""
    doc = pipeline.document(spec.load(fixture_spec("shared_and_routed")), pipeline.Settings())
    assert summary(doc, "")[-1] == r"{\mathrm{moe}'} = \mathrm{moe}+{{\mathrm{down}_{\mathrm{proj}}}_{\mathrm{shared}}}"
    assert doc.root.equations.residuals == 0 and doc.root.equations.verification.verified
    around = pipeline.document(spec.load(fixture_spec("shared_and_routed_residual")), pipeline.Settings())
    assert summary(around, "")[-1] == r"y = x+{\Delta_{\mathrm{mlp}}}"     # the branch named by its role
    assert around.root.equations.residuals == 1 and around.root.equations.verification.verified
    # a child's result plus itself scaled: the child ran before the value the add starts from, not on it
    skip = pipeline.document(spec.load(fixture_spec("scaled_skip")), pipeline.Settings())
    assert skip.root.equations.residuals == 0 and skip.root.equations.verification.verified


def test_masks_combined_read_as_logic():
    """DeepSeek's router masks its groups with `~mask.bool()`: its page printed \\operatorname{\\_\\_invert\\_\\_}. On
    booleans, ~, & and | are ¬, ∧ and ∨, run as torch's logical ops; the check agrees with forward()."""
    doc = pipeline.document(spec.load(fixture_spec("masks")), pipeline.Settings())
    assert summary(doc, "") == [r"\mathrm{keep} = \left(\neg \left(x>0.5\right) \land x<2\right) \lor x=0",
                                r"y = \begin{cases}0 & \text{if } \neg \mathrm{keep}\\ x\,{W_{\mathrm{lin}}}+"
                                r"{b_{\mathrm{lin}}} & \text{otherwise}\end{cases}"]
    assert doc.root.equations.verification.verified


def test_functional_multi_head_attention_is_written_out():
    """F.multi_head_attention_forward called by a model's own code (WavLM's and fairseq's attention) was one call
    printed with its 23 arguments and no heads; it is now the attention it computes, its weights as stored (out ×
    in, so transposed per head), a per-head additive bias or a padding mask in the logits, checked against forward()."""
    fixtures = ROOT / "tests" / "fixtures" / "contractions.py"
    for name, heads, mask in (("functional_attention", 4, r"+\mathrm{bias}\Big)"),
                              ("packed_functional_attention", 2, r"+\mathrm{padding}\Big)")):
        doc = pipeline.describe(f"{fixtures}:{name}")
        e = doc.root.equations
        assert e.status is EquationStatus.DERIVED and e.verification.verified, (name, e.reason)
        tex = "\n".join(summary(doc, ""))
        assert "multi\\_head\\_attention\\_forward" not in tex and mask in tex and tex.count(r"^{(h)\mathsf T}") == 3
        assert {f.kind: f.value for f in e.facts}["heads"] == heads


def test_a_cached_index_another_layer_made_is_made_again():
    """BEiT's relative position index comes from an lru_cache: the second layer reads the tensor the first one
    made, through 20 calls and in-place writes (its equations were not derived: "neither an input, a parameter or
    buffer, nor computed in forward()")."""
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:cached_index_layers")
    for cid in ("first", "second", ""):
        e = doc.component(cid).equations
        assert e.status is EquationStatus.DERIVED and e.verification.verified, (cid, e.reason)


def test_attention_by_keyword_and_its_mask_explained():
    """Keys and values given by keyword after the padding mask are taken by name (by position the mask stood in for
    the keys: "mat1 and mat2 shapes cannot be multiplied"), and a page whose logits add a mask says how torch adds
    it: −∞ where a boolean one is true (read as a plain sum, true keys would weigh more)."""
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:keywords_attention")
    e = doc.component("attn").equations
    assert e.status is EquationStatus.DERIVED and e.verification.verified, e.reason or e.verification.reason
    assert [(latex(f), str(text)[:45]) for f, text in e.notations] == [
        (r"\atlasref{in.key_padding_mask}", "added to the logits as torch adds a mask: a b")]


def test_nan_on_both_sides_is_not_verified():
    """A forward() that gives NaN at every value, and equations that agree, prove nothing: it was "verified"."""
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:nan_everywhere")
    v = doc.root.equations.verification
    assert not v.verified and str(v.reason).startswith("not compared: forward() gives NaN at every one of its 8")
    assert doc.component("linear").equations.verification.verified


class _GivenState(nn.Module):
    """An RNN started from a learned state: an LSTM's (h0, c0) two different tensors, one row per layer and
    direction, as forward() passes them."""

    def __init__(self, kind: str, layers: int, bidirectional: bool, batch_first: bool):
        super().__init__()
        self.rnn = getattr(nn, kind)(5, 6, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
        rows = layers * (2 if bidirectional else 1)
        self.h0 = nn.Parameter(torch.randn(rows, 1, 6))
        self.c0 = nn.Parameter(torch.randn(rows, 1, 6))

    def forward(self, x):
        b = x.shape[0] if self.rnn.batch_first else x.shape[1]
        h = self.h0.expand(-1, b, -1).contiguous()
        return self.rnn(x, (h, self.c0.expand(-1, b, -1).contiguous()) if isinstance(self.rnn, nn.LSTM) else h)[0]


@pytest.mark.parametrize("kind,layers,bidirectional,batch_first", [
    ("LSTM", 1, False, True), ("LSTM", 2, True, False), ("LSTM", 2, False, True), ("GRU", 2, True, True)])
def test_a_recurrent_layer_started_from_a_given_state(kind, layers, bidirectional, batch_first):
    """The state a call gives starts every layer and direction from its own row; an LSTM's h0 and c0 each start
    their own stream (the cell was started with h0's rows for both, and indexed them along the batch)."""
    model = _GivenState(kind, layers, bidirectional, batch_first)
    doc = _leaf_doc(model, ["x:float32[B,T,5]" if batch_first else "x:float32[T,B,5]"])
    for cid in ("", "rnn"):
        v = doc.component(cid).equations.verification
        assert v.verified, (cid, v.reason)
    assert doc.component("rnn").summary.endswith(", from the state the call gives."), doc.component("rnn").summary
    assert _leaf_doc(model.rnn, ["input:float32[B,T,5]" if batch_first else "input:float32[T,B,5]"]).root.summary \
        .endswith(", from a zero state."), "called without a state"
    # h: h0 expanded, by the code's own name for it (`h = self.h0.expand(...).contiguous()`); z: c0 expanded
    given = r"x,\,h\right)" if kind == "GRU" else r"x,\,h,\,z\right)"
    assert any(rf"\operatorname{{{kind}}}\!\left({given}" in line for line in lines(doc, "")), lines(doc, "")
    # (…)_1 is the call's first result, the code's [0]: said once on the page, as its notation
    assert [str(text) for f, text in doc.component("").equations.notations if latex(f) == r"(\ldots)_{k}"] == \
        ["the k-th of the values a call returns, counted from 1: (…)₁ is what the code reads as [0]"]


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return x + self.lin(x)


class _Keeps(nn.Module):
    """A stack of blocks (a network of its own: one call on its parent's page) that keeps a value it computed."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([_Block(), _Block()])

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i == 0:
                self.kept = torch.tanh(x)               # kept on the module, not returned
        return x


class _UsesWhatAChildKept(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = _Keeps()

    def forward(self, x):
        return self.child(x) + self.child.kept


def test_a_tensor_a_child_kept_is_named_where_it_was_computed():
    """A tensor another module computed and passed on without returning it (kept on the module here; a hook in
    transformers' captured hidden states): the reason says so and where it was computed, not that forward() never
    computed it, at the line of the last operation before."""
    doc = _leaf_doc(_UsesWhatAChildKept(), ["x:float32[B,4]"])
    e = doc.root.equations
    assert e.status is EquationStatus.NOT_DERIVED
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "self.kept = torch" in text)
    assert e.reason == ("the code uses a tensor that another module computed and did not return (computed at "
                        f"test_equations.py:{line}): a hook or an attribute passed it on"), e.reason
    assert doc.component("child").equations.verification.verified


def test_a_convolution_says_its_padding_dilation_and_groups():
    """A dilated convolution read "kernel 3, stride 1" and nothing of its dilation: the summary says the settings
    it computes with where they are not the default, and the equations that run with them are verified."""
    doc = pipeline.describe(fixture_spec("dilated_convs"))
    said = {c.id: c.summary for c in doc.components}
    assert said["dilated"] == "A 1-d convolution from 4 to 8 channels, kernel 3, stride 1, with padding 2 and dilation 2."
    assert said["grouped"] == ("A 1-d convolution from 8 to 8 channels, kernel 3, stride 1, with padding 'same' and "
                               "4 groups.")
    assert said["plain"] == "A 1-d convolution from 8 to 8 channels, kernel 1, stride 1."
    assert all(c.equations.verification.verified for c in doc.components)
    assert [str(d.symbol) for d in doc.component("dilated").shapes.outputs[0].dims[2:]] == ["T"]


def test_a_2d_convolution_states_a_setting_once_when_its_axes_share_it():
    """ViT-B/16's patch convolution read "kernel 16 × 16, stride 16, 16.": a stride, padding or dilation that is
    the same on every axis is one number; one that differs gives each axis's, as the kernel does."""
    doc = pipeline.describe(fixture_spec("image_convs"))
    said = {c.id: c.summary for c in doc.components}
    assert said["patches"] == "A 2-d convolution from 3 to 8 channels, kernel 4 × 4, stride 4."
    assert said["tall"] == "A 2-d convolution from 8 to 8 channels, kernel 3 × 1, stride 2 × 1, with padding 1 × 0."
    assert all(c.equations.verification.verified for c in doc.components)


def test_a_query_with_every_key_masked_gets_zeros_as_torch_gives_them():
    """A boolean mask built from a padding mask and a causal one leaves the first query no key where the first key is
    padding: scaled_dot_product_attention gives that query zeros, the equations gave 0/0 = NaN, and `build` exited
    1 ("differ by inf") on a correct model. The page says what a mask adds and what a query with no key gets."""
    from atlas.analyse.equations.ops_nn import Attention
    doc = pipeline.describe(f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:padded_causal_attention")
    root = doc.root.equations
    assert root.verification.verified, root.verification.reason
    notes = [str(text) for _, text in root.notations]
    assert any("a query whose every key is masked gets zeros" in n for n in notes), notes
    q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    mask = torch.tensor([[False, False, False], [True, False, False], [True, True, True]])
    node = Attention(None, None, None, None, head=4)
    got = node.run(None, q, q, q, mask)
    assert torch.allclose(got, nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask), atol=1e-12)
    assert torch.equal(got[0, 0, 0], torch.zeros(4, dtype=torch.float64))        # the query with no key


def test_noise_drawn_in_the_default_dtype_is_checked_in_the_checks_precision():
    """torch.randn(B, 8, T) comes in float32 and the code casts it to the input's dtype, which the record's float32
    makes a no-op: the check redrew it in float32 beside float64 weights, "Input type (float) and bias type (double)
    should be the same", and a correct model (VITS) exited 1."""
    doc = pipeline.describe(fixture_spec("drawn_noise"))
    assert all(c.equations.verification.verified for c in doc.components)


class PaddedEncoderClassifier(nn.Module):
    """torch's TransformerEncoder given a padding mask made from the tokens, as a text classifier is written."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.emb = nn.Embedding(50, d, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, 3)

    def forward(self, tokens):
        mask = tokens == 0
        x = self.encoder(self.emb(tokens), src_key_padding_mask=mask)
        return self.head(x.masked_fill(mask.unsqueeze(-1), 0).sum(1))


def test_an_encoder_given_a_padding_mask_is_recorded():
    """nn.TransformerEncoder asks whether the padding mask is left-aligned before its nested-tensor fast path, an
    op no fake tensor can answer: the symbolic record stopped there (the helper's classifier got shapes for 1 of 14
    components; this one fell back to forwards at concrete sizes)."""
    doc = pipeline.document(spec.Loaded("inline", PaddedEncoderClassifier().eval(), None), pipeline.Settings())
    assert all(c.shapes.status.name == "DERIVED" and c.shapes.method in ("fake", "own") for c in doc.components)
    assert len(doc.input_notes) == 1 and "inferred" in doc.input_notes[0]
    for cid in ("encoder", "encoder.layers", "encoder.layers.self_attn", ""):
        e = doc.component(cid).equations
        assert e.status is EquationStatus.DERIVED and e.verification.verified, (cid, e.reason)


class StraightThrough(nn.Module):
    """A VQ-VAE's quantizer: the nearest codebook row, its losses and the straight-through estimator."""

    def __init__(self):
        super().__init__()
        self.codebook = nn.Embedding(8, 4)

    def forward(self, z):
        zq = self.codebook(torch.cdist(z, self.codebook.weight).argmin(-1))
        loss = ((zq.detach() - z) ** 2).mean() * 0.25 + ((zq - z.detach()) ** 2).mean()
        return z + (zq - z).detach(), loss


def test_a_stopped_gradient_is_written_and_explained():
    """`.detach()` was left out of the equations: the straight-through estimator z + (z_q − z).detach() read
    z + z_q − z, and the two VQ losses read alike."""
    loaded = spec.Loaded("inline", StraightThrough(), None)
    doc = pipeline.document(loaded, pipeline.Settings(inputs=("z:float32[B,4]",), cost=False))
    text = "\n".join(lines(doc, ""))
    assert r"z+\operatorname{sg}\!\left(\mathrm{zq}-z\right)" in text, text
    assert r"{\operatorname{sg}\!\left(\mathrm{zq}\right)}_j-z" in text and r"{\mathrm{zq}}_j-\operatorname{sg}\!\left(z\right)" in text
    e = doc.root.equations
    assert [latex(f) for f, _ in e.notations] == [r"\operatorname{sg}"] and e.verification.verified


class _NoOps(nn.Module):
    """What changes nothing on this instance: a scale the config set to 1.0, a cut that keeps the whole axis
    (transformers' `logits_to_keep = 0` is `x[:, -0:, :]`)."""

    def __init__(self, scaling: float = 1.0, keep: int = 0):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scaling, self.keep = scaling, keep

    def forward(self, x):
        kept = self.lin(x)[:, -self.keep:, :]
        cos = kept.cos() * self.scaling
        return cos


def test_a_scale_of_one_and_a_whole_slice_are_no_steps():
    """"cos = cos(emb) · 1" read like a typo, and "x' = x[:, 0:, :]" was a step of its own; with them out of the
    op tree the page's steps are those that compute, named as the code names them (`cos`), and still verified.
    A scale of 2 and a cut of the last 3 positions stay."""
    doc = _leaf_doc(_NoOps(), ["x:float32[B,T,4]"])
    assert lines(doc, "") == [r"\mathrm{kept} = x\,{W_{\mathrm{lin}}}+{b_{\mathrm{lin}}}",
                              r"\mathrm{cos} = \cos\left(\mathrm{kept}\right)"]
    assert doc.root.equations.verification.verified
    kept = _leaf_doc(_NoOps(2.0, 3), ["x:float32[B,T,4]"])
    assert any(r"\left[" in line for line in lines(kept, "")) and any(r"\,2" in line for line in lines(kept, "")), \
        lines(kept, "")
    assert kept.root.equations.verification.verified


class _ScaleOfATensor(nn.Module):
    """DeBERTa's scale, `torch.sqrt(torch.tensor(q.size(-1)) * scale_factor)`, and its score summed from a 0."""

    def __init__(self):
        super().__init__()
        self.q, self.k = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        scale = torch.sqrt(torch.tensor(q.size(-1), dtype=torch.float) * 3)
        score = 0
        score += q @ k.transpose(-1, -2) / scale
        return 0 - score.softmax(-1)


def test_a_tensor_of_one_number_is_that_number_and_a_sum_from_zero_starts_at_its_first_term():
    """The scale printed as \\sqrt{\\operatorname{tensor}(\\ldots)\\,3}, a placeholder where the code has 8, and the
    score as "... + 0". 0 - x stays a subtraction."""
    doc = _leaf_doc(_ScaleOfATensor(), ["x:float32[B,T,8]"])
    steps = lines(doc, "")
    assert r"\mathrm{scale} = \sqrt{8\cdot 3}" in steps, steps
    assert not any("tensor" in line or line.endswith("+0") for line in steps), steps
    assert steps[-1].startswith("y = 0-"), steps[-1]
    assert doc.root.equations.verification.verified


class _NewAxes(nn.Module):
    """Indexing that adds axes, as DeBERTa's relative positions do (`q_ids[:, None] - k_ids[None, :]`)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        return y[:, None] * y[None, :, None], y[..., None]       # [1, B, B, 4] and [B, 4, 1]


def test_an_index_that_adds_axes_is_the_unsqueezes_it_is():
    """`x[:, None]` printed as x[:, \\mathrm{None}]: None is no value a reader knows; it adds an axis."""
    doc = _leaf_doc(_NewAxes(), ["x:float32[B,4]"])
    steps = lines(doc, "")
    assert not any("None" in line for line in steps), steps
    assert any(r"\operatorname{unsqueeze}_{2}\!\left(\operatorname{unsqueeze}_{0}" in line for line in steps), steps
    assert any(r"\operatorname{unsqueeze}_{-1}" in line for line in steps), steps
    assert doc.root.equations.verification.verified
