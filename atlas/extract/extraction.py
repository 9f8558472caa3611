"""The extract stage: a loaded model's components, its one recorded forward, and the shapes read off it.

walk the module tree -> record a forward (atlas.extract.record.plan) -> where alike list entries computed
differently, walk again with each kind its own component and record again.
"""

from __future__ import annotations

from dataclasses import replace

from atlas import progress
from atlas.document import ModelDoc
from atlas.document import input_specs as inputs_mod
from atlas.errors import AtlasError
from atlas.extract import aliases
from atlas.extract.accounting import has_lazy
from atlas.extract.record import plan
from atlas.extract.walk import walk
from atlas.load.settings import Settings


def extract(loaded, settings: Settings) -> tuple[ModelDoc, object]:
    """(the model's document with its components and shapes, the record the equations and costs read)."""
    inputs = list(settings.inputs) if settings.inputs else None
    if inputs:
        _inputs_fit_forward(loaded.model, inputs)
    if has_lazy(loaded.model):
        from atlas.extract.probes.probe_runs import materialize_lazy
        materialize_lazy(loaded.model, inputs)
    with progress.stage("walk") as bar:
        doc = walk(loaded)
        bar.update()
    with progress.stage("shapes") as bar:
        outcome = _recorded(loaded, doc, inputs, settings)
        skipped = aliases.uncalled(loaded.model, outcome.trace)
        # alike list entries that computed differently: a component per kind; a module registered twice: documented
        # once, where its parent calls it
        if outcome.apart or skipped:
            outcome = _recorded(loaded, walk(loaded, outcome.apart, skipped), inputs, settings)
        doc, trace = replace(outcome.doc, forward_failure=outcome.failure), outcome.trace
        bar.update()
    _dims_are_symbols(doc, settings)
    return doc, trace


def _recorded(loaded, doc: ModelDoc, inputs, settings: Settings):
    return plan.record(loaded.model, doc, inputs, settings.budget_bytes, dict(settings.fixed_dims), settings.bounds)


def _inputs_fit_forward(model, texts: list[str]) -> None:
    """Inputs given with --input that leave a parameter of forward() without a value are bad input, said before
    any run: the run would fail on a TypeError inside the atlas's call of the model."""
    from atlas.load.forward_calls import missing as missing_parameters
    names = [inputs_mod.parse_input(text).name for text in texts]
    missing = missing_parameters(model, names)
    if missing:
        raise AtlasError(f"--input gives {', '.join(names)}; {type(model).__name__}.forward() also needs "
                         f"{', '.join(missing)}")


def _dims_are_symbols(doc: ModelDoc, settings: Settings) -> None:
    """A --dim for a symbol the example inputs do not have would fix nothing: said, not ignored."""
    if not doc.inputs:
        return
    specs = [inputs_mod.parse_input(text) for text in doc.inputs]
    symbols = list(dict.fromkeys(d for spec in specs for d in spec.dims if isinstance(d, str)))
    given = [sym for sym, _ in settings.fixed_dims] + [sym for sym, _, _ in settings.dim_bounds]
    unknown = [sym for sym in dict.fromkeys(given) if sym not in symbols]
    if unknown:
        raise AtlasError(f"--dim {unknown[0]}: {unknown[0]} is no symbol of the example inputs "
                         f"({', '.join(doc.inputs)}); their symbols: {', '.join(symbols) or 'none'}")
