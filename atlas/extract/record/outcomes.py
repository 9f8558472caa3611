"""What a recording gives: shapes on every component, the record the equations read, and the notes that say how
it was made, for the model page and for stderr.

Three kinds of outcome, as the plan (atlas.extract.record.plan) ends:
- a symbolic record: every shape read off it;
- a symbolic record the code pinned at some sizes (a Python loop over positions): shapes from concrete probes at
  several sizes, the equations from the record, checked at the sizes it was made at;
- no symbolic record: shapes from concrete probes, the equations from one concrete record on the CPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from torch import nn

from atlas.document import DimNames, ModelDoc, Shapes, ShapeStatus, expressions
from atlas.document import input_specs as inputs_mod
from atlas.extract.record.attempts import HINTS, Attempt, Attempts, Choice, fixed, input_text
from atlas.extract.record.set_apart import apart, called_otherwise
from atlas.extract.trace import branch_sizes, runs
from atlas.extract.trace import call_shapes as trace_shapes
from atlas.i18n import msg
from atlas.load.hooks import hooks_of


@dataclass
class Outcome:
    doc: ModelDoc
    trace: object                   # atlas.extract.trace.structures.Trace, or None
    notes: list = field(default_factory=list)      # Text sentences: how the inputs were found, retries
    failure: object = None          # a Text: why the model-level forward did not run, if it did not
    apart: dict = field(default_factory=dict)   # module path -> (its kind, why), for list entries set apart


def without_inputs(r: Attempts) -> Outcome:
    """No example inputs: every component says why it has no shapes."""
    shapes = Shapes(ShapeStatus.NOT_DERIVED, reason=r.reason)
    doc = replace(r.doc, components=tuple(replace(c, shapes=shapes) for c in r.doc.components),
                  dims=DimNames(inputs_mod.used(r.vocab, [], r.hooks.dims), r.vocab.fixed))
    return Outcome(doc, None, [], r.reason)


def symbolic(r: Attempts, tried: Attempt, trace, budget_bytes: int) -> Outcome:
    """A symbolic record that worked: its shapes; where the code pinned sizes, the probes' shapes beside it."""
    notes = _inferred(tried, ran=True) + tried.notes + _branches_taken(trace) + _tables_overrun(trace)
    doc, model = r.doc, r.model
    dim_names = DimNames(inputs_mod.used(r.vocab, tried.specs, r.hooks.dims), r.vocab.fixed)
    texts = tuple(tried.choice.texts)
    if trace.specialized:
        notes.append(msg("the code needs exact values of %(symbols)s, so the shapes come from forwards at several "
                         "sizes and the equations are written, and checked, at %(sizes)s",
                         symbols=", ".join(trace.specialized_at) or ", ".join(trace.specialized),
                         sizes=", ".join(f"{s} = {trace.hints[s]}" for s in trace.specialized if s in trace.hints)))
        doc = replace(doc, components=_leads(model, doc.components, trace))
        from atlas.extract.probes import probe_shapes
        shaped = probe_shapes.derive(model, doc, _probed(r, texts), budget_bytes,
                                     r.limits(tried.disc, tried.symbols, trace.hints))
        shaped = replace(shaped, components=_own_where_not_called(r, shaped.components, trace), dims=dim_names)
        notes.extend(_cpu_probes(shaped))
        return Outcome(replace(shaped, inputs=texts, input_notes=tuple(notes)), trace, notes,
                       _root_failure(shaped, None), apart(model, trace, r.repeats, doc))
    comps, on_branch = [], branch_sizes.multiples(trace.conditions)
    for comp in _leads(model, doc.components, trace):
        call = trace_shapes.first_call_of(trace, model, comp.path)
        if call is not None:
            shapes = trace_shapes.of_call(call, r.vocab, "fake", multiples=on_branch)
        else:
            shapes = _own_record(r, model.get_submodule(comp.path), comp, trace)
        comps.append(replace(comp, shapes=shapes))
    doc = replace(doc, components=tuple(comps), dims=dim_names, inputs=texts, input_notes=tuple(notes))
    return Outcome(doc, trace, notes, None, apart(model, trace, r.repeats, doc))


def on_the_cpu(r: Attempts, tried: Attempt, budget_bytes: int, most: int = 3) -> Outcome:
    """No symbolic run worked: a concrete one on the CPU, the choices in their order, the preferred first, and the
    first that runs kept (Blip2's image at the 32 x 32 its config fixes, where the choice tried last is any H x W,
    which at 48 x 48 overruns a table of 17 positions). Where none runs, the choice tried last, as its symbolic run
    had it. Shapes come from concrete probes; the equations from that record."""
    from atlas.extract.probes.probe_runs import concrete_record
    from atlas.extract.probes.probe_sizes import probe_sizes
    trace, last = tried.trace, tried.choice
    names = [inputs_mod.parse_input(x).name for x in last.texts]
    before = r.choices[:r.choices.index(last)] if last in r.choices else r.choices  # tried, and failed, before it
    order = [c for c in before if [inputs_mod.parse_input(x).name for x in c.texts] == names]

    def run(choice: Choice, hints):
        specs, symbols = r.resolved(choice.texts, r.fixed)
        limits = r.limits(tried.disc, symbols, hints)
        probe = probe_sizes(symbols, limits)[0] if symbols else {}
        return choice, specs, limits, probe, concrete_record(r.model, specs, probe, budget_bytes)

    found = next((got for got in map(lambda c: run(c, c.hints or None), order[:most])
                  if got[4] is not None and got[4].root is not None and got[4].error is None), None)
    choice, specs, limits, probe, concrete = found or run(last, trace.hints if trace is not None else None)
    notes = _inferred(replace(tried, choice=choice), ran=False) + tried.notes
    doc, ran = r.doc, concrete is not None and concrete.root is not None and concrete.error is None
    if ran:
        doc = replace(doc, components=_leads(r.model, doc.components, concrete))
    from atlas.extract.probes import probe_shapes
    texts = tuple(choice.texts)
    shaped = probe_shapes.derive(r.model, doc, _probed(r, texts), budget_bytes, limits)
    if ran:
        shaped = replace(shaped, components=_own_where_not_called(r, shaped.components, concrete))
    why = trace.error if trace is not None else None
    failure = _root_failure(shaped, tried.first_error or why)
    if failure is None and probe:
        notes.append(msg("the forward with symbolic sizes failed (%(error)s), so the shapes come from forwards "
                         "at several sizes and the equations are written, and checked, at %(sizes)s",
                         error=tried.first_error or why or "?",
                         sizes=", ".join(f"{s} = {v}" for s, v in probe.items())))
    notes.extend(_cpu_probes(shaped))
    set_apart = called_otherwise(r.model, concrete, doc) if concrete is not None and concrete.root is not None else {}
    dim_names = DimNames(inputs_mod.used(r.vocab, specs, r.hooks.dims), r.vocab.fixed)
    return Outcome(replace(shaped, inputs=texts, input_notes=tuple(notes), dims=dim_names), concrete, notes,
                   failure, set_apart)


def _inferred(tried: Attempt, ran: bool) -> list:
    """Where each discovered input came from, and, where the run kept another choice than the first, why."""
    if tried.disc is None:
        return []
    notes = []
    firsts = [f.candidates[0] for f in tried.disc.inputs]
    for (text, because), first in zip(tried.choice.sources, firsts):
        notes.append(msg("%(input)s, inferred: %(because)s", input=text, because=because))
        if text != first and tried.first_error and ran:     # not when that one failed too
            notes.append(msg("%(input)s instead of %(first)s, with which forward() failed (%(error)s)",
                             input=text, first=first, error=tried.first_error))
    return notes


def _branches_taken(trace) -> list:
    """A branch a remainder decided: the record holds on its side."""
    notes = []
    for condition, site in trace.conditions:
        if any(re.search(rf"\b{s}\b", condition) for s in trace.specialized):
            continue        # a size the code pinned: the record holds at that size alone, which is said apart
        notes.append(msg("the code took a branch that holds where %(condition)s (%(site)s), at %(sizes)s: its "
                         "shapes and counts are that branch's, and other sizes may take the other",
                         condition=expressions.said(condition), site=site or "?",
                         sizes=", ".join(f"{s} = {v}" for s, v in trace.hints.items()
                                         if re.search(rf"\b{s}\b", condition))))
    return notes


def _tables_overrun(trace) -> list:
    from atlas.extract.trace.position_tables import tables_overrun
    return [msg("%(path)s looks up %(positions)s positions in a table of %(rows)s: forward() fails at these sizes, "
                "and their shapes and counts are the code's arithmetic, not a run's",
                path=path, positions=int(positions), rows=int(rows))
            for path, rows, positions in tables_overrun(trace.root)]


def _probed(r: Attempts, texts) -> list[str]:
    """The inputs the probes run on: --dim T=600 holds for them too."""
    return [input_text(fixed(inputs_mod.parse_input(x), r.fixed)) for x in texts]


def _root_failure(shaped: ModelDoc, error):
    """The model's failure when no probe gave its root shapes: `error`, else why the probes gave none."""
    root = shaped.components[0].shapes if shaped.components else None
    if root is not None and root.status is ShapeStatus.DERIVED:
        return None
    return msg("the model's forward() did not run on the example inputs (%(error)s)",
               error=error or (root.reason if root is not None else None) or "?")


def _cpu_probes(shaped: ModelDoc) -> list:
    """The probes' own fallback, said once: their forward on the meta device failed, and they ran on a CPU copy."""
    found = next((c.shapes.reason for c in shaped.components if c.shapes is not None and c.shapes.method == "cpu"
                  and c.shapes.status is ShapeStatus.DERIVED and c.shapes.reason), None)
    return [found] if found else []


def _leads(model: nn.Module, components, trace) -> tuple:
    """Each component led by the first of its instances the forward called, where its first was not: a router
    may send no token to the first of its experts, and the page then describes one that ran."""
    out = []
    for comp in components:
        if comp.instances > 1 and trace_shapes.first_call_of(trace, model, comp.module_paths[0]) is None:
            called = (i for i, p in enumerate(comp.module_paths) if trace_shapes.first_call_of(trace, model, p))
            comp = replace(comp, lead=next(called, 0))
        out.append(comp)
    return tuple(out)


def _own_where_not_called(r: Attempts, components, trace) -> tuple:
    """Shapes from forwards at several sizes (probes) know nothing of calls: a part the record shows the forward
    never calls gets a record of its own there too, not the probes' `[B, ?]` (a dropout Nystromformer defines and
    does not use)."""
    out = []
    for comp in components:
        if trace_shapes.first_call_of(trace, r.model, comp.path) is None:
            comp = replace(comp, shapes=_own_record(r, r.model.get_submodule(comp.path), comp, trace))
        out.append(comp)
    return tuple(out)


def _own_record(r: Attempts, module: nn.Module, comp, trace) -> Shapes:
    """A component the model's forward() never calls, recorded on example inputs of its own."""
    from atlas.extract.method_uses import not_called_reason, weights_read_by
    from atlas.extract.probes.probe_shapes import leaf_inputs
    declared = hooks_of(module).inputs
    own = declared or leaf_inputs(module)
    not_called = Shapes(ShapeStatus.NOT_CALLED, method="fake", reason=not_called_reason(r.model, comp.path))
    if not own or module is r.model:
        return not_called
    specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in own], r.vocab)
    sub = runs.symbolic(module, specs, {s: HINTS[i] for i, s in enumerate(symbols)})
    if sub.error is not None or sub.root is None or sub.specialized:
        return not_called
    trace.extra[comp.path] = sub
    on = msg("its declared inputs (%(inputs)s)", inputs=", ".join(own)) if declared else \
        msg("inputs made up from its sizes")
    reader = weights_read_by(trace, comp.path)
    if reader is not None:                  # nn.MultiheadAttention's out_proj: its weights are used, not its forward
        on = msg("%(inputs)s; its weights are used by %(parent)s, whose own code computes with them",
                 inputs=on, parent=f"`{reader or '(model)'}`")
    return trace_shapes.of_call(sub.root, r.vocab, "own", on)     # not what the model passes it: pages say so
