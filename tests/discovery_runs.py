"""Forwards on discovered inputs, on the meta device or on fake tensors with symbolic sizes: what the tests of
input discovery (and bench/hf_suite_report.py) run to see which discovered inputs a model takes, apart from the
recorder. Every symbolic dim gets its own backed symbol with a distinct hint, so output sizes come back as
expressions in the input symbols, and every guard the code takes on a size is counted."""

from __future__ import annotations

import contextlib
import itertools
import time
from dataclasses import dataclass

import sympy
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.utils._sympy.numbers import int_oo

from atlas.document.input_specs import parse_input
from atlas.errors import where
from atlas.extract.discover.discovery import Discovery, discover
from atlas.extract.record.escalation import dtype_error, escalate
from atlas.extract.trace.shape_env import AssumingShapeEnv as _ShapeEnv
from atlas.extract.trace.shape_env import Decompose as _Decompose
from atlas.extract.trace.shape_env import guard_site
from atlas.extract.trace.shape_env import quiet as _quiet
from atlas.load import code_caches
from atlas.load.forward_calls import evaluation
from atlas.load.module_copy import deep_copy


@dataclass(frozen=True)
class Outcome:
    ok: bool
    mode: str                                         # "meta" or "fake"
    texts: tuple[str, ...]
    dtype: str
    sizes: tuple[tuple[str, int], ...]                # the size (hint) given to each symbol
    outputs: tuple[tuple[str, tuple[str, ...]], ...] = ()   # name -> dims: ints, or expressions in the symbols
    error: str | None = None
    seconds: float = 0.0
    guards: int = 0
    ranges: tuple[str, ...] = ()                      # "4 <= T <= 256": where guards narrowed a symbol
    specialized: tuple[str, ...] = ()                 # "T = 17 (modeling_mamba.py:261)"
    assumed: tuple[str, ...] = ()                     # "u0 = 2 (.item() at modeling_x.py:12)"
    decomposed: tuple[str, ...] = ()                  # ops run through their Python decomposition


def _flatten(name: str, value) -> list[tuple[str, torch.Tensor]]:
    """Output tensors by name: `output`, `output[0]`, and a dict's (ModelOutput's) keys as they are."""
    if isinstance(value, torch.Tensor):
        return [(name or "output", value)]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _flatten(f"{name}[{k!r}]" if name else str(k), v)]
    if isinstance(value, (tuple, list)):
        return [t for i, v in enumerate(value) for t in _flatten(f"{name or 'output'}[{i}]", v)]
    return []


def _device(model: nn.Module) -> torch.device:
    """Where most of the model's tensors are (wav2vec2 built under the meta device keeps one on the CPU:
    `masked_spec_embed`, made with the legacy `torch.Tensor(n)` constructor)."""
    devices = [t.device for t in itertools.chain(model.parameters(), model.buffers())]
    return max(set(devices), key=devices.count) if devices else torch.device("meta")


def _prepared(model: nn.Module, dtype: str | None, mode: str) -> nn.Module:
    """The model in `dtype`, on the meta device for a meta run: a copy when either changes."""
    move = mode == "meta" and _device(model).type != "meta"
    if dtype is None and not move:
        return model
    target = deep_copy(model)
    if move:
        target = target.to("meta")
    return target.to(getattr(torch, dtype)) if dtype is not None else target


def _specs(texts, dtype: str | None):
    specs = [parse_input(t) for t in texts]
    if dtype is None:
        return specs
    return [s if not getattr(torch, s.dtype).is_floating_point else type(s)(s.name, dtype, s.dims) for s in specs]


def _call(model: nn.Module, kwargs: dict):
    with evaluation(model), torch.no_grad():
        return model(**kwargs)


def run(model: nn.Module, texts: tuple[str, ...], sizes: dict[str, int], mode: str = "meta",
        dtype: str | None = None, decompose: bool = True, assume: bool = True) -> Outcome:
    """One forward of `model` on inputs `texts` (symbols at `sizes`), on meta or fake tensors. A table the model's
    code caches (functools.lru_cache) is emptied first: it holds an earlier attempt's tensors, at its sizes."""
    code_caches.clear(model)
    target = _prepared(model, dtype, mode)
    specs = _specs(texts, dtype)
    floats = [str(t.dtype).removeprefix("torch.") for t in target.parameters() if t.is_floating_point()]
    used = dtype or (max(set(floats), key=floats.count) if floats else "float32")
    base = dict(mode=mode, texts=tuple(texts), dtype=used, sizes=tuple(sizes.items()))
    start = time.perf_counter()
    if mode == "meta":
        try:
            out = _call(target, {s.name: torch.empty(tuple(sizes[d] if isinstance(d, str) else d for d in s.dims),
                                                     dtype=getattr(torch, s.dtype), device="meta") for s in specs})
        except Exception as exc:  # the report names the failure; nothing else depends on it
            return Outcome(False, error=where(exc), seconds=time.perf_counter() - start, **base)
        outputs = tuple((n, tuple(str(int(d)) for d in t.shape)) for n, t in _flatten("", out))
        return Outcome(True, outputs=outputs, seconds=time.perf_counter() - start, **base)
    return _fake(target, specs, sizes, base, start, decompose, assume)


def _fake(model, specs, sizes, base, start, decompose: bool, assume: bool) -> Outcome:
    env = _ShapeEnv(assume)
    fake_mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
    names: dict[sympy.Symbol, sympy.Symbol] = {}
    from torch._dynamo.source import ConstantSource  # torch._dynamo takes 1 s to import: only when tracing
    kwargs = {}
    device = _device(model)                 # fake tensors on the model's device allocate nothing either
    for s in specs:
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in s.dims)
        ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC if isinstance(d, str) else DimDynamic.STATIC
                                                      for d in s.dims])
        t = fake_mode.from_tensor(torch.empty(shape, dtype=getattr(torch, s.dtype), device=device),
                                  symbolic_context=ctx, source=ConstantSource(s.name))
        for d, size in zip(s.dims, t.shape):
            if isinstance(d, str) and isinstance(size, torch.SymInt):
                names[size.node.expr] = sympy.Symbol(d, positive=True, integer=True)
        kwargs[s.name] = t
    decomposer = _Decompose() if decompose else contextlib.nullcontext()
    try:
        with _quiet(), code_caches.uncached(model), fake_mode, decomposer:
            out = _call(model, kwargs)
        error = None
    except Exception as exc:  # the report names the failure; nothing else depends on it
        out, error = None, where(exc)
    seconds = time.perf_counter() - start
    outputs = tuple((n, tuple(_expr(d, env, names) for d in t.shape)) for n, t in _flatten("", out)) if out is not None \
        else ()
    return Outcome(error is None, outputs=outputs, error=error, seconds=seconds, guards=len(env.guards),
                   ranges=_ranges(env, names), specialized=_specialized(env, names), assumed=tuple(env.assumed),
                   decomposed=tuple(decomposer.used) if decompose else (), **base)


def _expr(size, env: ShapeEnv, names: dict) -> str:
    if not isinstance(size, torch.SymInt):
        return str(int(size))
    expr = env.replace(size.node.expr)
    return str(expr.xreplace(names))


def _ranges(env: ShapeEnv, names: dict) -> tuple[str, ...]:
    out = []
    for sym, name in names.items():
        r = env.var_to_range.get(sym)
        if r is None or sym in env.replacements:
            continue
        lower, upper = int(r.lower), r.upper
        finite = upper not in (int_oo, sympy.oo)
        if lower > 2 or finite:
            out.append(f"{lower} <= {name}" + (f" <= {int(upper)}" if finite else ""))
    return tuple(out)


def _specialized(env: ShapeEnv, names: dict) -> tuple[str, ...]:
    out = []
    for sym, name in names.items():
        value = env.replacements.get(sym)
        if value is None or not value.is_number:
            continue
        site = guard_site(env, sym)
        out.append(f"{name} = {value}" + (f" ({site})" if site else ""))
    return tuple(out)


def attempts(model: nn.Module, discovery: Discovery | None = None, mode: str = "meta", _escalate: bool = True,
             **options) -> list[Outcome]:
    """Try the discovered inputs in order, and the retry dtypes after a dtype failure; stop at the first run
    that works. When all fail, add optional forward() parameters (escalate) and try again."""
    discovery = discovery or discover(model)
    if discovery.unresolved:
        name, why = discovery.unresolved[0]
        return [Outcome(False, mode, discovery.texts(), discovery.dtype, (),
                        error=f"no example input for `{name}`: {why}")]
    tried: list[Outcome] = []
    for texts in discovery.choices():
        sizes = discovery.hints(texts)
        outcome = run(model, texts, sizes, mode, **options)
        tried.append(outcome)
        if outcome.ok:
            return tried
        if dtype_error(outcome.error):
            for dt in discovery.retry_dtypes:
                tried.append(run(model, texts, sizes, mode, dtype=dt, **options))
                if tried[-1].ok:
                    return tried
    if _escalate:
        def attempt(again: Discovery):
            more = attempts(model, again, mode, _escalate=False, **options)
            tried.extend(more)
            return more[-1].ok, more[-1].error, None
        escalate(model, discovery, tried[-1].error if tried else None, attempt)
    return tried
