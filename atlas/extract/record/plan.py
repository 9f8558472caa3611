"""The model's one recorded forward: which example inputs, at which sizes, in which dtype, and what it gives.

Inputs come from `--input`, else the model's `atlas_inputs`, else discovery from the code and config
(atlas.extract.discover.discovery). The forward runs once on fake tensors with symbolic dims; where it fails for a dtype
reason it is retried in the dtype the model declares (or bfloat16); where discovery offers other candidates
(a rank, an optional input the error names), they are tried in turn. Where no symbolic run works, concrete
probes give the shapes and one concrete run the equations. Every choice made is kept as a note, for the
model page and for stderr.
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass, field, replace

import sympy
import torch
from torch import nn

from atlas.document import DimNames, ModelDoc, Shapes, ShapeStatus, expressions
from atlas.document import input_specs as inputs_mod
from atlas.errors import AtlasError
from atlas.extract.trace import branch_sizes, entry_kinds
from atlas.extract.trace import call_shapes as trace_shapes
from atlas.extract.trace import runs as trace_run
from atlas.extract.trace import structures as trace_structures
from atlas.i18n import msg, render
from atlas.load.hooks import hooks_of
from atlas.load.memory import DEFAULT_BUDGET_BYTES

log = logging.getLogger("atlas")
HINTS = (2, 6, 5, 7, 9)             # the symbolic run's sizes for declared inputs: distinct, never 0 or 1


@dataclass
class Choice:
    """One set of example inputs to try, and why."""

    texts: tuple[str, ...]
    hints: dict
    sources: tuple = ()             # (input text, the sentence saying where it came from)


@dataclass
class Outcome:
    doc: ModelDoc
    trace: object                   # atlas.extract.trace.structures.Trace, or None
    notes: list = field(default_factory=list)      # Text sentences: how the inputs were found, retries
    failure: object = None          # a Text: why the model-level forward did not run, if it did not
    apart: dict = field(default_factory=dict)   # module path -> (its kind, why), for list entries set apart


def _choices_of(disc) -> list[Choice]:
    return [Choice(tuple(t), disc.hints(t), tuple((x, f.because) for x, f in zip(t, disc.inputs)))
            for t in disc.choices()]


def _smallest_sizes(model: nn.Module, texts) -> dict:
    """For inputs given (--input, atlas_inputs): the smallest sizes the code takes, as discovery finds them (a conv
    stack's receptive field), for the symbols the inputs name: a strided conv stack given [B, 1, T] was run at the
    default T = 17, too short for it. Only the lower limits; the given shapes stand."""
    from atlas.extract.discover.discovery import discover
    named = {d for t in texts for d in inputs_mod.parse_input(t).dims if isinstance(d, str)}
    try:
        disc = discover(model)
    except Exception:               # discovery is a help here, never a reason to fail
        return {}
    return {b.symbol: (b.hint or b.minimum, None) for b in disc.bounds
            if b.symbol in named and (b.hint or b.minimum)}


def _choices(model: nn.Module, declared, fixed: dict, bounds: dict) -> tuple[list[Choice], list]:
    texts = tuple(declared or hooks_of(model).inputs or ())
    if texts:
        return [Choice(texts, {})], []
    from atlas.extract.discover.discovery import discover
    disc = discover(model)
    if disc.unresolved:
        name, why = disc.unresolved[0]
        quoted = "`" + name + "`"
        return [], [msg("no example input for %(name)s: %(why)s", name=quoted, why=why)]
    return _choices_of(disc), [disc]


@dataclass
class _Try:
    """The first choice whose symbolic run worked, or the last one tried."""

    trace: object = None
    choice: Choice | None = None
    specs: list = field(default_factory=list)
    symbols: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    first_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.trace is not None and self.trace.error is None and self.trace.root is not None


def _resolved(texts, sizes: dict, vocab):
    """(input specs, their symbols) for a choice's texts, the symbols of `sizes` given those sizes."""
    return inputs_mod.resolve([_fix(inputs_mod.parse_input(x), sizes) for x in texts], vocab)


def _attempt(model, choices, disc, fixed, bounds, vocab, repeats) -> _Try:
    """The first choice whose symbolic run works; where none does, the first that works again at the sizes its
    code stopped it for not having (after every choice: a rank-2 input whose features meet a Linear as its batch
    "needs" B = 8, where the next choice, [B, T, 8], is the input)."""
    t = _Try()
    refused = []
    for choice in choices:
        specs, symbols = _resolved(choice.texts, fixed, vocab)
        trace = _record(model, specs, _hints(specs, symbols, choice.hints, bounds), disc, repeats, t.notes)
        if trace.error is not None and trace.refused:
            refused.append((choice, trace))
        if _finished(model, t, trace, choice, specs, symbols, bounds, repeats):
            return t
    for choice, trace in refused:
        again = _at_required_sizes(model, choice, fixed, bounds, vocab, trace, repeats)
        if again is not None:
            trace, choice, specs, symbols, note = again
            t.notes.append(note)
            if _finished(model, t, trace, choice, specs, symbols, bounds, repeats):
                return t
    return t


def _finished(model, t: _Try, trace, choice, specs, symbols, bounds, repeats) -> bool:
    """Keeps a run in `t`, within the code's limits and past sizes of 1 and the other side of branches where it
    worked; whether it did."""
    if trace.error is None and trace.root is not None:
        trace = _within_limits(model, trace, specs, choice, bounds, repeats)
        trace = _at_reference(model, _past_ones(model, trace, specs, choice, bounds, repeats), specs, choice,
                              bounds, repeats)
        trace = _pinned_at_stated(model, trace, specs, choice, bounds, repeats)
    t.trace, t.choice, t.specs, t.symbols = trace, choice, specs, symbols
    t.first_error = t.first_error or (trace.error if not t.ok else None)
    return t.ok


def _record(model, specs, hints, disc, repeats, notes: list):
    """One symbolic run; where it fails for a dtype reason, again in the dtypes the model declares (then bfloat16)."""
    trace = trace_run.symbolic(model, specs, hints, repeats)
    if trace.error is None:
        return trace
    from atlas.extract.record.escalation import dtype_error
    if dtype_error(trace.error):
        for name in (disc.retry_dtypes if disc else ("bfloat16",)):
            with _in_dtype(model, getattr(torch, name)):
                retry = trace_run.symbolic(model, specs, hints, repeats)
            if retry.error is None:
                notes.append(msg("recorded in %(dtype)s: in the model's own dtype the forward failed "
                                 "(%(error)s)", dtype=name, error=trace.error))
                retry.dtype = name
                return retry
    return trace


def _at_required_sizes(model, choice: Choice, fixed: dict, bounds: dict, vocab, trace, repeats, tries: int = 3):
    """The run again at the sizes the code stopped it for not having: `assert h == self.image_size` failed at
    H = 40 (a ViT's fixed 224 x 224), at the line the run stopped on. W's assert comes once H passes: up to `tries`
    runs. (trace, choice with the sizes put in, specs, symbols, note), or None where no run gets past."""
    sizes: dict[str, tuple[int, str]] = {}
    stopped = trace
    for _ in range(tries):
        new = [(name, size, site) for name, size, site in stopped.refused
               if name not in sizes and name not in fixed and site and site in (stopped.error or "")]
        if not new:
            return None
        for name, size, site in new:
            sizes[name] = (size, site)
        pinned = {**fixed, **{name: size for name, (size, _) in sizes.items()}}
        specs, symbols = _resolved(choice.texts, pinned, vocab)
        stopped = trace_run.symbolic(model, specs, _hints(specs, symbols, choice.hints, bounds), repeats)
        if stopped.error is None and stopped.root is not None:
            texts = tuple(_text(s) for s in specs)
            note = msg("%(sizes)s: the code stops at other sizes (%(sites)s)",
                       sizes=", ".join(f"{name} = {size}" for name, (size, _) in sizes.items()),
                       sites=", ".join(dict.fromkeys(site for _, site in sizes.values())))
            return stopped, replace(choice, texts=texts), specs, symbols, note
    return None


def _within_limits(model, trace, specs, choice, bounds: dict, repeats):
    """The record again, within the largest sizes the code allows, where it was made beyond one: a table of 16
    positions looked up by an arange(T) made at T = 17 (fake tensors check no index), an `assert t <= block_size`.
    The check runs the real forward() at the record's sizes, and pages evaluate costs within them too: the limits
    go with the trace (trace.upper)."""
    from atlas.extract.trace.position_tables import position_tables
    limits = dict(trace.upper)
    for name, (_, high) in bounds.items():
        if high is not None and (name not in limits or high < limits[name][0]):
            limits[name] = (high, "--dim")
    for name, (rows, path) in position_tables(trace.root).items():
        if name not in limits or rows < limits[name][0]:
            limits[name] = (rows, path)
    over = {s: limit for s, (limit, _) in limits.items() if s in trace.hints and trace.hints[s] > limit}
    if over:
        capped = {**bounds, **{s: (bounds.get(s, (None, None))[0], limit) for s, limit in over.items()}}
        again = trace_run.symbolic(model, specs, _hints(specs, list(trace.hints), choice.hints, capped), repeats)
        if again.error is None and again.root is not None:
            trace = again
    trace.upper = {**limits, **{s: v for s, v in trace.upper.items() if s not in limits or v[0] < limits[s][0]}}
    return trace


def _past_ones(model, trace, specs, choice, bounds: dict, repeats, tries: int = 3):
    """The record again at larger sizes, where the run's sizes left a size made from them at 1 and the code pinned
    them there (an image so small that the last feature map is 1 x 1, which an adaptive pool passes through as is):
    the symbols pinned so are doubled, up to `tries` times and within --dim's limits, and the first run that pins
    fewer symbols is the record, within the code's limits (_within_limits). The pinned run's own limits are not
    the code's: a 1 x 1 map bounds the image it came from."""
    pinned = set(trace.pinned_at_one) & set(trace.specialized)
    grown = dict(trace.hints)
    for _ in range(tries if pinned else 0):
        for s in pinned:
            grown[s] *= 2
        if any(bounds.get(s, (None, None))[1] is not None and grown[s] > bounds[s][1] for s in pinned):
            break
        again = _again(model, specs, choice, grown, bounds, repeats)
        if again is not None and len(again.specialized) < len(trace.specialized):
            return again
    return trace


def _again(model, specs, choice, hints: dict, bounds: dict, repeats):
    """The record made again at `hints`, within the code's limits (_within_limits); None where it fails."""
    again = trace_run.symbolic(model, specs, _hints(specs, list(hints), hints, bounds), repeats)
    if again.error is not None or again.root is None:
        return None
    return _within_limits(model, again, specs, replace(choice, hints=hints), bounds, repeats)


def _off_reference(model, trace, bounds: dict) -> tuple[dict, list]:
    """(the reference sizes, the run's branch conditions that do not hold there)."""
    from atlas.extract.discover.reference_sizes import reference_sizes
    upper = {s: v for s, (v, _) in trace.upper.items()}
    upper.update({s: high for s, (_, high) in bounds.items() if high is not None and high < upper.get(s, high + 1)})
    reference = dict(reference_sizes(model, list(trace.hints), None, upper))
    at = {trace.symbols[s]: v for s, v in reference.items() if s in trace.symbols}
    return reference, [c for c in trace.branches if c.subs(at) == sympy.false]


def _at_reference(model, trace, specs, choice, bounds: dict, repeats):
    """The record again at the sizes the pages count costs at, where the run took a branch its own sizes decided
    and those sizes take the other side (Swin at a 40 x 56 image: one window per map from the second stage on, so no
    shifted windows; its attention FLOPs at 224 x 224 were 2.7 times too many). The dims of those conditions take
    the reference sizes (kept distinct, as the run's sizes are: a width equal to the height is doubled, not moved
    by one, so that a 32 x 32 image is no 32 x 33, off every branch a multiple of 4 decides) and the run is kept
    where fewer conditions are off."""
    if not trace.branches:
        return trace
    reference, off = _off_reference(model, trace, bounds)
    if not off:
        return trace
    named = {str(x) for c in off for x in c.free_symbols}
    grown = dict(trace.hints)
    for s in [s for s in trace.hints if s in named and s in reference]:
        size = reference[s]
        while size in [v for k, v in grown.items() if k != s]:
            size *= 2           # apart from an equal size, by a multiple: every divisor of the reference holds still
        grown[s] = size
    again = _again(model, specs, choice, grown, bounds, repeats)
    if again is None or len(again.specialized) > len(trace.specialized):
        return trace
    return again if len(_off_reference(model, again, bounds)[1]) < len(off) else trace


def _pinned_at_stated(model, trace, specs, choice, bounds: dict, repeats):
    """The record again at the size the model states (its config's image_size, its atlas_reference_sizes), where the
    code pinned a symbol that has one to the run's own size: MobileViT's `int(math.ceil(W / 2) * 2)` held its costs
    at a 40 x 56 image, its config's being 64 x 64. Kept where it pins no more symbols; --dim's sizes stand."""
    from atlas.extract.discover.reference_sizes import stated_sizes
    stated = stated_sizes(model)
    moved = {s: v for s, v in stated.items() if s in trace.specialized and s not in bounds and trace.hints.get(s) != v}
    if not moved:
        return trace
    hints = {**trace.hints, **moved}        # as stated, equal or not: the code pins them either way
    again = trace_run.symbolic(model, specs, hints, repeats)
    if again.error is not None or again.root is None or not set(again.specialized) <= set(trace.specialized):
        return trace
    return _within_limits(model, again, specs, replace(choice, hints=hints), bounds, repeats)


def _escalate(model, tried: _Try, disc, fixed, bounds, vocab, repeats) -> tuple[_Try, object]:
    """No discovered choice ran: optional forward() parameters added (symbolic_run.escalate)."""
    from atlas.extract.record.escalation import escalate

    def attempt(again):
        more = _attempt(model, _choices_of(again), again, fixed, bounds, vocab, repeats)
        return more.ok, more.first_error, more
    found = escalate(model, disc, tried.first_error, attempt)
    return found if found is not None else (tried, disc)      # the discovery's own sentence says why it was added


def _limits(disc, bounds: dict, symbols, hints: dict | None = None) -> dict:
    """(low, high) per symbol for probes at concrete sizes: what discovery found the code needs (a conv stack's
    smallest input, twice a window), --dim's bounds, and the sizes the symbolic run was made at (an image of 6 x 5
    pixels leaves a backbone's last feature map 1 x 1, and every size after it reads 1)."""
    out = {}
    for s in symbols:
        b = disc.bound(s) if disc is not None else None
        low, high = bounds.get(s, (None, None))
        lows = [x for x in (low, b and b.minimum, b and b.hint, (hints or {}).get(s)) if x is not None]
        highs = [x for x in (high, b and b.maximum) if x is not None]
        out[s] = (max(lows, default=None), min(highs, default=None))
        if low is not None and highs and low > min(highs):     # the user's bound past the code's: no size holds
            said = render(b.because) if b is not None and b.maximum == min(highs) and b.because else None
            raise AtlasError(f"--dim {s}>={low} asks for more than the model takes: "
                             + (f"{s} {said}" if said else f"{s} is at most {min(highs)}"))
    return out


def _hints(specs, symbols, given: dict, bounds: dict) -> dict:
    hints = {}
    for i, s in enumerate(symbols):
        h = given.get(s) or HINTS[min(i, len(HINTS) - 1)]
        low, high = bounds.get(s, (None, None))
        if low is not None:
            h = max(h, low)
        if high is not None:
            h = min(h, high)
        while h in hints.values() or h < 2:
            h += 1
        hints[s] = h
    return hints


@contextlib.contextmanager
def _in_dtype(model: nn.Module, dtype: torch.dtype):
    """The model's floating tensors in `dtype` for one run (cheap on the meta device), then as they were."""
    saved = [(t, t.data) for t in list(model.parameters()) + list(model.buffers()) if t.is_floating_point()]
    for t, data in saved:
        t.data = data.to(dtype)
    try:
        yield
    finally:
        for t, data in saved:
            t.data = data


def record(model: nn.Module, doc: ModelDoc, declared=None, budget_bytes: int = DEFAULT_BUDGET_BYTES,
           fixed: dict | None = None, bounds: dict | None = None) -> Outcome:
    """Shapes on every component, and the trace the equations read. `fixed`: symbols given a size (--dim T=64);
    `bounds`: (low, high) per symbol (--dim T>=400)."""
    fixed, bounds = dict(fixed or {}), dict(bounds or {})
    hooks = hooks_of(model)
    vocab = inputs_mod.vocabulary(hooks.dims, hooks.fixed_dims)
    dim_names = DimNames(inputs_mod.used(vocab, [], hooks.dims), vocab.fixed)
    choices, extra = _choices(model, declared, fixed, bounds)
    if choices and not extra:
        bounds = {**_smallest_sizes(model, choices[0].texts), **bounds}
    if not choices:
        reason = extra[0]
        shapes = Shapes(ShapeStatus.NOT_DERIVED, reason=reason)
        doc = replace(doc, components=tuple(replace(c, shapes=shapes) for c in doc.components), dims=dim_names)
        return Outcome(doc, None, [], reason)
    disc = extra[0] if extra else None
    repeats = _repeat_groups(doc)
    tried = _attempt(model, choices, disc, fixed, bounds, vocab, repeats)
    if not tried.ok and disc is not None:
        tried, disc = _escalate(model, tried, disc, fixed, bounds, vocab, repeats)
    trace, choice, specs, symbols, notes, first_error = (tried.trace, tried.choice, tried.specs, tried.symbols,
                                                         tried.notes, tried.first_error)
    fallback = None
    if trace is None or trace.error is not None or trace.root is None:
        fallback = _on_the_cpu(model, choices, choice, trace, disc, fixed, bounds, vocab, budget_bytes)
        choice, specs, symbols = fallback[:3]
    texts = tuple(choice.texts)
    probed = [_text(_fix(inputs_mod.parse_input(x), fixed)) for x in texts]    # --dim T=600 holds for probes too
    dim_names = DimNames(inputs_mod.used(vocab, specs, hooks.dims), vocab.fixed)
    if disc is not None:
        firsts = [f.candidates[0] for f in disc.inputs]
        for (text, because), first in reversed(list(zip(choice.sources, firsts))):
            if text != first and first_error and tried.ok:     # not when that one failed too
                notes.insert(0, msg("%(input)s instead of %(first)s, with which forward() failed (%(error)s)",
                                    input=text, first=first, error=first_error))
            notes.insert(0, msg("%(input)s, inferred: %(because)s", input=text, because=because))
    if trace is not None and trace.error is None and trace.root is not None:
        for condition, site in trace.conditions:    # a branch a remainder decided: the record holds on its side
            if any(re.search(rf"\b{s}\b", condition) for s in trace.specialized):
                continue        # a size the code pinned: the record holds at that size alone, which is said below
            notes.append(msg("the code took a branch that holds where %(condition)s (%(site)s), at %(sizes)s: its "
                             "shapes and counts are that branch's, and other sizes may take the other",
                             condition=expressions.said(condition), site=site or "?",
                             sizes=", ".join(f"{s} = {v}" for s, v in trace.hints.items()
                                             if re.search(rf"\b{s}\b", condition))))
    if trace is not None and trace.error is None:
        from atlas.extract.trace.position_tables import tables_overrun
        for path, rows, positions in tables_overrun(trace.root):
            notes.append(msg("%(path)s looks up %(positions)s positions in a table of %(rows)s: forward() fails at "
                             "these sizes, and their shapes and counts are the code's arithmetic, not a run's",
                             path=path, positions=f"{positions:,}", rows=f"{rows:,}"))
    if trace is not None and trace.error is None and trace.root is not None and trace.specialized:
        # the code needs exact sizes for some symbols (a Python loop over positions): shapes from probes at
        # several sizes, the equations from this run, checked at the sizes it was made at
        notes.append(msg("the code needs exact values of %(symbols)s, so the shapes come from forwards at several "
                         "sizes and the equations are written, and checked, at %(sizes)s",
                         symbols=", ".join(trace.specialized_at) or ", ".join(trace.specialized),
                         sizes=", ".join(f"{s} = {trace.hints[s]}" for s in trace.specialized if s in trace.hints)))
        doc = replace(doc, components=_leads(model, doc.components, trace))
        from atlas.extract.probes import probe_shapes as probes
        shaped = probes.derive(model, doc, probed, budget_bytes, _limits(disc, bounds, symbols, trace.hints))
        shaped = replace(shaped, components=_own_where_not_called(model, shaped.components, trace, vocab),
                         dims=dim_names)
        notes.extend(_cpu_probes(shaped))
        return Outcome(replace(shaped, inputs=texts, input_notes=tuple(notes)), trace, notes,
                       _root_failure(shaped, None), _apart(model, trace, repeats, doc))
    if fallback is not None:
        why = trace.error if trace is not None else None
        limits, probe, concrete = fallback[3:]
        ran = concrete is not None and concrete.root is not None and concrete.error is None
        if ran:
            doc = replace(doc, components=_leads(model, doc.components, concrete))
        from atlas.extract.probes import probe_shapes as probes
        shaped = probes.derive(model, doc, probed, budget_bytes, limits)
        if ran:
            shaped = replace(shaped, components=_own_where_not_called(model, shaped.components, concrete, vocab))
        failure = _root_failure(shaped, first_error or why)
        if failure is None and probe:
            notes.append(msg("the forward with symbolic sizes failed (%(error)s), so the shapes come from forwards "
                             "at several sizes and the equations are written, and checked, at %(sizes)s",
                             error=first_error or why or "?",
                             sizes=", ".join(f"{s} = {v}" for s, v in probe.items())))
        notes.extend(_cpu_probes(shaped))
        apart = _called_otherwise(model, concrete, doc) if concrete is not None and concrete.root is not None else {}
        return Outcome(replace(shaped, inputs=texts, input_notes=tuple(notes), dims=dim_names), concrete, notes,
                       failure, apart)
    comps, on_branch = [], branch_sizes.multiples(trace.conditions)
    for comp in _leads(model, doc.components, trace):
        module = model.get_submodule(comp.path)
        call = trace_shapes.first_call_of(trace, model, comp.path)
        if call is not None:
            shapes = trace_shapes.of_call(call, vocab, "fake", multiples=on_branch)
        else:
            shapes = _own_record(model, module, comp, trace, vocab)
        comps.append(replace(comp, shapes=shapes))
    doc = replace(doc, components=tuple(comps), dims=dim_names, inputs=texts, input_notes=tuple(notes))
    return Outcome(doc, trace, notes, None, _apart(model, trace, repeats, doc))


def _on_the_cpu(model, choices: list[Choice], tried: Choice, trace, disc, fixed: dict, bounds: dict, vocab,
                budget_bytes: int, most: int = 3):
    """No symbolic run worked: a concrete one on the CPU, the choices in their order, the preferred first, and the
    first that runs kept (Blip2's image at the 32 x 32 its config fixes, where only the choice tried last, any
    H x W, was run, at 48 x 48, against a table of 17 positions). Where none runs, the choice tried last, as its
    symbolic run had it. (choice, specs, symbols, limits, probe sizes, the concrete record)."""
    names = [inputs_mod.parse_input(x).name for x in tried.texts]
    before = choices[:choices.index(tried)] if tried in choices else choices     # tried, and failed, before it
    order = [c for c in before if [inputs_mod.parse_input(x).name for x in c.texts] == names]

    from atlas.extract.probes.probe_runs import concrete_record
    from atlas.extract.probes.probe_sizes import probe_sizes

    def run(choice: Choice, hints):
        specs, symbols = _resolved(choice.texts, fixed, vocab)
        limits = _limits(disc, bounds, symbols, hints)
        probe = probe_sizes(symbols, limits)[0] if symbols else {}
        return choice, specs, symbols, limits, probe, concrete_record(model, specs, probe, budget_bytes)

    for choice in order[:most]:
        got = run(choice, choice.hints or None)
        if got[5] is not None and got[5].root is not None and got[5].error is None:
            return got
    return run(tried, trace.hints if trace is not None else None)


def _apart(model: nn.Module, trace, repeats: list[list[str]], doc: ModelDoc) -> dict[str, tuple]:
    """{module path: (kind, why)} for the entries of each group of alike list entries whose kinds
    (atlas.extract.trace.entry_kinds) computed differently in the run: kinds that computed the same share a label, and stay one
    component. And for the instances of a component called otherwise than its first instance (_called_otherwise).
    `why` is what the component's page says of it."""
    out = _called_otherwise(model, trace, doc)
    for paths in repeats:
        keys = entry_kinds.kinds([model.get_submodule(p) for p in paths])
        done: dict = {}             # each kind's first entry the forward called (its first, where none was)
        for path, key in zip(paths, keys):
            if done.get(key) is None:
                done[key] = trace_shapes.first_call_of(trace, model, path)
        if len(done) < 2:
            continue
        if any(call is None or call.skipped for call in done.values()):
            continue
        labels: dict = {}
        label = {key: labels.setdefault(entry_kinds.computation(call), str(len(labels))) for key, call in done.items()}
        if len(labels) > 1:
            why = {lab: _settings_text([key for key in label if label[key] == lab],
                                       [key for key in label if label[key] != lab]) for lab in labels.values()}
            out.update((path, (label[key], why[label[key]])) for path, key in zip(paths, keys))
    return out


def _settings_text(keys: list[tuple], others: list[tuple]):
    """Why entries are set apart: the settings all entries of that kind share and no entry of another has."""
    common = set.intersection(*(set(key) for key in keys)) - set().union(*(set(key) for key in others))
    shown = ", ".join(f"`{name}` = {value}" for name, value in sorted(common))
    return msg("set apart from the alike entries of its list: its settings differ (%(settings)s), and so does what "
               "it computes", settings=shown) if shown else msg("set apart from the alike entries of its list: "
                                                                   "what it computes differs")


def _called_otherwise(model: nn.Module, trace, doc: ModelDoc) -> dict[str, tuple]:
    """{module path: label} for the instances of each component, where some were called otherwise than others
    were: with one tensor passed to other parameters, or with inputs of other sizes. Funnel's first layer gets one
    tensor as query, key and value, the later ones a pooled query beside the keys, the third block's at a quarter
    of the positions. The equations and shapes read from the first call would use the query where the later
    layers' code uses the key, at the first one's sizes: each way of calling it is a component of its own. Sizes a
    count in the data decides (the tokens routed to each expert) are one way."""
    out, evaluated = {}, {}
    for comp in doc.components:
        if comp.instances < 2:
            continue
        calls = [trace_shapes.first_call_of(trace, model, p) if p not in trace.extra else None   # not its own call
                 for p in comp.module_paths]
        patterns = [(entry_kinds.shared(c.args, c.kwargs), _input_sizes(c, trace.hints, evaluated)) if c is not None
                    else None for c in calls]
        seen = [p for p in patterns if p is not None]
        if len(set(seen)) < 2:
            continue
        labels = {pattern: (f"shared {i}", msg(
            "set apart from the other instances: the model calls it with other inputs (one tensor passed to other "
            "arguments, or other sizes)")) for i, pattern in enumerate(dict.fromkeys(seen))}
        out.update((path, labels[pattern if pattern is not None else seen[0]])
                   for path, pattern in zip(comp.module_paths, patterns))
    return out


def _input_sizes(call, hints: dict, evaluated: dict) -> tuple:
    """A call's tensor inputs' sizes at the sizes the record was made at (a size written T in one call and 17 in
    a later one, once the code needed T's value, is one size); every data-decided count (u0, u1) alike.
    `evaluated` keeps each size's value: the layers of a deep model see the same few sizes."""
    def at(size):
        if size not in evaluated:
            symbols = getattr(size, "free_symbols", set())
            evaluated[size] = ("u" if any(str(s) not in hints for s in symbols) else
                               int(size.subs({s: hints[str(s)] for s in symbols})) if symbols else int(size))
        return evaluated[size]
    return tuple(tuple(at(s) for s in r.value.shape)
                 for r in trace_structures.refs((call.args, call.kwargs)) if r.value.shape is not None)


def _root_failure(shaped: ModelDoc, error):
    """The model's failure when no probe gave its root shapes: `error`, else why the probes gave none."""
    root = shaped.components[0].shapes if shaped.components else None
    if root is not None and root.status is ShapeStatus.DERIVED:
        return None
    return msg("the model's forward() did not run on the example inputs (%(error)s)",
               error=error or (root.reason if root is not None else None) or "?")


def _text(spec: inputs_mod.InputSpec) -> str:
    return inputs_mod.input_text(spec.name, spec.dtype, spec.dims)


def _fix(spec: inputs_mod.InputSpec, fixed: dict) -> inputs_mod.InputSpec:
    """--dim T=64: the symbol is that size, not a symbol."""
    if not fixed:
        return spec
    return inputs_mod.InputSpec(spec.name, spec.dtype, tuple(fixed.get(d, d) if isinstance(d, str) else d
                                                              for d in spec.dims))


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


def _own_where_not_called(model: nn.Module, components, trace, vocab) -> tuple:
    """Shapes from forwards at several sizes (probes) know nothing of calls: a part the record shows the forward
    never calls gets a record of its own there too, not the probes' `[B, ?]` (a dropout Nystromformer defines and
    does not use)."""
    out = []
    for comp in components:
        if trace_shapes.first_call_of(trace, model, comp.path) is None:
            module = model.get_submodule(comp.path)
            comp = replace(comp, shapes=_own_record(model, module, comp, trace, vocab))
        out.append(comp)
    return tuple(out)


def _own_record(model: nn.Module, module: nn.Module, comp, trace, vocab) -> Shapes:
    """A component the model's forward() never calls, recorded on example inputs of its own."""
    from atlas.extract.method_uses import not_called_reason, weights_read_by
    from atlas.extract.probes import probe_shapes as probes
    declared = hooks_of(module).inputs
    own = declared or probes.leaf_inputs(module)
    not_called = Shapes(ShapeStatus.NOT_CALLED, method="fake", reason=not_called_reason(model, comp.path))
    if not own or module is model:
        return not_called
    specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in own], vocab)
    sub = trace_run.symbolic(module, specs, {s: HINTS[i] for i, s in enumerate(symbols)})
    if sub.error is not None or sub.root is None or sub.specialized:
        return not_called
    trace.extra[comp.path] = sub
    on = msg("its declared inputs (%(inputs)s)", inputs=", ".join(own)) if declared else \
        msg("inputs made up from its sizes")
    reader = weights_read_by(trace, comp.path)
    if reader is not None:                  # nn.MultiheadAttention's out_proj: its weights are used, not its forward
        on = msg("%(inputs)s; its weights are used by %(parent)s, whose own code computes with them",
                 inputs=on, parent=f"`{reader or '(model)'}`")
    return trace_shapes.of_call(sub.root, vocab, "own", on)     # not what the model passes it: pages say so


def _repeat_groups(doc: ModelDoc) -> list[list[str]]:
    """Module paths of identical entries of one list: all but the first may skip their run."""
    groups = []
    for comp in doc.components:
        if comp.repeat < 2 or len(comp.module_paths) != comp.repeat:
            continue
        parents = {p.rpartition(".")[0] for p in comp.module_paths}
        if len(parents) == 1 and all(p.rpartition(".")[2].isdigit() for p in comp.module_paths):
            groups.append(list(comp.module_paths))
    return groups
