"""Attention: softmax(q kᵀ · s + M) v over heads, with its parameters read off the operations.

Grouped-query attention is written as a paper does, each query head attending with the key/value head of its group,
not as the copies of the keys and values a kernel makes (`repeat_interleave`, or `expand` then `reshape`). The
evaluator computes each head's weights from the definition, head by head. Attention written out in the model's own
code (q kᵀ, a scale, a softcap c·tanh(·/c), a mask, a softmax over the keys, times v) is already what a paper prints:
it is recognized, not rewritten.
"""

from __future__ import annotations

import math

import torch

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.lowering_context import same_size
from atlas.analyse.equations.nodes import ATOM, Node, Num
from atlas.analyse.equations.notation import (
    Equation,
    Fenced,
    Glyph,
    Ident,
    Number,
    Word,
    applied,
    row,
    sup,
)
from atlas.analyse.equations.ops_nn import Attention, masked_softmax
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import AsOperand, Broadcast
from atlas.analyse.paper.match import bare, number, pair, site
from atlas.document import Idiom
from atlas.i18n import msg


class Attend(Attention):
    """Attention over heads, query head h with key/value head g(h) = ⌈h / groups⌉: args (q, k, v, mask) split into
    heads (B, h, T, d) and (B, h_kv, S, d); meta as the kernel's (scale, causal, head, heads, kv_heads, groups)."""

    idiom = "attention"

    def notation(self, p):
        q, k, v, mask = self.args
        return self.softmax_of(p, q, sup(p.base(k), Word("T", "sans")), p.wrap(v, ATOM), mask)

    def definition(self, p):
        groups = self.meta.get("groups", 1)
        if groups <= 1:
            return None
        heads, kv = self.meta.get("heads"), self.meta.get("kv_heads")
        h = Ident("h")
        line = Equation(applied(Ident("g"), h, gap=False), Fenced("⌈", "⌉", row(h, Glyph("/"), Number(groups))))
        return line, msg("grouped-query attention: the %(heads)s query heads share %(kv)s key/value heads, query "
                         "head h attending with the keys and values of head g(h)", heads=heads, kv=kv)

    def run(self, ev, q, k, v, mask):
        m_ = self.meta
        groups = m_.get("groups", 1)
        scale = m_["scale"] if m_.get("scale") is not None else 1 / math.sqrt(q.shape[-1])
        heads = []
        for h in range(q.shape[-3]):
            g = h // groups
            s = (q[..., h, :, :] @ k[..., g, :, :].transpose(-2, -1)) * scale
            mh = mask[..., min(h, mask.shape[-3] - 1), :, :] if isinstance(mask, torch.Tensor) and mask.dim() >= 3 \
                else mask
            heads.append(masked_softmax(s, mh, m_.get("causal")) @ v[..., g, :, :])
        return torch.stack(heads, dim=-3)


def repeated_heads(node, g: Graph):
    """reshape(expand(unsqueeze(x, 2), (B, h_kv, n, S, d)), (B, h_kv·n, S, d)): each key/value head n times, as
    Repeat(x, n) on the heads axis."""
    if not isinstance(node, t.Reshape):
        return None
    inner = node.args[0]
    if isinstance(inner, t.Expand) and isinstance(inner.args[0], t.Unsqueeze):
        unsq, grown = inner.args[0], inner.meta.get("shown")
    elif isinstance(inner, Broadcast) and inner.args[1] is not None and isinstance(inner.args[0], t.Unsqueeze):
        unsq, grown = inner.args[0], inner.meta.get("out_shape")
    else:
        return None
    before, after = g.shape(unsq.args[0]), node.meta.get("shown")
    if unsq.meta.get("dim") != 2 or not before or not after or not grown or len(before) != 4 or len(grown) != 5:
        return None
    n = grown[2]
    if not isinstance(n, int) or not same_size(after[1], before[1] * n) or not same_size(after[2], before[2]):
        return None
    return t.Repeat(unsq.args[0], times=n, dim=1)


class SharedHeads(AsOperand):
    """Key or value heads each shared by `times` query heads (grouped-query attention): printed as the heads
    themselves, run as each repeated in place."""

    paper = True
    transparent = False             # its own step: the heads as the attention reads them

    def definition(self, p):
        times = self.meta["times"]
        h = Ident("h")
        line = Equation(applied(Ident("g"), h, gap=False), Fenced("⌈", "⌉", row(h, Glyph("/"), Number(times))))
        return line, msg("grouped-query attention: each key/value head is shared by %(n)s query heads, query head h "
                         "attending with the keys and values of head g(h)", n=times)

    def run(self, ev, x):
        return x.repeat_interleave(self.meta["times"], dim=1)


def shared_heads(node, g: Graph):
    """A heads repeat inside attention written out (q (repeat k)ᵀ, A (repeat v)): the heads shared, as written."""
    if isinstance(node, t.MatMul):
        for i, a in enumerate(node.args):
            inner = a.args[0] if isinstance(a, t.Transpose) and i == 1 else a
            if isinstance(inner, t.Repeat) and inner.meta.get("dim") in (1, -3):
                shared = SharedHeads(inner.args[0], times=inner.meta["times"])
                new = a.rebuild((shared,)) if inner is not a else shared
                args = list(node.args)
                args[i] = new
                return node.rebuild(args)
    return None


def heads_then(node, g: Graph):
    """x viewed as (B, T, h, d), normalized over each head's d features, the heads axis moved forward: the heads
    split first, then normalized (queries and keys normalized per head)."""
    from atlas.analyse.equations.lower_tensor import splits_last
    from atlas.analyse.paper.norms import LayerNormOp, RMSNorm
    if not isinstance(node, t.Transpose) or {node.meta["d0"] % 4, node.meta["d1"] % 4} != {1, 2}:
        return None
    f = bare(node.args[0], g)
    if not isinstance(f, (RMSNorm, LayerNormOp)):
        return None
    view = bare(f.args[0], g)
    if not isinstance(view, t.Reshape) or not splits_last(view):
        return None
    shown = view.meta["shown"]
    heads = t.Heads(view.args[0], view.args[1], heads=shown[2], features=shown[3])
    return f.rebuild((heads,) + tuple(f.args[1:]))


def grouped(node, g: Graph):
    """The attention kernel, with keys and values repeated per group taken back to the heads they repeat."""
    if not isinstance(node, Attention) or isinstance(node, Attend):
        return None
    q, k, v, mask = node.args
    meta = dict(node.meta)
    groups = meta.get("groups", 1)
    kb, vb = bare(k, g), bare(v, g)
    if isinstance(kb, t.Repeat) and isinstance(vb, t.Repeat) and kb.meta["times"] == vb.meta["times"] \
            and kb.meta["dim"] in (1, -3) and vb.meta["dim"] in (1, -3):
        k, v = kb.args[0], vb.args[0]
        groups *= kb.meta["times"]
    meta["groups"] = groups
    heads = meta.get("heads")
    if isinstance(heads, int):
        meta["kv_heads"] = heads // groups
    out = Attend(q, k, v, mask, **meta)
    g.recognized(_idiom(out, g), out)
    return out


def _idiom(node: Attend, g: Graph) -> Idiom:
    m_ = node.meta
    mask = node.args[3]
    masked = mask is not None and not (isinstance(mask, Num) and mask.value is None)
    params = [("heads", m_.get("heads")), ("kv_heads", m_.get("kv_heads")), ("head_dim", m_.get("head")),
              ("causal", bool(m_.get("causal"))), ("mask", masked)]
    scale = m_.get("scale")
    if scale is not None and isinstance(m_.get("head"), int) and abs(scale - m_["head"] ** -0.5) > 1e-12:
        params.append(("scale", scale))
    return Idiom("attention", tuple(params), *site(node))


def written_out(node, g: Graph):
    """softmax(…) v written out in the code: recognized with its heads, scale, softcap and mask; left as it is."""
    if not isinstance(node, t.MatMul):
        return None
    a = bare(node.args[0], g)
    if not isinstance(a, red.Softmax) or node.meta.get("recognized") is not None:
        return None
    logits = bare(a.args[0], g)
    softcap, scale, masked = None, 1.0, False
    for _ in range(6):
        for rest, mask in pair(logits, m.Add):
            if _scores(bare(rest, g), g) is not None or isinstance(bare(rest, g), (m.Mul, m.Div)):
                logits, masked = bare(rest, g), True
                break
        cap = _softcap(logits, g)
        if cap is not None:
            softcap, logits = cap[0], bare(cap[1], g)
            continue
        for x, c in pair(logits, m.Mul):
            if number(c, g) is not None and not isinstance(bare(x, g), m.Tanh):
                scale, logits = scale * number(c, g), bare(x, g)
                break
        else:
            if isinstance(logits, m.Div) and number(logits.args[1], g):
                scale, logits = scale / number(logits.args[1], g), bare(logits.args[0], g)
                continue
            break
    qk = _scores(logits, g)
    if qk is None:
        return None
    q, k = qk
    shared = bare(k, g)
    k = shared.args[0] if isinstance(shared, SharedHeads) else k
    q_shape, k_shape = g.shape(q) or g.shape(bare(q, g)), g.shape(k) or g.shape(bare(k, g))
    params = []
    if q_shape and len(q_shape) == 4:
        params += [("heads", q_shape[1]), ("kv_heads", k_shape[1] if k_shape and len(k_shape) == 4 else None),
                   ("head_dim", q_shape[3])]
    params += [("mask", masked)]
    if softcap is not None:
        params.append(("softcap", softcap))
    head = q_shape[-1] if q_shape else None
    if isinstance(head, int) and abs(scale - head ** -0.5) > 1e-12 and scale != 1.0:
        params.append(("scale", scale))
    node.meta["recognized"] = Idiom("attention", tuple(params), *site(a))
    return None


def _scores(node, g: Graph):
    """(q, k) where `node` is q kᵀ."""
    if isinstance(node, t.MatMul):
        kt = bare(node.args[1], g)
        if isinstance(kt, t.Transpose):
            return node.args[0], kt.args[0]
    return None


def _softcap(node, g: Graph):
    """(c, x) where `node` is c · tanh(x / c)."""
    for c, th in pair(node, m.Mul):
        th = bare(th, g)
        value = number(c, g)
        if value is None or not isinstance(th, m.Tanh):
            continue
        inner = bare(th.args[0], g)
        if isinstance(inner, m.Div):
            den = number(inner.args[1], g)
            if den is not None and abs(den - value) < 1e-9 * value:
                return value, inner.args[0]
            if den is not None:
                return value, m.Mul(inner.args[0], Num(value / den))
    return None


RULES = (repeated_heads, shared_heads, heads_then, grouped, written_out)


def _chain(node, g: Graph):
    """The nodes a stream passes through back to its projections: bare nodes, then through rotations, heads splits,
    per-head normalizations, and concatenations (keys from two sources), each visited once."""
    from atlas.analyse.paper.fused import FusedPart
    from atlas.analyse.paper.norms import LayerNormOp, RMSNorm
    from atlas.analyse.paper.rope import RoPE
    pending, seen = [node], set()
    while pending:
        n_ = bare(pending.pop(0), g)
        if id(n_) in seen:
            continue
        seen.add(id(n_))
        yield n_
        if isinstance(n_, (RoPE, t.Heads, RMSNorm, LayerNormOp, t.Repeat, SharedHeads, FusedPart)):
            pending.append(n_.args[0])
        elif isinstance(n_, t.Cat):
            pending.extend(n_.args)


def _operands(node, g: Graph):
    """(q, k, v) of an attention node: the kernel's, or those of softmax(q kᵀ …) v written out."""
    if isinstance(node, Attend):
        return node.args[:3]
    if isinstance(node, t.MatMul) and isinstance(node.meta.get("recognized"), Idiom):
        logits = bare(bare(node.args[0], g).args[0], g)
        for _ in range(8):
            qk = _scores(logits, g)
            if qk is not None:
                return qk[0], qk[1], node.args[1]
            inner = [a for a in getattr(logits, "args", ()) if isinstance(a, Node) and not isinstance(a, Num)]
            if not inner:
                return None
            logits = bare(inner[0], g)
    return None


def _mark_cross(node, uses: dict, g: Graph) -> None:
    """The attention idiom says whether its queries come from another source than its keys (cross-attention)."""
    idiom = node.meta.get("recognized")
    q_from = [bare(p.x, g) for p, marks in uses.values() if "Q" in marks]
    k_from = [bare(p.x, g) for p, marks in uses.values() if "K" in marks]
    if isinstance(idiom, Idiom) and idiom.kind == "attention" and q_from and k_from and idiom.get("cross") is None:
        cross = not any(a is b for a in q_from for b in k_from)
        node.meta["recognized"] = Idiom(idiom.kind, idiom.params + (("cross", cross),), idiom.file, idiom.line)


def name_roles(g: Graph) -> None:
    """W_Q, W_K, W_V and W_O for an attention's projections (W_QKV, W_KV where one weight gives several), γ_Q and γ_K
    for its query and key normalizations, γ_a and γ_b for the normalizations of two sources it attends to."""
    from atlas.analyse.paper.fused import FusedPart
    from atlas.analyse.paper.norms import LayerNormOp, RMSNorm
    from atlas.analyse.paper.projections import gain_name, name_projection, projection
    nodes = [n_ for key in g.order for n_ in g.nodes[key].distinct() if isinstance(n_, Node)]
    for node in nodes:
        found = _operands(node, g)
        if found is None:
            continue
        uses: dict = {}                 # weight key -> (projection, marks)
        for mark, stream in zip("QKV", found):
            for step in _chain(stream, g):
                if isinstance(step, (RMSNorm, LayerNormOp)) and step.args[1] is not None and mark in "QK":
                    g.name_as(step.args[1], gain_name(mark))
                if isinstance(step, FusedPart):
                    step.meta.setdefault("role", mark)
                passes = isinstance(step, (t.Heads, t.Cat, t.Repeat, SharedHeads, FusedPart))
                p = projection(step, g) if not passes else None
                if p is not None:
                    entry = uses.setdefault(p.weight.key, [p, ""])
                    entry[1] += mark if mark not in entry[1] else ""
        for p, marks in uses.values():
            name_projection(p, marks, g)
        _mark_cross(node, uses, g)
        sources = []
        for p, _ in uses.values():
            x = bare(p.x, g)
            if not any(x is s for s in sources):
                sources.append(x)
        if len(sources) > 1:
            for label, x in zip("abcdefgh", sources):
                if isinstance(x, (RMSNorm, LayerNormOp)) and x.args[1] is not None:
                    g.name_as(x.args[1], gain_name(label))
        for other in nodes:
            p = projection(other, g)
            if p is not None and isinstance(bare(p.x, g), t.MergeHeads) and bare(bare(p.x, g).args[0], g) is node:
                name_projection(p, "O", g)
