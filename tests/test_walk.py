"""The walker on fixtures: tying, buffers, reuse, nesting, collapse and names."""

import pytest
import torch
from conftest import fixture_spec
from torch import nn

from atlas.document import CountedElsewhere
from atlas.extract import accounting, walk
from atlas.load import spec


def doc_of(name):
    return walk.walk(spec.load(fixture_spec(name)))


def ids(doc):
    return [c.id for c in doc.components]


@pytest.mark.parametrize("name", ["tied", "buffers", "reused", "nested", "two_layer_mlp"])
def test_invariant_on_fixtures(name):
    loaded = spec.load(fixture_spec(name))
    doc = walk.walk(loaded)
    assert doc.totals.parameters == sum(p.numel() for p in loaded.model.parameters())
    trained, frozen = accounting.tree_total(doc)
    assert (trained, frozen) == (doc.totals.trained, doc.totals.frozen)


def test_tied_weights_counted_once():
    doc = doc_of("tied")
    assert doc.totals.parameters == 10 * 4 + 4 * 4 + 4
    head = doc.component("head")
    assert head.parameters_per_instance == 40
    assert not head.rows[0].counted and head.rows[0].shared_with == ("embed.weight",)
    assert doc.component("embed").rows[0].shared_with == ("head.weight",)
    assert doc.root.parameters_per_instance == 60


def test_a_head_holding_a_tied_tensor_says_where_it_is_counted(capsys):
    """The head's own count holds the decoder's weight, which the model counts at the embedding: its table row and its
    page say so, and the table's parents add up to the total with it taken out."""
    from atlas.cli import main
    from atlas.render.model_pages import render
    doc = doc_of("tied_inside_head")
    head, decoder = doc.component("head"), doc.component("head.1")
    assert (doc.totals.parameters, head.parameters_per_instance) == (40 + 20, 20 + 40)
    assert head.counted_elsewhere == decoder.counted_elsewhere == (CountedElsewhere("embed.weight", 40),)
    assert doc.root.counted_elsewhere == doc.component("embed").counted_elsewhere == ()
    assert main(["describe", fixture_spec("tied_inside_head")]) == 0
    lines = {line[:38].strip(): line for line in capsys.readouterr().out.splitlines()}
    assert lines["Head"].endswith("(40 of them tied: counted at embed.weight)"), lines["Head"]
    assert lines["Linear (1)"].endswith("(tied: counted at embed.weight)"), lines["Linear (1)"]
    assert not lines["TiedInsideHead"].endswith(")") and not lines["Linear (0)"].endswith(")")
    pages = render(doc)
    assert "Of them, 40 are tied: the model counts them once, at `embed.weight`." in pages[f"{doc.slug}/head/index.md"]
    assert "All of them are tied: the model counts them once, at `embed.weight`." in pages[f"{doc.slug}/head/1.md"]
    assert "are tied: the model counts" not in pages[f"{doc.slug}/index.md"] + pages[f"{doc.slug}/embed.md"]
    assert "De ellos, 40 están atados: el modelo los cuenta una sola vez, en `embed.weight`." in \
        pages[f"{doc.slug}/head/index.es.md"]


def test_buffers_listed_apart():
    doc = doc_of("buffers")
    assert doc.totals.parameters == 4 + 4 + 6
    assert (doc.totals.trained, doc.totals.frozen) == (8, 6)
    # BatchNorm1d: running_mean 4, running_var 4, num_batches_tracked 1; plus scale 3 and table 10
    assert doc.totals.buffers == 4 + 4 + 1 + 3 + 10
    assert doc.totals.buffer_tensors == 5
    root = {b.name: b for b in doc.root.buffers}
    assert not root["scale"].persistent and root["table"].dtype == "int64"


def test_reused_submodule_counted_once():
    doc = doc_of("reused")
    assert doc.totals.parameters == 20 + 10
    first, second = doc.component("first"), doc.component("second")
    assert all(r.counted for r in first.rows)
    assert not any(r.counted for r in second.rows)
    assert second.rows[0].shared_with == ("first.weight",)


def test_nested_containers_collapse():
    doc = doc_of("nested")
    assert "stages.enc" in ids(doc)
    enc = doc.component("stages.enc")
    assert enc.instances == 3 and enc.repeat == 3
    assert enc.module_paths == ("stages.enc.0", "stages.enc.1", "stages.enc.2")
    # entries that differ (width 16) split into groups
    assert "stages.dec.0-1" in ids(doc) and "stages.dec.2" in ids(doc)
    assert doc.component("stages.dec.0-1").instances == 2
    assert doc.component("stages.enc.norm").instances == 3
    # identical GELUs in a Sequential collapse; the Linears differ
    assert doc.component("mlp.1,3").instances == 2
    assert {"mlp.0", "mlp.2", "mlp.4"} <= set(ids(doc))


def test_names():
    doc = doc_of("nested")
    # three Block positions collide; they are named by attribute, then by position
    assert doc.component("stages.enc").name == "Encoder"      # the abbreviation, expanded
    assert doc.component("stages.dec.0-1").name == "Block (stages.dec.0-1)"
    assert doc.component("stages.enc").cls == "models.Block"
    assert doc.component("stages.enc.norm").name == "Norm"
    assert doc.component("mlp.0").name.startswith("Linear")


def test_collapse_splits_on_hyperparameters():
    m = nn.Sequential(nn.LayerNorm(4, eps=1e-5), nn.LayerNorm(4, eps=1e-6))
    doc = walk.walk(spec.Loaded("inline", m, None))
    assert [c.id for c in doc.components] == ["", "0", "1"]


def test_frozen_and_trained_rows():
    m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 5))
    m[0].requires_grad_(False)
    doc = walk.walk(spec.Loaded("inline", m, None))
    assert (doc.totals.trained, doc.totals.frozen) == (25, 16)
    assert [r.trained for r in doc.component("0").rows] == [False, False]


def test_meta_and_cpu_agree():
    m = spec.load(fixture_spec("nested")).model
    cpu = spec.load(fixture_spec("nested"), device="cpu").model
    assert next(cpu.parameters()).device.type == "cpu"
    a = walk.walk(spec.Loaded("x", m, None))
    b = walk.walk(spec.Loaded("x", cpu, None))
    assert a == b


def test_nn_transformer():
    with torch.device("meta"):
        m = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=3, num_decoder_layers=2, dim_feedforward=128)
    doc = walk.walk(spec.Loaded("nn.Transformer", m, None))
    assert doc.totals.parameters == sum(p.numel() for p in m.parameters())
    layer = doc.component("encoder.layers")
    assert layer.instances == 3 and layer.name == "TransformerEncoderLayer" and not layer.name_is_prose
    assert doc.component("decoder.layers.self_attn").instances == 2
    mha = doc.component("encoder.layers.self_attn")
    assert [r.name for r in mha.rows] == ["in_proj_weight", "in_proj_bias"]


def test_70b_and_8b_have_the_same_pages():
    """Repeated blocks collapse: 80 layers and 32 layers give the same components, so the same pages."""
    from conftest import ROOT
    llama = ROOT / "tests" / "fixtures" / "llama.py"
    big = walk.walk(spec.load(f"{llama}:llama3_70b"))
    small = walk.walk(spec.load(f"{llama}:llama3_8b"))
    assert [c.id for c in big.components] == [c.id for c in small.components]
    assert big.component("layers").instances == 80 and small.component("layers").instances == 32
    assert big.totals.parameters == 70_553_706_496


@pytest.mark.parametrize("doc, said", [
    ("Additive attention (Bahdanau et al. 2015). Scores every source position.", "Additive attention (Bahdanau et al. 2015)."),
    ("Log density of the flow, after Dinh et al. 2017. Sums the log-determinants.",
     "Log density of the flow, after Dinh et al. 2017."),
    ("Masks keys, e.g. padding ones. Then attends.", "Masks keys, e.g. padding ones."),
    ("Attention from A. Vaswani's paper. Multi-head.", "Attention from A. Vaswani's paper."),
    ("A block (see Eq. 3). Pre-norm.", "A block (see Eq. 3)."),
    ("Projects the input:\n\n    y = x W", "Projects the input.")])
def test_a_summary_is_the_docstrings_first_sentence(doc, said):
    """The summary stopped at the first full stop: "Additive attention (Bahdanau et al." on a seq2seq's page."""
    klass = type("Documented", (nn.Module,), {"__doc__": doc, "forward": lambda self, x: x})
    assert walk.summary(klass()) == said
