"""Feed-forward networks: an activation between two affine maps (W_1, W_2), or a gated one, act(x W_gate) ⊙ x W_up
then W_down (SwiGLU with SiLU, GeGLU with GELU, ReGLU with ReLU), the gate and the up projection as two weights or
as the two halves of one. Recognized on the rewritten steps, where activations are already named; nothing is
rewritten: the steps already read as the paper's, and the roles name the weights."""

from __future__ import annotations

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.nodes import Node
from atlas.analyse.paper.activations import Activation
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.match import bare, pair, site
from atlas.analyse.paper.projections import name_projection, projection, weight_name
from atlas.document import Idiom

GATED = {"silu": "swiglu", "gelu": "geglu", "gelu_tanh": "geglu", "relu": "reglu", "quick_gelu": "geglu"}


def _width(node, g: Graph):
    """The last axis of a value: an MLP's hidden width, read off its first map's output."""
    shape = g.shape(node) or g.shape(bare(node, g))
    return shape[-1] if shape else None


def _gated(x, g: Graph):
    """(gate projection, up projection, activation) where `x` is act(x W_gate) ⊙ x W_up."""
    for a, b in pair(bare(x, g), m.Mul):
        act = bare(a, g)
        if not isinstance(act, Activation):
            continue
        gate, up = projection(act.args[0], g), projection(b, g)
        if gate is not None and up is not None and g.same(bare(gate.x, g), bare(up.x, g)):
            return gate, up, act.meta["kind"], act.args[0]
    return None


def name_roles(g: Graph) -> None:
    nodes = [n for key in g.order for n in g.nodes[key].distinct() if isinstance(n, Node)]
    for node in nodes:
        if node.meta.get("recognized") is not None:
            continue
        down = projection(node, g)
        if down is None or down.sliced or isinstance(bare(node, g), t.Heads):
            continue
        found = _gated(down.x, g)
        if found is not None:
            gate, up, kind, gate_out = found
            if gate.weight.key == up.weight.key:             # one weight, its two halves: W_{gate,up}
                g.name_as(gate.weight, weight_name("gate,up"))
            else:
                name_projection(gate, "gate", g)
                name_projection(up, "up", g)
            name_projection(down, "down", g)
            node.meta["recognized"] = Idiom(GATED.get(kind, "glu"), (("activation", kind),
                                                                     ("hidden", _width(gate_out, g))), *site(node))
            continue
        act = bare(down.x, g)
        if isinstance(act, Activation):
            first = projection(act.args[0], g)
            if first is not None and not first.sliced:
                name_projection(first, 1, g)
                name_projection(down, 2, g)
                node.meta["recognized"] = Idiom("mlp", (("activation", act.meta["kind"]),
                                                        ("hidden", _width(act.args[0], g))), *site(node))
