"""A symbolic record that ran, made again where its sizes were not the ones its pages need.

Each refinement runs the record again at other sizes, and keeps the new run only where it is better by its own
measure; a run that fails is never kept. In the order the plan applies them:
- within the code's limits: no larger than a table of positions or an assert allows;
- past sizes of 1: where the run's sizes left a size at 1 and the code pinned the symbols there;
- at the reference sizes: where the run took a branch its own sizes decided and the pages' sizes take the other;
- at the sizes the model states: where the code pinned a symbol that its config (or atlas_reference_sizes) sizes.
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from atlas.extract.record.attempts import Attempt, Attempts
from atlas.extract.trace import runs
from atlas.extract.trace.size_values import value_at


def refined(r: Attempts, tried: Attempt):
    """The record the plan keeps of a symbolic run that worked."""
    specs, choice = tried.specs, tried.choice
    trace = within_limits(r, tried.trace, specs, choice)
    trace = past_ones(r, trace, specs, choice)
    trace = at_reference(r, trace, specs, choice)
    return at_stated(r, trace, specs, choice)


def within_limits(r: Attempts, trace, specs, choice):
    """The record again, within the largest sizes the code allows, where it was made beyond one: a table of 16
    positions looked up by an arange(T) made at T = 17 (fake tensors check no index), an `assert t <= block_size`.
    The check runs the real forward() at the record's sizes, and pages evaluate costs within them too: the limits
    go with the trace (trace.upper)."""
    from atlas.extract.trace.position_tables import position_tables
    limits = dict(trace.upper)
    for name, (_, high) in r.bounds.items():
        if high is not None and (name not in limits or high < limits[name][0]):
            limits[name] = (high, "--dim")
    for name, (rows, path) in position_tables(trace.root).items():
        if name not in limits or rows < limits[name][0]:
            limits[name] = (rows, path)
    over = {s: limit for s, (limit, _) in limits.items() if s in trace.hints and trace.hints[s] > limit}
    if over:
        capped = {**r.bounds, **{s: (r.bounds.get(s, (None, None))[0], limit) for s, limit in over.items()}}
        again = runs.symbolic(r.model, specs, r.hints(list(trace.hints), choice.hints, capped), r.repeats)
        if again.error is None and again.root is not None:
            trace = again
    trace.upper = {**limits, **{s: v for s, v in trace.upper.items() if s not in limits or v[0] < limits[s][0]}}
    return trace


def past_ones(r: Attempts, trace, specs, choice, tries: int = 3):
    """The record again at larger sizes, where the run's sizes left a size made from them at 1 and the code pinned
    them there (an image so small that the last feature map is 1 x 1, which an adaptive pool passes through as is):
    the symbols pinned so are doubled, up to `tries` times and within --dim's limits, and the first run that pins
    fewer symbols is the record, within the code's limits. The pinned run's own limits are not the code's: a 1 x 1
    map bounds the image it came from."""
    pinned = set(trace.pinned_at_one) & set(trace.specialized)
    grown = dict(trace.hints)
    for _ in range(tries if pinned else 0):
        for s in pinned:
            grown[s] *= 2
        if any(r.bounds.get(s, (None, None))[1] is not None and grown[s] > r.bounds[s][1] for s in pinned):
            break
        again = _again(r, specs, choice, grown)
        if again is not None and len(again.specialized) < len(trace.specialized):
            return again
    return trace


def at_reference(r: Attempts, trace, specs, choice):
    """The record again at the sizes the pages count costs at, where the run took a branch its own sizes decided
    and those sizes take the other side (Swin at a 40 x 56 image has one window per map from the second stage on,
    so no shifted windows, and counted at 224 x 224 its attention FLOPs would be 2.7 times too many). The dims of
    those conditions take the reference sizes (kept distinct, as the run's sizes are: a width equal to the height is
    doubled, not moved by one, so that a 32 x 32 image is no 32 x 33, off every branch a multiple of 4 decides) and
    the run is kept where fewer conditions are off."""
    if not trace.branches:
        return trace
    reference, off = _off_reference(r, trace)
    if not off:
        return trace
    named = {str(x) for c in off for x in c.free_symbols}
    grown = dict(trace.hints)
    for s in [s for s in trace.hints if s in named and s in reference]:
        size = reference[s]
        while size in [v for k, v in grown.items() if k != s]:
            size *= 2           # apart from an equal size, by a multiple: every divisor of the reference holds still
        grown[s] = size
    again = _again(r, specs, choice, grown)
    if again is None or len(again.specialized) > len(trace.specialized):
        return trace
    return again if len(_off_reference(r, again)[1]) < len(off) else trace


def at_stated(r: Attempts, trace, specs, choice):
    """The record again at the size the model states (its config's image_size, its atlas_reference_sizes), where the
    code pinned a symbol that has one to the run's own size: MobileViT's `int(math.ceil(W / 2) * 2)` would hold its
    costs at a 40 x 56 image, its config's being 64 x 64. Kept where it pins no more symbols; --dim's sizes stand."""
    from atlas.extract.discover.reference_sizes import stated_sizes
    stated = stated_sizes(r.model)
    moved = {s: v for s, v in stated.items()
             if s in trace.specialized and s not in r.bounds and trace.hints.get(s) != v}
    if not moved:
        return trace
    hints = {**trace.hints, **moved}        # as stated, equal or not: the code pins them either way
    again = runs.symbolic(r.model, specs, hints, r.repeats)
    if again.error is not None or again.root is None or not set(again.specialized) <= set(trace.specialized):
        return trace
    return within_limits(r, again, specs, replace(choice, hints=hints))


def _again(r: Attempts, specs, choice, hints: dict):
    """The record made again at `hints`, within the code's limits; None where it fails."""
    again = runs.symbolic(r.model, specs, r.hints(list(hints), hints, r.bounds), r.repeats)
    if again.error is not None or again.root is None:
        return None
    return within_limits(r, again, specs, replace(choice, hints=hints))


def _off_reference(r: Attempts, trace) -> tuple[dict, list]:
    """(the reference sizes, the run's branch conditions that do not hold there)."""
    from atlas.extract.discover.reference_sizes import reference_sizes
    upper = {s: v for s, (v, _) in trace.upper.items()}
    upper.update({s: high for s, (_, high) in r.bounds.items()
                  if high is not None and high < upper.get(s, high + 1)})
    reference = dict(reference_sizes(r.model, list(trace.hints), None, upper))
    at = {trace.symbols[s]: v for s, v in reference.items() if s in trace.symbols}
    return reference, [c for c in trace.branches if value_at(c, at) == sympy.false]
