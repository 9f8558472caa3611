"""Property tests: random module trees must reconcile, round-trip and stay deterministic."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from atlas.document import serialize
from atlas.extract import accounting, walk
from atlas.load import spec
from atlas.render import model_pages

SIZES = st.integers(min_value=1, max_value=6)
TEMPLATES = model_pages.environment()        # compiled once: each example renders with it, as one build renders its pages


@st.composite
def leaves(draw):
    kind = draw(st.sampled_from(["linear", "linear_nobias", "norm", "relu", "embedding", "gelu"]))
    a, b = draw(SIZES), draw(SIZES)
    return {"linear": lambda: nn.Linear(a, b), "linear_nobias": lambda: nn.Linear(a, b, bias=False),
            "norm": lambda: nn.LayerNorm(a), "relu": nn.ReLU, "embedding": lambda: nn.Embedding(a + 1, b),
            "gelu": nn.GELU}[kind]()


def trees(depth=3):
    return st.recursive(
        leaves(),
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=4).map(lambda ms: nn.Sequential(*ms)),
            st.lists(children, min_size=1, max_size=4).map(nn.ModuleList),
            st.dictionaries(st.sampled_from(["a", "b", "enc", "dec"]), children, min_size=1, max_size=3)
            .map(nn.ModuleDict),
        ),
        max_leaves=12,
    )


@st.composite
def models(draw):
    root = nn.Sequential(draw(trees()), draw(trees()))
    linears = [m for m in root.modules() if isinstance(m, nn.Linear)]
    # random tying: a Linear takes the weight of another of the same shape
    for m in linears:
        same = [o for o in linears if o is not m and o.weight.shape == m.weight.shape]
        if same and draw(st.booleans()):
            m.weight = draw(st.sampled_from(same)).weight
    # random freezing
    for p in root.parameters():
        if draw(st.booleans()):
            p.requires_grad_(False)
    if draw(st.booleans()):     # a submodule reused at a second place
        subs = [m for m in root.modules() if not isinstance(m, (nn.ModuleList, nn.ModuleDict, nn.Sequential))]
        if subs:
            root.append(draw(st.sampled_from(subs)))
    return root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models())
def test_random_trees(model):
    doc = walk.walk(spec.Loaded("random", model, None))
    unique = sum(p.numel() for p in model.parameters())
    trained, frozen = accounting.tree_total(doc)
    assert trained + frozen == unique == doc.totals.parameters
    assert doc.totals.trained + doc.totals.frozen == doc.totals.parameters
    assert doc.totals.trained == sum(p.numel() for p in model.parameters() if p.requires_grad)
    again = walk.walk(spec.Loaded("random", model, None))
    assert again == doc
    text = serialize.dumps(serialize.as_dict(doc))
    assert serialize.loads(text) == doc
    assert serialize.dumps(serialize.as_dict(again)) == text
    assert model_pages.render(doc, TEMPLATES) == model_pages.render(again, TEMPLATES)
