"""Titles and summaries from what was recognized: a component whose verified equations are one attention reads
"Self-attention", one routing to experts "Mixture of experts", and its summary says what the idioms say, with the
numbers the code computes with ("Grouped-query attention: 32 query heads share 8 key/value heads of 128 features,
with rotary positions (θ = 500,000) and a causal mask."), in the page's language.

An author's own name and summary (atlas_name, atlas_summary) are kept, and so is a torch.nn leaf's summary from
the registry; a library's docstring sentence, replaced, stays on the page as the library's words (`quote`).
"""

from __future__ import annotations

from dataclasses import replace

from atlas.document import ModelDoc
from atlas.i18n import msg, msgn
from atlas.load.hooks import hooks_of

FEED_FORWARD = ("mlp", "swiglu", "geglu", "reglu")
MAJOR = ("attention", "moe") + FEED_FORWARD


ACTIVATIONS = {
    "gelu": lambda i: msg("The GELU activation in its tanh approximation, applied to each value.")
    if i.get("approximate") == "tanh" else msg("The exact GELU activation, x Φ(x), applied to each value."),
    "silu": lambda i: msg("The SiLU (swish) activation, x σ(x), applied to each value."),
    "quick_gelu": lambda i: msg("The sigmoid approximation of GELU, x σ(1.702 x), applied to each value."),
    "relu": lambda i: msg("The rectified linear unit, max(x, 0), applied to each value."),
    "relu2": lambda i: msg("The squared rectified linear unit, max(x, 0)², applied to each value."),
    "mish": lambda i: msg("The Mish activation, x tanh(softplus(x)), applied to each value."),
}


ACTIVATION_NAMES = {"gelu": "GELU", "gelu_tanh": "GELU (tanh)", "silu": "SiLU", "quick_gelu": "QuickGELU",
                    "relu": "ReLU", "relu2": "ReLU²", "mish": "Mish"}


def with_roles(model, doc: ModelDoc) -> ModelDoc:
    out, titled = [], set()
    for comp in doc.components:                     # parents first: the outermost of a nest takes the title
        eq = comp.equations
        paper = eq is not None and eq.paper is not None and eq.paper.verification is not None and \
            eq.paper.verification.verified
        if not paper or not eq.idioms or comp.parent is None:
            out.append(comp)
            continue
        hooks = hooks_of(model.get_submodule(comp.path))
        kinds = {i.kind for i in eq.idioms}
        role = _role(kinds)
        changes = {}
        text = _summary(eq.idioms, role, kinds, comp.parameters_per_instance > 0)
        if text is not None and not hooks.summary and not comp.cls.startswith("torch."):
            changes.update(summary=text, quote=comp.summary or None)
        title = _title(eq.idioms, role)
        inside = any(comp.id.startswith(t + ".") for t in titled)
        if title is not None and not hooks.name and not inside and not _says(comp.name, role):
            titled.add(comp.id)
            changes.update(name=title, name_is_prose=True)
        out.append(replace(comp, **changes) if changes else comp)
    renamed = {c.id: (old.name, c.name) for c, old in zip(out, doc.components) if c.name != old.name}
    return replace(doc, components=tuple(_sections_renamed(c, out, renamed) for c in out))


def _sections_renamed(comp, comps, renamed: dict):
    """An ancestor's sections titled with a renamed child's old name, where no other part below it has that name."""
    eq = comp.equations
    if eq is None or not renamed:
        return comp
    below = [c for c in comps if c.id.startswith(comp.id + ".") or (comp.id == "" and c.id)]
    names = {}
    for cid, (old, new) in renamed.items():
        if any(c.id == cid for c in below) and sum(1 for c in below if c.name == old) == 0 and \
                sum(1 for c in below if c.id != cid and renamed.get(c.id, (None,))[0] == old) == 0:
            names[old] = new
    if not names:
        return comp
    retitle = lambda steps: tuple(replace(st, section=names.get(st.section, st.section)) for st in steps)  # noqa: E731
    paper = eq.paper if eq.paper is None else replace(eq.paper, steps=retitle(eq.paper.steps))
    return replace(comp, equations=replace(eq, steps=retitle(eq.steps), paper=paper))


def _role(kinds: set) -> str | None:
    """The one major construct a component computes, where it computes one and holds no residual around it."""
    major = {("mlp" if k in FEED_FORWARD else k) for k in kinds if k in MAJOR}
    if "residual" in kinds or len(major) != 1:
        return None
    return major.pop()


SAID = {"attention": ("attention",), "moe": ("expert", "moe"), "mlp": ("mlp", "feed", "ffn", "ffw")}


def _says(name: str, role: str) -> bool:
    """Whether a name already says the role: "Cross attention" for an attention, "MLP" for a feed-forward network."""
    return any(w in name.lower() for w in SAID[role])


def _title(idioms, role):
    if role == "attention":
        attn = next(i for i in idioms if i.kind == "attention")
        return msg("Cross-attention") if attn.get("cross") else msg("Self-attention")
    if role == "moe":
        return msg("Mixture of experts")
    return None


def _number(value):
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _summary(idioms, role, kinds, learned: bool):
    by_kind = {i.kind: i for i in idioms}
    if role == "attention":
        return _attention(by_kind)
    if role == "moe":
        moe = by_kind["moe"]
        first = msg("Mixture of experts: each token goes to the %(k)s of %(n)s expert feed-forward networks its router "
                    "ranks highest, and their outputs are summed, weighted by the router's scores",
                    k=moe.get("top_k"), n=moe.get("experts"))
        how = {"softmax": msg("a softmax over the experts"), "sigmoid": msg("a sigmoid of each expert's logit")}
        if moe.get("router") not in how:
            return msg("%(what)s.", what=first)
        if moe.get("renormalized"):
            return msg("%(what)s (%(router)s, the chosen scores divided by their sum).", what=first,
                       router=how[moe.get("router")])
        return msg("%(what)s (%(router)s).", what=first, router=how[moe.get("router")])
    if role == "mlp":
        ffn = next(i for i in idioms if i.kind in FEED_FORWARD)
        hidden = ffn.get("hidden")
        if ffn.kind in ("swiglu", "geglu", "reglu"):
            name = {"swiglu": "SwiGLU", "geglu": "GeGLU", "reglu": "ReGLU"}[ffn.kind]
            return msg("A %(name)s feed-forward network: two projections to %(hidden)s features, one gated by the "
                       "other's activation, and a projection back.", name=name, hidden=hidden)
        act = ACTIVATION_NAMES.get(ffn.get("activation"))
        if act is None:
            return None
        return msg("A feed-forward network: a projection to %(hidden)s features, the %(act)s activation, and a "
                   "projection back.", hidden=hidden, act=act)
    residual = [i for i in idioms if i.kind == "residual"]
    if residual and len({i.get("placement") for i in residual}) == 1 and \
            {i.get("branch") for i in residual} <= {"attn", "mlp"}:
        return _block(residual)
    only = next(iter(idioms)) if len(kinds) == 1 else None
    if only is not None and only.kind in ACTIVATIONS and not learned:
        return ACTIVATIONS[only.kind](only)
    if only is not None and only.kind in ("rmsnorm", "layernorm") and isinstance(only.get("eps"), float):
        return _norm(only)
    if kinds == {"rope"} and not learned:      # the angles alone: a table of buffers, no weights
        theta = by_kind["rope"].get("theta")
        return None if theta is None else msg("The angles of the rotary position embedding, θ = %(theta)s: the cosine "
                                              "and sine of each position times each inverse frequency.",
                                              theta=_number(theta))
    return None


def _attention(by_kind):
    attn = by_kind["attention"]
    heads, kv, dim = attn.get("heads"), attn.get("kv_heads"), attn.get("head_dim")
    if not isinstance(heads, int) or not isinstance(dim, int):
        return None
    if isinstance(kv, int) and kv == 1 < heads:
        first = msg("Multi-query attention: %(heads)s query heads share one key/value head of %(dim)s features",
                    heads=heads, dim=dim)
    elif isinstance(kv, int) and 1 < kv < heads:
        first = msg("Grouped-query attention: %(heads)s query heads share %(kv)s key/value heads of %(dim)s "
                    "features", heads=heads, kv=kv, dim=dim)
    else:
        first = msgn("Attention with %(n)s head of %(dim)s features", "Multi-head attention: %(n)s heads of "
                     "%(dim)s features", heads, dim=dim)
    parts = []
    if attn.get("cross"):
        parts.append(msg("queries from one input, keys and values from another"))
    rope = by_kind.get("rope")
    if rope is not None and rope.get("theta") is not None:
        parts.append(msg("rotary positions (θ = %(theta)s)", theta=_number(rope.get("theta"))))
    if attn.get("causal"):
        parts.append(msg("a causal mask"))
    elif attn.get("mask"):
        parts.append(msg("a mask given with the input"))
    if attn.get("softcap") is not None:
        parts.append(msg("logits capped at %(cap)s", cap=_number(attn.get("softcap"))))
    if not parts:
        return msg("%(what)s.", what=first)
    return msg("%(what)s, with %(details)s.", what=first, details=parts)


def _block(residual):
    placement = residual[0].get("placement")
    branches = [msg("attention") if i.get("branch") == "attn" else msg("a feed-forward network") for i in residual]
    n = len(branches)
    if placement == "pre":
        return msgn("A pre-norm residual connection around %(branches)s: it runs on the normalized input and its "
                    "output is added back to the input.", "A pre-norm residual block: %(branches)s, each on the "
                    "normalized input and added back to it.", n, branches=branches)
    if placement == "post":
        return msgn("A post-norm residual connection around %(branches)s: its output is added to its input and the "
                    "sum normalized.", "A post-norm residual block: %(branches)s, each added back to its input and "
                    "the sum normalized.", n, branches=branches)
    if placement == "sandwich":
        return msgn("A residual connection normalized on both sides around %(branches)s: it runs on the normalized "
                    "input, and its output is normalized again before it is added back.", "A residual block "
                    "normalized on both sides: %(branches)s, each on the normalized input, its output normalized "
                    "again before it is added back.", n, branches=branches)
    return None


def _norm(idiom):
    eps = _power_of_ten(idiom.get("eps"))
    if idiom.kind == "layernorm":
        return msg("Center and scale each position's features (ε = %(eps)s), then apply a learned gain and bias.",
                   eps=eps)
    if idiom.get("floor"):
        return msg("Divide each position's features by their root mean square, floored at ε = %(eps)s, then apply a "
                   "learned gain.", eps=eps)
    return msg("Divide each position's features by their root mean square (ε = %(eps)s added to the mean square), "
               "then apply a learned gain.", eps=eps)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power_of_ten(x: float) -> str:
    """1e-05 -> "10⁻⁵"; any other number as Python writes it."""
    import math
    if x > 0 and float(f"1e{round(math.log10(x))}") == x:
        return "10" + str(round(math.log10(x))).translate(_SUPERSCRIPT)
    return repr(x)
