"""Rules applied to an op tree bottom-up: each node's arguments first, then every rule in turn on the node, until
none changes it. A rule is a function (node, graph) -> a node computing the same value, or None where it does not
apply. Steps are rewritten in the order the code computed them, so a rule that looks through a symbol into an
earlier step sees that step already rewritten."""

from __future__ import annotations

from atlas.analyse.equations.nodes import Node, Num, SizeOf, Sym
from atlas.analyse.paper.graph import Graph
from atlas.load.nested import mapped

MAX_REWRITES = 16                       # rules applied to one node: each makes it simpler, so few ever are


def rewrite(g: Graph, rules) -> None:
    """Apply `rules` to every step of the graph, in place."""
    memo: dict = {}
    for key in g.order:
        g.nodes[key] = _apply(g.nodes[key], rules, g, memo)


def _apply(node, rules, g: Graph, memo: dict):
    if not isinstance(node, Node) or isinstance(node, (Sym, Num, SizeOf)):
        return node
    done = memo.get(id(node))
    if done is not None:
        return done[1]
    args = tuple(mapped(a, lambda x: _apply(x, rules, g, memo)) for a in node.args)
    out = node if all(_kept(n, o) for n, o in zip(args, node.args)) else node.rebuild(args)
    for _ in range(MAX_REWRITES):
        for rule in rules:
            before = Node._count
            new = rule(out, g)
            if new is not None and new is not out:
                if isinstance(new, Node) and new.seq > before:     # made by the rule: the value it computes keeps
                    for k, v in out.meta.items():                   # its shape and origin
                        if k in ("out_shape", "module", "site", "hint"):
                            new.meta.setdefault(k, v)
                out = new
                break
        else:
            break
        if not isinstance(out, Node) or isinstance(out, (Sym, Num, SizeOf)):
            break
    memo[id(node)] = (node, out)            # the original kept alive, so its id is not reused while memo lives
    return out


def _kept(new, old) -> bool:
    if isinstance(old, (tuple, list)) and isinstance(new, (tuple, list)):
        return len(new) == len(old) and all(_kept(a, b) for a, b in zip(new, old))
    if isinstance(old, dict) and isinstance(new, dict):
        return all(_kept(new[k], old[k]) for k in old)
    if isinstance(old, slice) and isinstance(new, slice):
        return new.start is old.start and new.stop is old.stop and new.step is old.step
    return new is old
