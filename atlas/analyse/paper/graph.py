"""The op program as one graph while rules rewrite it: each step's node by its key, seen through the symbols that
name earlier steps, and the program put back together from its outputs afterwards.

A step of the op program may end up computing nothing a later step reads (the mean square inside a recognized
RMSNorm): it is dropped. A step that becomes another symbol (a cast that drops out) is replaced by that symbol
wherever it is read, unless it is an output.
"""

from __future__ import annotations

from dataclasses import replace

from atlas.analyse.equations.nodes import Node, Num, SizeOf, Sym, kids, substitute
from atlas.analyse.equations.ops_nn import Call, Loop
from atlas.analyse.equations.program import Program, Step


class Graph:
    """The steps of a program by key, rewritten in place by the passes of a paper view."""

    def __init__(self, prog: Program, context=None) -> None:
        from atlas.analyse.paper.context import Context
        self.prog = prog
        self.context = context or Context()
        self.order = [s.key for s in prog.steps]
        self.nodes = {s.key: s.node for s in prog.steps}
        self.steps = {s.key: s for s in prog.steps}
        self.reshaped: set = set()          # steps whose value no longer has the recorded shape (tokens unflattened)
        self.checks: list = []

    def resolve(self, node, depth: int = 32):
        """The node a step's symbol stands for, through symbols of symbols; anything else as it is."""
        while isinstance(node, Sym) and node.key in self.nodes and depth:
            node, depth = self.nodes[node.key], depth - 1
        return node

    def same(self, a, b) -> bool:
        """Whether two operands are one value: the same node, or symbols of the same step or input."""
        if a is b:
            return True
        if isinstance(a, Sym) and isinstance(b, Sym):
            return a.key == b.key
        a, b = self.resolve(a), self.resolve(b)
        # one node of the code's record may stand in a tree twice as two copies (each rebuilt around the steps it
        # reads): a copy keeps the number of the node it copies
        return a is b or (isinstance(a, Node) and type(a) is type(b) and a.seq == b.seq)

    def shape(self, node) -> tuple | None:
        """The recorded shape of a value, where the record gives one."""
        if isinstance(node, Sym):
            if node.key in self.steps:
                return self.steps[node.key].shape
            sym = self.prog.symbols.get(node.key)
            return None if sym is None else sym.shape
        if isinstance(node, Node):
            return node.meta.get("out_shape")
        return None

    def symbol(self, node):
        """The program's symbol a Sym names (an input, a parameter), else None."""
        return self.prog.symbols.get(node.key) if isinstance(node, Sym) else None

    def param(self, node):
        """The parameter's symbol where `node` is one (W, or Wᵀ as stored), else None."""
        sym = self.symbol(node)
        return sym if sym is not None and sym.kind == "param" else None

    def name_as(self, node, name) -> None:
        """Give a symbol the name its role gives it (ω, W_Q, Δ_attn): a formula, on both views of the page; the first
        role found keeps it."""
        sym = self.symbol(node) if isinstance(node, Sym) else None
        if sym is not None and sym.given is None:
            sym.given = name

    @staticmethod
    def recognized(idiom, node) -> None:
        """Mark a node a rule made as the idiom it is: the view lists the idioms its final steps hold."""
        node.meta["recognized"] = idiom

    def program(self) -> Program:
        """The rewritten program: its steps, each read by an output or a later step, in the op program's order."""
        prog = self.prog
        aliases = {k: n for k, n in self.nodes.items() if not prog.symbols[k].output and (isinstance(n, Sym) or (
            getattr(n, "transparent", False) and isinstance(n.args[0], Sym)))}
        table = {}
        for key in self.order:
            node = self.nodes[key]
            self.nodes[key] = _replaced(node, aliases)
            table[key] = self.nodes[key]
        outputs = [_replaced(o, aliases) for o in prog.outputs]
        needed = self.live(outputs, aliases)
        steps = [replace(self.steps[k], node=self.nodes[k], links=links(self.nodes[k]),
                         shape=None if k in self.reshaped else self.steps[k].shape)
                 for k in self.order if k in needed]
        return replace(prog, steps=steps, outputs=outputs, notations=list(prog.notations),
                       constants=list(prog.constants))


    def live(self, outputs=None, skip=()) -> set:
        """The steps an output is computed from."""
        needed, pending = set(), list(self.prog.outputs if outputs is None else outputs)
        while pending:
            for n in _symbols(pending.pop()):
                if n.key in self.nodes and n.key not in needed and n.key not in skip:
                    needed.add(n.key)
                    pending.append(self.nodes[n.key])
        return needed


def _replaced(node, aliases: dict):
    """`node` with every symbol of an aliased step replaced by what the step became, through chains of aliases."""
    table = {}
    for n in _symbols(node):
        target = n
        seen = 0
        while isinstance(target, Sym) and target.key in aliases and seen < 32:
            target, seen = aliases[target.key], seen + 1
        if target is not n:
            table[id(n)] = target
    return substitute(node, table) if table else node


def _symbols(node):
    if isinstance(node, Sym):
        yield node
        return
    if not isinstance(node, Node):
        for k in kids(node):
            yield from _symbols(k)
        return
    for n in node.distinct():
        if isinstance(n, Sym):
            yield n


def links(node) -> tuple:
    """Relative paths of the child modules a step calls or names, in order: a Call's module, a Loop's list, and a
    recognized idiom computed by a child (RMSNorm(x) of `input_layernorm`)."""
    out = []
    for n in node.walk():
        rel = None
        if isinstance(n, Loop):
            rel = n.meta.get("link")
        elif isinstance(n, Call) and isinstance(n.args[0], Sym):
            rel = n.args[0].key.removeprefix("m.")
        elif getattr(n, "idiom", None) is not None:
            rel = n.meta.get("module")
        if rel and rel not in out:
            out.append(rel)
    return tuple(out)


def constant(node) -> float | None:
    """A number the node is: a literal, or a size of no symbols."""
    if isinstance(node, Num) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, SizeOf) and isinstance(node.expr, int):
        return float(node.expr)
    return None


__all__ = ["Graph", "Program", "Step", "constant", "links"]
