"""Tokens kept in their positions: a reshape that merges a value's leading axes into rows of tokens, undone where
everything that reads it acts on each token alone.

Code flattens (batch, positions, features) into (tokens, features) for its kernels and reshapes back at the end; a
paper writes the map of one token. Where every operation from the flattening to the end (or to a reshape that gives
the leading axes back) acts on the last axis alone (a linear map, an elementwise function, a softmax or a top-k over
the features, a router and its experts), the flattening and the reshapes back are dropped and the steps compute on
the value as it came.
"""

from __future__ import annotations

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.lowering_context import same_size
from atlas.analyse.equations.nodes import Node, Sym, substitute
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.identities import Broadcast, Real, merged_rows


def _per_token(node, child, g: Graph) -> bool:
    """Whether `node` computes each token from that token alone, reading `child` as one of its operands."""
    from atlas.analyse.paper.activations import Activation
    from atlas.analyse.paper.moe import MixtureOfExperts, TopK
    from atlas.analyse.paper.norms import LayerNormOp, RMSNorm
    if isinstance(node, (Real, Activation, RMSNorm, LayerNormOp, t.Item, MixtureOfExperts)):
        return not isinstance(node, (RMSNorm, LayerNormOp)) or node.args[0] is child
    if isinstance(node, (n.Linear, t.MatMul)):
        shape = g.shape(node.args[1])
        return node.args[0] is child and shape is not None and len(shape) <= 2 and not _reads(node.args[1], child)
    if isinstance(node, (red.Softmax, red.LogSoftmax, TopK, red.Sum, red.Mean, red.AMax, red.Norm2)):
        dim = node.meta.get("dim")
        return (dim == -1 or dim == (-1,) or dim == [-1]) and node.args[0] is child
    if isinstance(node, (m.Add, m.Sub, m.Mul, m.Div)):
        for a in node.args:
            if a is child:
                continue
            shape = g.shape(a)
            if shape is None or len(shape) > 1:
                g.checks.append(a)          # another value of tokens: the closure must hold it too
        return True
    if isinstance(node, Node) and node.elementwise and len(node.args) == 1:
        return True
    if isinstance(node, n.Call):                # a torch.nn layer that maps each token's features on its own
        sym = g.symbol(node.args[0])
        return sym is not None and sym.base in PER_TOKEN_LAYERS and tuple(node.args[1]) == (child,)
    return False


# torch.nn layers whose forward maps the last axis of each position alone, whatever axes come before it
PER_TOKEN_LAYERS = ("LayerNorm", "RMSNorm", "Linear", "GELU", "SiLU", "ReLU", "Tanh", "Sigmoid", "Dropout", "Identity")


def _reads(node, child) -> bool:
    return isinstance(node, Node) and any(x is child for x in node.distinct())


def _tokens(node, affected, whole, g: Graph) -> bool:
    """Whether a value is made of tokens in their positions once the flattening is undone: the unflattened value, a
    step the closure holds, or arithmetic of those with parameters and numbers."""
    for x in (node.distinct() if isinstance(node, Node) else ()):
        if isinstance(x, Sym) and not (x.key in affected or g.same(x, whole) or g.symbol(x) is not None
                                       and g.symbol(x).kind in ("param", "const")):
            return False
    return True


def _occurrences(tree, key):
    """Each path (root first) from a step's node to an occurrence of the symbol `key` in it."""
    stack = [(tree, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, Sym):
            if node.key == key:
                yield path + (node,)
            continue
        if not isinstance(node, Node):
            continue
        for c in node.children():
            stack.append((c, path + (node,)))


def unflatten(g: Graph) -> None:
    for key in list(g.order):
        node = g.nodes[key]
        if not isinstance(node, t.Reshape) or merged_rows(node) is None:
            continue
        whole = node.args[0]
        lead = tuple(merged_rows(node))
        found = _closure(key, lead, g)
        if found is None:
            continue
        restores, affected = found
        g.nodes[key] = whole
        for k, table in restores.items():
            g.nodes[k] = substitute(g.nodes[k], table)
        for k in affected:
            g.reshaped.add(k)


def _closure(key, lead, g: Graph):
    """The reshapes that give the leading axes back (step key -> {id: operand}) and the steps whose values now keep
    them, where every reader of the flattened value acts per token; None otherwise."""
    g.checks = []
    frontier, affected, restores = [key], {key}, {}
    live = g.live()
    while frontier:
        k = frontier.pop()
        for reader in g.order:
            if reader not in live:
                continue
            for path in _occurrences(g.nodes[reader], k):
                child, done = path[-1], False
                for anc in reversed(path[:-1]):
                    if isinstance(anc, t.Reshape) and _restores(anc, lead):
                        restores.setdefault(reader, {})[id(anc)] = anc.args[0]
                        done = True
                        break
                    if isinstance(anc, Broadcast) or not _per_token(anc, child, g):
                        return None
                    child = anc
                if done or reader in affected:
                    continue
                if g.prog.symbols[reader].output:
                    return None
                affected.add(reader)
                frontier.append(reader)
    whole = g.nodes[key].args[0]
    if not all(_tokens(x, affected, whole, g) for x in g.checks):
        return None
    return restores, affected


def _restores(node, lead) -> bool:
    shown = node.meta.get("shown")
    return shown is not None and len(shown) == len(lead) + 1 and all(same_size(a, b) for a, b in zip(shown, lead))
