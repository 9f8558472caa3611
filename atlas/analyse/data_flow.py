"""The data flow of a forward between the modules it calls, read off the recorded forward: which child's
output feeds which. Operations between the calls (an addition, a scaling) pass on where their inputs came
from; consecutive calls of one component (a loop over a list of blocks) are one node."""

from __future__ import annotations

from dataclasses import replace

from atlas.document import Flow, FlowNode, ModelDoc
from atlas.extract.trace.structures import Call, OpEvent
from atlas.extract.trace.structures import refs as _refs


def of_call(doc: ModelDoc, call: Call) -> Flow | None:
    by_path = doc.paths
    nodes: list[FlowNode] = []
    edges: set[tuple[int, int]] = set()
    source: dict[int, set[int]] = {}                # value id -> the nodes it came from

    def origin(refs) -> set[int]:
        found: set[int] = set()
        for r in refs:
            v = r.value
            if v.id in source:
                found |= source[v.id]
            elif v.kind == "input":
                nodes.append(FlowNode("input", v.attr or "input"))
                source[v.id] = {len(nodes) - 1}
                found |= source[v.id]
        return found

    for ev in call.events:
        if isinstance(ev, OpEvent):
            came = origin(_refs((ev.args, ev.kwargs)))
            for r in _refs(ev.out):
                source.setdefault(r.value.id, set()).update(came)
            continue
        cid = by_path.get(ev.path)
        if cid is None:
            continue
        came = origin(_refs((ev.args, ev.kwargs)))
        last = len(nodes) - 1
        if nodes and nodes[last].kind == "module" and nodes[last].component == cid:
            nodes[last] = replace(nodes[last], calls=nodes[last].calls + 1)
            here = last
        else:
            nodes.append(FlowNode("module", doc.component(cid).name, cid))
            here = len(nodes) - 1
        edges |= {(a, here) for a in came if a != here}
        for r in _refs(ev.out):
            source[r.value.id] = {here}
    outs = _refs(call.out)
    if not any(n.kind == "module" for n in nodes) or not outs:
        return None
    came = origin(outs)
    nodes.append(FlowNode("output", "output"))
    edges |= {(a, len(nodes) - 1) for a in came}
    return Flow(tuple(nodes), tuple(sorted(edges)))


def with_flow(doc: ModelDoc, trace) -> ModelDoc:
    """Each composite component's flow, from its first complete call in the record."""
    if trace is None or trace.root is None:
        return doc
    calls = trace.first_calls()
    comps = []
    for comp in doc.components:
        call = calls.get(comp.path) if comp.id else trace.root
        ok = comp.children and call is not None and call.failed is None and call.out is not None
        comps.append(replace(comp, flow=of_call(doc, call)) if ok else comp)
    return replace(doc, components=tuple(comps))
