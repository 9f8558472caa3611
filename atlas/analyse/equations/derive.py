"""Equations for every component of a ModelDoc: build from the record, name, print, verify.

A component's equations come from the recorded call of its first instance: the author's
`atlas_equations` where given, the registry for torch.nn leaves, and otherwise what its forward() ran.
With `run`, each is checked against the real forward(); a mismatch, or equations that do not run, fail
the whole build (`EquationMismatch`), naming every component concerned.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from torch import nn

from atlas.analyse.equations import leaves, naming, scalars
from atlas.analyse.equations.build import Builder
from atlas.analyse.equations.leaves import Unsupported
from atlas.analyse.equations.nodes import Sym
from atlas.analyse.equations.ops_nn import Loop
from atlas.analyse.equations.present import present
from atlas.analyse.equations.program import Program, Step
from atlas.analyse.equations.select import select
from atlas.analyse.paper.context import Context
from atlas.analyse.paper.view import Rewritten, paper_program
from atlas.document import Component, Equations, EquationStatus, ModelDoc, PaperView, ShapeStatus
from atlas.document.expressions import symbol_names
from atlas.errors import AtlasError
from atlas.extract.trace import direct_calls
from atlas.extract.trace.call_shapes import first_call_of, record_of
from atlas.extract.trace.structures import refs
from atlas.i18n import msg
from atlas.load.hooks import hooks_of
from atlas.load.memory import DEFAULT_BUDGET_BYTES

log = logging.getLogger("atlas")
_looped: dict = {}          # component id -> ids of the components its steps run as a chain (a loop over blocks)


class EquationMismatch(AtlasError):
    """Equations that disagree with forward(), or do not run: the build fails with exit code 1."""

    def __init__(self, message: str, doc: ModelDoc | None = None) -> None:
        super().__init__(message)
        self.doc = doc                  # every component's equations, the failing ones included


def leaf_program(module: nn.Module, call) -> tuple[Program, dict]:
    """A torch.nn leaf's own page: the registry's lines on its inputs, then y; and the recorded value of each input."""
    b = Builder(call, module)
    b._inputs()
    prog = b.d.prog
    prog.leaf = True
    # every tensor argument in forward()'s order, the same tensor as often as it is passed (query, key and value
    # of a self-attention), as a parent's call gives them; not each distinct tensor once, which would put a mask in
    # the place of the keys
    given = [r.value for r in refs(list(call.args) + list(call.kwargs.values()))]
    ins = [b.d.env[v.id] for v in given if v.id in b.d.env]
    shapes = [r.value.shape for r in refs(list(call.args))]
    named = leaves.named_arguments(module, call.args, call.kwargs, lambda r: b.d.env.get(r.value.id))
    leaf = leaves.build(module, prog, "", ins, None, shapes, named)
    prog.summary = leaf.summary
    for st in leaf.steps:
        prog.steps.append(st)
    outs = list(leaf.out) if isinstance(leaf.out, tuple) else [leaf.out]
    if isinstance(leaf.out, tuple) and isinstance(call.out, tuple) and len(call.out) == len(outs):
        outs = [o for o, rec in zip(outs, call.out) if rec is not None]     # need_weights=False: (out, None)
    if isinstance(module, nn.RNNBase):          # a recurrent layer's cell: its lines, run inside its scan
        from atlas.analyse.equations.recurrent import Scan
        for node in outs:
            scan = node.args[0] if isinstance(node.args[0], Scan) else None
            if scan is not None:
                for key, cell in scan.meta["cell"]:
                    if not any(s.key == key for s in prog.steps):
                        prog.steps.append(Step(key, cell))
                        prog.symbols[key].in_scan = True
    for i, node in enumerate(outs):
        key = "v.y" if len(outs) == 1 else f"v.y{i + 1}"
        prog.add(key, "value", base="y" if len(outs) == 1 else f"y_{i + 1}", output=True)
        prog.steps.append(Step(key, node))
        prog.outputs.append(Sym(key))
    return prog, b.d.inputs


def program_for(module: nn.Module, comp: Component, call, title_of=None, chained: bool = False,
                model: nn.Module | None = None) -> tuple[Program, EquationStatus, Rewritten | None]:
    """The component's op program, named, with its paper view (named with it: one name per value on the page);
    no paper view for equations the model's author wrote."""
    lines = hooks_of(module).equations
    dims = _dim_symbols(comp)
    if lines:
        from atlas.analyse.equations import override
        names = [t.name for t in comp.shapes.inputs]
        prog = override.program(module, lines, names)
        naming.name(prog, reserved=dims)
        return prog, EquationStatus.OVERRIDE, None
    if leaves.builder_for(module) is not None:       # written as a paper prints it: only its idioms are read
        prog, origins = leaf_program(module, call)
        paper = replace(paper_program(prog, Context(module, model, origins)), changed=False)
        naming.name(prog, reserved=dims)
        return prog, EquationStatus.DERIVED, paper
    b = Builder(call, module, title_of)
    draft = b.build()
    select(draft)
    carried = _carried(comp, draft) if chained else None
    paper = paper_program(draft.prog, Context(module, model, draft.inputs))
    naming.name(draft.prog, draft, carried, reserved=dims)
    return draft.prog, EquationStatus.DERIVED, paper


def _dim_symbols(comp: Component) -> tuple[str, ...]:
    """The symbols the component's shapes are written in (B, T): the page's names for sizes, taken by nothing else."""
    texts = [d.symbol or "" for t in (*comp.shapes.inputs, *comp.shapes.outputs) for d in t.dims]
    return tuple(dict.fromkeys(n for text in texts for n in symbol_names(text)))


def _carried(comp: Component, draft) -> str | None:
    """In a block that is one of N, run one after another, the input it passes on: the first input shaped like
    its one output."""
    if comp.repeat < 2 or len(draft.output_values) != 1:
        return None
    out_shape = draft.output_values[0].shape
    for key, value in draft.inputs.items():
        if value.shape == out_shape:
            return key
    return None


def equations_for(module: nn.Module, comp: Component, trace, link_ids, vocab, budget_bytes: int,
                  run: bool = True, title_of=None, chained: bool = False,
                  model: nn.Module | None = None) -> tuple[Equations, str]:
    """The component's equations, and its summary sentence (a leaf's comes from the registry)."""
    if comp.shapes is None or comp.shapes.status is not ShapeStatus.DERIVED:
        why = comp.shapes.reason if comp.shapes else msg("no shapes")
        return Equations(EquationStatus.NOT_DERIVED,
                         reason=msg("no example inputs reach this component (%(why)s)", why=why)), comp.summary
    if not direct_calls.hookable(module):
        return Equations(EquationStatus.NOT_DERIVED, reason=msg(
            "a TorchScript module (torch.jit.script): its forward() runs in TorchScript's interpreter, which shows "
            "the atlas none of its code; its parameters are counted, and its equations are not derived")), comp.summary
    call = first_call_of(trace, None, comp.path, module) if trace is not None else None
    if call is None:
        return Equations(EquationStatus.NOT_DERIVED, reason=msg("the record has no complete call of this component")), \
            comp.summary
    try:
        prog, status, paper = program_for(module, comp, call, title_of, chained, model)
    except Unsupported as exc:
        return Equations(EquationStatus.NOT_DERIVED, reason=exc.reason), comp.summary
    sentence = prog.summary if prog.summary and not hooks_of(module).summary else comp.summary
    base = comp.path
    link = lambda rel: link_ids.get(f"{base}.{rel}" if base else rel)     # noqa: E731
    eq = present(prog, status, vocab, link)
    if paper is not None:
        eq = replace(eq, idioms=paper.idioms)
    _looped[comp.id] = {link_ids.get(f"{base}.{st.node.meta['link']}" if base else st.node.meta["link"])
                        for st in prog.steps if isinstance(st.node, Loop)}
    # a paper view where no kernel-level operation is left: the rewritten steps, or the op steps themselves
    rewritten = paper is not None and not paper.kernel and paper.changed
    if paper is not None and paper.kernel:
        log.debug("%s: no paper view: the steps still compute with %s", comp.id or "(model)", ", ".join(paper.kernel))
    same = paper is not None and not paper.kernel and not paper.changed
    shown = present(paper.program, status, vocab, link) if rewritten else None
    if not run:
        return _with_paper(eq, shown, None, same), sentence
    from atlas.analyse.equations.verify import verify_both  # the check's machinery, for the runs that check
    rec = record_of(trace, comp.path)
    check, paper_check = verify_both(module, prog, paper.program if rewritten else None, call, rec.hints,
                                     budget_bytes, working=rec.dtype, assumed=rec.assumed)
    eq = replace(eq, verification=check)
    if rewritten and not paper_check.verified and check.verified:
        log.warning("%s: the paper view is left out: %s", comp.id or "(model)", paper_check.reason)
        return eq, sentence
    return _with_paper(eq, shown, paper_check if rewritten else check, same), sentence


def _with_paper(eq: Equations, paper: Equations | None, check, same: bool) -> Equations:
    """The op view with its paper view, where there is one: the rewritten steps (`paper`), or the op steps themselves
    (`same`). The page's symbols are those either view names."""
    if same:
        return replace(eq, paper=PaperView(verification=check, same=True))
    if paper is None:
        return eq
    known = {s.key for s in eq.symbols}
    symbols = eq.symbols + tuple(s for s in paper.symbols if s.key not in known)
    return replace(eq, symbols=symbols,
                   paper=PaperView(paper.summary, paper.steps, paper.constants, paper.notations, check))


def with_equations(model: nn.Module, doc: ModelDoc, trace, vocab, budget_bytes: int = DEFAULT_BUDGET_BYTES, tick=None,
           run: bool = True) -> ModelDoc:
    """Derive every component's equations; with `run`, also check them against forward()."""
    link_ids = {path: c.id for c in doc.components for path in c.module_paths}
    names = {path: c.name for c in doc.components for path in c.module_paths}
    out, failures, chained = [], [], set()
    start = time.perf_counter()
    with scalars.one_pass():
        for comp in doc.components:             # parents first: a loop in the parent says its blocks are chained
            module = model.get_submodule(comp.path)
            equations, sentence = equations_for(module, comp, trace, link_ids, vocab, budget_bytes, run, names.get,
                                                comp.id in chained, model)
            chained.update(_looped.pop(comp.id, ()))
            v = equations.verification
            if v is not None and v.mismatch:
                failures.append(f"{comp.id or '(model)'}: {v.reason}")
            out.append(replace(comp, equations=equations, summary=sentence))
            if tick is not None:
                tick()
    log.info("%s: equations for %d components in %.1f s", doc.name, len(out), time.perf_counter() - start)
    doc = replace(doc, components=tuple(out))
    if failures:
        raise EquationMismatch(f"{doc.name}: the equations of {len(failures)} component(s) do not reproduce "
                               "forward(): " + "; ".join(str(f) for f in failures), doc)
    return doc
