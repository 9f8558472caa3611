"""The model's one recorded forward: the plan that finds it.

Inputs come from `--input`, else the model's `atlas_inputs`, else discovery from its code and config
(atlas.extract.discover). The attempts, in the order `record` makes them:
1. each choice of inputs once, on fake tensors with symbolic sizes; where one fails for a dtype reason, again in
   the dtype the model declares, then in bfloat16;
2. the choices the code refused, again at the sizes an assert of its named;
3. optional forward() inputs added, those the error names first, then the usual ones;
4. a run that worked made again where its sizes were not the ones its pages need (atlas.extract.record.refinements):
   within the code's limits, past sizes of 1, at the reference sizes, at the sizes the model states;
5. where no symbolic run worked, concrete probes for the shapes and one concrete record on the CPU for the
   equations.
Every choice made is a note (Text), for the model page and for stderr.
"""

from __future__ import annotations

from torch import nn

from atlas.document import ModelDoc
from atlas.extract.record import outcomes
from atlas.extract.record.attempts import Attempts
from atlas.extract.record.outcomes import Outcome
from atlas.extract.record.refinements import refined
from atlas.load.memory import DEFAULT_BUDGET_BYTES

__all__ = ["Outcome", "record"]


def record(model: nn.Module, doc: ModelDoc, declared=None, budget_bytes: int = DEFAULT_BUDGET_BYTES,
           fixed: dict | None = None, bounds: dict | None = None) -> Outcome:
    """Shapes on every component, and the record the equations read. `declared`: inputs given (--input); `fixed`:
    symbols given a size (--dim T=64); `bounds`: (low, high) per symbol (--dim T>=400)."""
    r = Attempts(model, doc, declared, fixed, bounds)
    if not r.choices:
        return outcomes.without_inputs(r)
    tried = r.attempt(r.choices, r.disc)                    # 1 and 2
    if not tried.ok and tried.disc is not None:
        tried = r.with_optional_inputs(tried)               # 3
    if tried.ok:
        return outcomes.symbolic(r, tried, refined(r, tried), budget_bytes)     # 4
    return outcomes.on_the_cpu(r, tried, budget_bytes)      # 5
