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

from atlas.analyse.architecture.nonlinearities import activation_kinds, made_by, norm_kinds
from atlas.analyse.architecture.stacks import block_lists, fact_of, ffn_widths, find_stacks, is_attention, stream_width
from atlas.document import Architecture, Component, ModelDoc, Trait
from atlas.extract.discover.conventions import stated_contexts
from atlas.extract.trace.position_tables import (
    absolute_positions,
    chain,
    first_rows_of,
    laid_out,
    laid_out_from,
    lookup_index,
    position_table,
)
from atlas.extract.trace.structures import Call, OpEvent, short_name
from atlas.extract.trace.structures import refs as _refs


def _distinct(traits) -> tuple[Trait, ...]:
    out, seen = [], set()
    for t in traits:
        if t.value not in seen:
            seen.add(t.value)
            out.append(t)
    return tuple(out)


def _positions(model: nn.Module, doc: ModelDoc, root: Call | None, stacks: list[Component]) -> list[Trait]:
    if root is None:
        return []
    by_path, out = doc.paths, []
    attention_ids = {c.id for s in stacks for c in doc.descendants(s) if is_attention(doc, c)}
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
             if made_by(r.value, {"cos", "sin", "polar"}) or (r.value.dtype or "").startswith("complex")}
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


def with_architecture(model: nn.Module, doc: ModelDoc, trace) -> ModelDoc:
    root = trace.root if trace is not None else None
    stacks = find_stacks(doc, root)
    widths, heads, kv, ffn, experts = [], [], [], [], []
    for stack in stacks:
        width = stream_width(stack)
        if width is not None:
            widths.append(Trait(width, stack.id))
        # the attentions in the block, else the block itself where it attends in its own forward()
        attending = [c for c in doc.descendants(stack) if fact_of(c, "heads") is not None] or \
            [c for c in (stack,) if fact_of(c, "heads") is not None]
        for comp in attending:
            h = fact_of(comp, "heads")
            heads.append(Trait(h, comp.id))
            kv.append(Trait(fact_of(comp, "kv_heads") or h, comp.id))
        f, e = ffn_widths(doc, stack, width)
        ffn += f
        experts += e
    experts += [Trait(n, max(members, key=lambda m: m.repeat).id) for members, n in block_lists(doc, root, True)]
    arch = Architecture(
        layers=tuple(Trait(n, max(members, key=lambda m: m.repeat).id) for members, n in block_lists(doc, root)),
        width=_distinct(widths), heads=_distinct(heads),
        kv_heads=_distinct(kv), ffn=_distinct(ffn), experts=_distinct(experts),
        vocabulary=_distinct(_vocabulary(model, doc, root)), context=_distinct(_context(model, doc, root)),
        norms=_distinct(norm_kinds(doc, root)), positions=_distinct(_positions(model, doc, root, stacks)),
        activations=_distinct(activation_kinds(doc, root, stacks)))
    return replace(doc, architecture=arch)
