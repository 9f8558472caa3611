"""`atlas describe` for a terminal: one line per component, in the manner of torchinfo, with named dims."""

from __future__ import annotations

import re

from atlas.document import ModelDoc
from atlas.document.input_specs import DATA_DECIDED
from atlas.extract.trace.call_shapes import decided_by_data
from atlas.render.filters import at_reference, compact_symbol, si

WIDTHS = (38, 26, 5, 15, 10, 9)


def _dims(tensor) -> str:
    return "[" + ", ".join(compact_symbol(d.symbol) if d.symbolic else str(d.value) for d in tensor.dims) + "]"


def _output(comp, doc: ModelDoc) -> str:
    s = comp.shapes
    if s is None or s.status.value != "derived":
        return "—" if s is None else s.status.value
    outs = [_dims(t) for t in s.outputs]
    own = " (own call: not called by forward)" if s.method == "own" else ""
    return (" ".join(outs) if outs else "—") + own


def _tied(comp) -> str:
    """Parameters a component holds that the model counts at another place (a tied LM head, or a head that holds
    one): they are in the model's total once, there, so a parent's rows may add up to more than it."""
    if not comp.counted_elsewhere:
        return ""
    at = ", ".join(e.counted_at for e in comp.counted_elsewhere)
    count = sum(e.count for e in comp.counted_elsewhere)
    return f" (tied: counted at {at})" if count == comp.parameters_per_instance else \
        f" ({count:,} of them tied: counted at {at})"


def _flops(comp, doc: ModelDoc) -> str:
    """One instance's forward FLOPs at the sizes the pages count at ("1.21 G"); "—" where none is counted."""
    if comp.cost is None or doc.cost_summary is None:
        return "—"
    value = at_reference(comp.cost.flops, doc.cost_summary.reference)
    return si(value, "").strip() if value else "0"


def _check(comp) -> str:
    """The equations' state: "✓" checked against forward(), "✗" disagreeing with it, "derived" (not checked: no
    --verify), "not run" (a check that could not run), "—" none derived."""
    e = comp.equations
    if e is None or e.status.value == "not derived":
        return "—"
    v = e.verification
    if v is None:
        return e.status.value
    return "✓" if v.verified else "✗" if v.mismatch else "not run"


def _cut(text: str, width: int) -> str:
    return text if len(text) < width else text[:width - 2] + "…"


def table(doc: ModelDoc) -> str:
    w = WIDTHS
    head = (f"{'Component':{w[0]}}{'Class':{w[1]}}{'×':>{w[2]}} {'Parameters':>{w[3]}} {'FLOPs':>{w[4]}}  "
            f"{'Equations':{w[5]}} Output")
    lines = [head, "─" * (len(head) + 24)]
    depth: dict[str, int] = {}
    for comp in doc.components:         # by the tree, not the dots: model.layers.0 sits beside model.norm
        depth[comp.id] = depth[comp.parent] + 1 if comp.id and comp.parent in depth else 0
        name = _cut("  " * depth[comp.id] + comp.name, w[0])
        cls = _cut(comp.cls.rsplit(".", 1)[-1], w[1])
        lines.append(f"{name:{w[0]}}{cls:{w[1]}}{comp.instances:>{w[2]}} {comp.parameters_per_instance:>{w[3]},} "
                     f"{_flops(comp, doc):>{w[4]}}  {_check(comp):{w[5]}} {_output(comp, doc)}{_tied(comp)}")
    t = doc.totals
    lines.append("─" * (len(head) + 24))
    symbols = ", ".join(f"{s} {n}" for s, n in doc.dims.symbols if any(s in str(x) for x in doc.inputs))
    lines.append(f"parameters {t.parameters:,} (trained {t.trained:,}, frozen {t.frozen:,}); buffers {t.buffers:,}")
    with_shapes = sum(1 for c in doc.components if c.shapes and c.shapes.status.value == "derived")
    derived = sum(1 for c in doc.components if c.equations and c.equations.status.value != "not derived")
    verified = sum(1 for c in doc.components if c.equations and c.equations.verification
                   and c.equations.verification.verified)
    checked = any(c.equations and c.equations.verification is not None for c in doc.components)
    hint = " (run with --verify to check them)" if derived else ""       # nothing derived: nothing to check
    lines.append(f"components {len(doc.components)}: shapes for {with_shapes}, equations for {derived}"
                 + (f", verified for {verified}" if checked else hint))
    if doc.cost_summary is not None and any(c.cost is not None for c in doc.components):
        at = ", ".join(f"{k} = {v}" for k, v in doc.cost_summary.reference)
        model = (f"the model's: {si(at_reference(doc.cost.flops, doc.cost_summary.reference), '').strip()}"
                 if doc.cost is not None else "the model's: not counted (sizes the data decides)")
        lines.append(f"FLOPs of one instance's forward{' at ' + at if at else ''}; {model}")      # sizes all given
    if doc.inputs:
        lines.append(f"inputs {' '.join(doc.inputs)}" + (f"  ({symbols})" if symbols else ""))
    decided = sorted({u for c in doc.components if c.shapes for t in (*c.shapes.inputs, *c.shapes.outputs)
                      for d in t.dims for u in re.findall(r"\b\w+\b", d.symbol or "") if decided_by_data(u)},
                     key=lambda s: (len(s), s))
    if decided:
        lines.append(f"{', '.join(decided)}: {DATA_DECIDED}, as the record had it (a count of routed tokens, of a "
                     "mask's true values)")
    return "\n".join(lines)
