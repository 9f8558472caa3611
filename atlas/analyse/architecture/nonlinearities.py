"""The norms and activations a model computes, told by the form of what the record holds: a mean taken away
before the scaling is LayerNorm-like, only a scale RMS; a sigmoid's result multiplying its own input is Swish, and
another projection multiplied by it makes it gated."""

from __future__ import annotations

from atlas.analyse.architecture.stacks import outside_attention
from atlas.document import Component, ModelDoc, Trait
from atlas.extract.trace.position_tables import LAYOUT, chain, through
from atlas.extract.trace.structures import Call, OpEvent, short_name, upstream
from atlas.extract.trace.structures import refs as _refs

ACTIVATIONS = {"gelu": "GELU", "silu": "SiLU", "relu": "ReLU", "relu6": "ReLU6", "leaky_relu": "LeakyReLU",
               "tanh": "tanh", "sigmoid": "sigmoid", "mish": "Mish", "elu": "ELU", "selu": "SELU",
               "softplus": "softplus", "hardswish": "hardswish", "glu": "GLU"}


NORM_OPS = {"layer_norm": "LayerNorm", "rms_norm": "RMSNorm", "group_norm": "GroupNorm", "batch_norm": "BatchNorm"}


def made_by(value, names: set[str], depth: int = 6) -> bool:
    """Whether the value was computed (within a few view or arithmetic steps) by one of the named ops."""
    return any(v.made_by is not None and short_name(v.made_by.name) in names for v, _ in upstream([value], depth))


def _norm_kind(call: Call) -> str | None:
    ops = [short_name(e.name) for e in call.events if isinstance(e, OpEvent)]
    for op in ops:
        if op in NORM_OPS:
            return NORM_OPS[op]
    for e in call.events:            # a mean taken away before the scaling: LayerNorm; only a scale: RMS
        if isinstance(e, OpEvent) and short_name(e.name) in ("sub", "__sub__") and \
                any(made_by(r.value, {"mean"}, 2) for r in _refs(e.args)):
            return "LayerNorm"
    if any(op in ("rsqrt", "linalg_vector_norm", "norm", "sqrt") for op in ops) and \
            all(_one_axis(e) for e in call.events if isinstance(e, OpEvent) and short_name(e.name) in _REDUCTIONS):
        return "RMSNorm"
    return None


# the reductions a norm's scale comes from, and where each takes its dims
_REDUCTIONS = {"mean": 1, "var": 1, "norm": 2, "linalg_vector_norm": 2}


def _one_axis(e: OpEvent) -> bool:
    """Whether a reduction is over one axis, each position's features, as an RMS norm's is (channels last or
    first); ConvNeXt-V2's global response norm takes a 2-norm over the height and width, two axes."""
    refs = _refs(e.args[:1])
    shape = refs[0].value.shape if refs else None
    at = _REDUCTIONS[short_name(e.name)]
    dim = e.kwargs.get("dim", e.kwargs.get("axis", e.args[at] if len(e.args) > at else None))
    if shape is None or dim is None:
        return dim is None and shape is not None and len(shape) == 1
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    return len(dims) == 1 and isinstance(dims[0], int)


def norm_kinds(doc: ModelDoc, root: Call | None) -> list[Trait]:
    if root is None:
        return []
    by_path, out = doc.paths, []
    norm_ids = {c.id for c in doc.components if c.is_normalization}
    for call in root.calls():
        cid = by_path.get(call.path)
        if cid in norm_ids:
            kind = _norm_kind(call)
            if kind:
                out.append(Trait(kind, cid))
    return out


def activation_kinds(doc: ModelDoc, root: Call | None, stacks: list[Component]) -> list[Trait]:
    if root is None:
        return []
    by_path = doc.paths
    block_ids = {c.id for s in stacks for c in outside_attention(doc, s)} | {s.id for s in stacks}
    calls = [c for c in root.calls() if by_path.get(c.path) in block_ids]
    events = [e for c in calls for e in c.events if isinstance(e, OpEvent)]
    multiplied = [([r.value for r in _refs(e.args)], _outs(e)) for e in events
                  if short_name(e.name) in ("mul", "__mul__", "__rmul__")]
    products = [args for args, _ in multiplied]
    sums = [([r.value for r in _refs(e.args)], _outs(e)) for e in events if short_name(e.name) in _SUMS]
    squared = {id(r.value) for e in events for r in _refs(e.args[:1]) if _squares(e)}
    # what a top-k choice was computed from: a router's scores (DeepSeek-V3's sigmoid) are no activation
    routed = set().union(*(_made_from(r.value, 8, _ROUTING) for e in events if short_name(e.name) == "topk"
                           for r in _refs(e.args[:1])))
    out = []
    for call in calls:
        for ev in call.events:
            if isinstance(ev, OpEvent) and short_name(ev.name) in ACTIVATIONS:
                name = ACTIVATIONS[short_name(ev.name)]
                if any(id(v) in routed for v in _outs(ev)):
                    continue
                if name == "tanh" and _gelu_by_tanh(ev, sums, products):
                    out.append(Trait("GELU", by_path.get(call.path)))
                    continue
                if name == "ReLU" and any(id(v) in squared for v in _outs(ev)):
                    out.append(Trait("squared ReLU", by_path.get(call.path)))     # Primer's relu(x)²
                    continue
                outs = {id(v) for v in _outs(ev)}
                own = _scaled_from([r.value for r in _refs(ev.args)])
                factors = [v for ops in products if any(id(v) in outs for v in ops) for v in ops if id(v) not in outs]
                if any(id(v) not in own and not _made_after(v, outs) and not _fixed(v) for v in factors):
                    name = f"gated {name}"                  # times another stream (SwiGLU's up projection)
                elif factors and name == "sigmoid":     # x·σ(βx): the input weighs itself (CLIP's quick GELU)
                    name = "gated Swish" if _gated(multiplied, outs, own) else "Swish"     # GPT-OSS: (u + 1)·xσ(αx)
                out.append(Trait(name, by_path.get(call.path)))
    return out


_SCALING = {"mul", "__mul__", "__rmul__", "div", "__truediv__", "neg", "__neg__", "to", "float", "type_as"}


_SUMS = {"add", "__add__", "__radd__"}


_ELEMENTWISE = _SCALING | _SUMS | {"sub", "__sub__", "__rsub__", "pow", "__pow__", "square"}


_ROUTING = _ELEMENTWISE | LAYOUT | {"masked_fill", "where"}         # a router's scores, laid out, masked


def _squares(ev: OpEvent) -> bool:
    """x ** 2, x.square(), x * x."""
    name, args = short_name(ev.name), ev.args
    if name in ("pow", "__pow__"):
        return len(args) > 1 and not _refs(args[1:2]) and args[1] == 2
    if name in ("mul", "__mul__"):
        refs = _refs(args)
        return len(refs) == 2 and refs[0].value is refs[1].value
    return name == "square"


def _made_from(v, steps: int = 6, names: set = _ELEMENTWISE) -> set[int]:
    """ids of v and of every tensor it was computed from through elementwise arithmetic (or the ops of `names`),
    `steps` ops back."""
    seen, frontier = {id(v)}, [v]
    for _ in range(steps):
        after = []
        for u in frontier:
            ev = u.made_by
            if ev is None or short_name(ev.name) not in names:
                continue
            for r in _refs((ev.args, ev.kwargs)):
                if id(r.value) not in seen:
                    seen.add(id(r.value))
                    after.append(r.value)
        frontier = after
    return seen


def _gelu_by_tanh(ev: OpEvent, sums, products) -> bool:
    """x · (1 + tanh(f(x))) / 2, f computed from x: GELU's tanh approximation written out (GPT-J's and Phi's
    gelu_new, BLOOM's), told by its form: one plus the tanh, times the tensor the tanh's argument came from."""
    outs = {id(v) for v in _outs(ev)}
    shifted = {id(o) for refs, made in sums if len(refs) == 1 and id(refs[0]) in outs for o in made}
    base = set().union(*(_made_from(r.value) for r in _refs(ev.args)))
    for ops in products:
        others = [v for v in ops if id(v) not in shifted]
        if len(others) < len(ops) and others and all(_scaled_from([v]) & base for v in others):
            return True
    return False


def _scaled_from(values, steps: int = 3) -> set[int]:
    """ids of the values and of the tensors they are a multiple or a cast of (x in σ(1.702·x)); not of what a
    layer computed them from (a learned gate σ(W·h) weighs h by another stream)."""
    scaled = through(_SCALING, single=True)
    return {id(u) for v in values for u in chain(v, scaled, steps)}


def _gated(multiplied: list, outs: set[int], own: set[int]) -> bool:
    """Whether x·σ(βx), the product that takes the sigmoid's output `outs`, is then multiplied by another stream:
    one not made from the activation's own input, nor from the product itself."""
    swish = {id(v) for args, made in multiplied if any(id(a) in outs for a in args) for v in made}
    others = [v for args, _ in multiplied if any(id(a) in swish for a in args) for v in args if id(v) not in swish]
    return any(id(v) not in own and not _made_after(v, swish | outs) for v in others)


def _fixed(v, depth: int = 8) -> bool:
    """Whether v is made from weights and buffers alone, a few ops back: a mask kept as a buffer, `1 - mask` (a
    coupling layer's), weighs every input alike and is no stream to gate by."""
    for u, steps in upstream([v], depth):
        if (u.made_by is None and u.kind not in ("param", "buffer")) or (u.made_by is not None and steps == depth):
            return False
    return True


def _made_after(v, outs: set[int], depth: int = 8) -> bool:
    """Whether v was computed from one of the values `outs` names, a few ops back: a squeeze-and-excitation scale
    made from the activation it then weighs is no second stream."""
    return any(id(u) in outs for u, _ in upstream([v], depth))


def _outs(ev: OpEvent) -> list:
    return [r.value for r in _refs(ev.out)]
