"""A named program as page data: its lines as formulas whose symbols are references, the symbols, constants and
notations.

Printing walks the same nodes the check runs. Nothing here writes LaTeX or markup for the site: that is the render
layer's job (atlas.render.latex, atlas.render.math_markup).
"""

from __future__ import annotations

import math

import sympy

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations.facts import facts, site_of
from atlas.analyse.equations.nodes import Num, Printer, SizeOf, Sym, kids
from atlas.analyse.equations.notation import (
    QUAD,
    Cases,
    Equation,
    Fenced,
    Glyph,
    Group,
    Ident,
    Number,
    Ref,
    Size,
    Space,
    applied,
    joined,
    op,
    rm,
    row,
    sub,
    sup,
)
from atlas.analyse.equations.ops_nn import Attention, Call, Loop, MHAOp
from atlas.analyse.equations.ops_tensor import Heads, Item, MergeHeads, StopGradient
from atlas.analyse.equations.program import Program
from atlas.document import Equations, EquationStatus, MathSymbol, Step
from atlas.extract.trace.call_shapes import dim
from atlas.i18n import msg

MAX_SUMMARY = 3


def _loop_line(p: Printer, prog: Program, key: str, node: Loop):
    """stem_{n+1} = f_n(stem_n, ...), n = 0, …, N − 1; stem_0 = start."""
    stem = Group(prog.symbols[key].stem or prog.symbols[key].name or Ident("x"))
    mods, start, args, kwargs = node.args
    count = node.meta["count"]
    shown = [p.print(a) for a in kids((args, kwargs)) if not isinstance(a, (Num, SizeOf))]
    n = Ident("n")
    step = applied(sub(p.print(mods), n, tight=True), sub(stem, n, tight=True), *shown)
    rest = row(Glyph(","), QUAD, n, Glyph("="), Number(0), Glyph(","), Glyph("⋯"), Glyph(","), Number(count - 1),
               Glyph(";"), QUAD, Equation(sub(stem, Number(0), tight=True), p.print(start)))
    return Equation(sub(stem, row(n, Glyph("+"), Number(1))), row(step, rest))


def _indices(node) -> list:
    """The indices a step's formula is written in (t of a token, t and s of a grid of positions), outermost first:
    its left-hand side carries them."""
    own = getattr(node, "lhs_index", None)
    if own is not None:
        return [own()]
    found = {}
    for n in node.distinct():
        letter = getattr(n, "index_letter", None)
        if letter is not None:
            found[n.meta["axis"]] = Ident(letter())
    return [found[a] for a in sorted(found, reverse=True)]


def _dims(shape, vocab) -> tuple:
    if shape is None:
        return ()
    return tuple(dim(s, vocab) for s in shape)


def notations(prog: Program) -> tuple:
    """Definitions of the notation the lines use, each once: heads, merged heads, the causal mask."""
    out, seen = [], set()
    p = Printer(prog.scalars())
    for step in prog.steps:
        for node in step.node.walk():
            define = getattr(node, "definition", None)
            found = define(p) if define is not None else None
            # an idiom printed by its name (GELU, RoPE): its definition, or its definitions (μ_d, σ_d²), once
            for line, sentence in (() if found is None else found if isinstance(found[0], tuple) else (found,)):
                if line not in seen:
                    seen.add(line)
                    out.append((line, sentence))
            if isinstance(node, Heads) and "heads" not in seen:
                seen.add("heads")
                counts = {n.meta.get("heads") for s in prog.steps for n in s.node.walk() if isinstance(n, Heads)}
                d = node.meta.get("features")
                split = sup(Ident("x"), Ident("h"))
                if len(counts) == 1:
                    out.append((split, msg("x split into %(heads)s heads of %(features)s features each: a view "
                                           "of its last axis, then the heads axis moved before the positions",
                                           heads=str(counts.pop()), features=str(d))))
                else:
                    out.append((split, msg("x split into heads of %(features)s features each: a view of its "
                                           "last axis, then the heads axis moved before the positions",
                                           features=str(d))))
            elif isinstance(node, MergeHeads) and "merge" not in seen:
                seen.add("merge")
                merged = row(sub(op("concat"), Ident("h"), tight=True), Fenced("(", ")", Ident("O")))
                out.append((merged, msg("the heads of O put back side by side: the positions "
                                        "axis moved before the heads, then a reshape")))
            elif isinstance(node, Item) and isinstance(node.meta.get("i"), int) and "item" not in seen and \
                    not hasattr(node.args[0], "item_notation"):
                seen.add("item")
                kth = sub(Fenced("(", ")", Glyph("…")), Ident("k"))
                out.append((kth, msg("the k-th of the values a call returns, counted from 1: (…)₁ is "
                                     "what the code reads as [0]")))
            elif isinstance(node, StopGradient) and "sg" not in seen:
                seen.add("sg")
                out.append((op("sg"), msg("stop-gradient, the code's `.detach()`: the same value, through "
                                                       "which no gradient flows back in training")))
            elif isinstance(node, m.MachineEpsilon) and "eps" not in seen:
                seen.add("eps")
                out.append((sub(Ident("ϵ"), rm("mach")), msg("the machine epsilon of the input's floating-point type "
                                                              "(%(eps)s in float32), which torch adds when eps is None",
                                                              eps="%.3g" % m.MachineEpsilon.of("float32"))))
            elif isinstance(node, MHAOp) and "mha-mask" not in seen and any(
                    isinstance(mask, Sym) for mask in node.masks):
                seen.add("mha-mask")
                shown = [mask for mask in node.masks if isinstance(mask, Sym)]
                out.append((joined([Ref(mask.key) for mask in shown], (Glyph(","), Space("word"))),
                            msg("added to the logits as torch adds a mask: a boolean one is −∞ where it is true (that "
                                "key is left out) and 0 elsewhere, a float one as it is; a padding mask [B, S] for "
                                "every head and query, an attention mask [T, S] for every sequence, or [B·heads, T, S] "
                                "with the heads of each sequence in turn")))
            elif isinstance(node, Attention) and "sdpa-mask" not in seen and node.args[3] is not None \
                    and not (isinstance(node.args[3], Num) and node.args[3].value is None):
                seen.add("sdpa-mask")
                mask = node.args[3]
                out.append((Ref(mask.key) if isinstance(mask, Sym) else op("softmax"),
                            msg("the mask added to the logits as scaled_dot_product_attention adds one: a boolean "
                                "mask is 0 where it is true (that key is attended) and −∞ elsewhere, a float one is "
                                "added as it is; a query whose every key is masked gets zeros")))
            if node.meta.get("causal") is True and "causal" not in seen:         # Attention, MHAOp
                seen.add("causal")
                out.append((_causal_mask(),
                            msg("the causal mask: each position attends to itself and the positions before it")))
    return tuple(out)


def residuals(prog: Program) -> int:
    """Own steps x' = x + f(x) where f runs a section or a child module, through the steps before it, on x: the
    branch adds back onto the value it started from. Two branches' results added (DeepSeek's routed experts plus
    its shared experts, each on the layer's input) are no residual."""
    by_key = {s.key: s for s in prog.steps}
    count = 0
    for step in prog.steps:
        if step.section is not None or not isinstance(step.node, m.Add):
            continue
        a, b = step.node.args
        if any(isinstance(base, Sym) and _reads(branch, base.key, by_key) and _runs_a_child(branch, base.key, by_key)
               for base, branch in ((a, b), (b, a))):
            count += 1
    return count


def _upstream(node, by_key: dict, stop: str | None = None):
    """Every node `node` is computed from, through the steps before it, each once; not into the step `stop`."""
    seen, pending = set(), [node]
    while pending:
        for n in pending.pop().distinct():
            yield n
            if isinstance(n, Sym) and n.key in by_key and n.key != stop and n.key not in seen:
                seen.add(n.key)
                pending.append(by_key[n.key].node)


def _reads(node, key, by_key: dict) -> bool:
    """Whether `node` is computed from the value `key`."""
    return any(isinstance(n, Sym) and n.key == key for n in _upstream(node, by_key))


def _runs_a_child(node, base: str, by_key: dict) -> bool:
    """Whether computing `node` from the value `base` runs a section or a child module: the steps that made `base`
    itself are not looked into (x + x·γ, x a child's result, is no residual)."""
    return any(isinstance(n, (Call, Loop)) or (isinstance(n, Sym) and n.key in by_key and n.key != base and
                                                by_key[n.key].section is not None)
               for n in _upstream(node, by_key, base))


def normalizes(prog: Program) -> bool:
    """Whether the steps divide by a 2-norm, or by the square root of a mean (a variance, a mean square)."""
    means = {s.key for s in prog.steps if isinstance(s.node, (red.Mean, red.Var))}
    for step in prog.steps:
        for node in step.node.walk():
            if isinstance(node, red.Norm2) or getattr(node, "normalizes", False):     # a fused norm's own node
                return True
            if isinstance(node, (m.Sqrt, m.Rsqrt)):
                inner = list(node.args[0].walk()) if hasattr(node.args[0], "walk") else []
                if any(isinstance(n, (red.Mean, red.Var)) or (isinstance(n, Sym) and n.key in means) for n in inner):
                    return True
    return False


def _causal_mask():
    """M_{t,s} = 0 where s ≤ t, −∞ where s > t."""
    t, s = Ident("t"), Ident("s")
    rows = ((Number(0), row(s, Glyph("≤"), Space("plain"), t)), (Number(-math.inf), row(s, Glyph(">"), t)))
    return row(sub(Ref("c.causal"), row(t, Glyph(","), s)), Glyph("="), Cases(rows))


def present(prog: Program, status: EquationStatus, vocab, link_ids) -> Equations:
    """Page data for a named program. `link_ids` maps a relative module path to a component id."""
    p = Printer(prog.scalars())
    steps = []
    for step in prog.steps:
        if isinstance(step.node, Loop):
            line = _loop_line(p, prog, step.key, step.node)
        elif isinstance(step.node, red.Softmax) and isinstance(step.node.args[0], Sym):    # A_{t,s} = exp F_{t,s}/…
            line = Equation(sub(Group(Ref(step.key)), row(Ident("t"), Glyph(","), Ident("s"))), p.print(step.node))
        elif _indices(step.node):                   # y_t = Σ_j …(x_t), M_{t,s} = s ≤ t: the entry it defines
            line = Equation(sub(Group(Ref(step.key)), joined(_indices(step.node), Glyph(","))), p.print(step.node))
        else:
            line = Equation(Ref(step.key), p.print(step.node))
        links = tuple(dict.fromkeys(i for i in (link_ids(rel) for rel in step.links) if i is not None))
        steps.append(Step(line, step.section, links, step.key, _dims(step.shape, vocab)))
    constants = tuple(Equation(Ref(k), _constant(prog.symbols[k].binding[1])) for k in prog.constants)
    own = [s for s in steps if s.section is None]
    if prog.leaf:
        summary = tuple(s.formula for s in steps) + constants
    elif prog.headline and all(any(s.defines == k for s in steps) for k in prog.headline):
        summary = tuple(s.formula for s in steps if s.defines in prog.headline)
    else:
        summary = tuple(s.formula for s in (own if len(own) <= MAX_SUMMARY else own[-2:]))
    used = set()
    for line in [s.formula for s in steps] + list(constants):
        used.update(line.refs())
    notes = notations(prog)
    for line, _ in notes:
        used.update(line.refs())
    sites = _sites(prog)
    symbols = tuple(MathSymbol(k, s.name or Ident(k), s.kind, s.stream, _dims(s.shape, vocab),
                               *sites.get(k, (None, None))) for k, s in prog.symbols.items() if k in used)
    return Equations(status, summary, tuple(steps), prog.leaf, None, None, residuals(prog), normalizes(prog),
                     symbols, constants if not prog.leaf else (), notes, facts(prog))


def _sites(prog: Program) -> dict:
    """Each symbol's line of code, as (file name, line): for a step's value, the line that computes it (the
    step's own operation, else the first operation in it the record placed); for an input or a parameter, the
    first operation that reads it."""
    out = {}
    for step in prog.steps:
        placed = [n for n in step.node.distinct() if n.meta.get("site") or n.meta.get("call_site")]
        if placed:
            out.setdefault(step.key, site_of(placed[0], "call_site"))
        for node in placed:
            for a in kids(node.args):
                if isinstance(a, Sym) and prog.symbols.get(a.key) is not None \
                        and prog.symbols[a.key].kind in ("input", "param"):
                    out.setdefault(a.key, site_of(node, "call_site"))
    return out


def _constant(value):
    if isinstance(value, (int, float)):
        return Number(value)
    if isinstance(value, sympy.Basic):
        return Size(str(value), compact=False)
    return Ident(str(value))
