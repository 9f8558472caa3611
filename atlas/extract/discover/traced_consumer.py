"""The first layer an input reaches, found along the data flow of one forward() on fake tensors.

Where reading forward() (atlas/extract/discover/first_consumer.py) loses the input (a diffusion UNet hands its
`encoder_hidden_states` down through blocks that zip their resnets with their attentions), the model is run once on
fake tensors: the other inputs as discovery found them, and this one as a tracer of some rank. The values computed
from the tracer that keep its shape (casts, dropout, a norm without weights) or its last size (rows gathered along a
graph's edges; the tracer's sizes are apart from every other) are followed; the first layer whose
sizes say what its input must be (atlas.extract.discover.first_consumer.INFORMATIVE) and that receives one of them
is the consumer: the UNet's cross-attention `to_k`, Linear(32 -> 64), so `encoder_hidden_states` is [B, T, 32].
The run stops there, before the layer runs on a tracer of the wrong width. Nothing is recorded.
"""

from __future__ import annotations

import logging

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from atlas.document.input_specs import parse_input
from atlas.extract.discover.first_consumer import INFORMATIVE, Consumer, parameter_of
from atlas.extract.trace.module_state import fake_tensors
from atlas.extract.trace.runs import DTYPES
from atlas.extract.trace.shape_env import quiet
from atlas.load.forward_calls import evaluation, parameters

log = logging.getLogger("atlas")

WIDTH, LENGTH = 13, 11                  # the tracer's sizes: apart from every discovery hint
RANKS = ((LENGTH, WIDTH), (WIDTH,), (WIDTH, LENGTH, LENGTH))     # after the batch: a sequence, a row, a map
_FUNCTIONAL = {F.linear: "linear", F.embedding: "embedding", F.conv1d: "conv1d", F.conv2d: "conv2d",
               F.conv3d: "conv3d"}


class _Reached(BaseException):
    """The consumer, raised from its pre-hook (a BaseException: the model's own `except Exception` lets it by)."""

    def __init__(self, consumer: Consumer) -> None:
        super().__init__()
        self.consumer = consumer


class _Follow(TorchFunctionMode):
    """Marks what is computed from the tracer with its shape; stops at a functional layer call on it."""

    def __init__(self, tracer: torch.Tensor) -> None:
        super().__init__()
        self.ids, self.keep, self.shape = {id(tracer)}, [tracer], tuple(tracer.shape)

    def marked(self, x) -> list[torch.Tensor]:
        return [t for t in tree_leaves(x) if isinstance(t, torch.Tensor) and id(t) in self.ids]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _FUNCTIONAL.get(func)
        if name is not None and args and id(args[0]) in self.ids and len(args) > 1 \
                and isinstance(args[1], torch.Tensor):
            raise _Reached(Consumer("", None, function=name, weight=args[1], rank=args[0].dim(), how="forward() run"))
        out = func(*args, **kwargs)
        if self.marked((args, kwargs)):
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor) and (tuple(t.shape) == self.shape
                                                    or (t.dim() and t.shape[-1] == self.shape[-1])):
                    self.ids.add(id(t))
                    self.keep.append(t)
        return out


def traced_consumer(model: nn.Module, name: str, others: dict[str, tuple[str, tuple[int, ...]]],
                    float_dtype: str) -> Consumer | None:
    """The first informative layer input `name` reaches, with the other inputs (name -> (dtype, concrete sizes))
    given; tried as a sequence, a row and a map in turn. None where no run reaches one."""
    if name not in parameters(model):
        return None
    for rank in RANKS:
        found = _run(model, name, (3, *rank), others, DTYPES.get(float_dtype, torch.float32))
        if found is not None:
            return found
    return None


def _run(model, name, shape, others, dtype) -> Consumer | None:
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        inputs = {n: torch.zeros(sizes, dtype=DTYPES.get(dt, torch.float32)) for n, (dt, sizes) in others.items()}
        tracer = torch.zeros(shape, dtype=dtype)
    inputs[name] = tracer
    follow = _Follow(tracer)
    handles = []

    def pre_hook(path):
        def hook(module, args, kwargs):
            for i, a in enumerate(args):
                if follow.marked(a):
                    raise _Reached(Consumer(path, module, rank=follow.marked(a)[0].dim(), how="forward() run",
                                            argument=parameter_of(module, i, None)))
            for key, a in kwargs.items():
                if follow.marked(a):
                    raise _Reached(Consumer(path, module, rank=follow.marked(a)[0].dim(), how="forward() run",
                                            argument=key))
        return hook
    for path, m in model.named_modules():
        if isinstance(m, INFORMATIVE) and not isinstance(m, torch.jit.ScriptModule):
            handles.append(m.register_forward_pre_hook(pre_hook(path), with_kwargs=True))
    try:
        with quiet(), evaluation(model), torch.no_grad(), fake_tensors(model, mode), mode, follow:
            model(**inputs)
    except _Reached as reached:
        return reached.consumer
    except Exception as exc:            # the run stopped before any layer took the tracer: another rank may
        log.debug("traced run for %s at %s: %s", name, shape, exc)
    finally:
        for h in handles:
            h.remove()
    return None


def concrete(texts: dict[str, str], hints: dict[str, int]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Input texts ("name:dtype[dims]") at the hint sizes: name -> (dtype, sizes)."""
    out = {}
    for name, text in texts.items():
        spec = parse_input(text)
        out[name] = (spec.dtype, tuple(hints.get(d, 7) if isinstance(d, str) else d for d in spec.dims))
    return out
