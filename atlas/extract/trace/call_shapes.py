"""Every component's input and output shapes, read from the first call of its first instance in a record."""

from __future__ import annotations

import sympy
from torch import nn

from atlas.document import Dim, Shapes, ShapeStatus, TensorShape
from atlas.document.input_specs import DATA_DECIDED, Vocabulary
from atlas.extract.trace.branch_sizes import on_branch
from atlas.extract.trace.structures import Call, Ref, Trace
from atlas.load.forward_calls import bind_or_list


def dim(size, vocab: Vocabulary) -> Dim:
    """An int, or an expression in the input symbols named by the symbols it uses."""
    if isinstance(size, int):
        return Dim(value=size)
    if isinstance(size, sympy.Basic) and size.is_Integer:
        return Dim(value=int(size))
    names = [str(s) for s in sorted(size.free_symbols, key=str)] if isinstance(size, sympy.Basic) else []
    order = [s for s, _ in vocab.symbols]
    names.sort(key=lambda s: order.index(s) if s in order else len(order))
    return Dim(symbol=str(size), name=dim_name(names, vocab))


def dim_name(symbols: list[str], vocab: Vocabulary) -> str:
    """The words for a dim's symbols ("batch × positions"); "" where none has a name (a symbol of the user's own,
    `--input x:float32[N,16]`: the page then prints N, not "N N")."""
    words = [vocab.symbol_name(s) or (DATA_DECIDED if decided_by_data(s) else None) for s in symbols]
    return " × ".join(w or s for w, s in zip(words, symbols)) if any(words) else ""


def decided_by_data(symbol: str) -> bool:
    """torch's name for a size the data decides: u0, u1 (a count of routed tokens, of a mask's true values)."""
    return symbol[:1] == "u" and symbol[1:].isdigit()


def tensors(name: str, x) -> list[tuple[str, object]]:
    """Recorded tensors inside an argument or a result, element by element: x, x[0], x['key']."""
    if isinstance(x, Ref):
        return [(name, x.value)] if x.value.shape is not None else []
    if isinstance(x, (tuple, list)):
        return [t for i, v in enumerate(x) for t in tensors(f"{name}[{i}]", v)]
    if isinstance(x, dict):
        return [t for k, v in x.items() for t in tensors(f"{name}[{k!r}]", v)]
    return []


def named_inputs(call: Call) -> list[tuple[str, object]]:
    """The call's tensors, named by the forward() parameter they were passed as."""
    named = bind_or_list(call.module, call.args, call.kwargs, call.method)
    return [t for name, value in named.items() for t in tensors(name, value)]


def _shape(name: str, value, vocab: Vocabulary, multiples: dict) -> TensorShape:
    return TensorShape(name, tuple(dim(on_branch(s, multiples), vocab) for s in value.shape), value.dtype)


def of_call(call: Call, vocab: Vocabulary, method: str, note=None, multiples: dict | None = None) -> Shapes:
    """The call's shapes; `multiples`: {symbol: m} where the record's branch holds for multiples of m only, each
    size written as that branch has it (atlas.extract.trace.branch_sizes)."""
    ins = tuple(_shape(n, v, vocab, multiples or {}) for n, v in named_inputs(call))
    outs = tuple(_shape(n, v, vocab, multiples or {}) for n, v in tensors("output", call.out))
    return Shapes(ShapeStatus.DERIVED, ins, outs, method, note, called_as=call.method)


def record_of(trace: Trace, path: str) -> Trace:
    """The record a component's first call is in: the model's, or the component's own."""
    return trace.extra.get(path, trace)


def first_call_of(trace: Trace, model: nn.Module, path: str, module: nn.Module | None = None) -> Call | None:
    """The first complete call of the module at `path` (given, or looked up in `model`), under that path or, for a
    module registered twice, under its other one."""
    if path in trace.extra:
        own = trace.extra[path]
        return own.root if own.root is not None and own.root.failed is None and own.root.out is not None else None
    calls = getattr(trace, "_first", None)
    if calls is None:
        calls = trace.first_calls()
        trace._first = calls
    call = calls.get(path)
    if call is None and module is None and model is not None and path:
        try:
            module = model.get_submodule(path)
        except AttributeError:
            module = None
    if call is None and module is not None:             # a module registered twice, called under its other name
        call = next((c for c in calls.values() if c.module is module), None)
        if call is not None and call.skipped:           # a repeated entry: the call of the first, which it repeats
            call = call.repeats
    return call if call is not None and call.failed is None and call.out is not None else None
