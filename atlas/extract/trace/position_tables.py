"""Tables of positions, read off a record: which parameter a forward looks positions up in, by which symbol,
and how many rows it has."""

from __future__ import annotations

from torch import nn

from atlas.extract.trace.structures import Call, OpEvent, short_name
from atlas.extract.trace.structures import refs as _refs


def position_table(ev: OpEvent):
    """The parameter a call reads positions from: a table indexed by positions (`wpe(arange(T))`,
    `weight[position_ids]`), or added to activations row by row (ViT's `position_embeddings`)."""
    name, refs = short_name(ev.name), _refs(ev.args)
    params = [r.value for r in refs
              if r.value.kind == "param" and r.value.shape is not None and len(r.value.shape) >= 2]
    if name in ("add", "__add__", "__radd__", "__iadd__"):
        # rows over a sequence's positions: added to a [B, T, d] sequence, or to one of its own rank ([1, T, d]),
        # the table whole or its first rows (`x + self.pos[:t]`); XLNet's [heads, d] bias added to
        # [T, B, heads, d] queries is no table of positions
        rows = [(r.value, r.value) for r in refs if any(r.value is t for t in params)] + \
            [(cut, r.value) for r in refs for cut in [first_rows_of(r.value)] if cut is not None]
        if not rows:
            return None
        table, added = rows[0]
        return table if any(v.shape is not None and len(v.shape) >= 3 and v.kind != "param"
                            and len(v.shape) in (3, len(added.shape))
                            and tuple(v.shape[-2:]) == tuple(added.shape[-2:])
                            for v in (r.value for r in refs) if v is not added) else None
    if not params:
        return None
    table = params[0]
    others = [r.value for r in refs if r.value is not table]
    if name in ("embedding", "__getitem__", "index_select"):
        return table if any(positional(v) for v in others) else None
    return None


def first_rows_of(v):
    """The parameter a value is the first rows of (`self.pos[:t]`, a table of at least two axes cut on its first),
    else None."""
    ev = v.made_by
    if ev is None or short_name(ev.name) != "__getitem__":
        return None
    source = _refs(ev.args[:1])
    table = source[0].value if source else None
    index = ev.args[1] if len(ev.args) > 1 else None
    first = index[0] if isinstance(index, tuple) and index else index
    if table is None or table.kind != "param" or table.shape is None or len(table.shape) < 2 or \
            not isinstance(first, slice) or first.start not in (None, 0) or first.step not in (None, 1):
        return None
    return table


def chain(v, follow, steps: int):
    """v and the values it was made from, one step back at a time (`follow` an op event to the value it continues
    with, or None), at most `steps` steps."""
    yield v
    for _ in range(steps):
        ev = v.made_by
        v = follow(ev) if ev is not None else None
        if v is None:
            return
        yield v


def through(names: set, single: bool = False):
    """A step back through ops of `names` to the first tensor they read; with `single`, only where they read one
    tensor (a number moved or scaled it)."""
    def follow(ev):
        refs = _refs((ev.args, ev.kwargs))
        if refs and short_name(ev.name) in names and (len(refs) == 1 or not single):
            return refs[0].value
        return None
    return follow


def first_read(ev):
    first = _refs(ev.args[:1])
    return first[0].value if first else None


def is_positions(v) -> bool:
    """Made by `arange`, or a buffer kept for positions (BERT's `position_ids`)."""
    return (v.kind == "buffer" and "position" in (v.attr or "")) or \
        (v.made_by is not None and short_name(v.made_by.name) == "arange")


def positional(v) -> bool:
    """Indices of positions: made by `arange`, or cut from a buffer kept for them (BERT's `position_ids`),
    followed through the data each op reads first (a gather's index is not its data: BERT's token types)."""
    return any(is_positions(u) for u in chain(v, first_read, 7))


LAYOUT = {"__getitem__", "unsqueeze", "squeeze", "expand", "expand_as", "view", "reshape", "flatten", "to", "long",
           "int", "contiguous", "clone", "repeat", "repeat_interleave", "transpose", "permute", "t", "swapaxes",
           "movedim"}


OFFSET = {"add", "__add__", "__radd__", "__iadd__", "sub", "__sub__"}


laid_out, offset = through(LAYOUT), through(OFFSET, single=True)


def absolute_positions(v) -> bool:
    """Indices that are the positions themselves: an arange (or the buffer kept for one), cut, reshaped or moved
    by a number on the way; not a quantity computed from positions, which a table of that many rows does not
    bound the context with (T5's relative-position buckets come from an arange too)."""
    def follow(ev):
        step = laid_out(ev)
        return step if step is not None else offset(ev)
    return any(is_positions(u) for u in chain(v, follow, 7))


def lookup_index(call: Call):
    """The indices an Embedding's own lookup read: not always what it was called with (BART's positions table is
    given input_ids for their shape and looks up an arange)."""
    for ev in call.events:
        if isinstance(ev, OpEvent) and short_name(ev.name) == "embedding":
            refs = _refs(ev.args[:1])
            return refs[0].value if refs else None
    refs = _refs(call.args[:1])
    return refs[0].value if refs else None


def laid_out_from(v):
    """The tensor a value is a view, cut or cast of (itself when it is none)."""
    *_, last = chain(v, laid_out, 8)
    return last


def position_lookups(root: Call | None):
    """(call, positions looked up) for each table of absolute positions the record looks up: the positions a
    symbol, or a number where the size was fixed (--dim T=100)."""
    for call in (root.calls() if root is not None else ()):
        if isinstance(call.module, nn.Embedding):
            idx = lookup_index(call)
            last = idx.shape[-1] if idx is not None and idx.shape else None
            if last is not None and absolute_positions(idx):
                yield call, last


def position_tables(root: Call | None) -> dict[str, tuple[int, str]]:
    """The symbol each table of absolute positions is looked up by, and its rows: T <= 32 for nanoGPT's `wpe`
    (module path). Fake tensors never check an index against a table, so the record itself does not say."""
    out: dict[str, tuple[int, str]] = {}
    for call, last in position_lookups(root):
        if getattr(last, "is_Symbol", False):
            rows = call.module.num_embeddings
            if str(last) not in out or rows < out[str(last)][0]:
                out[str(last)] = (rows, call.path)
    return out


def tables_overrun(root: Call | None) -> list[tuple[str, int, int]]:
    """(module path, rows, positions) of each table of absolute positions looked up past its last row at a size
    given as a number (--dim T=100 on a 64-row table): the record holds, fake tensors check no index, but forward()
    fails at that size."""
    return [(call.path, call.module.num_embeddings, int(last)) for call, last in position_lookups(root)
            if isinstance(last, int) and last > call.module.num_embeddings]
