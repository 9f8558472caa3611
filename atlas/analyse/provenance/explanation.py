"""A composite's explanation: structural facts read off its children and their equations."""

from __future__ import annotations

from atlas.document import Component, ModelDoc
from atlas.i18n import msg, msgn


def mlp_multiplier(doc: ModelDoc, comp: Component) -> int | None:
    """Width of the MLP's hidden layer over its input, from its first affine layer's parameter shape."""
    for cid in comp.children:
        child = doc.component(cid)
        if not any(w in child.id.rsplit(".", 1)[-1].lower() for w in ("mlp", "ffn", "feed_forward", "feedforward")):
            continue
        for d in doc.descendants(child):
            row = next((r for r in d.rows if r.name == "weight" and len(r.factors) == 2), None)
            if d.cls == "torch.nn.modules.linear.Linear" and row is not None:
                fan_in, fan_out = row.factors
                return fan_out // fan_in if fan_out % fan_in == 0 and fan_out > fan_in else None
    return None


def explanation(doc: ModelDoc, comp: Component) -> tuple[str, ...]:
    """Structural facts read off the code and the derived steps."""
    facts = []
    e = comp.equations
    if e is None or not e.steps or not comp.children:
        return ()
    children = [doc.component(c) for c in comp.children]
    norms = [c for c in children if c.is_normalization]
    inner = [c for c in children if not c.is_normalization and any(d.is_normalization for d in doc.descendants(c))]
    if norms:
        facts.append(msg("It normalizes with its own %(norms)s.", norms=tuple(c.name for c in norms)))
    elif inner:
        facts.append(msg("It has no normalization of its own: normalization happens inside %(parts)s.",
                         parts=tuple(c.name for c in inner)))
    sections = []
    for s in e.steps:
        if s.section and s.section not in sections:
            sections.append(s.section)
    if len(sections) > 1:
        facts.append(msg("Its steps run through %(sections)s, in that order.",
                         sections=tuple(sections)))
    elif sections:
        facts.append(msg("Its steps run through %(section)s.", section=sections[0]))
    if e.residuals:
        facts.append(msgn("One of its own steps adds a branch's result back onto the value it started from: "
                          "a residual connection.",
                          "%(n)s of its own steps add a branch's result back onto the value it started from: "
                          "residual connections.", e.residuals))
    return tuple(facts)
