"""Every op kind prints what it runs: its printer and evaluator live together, and this checks both.

For each kind: the value it computes equals torch's own computation; its LaTeX names every argument it
runs on (no kind prints a fixed string); and what changes the computation shows in the print (a transpose
shows its axes or ᵀ, a cast its dtype, a dropout its rate, a softmax the size it sums over).
"""

import math

import pytest
import torch
import torch.nn.functional as F

from atlas.analyse.equations import leaves, recurrent
from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.nodes import Evaluator, Node, Num, Printer, SizeOf, Sym
from atlas.analyse.equations.scalars import DtypeLimit, Eps, Pi
from atlas.render.latex import latex

g = torch.Generator().manual_seed(0)
A = torch.randn(2, 3, 4, generator=g, dtype=torch.float64)
B = torch.randn(2, 3, 4, generator=g, dtype=torch.float64)
W = torch.randn(4, 5, generator=g, dtype=torch.float64)
P = torch.rand(2, 3, 4, generator=g, dtype=torch.float64) + 0.5          # positive
I = torch.tensor([[0, 2, 1], [1, 1, 0]])
ENV = {"a": A, "b": B, "w": W, "p": P, "i": I, "mask": A > 0, "q": torch.randn(2, 2, 3, 4, generator=g, dtype=torch.float64),
       "k": torch.randn(2, 2, 5, 4, generator=g, dtype=torch.float64), "v": torch.randn(2, 2, 5, 4, generator=g, dtype=torch.float64),
       "k1": torch.randn(2, 1, 5, 4, generator=g, dtype=torch.float64), "v1": torch.randn(2, 1, 5, 4, generator=g, dtype=torch.float64),
       "img": torch.randn(2, 3, 6, generator=g, dtype=torch.float64), "cw": torch.randn(4, 3, 3, generator=g, dtype=torch.float64),
       "cb": torch.randn(4, generator=g, dtype=torch.float64), "lin": torch.randn(5, 4, generator=g, dtype=torch.float64)}
a, b, w, p, i = Sym("a"), Sym("b"), Sym("w"), Sym("p"), Sym("i")

# kinds whose value depends on their argument's dtype alone (ε_mach of x's float type): the print names no argument
READS_ONLY_THE_DTYPE = {"MachineEpsilon"}
# kind -> (node, expected value, what the print must show besides every argument)
CASES = {
    "Add": (m.Add(a, b), A + B, "+"),
    "MachineEpsilon": (m.MachineEpsilon(a), torch.tensor(torch.finfo(torch.float64).eps, dtype=torch.float64),
                       r"\epsilon_{\mathrm{mach}}"),
    "Sub": (m.Sub(a, b), A - B, "-"),
    "Neg": (m.Neg(a), -A, "-"),
    "Mul": (m.Mul(a, b), A * B, r"\odot"),
    "Div": (m.Div(a, b), A / B, r"\frac"),
    "FloorDiv": (m.FloorDiv(p, Num(0.3)), P // 0.3, r"\lfloor"),
    "Mod": (m.Mod(p, Num(0.3)), P % 0.3, r"\bmod"),
    "Pow": (m.Pow(a, Num(3)), A ** 3, "^{3}"),
    "Sqrt": (m.Sqrt(p), P.sqrt(), r"\sqrt"),
    "Rsqrt": (m.Rsqrt(p), P.rsqrt(), r"\frac{1}{\sqrt"),
    "Reciprocal": (m.Reciprocal(p), 1 / P, r"\frac{1}"),
    "Tanh": (m.Tanh(a), A.tanh(), r"\tanh"),
    "Exp": (m.Exp(a), A.exp(), r"\exp"),
    "Log": (m.Log(p), P.log(), r"\log"),
    "Cos": (m.Cos(a), A.cos(), r"\cos"),
    "Sin": (m.Sin(a), A.sin(), r"\sin"),
    "Erf": (m.Erf(a), torch.erf(A), "erf"),
    "Abs": (m.Abs(a), A.abs(), "abs"),
    "Sign": (m.Sign(a), A.sign(), "sign"),
    "Sigmoid": (m.Sigmoid(a), torch.sigmoid(A), r"\sigma"),
    "Phi": (m.Phi(a), 0.5 * (1 + torch.erf(A / math.sqrt(2))), r"\Phi"),
    "Softplus": (m.Softplus(a), F.softplus(A), "softplus"),
    "Floor": (m.Floor(a), A.floor(), "floor"),
    "Max": (m.Max(a, b), torch.maximum(A, B), r"\max"),
    "Min": (m.Min(a, b), torch.minimum(A, B), r"\min"),
    "Compare": (m.Compare(a, b, op="lt"), A < B, "<"),
    "Where": (m.Where(Sym("mask"), a, b), torch.where(A > 0, A, B), "cases"),
    "Not": (m.Not(Sym("mask")), A <= 0, r"\neg"),
    "Logical": (m.Logical(Sym("mask"), m.Compare(a, b, op="lt"), op="or"), (A > 0) | (A < B), r"\lor"),
    # finfo(x.dtype).min of a float32 record runs as the check's dtype's own (float64 here), as forward() does
    "DtypeLimit": (m.Where(Sym("mask"), a, DtypeLimit(torch.finfo(torch.float32).min, limit="min", dtype="float32")),
                   torch.where(A > 0, A, torch.finfo(torch.float64).min), r"\operatorname{lowest}\!\left(\mathrm{float32}"),
    "Mean": (red.Mean(a, SizeOf(4), dim=-1, keepdim=True), A.mean(-1, keepdim=True), r"\frac{1}{4}\sum_{j=1}^{4}"),
    "Sum": (red.Sum(a, SizeOf(4), dim=-1), A.sum(-1), r"\sum_{j=1}^{4}"),
    "Norm2": (red.Norm2(a, dim=-1, keepdim=True), A.norm(dim=-1, keepdim=True), r"\rVert_2"),
    "Var": (red.Var(a, SizeOf(4), dim=-1, correction=0), A.var(-1, correction=0), r"\operatorname{Var}_{4}"),
    "AMax": (red.AMax(a, dim=-1), A.amax(-1), r"\max_{j}"),
    "Softmax": (red.Softmax(a, SizeOf(4), dim=-1), A.softmax(-1), r"\sum_{u=1}^{4}"),
    "LogSoftmax": (red.LogSoftmax(a, SizeOf(4), dim=-1), A.log_softmax(-1), r"\log\operatorname{softmax}"),
    "MatMul": (t.MatMul(a, w), A @ W, r"\,"),
    "Transpose": (t.Transpose(a, d0=0, d1=1, ndim=3), A.transpose(0, 1), r"\operatorname{transpose}_{0,1}"),
    "Permute": (t.Permute(a, dims=(2, 0, 1)), A.permute(2, 0, 1), r"\operatorname{permute}_{(2,0,1)}"),
    "Reshape": (t.Reshape(a, (6, 4), shown=(6, 4)), A.reshape(6, 4), r"\operatorname{reshape}_{6\times 4}"),
    "Heads": (t.Heads(a, (2, 3, 2, 2), heads=2, features=2), A.reshape(2, 3, 2, 2).transpose(1, 2), "^{h}"),
    "MergeHeads": (t.MergeHeads(Sym("q"), (2, 3, 8)), ENV["q"].transpose(1, 2).reshape(2, 3, 8), r"\operatorname{concat}_h"),
    "Flatten": (t.Flatten(a, start=1, end=2), A.flatten(1, 2), r"\operatorname{flatten}_{1:2}"),
    "Unsqueeze": (t.Unsqueeze(a, dim=1), A.unsqueeze(1), r"\operatorname{unsqueeze}_{1}"),
    "Squeeze": (t.Squeeze(Sym("k1"), dim=1), ENV["k1"].squeeze(1), r"\operatorname{squeeze}_{1}"),
    "Expand": (t.Expand(Sym("k1"), (2, 2, 5, 4), shown=(2, 2, 5, 4)), ENV["k1"].expand(2, 2, 5, 4), r"\operatorname{expand}"),
    "Repeat": (t.Repeat(Sym("k1"), times=2, dim=1), ENV["k1"].repeat_interleave(2, dim=1), r"\operatorname{repeat}_{2}"),
    "Cat": (t.Cat(a, b, dim=1), torch.cat([A, B], 1), ";"),
    "Stack": (t.Stack(a, b, dim=0), torch.stack([A, B]), r"\operatorname{stack}"),
    "Slice": (t.Slice(a, SizeOf(1), SizeOf(3), dim=-1, last=True), A[..., 1:3], "_{2:3}"),
    "Index": (t.Index(a, (slice(None), 0)), A[:, 0], "0"),
    "SetIndex": (t.SetIndex(a, Num(0.0), (slice(None), 0)), torch.cat([torch.zeros(2, 1, 4, dtype=A.dtype), A[:, 1:]], 1), r"\leftarrow"),
    "Cast": (t.Cast(a, dtype="float16"), A.half(), r"\operatorname{float16}"),
    "StopGradient": (t.StopGradient(a), A, r"\operatorname{sg}\!\left(\atlasref{a}\right)"),
    "Rows": (t.Rows(w, i), W[I], r"\left["),
    "Arange": (t.Arange(Num(0), SizeOf(5), Num(1)), torch.arange(5), r"\dots,4"),
    "Fill": (t.Fill(Num(2.5), (2, 3), shown=(2, 3)), torch.full((2, 3), 2.5, dtype=torch.float64), r"2.5\,\mathbf{1}_{2\times 3}"),
    "Constant": (t.Constant(data=[1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64), "1,2"),
    "Item": (t.Item(t.Stack(a, b, dim=0), i=1), B, "_{2}"),
    "Attention": (n.Attention(Sym("q"), Sym("k"), Sym("v"), None, causal=False, scale=None, groups=1, head=4),
                  F.scaled_dot_product_attention(ENV["q"], ENV["k"], ENV["v"]), r"\sqrt{4}"),
    "Conv": (n.Conv(Sym("img"), Sym("cw"), Sym("cb"), nd=1, stride=(1,), padding=(1,), dilation=(1,), groups=1),
             F.conv1d(ENV["img"], ENV["cw"], ENV["cb"], padding=1), r"\star"),
    "Dropout": (n.Dropout(a, Num(0.1)), A, r"\operatorname{dropout}_{0.1}"),
    "Apply": (n.Apply((a, -1), {}, func=torch.cumsum, name="cumsum"), A.cumsum(-1), r"\operatorname{cumsum}"),
    "Linear": (n.Linear(a, Sym("lin"), None), A @ ENV["lin"].T, r"^{\mathsf T}"),
}



def _printed(node) -> str:
    """A node printed, as LaTeX with its symbols as references."""
    return latex(Printer().print(node))

def _kinds():
    """Every op kind the package defines."""
    seen, stack = set(), [Node]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return {c.__name__: c for c in seen if c.__module__.startswith("atlas.analyse.equations")}


# leaves of the tree, and kinds checked through their modules' pages (leaves, composites, recurrent cells,
# calls of real modules and loops over them): tests/test_equations.py verifies each against forward()
THROUGH_MODULES = {"Sym", "Num", "SizeOf", "Eps", "Pi", "BatchNormOp", "GroupNormOp", "MHAOp", "ActivationOp", "Scan",
                   "Call", "Loop"}


def test_a_mask_turned_over_binds_tighter_than_a_comparison_is_shown_so():
    """(¬a) = b is parenthesized, or it reads ¬(a = b); ¬ inside ∧ and a comparison inside ∧ need none; one ∧
    inside an ∨ is parenthesized."""
    pr = _printed
    assert pr(m.Compare(m.Not(Sym("mask")), b, op="eq")).startswith(r"\left(\neg ")
    both = m.Logical(m.Not(Sym("mask")), m.Compare(a, b, op="lt"), op="and")
    assert r"\left(" not in pr(both)
    assert pr(m.Logical(both, Sym("mask"), op="or")).startswith(r"\left(\neg ")


def test_a_call_printed_by_name_drops_torchs_private_and_in_place_marks():
    """OLMoE's experts printed \\operatorname{\\_grouped\\_mm}: the underscore is torch's private spelling, no part
    of the math; nor is an in-place call's trailing one."""
    pr = _printed
    assert pr(n.Apply((a, -1), {}, func=torch.cumsum, name="_cumsum")).startswith(r"\operatorname{cumsum}")
    assert pr(n.Apply((a, -1), {}, func=torch.cumsum, name="cumsum_")).startswith(r"\operatorname{cumsum}")
    assert pr(n.Apply((a,), {}, func=torch.neg, name="__neg__")).startswith(r"\operatorname{neg}")
    assert pr(n.Apply((a, a), {}, func=torch.add, name="_grouped_mm")).startswith(r"\operatorname{grouped\_mm}")


def test_every_kind_is_covered():
    missing = set(_kinds()) - set(CASES) - THROUGH_MODULES
    assert missing == set(), f"op kinds with no print/run test: {sorted(missing)}"
    assert {leaves.BatchNormOp, leaves.GroupNormOp, n.MHAOp, recurrent.Scan} <= set(_kinds().values())


@pytest.mark.parametrize("kind", sorted(CASES))
def test_prints_what_it_runs(kind):
    node, expected, marker = CASES[kind]
    got = Evaluator(dict(ENV), {}, torch.float64).value(node)
    if expected.dtype == torch.bool or not expected.is_floating_point():
        assert torch.equal(got, expected)
    else:
        assert torch.allclose(got.to(expected.dtype), expected, atol=1e-12, rtol=1e-10), kind
    tex = _printed(node)
    assert marker in tex, (kind, tex)
    if kind in READS_ONLY_THE_DTYPE:
        return
    for arg in node.walk():
        if isinstance(arg, Sym):
            assert r"\atlasref{" + arg.key + "}" in tex, (kind, arg.key, tex)


def test_settings_change_the_print():
    pr = _printed
    assert pr(t.Transpose(a, d0=-2, d1=-1, ndim=3)).endswith(r"^{\mathsf T}")
    assert pr(t.Transpose(a, d0=0, d1=2, ndim=3)) != pr(t.Transpose(a, d0=0, d1=1, ndim=3))
    assert pr(t.Cast(a, dtype="bfloat16")) != pr(t.Cast(a, dtype="float16"))
    assert pr(n.Dropout(a, Num(0.3))) != pr(n.Dropout(a, Num(0.1)))
    assert pr(red.Softmax(a, SizeOf(4), dim=-1)) != pr(red.Softmax(a, SizeOf(8), dim=-1))
    causal = n.Attention(Sym("q"), Sym("k"), Sym("v"), None, causal=True, scale=None, groups=1, head=4)
    assert r"\atlasref{c.causal}" in pr(causal)
    gqa = n.Attention(Sym("q"), Sym("k1"), Sym("v1"), None, causal=False, scale=None, groups=2, head=4)
    assert r"\operatorname{repeat}_{2}" in pr(gqa)
    got = Evaluator(dict(ENV), {}, torch.float64).value(gqa)
    assert torch.allclose(got, F.scaled_dot_product_attention(ENV["q"], ENV["k1"], ENV["v1"], enable_gqa=True))
    unscaled = n.Attention(Sym("q"), Sym("k"), Sym("v"), None, causal=False, scale=1.0, groups=1, head=4)   # T5
    assert r"\Big(\atlasref{q}\," in pr(unscaled) and "1" not in pr(unscaled).split(r"\Big(")[1].split(r"\,")[0]
    assert torch.allclose(Evaluator(dict(ENV), {}, torch.float64).value(unscaled),
                          F.scaled_dot_product_attention(ENV["q"], ENV["k"], ENV["v"], scale=1.0))
    eps = m.Add(a, Eps(1e-5))
    assert "10^{-5}" in pr(eps) and pr(m.Mul(Pi(math.pi), a)).startswith(r"\pi")


def test_a_size_the_data_decided_is_named_not_guessed():
    """u0 (EnCodec's padding, read off a buffer by .item()): the equations cannot run on other data without it;
    the check says "not run" and names it, where float() of the expression failed and the build with it."""
    import pytest
    import sympy

    from atlas.analyse.equations.nodes import DataDependentSize
    ev = Evaluator({}, {"T": 6}, torch.float64)
    assert ev.size(sympy.Symbol("T") * 2) == 12
    with pytest.raises(DataDependentSize) as info:
        ev.size(sympy.Symbol("u0") + sympy.Symbol("T"))
    assert info.value.symbols == ["u0"]


@pytest.mark.parametrize("value, tex", [
    (-3.4028234663852886e+38, r"-3.4028234663852886\times 10^{38}"),   # float32's lowest, Gemma2's mask fill
    (3e-07, r"3\times 10^{-7}"), (-1e10, "-10^{10}"), (1e-05, "10^{-5}"), (10000.0, "10000"), (50.0, "50"),
    (0.7978845608, "0.7978845608"), (float("-inf"), r"-\infty"), (float("nan"), r"\mathrm{NaN}"),
    (-10000000000, "-10000000000"),
])
def test_numbers_print_as_latex_never_as_pythons_exponent(value, tex):
    """Gemma2's and GPT-OSS's masks printed -3.4028234663852886e+38, LongT5's -10000000000: Python's notation in
    an equation. The number printed is still the one the equations run with, digit for digit."""
    assert _printed(Num(value)) == tex
    mantissa, _, exponent = tex.replace(r"\times 10^{", "e").rstrip("}").partition("e")
    if "infty" not in tex and "NaN" not in tex and "^" not in mantissa:
        assert float(mantissa + ("e" + exponent if exponent else "")) == value


def test_a_tensor_of_no_dims_prints_as_its_value():
    """A 0-dim tensor (torch.full((), -1.0)) printed -1\\,\\mathbf{1}_{}, an empty subscript: it is its value."""
    pr = _printed
    assert pr(t.Fill(Num(-1.0), (), shown=())) == r"\left(-1\right)"
    assert pr(t.Fill(Num(0.0), (), shown=())) == "0" and pr(t.Fill(Num(2.5), (2,), shown=(2,))) == r"2.5\,\mathbf{1}_{2}"
    ev = Evaluator({}, {}, torch.float64)
    assert torch.equal(t.Fill(Num(-1.0), (), shown=()).run(ev, -1.0, ()), torch.tensor(-1.0, dtype=torch.float64))
