"""What the index groups by: attention variants from the heads facts, normalizations from the norm fact, torch.nn
classes from the module tree (subclasses and containers included)."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from atlas import pipeline
from atlas.analyse.reference import class_uses
from atlas.load import spec


class GroupedQueryAttention(nn.Module):
    """8 query heads sharing 2 key/value heads, computed as Llama does: split the projections, repeat k and v."""

    def __init__(self, d: int = 32, heads: int = 8, kv_heads: int = 2) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))


class NormOverRootD(nn.Module):
    """An RMS norm written as a 2-norm over √d."""

    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.d = d

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (torch.linalg.vector_norm(x, dim=-1, keepdim=True) / math.sqrt(self.d) + 1e-6)


class UnitNorm(nn.Module):
    """An L2 normalization: a 2-norm over a number that is not √d."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (torch.linalg.vector_norm(x, dim=-1, keepdim=True) / math.sqrt(7) + 1e-6)


class MeanSquare(nn.Module):
    """Llama's form: the mean of squares under a reciprocal square root."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Positions(nn.Embedding):
    """A subclass of a torch.nn class, as Whisper's positional embedding is."""


class Toy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = GroupedQueryAttention()
        self.norms = nn.ModuleList([NormOverRootD(), UnitNorm(), MeanSquare(), nn.LayerNorm(32)])
        self.pos = Positions(16, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.pos.weight[: x.shape[1]]
        x = self.attn(x)
        for norm in self.norms:
            x = norm(x)
        return x


def toy() -> Toy:
    return Toy()


@pytest.fixture(scope="module")
def documented():
    loaded = spec.load(f"{__file__}:toy")
    doc = pipeline.document(loaded, pipeline.Settings(inputs=("x:float32[B,T,32]",), cost=False))
    return doc, loaded.model


def test_facts_name_the_kv_heads_and_the_norm_forms(documented):
    doc, _ = documented
    facts = {f.kind: f.value for f in doc.component("attn").equations.facts}
    assert (facts["heads"], facts["kv_heads"], facts["head_features"]) == (8, 2, 4)
    forms = {c.id: {f.kind: f.value for f in c.equations.facts}.get("norm") for c in doc.components
             if c.id.startswith("norms.")}
    assert forms == {"norms.0": "rms", "norms.1": "l2", "norms.2": "rms", "norms.3": "layer"}


def test_kinds_group_components_by_their_facts(documented):
    doc, _ = documented
    kinds = {k.key: [m.component for m in k.members] for k in class_uses.kinds([doc])}
    assert kinds == {"attention/grouped-query": ["attn"], "norm/layer": ["norms.3"], "norm/rms": ["norms.0", "norms.2"],
                     "norm/l2": ["norms.1"]}
    (gqa,) = [k for k in class_uses.kinds([doc]) if k.key == "attention/grouped-query"]
    assert gqa.members[0].detail == "8 query heads and 2 key/value heads of 4 features"


def test_uses_cover_subclasses_and_containers(documented):
    """Recorded while the module is there, kept in the document: the uses read off a document read back from its
    JSON, with no module, are the same."""
    from atlas.document import serialize
    from atlas.render import json_export
    doc, model = documented
    assert doc.class_uses == class_uses.record(model, doc)
    assert [(u.cls, u.component, u.subclass) for u in doc.class_uses if u.subclass] == [
        ("torch.nn.Embedding", "pos", "Positions")]
    back = serialize.loads(serialize.dumps(json_export.as_dict(doc)))
    assert back.class_uses == doc.class_uses and class_uses.uses([back]) == class_uses.uses([doc])
    uses = class_uses.uses([back])
    (emb,) = uses[nn.Embedding]
    assert (emb.component, emb.subclass, emb.instances) == ("pos", "Positions", 1)
    (lst,) = uses[nn.ModuleList]
    assert (lst.component, lst.attribute, lst.held) == ("", "norms", (
        ("norms.0", doc.component("norms.0").name, 1), ("norms.1", doc.component("norms.1").name, 1),
        ("norms.2", doc.component("norms.2").name, 1), ("norms.3", doc.component("norms.3").name, 1)))
    assert {u.component for u in uses[nn.Linear]} == {"attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.o_proj"}
    assert class_uses.torch_class(Positions) is nn.Embedding and class_uses.torch_class(Toy) is None
