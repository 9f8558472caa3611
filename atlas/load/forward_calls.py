"""Calling a module's forward(): its parameters, a call's arguments bound to their names, example inputs passed by
name or in order, and evaluation mode for the run.

Every stage that runs a model or reads a recorded call names its arguments here, the same way: a parameter by its
name, each item of *args as `name[i]`, each item of **kwargs by its own key.
"""

from __future__ import annotations

import contextlib
import inspect


def parameters(module, method: str | None = None) -> dict[str, inspect.Parameter]:
    """forward()'s parameters by name (or those of the method given: `get_bias`, called instead of forward()); none
    where it has no signature Python can read."""
    try:
        return dict(inspect.signature(getattr(module, method or "forward")).parameters)
    except (TypeError, ValueError):
        return {}


def bind(module, args, kwargs, spread: bool = True, method: str | None = None) -> dict:
    """A call's arguments by forward()'s parameter names (or the method's); with `spread`, *args as name[i] and
    **kwargs by their own keys, else as the tuple and dict they were passed as. Raises TypeError where the call does
    not fit."""
    sig = inspect.signature(getattr(module, method or "forward"))
    bound = sig.bind(*args, **kwargs)
    if not spread:
        return dict(bound.arguments)
    out = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out.update({f"{name}[{i}]": v for i, v in enumerate(value)})
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:
            out[name] = value
    return out


def bind_or_list(module, args, kwargs, method: str | None = None) -> dict:
    """As bind(), and where the call does not fit the signature (or there is none), by position: args[i], and
    keyword arguments by their keys."""
    try:
        return bind(module, args, kwargs, method=method)
    except (TypeError, ValueError):
        return {**{f"args[{i}]": a for i, a in enumerate(args)}, **kwargs}


def by_name(module, names) -> bool:
    """Whether example inputs with these names are passed by name: every name is a parameter of forward().
    Otherwise the names are labels only, and the inputs are passed in the order given."""
    params = parameters(module)
    return all(name in params for name in names)


def call(module, inputs: dict):
    """forward() on example inputs: by name where every name is a parameter, else in the order given."""
    if by_name(module, inputs):
        return module(**inputs)
    return module(*inputs.values())


def missing(module, names) -> list[str]:
    """The required parameters of forward() that example inputs with these names leave without a value."""
    params = parameters(module)
    required = [p for p in params.values() if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if by_name(module, names):
        return [p.name for p in required if p.name not in names]
    return [p.name for p in required[len(names):]] + [p.name for p in required[:len(names)] if p.kind is p.KEYWORD_ONLY]


@contextlib.contextmanager
def evaluation(model):
    """The model in evaluation mode (dropout off, running statistics) for a run; then every module's own mode again,
    as it was: a model may hold parts in training mode on purpose."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training
