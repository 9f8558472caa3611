"""Mixtures of experts, as the totals count them: the parameters one token passes through.

Each innermost component whose verified equations route tokens to experts (a recognized "moe" idiom, with its
expert count and top-k read off the code) gives one `ExpertLayers`. One expert's parameters are read off the
parameters themselves: weights stacked over the experts (a leading axis of the expert count) with their biases,
and list entries, one per expert; their sum divided by the expert count. Nothing is read from a class or attribute name.
"""

from __future__ import annotations

from dataclasses import replace

from atlas.document import ExpertLayers, ModelDoc


def with_experts(doc: ModelDoc) -> ModelDoc:
    layers = []
    routed = {c.id for c in doc.components if _moe(c) is not None}
    for comp in doc.components:
        idiom = _moe(comp)
        if idiom is None or any(_inside(other, comp.id) for other in routed if other != comp.id):
            continue
        experts, top_k = idiom.get("experts"), idiom.get("top_k")
        if not isinstance(experts, int) or not isinstance(top_k, int) or not 0 < top_k <= experts:
            continue
        per_expert = _per_expert(doc, comp, experts)
        if per_expert:
            layers.append(ExpertLayers(comp.id, comp.instances, experts, top_k, per_expert))
    return replace(doc, totals=replace(doc.totals, experts=tuple(layers))) if layers else doc


def _moe(comp):
    eq = comp.equations
    return None if eq is None else next((i for i in eq.idioms if i.kind == "moe"), None)


def _inside(cid: str, parent: str) -> bool:
    return parent == "" or cid.startswith(parent + ".")


def _per_expert(doc: ModelDoc, comp, experts: int) -> int:
    """One expert's parameters: stacked tensors and per-expert list entries under `comp`, per instance of it."""
    total, listed = 0, []
    for d in doc.components:
        if not (d.id == comp.id or _inside(d.id, comp.id)) or any(_inside(d.id, e) for e in listed):
            continue
        share = d.instances // comp.instances
        if d.id != comp.id and share == experts:           # one entry per expert: the whole entry is the expert's
            listed.append(d.id)
            total += d.parameters_per_instance * share
            continue
        total += _stacked(d.rows, experts) * share
    return total // experts if total % experts == 0 else 0


def _stacked(rows, experts: int) -> int:
    """Parameters of tensors stacked over the experts: weights of three or more axes, the first the expert count,
    and the biases beside them. A router's [experts, d] weight alone is not stacked."""
    over = [r for r in rows if r.counted and r.shape and r.shape[0] == experts]
    if not any(len(r.shape) >= 3 for r in over):
        return 0
    return sum(r.count for r in over)
