"""The data flow of a forward between the modules it calls, read off the recorded forward: which child's
output feeds which. Operations between the calls (an addition, a scaling) pass on where their inputs came
from; consecutive calls of one component (a loop over a list of blocks) are one node.

A module reads an argument when its outputs were computed from it: an argument it looks at only for its dtype or
device (a rotary embedding handed the hidden state) is no edge. The chain starts at the first module that reads
what the forward was given, and carries what that module read and everything computed from it. A module that reads
nothing the chain carries (positions from a range, a time step's embedding beside the latents) is a side node: an
input of the modules that read it, not a link of the chain."""

from __future__ import annotations

from dataclasses import replace

from atlas.document import Flow, FlowNode, ModelDoc
from atlas.extract.trace.structures import Call, OpEvent
from atlas.extract.trace.structures import refs as _refs


def read_arguments(call: Call) -> list:
    """The refs among a call's arguments that its outputs were computed from: the values reached from the outputs
    back through the operations run inside the call, and through the calls inside it whose operations were not
    recorded (a repeated list entry whose result was taken from its first entry's shape: all its arguments). A call
    with no recorded operation reads every argument."""
    given = _refs((call.args, call.kwargs))
    ops = {id(ev) for c in call.calls() for ev in c.events if isinstance(ev, OpEvent)}
    if not ops or call.skipped:
        return given
    unrecorded = {id(r.value): c for c in call.calls() if c is not call and c.skipped for r in _refs(c.out)}
    reached, pending = set(), [r.value for r in _refs(call.out)]
    while pending:
        v = pending.pop()
        if id(v) in reached:
            continue
        reached.add(id(v))
        if id(v) in unrecorded:             # its stand-in was made from the first entry's shape, reading nothing
            inner = unrecorded[id(v)]
            pending += [r.value for r in _refs((inner.args, inner.kwargs))]
        elif v.made_by is not None and id(v.made_by) in ops:
            pending += [r.value for r in _refs((v.made_by.args, v.made_by.kwargs))]
    return [r for r in given if id(r.value) in reached]


def of_call(doc: ModelDoc, call: Call) -> Flow | None:
    by_path = doc.paths
    nodes: list[FlowNode] = []
    edges: set[tuple[int, int]] = set()
    source: dict[int, set[int]] = {}                # value id -> the nodes it came from
    fed = {r.value.id for r in _refs((call.args, call.kwargs))}     # what the forward was given, and values from it
    chain: set[int] = set()                         # the values the chain carries, once its first module ran

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
            read = _refs((ev.args, ev.kwargs))
            came = origin(read)
            for r in _refs(ev.out):
                source.setdefault(r.value.id, set()).update(came)
                if any(x.value.id in chain for x in read):
                    chain.add(r.value.id)
                if any(x.value.id in fed for x in read):
                    fed.add(r.value.id)
            continue
        cid = by_path.get(ev.path)
        if cid is None:
            continue
        read = read_arguments(ev)
        came = origin(read)
        if not chain and any(r.value.id in fed for r in read):
            chain |= {r.value.id for r in read}     # the chain's first module: what it reads is the carried state
        side = not any(r.value.id in chain for r in read)
        last = len(nodes) - 1
        if nodes and nodes[last].kind == "module" and nodes[last].component == cid:
            nodes[last] = replace(nodes[last], calls=nodes[last].calls + 1)
            here = last
        else:
            nodes.append(FlowNode("module", doc.component(cid).name, cid, side=side))
            here = len(nodes) - 1
        edges |= {(a, here) for a in came if a != here}
        for r in _refs(ev.out):
            source[r.value.id] = {here}
            if not side:
                chain.add(r.value.id)
            if any(x.value.id in fed for x in read):
                fed.add(r.value.id)
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
