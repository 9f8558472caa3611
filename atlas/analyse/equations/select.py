"""Which values of a built program become steps, in the order the code computed them.

A value is a step when the code names it (assigns it to a variable in the component's forward(), or in
the forward() of a child shown as a section), when it is used more than once (so no expression repeats
a compound value), when it is the result of a loop, or when it is an output. Everything else is inlined
into the step that uses it.
"""

from __future__ import annotations

from atlas.analyse.equations.build import Draft
from atlas.analyse.equations.nodes import Num, SizeOf, Sym, kids, substitute
from atlas.analyse.equations.ops_nn import Call, Loop
from atlas.analyse.equations.ops_tensor import Heads, Item, Slice, Transpose, Unsqueeze
from atlas.analyse.equations.program import Step

VIEWS = (Heads, Slice, Transpose, Unsqueeze, Item)


def _simple(node, chosen) -> bool:
    """A symbol, a number, or a view of one (q^h, p_{1:768}): it reads fine where it appears twice."""
    while isinstance(node, VIEWS) and id(node) not in chosen:
        node = node.args[0]
    return isinstance(node, (Sym, Num, SizeOf)) or id(node) in chosen


def _named(d: Draft, value) -> str | None:
    """The variable the component's own code (or a section's forward()) binds the value to, first binding.
    A section's parameters do not name: the parent's code already named what it passes, or chose not to."""
    for frame, var, _line, is_param in value.names:
        if frame in d.naming and not (is_param and d.naming[frame] is not None):
            return var
    return None


def _helper_name(d: Draft, value) -> str | None:
    """A name a helper function of the component gives the value (rotate_half's `x1`)."""
    for frame, var, _line, _param in value.names:
        if frame in d.frames:
            return var
    return None


def select(d: Draft) -> None:
    """Fill d.prog.steps and d.prog.outputs from the draft."""
    prog = d.prog
    counts: dict[int, int] = {}
    nodes: dict[int, object] = {}
    stack = list(d.outputs)
    for o in d.outputs:
        counts[id(o)] = counts.get(id(o), 0) + 1
    while stack:
        node = stack.pop()
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        for k in kids(node.args):
            counts[id(k)] = counts.get(id(k), 0) + 1
            stack.append(k)
    chosen: dict[int, tuple] = {}           # id(node) -> (base name, why)
    ordered = sorted((n for n in nodes.values() if not isinstance(n, (Sym, Num, SizeOf))), key=lambda x: x.seq)
    for node in ordered:
        value = d.value_of.get(id(node))
        name = _named(d, value) if value is not None else None
        if id(node) in d.loops or isinstance(node, Loop):
            chosen[id(node)] = (name, "loop")
        elif name is not None:
            chosen[id(node)] = (name, "named")
        elif id(node) in d.hoist:
            chosen[id(node)] = (node.meta.get("hint"), "long")
    passed = {id(a) for n in ordered if isinstance(n, (Loop, Call)) for a in kids(n.args[1:])}
    for node in ordered:
        if id(node) not in chosen and (counts.get(id(node), 0) >= 2 or id(node) in passed) \
                and not _simple(node, chosen):
            value = d.value_of.get(id(node))
            hint = (_helper_name(d, value) if value is not None else None) or node.meta.get("hint")
            chosen[id(node)] = (hint, "shared")
    for o, value in zip(d.outputs, d.output_values):
        if not isinstance(o, Sym) and id(o) not in chosen:
            chosen[id(o)] = (None, "output")
    table = {}
    order = sorted((nodes[i] for i in chosen), key=lambda x: x.seq)
    for n, node in enumerate(order):
        key = f"v{n + 1}"
        table[id(node)] = Sym(key)
    d.key_of = {i: sym.key for i, sym in table.items()}
    for node in order:
        key = table[id(node)].key
        base, why = chosen[id(node)]
        value = d.value_of.get(id(node))
        section = d.section_of.get(id(node))
        shape = value.shape if value is not None else None
        prog.add(key, "value", base=base, section=section, shape=shape, hint=node.meta.get("hint"))
        prog.symbols[key].output = why == "output" or any(node is o for o in d.outputs)
        body = substitute(node, table, top=node)
        prog.steps.append(Step(key, body, section, shape, links=_links(body)))
    prog.outputs = [table.get(id(o), o) if not isinstance(o, Sym) else o for o in d.outputs]


def _links(node) -> tuple:
    """Relative paths of the child modules a step calls, in the order it calls them."""
    out = []
    for n in node.walk():
        if isinstance(n, Loop):
            link = n.meta.get("link")
            if link and link not in out:
                out.append(link)
        elif isinstance(n, Call) and isinstance(n.args[0], Sym):
            rel = n.args[0].key.removeprefix("m.")
            if rel not in out:
                out.append(rel)
    return tuple(out)
