"""Forwards at concrete sizes with a hook on every module: on the meta device, or on a CPU copy where the meta
device fails and the model fits the memory budget; and a concrete record for the equations where no symbolic one ran."""

from __future__ import annotations

import contextlib
import functools
import logging

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from atlas.document import ModelDoc, TensorShape
from atlas.document import input_specs as inputs_mod
from atlas.errors import where
from atlas.extract.method_uses import methods_on_parts
from atlas.extract.probes.dim_fitting import fit
from atlas.extract.probes.probe_sizes import PROBE_VALUES, check_sizes
from atlas.extract.trace import direct_calls, entry_kinds
from atlas.load import buffer_values, code_caches
from atlas.load.forward_calls import bind_or_list, call, evaluation
from atlas.load.hooks import hooks_of
from atlas.load.module_copy import deep_copy

_DTYPES = {name: getattr(torch, name) for name in inputs_mod.DTYPES}

log = logging.getLogger("atlas")
# a module call's inputs and outputs: (name, sizes, dtype) of each tensor; and, after them, the method called where
# the parent's code called another than forward() (`get_bias`)
Record = tuple[list[tuple[str, tuple[int, ...], str]], list[tuple[str, tuple[int, ...], str]]]


def _tensors(name: str, value) -> list[tuple[str, torch.Tensor]]:
    """Tensors inside a value, element by element: x, x[0], x["key"], x.field."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (tuple, list)):
        return [t for i, v in enumerate(value) for t in _tensors(f"{name}[{i}]", v)]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _tensors(f"{name}[{k!r}]", v)]
    return []


def _named_inputs(module: nn.Module, args: tuple, kwargs: dict, method=None) -> list[tuple[str, torch.Tensor]]:
    return [t for name, value in bind_or_list(module, args, kwargs, method).items() for t in _tensors(name, value)]


def _describe(items: list[tuple[str, torch.Tensor]]) -> list[tuple[str, tuple[int, ...], str]]:
    return [(n, tuple(int(s) for s in t.shape), str(t.dtype).removeprefix("torch.")) for n, t in items]


def capture(model: nn.Module, example: dict[str, torch.Tensor], records: dict | None = None) -> dict[int, Record]:
    """Run one forward; return id(module) -> (inputs, outputs) of its first call."""
    records = {} if records is None else records

    def hook(module, args, kwargs, output):
        if id(module) not in records:
            records[id(module)] = (_describe(_named_inputs(module, args, kwargs)),
                                   _describe(_tensors("output", output)))

    def method_hook(method, module, args, kwargs, output):
        if id(module) not in records and _tensors("output", output):      # flatten_parameters() is no call
            records[id(module)] = (_describe(_named_inputs(module, args, kwargs, method)),
                                   _describe(_tensors("output", output)), method)

    code_caches.clear(model)            # a table cached by an earlier run holds that run's tensors
    handles = [m.register_forward_hook(hook, with_kwargs=True) for m in model.modules() if direct_calls.hookable(m)]
    handles += direct_calls.hook_scripted({id(m) for m in model.modules() if not direct_calls.hookable(m)}, None, hook)
    try:
        with torch.no_grad(), direct_calls.watching(model.modules(), None, hook), contextlib.ExitStack() as undo:
            for parent in model.modules():          # `self.rel_pos.get_bias()`: a call of rel_pos
                for name, methods in methods_on_parts(parent).items():
                    for method in methods:
                        undo.callback(direct_calls.watch(parent._modules[name], None,
                                                         functools.partial(method_hook, method), method=method))
            call(model, example)
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


def shape_of(records: list[list], probes, vocab, checks=()) -> tuple[TensorShape, ...] | None:
    """Combine one tensor list across probes; None where their structure differs. `checks`: (sizes, the list at
    them) of the probes the fits must match too (check_sizes)."""
    first = records[0]
    ranks = [(n, len(s)) for n, s, _ in first]
    if any([(n, len(s)) for n, s, _ in r] != ranks for r in [*records, *(c[1] for c in checks)]):
        return None
    out = []
    for i, (name, shape, dtype) in enumerate(first):
        dims = tuple(fit([r[i][1][j] for r in records], probes, vocab, [(c[0], c[1][i][1][j]) for c in checks])
                     for j in range(len(shape)))
        out.append(TensorShape(name, dims, dtype))
    return tuple(out)


def run_probes(model: nn.Module, specs, probes, device, doc: ModelDoc | None = None) -> list[dict[int, Record]]:
    """Probe at each size. On the meta device, entries 1..N-1 of a collapsed group of list entries run only
    when they must: an entry whose inputs have exactly the shapes the first entry saw, where the first entry
    kept its input's shape, passes its input through. Same signature means same code, so its shapes cannot
    differ; the first entry still records every component inside it."""
    from atlas.extract.trace.module_state import kept_state
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
    """Stands in for a repeated list entry during the meta probes (see run_probes)."""

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


def cpu_copy(model: nn.Module) -> nn.Module:
    """A CPU copy with made-up weights. Its buffers keep their values where the model has them (on the meta device,
    those its constructor made from Python data, atlas/load/buffer_values.py); elsewhere integer buffers are zeros
    (a buffer of position ids indexes a table: left as uninitialized memory it indexes out of range), flags are set
    and floats small. The weights come from a generator seeded alike on every run (torch's CPU one, forked: the
    caller's stream goes on as it was): a router's choices, and with them which experts run and on how many
    tokens, are the same on every run."""
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
    hooks = hooks_of(model)
    texts = list(declared or hooks.inputs or ())
    if not texts:
        return False
    vocab = inputs_mod.vocabulary(hooks.dims, hooks.fixed_dims)
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
        target = cpu_copy(model)
    trace = trace_run.concrete(target, example_inputs(specs, probe, "cpu"), "cpu")
    trace.hints = probe
    return trace


def meta_runs(model: nn.Module, specs, probes, doc: ModelDoc) -> list:
    """The probes on the meta device; where they fail for a dtype, again with the calls that fail so run in
    bfloat16 and their results put back in the dtype they were given (torch's meta kernel for a grouped matmul of
    experts takes bfloat16 only, its CPU kernel any float: without this, Jamba's probes would run on a CPU
    copy)."""
    from atlas.extract.record.escalation import dtype_error
    try:
        return run_probes(model, specs, probes, "meta", doc)
    except Exception as exc:
        if not dtype_error(str(exc)):
            raise
        try:
            with _MetaKernelDtypes():
                return run_probes(model, specs, probes, "meta", doc)
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


def checked_runs(model: nn.Module, specs, probes, device: str, doc: ModelDoc, limits) -> list[tuple[dict, dict]]:
    """(sizes, records) of each probe that checks the fits (check_sizes) and ran: one the model refuses (sizes it
    cannot take) checks nothing."""
    out = []
    for sizes in check_sizes(probes, limits) if probes[0] else ():
        try:
            out.append((sizes, run_probes(model, specs, [sizes], device, doc if device == "meta" else None)[0]))
        except Exception:
            continue
    return out
