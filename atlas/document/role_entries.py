"""Which components play each role of a model (attention, normalization, MLP / MoE, positions), with the figures a
role matrix compares: hyper-parameters read off the recognized idioms, parameters, FLOPs per token at the model's
reference sizes, KV cache per token, which equation a page shows first and whether it is verified.

Everything is read off the document (no torch): a component carries an idiom when its verified equations compute it,
and idioms propagate up to every parent, so the component taken for a role is the one whose own subtree is the
smallest carrying it (`model.layers.self_attn`, not `model.layers`). A torch.nn normalization holds no idiom: its
class says what it is. Positions come from the model's architecture summary (rotary, learned or frozen tables).

    of(doc)         the model's role entries, in role order, then tree order
    as_dicts(doc)   the same as plain data for the JSON (atlas.document.serialize)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atlas.document.model import Component, ModelDoc

ROLES = ("attention", "normalization", "mlp", "positions")
NORM_KINDS = ("rmsnorm", "layernorm")
FFN_KINDS = ("mlp", "swiglu", "geglu", "reglu", "moe")
TORCH_NORMS = ("torch.nn.modules.normalization.", "torch.nn.modules.batchnorm.", "torch.nn.modules.instancenorm.")
FACT_NORMS = {"layer": "layernorm", "rms": "rmsnorm", "l2": "l2norm"}


@dataclass(frozen=True)
class RoleEntry:
    """One component in one role."""

    role: str                       # one of ROLES
    component: str                  # its id
    kind: str                       # "mha", "gqa", "mqa", "rmsnorm", "layernorm", "swiglu", "moe", "rotary", ...
    params: tuple[tuple[str, object], ...]      # hyper-parameters as the code computes with them
    instances: int
    parameters_per_instance: int
    flops: float | None = None      # FLOPs of one instance per token (or per input), at `flops_at`
    flops_per: str | None = None    # "token" (divided by B·T) | "input" (divided by B): no positions in the formula
    flops_at: tuple[tuple[str, int], ...] = ()  # the reference sizes the figure depends on (T for attention)
    kv_cache_per_token: int | None = None       # values one instance caches per token: keys and values
    view: str | None = None         # the equation a page shows first: "paper" or "code"; None: none derived
    verified: bool = False          # that equation reproduces forward()
    also: tuple[str, ...] = ()      # other roles the same component plays (BERT's layer holds its MLP idiom)

    def get(self, name: str, default=None):
        return next((v for k, v in self.params if k == name), default)


def _kinds(comp: Component) -> set[str]:
    return set() if comp.equations is None else {i.kind for i in comp.equations.idioms}


def _idiom(comp: Component, kinds):
    return next((i for i in comp.equations.idioms if i.kind in kinds), None) if comp.equations else None


def _smallest(doc: ModelDoc, kinds) -> list[Component]:
    """The components carrying one of `kinds` with no part below them carrying one."""
    carriers = [c for c in doc.components if _kinds(c) & set(kinds)]
    ids = {c.id for c in carriers}
    return [c for c in carriers if not any(o != c.id and (c.id == "" or o.startswith(c.id + ".")) for o in ids)]


def _torch_norm(comp: Component) -> bool:
    return comp.cls.startswith(TORCH_NORMS)


def _view(comp: Component) -> tuple[str | None, bool]:
    e = comp.equations
    if e is None or not e.summary and (e.paper is None or not e.paper.summary):
        return None, False
    if e.paper is not None and not e.paper.same and e.paper.summary:
        v = e.paper.verification
        return "paper", bool(v and v.verified)
    return "code", bool(e.verification and e.verification.verified)


def _placement(doc: ModelDoc, comp: Component, branch: str | None) -> str | None:
    """Pre- or post-norm, from the residual idiom of the nearest block (itself or a parent) that has one: the
    residual around its branch (`attn`, `mlp`), or, for a norm, the one placement all its residuals share."""
    for c in (comp, *reversed(doc.ancestors(comp.id))):
        residual = [i for i in (c.equations.idioms if c.equations else ()) if i.kind == "residual"]
        if not residual:
            continue
        if branch is not None:
            found = {i.get("placement") for i in residual if i.get("branch") == branch}
        else:
            found = {i.get("placement") for i in residual}
        return found.pop() if len(found) == 1 else None
    return None


def _eps(comp: Component) -> float | None:
    """ε of a normalization whose class holds no idiom, read from its constant's key (c.eps.<value>)."""
    for s in comp.equations.symbols if comp.equations else ():
        m = re.fullmatch(r"c\.eps\.([0-9.e+-]+)", s.key)
        if m:
            return float(m.group(1))
    return None


def _flops(doc: ModelDoc, comp: Component):
    """One instance's FLOPs per token at the model's reference sizes (per input where the formula has no T), and the
    sizes the figure still depends on once divided (T, for attention's T² term)."""
    import sympy

    from atlas.document.expressions import parse
    if comp.cost is None or doc.cost_summary is None:
        return None, None, ()
    ref = dict(doc.cost_summary.reference)
    total = parse(comp.cost.flops)
    names = {s.name for s in total.free_symbols}
    if not names <= set(ref):
        return None, None, ()
    per = "token" if "T" in names or not names and "T" in ref else "input"
    each = sympy.simplify(total / (sympy.Symbol("B") if "B" in names else 1) / (sympy.Symbol("T") if per == "token"
                                                                                  else 1))
    value = float(each.subs({sympy.Symbol(k): v for k, v in ref.items()}))
    at = tuple((k, v) for k, v in ref.items() if k in {s.name for s in each.free_symbols})
    return value, per, at


def _entry(doc: ModelDoc, comp: Component, role: str, kind: str, params: dict, branch: str | None,
           kv: int | None = None, parameters: int | None = None, with_cost: bool = True) -> RoleEntry:
    view, verified = _view(comp)
    placement = _placement(doc, comp, branch) if role != "positions" else None
    if placement is not None:
        params = {**params, "placement": placement}
    flops, per, at = _flops(doc, comp) if with_cost else (None, None, ())
    return RoleEntry(role, comp.id, kind, tuple(params.items()), comp.instances,
                     comp.parameters_per_instance if parameters is None else parameters, flops, per, at, kv,
                     view, verified)


def _attention_kind(attn) -> str:
    """"mha" (a key/value head per query head), "gqa" (groups of query heads share one), "mqa" (all share one)."""
    heads, kv = attn.get("heads"), attn.get("kv_heads", attn.get("heads"))
    if isinstance(heads, int) and isinstance(kv, int) and kv < heads:
        return "mqa" if kv == 1 else "gqa"
    return "mha"


def _attention(doc: ModelDoc) -> list[RoleEntry]:
    out = []
    for comp in _smallest(doc, ("attention",)):
        attn = _idiom(comp, ("attention",))
        params = dict(attn.params)
        rope = _idiom(comp, ("rope",))
        if rope is not None:
            params.update({"theta": rope.get("theta"), "rotary_dim": rope.get("rotary_dim")})
        kv = None
        heads = attn.get("kv_heads", attn.get("heads"))
        if attn.get("causal") and not attn.get("cross") and isinstance(heads, int) and \
                isinstance(attn.get("head_dim"), int):
            kv = 2 * heads * attn.get("head_dim")
        out.append(_entry(doc, comp, "attention", _attention_kind(attn), params, "attn", kv))
    return out


def _normalization(doc: ModelDoc) -> list[RoleEntry]:
    found = {c.id: c for c in _smallest(doc, NORM_KINDS)}
    found.update({c.id: c for c in doc.components if _torch_norm(c) and not c.children})
    out = []
    for comp in (c for c in doc.components if c.id in found):
        idiom = _idiom(comp, NORM_KINDS)
        if idiom is not None:
            kind, params = idiom.kind, {k: v for k, v in idiom.params if k != "gain"}
        else:
            fact = next((f.value for f in comp.equations.facts if f.kind == "norm"), None) if comp.equations else None
            kind = FACT_NORMS.get(fact, comp.cls.rsplit(".", 1)[-1].lower())
            params = {"eps": _eps(comp)} if _eps(comp) is not None else {}
        out.append(_entry(doc, comp, "normalization", kind, params, None))
    return out


def _ffn(doc: ModelDoc) -> list[RoleEntry]:
    out = []
    for comp in _smallest(doc, FFN_KINDS):
        idiom = _idiom(comp, FFN_KINDS)
        params = dict(idiom.params)
        if idiom.kind in ("swiglu", "geglu", "reglu"):
            params["gated"] = True
        also = ("attention",) if "attention" in _kinds(comp) else ()
        entry = _entry(doc, comp, "mlp", idiom.kind, params, "mlp")
        out.append(RoleEntry(**{**entry.__dict__, "also": also}))
    return out


def _positions(doc: ModelDoc) -> list[RoleEntry]:
    out = []
    for trait in doc.architecture.positions if doc.architecture else ():
        if trait.component is None:
            continue
        comp = doc.component(trait.component)
        kind = str(trait.value).split(" ")[0]
        if kind == "rotary":
            rope = _idiom(comp, ("rope",))
            params = {} if rope is None else {"theta": rope.get("theta"), "rotary_dim": rope.get("rotary_dim")}
            if " " in str(trait.value):
                params["rotated"] = str(trait.value).split(" ", 1)[1]
            out.append(_entry(doc, comp, "positions", kind, params, None, parameters=0, with_cost=False))
        else:
            table = next((r for r in comp.rows if len(r.shape) == 2), None)
            params = {} if table is None else {"positions": table.shape[0], "width": table.shape[1]}
            out.append(_entry(doc, comp, "positions", kind, params, None, with_cost=False))
    return out


def of(doc: ModelDoc) -> tuple[RoleEntry, ...]:
    """Every role entry of the model: attention, normalization, MLP / MoE and positions, each in tree order."""
    return (*_attention(doc), *_normalization(doc), *_ffn(doc), *_positions(doc))


def as_dicts(doc: ModelDoc) -> list[dict]:
    return [{"role": e.role, "component": e.component, "kind": e.kind, "params": dict(e.params),
             "instances": e.instances, "parameters_per_instance": e.parameters_per_instance, "flops": e.flops,
             "flops_per": e.flops_per, "flops_at": dict(e.flops_at), "kv_cache_per_token": e.kv_cache_per_token,
             "view": e.view, "verified": e.verified, "also": list(e.also)} for e in of(doc)]
