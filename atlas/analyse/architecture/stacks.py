"""Stacks of layers, read off the tree and the record: the lists of blocks, their widths, and the widest hidden
size of a block outside its attention (an expert stack counts its experts)."""

from __future__ import annotations

from atlas.document import Component, ModelDoc, Trait
from atlas.extract.trace.structures import Call, upstream
from atlas.extract.trace.structures import refs as _refs


def block_lists(doc: ModelDoc, root: Call | None = None,
                side_by_side: bool = False) -> list[tuple[list[Component], int]]:
    """The lists of blocks, outermost only: (their entries' components, how many entries). An entry listed apart
    (model.layers.0) and the repeated rest (model.layers.1-3) are one list of four. A list whose entries the
    forward runs side by side (experts, each on its own tokens) is no stack of layers: `side_by_side` lists those
    whose entries read rows of one tensor (_routed), inside a list of layers too (the experts
    of each layer's MoE)."""
    lists: dict[str, list[Component]] = {}
    inside: list[Component] = []
    for comp in doc.components[1:]:
        parent, _, index = comp.module_paths[0].rpartition(".")
        if not (index.isdigit() and _computing_children(doc, comp)) or \
                (not side_by_side and any(a in inside for a in doc.ancestors(comp.id))):
            continue
        lists.setdefault(parent, []).append(comp)
        inside.append(comp)
    out = []
    for parent, members in lists.items():
        entries = {p for m in members for p in m.module_paths if p.rpartition(".")[0] == parent}
        if len(entries) < 2:
            continue
        calls = _entry_calls(root, parent)
        if root is not None and not calls:      # never run (Chameleon's VQ-VAE on text alone): no layers of it
            continue
        if _side_by_side(calls) == side_by_side and (not side_by_side or _routed(calls)):
            out.append((members, len(entries)))
    return out


def _computing_children(doc: ModelDoc, comp: Component) -> bool:
    """Whether a list entry is a block: it has children that compute on its input, not only the parametrizations
    that make its weights (spectral_norm gives every Conv2d of a Sequential a child; they are layers still)."""
    return any(not doc.component(c).cls.endswith("parametrize.ParametrizationList") for c in comp.children)


def _side_by_side(calls: dict[int, Call]) -> bool:
    """Whether the forward ran the list's second entry on something other than the first one's result: experts
    (each on the rows routed to it), not layers (each on the one before). `calls`: _entry_calls of the list; the
    first two entries it called (a router may send no token to the first expert)."""
    if len(calls) < 2:
        return False
    one, two = (calls[i] for i in sorted(calls)[:2])
    first = {id(r.value) for r in _refs(one.out)}
    return not any(id(v) in first for v, _ in upstream([r.value for r in _refs((two.args, two.kwargs))], 6))


def _entry_calls(root: Call | None, parent: str) -> dict[int, Call]:
    """{entry index: its first call} of the list at `parent`."""
    calls: dict[int, Call] = {}
    for call in (root.calls() if root is not None else ()):
        owner, _, index = call.path.rpartition(".")
        if owner == parent and index.isdigit():
            calls.setdefault(int(index), call)
    return calls


def _routed(calls: dict[int, Call]) -> bool:
    """Whether the list's first two entries read rows of one tensor, a few ops back (experts, each on the tokens
    routed to it), and neither reads what the other's input was computed from: not tensors of their own, one made
    from the other (Segformer's projections, one per stage of the encoder)."""
    if len(calls) < 2:
        return False
    pair = [calls[i] for i in sorted(calls)[:2]]        # the first two called, as _side_by_side
    given = [{id(r.value) for r in _refs((c.args, c.kwargs))} for c in pair]
    read = [{id(v) for v, _ in upstream([r.value for r in _refs((c.args, c.kwargs))], 3)} for c in pair]
    return bool(read[0] & read[1]) and not (given[0] & read[1]) and not (given[1] & read[0])


def find_stacks(doc: ModelDoc, root: Call | None = None) -> list[Component]:
    """The components of every list of blocks' entries."""
    return [m for members, _ in block_lists(doc, root) for m in members]


def fact_of(comp: Component, kind: str):
    e = comp.equations
    return next((f.value for f in (e.facts if e else ()) if f.kind == kind), None)


def is_attention(doc: ModelDoc, comp: Component) -> bool:
    return fact_of(comp, "heads") is not None


def stream_width(comp: Component) -> int | None:
    inputs = comp.shapes.inputs if comp.shapes is not None else ()
    dims = inputs[0].dims if inputs else ()
    return dims[-1].value if dims and dims[-1].value is not None else None


def outside_attention(doc: ModelDoc, stack: Component):
    """The stack's descendants not inside a component that mixes positions: an attention, or a state-space mixer
    (Mamba's in_proj, depthwise conv over time, out_proj: its inner width is no FFN's)."""
    skip: set[str] = set()
    for comp in doc.descendants(stack):
        if comp.parent in skip or is_attention(doc, comp) or _convolves_time(doc, comp):
            skip.add(comp.id)
            continue
        yield comp


def _convolves_time(doc: ModelDoc, comp: Component) -> bool:
    """Whether one of its own children is a depthwise 1-d convolution (one filter per channel, weight [C, 1, k]):
    a mixer along the positions, as a state-space block has."""
    for cid in comp.children:
        child = doc.component(cid)
        if child.cls.rsplit(".", 1)[-1] == "Conv1d" and any(
                len(r.shape) == 3 and r.shape[0] > 1 and r.shape[1] == 1 for r in child.rows):
            return True
    return False


def ffn_widths(doc: ModelDoc, stack: Component, width: int | None) -> tuple[list[Trait], list[Trait]]:
    """The hidden width most of the block's matrices outside attention share with the width (the smaller on a
    tie: a fused gate-and-up projection is twice as wide as the down projection, GPT-OSS's experts' [width,
    2 × width] beside their square down projection), and the experts' count."""
    dims, experts, squares = [], [], []
    for comp in outside_attention(doc, stack):
        for row in comp.rows:
            if len(row.shape) == 3 and width in row.shape[1:] and min(row.shape) > 1:   # a matrix per expert
                experts.append(Trait(row.shape[0], comp.id))
            matrix = row.shape[-2:] if len(row.shape) in (2, 3) and min(row.shape) > 1 else ()
            if width in matrix:                 # a matrix, not a per-channel vector kept as [1, 1, width]
                other = [d for d in matrix if d != width]
                if other:
                    dims.append((other[0], comp.id))
                else:
                    squares.append(comp.id)
    counts = {e.value for e in experts}
    dims = [(d, cid) for d, cid in dims if d not in counts]           # a router's [experts, width]
    if not dims:
        return [], experts
    tally: dict[int, int] = {}
    for d, _ in dims:
        tally[d] = tally.get(d, 0) + 1
    best = min(tally, key=lambda d: (-tally[d], d))
    if best == 2 * width and tally[best] == 1 and squares:     # fused gate-and-up, a square down projection
        return [Trait(width, squares[0])], experts
    return [Trait(best, next(cid for d, cid in dims if d == best))], experts
