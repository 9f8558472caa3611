"""The analyse stage: what the record and the code say about each component.

costs (FLOPs, activation memory) -> equations, verified against forward() -> the traits a catalog compares and the
data flow between children -> provenance: code excerpts and claims tied to lines -> the torch.nn classes the modules
are (for the reference pages) -> a checkpoint reconciled with the code, when one is given.
"""

from __future__ import annotations

from dataclasses import replace

from atlas import progress
from atlas.analyse import data_flow
from atlas.analyse.architecture.experts import with_experts
from atlas.analyse.architecture.roles import with_roles
from atlas.analyse.architecture.traits import with_architecture
from atlas.analyse.cost.component_costs import with_costs
from atlas.analyse.equations.derive import with_equations
from atlas.analyse.equations.io_symbols import with_io_symbols
from atlas.analyse.provenance.claims import with_provenance
from atlas.analyse.reference import class_uses
from atlas.document import ModelDoc
from atlas.document import input_specs as inputs_mod
from atlas.load.hooks import hooks_of
from atlas.load.settings import Settings


def analyse(model, doc: ModelDoc, trace, settings: Settings, listing=None) -> ModelDoc:
    """The document with every analysis in it. `listing`: a checkpoint's tensors (atlas.load.checkpoint_listing)."""
    if settings.cost:
        doc = with_costs(model, doc, trace, dict(settings.fixed_dims))
    doc = with_roles(model, with_experts(with_io_symbols(equations(model, doc, trace, settings))))
    doc = data_flow.with_flow(with_architecture(model, doc, trace), trace)
    with progress.stage("provenance") as bar:
        doc = with_provenance(model, doc, settings.repo_url)
        bar.update()
    doc = replace(doc, class_uses=class_uses.record(model, doc))
    if listing is not None:
        from atlas.analyse import checkpoint_reconcile
        with progress.stage("checkpoint") as bar:
            doc = replace(doc, checkpoint=checkpoint_reconcile.reconcile(model, doc, listing))
            bar.update()
    return doc


def equations(model, doc: ModelDoc, trace, settings: Settings) -> ModelDoc:
    """Every component's equations, verified against forward() unless the settings say not to."""
    hooks = hooks_of(model)
    vocab = inputs_mod.vocabulary(hooks.dims, hooks.fixed_dims)
    with progress.stage("equations", len(doc.components)) as bar:
        return with_equations(model, doc, trace, vocab, settings.budget_bytes, bar.update, settings.verify)
