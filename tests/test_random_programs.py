"""Random forward() programs: whatever the code, the atlas derives steps that reproduce forward(), names every
value once, and never crashes."""

import re
import textwrap

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from atlas.analyse.equations.derive import with_equations
from atlas.document.input_specs import vocabulary
from atlas.extract import walk
from atlas.extract.record import plan
from atlas.load import spec
from atlas.render.math_markup import names_of, plain

NAMES = ("x", "h", "a", "z_bar", "q", "k", "out")
# (template, arity): {0}, {1} are earlier values; every template keeps the shape (B, T, 8)
OPS = (
    ("{0} + self.w", 1), ("self.fc1({0})", 1), ("self.fc2({0})", 1), ("torch.tanh({0})", 1), ("F.gelu({0})", 1),
    ("torch.relu({0}) * {1}", 2), ("{0}.sigmoid()", 1), ("{0} * {1}", 2), ("{0} - 0.5 * {1}", 2),
    ("{0}.transpose(1, 2).transpose(1, 2)", 1), ("torch.softmax({0}, dim=-1)", 1),
    ("{0} / ({0}.norm(dim=-1, keepdim=True) + 1e-5)", 1), ("torch.cat([{0}, {1}], dim=-1)[..., :8]", 2),
    ("{0}.mean(-1, keepdim=True) * {0}", 1), ("self.norm({0})", 1), ("{0}.view(B, T, 2, 4).transpose(1, 2).transpose(1, 2).reshape(B, T, 8)", 1),
    ("torch.where({0} > 0, {0}, {1})", 2), ("F.dropout({0}, 0.1, self.training)", 1),
)

statement = st.tuples(st.sampled_from(range(len(OPS))), st.integers(0, 99), st.integers(0, 99),
                      st.sampled_from(NAMES))


def _source(stmts) -> str:
    lines, live = ["B, T, _ = x.shape"], ["x"]
    for op, i, j, target in stmts:
        template, arity = OPS[op]
        args = [live[i % len(live)], live[j % len(live)]][:arity]
        lines.append(f"{target} = {template.format(*args)}")
        if target not in live:
            live.append(target)
        live = [target] + [v for v in live if v != target]
    lines.append(f"return {live[0]}")
    return "def forward(self, x):\n" + textwrap.indent("\n".join(lines), "    ") + "\n"


def _module(source: str) -> nn.Module:
    namespace = {"torch": torch, "F": torch.nn.functional, "nn": nn}
    exec(source, namespace)                                 # the generated forward, as a model author writes one

    class Random(nn.Module):
        atlas_inputs = ("x:float32[B,T,8]",)

        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(8))
            self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 8, bias=False)
            self.norm = nn.LayerNorm(8)

    Random.forward = namespace["forward"]
    with torch.device("meta"):
        return Random()


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(statement, min_size=1, max_size=7))
def test_random_forward_programs(stmts):
    source = _source(stmts)
    model = _module(source)
    loaded = spec.Loaded("random", model, None)
    out = plan.record(model, walk.walk(loaded))
    doc = with_equations(model, out.doc, out.trace, vocabulary(None, None))     # raises EquationMismatch on any mismatch
    root = doc.root.equations
    assert root.verification.verified, (source, root.verification.reason)
    for comp in doc.components:
        e = comp.equations
        assert e.verification is None or e.verification.verified or e.verification.max_error is None, (source, comp.id)
        names = list(names_of(e).values())
        assert len(names) == len(set(names)), (source, comp.id, names)       # one name, one value
        for step in e.steps:
            lhs, _, rhs = plain(step.formula, names_of(e)).partition(" = ")
            assert lhs.strip() != rhs.strip(), (source, lhs)             # no step defines a symbol by itself
        assert not re.search(r"\\atlasref", "".join(plain(s.formula, names_of(e)) for s in e.steps))
