"""Named symbolic shapes for every component, from forwards with a hook on every module.

The model runs on the meta device (no memory for weights or activations) at three
probe sizes of its input symbols. A dim that stays put is fixed; one that moves
is fitted to an expression in the symbols (T, 2*T, T/2, B*T, T + 1) with sympy.
Where the meta forward fails, a tiny CPU forward is tried if the model fits the
memory budget; where that fails too, every page says why its shapes are missing.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import replace

from torch import nn

from atlas.document import DimNames, ModelDoc, Shapes, ShapeStatus
from atlas.document import input_specs as inputs_mod
from atlas.errors import where
from atlas.extract.method_uses import not_called_reason
from atlas.extract.probes.probe_runs import checked_runs, cpu_copy, meta_runs, run_probes, shape_of
from atlas.extract.probes.probe_sizes import PROBE_VALUES, probe_sizes
from atlas.i18n import msg
from atlas.load.forward_calls import parameters
from atlas.load.hooks import hooks_of
from atlas.load.memory import DEFAULT_BUDGET_BYTES

log = logging.getLogger("atlas")



def derive(model: nn.Module, doc: ModelDoc, declared: list[str] | None = None,
           budget_bytes: int = DEFAULT_BUDGET_BYTES, limits: dict | None = None) -> ModelDoc:
    """Return the doc with shapes on every component, from concrete probes (within `limits`, see probe_sizes)
    and fitting."""
    hooks = hooks_of(model)
    vocab = inputs_mod.vocabulary(hooks.dims, hooks.fixed_dims)
    texts = list(declared or hooks.inputs or ())
    dim_names = DimNames(vocab.symbols, vocab.fixed)
    if not texts:
        return _all(doc, Shapes(ShapeStatus.NOT_DERIVED, reason=msg(
            "no example inputs: the model declares no atlas_inputs and none were given with --input")),
            dim_names, ())
    specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in texts], vocab)
    probes = probe_sizes(symbols, limits)
    target, method, note = model, "meta", None
    try:
        runs = meta_runs(model, specs, probes, doc)
    except Exception as meta_exc:
        note = msg("the meta-device forward failed (%(error)s), so a tiny CPU forward was run", error=where(meta_exc))
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        if size > budget_bytes:
            return _all(doc, Shapes(ShapeStatus.NOT_DERIVED, reason=msg(
                "the meta-device forward failed (%(error)s) and the model's %(size)s bytes of "
                "parameters exceed the %(budget)s-byte budget for a CPU forward",
                error=where(meta_exc), size=size, budget=budget_bytes)), dim_names, tuple(texts))
        try:
            target, method = cpu_copy(model), "cpu"
            runs = run_probes(target, specs, probes, "cpu")
        except Exception as cpu_exc:
            return _all(doc, Shapes(ShapeStatus.NOT_DERIVED, reason=msg(
                "the meta-device forward failed (%(error)s); the CPU forward failed too (%(cpu_error)s)",
                error=where(meta_exc), cpu_error=where(cpu_exc))), dim_names, tuple(texts))
    checked = checked_runs(target, specs, probes, method, doc, limits)
    comps = []
    for comp in doc.components:
        module = target.get_submodule(comp.path)
        recs = [run.get(id(module)) for run in runs]
        seen = [(sizes, run[id(module)]) for sizes, run in checked if id(module) in run]
        own = hooks_of(module).inputs or leaf_inputs(module)
        if all(r is None for r in recs) and own and module is not target:
            recs = _own_probes(module, own, vocab, method)
        if all(r is None for r in recs):
            shapes = Shapes(ShapeStatus.NOT_CALLED, method=method, reason=not_called_reason(target, comp.path))
        elif any(r is None for r in recs):
            shapes = Shapes(ShapeStatus.NOT_DERIVED, method=method, reason=msg("called for some input sizes only"))
        else:
            ins = shape_of([r[0] for r in recs], probes, vocab, [(sizes, r[0]) for sizes, r in seen])
            outs = shape_of([r[1] for r in recs], probes, vocab, [(sizes, r[1]) for sizes, r in seen])
            if ins is None or outs is None:
                shapes = Shapes(ShapeStatus.NOT_DERIVED, method=method,
                                reason=msg("its inputs or outputs change structure with the input size"))
            else:
                called = next((r[2] for r in recs if len(r) > 2), None)     # `get_bias`, not forward()
                shapes = Shapes(ShapeStatus.DERIVED, ins, outs, method, note, called_as=called)
        comps.append(replace(comp, shapes=shapes))
    return replace(doc, components=tuple(comps), dims=dim_names, inputs=tuple(texts))


def leaf_inputs(module: nn.Module) -> tuple[str, ...] | None:
    """Example inputs a leaf implies by its own sizes, for a leaf the model never calls itself (MultiheadAttention's
    out_proj, a convolution whose weight the parent applies directly, an activation on an unused branch)."""
    if isinstance(module, nn.Linear):
        return (f"input:float32[B,T,{module.in_features}]",)
    if isinstance(module, (nn.LayerNorm, nn.RMSNorm)) and len(module.normalized_shape) == 1:
        return (f"input:float32[B,T,{module.normalized_shape[0]}]",)
    if isinstance(module, nn.Embedding):
        return ("input:int64[B,T]",)
    if isinstance(module, nn.Conv1d):
        return (f"input:float32[B,{module.in_channels},T]",)
    if isinstance(module, nn.Conv2d):
        return (f"input:float32[B,{module.in_channels},H,W]",)
    if not any(True for _ in module.parameters()) and not any(True for _ in module.children()) \
            and not isinstance(module, (nn.Sequential, nn.ModuleList, nn.ModuleDict)):    # an empty one: nothing
        params = [p for p in parameters(module).values()
                  if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if len(params) == 1:                        # a parameter-free leaf of one tensor: an activation
            return (f"{params[0].name}:float32[B,T]",)
    return None


def _own_probes(module: nn.Module, texts, vocab, method: str) -> list:
    """A component the model's forward() never calls, probed with example inputs of its own."""
    try:
        specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in texts], vocab)
        return [run.get(id(module)) for run in run_probes(module, specs, probe_sizes(symbols), method)]
    except Exception:  # the component keeps its "not called" note
        return [None] * len(PROBE_VALUES[0])


def _all(doc: ModelDoc, shapes: Shapes, dim_names: DimNames, texts: tuple[str, ...]) -> ModelDoc:
    return replace(doc, components=tuple(replace(c, shapes=shapes) for c in doc.components),
                   dims=dim_names, inputs=texts)
