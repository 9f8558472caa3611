"""The math symbols of a component's inputs and outputs, as the outermost equations that call it name them.

A LayerNorm inside an MLP inside an encoder block is called in the block's steps as ū′_n = LayerNorm(u′_n): its
page's in/out lines then say u′_n → ū′_n, as a paper does, and the reader follows one name from page to page.
The names come from the steps a page prints (the paper view where there is one), so a name on a child's page is
always a name its ancestor's page shows for the same value. Where no ancestor's steps name a tensor (the model, a
loop's body, an argument computed inside the call), the component's own steps name it: each input by its forward()
parameter, the one output as the last step's value.
"""

from __future__ import annotations

from dataclasses import replace

from atlas.document import ModelDoc
from atlas.document.math_tree import Equation, Ref

_VALUES = ("input", "value")


def with_io_symbols(doc: ModelDoc) -> ModelDoc:
    by_id = {c.id: c for c in doc.components}
    out = []
    for comp in doc.components:
        shapes = comp.shapes
        if shapes is not None:
            for names in (_own(comp, shapes), _called_as(comp, by_id) if comp.parent is not None else None):
                if names is not None:       # the caller's names over the component's own, tensor by tensor
                    shapes = replace(shapes, inputs=_named(shapes.inputs, names[0]),
                                     outputs=_named(shapes.outputs, names[1]))
            comp = replace(comp, shapes=shapes)
        out.append(comp)
    return replace(doc, components=tuple(out))


def _named(tensors, symbols):
    if len(symbols) != len(tensors):
        return tensors
    return tuple(t if s is None else replace(t, math=s) for t, s in zip(tensors, symbols))


def _own(comp, shapes):
    """The names the component's own equations give its inputs (by forward() parameter) and its one output (the
    last step's value), where no ancestor's equations call it."""
    eq = comp.equations
    if eq is None or not eq.steps:
        return None
    symbols = {s.key: s for s in eq.symbols}
    ins = tuple(symbols[f"in.{t.name}"].name if f"in.{t.name}" in symbols else None for t in shapes.inputs)
    last = symbols.get(eq.steps[-1].defines)
    outs = (last.name,) if last is not None and last.kind == "value" and len(shapes.outputs) == 1 else \
        (None,) * len(shapes.outputs)
    return ins, outs


def _ancestors(comp, by_id):
    """Outermost first."""
    chain, parent = [], comp.parent
    while parent is not None and parent in by_id:
        chain.append(by_id[parent])
        parent = by_id[parent].parent
    return reversed(chain)


def _called_as(comp, by_id):
    for anc in _ancestors(comp, by_id):
        eq = anc.equations
        if eq is None:
            continue
        steps = eq.paper.steps if eq.paper is not None and eq.paper.steps else eq.steps
        # a step that is one call, y = f(x, …), its result one symbol: a loop's form (u_{n+1} = f_n(u_n, h)) names
        # its inputs otherwise than in the order of the call's parameters
        calls = [s for s in steps if s.links == (comp.id,) and isinstance(s.formula, Equation)
                 and isinstance(s.formula.lhs, Ref)]
        if len(calls) != 1:             # not called here, or called twice: names would not say which call
            continue
        symbols = {s.key: s for s in eq.symbols}
        step = calls[0]
        args = [k for k in dict.fromkeys(step.formula.rhs.refs()) if k in symbols and symbols[k].kind in _VALUES]
        result = [k for k in step.formula.lhs.refs() if k in symbols and symbols[k].kind in _VALUES]
        # a symbol inside an argument (k in k^h) is not the argument: its shape says so
        shapes = {s.defines: s.shape for s in steps if s.defines} | _input_shapes(anc)
        ins = [symbols[k].name if _fits(shapes.get(k), t) else None for k, t in zip(args, comp.shapes.inputs)]
        outs = [symbols[k].name if _fits(shapes.get(k), t) else None for k, t in zip(result, comp.shapes.outputs)]
        return (tuple(ins), tuple(outs)) if len(args) == len(comp.shapes.inputs) else ((), tuple(outs))
    return None


def _input_shapes(comp) -> dict:
    return {} if comp.shapes is None else {f"in.{t.name}": t.dims for t in comp.shapes.inputs}


def _fits(dims, tensor) -> bool:
    """Whether a symbol's value has the tensor's shape, size for size."""
    if not dims or len(dims) != len(tensor.dims):
        return False
    return all((a.value, a.symbol) == (b.value, b.symbol) for a, b in zip(dims, tensor.dims))
