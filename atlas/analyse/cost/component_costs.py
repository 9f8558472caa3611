"""Cost of every component, from the recorded forward: FLOPs (dense and causal), activation bytes, the operations
not counted; and for the model, the KV-cache bytes per token and the sizes pages evaluate the formulas at."""

from __future__ import annotations

import os
from dataclasses import replace

import sympy
import torch
from torch import nn

from atlas.analyse.cost.op_costs import Costs, activation_bytes
from atlas.analyse.equations.recorded import unbacked
from atlas.document import Cost, CostSummary, ModelDoc, ShapeStatus
from atlas.extract.discover.reference_sizes import reference_sizes
from atlas.extract.trace import branch_sizes
from atlas.extract.trace.call_shapes import first_call_of, record_of
from atlas.extract.trace.structures import refs, upstream
from atlas.i18n import msg, msgn


def pinned_sizes(trace) -> dict[str, int]:
    """The sizes the record holds only at: those the code needed as exact numbers (a Python loop over positions),
    or every size of a record made at concrete sizes."""
    if not trace.symbolic:
        return {s: int(v) for s, v in trace.hints.items()}
    return {s: int(trace.hints[s]) for s in trace.specialized if s in trace.hints}


def with_costs(model: nn.Module, doc: ModelDoc, trace, fixed: dict | None = None) -> ModelDoc:
    """Costs are counted where the record holds: at the sizes it was pinned to, with those sizes put in (a count
    read off a record made at T = 17 is no formula in T). `fixed`: the sizes --dim gave (T=16); the record was made
    at them, so the pages evaluate there too."""
    if trace is None:
        return doc
    pinned = pinned_sizes(trace)
    at_pinned = {trace.symbols[s]: v for s, v in pinned.items() if s in trace.symbols}
    multiples = branch_sizes.multiples(getattr(trace, "conditions", ()))     # the branch the record took

    def held(expr):
        expr = branch_sizes.on_branch(expr, multiples)
        return sympy.expand(expr.subs(at_pinned)) if at_pinned and isinstance(expr, sympy.Basic) else expr
    comps = {path: c for c in doc.components for path in c.module_paths}

    def first_for(path: str):
        comp = comps.get(path)
        return first_call_of(trace, model, comp.path) if comp is not None else None

    costs, totals = Costs(first_for), {}
    calls_of = _calls_by_path(trace.root)
    out = []
    for comp in doc.components:
        if comp.path in trace.extra:    # recorded on inputs made up for it: no part of a forward
            from atlas.extract.method_uses import weights_read_by
            reader = weights_read_by(trace, comp.path)
            out.append(replace(comp, cost_reason=msg(
                "Counted in the cost of %(parent)s, whose own code computes with this part's weights; the model's "
                "forward() does not call the part itself.", parent=f"`{reader or '(model)'}`") if reader is not None
                else msg("Not counted: the model's forward() does not call it; its shapes come from example inputs "
                         "of its own.")))
            continue
        call = first_call_of(trace, model, comp.path)
        if call is None or comp.shapes is None or comp.shapes.status is not ShapeStatus.DERIVED:
            out.append(comp)            # no shapes, no sizes to state a count at (a forward that stopped before)
            continue
        flops, causal, uncounted = costs.of(call)
        saved = record_of(trace, comp.path).saved
        # None: the forward ran without autograd; else bytes, and those bytes as floating elements and the rest
        act, elements, own_bytes = (None,) * 3 if saved is None else \
            (held(activation_bytes(call, saved, first_for, totals, part)) for part in ("bytes", "elements", "fixed"))
        flops, causal = held(flops), held(causal)
        depends = _data_dependent(flops, causal, *(() if act is None else (act,)))
        if depends:                                 # tokens per expert: no figure holds at the reference sizes
            out.append(replace(comp, cost_reason=msg(
                "Not counted: one forward's cost depends on sizes the data decides as the forward runs, not on the "
                "input sizes (how many tokens a router sends each expert, how many positions a mask keeps): here, "
                "the sizes returned by %(origins)s.", origins=tuple(_origins(trace, depends)))))
            continue
        # called again (a shared encoder, a cell stepped over time): every call, each instance alike (instances
        # at sizes of their own are components of their own); repeated list entries are recorded once, so the
        # instance the page describes is the one counted
        calls, every = calls_of.get(comp.path, ()), None
        if len(calls) > 1:
            every = held(comp.instances * sympy.Add(*(costs.of(c)[0] for c in calls)))
        out.append(replace(comp, cost=Cost(str(flops), None if causal is None else str(causal),
                                           None if act is None else str(act),
                                           tuple(sorted(uncounted)), _attention_kernel(call),
                                           comp.instances * max(len(calls), 1), None if every is None else str(every),
                                           *((None, None) if act is None else (str(elements), str(own_bytes))))))
    doc = replace(doc, components=tuple(out))
    root = doc.root.cost
    symbols = sorted({str(s) for s in (trace.symbols or {}).values()} | set(fixed or ())
                     | set(pinned))         # a record at concrete sizes (probes) names none: its sizes are these
    order = [s for s, _ in doc.dims.symbols]
    symbols.sort(key=lambda s: order.index(s) if s in order else len(order))
    kv, kv_elements = held(cache_per_token(trace, doc)), held(cache_per_token(trace, doc, 1))
    upper = dict(getattr(trace, "upper", {}))
    reference = reference_sizes(model, symbols, {**(fixed or {}), **pinned},
                                {s: limit for s, (limit, _) in upper.items()})
    unbounded = dict(reference_sizes(model, symbols, {**(fixed or {}), **pinned}))
    # a size held below the usual one by the record's own limit (MPT's max(0, 256 - T) holds for T < 256): said
    capped = tuple((s, v, upper[s][1] or "?") for s, v in reference
                   if s in upper and v < unbounded[s] and upper[s][1] != "--dim")     # --dim's bound is the user's
    per_token = int(kv) if kv != 0 and kv.is_Integer else None
    size = torch.empty(0, dtype=getattr(torch, trace.dtype)).element_size()
    # in elements only where the cache is all in the model's dtype: a state with integers in it keeps their bytes
    elements = int(kv_elements) if per_token is not None and kv_elements.is_Integer \
        and int(kv_elements) * size == per_token else None
    summary = CostSummary(reference, per_token, _attention_kernel(trace.root),
                          tuple((s, v) for s, v in pinned.items() if s in symbols),
                          _cache_not_counted(trace, doc, pinned) if per_token is None else None, capped,
                          elements if elements else None, trace.dtype)
    return replace(doc, cost=root, cost_summary=summary)


_DATA_DECIDES = ("Not counted: one forward's cost depends on sizes the data decides as the forward runs, not on the "
                 "input sizes (how many tokens a router sends each expert, how many positions a mask keeps): here, "
                 "the sizes returned by %(origins)s.")


def uncounted_by_data(doc: ModelDoc):
    """One sentence for stderr where the cost of components is not counted because the data decides a size (a
    boolean mask's rows, the tokens a router sends each expert), else None: the pages and the JSON say it on each
    component; the command line says it once per model."""
    comps = [c for c in doc.components if getattr(c.cost_reason, "msgid", None) == _DATA_DECIDES]
    if not comps:
        return None
    origins = tuple(dict.fromkeys(o for c in comps for o in dict(c.cost_reason.args)["origins"]))
    return msgn("the cost of %(n)s component is not counted, %(first)s: it depends on a size the data decided, "
                "returned by %(origins)s",
                "the cost of %(n)s components is not counted, %(first)s first: it depends on sizes the data "
                "decided, returned by %(origins)s", len(comps), first=comps[0].id or "(model)", origins=origins)


def _calls_by_path(root) -> dict[str, list]:
    """module path -> its calls that ran in the forward, in order (a repeated entry taken from its first: its own)."""
    out: dict[str, list] = {}
    for call in (root.calls() if root is not None else ()):
        if call.failed is None and call.out is not None:
            out.setdefault(call.path, []).append(call)
    return out


def _data_dependent(*exprs) -> list[str]:
    """The numbers the data decides (u0: the tokens routed to an expert) a cost is written in, which no input size
    fixes."""
    return sorted({str(s) for e in exprs for s in unbacked(e)}, key=lambda s: int(s[1:]))


def _origins(trace, names: list[str]) -> list[str]:
    """The calls that made the numbers the data decides, as a reader finds them in the code: "Tensor.nonzero
    (moe.py:90)", not the run's own names for them (u0). The first value whose size holds a number is the one the
    call that decided it returned."""
    found: dict[str, str] = {}
    for v in trace.values:
        if v.made_by is None:
            continue
        held = {str(x) for size in (v.shape or ()) for x in getattr(size, "free_symbols", ())}
        held |= {str(x) for x in getattr(v.expr, "free_symbols", ())}
        for name in held.intersection(names).difference(found):
            site = v.made_by.site
            found[name] = v.made_by.name + (f" ({os.path.basename(site.file)}:{site.line})" if site else "")
    return list(dict.fromkeys(found.get(name, name) for name in names))


def _cache_not_counted(trace, doc: ModelDoc, pinned: dict):
    """Why a forward that returns a state has no per-token figure: the code fixed its length (DeepSeek-V2's rotary
    table through torch.polar pins T), so the state's size is a number, not a formula in T."""
    if "T" not in pinned:
        return None
    at = {trace.symbols[s]: v for s, v in pinned.items() if s in (trace.symbols or {})}
    total = sympy.sympify(_one_sequence(returned_state_bytes(trace, doc), trace)).subs(at)
    if not getattr(total, "is_Integer", False) or total == 0:
        return None
    return msg("not counted per token: the code fixed T = %(t)s, and the state the forward returns holds %(bytes)s "
               "bytes for one sequence at that length", t=pinned["T"], bytes=int(total))


def returned_state_bytes(trace, doc: ModelDoc, part: int = 0):
    """The bytes of the state the forward hands back (a KV cache), each module's part times its component's
    instances (a skipped list entry wrote nothing; another entry that ran is counted by its first's); part 1: its
    floating elements instead of its bytes."""
    state = getattr(trace, "returned_state", None) or {}
    owner = {path: c for c in doc.components for path in c.module_paths}
    total = sympy.Integer(0)
    for path, size in state.items():
        while path and path not in owner:
            path = path.rpartition(".")[0]
        comp = owner.get(path)
        if comp is not None and path != comp.path:
            continue
        total += sympy.expand(size[part]) * (comp.instances if comp is not None else 1)
    return total


def cache_per_token(trace, doc: ModelDoc, part: int = 0):
    """The bytes the state the forward hands back (a KV cache) grows by per position, for one sequence: its
    derivative in T at B = 1 (divided by B where the record pinned it). 0 where the forward hands back none (an
    encoder, a model with no cache in its code) or where it does not grow with T (a recurrent state). part 1: in
    floating elements."""
    t = trace.symbols.get("T")
    if t is None:
        return sympy.Integer(0)
    return _one_sequence(sympy.diff(returned_state_bytes(trace, doc, part), t), trace)


def _one_sequence(total, trace):
    """Bytes for the whole batch as one sequence's: B = 1, or divided by the batch the record was pinned at."""
    if "B" in (trace.specialized or ()) and trace.hints.get("B"):
        return total / trace.hints["B"]         # a record at the batch the code needed: all its sequences' cache
    b = trace.symbols.get("B")
    return total.subs(b, 1) if b is not None else total


def _attention_kernel(root) -> str | None:
    """How attention ran in a call and the calls inside it: a fused kernel (keeps a log-sum-exp, not the T×T
    weights) or written out."""
    fused = written = False
    for call in root.calls() if root is not None else ():
        for ev in call.events:
            if getattr(ev, "name", "") == "scaled_dot_product_attention":
                fused = True
            elif getattr(ev, "name", "") in ("softmax", "Tensor.softmax") and ev.args and _scores(ev.args[0]):
                written = True
    return "fused" if fused and not written else "explicit" if written and not fused else "both" if fused else None


_PRODUCTS = {"matmul", "Tensor.matmul", "Tensor.__matmul__", "bmm", "Tensor.bmm", "einsum", "baddbmm",
             "Tensor.baddbmm"}


def _scores(arg, depth: int = 6) -> bool:
    """Whether a softmax weighs attention scores: a product of two computed values (q kᵀ), scaled, capped or
    masked on the way; not a router's or a classifier's logits, a product with a weight matrix."""
    # through a scale, a cap, a mask added on either side; not through a product
    for value, _ in upstream([getattr(arg, "value", None)], depth - 1, lambda ev: ev.name not in _PRODUCTS):
        ev = value.made_by
        if ev is not None and ev.name in _PRODUCTS:
            computed = [r.value for r in refs((ev.args, ev.kwargs)) if r.value.kind not in ("param", "buffer")]
            if len([v for v in computed if v.shape]) >= 2:
                return True
    return False
