"""Equations for every component of a ModelDoc: derive, print, verify."""

from __future__ import annotations

import logging
import time

import sympy
from dataclasses import replace

from torch import nn

from atlas.equations import leaves, ops, override
from atlas.equations.derive import derive
from atlas.equations.leaves import Unsupported
from atlas.equations.program import Loop, Program
from atlas.equations.verify import verify
from atlas.errors import AtlasError
from atlas.i18n import msg
from atlas.model import Component, EquationStatus, Equations, ModelDoc, ShapeStatus, Step

log = logging.getLogger("atlas")
DEFAULT_BUDGET_BYTES = 2 * 1024**3


def program_for(module: nn.Module, comp: Component) -> tuple[Program, EquationStatus]:
    dims = {t.name: tuple(d.value for d in t.dims) for t in comp.shapes.inputs} if comp.shapes else {}
    lines = getattr(type(module), "atlas_equations", None)
    if lines:
        return override.program(module, lines, list(dims)), EquationStatus.OVERRIDE
    return derive(module, dims), EquationStatus.DERIVED


def _link_ids(doc: ModelDoc) -> dict[str, str]:
    return {path: c.id for c in doc.components for path in c.module_paths}


def _links(prog: Program, stmt, base: str, by_path: dict[str, str], module: nn.Module) -> tuple[str, ...]:
    """The child components a step calls, in the order they appear in it (never a set's order)."""
    paths = []
    if isinstance(stmt.expr, Loop):
        seq = module.get_submodule(stmt.link)
        paths.append(f"{stmt.link}.{next(iter(seq._modules))}")
    elif isinstance(stmt.expr, sympy.Basic):
        for node in sympy.preorder_traversal(stmt.expr):
            b = prog.bindings.get(node) if isinstance(node, sympy.Symbol) else None
            if b is not None and b.kind == "module":
                paths.append(b.path)
    out = []
    for rel in paths:
        full = f"{base}.{rel}" if base else rel
        if full in by_path and by_path[full] not in out:
            out.append(by_path[full])
    return tuple(out)


def _tex(prog: Program, stmt) -> str:
    if isinstance(stmt.expr, Loop):
        return stmt.lhs
    lhs = stmt.lhs or ops.symbol_tex(prog.names[stmt.target])
    return f"{lhs} = {prog.tex(stmt.expr)}"


def equations_for(module: nn.Module, comp: Component, by_path: dict[str, str],
                  budget_bytes: int, run: bool = True) -> tuple[Equations, str]:
    """The component's equations, and its summary sentence (a leaf's comes from the registry)."""
    if comp.shapes is None or comp.shapes.status is not ShapeStatus.DERIVED:
        why = comp.shapes.reason if comp.shapes else msg("no shapes")
        return Equations(EquationStatus.NOT_DERIVED,
                         reason=msg("no example inputs reach this component (%(why)s)", why=why)), comp.summary
    try:
        prog, status = program_for(module, comp)
    except Unsupported as exc:
        return Equations(EquationStatus.NOT_DERIVED, reason=exc.reason), comp.summary
    sentence = prog.summary if prog.summary and not getattr(module, "atlas_summary", None) else comp.summary
    base = comp.module_paths[0]
    shown = [s for s in prog.stmts if s.shown]
    steps = tuple(Step(_tex(prog, s), s.section, _links(prog, s, base, by_path, module)) for s in shown)
    is_leaf = leaves.builder_for(module) is not None and status is EquationStatus.DERIVED
    own = [st for s, st in zip(shown, steps) if s.section is None and not _is_const(s)]
    summary = tuple(st.tex for st in (steps if is_leaf else own if len(own) <= 3 else own[-2:]))
    if not run:
        return Equations(status, summary, steps, is_leaf, None, None, _residuals(prog), _normalizes(prog)), sentence
    check = verify(module, prog, comp.shapes, budget_bytes)
    if not check.verified and check.max_error is not None:
        raise AtlasError(f"{comp.id or '(model)'}: the equations do not reproduce forward(): "
                         f"max error {check.max_error:.3g} over tolerance {check.tolerance:g}")
    if not check.verified and check.reason and check.reason.startswith("the equations"):
        return Equations(EquationStatus.NOT_DERIVED, reason=check.reason), sentence
    return Equations(status, summary, steps, is_leaf, None, check, _residuals(prog), _normalizes(prog)), sentence


def _residuals(prog: Program) -> int:
    """Own steps x' = x + f(...), where x is an input or an earlier step and f calls a child or a section."""
    known = set(prog.bindings)
    count = 0
    for stmt in prog.stmts:
        if stmt.section is None and isinstance(stmt.expr, ops.Add):
            base, branch = stmt.expr.args
            from_section = any(s.target == branch and s.section for s in prog.stmts)
            if base in known and (from_section or _calls_child(prog, branch)):
                count += 1
        if stmt.target is not None:
            known.add(stmt.target)
    return count


def _normalizes(prog: Program) -> bool:
    """Whether the steps divide by a 2-norm, or by the square root of a mean (a variance)."""
    for stmt in prog.stmts:
        if not isinstance(stmt.expr, sympy.Basic):
            continue
        for node in sympy.preorder_traversal(stmt.expr):
            if isinstance(node, ops.Norm2):
                return True
            if isinstance(node, ops.Div) and isinstance(node.args[1], ops.Sqrt):
                inner = node.args[1].args[0]
                means = [n for n in sympy.preorder_traversal(inner) if isinstance(n, (ops.Mean, sympy.Symbol))]
                if any(isinstance(n, ops.Mean) or _defined_by_mean(prog, n) for n in means):
                    return True
    return False


def _defined_by_mean(prog: Program, sym) -> bool:
    return any(s.target == sym and isinstance(s.expr, ops.Mean) for s in prog.stmts)


def _calls_child(prog: Program, expr) -> bool:
    if not isinstance(expr, sympy.Basic):
        return False
    return any(isinstance(n, sympy.Symbol) and getattr(prog.bindings.get(n), "kind", None) == "module"
               for n in sympy.preorder_traversal(expr))


def _is_const(stmt) -> bool:
    import sympy
    return isinstance(stmt.expr, sympy.Number)


def enrich(model: nn.Module, doc: ModelDoc, budget_bytes: int = DEFAULT_BUDGET_BYTES, tick=None,
           run: bool = True) -> ModelDoc:
    """Derive every component's equations; with `run`, also check them against forward()."""
    by_path = _link_ids(doc)
    out = []
    start = time.perf_counter()
    for comp in doc.components:
        module = model.get_submodule(comp.module_paths[0])
        equations, sentence = equations_for(module, comp, by_path, budget_bytes, run)
        out.append(replace(comp, equations=equations, summary=sentence))
        if tick is not None:
            tick()
    log.info("%s: equations for %d components in %.1f s", doc.name, len(out), time.perf_counter() - start)
    return replace(doc, components=tuple(out))
