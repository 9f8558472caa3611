"""The small instance a reference page is about: a torch.nn class built with small arguments and run on a small input.
The pipeline documents it as a one-component model: its shapes and equations, verified as a component's are.

Nothing is chosen per class. The required integer arguments take values from PALETTE, tried in a fixed order until the
class constructs and its forward() runs; the input is what input discovery (atlas/extract/discover/discovery.py) says
the layer takes, or for a layer that says nothing about its input (an activation) a tensor of any shape, FREE_DIMS.
Symbolic dims take the sizes in SIZES (raised to a bound where the layer sets one).
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass

import torch
from torch import nn

from atlas.document.input_specs import input_text
from atlas.i18n import Text, msg
from atlas.load.forward_calls import parameters

PALETTE = (3, 4, 2, 5, 6)               # small values for the required integer arguments, in the order tried
MAX_TRIES = 64                           # combinations of PALETTE values tried before giving up
SIZES = {"B": 2, "T": 5, "H": 6, "W": 6, "D": 4}    # the example input's symbolic dims
OTHER_SIZE = 4                           # a symbol not in SIZES
FREE_DIMS = ("B", "T")                   # a tensor input no layer sizes: the layer takes any shape


@dataclass(frozen=True)
class Input:
    name: str                            # the forward() parameter
    dtype: str                           # "float32", "int64"
    dims: tuple                          # symbols and ints, as discovery wrote them: ("B", 3, "H", "W")
    sizes: tuple[int, ...]               # the example's concrete sizes
    low: int | None = None               # integer values in [low, high)
    high: int | None = None

    @property
    def text(self) -> str:
        return input_text(self.name, self.dtype, self.dims)


@dataclass(frozen=True)
class Instance:
    cls: type
    arguments: tuple[tuple[str, int], ...]  # the required arguments and their small values
    module: nn.Module | None
    inputs: tuple[Input, ...] = ()
    runs: bool = False                   # its forward() ran on the inputs
    reason: Text | None = None           # why there is no run (no forward(), no arguments found)

    @property
    def call(self) -> str:
        """How the page writes the instance: nn.Conv2d(in_channels=3, out_channels=4, kernel_size=3)."""
        return f"nn.{self.cls.__name__}({', '.join(f'{k}={v}' for k, v in self.arguments)})"


def has_forward(cls: type) -> bool:
    """False for containers (ModuleList, ModuleDict): their forward() is nn.Module's, which raises."""
    return getattr(cls, "forward", None) is not nn.Module.forward


def required(cls: type) -> list[inspect.Parameter]:
    """The constructor's parameters without a default (device and dtype always have one)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in inspect.signature(cls).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind in kinds]


def build(cls: type) -> Instance:
    """The first small instance of `cls` that constructs and runs; or, if none does, why not."""
    names = [p.name for p in required(cls)]
    if not has_forward(cls):
        module = _construct(cls, {})
        return Instance(cls, (), module, reason=msg("it has no forward() of its own (calling it raises "
                                                    "NotImplementedError): the module that holds it uses what it "
                                                    "holds in its own forward()"))
    last = None
    for values in itertools.islice(_combinations(len(names)), MAX_TRIES):
        arguments = dict(zip(names, values))
        try:
            module = _construct(cls, arguments)
            inputs = _inputs(module)
            run(module, inputs)
        except Exception as exc:         # noqa: BLE001 - the next combination is tried; the last error is reported
            last = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
            continue
        return Instance(cls, tuple(arguments.items()), module, tuple(inputs), runs=True)
    return Instance(cls, (), None, reason=msg("no small integer arguments construct it and run its forward() "
                                              "(the last try raised %(error)s)", error="`%s`" % last))


def _combinations(n: int):
    """Tuples of n PALETTE values: distinct values first (Linear(3, 4) rather than Linear(3, 3)), then any."""
    yield from itertools.permutations(PALETTE, n)
    yield from (v for v in itertools.product(PALETTE, repeat=n) if len(set(v)) < n)


def _construct(cls: type, arguments: dict) -> nn.Module:
    torch.manual_seed(0)
    return cls(**arguments)


def _inputs(module: nn.Module) -> list[Input]:
    """What discovery says the layer's forward() takes; a free-shaped float tensor where it says nothing."""
    from atlas.document.input_specs import parse_input
    from atlas.extract.discover.discovery import discover
    found = discover(module)
    minimum = {b.symbol: b.minimum for b in found.bounds if b.minimum}
    out = []
    for f in found.inputs:
        spec = parse_input(f.text)
        out.append(_input(spec.name, spec.dtype, spec.dims, minimum, f.low, f.high))
    for name, _ in found.unresolved:
        out.append(_input(name, found.dtype, FREE_DIMS, minimum))
    order = list(parameters(module))
    return sorted(out, key=lambda i: order.index(i.name) if i.name in order else len(order))


def _input(name, dtype, dims, minimum, low=None, high=None) -> Input:
    sizes = tuple(d if isinstance(d, int) else max(SIZES.get(d, OTHER_SIZE), minimum.get(d) or 0) for d in dims)
    return Input(name, dtype, tuple(dims), sizes, low, high)


def tensors(inputs) -> list[torch.Tensor]:
    """The example's inputs, seeded: integers in their range, floats standard normal."""
    torch.manual_seed(0)
    out = []
    for i in inputs:
        dtype = getattr(torch, i.dtype)
        if dtype.is_floating_point:
            out.append(torch.randn(*i.sizes, dtype=dtype))
        else:
            out.append(torch.randint(i.low or 0, i.high or OTHER_SIZE, i.sizes, dtype=dtype))
    return out


def run(module: nn.Module, inputs) -> object:
    with torch.no_grad():
        return module(*tensors(inputs))
