"""The roles of each documented model (atlas.document.role_entries) and the role pages built from them: every model of the
docs folder listed, every row linked to a component page that exists and whose equations are verified."""

import json
import posixpath
import re

import pytest
from conftest import ROOT

from atlas import i18n
from atlas.document import role_entries, serialize
from atlas.render import model_pages, page_paths, role_pages

DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def docs():
    """Every model the docs folder documents, read back from its atlas.json."""
    return [serialize.from_dict(json.loads(p.read_text())) for p in sorted(DOCS.glob("*/atlas.json"))]


@pytest.fixture(scope="module")
def pages(docs):
    return role_pages.render(docs, model_pages.environment())


def _entries(docs, slug, role):
    doc = next(d for d in docs if d.slug == slug)
    return [e for e in role_entries.of(doc) if e.role == role]


def test_attention_read_off_the_idioms(docs):
    (llama,) = _entries(docs, "llama-3-8b", "attention")
    assert (llama.component, llama.kind, llama.get("heads"), llama.get("kv_heads"), llama.get("head_dim")) == \
        ("model.layers.self_attn", "gqa", 32, 8, 128)
    assert llama.get("theta") == 500000.0 and llama.get("placement") == "pre" and llama.instances == 32
    assert llama.kv_cache_per_token == 2 * 8 * 128 and llama.flops_at == (("T", 1024),)
    assert llama.parameters_per_instance == 4096 * (32 + 8 + 8 + 32) * 128
    (olmoe,) = _entries(docs, "olmoe-1b-7b", "attention")
    assert (olmoe.kind, olmoe.get("heads"), olmoe.get("kv_heads")) == ("mha", 16, 16)
    whisper = _entries(docs, "whisper-base", "attention")
    assert [e.component for e in whisper] == ["model.encoder.layers.self_attn", "model.decoder.layers.self_attn",
                                              "model.decoder.layers.encoder_attn"]
    assert [e.kv_cache_per_token for e in whisper] == [None, 2 * 8 * 64, None]    # only the causal one caches
    assert whisper[0].flops_per == "input" and whisper[1].flops_per == "token"


def test_kv_cache_adds_up_to_the_models(docs):
    """The causal self-attentions' keys and values per token, over every instance, are what the model's recorded
    cache grows by per token, in float32's 4 bytes."""
    checked = 0
    for doc in docs:
        per_token = doc.cost_summary.kv_cache_bytes_per_token if doc.cost_summary else None
        if per_token is None:
            continue
        values = sum(e.kv_cache_per_token * e.instances for e in role_entries.of(doc) if e.kv_cache_per_token)
        assert values * 4 == per_token, doc.slug
        checked += 1
    assert checked >= 3


def test_mlp_and_experts(docs):
    (llama,) = _entries(docs, "llama-3-8b", "mlp")
    assert (llama.kind, llama.get("hidden"), llama.get("activation")) == ("swiglu", 14336, "silu")
    (olmoe,) = _entries(docs, "olmoe-1b-7b", "mlp")
    assert (olmoe.kind, olmoe.get("experts"), olmoe.get("top_k")) == ("moe", 64, 8)
    doc = next(d for d in docs if d.slug == "olmoe-1b-7b")
    expert = doc.totals.experts[0]
    assert olmoe.parameters_per_instance == expert.experts * expert.per_expert
    assert olmoe.flops == 2 * expert.top_k * expert.per_expert      # a token through its top-k experts


def test_norms_positions(docs):
    gpt2 = _entries(docs, "gpt-2", "normalization")
    assert [(e.component, e.kind, e.get("eps"), e.get("placement")) for e in gpt2] == [
        ("transformer.h.ln_1", "layernorm", 1e-05, "pre"), ("transformer.h.ln_2", "layernorm", 1e-05, "pre"),
        ("transformer.ln_f", "layernorm", 1e-05, None)]
    bert = _entries(docs, "bert-base", "normalization")
    assert {e.get("placement") for e in bert[1:]} == {"post"} and bert[0].get("eps") == 1e-12
    olmoe = [e.component for e in _entries(docs, "olmoe-1b-7b", "normalization")]
    assert olmoe[:2] == ["model.layers.self_attn.q_norm", "model.layers.self_attn.k_norm"]
    whisper = [(e.kind, e.get("positions")) for e in _entries(docs, "whisper-base", "positions")]
    assert whisper == [("frozen", 1500), ("learned", 448)]


_ROW = re.compile(r"^\| \[(?P<title>[^\]]+)\]\((?P<href>[^)]+)\)\{\.atlas-role-link #(?P<anchor>[\w-]+) "
                  r"data-verified=\"(?P<v>\w+)\"\}", re.M)


@pytest.mark.parametrize("code", ["en", "es"])
def test_role_pages_list_every_model_and_link_verified_components(docs, pages, code):
    by_url = {page_paths.page_path(d, c): (d, c) for d in docs for c in d.components}
    listed_anywhere = set()
    for role, path in role_pages.PAGES.items():
        text = pages[page_paths.localized(path, code)]
        rows = list(_ROW.finditer(text))
        assert len(rows) == sum(len(_entries(docs, d.slug, role)) for d in docs) > 0
        listed = set()
        for m in rows:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), m["href"]))
            assert (DOCS / target).is_file(), target
            doc, comp = by_url[target]
            view = comp.equations.paper if comp.equations.paper and not comp.equations.paper.same else comp.equations
            assert m["v"] == "true" and view.verification.verified, target
            assert m["title"].startswith(doc.name)
            listed.add(doc.slug)
        assert listed == {d.slug for d in docs}, role      # every documented model has a component in each role
        anchors = [m["anchor"] for m in rows]
        assert len(set(anchors)) == len(anchors)
        for same in re.finditer(r"\]\(#([\w-]+)\)", text):     # an equation printed once: its row is on the page
            assert same.group(1) in anchors
        listed_anywhere |= listed
    assert listed_anywhere == {p.parent.name for p in DOCS.glob("*/atlas.json")}


def test_differences_from_the_row_above_are_marked(pages):
    text = pages["catalog/attention.md"]
    llama = next(line for line in text.splitlines() if "llama-3-8b/model/layers/self_attn" in line)
    olmoe = next(line for line in text.splitlines() if "olmoe-1b-7b/model/layers/self_attn" in line)
    marked = '<span class="atlas-differs"><span class="atlas-sr">Differs from the row above: </span>'
    assert f"{marked}GQA 32/8</span>" in llama and f"{marked}MHA 16/16</span>" in olmoe
    assert "head dim: 128<br>" in olmoe            # the same as Llama's: not marked
    with i18n.language("es"):
        assert role_pages.value_text(500000.0) == "500.000" and role_pages.value_text(1e-05) == "10⁻⁵"
        assert role_pages.value_text(0.125) == "0,125" and role_pages.value_text(True) == "sí"
