"""Hyper-parameters read off a program's verified steps: heads and their features, logit softcaps, query/key
normalization. Each comes with the line of code that computes with it."""

from __future__ import annotations

from atlas.equations import ops_math as m
from atlas.equations.nodes import Num, Sym
from atlas.equations.ops_tensor import Heads
from atlas.equations.program import Program
from atlas.equations.scalars import value_of
from atlas.model import Fact


def _site(node) -> tuple:
    """(file name, line): the name only, so no page or JSON depends on where a machine keeps its files."""
    file, line = node.meta.get("site") or (None, None)
    return (file.replace("\\", "/").rsplit("/", 1)[-1] if file else None), line


def facts(prog: Program) -> tuple[Fact, ...]:
    defs = {s.key: s.node for s in prog.steps}

    def resolve(node, depth=0):
        while isinstance(node, Sym) and node.key in defs and depth < 8:
            node, depth = defs[node.key], depth + 1
        return node

    out: list[Fact] = []
    heads: dict = {}
    for step in prog.steps:
        sym = prog.symbols[step.key]
        for node in step.node.walk():
            if isinstance(node, Heads) and isinstance(node.meta.get("heads"), int):
                stream = _stream(node, prog, resolve) or sym.stream   # k = (x W_k)^h: the step's own stream
                heads.setdefault(stream, (node.meta["heads"], node.meta.get("features"), _site(node)))
            cap = _softcap(node, resolve)
            if cap is not None and not any(f.kind == "softcap" and f.value == cap for f in out):
                out.append(Fact("softcap", cap, *_site(node)))
        if sym.stream in ("q", "k") and _normalizes(step.node, resolve) \
                and not any(f.kind == "qk_norm" for f in out) and _other_normalized(prog, sym.stream, resolve):
            split = next((n for n in step.node.walk() if isinstance(n, Heads)), step.node)
            out.append(Fact("qk_norm", True, *_site(split)))
    if heads:
        q = heads.get("q") or next(iter(heads.values()))
        kv = heads.get("k") or heads.get("v")
        out.insert(0, Fact("heads", q[0], *q[2]))
        if q[1] is not None:
            out.insert(1, Fact("head_features", q[1], *q[2]))
        if kv is not None and kv[0] != q[0]:
            out.insert(1, Fact("kv_heads", kv[0], *kv[2]))
    return tuple(out)


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
        if isinstance(n, (m.Norm2, m.Rsqrt)) or (isinstance(n, m.Div) and isinstance(n.args[1], (m.Sqrt, m.Max))):
            return True
    return False


def _other_normalized(prog, stream: str, resolve) -> bool:
    """Both queries and keys are normalized, not just one of them."""
    other = "k" if stream == "q" else "q"
    return any(prog.symbols[s.key].stream == other and _normalizes(s.node, resolve) for s in prog.steps)
