"""Residual blocks: a step x′ = x + f(x) whose branch f runs an attention or a feed-forward network, its
normalizations placed before the branch (pre), after the sum (post), or on both sides of the branch (sandwich).

The branch's value is named by its role, Δ_attn or Δ_mlp, and the gain of the normalization that feeds it γ_attn or
γ_mlp; the residual steps are what the block's page shows first, as seed pages do (u′ = u + Δ_attn,
u_{n+1} = u′ + Δ_mlp).
"""

from __future__ import annotations

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations.nodes import Node, Sym
from atlas.analyse.equations.notation import Script, op, rm
from atlas.analyse.equations.ops_nn import Call, Loop
from atlas.analyse.equations.symbols import name_of
from atlas.analyse.paper.attention import Attend
from atlas.analyse.paper.graph import Graph
from atlas.analyse.paper.match import bare, pair, site
from atlas.analyse.paper.norms import LayerNormOp, RMSNorm
from atlas.analyse.paper.projections import gain_name
from atlas.document import Idiom

FEED_FORWARD = ("mlp", "swiglu", "geglu", "reglu", "glu", "moe")
_NORMS = (RMSNorm, LayerNormOp)


def _upstream(node, g: Graph, stop=None):
    """Every node `node` is computed from, through the steps before it, each once; not into the value `stop`."""
    seen, pending = set(), [node]
    while pending:
        n = pending.pop()
        if not isinstance(n, Node):
            continue
        for k in n.distinct():
            yield k
            if isinstance(k, Sym) and k.key in g.nodes and k.key not in seen and not (stop and g.same(k, stop)):
                seen.add(k.key)
                pending.append(g.nodes[k.key])


def _kind(branch, base, g: Graph) -> str | None:
    """"attn" where the branch attends, "mlp" where it runs a feed-forward network, else None: a sum of branches
    (an attention and an MLP side by side) is of a kind only where each of its terms is."""
    top = bare(branch, g)
    terms = [a for a in top.args if _runs_something(a, base, g)] if isinstance(top, m.Add) else []
    if len(terms) > 1:
        kinds = {_kind(term, base, g) for term in terms}
        return kinds.pop() if len(kinds) == 1 else None
    kinds = set()
    for n in _upstream(branch, g, base):
        idiom = n.meta.get("recognized")
        if isinstance(n, Attend) or (idiom is not None and idiom.kind == "attention"):
            kinds.add("attn")
        elif idiom is not None and idiom.kind in FEED_FORWARD:
            kinds.add("mlp")
    return kinds.pop() if len(kinds) == 1 else None


def _reads(branch, base, g: Graph) -> bool:
    return any(g.same(n, base) for n in _upstream(branch, g) if isinstance(n, Node))


def _runs_something(branch, base, g: Graph) -> bool:
    return any(isinstance(n, (Call, Loop)) or n.meta.get("recognized") is not None or isinstance(n, Attend)
               for n in _upstream(branch, g, base))


def _residual(node, g: Graph):
    """(base, branch, post-norm or None) where the node is x + f(x), or a normalization of it."""
    post = None
    inner = bare(node, g)
    if isinstance(inner, _NORMS) or _norm_call(inner, g):
        summed = inner.args[0] if isinstance(inner, _NORMS) else inner.args[1][0]
        if isinstance(summed, Sym) and _readers(summed.key, g) > 1:
            return None                 # the sum goes on as the stream: this normalizes the next branch's input
        post, inner = inner, bare(summed, g)
    for base, branch in pair(inner, m.Add):
        if isinstance(base, Sym) or isinstance(bare(base, g), Sym):
            if _reads(branch, base, g) and _runs_something(branch, base, g):
                return base, branch, post
    return None


def _readers(key: str, g: Graph) -> int:
    """The steps and outputs that read a step's value."""
    count = sum(1 for out in g.prog.outputs if isinstance(out, Sym) and out.key == key)
    for other in g.order:
        node = g.nodes[other]
        if isinstance(node, Node) and any(isinstance(n, Sym) and n.key == key for n in node.distinct()):
            count += 1
    return count


def _name_norm_module(module: Sym, kind: str, g: Graph) -> None:
    """LayerNorm_attn and LayerNorm_mlp where the block calls two modules of one class: named by the branch each
    normalizes around, not by attributes (BERT's two `LayerNorm`s); one alone keeps its class's name."""
    sym = g.symbol(module)
    alike = [s for s in g.prog.symbols.values() if s.kind == "module" and s.base == sym.base]
    if len(alike) > 1:
        g.name_as(module, Script(op(str(sym.base)), sub=rm(kind)))


def _norm_call(node, g: Graph) -> bool:
    """A call of a child module that normalizes (nn.LayerNorm, nn.RMSNorm), on one argument."""
    if not isinstance(node, Call) or not isinstance(node.args[0], Sym) or len(node.args[1]) != 1:
        return False
    sym = g.symbol(node.args[0])
    return sym is not None and sym.base in ("LayerNorm", "RMSNorm")


def _pre_norm(branch, base, g: Graph):
    """The normalization of `base` the branch starts from, where it has one."""
    for n in _upstream(branch, g, base):
        if isinstance(n, _NORMS) and g.same(bare(n.args[0], g), bare(base, g)):
            return n
        if _norm_call(n, g) and g.same(bare(n.args[1][0], g), bare(base, g)):
            return n
    return None


def name_roles(g: Graph) -> None:
    headline, found_at = [], {}
    for key in g.order:
        found = _residual(g.nodes[key], g)
        if found is not None:
            found_at[key] = found
    # x + f(x) normalized in the next step (post-norm): one residual, the normalization's step
    summed = {id(bare(f[2].args[0] if isinstance(f[2], _NORMS) else f[2].args[1][0], g))
              for f in found_at.values() if f[2] is not None}
    for key, (base, branch, post) in found_at.items():
        if post is None and id(bare(g.nodes[key], g)) in summed:
            headline.append(key)            # the sum, then its normalization: both lines of the residual
            continue
        headline.append(key)
        kind = _kind(branch, base, g)
        pre = _pre_norm(branch, base, g)
        sandwich = any(isinstance(n, _NORMS) for n in (bare(branch, g),))
        placement = "sandwich" if pre is not None and sandwich else (
            "pre" if pre is not None else ("post" if post is not None else "none"))
        if kind is not None:
            if isinstance(branch, Sym) and branch.key in g.nodes:
                g.name_as(branch, name_of(f"delta_{kind}"))
            if isinstance(pre, _NORMS) and pre.args[1] is not None:
                g.name_as(pre.args[1], gain_name(kind))
            for norm in (pre, post):
                if norm is not None and _norm_call(norm, g):
                    _name_norm_module(norm.args[0], kind, g)
        g.nodes[key].meta["recognized"] = Idiom("residual", (("branch", kind), ("placement", placement)),
                                                *site(g.nodes[key]))
    if headline:
        g.prog.headline = headline
