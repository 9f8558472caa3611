"""Fused projections read as the streams they hold, each split into heads:

- features laid out in groups, each group holding its query heads, then its key and value heads (x W_QKV viewed
  as [B, T, G, m, d]): each stream the part of the projection it is, the key and value heads each shared by the
  query heads of their group (grouped_heads);
- features laid out as m streams one after another (x W_QKV viewed as [B, T, m, h, d], the streams moved first and
  taken one by one, as `q, k, v = qkv.unbind(0)` does): each stream a slice of the features, split into heads
  (stacked_heads).

Recognized by shapes alone: a view that splits only the last axis, then the indexing that takes one stream.
"""

from __future__ import annotations

from atlas.analyse.equations import ops_nn as nn_ops
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.nodes import ATOM, Node, SizeOf
from atlas.analyse.equations.notation import Equation, Ident, applied, op, sub
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import Broadcast
from atlas.analyse.paper.match import bare
from atlas.i18n import msg


class FusedPart(Node):
    """The features of a grouped projection p that one stream takes: in each of `groups` groups of `slots` slots
    of `features` features, the slots `taken`. Printed part_Q(p) once the attention's roles name it."""

    prec = ATOM
    paper = True

    def notation(self, p):
        return applied(sub(op("part"), Ident(self.meta.get("role") or "s")), p.print(self.args[0]), gap=False)

    def definition(self, p):
        first, last = self.meta["taken"][0], self.meta["taken"][-1]
        line = Equation(applied(sub(op("part"), Ident(self.meta.get("role") or "s")), Ident("p"), gap=False),
                        Ident("p"))
        return line, msg("the features of p a stream takes, p's features laid out as %(groups)s groups of %(slots)s "
                         "slots of %(features)s: slots %(first)s to %(last)s of each group",
                         groups=self.meta["groups"], slots=self.meta["slots"], features=self.meta["features"],
                         first=first + 1, last=last + 1)

    def run(self, ev, x):
        g, m, d = self.meta["groups"], self.meta["slots"], self.meta["features"]
        parts = x.reshape(*x.shape[:-1], g, m, d)[..., list(self.meta["taken"]), :]
        return parts.reshape(*x.shape[:-1], -1)


def grouped_heads(node, g: Graph):
    """transpose₁,₂(flatten₂,₃(view(p, [B, T, G, m, d])[…, slots, :])): the heads of part(p); where one slot is
    broadcast over r query heads, that head repeated in place r times."""
    if not isinstance(node, t.Transpose) or node.meta.get("ndim") != 4 or \
            {node.meta["d0"] % 4, node.meta["d1"] % 4} != {1, 2}:
        return None
    flat = bare(node.args[0], g)
    if not isinstance(flat, t.Flatten) or (flat.meta.get("start"), flat.meta.get("end")) != (2, 3):
        return None
    inner, times = bare(flat.args[0], g), 1
    grown = _broadcast_sizes(inner)
    if grown is not None:
        inner, times = bare(inner.args[0][0] if isinstance(inner, nn_ops.Apply) else inner.args[0], g), grown[3]
    if not isinstance(inner, t.Index) or not isinstance(times, int):
        return None
    view = bare(inner.args[0], g)
    split = _last_axis_split(view, g)
    if split is None:
        return None
    groups, slots, features = split
    taken = _slots(inner.args[1], slots)
    if taken is None or (times > 1 and len(taken) != 1):
        return None
    b, tt = view.args[1][0], view.args[1][1]
    part = FusedPart(view.args[0], groups=groups, slots=slots, features=features, taken=taken)
    heads = t.Heads(part, (b, tt, -1, features), heads=groups * len(taken), features=features)
    return heads if times == 1 else t.Repeat(heads, times=times, dim=1)


def stacked_heads(node, g: Graph):
    """permute₍₂,₀,₃,₁,₄₎(view(p, [B, T, m, h, d]))[i]: the heads of the i-th block of h·d features of p."""
    if not isinstance(node, t.Index):
        return None
    index = node.args[1]
    first = index[0] if isinstance(index, tuple) and all(i == slice(None) for i in index[1:]) else index
    permuted = bare(node.args[0], g)
    if not isinstance(first, int) or not isinstance(permuted, t.Permute) or \
            tuple(permuted.meta["dims"]) != (2, 0, 3, 1, 4):
        return None
    view = bare(permuted.args[0], g)
    split = _last_axis_split(view, g)
    if split is None or not -split[0] <= first < split[0]:
        return None
    streams, heads, features = split
    width = heads * features
    start = (first % streams) * width
    part = t.Slice(view.args[0], SizeOf(start), SizeOf(start + width), dim=2, last=True)
    b, tt = view.args[1][0], view.args[1][1]
    return t.Heads(part, (b, tt, -1, features), heads=heads, features=features)


def _last_axis_split(view, g: Graph) -> tuple[int, int, int] | None:
    """(a, b, c) of a view of [B, T, a·b·c] as [B, T, a, b, c]: only the last axis split, into known sizes."""
    shape = g.shape(view)
    if not isinstance(view, t.Reshape) or shape is None or len(shape) != 5:
        return None
    before = g.shape(view.args[0])
    sizes = tuple(shape[2:])
    if not all(isinstance(v, int) for v in sizes) or before is None or len(before) != 3 or \
            before[-1] != sizes[0] * sizes[1] * sizes[2]:
        return None
    return sizes


def _broadcast_sizes(node):
    if isinstance(node, Broadcast) and node.args[1] is not None:
        return tuple(node.args[1])
    if isinstance(node, nn_ops.Apply) and node.meta.get("name") == "broadcast_to" and len(node.args[0]) == 2:
        return tuple(node.args[0][1])
    return None


def _slots(index, slots: int):
    """The slots an index of the form (:, :, :, s) takes, in order: a slice, or a list of one."""
    if not isinstance(index, tuple) or len(index) != 4 or any(i != slice(None) for i in index[:3]):
        return None
    last = index[3]
    if isinstance(last, slice):
        return tuple(range(slots)[last]) or None
    if isinstance(last, list) and len(last) == 1 and isinstance(last[0], int):
        return (last[0] % slots,)
    return None


def repeat_outward(node, g: Graph):
    """RoPE(repeat(k)): the rotation acts on each head alike, so it is repeat(RoPE(k)), the heads rotated once and
    then shared, as grouped-query attention reads."""
    from atlas.analyse.paper.rope import RoPE
    if not isinstance(node, RoPE):
        return None
    inner = bare(node.args[0], g)
    if not isinstance(inner, t.Repeat) or inner.meta.get("dim") not in (1, -3):
        return None
    return t.Repeat(node.rebuild((inner.args[0],) + tuple(node.args[1:])), **inner.meta)


RULES = (grouped_heads, stacked_heads, repeat_outward)
