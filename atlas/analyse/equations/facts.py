"""Hyper-parameters read off a program's verified steps: heads and their features, logit softcaps, query/key
normalization, and the form of a normalization (layer, RMS or L2 norm). Each comes with the line of code that
computes with it."""

from __future__ import annotations

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations.lower_tensor import splits_last
from atlas.analyse.equations.nodes import Node, Num, Sym
from atlas.analyse.equations.ops_nn import Attention, MHAOp
from atlas.analyse.equations.ops_tensor import Heads, Reshape
from atlas.analyse.equations.program import Program
from atlas.analyse.equations.scalars import value_of
from atlas.document import Fact


def site_of(node, *fallbacks: str) -> tuple:
    """(file name, line): the name only, so no page or JSON depends on where a machine keeps its files. Where the
    node has no line of its own, the line under the first of `fallbacks` it has ("call_site")."""
    file, line = next((node.meta[k] for k in ("site", *fallbacks) if node.meta.get(k)), (None, None))
    return (file.replace("\\", "/").rsplit("/", 1)[-1] if file else None), line


def facts(prog: Program) -> tuple[Fact, ...]:
    defs = {s.key: s.node for s in prog.steps}

    def resolve(node, depth=0):
        while isinstance(node, Sym) and node.key in defs and depth < 8:
            node, depth = defs[node.key], depth + 1
        return node

    out: list[Fact] = []
    # a softmax over scores, or an attention kernel: the program attends (a fused split is read only there)
    weighs = any(isinstance(n, (red.Softmax, Attention, MHAOp)) for step in prog.steps for n in step.node.distinct())
    heads: dict = {}
    kernel: dict = {}       # the same, read off the attention kernel: where the model's own code shows no split
    for step in prog.steps:
        sym = prog.symbols[step.key]
        for node in step.node.walk():
            if isinstance(node, (Attention, MHAOp)) and isinstance(node.meta.get("heads"), int):
                # the attention kernel's own operands: queries (B, h, T, d), keys (B, h_kv, S, d);
                # nn.MultiheadAttention's from its configuration
                head = node.meta.get("head", node.meta.get("head_dim"))
                head = head if isinstance(head, int) else None
                kernel.setdefault("q", (node.meta["heads"], head, site_of(node)))
                if isinstance(node.meta.get("kv_heads"), int):
                    kernel.setdefault("k", (node.meta["kv_heads"], head, site_of(node)))
            if isinstance(node, Heads) and isinstance(node.meta.get("heads"), int):
                stream = _stream(node, prog, resolve) or sym.stream   # k = (x W_k)^h: the step's own stream
                heads.setdefault(stream, (node.meta["heads"], node.meta.get("features"), site_of(node)))
            fused = _fused_split(node)
            if fused is not None and weighs:
                heads.setdefault("qkv", (*fused, site_of(node)))
            split = _split_into_heads(node)
            if split is not None and (_stream(node, prog, resolve) or sym.stream) in ("q", "k", "v"):
                # q = (x W_q).view(B, T, h, d), normalized per head before its transpose: the split is the reshape
                heads.setdefault(_stream(node, prog, resolve) or sym.stream, (*split, site_of(node)))
            cap = _softcap(node, resolve)
            if cap is not None and not any(f.kind == "softcap" and f.value == cap for f in out):
                out.append(Fact("softcap", cap, *site_of(node)))
        if sym.stream in ("q", "k") and _normalizes(step.node, resolve) \
                and not any(f.kind == "qk_norm" for f in out) and _other_normalized(prog, sym.stream, resolve):
            split = next((n for n in step.node.walk() if isinstance(n, Heads)), step.node)
            out.append(Fact("qk_norm", True, *site_of(split)))
    form = _norm_form(prog, resolve)
    if form is not None:
        out.append(Fact("norm", form[0], *site_of(form[1])))
    for stream, found in kernel.items():
        if stream not in heads:     # a split of the same count in the model's code, of a value not named q, k or v
            own = [v for key, v in heads.items() if key not in ("q", "k", "v") and v[0] == found[0]]
            heads[stream] = own[0] if own else found
    if heads:
        q = heads.get("q") or next(iter(heads.values()))
        kv = heads.get("k") or heads.get("v")
        out.insert(0, Fact("heads", q[0], *q[2]))
        if q[1] is not None:
            out.insert(1, Fact("head_features", q[1], *q[2]))
        if kv is not None and kv[0] != q[0]:
            out.insert(1, Fact("kv_heads", kv[0], *kv[2]))
    return tuple(out)


def _fused_split(node) -> tuple | None:
    """(h, d) of a fused projection's reshape (..., 3·h·d) -> (..., 3, h, d), the queries, keys and values split
    at once (timm's and Timesformer's `qkv.reshape(B, N, 3, heads, C // heads)`, Hiera's with its windows before
    them; BLOOM's (..., h, 3, d)); 2 for keys and values alone."""
    if not isinstance(node, Reshape):
        return None
    before, after = node.meta.get("in_shape"), node.meta.get("shown")
    if before is None or after is None or len(after) < 5 or len(after) <= len(before):
        return None
    last = after[-3:]
    if not all(isinstance(x, int) for x in last) or last[0] * last[1] * last[2] != before[-1]:
        return None
    if last[0] in (2, 3):
        return last[1], last[2]
    return (last[0], last[2]) if last[1] in (2, 3) else None


def _split_into_heads(node) -> tuple | None:
    """(h, d) of a reshape (B, T, h·d) -> (B, T, h, d): the last axis split in two."""
    if not isinstance(node, Reshape) or not splits_last(node):
        return None
    h, d = node.meta["shown"][2:]
    return (h, d) if isinstance(h, int) and isinstance(d, int) else None


def _stream(node, prog, resolve) -> str | None:
    """The stream (q, k, v) of the value a heads split is applied to, by its name."""
    inner = node.args[0]
    if isinstance(inner, Sym) and inner.key in prog.symbols:
        return prog.symbols[inner.key].stream
    return None


def _softcap(node, resolve):
    """c · tanh(x / c): a logit softcap of c."""
    if not isinstance(node, m.Mul):
        return None
    a, b = node.args
    for c, t in ((a, b), (b, a)):
        t = resolve(t)
        if not isinstance(t, m.Tanh):
            continue
        inner = resolve(t.args[0])
        c_value = value_of(c) if not isinstance(c, Sym) else None
        if isinstance(inner, m.Div) and c_value is not None:
            den = inner.args[1]
            if any(isinstance(n, Num) and n.value == c_value for n in den.walk()) or value_of(den) == c_value:
                return c_value
    return None


def _normalizes(node, resolve) -> bool:
    for n in node.walk():
        n = resolve(n)
        if isinstance(n, (red.Norm2, m.Rsqrt)) or (isinstance(n, m.Div) and isinstance(n.args[1], (m.Sqrt, m.Max))):
            return True
    return False


def _other_normalized(prog, stream: str, resolve) -> bool:
    """Both queries and keys are normalized, not just one of them."""
    other = "k" if stream == "q" else "q"
    return any(prog.symbols[s.key].stream == other and _normalizes(s.node, resolve) for s in prog.steps)


def _norm_form(prog: Program, resolve):
    """(form, node) for the first normalization of the steps: "layer" divides a centred value by the square root of
    its variance, "rms" divides by the square root of a mean of squares without centring, "l2" by a 2-norm."""
    for step in prog.steps:
        for node in step.node.walk():
            if isinstance(node, m.Div) and isinstance(resolve(node.args[0]), red.Norm2) \
                    and _root_of_size(resolve(node.args[0]), node.args[1], prog, resolve):
                return "rms", node          # ‖x‖₂ / √d: the root mean square of d features
            if isinstance(node, red.Norm2):
                return "l2", node
            if isinstance(node, (m.Sqrt, m.Rsqrt)):
                form = _spread(node.args[0], resolve)
                if form is not None:
                    return form, node
    return None


def _root_of_size(norm, divisor, prog: Program, resolve) -> bool:
    """The divisor is √d, d being the size of the axis the 2-norm sums over (where the program knows it)."""
    value = value_of(resolve(divisor))
    if value is None or value <= 1:
        return False
    d = round(value * value)
    if abs(d - value * value) > 1e-9 * d:
        return False
    x = resolve(norm.args[0])
    shape = prog.symbols[x.key].shape if isinstance(x, Sym) and x.key in prog.symbols else None
    axis = norm.meta.get("dim")
    axis = axis[0] if isinstance(axis, (tuple, list)) and len(axis) == 1 else axis
    if shape and isinstance(axis, int) and -len(shape) <= axis < len(shape) and isinstance(shape[axis], int):
        return shape[axis] == d
    return True


def _spread(node, resolve, depth=0):
    """"layer" for a variance (of a centred value), "rms" for a mean of squares, found under `node`."""
    node = resolve(node)
    if depth > 6 or not hasattr(node, "args"):
        return None
    if isinstance(node, red.Var):
        return "layer"
    if isinstance(node, red.Mean):
        inner = resolve(node.args[0])
        base = None
        if isinstance(inner, m.Pow) and value_of(inner.args[1]) == 2:
            base = resolve(inner.args[0])
        elif isinstance(inner, m.Mul) and inner.args[0] == inner.args[1]:
            base = resolve(inner.args[0])
        if base is not None:
            centred = isinstance(base, m.Sub) and isinstance(resolve(base.args[1]), red.Mean)
            return "layer" if centred else "rms"
        return None
    for a in node.args:
        if isinstance(a, (Node, Sym)):
            found = _spread(a, resolve, depth + 1)
            if found is not None:
                return found
    return None
