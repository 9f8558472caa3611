"""What a catalog compares across models, read off the walked tree, the recorded forward and the config:
stacks of layers, widths, heads, FFN widths, experts, vocabulary, context, norms, position schemes and
activations. Nothing is looked up by a model's name; each figure keeps the component (or config field) it came
from, so a catalog cell links to the page that shows it.

- A stack is a list of blocks (entries with children), outermost only: its layers are all its entries, also
  where they are listed apart because they differ (a first dense layer before mixture-of-experts ones, stochastic
  depth that grows with the layer, interleaved attention and state-space layers).
- Width: the last dim of a stack's first input. Heads and KV heads: the facts of the verified equations.
- FFN width: the widest dim, other than the width, of the 2-D matrices in a block outside its attention (an
  expert stack, 3-D, counts its experts too).
- Vocabulary: the largest embedding table indexed by the model's integer inputs.
- Context: the config's limit when it states one, else the rows of a position table.
- Norms: the kind of every normalization the model computes (a mean taken away first: LayerNorm-like).
- Positions: rotary where an attention multiplies its own values by the cosines and sines it receives (or by
  e^{iθ}, as complex numbers); learned or fixed (frozen) where a table is indexed by positions or added to the
  stream.
- Activations: the nonlinearities of the blocks outside attention; "gated" where the result multiplies another
  projection (SwiGLU), not a scale made from that result (squeeze-and-excitation); Swish where a sigmoid's result
  multiplies the tensor it was computed from (x·σ(βx)).
"""

from __future__ import annotations

from dataclasses import replace

from torch import nn

from atlas.document.model import Architecture, Component, ModelDoc, Trait
from atlas.extract.discover.conventions import stated_contexts
from atlas.extract.trace.position_tables import (
    LAYOUT,
    absolute_positions,
    chain,
    first_rows_of,
    laid_out,
    laid_out_from,
    lookup_index,
    position_table,
    through,
)
from atlas.extract.trace.structures import Call, OpEvent, short_name, upstream
from atlas.extract.trace.structures import refs as _refs

ACTIVATIONS = {"gelu": "GELU", "silu": "SiLU", "relu": "ReLU", "relu6": "ReLU6", "leaky_relu": "LeakyReLU",
               "tanh": "tanh", "sigmoid": "sigmoid", "mish": "Mish", "elu": "ELU", "selu": "SELU",
               "softplus": "softplus", "hardswish": "hardswish", "glu": "GLU"}
NORM_OPS = {"layer_norm": "LayerNorm", "rms_norm": "RMSNorm", "group_norm": "GroupNorm", "batch_norm": "BatchNorm"}


def _distinct(traits) -> tuple[Trait, ...]:
    out, seen = [], set()
    for t in traits:
        if t.value not in seen:
            seen.add(t.value)
            out.append(t)
    return tuple(out)


def _lists(doc: ModelDoc, root: Call | None = None, side_by_side: bool = False) -> list[tuple[list[Component], int]]:
    """The lists of blocks, outermost only: (their entries' components, how many entries). An entry listed apart
    (model.layers.0) and the repeated rest (model.layers.1-3) are one list of four. A list whose entries the
    forward runs side by side (experts, each on its own tokens) is no stack of layers: `side_by_side` lists those
    whose entries read rows of one tensor (atlas.analyse.architecture.traits._routed), inside a list of layers too (the experts
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


def _stacks(doc: ModelDoc, root: Call | None = None) -> list[Component]:
    """The components of every list of blocks' entries."""
    return [m for members, _ in _lists(doc, root) for m in members]


def _descendants(doc: ModelDoc, comp: Component):
    for cid in comp.children:
        child = doc.component(cid)
        yield child
        yield from _descendants(doc, child)


def _fact(comp: Component, kind: str):
    e = comp.equations
    return next((f.value for f in (e.facts if e else ()) if f.kind == kind), None)


def _attention(doc: ModelDoc, comp: Component) -> bool:
    return _fact(comp, "heads") is not None


def _width(comp: Component) -> int | None:
    inputs = comp.shapes.inputs if comp.shapes is not None else ()
    dims = inputs[0].dims if inputs else ()
    return dims[-1].value if dims and dims[-1].value is not None else None


def _outside_attention(doc: ModelDoc, stack: Component):
    """The stack's descendants not inside a component that mixes positions: an attention, or a state-space mixer
    (Mamba's in_proj, depthwise conv over time, out_proj: its inner width is no FFN's)."""
    skip: set[str] = set()
    for comp in _descendants(doc, stack):
        if comp.parent in skip or _attention(doc, comp) or _convolves_time(doc, comp):
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


def _ffn(doc: ModelDoc, stack: Component, width: int | None) -> tuple[list[Trait], list[Trait]]:
    """The hidden width most of the block's matrices outside attention share with the width (the smaller on a
    tie: a fused gate-and-up projection is twice as wide as the down projection, GPT-OSS's experts' [width,
    2 × width] beside their square down projection), and the experts' count."""
    dims, experts, squares = [], [], []
    for comp in _outside_attention(doc, stack):
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


def _made_by(value, names: set[str], depth: int = 6) -> bool:
    """Whether the value was computed (within a few view or arithmetic steps) by one of the named ops."""
    return any(v.made_by is not None and short_name(v.made_by.name) in names for v, _ in upstream([value], depth))


def _positions(model: nn.Module, doc: ModelDoc, root: Call | None, stacks: list[Component]) -> list[Trait]:
    if root is None:
        return []
    by_path, out = doc.paths, []
    attention_ids = {c.id for s in stacks for c in _descendants(doc, s) if _attention(doc, c)}
    for call in root.calls():
        cid = by_path.get(call.path)
        rotated = _rotation(call) if cid in attention_ids else None
        if rotated is not None:             # "rotary 6/12": rotary on 6 of each head's 12 dims, the rest passed
            out.append(Trait("rotary" if not rotated else f"rotary {rotated[0]}/{rotated[1]}", cid))
        for ev in call.events:
            if not isinstance(ev, OpEvent):
                continue
            table = position_table(ev)
            owner = doc.component(by_path[table.owner]) if table is not None and table.owner in by_path else None
            if owner is not None and "norm" in owner.cls.rsplit(".", 1)[-1].lower():
                continue                # a norm's gain over heads × features (Chameleon's q_norm), no positions
            if table is not None:
                source = table.source if table.source is not None else table.obj
                kind = "learned" if bool(getattr(source, "requires_grad", True)) else "frozen"
                out.append(Trait(kind, by_path.get(table.owner or "", cid)))
    return out


_MULS = {"mul", "__mul__", "__rmul__", "Tensor.mul", "Tensor.__mul__", "Tensor.__rmul__", "addcmul"}


def _rotation(call: Call) -> tuple[int, ...] | None:
    """Whether an attention rotates its queries or keys by the cosines and sines it receives: it multiplies them,
    elementwise, with its own values (q·cos + rotate_half(q)·sin), or multiplies them as complex numbers by
    e^{iθ} (Meta's Llama code: freqs_cis, from torch.polar). Sinusoidal embeddings it projects or contracts
    instead (Funnel's relative positions) are no rotation. None where it does not; (rotated dims, dims) where what
    it rotates is a cut of each head's last axis (Persimmon's and GPT-NeoX's partial rotary: q[..., :6] of 12),
    else ()."""
    given = {id(r.value) for r in _refs((call.args, call.kwargs))
             if _made_by(r.value, {"cos", "sin", "polar"}) or (r.value.dtype or "").startswith("complex")}
    if not given:
        return None
    for c in call.calls():
        for ev in c.events:
            if isinstance(ev, OpEvent) and short_name(ev.name) in _MULS:
                chains = [list(chain(r.value, laid_out, 8)) for r in _refs((ev.args, ev.kwargs))]
                rotated = [chain for chain in chains if not {id(u) for u in chain} & given]
                if rotated and len(rotated) < len(chains):
                    return _cut_of_last_axis(rotated[0])
    return None


def _cut_of_last_axis(chain) -> tuple[int, ...]:
    """(its last axis, the axis it was cut from) where a value, a few layout steps back, is a cut of a longer last
    axis of as many axes (x[..., :6] of 12), as long as its own, else (): a cut of a fused projection before the
    heads are split (Phi-3's q, 64 of qkv's 128) is no partial rotary."""
    chain = list(chain)
    for v in chain:
        ev = v.made_by
        source = _refs(ev.args[:1]) if ev is not None and short_name(ev.name) == "__getitem__" else []
        whole = source[0].value.shape if source else None
        if whole and v.shape and len(whole) == len(v.shape) and isinstance(whole[-1], int) and \
                isinstance(v.shape[-1], int) and v.shape[-1] < whole[-1] and list(whole[:-1]) == list(v.shape[:-1]) \
                and chain[0].shape and v.shape[-1] == chain[0].shape[-1]:
            return v.shape[-1], whole[-1]
    return ()


def _norm_kind(call: Call) -> str | None:
    ops = [short_name(e.name) for e in call.events if isinstance(e, OpEvent)]
    for op in ops:
        if op in NORM_OPS:
            return NORM_OPS[op]
    for e in call.events:            # a mean taken away before the scaling: LayerNorm; only a scale: RMS
        if isinstance(e, OpEvent) and short_name(e.name) in ("sub", "__sub__") and \
                any(_made_by(r.value, {"mean"}, 2) for r in _refs(e.args)):
            return "LayerNorm"
    if any(op in ("rsqrt", "linalg_vector_norm", "norm", "sqrt") for op in ops) and \
            all(_one_axis(e) for e in call.events if isinstance(e, OpEvent) and short_name(e.name) in _REDUCTIONS):
        return "RMSNorm"
    return None


# the reductions a norm's scale comes from, and where each takes its dims
_REDUCTIONS = {"mean": 1, "var": 1, "norm": 2, "linalg_vector_norm": 2}


def _one_axis(e: OpEvent) -> bool:
    """Whether a reduction is over one axis, each position's features, as an RMS norm's is (channels last or
    first); ConvNeXt-V2's global response norm takes a 2-norm over the height and width, two axes."""
    refs = _refs(e.args[:1])
    shape = refs[0].value.shape if refs else None
    at = _REDUCTIONS[short_name(e.name)]
    dim = e.kwargs.get("dim", e.kwargs.get("axis", e.args[at] if len(e.args) > at else None))
    if shape is None or dim is None:
        return dim is None and shape is not None and len(shape) == 1
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    return len(dims) == 1 and isinstance(dims[0], int)


def _norms(doc: ModelDoc, root: Call | None) -> list[Trait]:
    from atlas.analyse.provenance.claims import _is_norm
    if root is None:
        return []
    by_path, out = doc.paths, []
    norm_ids = {c.id for c in doc.components if _is_norm(c)}
    for call in root.calls():
        cid = by_path.get(call.path)
        if cid in norm_ids:
            kind = _norm_kind(call)
            if kind:
                out.append(Trait(kind, cid))
    return out


def _activations(doc: ModelDoc, root: Call | None, stacks: list[Component]) -> list[Trait]:
    if root is None:
        return []
    by_path = doc.paths
    block_ids = {c.id for s in stacks for c in _outside_attention(doc, s)} | {s.id for s in stacks}
    calls = [c for c in root.calls() if by_path.get(c.path) in block_ids]
    events = [e for c in calls for e in c.events if isinstance(e, OpEvent)]
    multiplied = [([r.value for r in _refs(e.args)], _outs(e)) for e in events
                  if short_name(e.name) in ("mul", "__mul__", "__rmul__")]
    products = [args for args, _ in multiplied]
    sums = [([r.value for r in _refs(e.args)], _outs(e)) for e in events if short_name(e.name) in _SUMS]
    squared = {id(r.value) for e in events for r in _refs(e.args[:1]) if _squares(e)}
    # what a top-k choice was computed from: a router's scores (DeepSeek-V3's sigmoid) are no activation
    routed = set().union(*(_made_from(r.value, 8, _ROUTING) for e in events if short_name(e.name) == "topk"
                           for r in _refs(e.args[:1])))
    out = []
    for call in calls:
        for ev in call.events:
            if isinstance(ev, OpEvent) and short_name(ev.name) in ACTIVATIONS:
                name = ACTIVATIONS[short_name(ev.name)]
                if any(id(v) in routed for v in _outs(ev)):
                    continue
                if name == "tanh" and _gelu_by_tanh(ev, sums, products):
                    out.append(Trait("GELU", by_path.get(call.path)))
                    continue
                if name == "ReLU" and any(id(v) in squared for v in _outs(ev)):
                    out.append(Trait("squared ReLU", by_path.get(call.path)))     # Primer's relu(x)²
                    continue
                outs = {id(v) for v in _outs(ev)}
                own = _scaled_from([r.value for r in _refs(ev.args)])
                factors = [v for ops in products if any(id(v) in outs for v in ops) for v in ops if id(v) not in outs]
                if any(id(v) not in own and not _made_after(v, outs) and not _fixed(v) for v in factors):
                    name = f"gated {name}"                  # times another stream (SwiGLU's up projection)
                elif factors and name == "sigmoid":     # x·σ(βx): the input weighs itself (CLIP's quick GELU)
                    name = "gated Swish" if _gated(multiplied, outs, own) else "Swish"     # GPT-OSS: (u + 1)·xσ(αx)
                out.append(Trait(name, by_path.get(call.path)))
    return out


_SCALING = {"mul", "__mul__", "__rmul__", "div", "__truediv__", "neg", "__neg__", "to", "float", "type_as"}
_SUMS = {"add", "__add__", "__radd__"}
_ELEMENTWISE = _SCALING | _SUMS | {"sub", "__sub__", "__rsub__", "pow", "__pow__", "square"}
_ROUTING = _ELEMENTWISE | LAYOUT | {"masked_fill", "where"}         # a router's scores, laid out, masked


def _squares(ev: OpEvent) -> bool:
    """x ** 2, x.square(), x * x."""
    name, args = short_name(ev.name), ev.args
    if name in ("pow", "__pow__"):
        return len(args) > 1 and not _refs(args[1:2]) and args[1] == 2
    if name in ("mul", "__mul__"):
        refs = _refs(args)
        return len(refs) == 2 and refs[0].value is refs[1].value
    return name == "square"


def _made_from(v, steps: int = 6, names: set = _ELEMENTWISE) -> set[int]:
    """ids of v and of every tensor it was computed from through elementwise arithmetic (or the ops of `names`),
    `steps` ops back."""
    seen, frontier = {id(v)}, [v]
    for _ in range(steps):
        after = []
        for u in frontier:
            ev = u.made_by
            if ev is None or short_name(ev.name) not in names:
                continue
            for r in _refs((ev.args, ev.kwargs)):
                if id(r.value) not in seen:
                    seen.add(id(r.value))
                    after.append(r.value)
        frontier = after
    return seen


def _gelu_by_tanh(ev: OpEvent, sums, products) -> bool:
    """x · (1 + tanh(f(x))) / 2, f computed from x: GELU's tanh approximation written out (GPT-J's and Phi's
    gelu_new, BLOOM's), told by its form: one plus the tanh, times the tensor the tanh's argument came from."""
    outs = {id(v) for v in _outs(ev)}
    shifted = {id(o) for refs, made in sums if len(refs) == 1 and id(refs[0]) in outs for o in made}
    base = set().union(*(_made_from(r.value) for r in _refs(ev.args)))
    for ops in products:
        others = [v for v in ops if id(v) not in shifted]
        if len(others) < len(ops) and others and all(_scaled_from([v]) & base for v in others):
            return True
    return False


def _scaled_from(values, steps: int = 3) -> set[int]:
    """ids of the values and of the tensors they are a multiple or a cast of (x in σ(1.702·x)); not of what a
    layer computed them from (a learned gate σ(W·h) weighs h by another stream)."""
    scaled = through(_SCALING, single=True)
    return {id(u) for v in values for u in chain(v, scaled, steps)}


def _gated(multiplied: list, outs: set[int], own: set[int]) -> bool:
    """Whether x·σ(βx), the product that takes the sigmoid's output `outs`, is then multiplied by another stream:
    one not made from the activation's own input, nor from the product itself."""
    swish = {id(v) for args, made in multiplied if any(id(a) in outs for a in args) for v in made}
    others = [v for args, _ in multiplied if any(id(a) in swish for a in args) for v in args if id(v) not in swish]
    return any(id(v) not in own and not _made_after(v, swish | outs) for v in others)


def _fixed(v, depth: int = 8) -> bool:
    """Whether v is made from weights and buffers alone, a few ops back: a mask kept as a buffer, `1 - mask` (a
    coupling layer's), weighs every input alike and is no stream to gate by."""
    for u, steps in upstream([v], depth):
        if (u.made_by is None and u.kind not in ("param", "buffer")) or (u.made_by is not None and steps == depth):
            return False
    return True


def _made_after(v, outs: set[int], depth: int = 8) -> bool:
    """Whether v was computed from one of the values `outs` names, a few ops back: a squeeze-and-excitation scale
    made from the activation it then weighs is no second stream."""
    return any(id(u) in outs for u, _ in upstream([v], depth))


def _outs(ev: OpEvent) -> list:
    return [r.value for r in _refs(ev.out)]


def _vocabulary(model: nn.Module, doc: ModelDoc, root: Call | None) -> list[Trait]:
    if root is None:
        return []
    by_path, best = doc.paths, None
    for call in root.calls():
        if isinstance(call.module, nn.Embedding):
            idx = lookup_index(call)
            if idx is not None and laid_out_from(idx).kind == "input":    # OPT, CLIP: input_ids.view(-1, T)
                rows = call.module.num_embeddings
                if best is None or rows > best.value:
                    best = Trait(rows, by_path.get(call.path))
    return [best] if best else []


def _context(model: nn.Module, doc: ModelDoc, root: Call | None) -> list[Trait]:
    stated = [Trait(value, None, name) for name, value in stated_contexts(getattr(model, "config", None))]
    if stated:
        return stated
    if root is None:
        return []
    by_path, out = doc.paths, []
    for call in root.calls():
        if isinstance(call.module, nn.Embedding):
            idx = lookup_index(call)
            if idx is not None and absolute_positions(idx):
                out.append(Trait(call.module.num_embeddings, by_path.get(call.path)))
        for ev in call.events:          # `x + self.pos[:t]`: the table's rows are the context
            table = position_table(ev) if isinstance(ev, OpEvent) else None
            if table is not None and any(first_rows_of(r.value) is table for r in _refs(ev.args)) and \
                    isinstance(table.shape[0], int):
                out.append(Trait(table.shape[0], by_path.get(table.owner or "", by_path.get(call.path))))
    return out[:1]


def enrich(model: nn.Module, doc: ModelDoc, trace) -> ModelDoc:
    root = trace.root if trace is not None else None
    stacks = _stacks(doc, root)
    widths, heads, kv, ffn, experts = [], [], [], [], []
    for stack in stacks:
        width = _width(stack)
        if width is not None:
            widths.append(Trait(width, stack.id))
        for comp in _descendants(doc, stack):
            h = _fact(comp, "heads")
            if h is not None:
                heads.append(Trait(h, comp.id))
                kv.append(Trait(_fact(comp, "kv_heads") or h, comp.id))
        f, e = _ffn(doc, stack, width)
        ffn += f
        experts += e
    experts += [Trait(n, max(members, key=lambda m: m.repeat).id) for members, n in _lists(doc, root, True)]
    arch = Architecture(
        layers=tuple(Trait(n, max(members, key=lambda m: m.repeat).id) for members, n in _lists(doc, root)),
        width=_distinct(widths), heads=_distinct(heads),
        kv_heads=_distinct(kv), ffn=_distinct(ffn), experts=_distinct(experts),
        vocabulary=_distinct(_vocabulary(model, doc, root)), context=_distinct(_context(model, doc, root)),
        norms=_distinct(_norms(doc, root)), positions=_distinct(_positions(model, doc, root, stacks)),
        activations=_distinct(_activations(doc, root, stacks)))
    return replace(doc, architecture=arch)
