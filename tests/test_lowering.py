"""Recorded calls are lowered by their arguments' names, as torch binds them: keywords, NumPy's aliases and
method forms mean what they mean to torch, axes from the end count from the end, and no page prints a
`None` in place of an argument."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from atlas.analyse.equations import lower_event as lower_mod
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.arguments import bind
from atlas.analyse.equations.derive import with_equations
from atlas.document.input_specs import vocabulary
from atlas.extract import walk
from atlas.extract.record import plan
from atlas.extract.trace.structures import OpEvent, Ref, Size, Value
from atlas.load import spec
from atlas.render.latex import latex
from atlas.render.math_markup import names_of, plain


# -- tiny models, one per way a call can be written ---------------------------------------------------
class KeywordArguments(nn.Module):
    """Arguments by keyword, `input=` included, where a reading by position finds nothing."""

    atlas_inputs = ("x:float32[B,8]",)

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))
        self.b = nn.Parameter(torch.randn(8))

    def forward(self, x):
        h = torch.addmm(input=self.b, mat1=x, mat2=self.w, alpha=0.5)
        position = torch.arange(start=0, end=x.shape[1])
        h = torch.add(input=h, other=position, alpha=2)
        return torch.softmax(input=h, dim=-1)


class AxisAlias(nn.Module):
    """NumPy's spellings: axis= for dim=, keepdims= for keepdim=."""

    atlas_inputs = ("x:float32[B,T,8]",)

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        h = torch.cat([h[:, :1], h], axis=1)                     # [B, T+1, 8]
        return h - h.sum(axis=-1, keepdims=True)


class WhereMethod(nn.Module):
    """Tensor.where(condition, other): the tensor is the receiver, the condition comes first."""

    atlas_inputs = ("x:float32[B,T,8]",)

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        return h.where(h > 0, torch.zeros_like(h))


class BaddbmmKeywords(nn.Module):
    """ALiBi-style scores: bias.baddbmm(batch1=..., batch2=..., beta=..., alpha=...)."""

    atlas_inputs = ("x:float32[B,T,8]",)

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        bias = torch.ones(x.shape[0], x.shape[1], x.shape[1])
        return bias.baddbmm(batch1=q, batch2=k.transpose(1, 2), beta=1.0, alpha=0.5)


class UnbindFromEnd(nn.Module):
    """q, k, v split off the third axis from the end: not the last axis."""

    atlas_inputs = ("x:float32[B,T,8]",)

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, 2, 4).unbind(dim=-3)     # each [B, T, 2, 4]
        return q * k + v


class BatchHeadsMerge(nn.Module):
    """Heads folded into the batch for bmm ([B·h, T, d], as Bloom does), then put back side by side."""

    atlas_inputs = ("x:float32[B,T,8]",)

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        B, T, _ = x.shape
        fused = self.qkv(x).view(B, T, 2, 3, 4)
        q, k, v = fused[..., 0, :], fused[..., 1, :], fused[..., 2, :]       # each [B, T, 2, 4]
        q = q.transpose(1, 2).reshape(B * 2, T, 4)                  # batch and heads merged: [2B, T, 4]
        k = k.transpose(1, 2).reshape(B * 2, T, 4)
        v = v.transpose(1, 2).reshape(B * 2, T, 4)
        o = torch.bmm(torch.bmm(q, k.transpose(1, 2)).softmax(-1), v).view(B, 2, T, 4)
        return o.transpose(1, 2).reshape(B, T, 8)                   # heads merged: concat_h


class DtypeExtreme(nn.Module):
    """A mask filled with the lowest number of the scores' own dtype: it follows the dtype the check runs in."""

    atlas_inputs = ("x:float32[B,T,8]",)

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        s = self.lin(x)
        return s.masked_fill(s < 0, torch.finfo(s.dtype).min).softmax(-1)


def _doc(model: nn.Module):
    loaded = spec.Loaded("inline", model, None)
    out = plan.record(model, walk.walk(loaded))
    return with_equations(model, out.doc, out.trace, vocabulary(None, None))     # raises EquationMismatch on any mismatch


def _lines(doc) -> list[str]:
    e = doc.root.equations
    return [plain(s.formula, names_of(e)) for s in e.steps]


CASES = {
    KeywordArguments: (r"h = 0.5\,x\,w+b", r"\operatorname{range}(0,\,8,\,1)", r"h+2\,\mathrm{position}"),
    AxisAlias: (r"\sum_{j=1}^{8}", "[\\,"),                      # the sum over the features, the concatenation
    WhereMethod: (r"h & \text{if } h>0", r"\mathbf{0}_{B\times T\times 8} & \text{otherwise}"),
    BaddbmmKeywords: (r"0.5\,q\,{k}^{\mathsf T}", r"\mathbf{1}_{B\times T\times T}"),
    UnbindFromEnd: (r"\left[{:},\,{:},\,0\right]", r"\left[{:},\,{:},\,2\right]"),
    BatchHeadsMerge: (r"\operatorname{reshape}_{2B\times T\times 4}", r"\operatorname{concat}_h"),
    DtypeExtreme: (r"\operatorname{lowest}\!\left(\mathrm{float32}\right) & \text{if } s<0",),
}


@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_calls_written_any_way_are_verified(cls):
    doc = _doc(cls())
    root = doc.root.equations
    assert root.verification.verified, root.verification.reason
    text = "\n".join(_lines(doc))
    for expected in CASES[cls]:
        assert expected in text, (cls.__name__, expected, text)
    for comp in doc.components:
        for step in comp.equations.steps:
            assert "None" not in latex(step.formula), (cls.__name__, comp.id, latex(step.formula))


def test_a_batch_and_heads_merge_is_a_reshape_not_concat_h():
    text = "\n".join(_lines(_doc(BatchHeadsMerge())))
    assert text.count(r"\operatorname{concat}_h") == 1          # only the real merge of the heads at the end
    assert text.count(r"\operatorname{reshape}_{2B\times T\times 4}") == 3


# -- binding arguments by name ------------------------------------------------------------------------
def _ref(shape, dtype="float32"):
    return Ref(Value(0, "input", shape, dtype))


X, C, Y = _ref((2, 3, 4)), _ref((2, 3, 4), "bool"), _ref((2, 3, 4))


def _event(func, name, *args, **kwargs):
    return OpEvent(func, name, tuple(args), kwargs, _ref((2, 3, 4)), None)


def test_method_receiver_binds_self_wherever_the_schema_has_it():
    b = bind(_event(torch.Tensor.where, "Tensor.where", X, C, Y))
    assert (b.values["input"], b.values["condition"], b.values["other"]) == (X, C, Y)
    b = bind(_event(torch.where, "where", C, X, Y))
    assert (b.values["condition"], b.values["input"], b.values["other"]) == (C, X, Y)


def test_keywords_aliases_and_defaults():
    A, B1, B2 = _ref((2, 3, 3)), _ref((2, 3, 4)), _ref((2, 4, 3))
    b = bind(_event(torch.Tensor.baddbmm, "Tensor.baddbmm", A, batch1=B1, batch2=B2, alpha=0.5))
    assert (b.values["input"], b.values["batch1"], b.values["batch2"]) == (A, B1, B2)
    assert (b.values["alpha"], b.values["beta"]) == (0.5, 1)      # beta: the schema's default
    assert b.origin["alpha"] == ("kw", "alpha") and "beta" not in b.origin
    b = bind(_event(torch.cat, "cat", [X, Y], axis=1))
    assert b.values["dim"] == 1 and b.origin["dim"] == ("kw", "axis")
    b = bind(_event(torch.Tensor.sum, "Tensor.sum", X, -1, keepdims=True))
    assert (b.values["dim"], b.values["keepdim"]) == (-1, True)


def test_sizes_given_one_by_one_are_one_list_and_overloads_follow_types():
    T = Size(7)
    assert bind(_event(torch.Tensor.view, "Tensor.view", X, 2, T, 4)).values["size"] == (2, T, 4)
    assert bind(_event(torch.Tensor.view, "Tensor.view", X, torch.float16)).values["dtype"] is torch.float16
    assert bind(_event(torch.Tensor.max, "Tensor.max", X, -1)).values["dim"] == -1          # max.dim
    assert bind(_event(torch.Tensor.max, "Tensor.max", X, Y)).values["other"] == Y          # max.other
    assert bind(_event(torch.Tensor.to, "Tensor.to", X, torch.float16)).values["dtype"] is torch.float16
    b = bind(_event(F.softmax, "softmax", X, -1))                   # a Python-level function: its own signature
    assert (b.values["input"], b.values["dim"]) == (X, -1) and b.origin["dim"] == ("arg", 1)
    assert bind(_event(torch.Tensor.__add__, "Tensor.__add__", X, 2)).values == {"input": X, "other": 2}


def test_a_call_that_fits_no_signature_is_not_bound():
    assert bind(_event(torch.cat, "cat", [X, Y], axes=1)) is None
    assert bind(_event(torch.Tensor.baddbmm, "Tensor.baddbmm", X)) is None          # batch1, batch2 missing


# -- never a node over None -----------------------------------------------------------------------------
def _node_of(ref):
    return n.Apply((), {}, func=torch.zeros, name=f"v{id(ref) % 97}")


def test_a_call_missing_what_its_lowering_needs_is_lowered_as_itself():
    node = lower_mod.lower(_event(torch.Tensor.baddbmm, "Tensor.baddbmm", X), _node_of)
    assert isinstance(node, n.Apply) and node.meta["name"] == "baddbmm"


def test_a_lowering_that_leaves_a_hole_falls_back(monkeypatch):
    monkeypatch.setitem(lower_mod.TABLE, "mm", lambda L: t.MatMul(L.get("input"), None))
    node = lower_mod.lower(_event(torch.mm, "mm", X, Y), _node_of)
    assert isinstance(node, n.Apply) and node.meta["name"] == "mm"


def test_a_shared_node_is_visited_once_by_distinct():
    """A dense block's layer takes every earlier output: walk() reaches the first one once per path, 2^29 times at
    depth 30; distinct() visits each node once, in walk()'s order of first visits (the page's constants and steps
    keep their order)."""
    from atlas.analyse.equations.nodes import Node, Sym

    class Cat(Node):
        __slots__ = ()

    x = Sym("x")
    outputs = [x]
    for _ in range(30):
        outputs.append(Cat(tuple(outputs)))
    top = outputs[-1]
    assert len(list(top.distinct())) == 31
    small = outputs[4]
    assert [id(n) for n in small.distinct()] == list(dict.fromkeys(id(n) for n in small.walk()))
