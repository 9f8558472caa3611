"""Named symbolic shapes for every component, from forwards with a hook on every module.

The model runs on the meta device (no memory for weights or activations) at three
probe sizes of its input symbols. A dim that stays put is fixed; one that moves
is fitted to an expression in the symbols (T, 2*T, T/2, B*T, T + 1) with sympy.
Where the meta forward fails, a tiny CPU forward is tried if the model fits the
memory budget; where that fails too, every page says why its shapes are missing.
"""

from __future__ import annotations

import functools
import inspect
import logging
from dataclasses import replace
from itertools import combinations_with_replacement

import sympy
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from atlas.document import input_specs as inputs_mod
from atlas.document.model import Dim, DimNames, ModelDoc, Shapes, ShapeStatus, TensorShape
from atlas.errors import where
from atlas.extract.method_uses import not_called_reason
from atlas.extract.probes.fit_products import fit_grid
from atlas.extract.trace import call_shapes as trace_shapes
from atlas.extract.trace import direct_calls, entry_kinds
from atlas.i18n import msg
from atlas.load import buffer_values, code_caches
from atlas.load.memory import DEFAULT_BUDGET_BYTES
from atlas.load.module_copy import deep_copy

log = logging.getLogger("atlas")

# Each symbol takes one value per probe; the k-th symbol uses the k-th sequence.
# Even T values keep T/2 whole; three probes tell a*S + b from a*S1*S2.
# Each symbol's size at each probe. A formula is solved on the first probes and must hold on every one: the
# fourth is there to refute a fit the first three allow by coincidence (Longformer's length padded to its window,
# ceil(T/8)*8, at (B, T) = (2, 6), (3, 10), (5, 14) is 8, 16, 16, which -8*B + 4*T fits too; at (7, 19) it is 24).
# No column is an affine function of another (their steps differ), so no symbol's formula fits another's dims:
# H at 6, 10, 14, 19 beside W at 4, 8, 12, 17 made W - 2 fit every H dim of a CNN, and both shifted to one
# smallest size made them equal.
PROBE_VALUES = ((2, 3, 5, 7), (6, 10, 14, 19), (4, 9, 11, 16), (9, 15, 21, 26), (7, 11, 13, 23))


def probe_sizes(symbols, limits: dict | None = None) -> list[dict[str, int]]:
    """The sizes of every probe: one dict per probe, a size per symbol. `limits`: (low, high) per symbol, the
    smallest size the code takes (a conv stack's receptive field, twice an attention window) and the largest (a
    position table); a symbol's probes move up to start at its low, or down to end at its high."""
    if len(symbols) > len(PROBE_VALUES):
        raise inputs_mod.AtlasError(f"at most {len(PROBE_VALUES)} symbolic dims are supported, got {list(symbols)}")
    columns = {}
    for i, sym in enumerate(symbols):
        values = PROBE_VALUES[i]
        low, high = (limits or {}).get(sym, (None, None))
        if low is not None and low >= 64:   # steps that grow with the smallest size: a stride of 32 after it shows
            values = tuple(values[0] + (v - values[0]) * (low // 8) for v in values)
        shift = max(0, (low or 0) - values[0])
        if high is not None and values[-1] + shift > high:
            shift = high - values[-1]
        columns[sym] = [max(2, v + shift) for v in values]
    return [{sym: columns[sym][k] for sym in symbols} for k in range(len(PROBE_VALUES[0]))]


def check_sizes(probes: list[dict[str, int]], limits: dict | None = None) -> list[dict[str, int]]:
    """Probes that check the fits of the others, at sizes none of them had: in the probes all symbols grow
    together and stay close, so a height's dim fits the width as well (floor(W/5) - 6 where it is floor(H/5) - 6),
    a length's the batch, and stride 8 fits where stride 5 is (ceiling(T/8) + 3 = floor(T/5) - 1 from T = 60 to 73).
    Each symbol goes, in turn, well past its probes (twice as far again, within its limit) while the others step
    just above their smallest."""
    columns = {sym: sorted({p[sym] for p in probes}) for sym in probes[0]}

    def far(sym: str) -> int:
        column, high = columns[sym], (limits or {}).get(sym, (None, None))[1]
        value = 3 * column[-1] - 2 * column[0] + 1
        return value if high is None or value <= high else column[-2] + 1

    def next_to(sym: str, step: int) -> int:
        column, value = columns[sym], columns[sym][0] + step
        while value in column and value < column[-1]:
            value += 1
        return value
    names = list(columns)
    parity = [[s for i, s in enumerate(names) if i % 2 == k] for k in (0, 1)]
    # and every symbol two and three above its smallest probe: with the smallest and the one above it, four sizes
    # in a row, so a rounding to a multiple of 4 is told from one to 2 (ceiling(T/2) + 1 is 2*ceiling(T/4) at
    # T = 17, 18, 21, 25, 30 and 57, not at 19 or 20)
    return [{s: far(s) if s in group else next_to(s, 1) for s in names} for group in parity if group] + \
        [{s: next_to(s, step) for s in names} for step in (2, 3)]


MAX_DENOMINATOR = 8

_DTYPES = {name: getattr(torch, name) for name in inputs_mod.DTYPES}


def _tensors(name: str, value) -> list[tuple[str, torch.Tensor]]:
    """Tensors inside a value, element by element: x, x[0], x["key"], x.field."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (tuple, list)):
        return [t for i, v in enumerate(value) for t in _tensors(f"{name}[{i}]", v)]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _tensors(f"{name}[{k!r}]", v)]
    return []


def _named_inputs(module: nn.Module, args: tuple, kwargs: dict) -> list[tuple[str, torch.Tensor]]:
    try:
        bound = inspect.signature(module.forward).bind(*args, **kwargs)
        items = []
        for name, value in bound.arguments.items():
            kind = inspect.signature(module.forward).parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                items += [t for i, v in enumerate(value) for t in _tensors(f"{name}[{i}]", v)]
            elif kind is inspect.Parameter.VAR_KEYWORD:
                items += [t for k, v in value.items() for t in _tensors(k, v)]
            else:
                items += _tensors(name, value)
        return items
    except (TypeError, ValueError):
        return [t for i, a in enumerate(args) for t in _tensors(f"args[{i}]", a)] + \
               [t for k, v in kwargs.items() for t in _tensors(k, v)]


Record = tuple[list[tuple[str, tuple[int, ...], str]], list[tuple[str, tuple[int, ...], str]]]


def _describe(items: list[tuple[str, torch.Tensor]]) -> list[tuple[str, tuple[int, ...], str]]:
    return [(n, tuple(int(s) for s in t.shape), str(t.dtype).removeprefix("torch.")) for n, t in items]


def capture(model: nn.Module, example: dict[str, torch.Tensor], records: dict | None = None) -> dict[int, Record]:
    """Run one forward; return id(module) -> (inputs, outputs) of its first call."""
    records = {} if records is None else records

    def hook(module, args, kwargs, output):
        if id(module) not in records:
            records[id(module)] = (_describe(_named_inputs(module, args, kwargs)), _describe(_tensors("output", output)))

    code_caches.clear(model)            # a table cached by an earlier run holds that run's tensors
    handles = [m.register_forward_hook(hook, with_kwargs=True) for m in model.modules()]
    try:
        params = inspect.signature(model.forward).parameters
        with torch.no_grad(), direct_calls.watching(model.modules(), None, hook):
            if all(name in params for name in example):
                model(**example)
            else:                                   # names are labels only: pass in declared order
                model(*example.values())
    finally:
        for h in handles:
            h.remove()
    return records


def example_inputs(specs: list[inputs_mod.InputSpec], sizes: dict[str, int], device: str) -> dict[str, torch.Tensor]:
    out = {}
    gen = torch.Generator().manual_seed(0)
    for spec in specs:
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in spec.dims)
        dtype = _DTYPES[spec.dtype]
        if device == "meta":
            out[spec.name] = torch.empty(shape, dtype=dtype, device="meta")
        elif dtype.is_floating_point or dtype.is_complex:
            out[spec.name] = torch.rand(shape, generator=gen).to(dtype)
        else:
            out[spec.name] = torch.zeros(shape, dtype=dtype)
    return out


def fit(values: list[int], probes: list[dict[str, int]], vocab: inputs_mod.Vocabulary,
        checks: list[tuple[dict[str, int], int]] = ()) -> Dim:
    """A dim's size at each probe -> a fixed size or the simplest expression in the symbols. `checks`: (sizes, the
    dim's size there) of probes every fit must also match (check_sizes); where none does, the dim varies."""
    def holds(expr) -> bool:
        return all(expr.subs({s: sizes[str(s)] for s in expr.free_symbols}) == value for sizes, value in checks)
    if len(set(values)) == 1 and all(value == values[0] for _, value in checks):
        return Dim(value=values[0])
    names = list(probes[0])
    table = _monomials(tuple(tuple(p.items()) for p in probes), tuple(tuple(sizes.items()) for sizes, _ in checks))
    found, floored = [], []
    for mono, xs, _ in table:
        if xs[1] == xs[0]:
            continue
        a = sympy.Rational(values[1] - values[0], xs[1] - xs[0])
        b = values[0] - a * xs[0]
        if a == 0:
            continue
        if a.q <= MAX_DENOMINATOR and b.q == 1 and all(a * x + b == v for x, v in zip(xs, values)):
            found.append(a * mono + b)
        elif 1 < a.q <= MAX_DENOMINATOR:    # a pool or a stride: floor(T/2), on odd sizes too; ceiling(T/2)
            rounded = _rounded(a, b, mono, xs, values)
            if rounded is not None:
                floored.append(rounded)
    found = [e for e in found + floored if holds(e)]
    if not found:
        found = [e for e in _fit_pairs(values, table) if holds(e)]
    if not found:           # patches over a height and a width (a vision transformer's tokens)
        grid = fit_grid(values, probes, checks, [s for s in names if vocab.symbol_name(s) != "batch"])
        found = [grid] if grid is not None else []
    if not found:           # rounding bends the slope two probes give (2/85 for floor(W/32) at 136, 221)
        strided = [f for mono, xs, at_checks in table
                   for f in [_strided(mono, xs, values, list(zip(at_checks, (value for _, value in checks))))]
                   if f is not None]
        found = [min(strided, key=lambda f: f[0])[1]] if strided else []
    if not found:
        return Dim(symbol="?", name=inputs_mod.VARIES)
    expr = next((e for e in found if not e.as_coeff_add()[0]), found[0])
    parts = sorted(expr.free_symbols, key=lambda s: names.index(str(s)))
    return Dim(symbol=str(expr), name=trace_shapes.dim_name([str(s) for s in parts], vocab))


def _rounded(a, b, mono, xs: list[int], values: list[int]):
    """floor or ceiling of a·mono + c fitting every probe, c near b, the simplest first (an integer, then the
    smallest): two probes at odd sizes give b = -1/2 for floor(x/2), which floor(x/2 - 1/2) fits only there."""
    q, base = a.q, int(sympy.floor(b * a.q))
    offsets = sorted({sympy.Rational(m, q) for m in range(base - q, base + q + 2)}, key=lambda c: (c.q != 1, abs(c)))
    for c in offsets:
        for fn in (sympy.floor, sympy.ceiling):
            if all(fn(a * x + c) == v for x, v in zip(xs, values)):
                return fn(a * mono + c)
    return None


def _strided(mono, xs: list[int], values: list[int], checks: list[tuple[int, int]] = ()):
    """(how plain it is, floor((mono + m) / q) or its ceiling) fitting every probe, and each (mono's value, size)
    of `checks`: a stride q (a pool, a conv, a padded split) up to a CNN's 32 (64 at most). Where several fit four
    probes (W/32 and W/34 at W = 136, 221, 255, 340), the smoothest stride wins (strides multiply small numbers:
    32 = 2^5, 320 = 2^6 · 5), then the smallest shift, here and between the symbols. The probes cannot always
    tell: floor(H/14) and floor((H + 6)/16) agree from 40 to 80 px; where a fit with a smaller shift gives other
    sizes, the dim reads "?" (_ambiguous), and preferring no shift outright would trade as many conv strides with a
    shift, ceil((H - 1)/8), for unshifted ones. Or a small multiple of one
    (2*ceiling(T/4)), where no rounding itself fits: a length padded to whole windows or chunks is one
    (8*ceiling(T/8), Longformer's windows of 8), up to 64."""
    if values[-1] <= values[0] or xs[-1] <= xs[0]:
        return None
    for k in range(1, 65):      # a multiple of a rounding: 2*ceiling(T/4), a pool's length times its two halves
        if all(v % k == 0 for v in values) and all(v % k == 0 for _, v in checks):
            found = _strided_once(mono, xs, [v // k for v in values], [(x, v // k) for x, v in checks])
            if found is not None:
                return (k, *found[0]), k * found[1]
    return None


def _strided_once(mono, xs: list[int], values: list[int], checks: list[tuple[int, int]]):
    if values[-1] <= values[0]:
        return None
    best, fits = None, []
    points = list(zip(xs, values)) + list(checks)
    for q in range(2, 65):
        centre = values[0] * q - xs[0]
        for ceiling in (False, True):
            # the shifts m that give every point: floor((x + m)/q) = v for v*q - x <= m <= v*q - x + q - 1,
            # ceiling for (v - 1)*q - x + 1 <= m <= v*q - x; within the window searched, the one nearest 0
            low = max([centre - q] + [(v - 1) * q - x + 1 if ceiling else v * q - x for x, v in points])
            high = min([centre + q] + [v * q - x if ceiling else v * q - x + q - 1 for x, v in points])
            if low > high:
                continue
            fits.append((q, low, high, ceiling))
            m = min(max(0, low), high) if low <= 0 <= high or low > 0 else high
            key = (_largest_prime(q), abs(m), q, ceiling)
            if best is None or key < best[0]:
                best = (key, q, m, ceiling)
    if best is None or _ambiguous(best[1:], fits, points):
        return None
    key, q, m, ceiling = best
    return key, (sympy.ceiling if ceiling else sympy.floor)((mono + m) / q)


def _ambiguous(best: tuple, fits: list, points: list) -> bool:
    """Whether a rounding with a smaller shift, or with another shift of the same stride, fits every point too and
    gives other sizes, from the smallest point to four times the largest: the probes cannot tell which holds
    (floor(H/14) and floor((H + 6)/16) from 40 to 80 px: a stride of 14 unshifted, or of 16 shifted; a 127-wide
    conv of stride 64, floor((T - 63)/64), and floor((T - 45)/64) at 200, 300 and 400 positions), and either
    would be a guess, false at other sizes. A chosen stride with no shift has no rival: a smooth stride unshifted
    is what models use (a window of 16, ceiling(T/16), which 15 fits up to T = 42 as well)."""
    q, m, ceiling = best
    if m == 0:
        return False
    xs = [x for x, _ in points]
    span = range(min(xs), min(4 * max(xs), min(xs) + 2 * 64 * 64) + 1)   # two strides of 64 at most part by then

    def at(q_, m_, c_, x):
        return -(-(x + m_) // q_) if c_ else (x + m_) // q_
    return any(any(at(q2, m2, c2, x) != at(q, m, ceiling, x) for x in span)
               for q2, low, high, c2 in fits for m2 in range(low, high + 1)
               if abs(m2) < abs(m) or (q2 == q and m2 != m))


def _largest_prime(n: int) -> int:
    largest, k = 1, 2
    while n > 1:
        while n % k == 0:
            largest, n = k, n // k
        k += 1
    return largest


@functools.lru_cache(maxsize=64)
def _monomials(probes: tuple, checks: tuple) -> tuple:
    """(monomial, its value at each probe, its value at each check) for the symbols and their products: the same
    for every dim of a run, computed once (sympy's subs, thousands of times per model otherwise)."""
    names = [n for n, _ in probes[0]]
    syms = {n: sympy.Symbol(n, positive=True, integer=True) for n in names}
    monomials = [syms[n] for n in names] + [a * b for a, b in combinations_with_replacement(syms.values(), 2)]

    def at(mono, sizes) -> int:
        return int(mono.subs({syms[n]: v for n, v in sizes}))
    return tuple((mono, tuple(at(mono, p) for p in probes), tuple(at(mono, c) for c in checks)) for mono in monomials)


def _fit_pairs(values, table) -> list:
    """a1*m1 + a2*m2, solved on two probes and checked on the others (e.g. B*T + B)."""
    found = []
    for i, (m1, x1, _) in enumerate(table):
        for m2, x2, _ in table[i + 1:]:
            det = x1[0] * x2[1] - x1[1] * x2[0]
            if det == 0:
                continue
            a1 = sympy.Rational(values[0] * x2[1] - values[1] * x2[0], det)
            a2 = sympy.Rational(x1[0] * values[1] - x1[1] * values[0], det)
            if 0 in (a1, a2) or a1.q > MAX_DENOMINATOR or a2.q > MAX_DENOMINATOR:
                continue
            if all(a1 * u + a2 * w == v for u, w, v in zip(x1, x2, values)):
                found.append(a1 * m1 + a2 * m2)
    return found


def _shape_of(records: list[list], probes, vocab, checks=()) -> tuple[TensorShape, ...] | None:
    """Combine one tensor list across probes; None where their structure differs. `checks`: (sizes, the list at
    them) of the probes the fits must match too (check_sizes)."""
    first = records[0]
    if any([(n, len(s)) for n, s, _ in r] != [(n, len(s)) for n, s, _ in first] for r in [*records, *(c[1] for c in checks)]):
        return None
    out = []
    for i, (name, shape, dtype) in enumerate(first):
        dims = tuple(fit([r[i][1][j] for r in records], probes, vocab, [(c[0], c[1][i][1][j]) for c in checks])
                     for j in range(len(shape)))
        out.append(TensorShape(name, dims, dtype))
    return tuple(out)


def _run(model: nn.Module, specs, probes, device, doc: ModelDoc | None = None) -> list[dict[int, Record]]:
    """Probe at each size. On the meta device, entries 1..N-1 of a collapsed group of list entries run only
    when they must: an entry whose inputs have exactly the shapes the first entry saw, where the first entry
    kept its input's shape, passes its input through. Same signature means same code, so its shapes cannot
    differ; the first entry still records every component inside it."""
    from atlas.extract.trace.runs import evaluation, kept_state
    wraps = _repeat_wrappers(model, doc) if device == "meta" and doc is not None else []
    for container, key, wrapper in wraps:
        container._modules[key] = wrapper
    try:
        runs = []
        with kept_state(model), evaluation(model):     # as pages describe it: no dropout, no SpecAugment masks
            for p in probes:
                records: dict[int, Record] = {}
                for _, _, wrapper in wraps:
                    wrapper.records = records
                runs.append(capture(model, example_inputs(specs, p, device), records))
        return runs
    finally:
        for container, key, wrapper in wraps:
            container._modules[key] = wrapper.real


class _SameAsFirst(nn.Module):
    """Stands in for a repeated list entry during the meta probes (see _run)."""

    def __init__(self, real: nn.Module, first: nn.Module) -> None:
        super().__init__()
        object.__setattr__(self, "real", real)          # not registered: hooks and walks never see it twice
        object.__setattr__(self, "first", first)
        self.records: dict = {}

    def __getattr__(self, name: str):
        """The real entry's attributes, for parent code that reads them (`layer.temporal_block`)."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["real"], name)

    def forward(self, *args, **kwargs):
        seen = self.records.get(id(self.first))
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if (seen is not None and not kwargs and len(tensors) == len(args) and len(seen[1]) == 1
                and [(tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in tensors]
                == [(shape, dtype) for _, shape, dtype in seen[0]]
                and seen[1][0][1:] == seen[0][0][1:]):
            return args[0]
        return self.real(*args, **kwargs)


def _repeat_wrappers(model: nn.Module, doc: ModelDoc) -> list:
    wraps = []
    for comp in doc.components:
        if comp.repeat < 2 or len(comp.module_paths) != comp.repeat:
            continue
        parent_path, _, first_key = comp.module_paths[0].rpartition(".")
        container = model.get_submodule(parent_path) if parent_path else model
        if not isinstance(container, (nn.ModuleList, nn.Sequential)) or not first_key.isdigit():
            continue
        first = container._modules[first_key]
        if not entry_kinds.called(first):
            continue
        for path in comp.module_paths[1:]:
            p_path, _, key = path.rpartition(".")
            if p_path == parent_path and container._modules[key] is not first:
                wraps.append((container, key, _SameAsFirst(container._modules[key], first)))
    return wraps


def _cpu_copy(model: nn.Module) -> nn.Module:
    """A CPU copy with made-up weights. Its buffers keep their values where the model has them (on the meta device,
    those its constructor made from Python data, atlas/load/buffer_values.py); elsewhere integer buffers are zeros (a buffer of position ids indexes a table: left as uninitialized
    memory it indexes out of range), flags are set and floats small. The weights come from a generator seeded
    alike on every run (torch's CPU one, forked: the caller's stream goes on as it was): a router's choices,
    and with them which experts run and on how many tokens, are the same on every run."""
    cpu = deep_copy(model, values=False).to_empty(device="cpu")     # every value is set below
    known = buffer_values.known(model)
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(0)
        for p in cpu.parameters():
            if p.is_floating_point():
                p.normal_(0.0, 0.02)
        for name, copied in cpu.named_buffers():
            if name in known:
                copied.copy_(known[name])
            elif copied.is_floating_point() or copied.is_complex():
                copied.normal_(0.0, 0.02)
            else:
                copied.fill_(copied.dtype == torch.bool)
        for m in cpu.modules():
            if hasattr(m, "reset_parameters") and callable(m.reset_parameters):
                try:
                    m.reset_parameters()
                except Exception:  # a module's own re-initialization is optional here
                    pass
    return cpu


def materialize_lazy(model: nn.Module, declared: list[str] | None) -> bool:
    """Lazy modules learn their sizes from a first forward: run one on the meta device, when inputs are known.
    Without inputs, their parameters stay uninitialized, are counted as 0 and say so on their pages."""
    from atlas.extract.accounting import has_lazy
    if not has_lazy(model):
        return False
    texts = list(declared or getattr(model, "atlas_inputs", None) or ())
    if not texts:
        return False
    vocab = inputs_mod.vocabulary(getattr(model, "atlas_dims", None), getattr(model, "atlas_fixed_dims", None))
    specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in texts], vocab)
    try:
        capture(model, example_inputs(specs, {s: PROBE_VALUES[i][0] for i, s in enumerate(symbols)}, "meta"))
    except Exception as exc:  # the pages say the parameters are uninitialized; the build goes on
        log.warning("lazy modules could not be initialized on the meta device: %s", where(exc))
        return False
    return True


def concrete_record(model: nn.Module, specs, probe: dict, budget_bytes: int):
    """A record at one concrete size, for the equations, where the symbolic run failed: on the meta device,
    else on a CPU copy within the memory budget (a model built with real weights runs as it is)."""
    from atlas.extract.trace import runs as trace_run
    on_meta = any(t.device.type == "meta" for t in list(model.parameters()) + list(model.buffers()))
    target = model
    if on_meta:
        trace = trace_run.concrete(model, example_inputs(specs, probe, "meta"), "meta")
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        if trace.error is None or size > budget_bytes:
            trace.hints = probe
            return trace
        target = _cpu_copy(model)
    trace = trace_run.concrete(target, example_inputs(specs, probe, "cpu"), "cpu")
    trace.hints = probe
    return trace


def _meta_runs(model: nn.Module, specs, probes, doc: ModelDoc) -> list:
    """The probes on the meta device; where they fail for a dtype, again with the calls that fail so run in
    bfloat16 and their results put back in the dtype they were given (torch's meta kernel for a grouped matmul of
    experts takes bfloat16 only, its CPU kernel any float: Jamba's probes ran on a CPU copy)."""
    from atlas.extract.record.escalation import dtype_error
    try:
        return _run(model, specs, probes, "meta", doc)
    except Exception as exc:
        if not dtype_error(str(exc)):
            raise
        try:
            with _MetaKernelDtypes():
                return _run(model, specs, probes, "meta", doc)
        except Exception:
            raise exc from None


class _MetaKernelDtypes(TorchFunctionMode):
    """A call on meta tensors that fails for its dtype runs again with its floating tensors in bfloat16, and its
    floating results are given back in the dtype of its first floating input: shapes only, as the meta device has."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        from atlas.extract.record.escalation import dtype_error
        kwargs = kwargs or {}
        try:
            return func(*args, **kwargs)
        except RuntimeError as exc:
            floats = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)
                      and t.device.type == "meta" and t.is_floating_point() and t.dtype != torch.bfloat16]
            if not floats or not dtype_error(str(exc)):
                raise
            given = floats[0].dtype
            low = pytree.tree_map(lambda t: t.to(torch.bfloat16) if any(t is f for f in floats) else t,
                                  (args, kwargs))
            out = func(*low[0], **low[1])
            return pytree.tree_map(lambda t: t.to(given) if isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16
                                   else t, out)


def derive(model: nn.Module, doc: ModelDoc, declared: list[str] | None = None,
           budget_bytes: int = DEFAULT_BUDGET_BYTES, limits: dict | None = None) -> ModelDoc:
    """Return the doc with shapes on every component, from concrete probes (within `limits`, see probe_sizes)
    and fitting."""
    vocab = inputs_mod.vocabulary(getattr(model, "atlas_dims", None), getattr(model, "atlas_fixed_dims", None))
    texts = list(declared or getattr(model, "atlas_inputs", None) or ())
    dim_names = DimNames(vocab.symbols, vocab.fixed)
    if not texts:
        return _all(doc, Shapes(ShapeStatus.NOT_DERIVED, reason=msg(
            "no example inputs: the model declares no atlas_inputs and none were given with --input")),
            dim_names, ())
    specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in texts], vocab)
    probes = probe_sizes(symbols, limits)
    target, method, note = model, "meta", None
    try:
        runs = _meta_runs(model, specs, probes, doc)
    except Exception as meta_exc:
        note = msg("the meta-device forward failed (%(error)s), so a tiny CPU forward was run", error=where(meta_exc))
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        if size > budget_bytes:
            return _all(doc, Shapes(ShapeStatus.NOT_DERIVED, reason=msg(
                "the meta-device forward failed (%(error)s) and the model's %(size)s bytes of "
                "parameters exceed the %(budget)s-byte budget for a CPU forward",
                error=where(meta_exc), size=size, budget=budget_bytes)), dim_names, tuple(texts))
        try:
            target, method = _cpu_copy(model), "cpu"
            runs = _run(target, specs, probes, "cpu")
        except Exception as cpu_exc:
            return _all(doc, Shapes(ShapeStatus.NOT_DERIVED, reason=msg(
                "the meta-device forward failed (%(error)s); the CPU forward failed too (%(cpu_error)s)",
                error=where(meta_exc), cpu_error=where(cpu_exc))), dim_names, tuple(texts))
    checked = _checked_runs(target, specs, probes, method, doc, limits)
    comps = []
    for comp in doc.components:
        module = target.get_submodule(comp.path)
        recs = [run.get(id(module)) for run in runs]
        seen = [(sizes, run[id(module)]) for sizes, run in checked if id(module) in run]
        own = getattr(module, "atlas_inputs", None) or leaf_inputs(module)
        if all(r is None for r in recs) and own and module is not target:
            recs = _own_probes(module, own, vocab, method)
        if all(r is None for r in recs):
            shapes = Shapes(ShapeStatus.NOT_CALLED, method=method, reason=not_called_reason(target, comp.path))
        elif any(r is None for r in recs):
            shapes = Shapes(ShapeStatus.NOT_DERIVED, method=method, reason=msg("called for some input sizes only"))
        else:
            ins = _shape_of([r[0] for r in recs], probes, vocab, [(sizes, r[0]) for sizes, r in seen])
            outs = _shape_of([r[1] for r in recs], probes, vocab, [(sizes, r[1]) for sizes, r in seen])
            if ins is None or outs is None:
                shapes = Shapes(ShapeStatus.NOT_DERIVED, method=method,
                                reason=msg("its inputs or outputs change structure with the input size"))
            else:
                shapes = Shapes(ShapeStatus.DERIVED, ins, outs, method, note)
        comps.append(replace(comp, shapes=shapes))
    return replace(doc, components=tuple(comps), dims=dim_names, inputs=tuple(texts))


def _checked_runs(model: nn.Module, specs, probes, device: str, doc: ModelDoc, limits) -> list[tuple[dict, dict]]:
    """(sizes, records) of each probe that checks the fits (check_sizes) and ran: one the model refuses (sizes it
    cannot take) checks nothing."""
    out = []
    for sizes in check_sizes(probes, limits) if probes[0] else ():
        try:
            out.append((sizes, _run(model, specs, [sizes], device, doc if device == "meta" else None)[0]))
        except Exception:
            continue
    return out


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
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if len(params) == 1:                        # a parameter-free leaf of one tensor: an activation
            return (f"{params[0].name}:float32[B,T]",)
    return None


def _own_probes(module: nn.Module, texts, vocab, method: str) -> list:
    """A component the model's forward() never calls, probed with example inputs of its own."""
    try:
        specs, symbols = inputs_mod.resolve([inputs_mod.parse_input(t) for t in texts], vocab)
        return [run.get(id(module)) for run in _run(module, specs, probe_sizes(symbols), method)]
    except Exception:  # the component keeps its "not called" note
        return [None] * len(PROBE_VALUES[0])


def _all(doc: ModelDoc, shapes: Shapes, dim_names: DimNames, texts: tuple[str, ...]) -> ModelDoc:
    return replace(doc, components=tuple(replace(c, shapes=shapes) for c in doc.components),
                   dims=dim_names, inputs=texts)
