"""A component's paper view: its op program rewritten pass by pass, the idioms the rewritten steps hold, and whether
the result reads as a paper would print it (no kernel-level operation left)."""

from __future__ import annotations

from dataclasses import dataclass

from atlas.analyse.equations.nodes import Node
from atlas.analyse.equations.program import Program
from atlas.analyse.paper import activations, attention, blocks, fused, grid, identities, mlp, moe, norms, rope, tokens
from atlas.analyse.paper.context import Context
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.kernel import kernel_ops
from atlas.analyse.paper.rewrite import rewrite
from atlas.document import Idiom

# Passes in order: each sees what the ones before it made (an RMSNorm's gain read once its core is recognized).
PASSES = (
    identities.RULES,
    norms.RULES + activations.RULES + rope.RULES + grid.RULES + fused.RULES,
    attention.RULES + moe.RULES,
)


# Names roles give, once every idiom is recognized: W_Q and γ_K of an attention, W_up of an MLP, Δ_attn of a block.
NAMERS = (attention.name_roles, mlp.name_roles, blocks.name_roles, moe.name_roles)


@dataclass
class Rewritten:
    program: Program                # the steps as a paper prints them
    idioms: tuple[Idiom, ...]       # what was recognized, each once
    kernel: tuple[str, ...]         # kernel-level operations still printed: none in a paper view
    changed: bool                   # whether any step reads otherwise than in the op program


def paper_program(prog: Program, context: Context | None = None) -> Rewritten:
    g = Graph(prog, context)
    before = {s.key: s.node for s in prog.steps}
    for rules in PASSES:
        rewrite(g, rules)
    tokens.unflatten(g)
    rewrite(g, identities.RULES)            # reshapes back to the shape the values now have
    for namer in NAMERS:
        namer(g)
    out = g.program()
    changed = len(out.steps) != len(prog.steps) or any(s.node is not before.get(s.key) for s in out.steps) \
        or any(a is not b for a, b in zip(out.outputs, prog.outputs))
    return Rewritten(out, _idioms(out), tuple(kernel_ops(out)), changed)


def _idioms(prog: Program) -> tuple[Idiom, ...]:
    found: list[Idiom] = []
    for step in prog.steps:
        for node in step.node.distinct():
            idiom = node.meta.get("recognized") if isinstance(node, Node) else None
            if idiom is not None and not any((i.kind, i.params) == (idiom.kind, idiom.params) for i in found):
                found.append(idiom)
    return tuple(found)
