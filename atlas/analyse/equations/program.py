"""A program: the steps of a component's equations, with what each symbol is bound to when it runs.

Symbols are keyed by what they are, never by their printed name: `in.u` (an input), `p.qkv.weight` (a
parameter), `m.attn` (a child module), `c.eps` (a constant), `v12` (a step's value). Names are given
once per page by the namer, after the program is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from atlas.analyse.equations.nodes import Evaluator, Node


@dataclass
class Symbol:
    key: str
    kind: str                       # "input" | "param" | "const" | "module" | "modules" | "value"
    binding: tuple | None = None    # how the check gets its value; None for a step's value
    base: object = None             # the code's name for it (a variable, a parameter, an attribute), or a name
                                    # given as a formula where it was made (γ, W_Q)
    scalar: bool = False            # a number (ε): products with it print as juxtaposition
    section: str | None = None      # the expanded child it was computed in
    role: str | None = None         # a subscript that tells it apart on the page (the section's owner)
    hint: str | None = None         # a conventional name when the code gives none ("mu", "sigma2")
    shape: tuple | None = None
    output: bool = False            # a value forward() returns
    stream: str | None = None       # "q" | "k" | "v": the attention stream it belongs to
    fixed: object = None            # a name set by notation: a function of its input's name (x -> μ_d(x))
    fixed_input: str | None = None
    in_scan: bool = False           # a recurrent cell's line: run inside its scan, not on its own
    stem: object = None             # the name before its version mark (u for u'), given by the namer
    name: object = None             # the page's name, a formula, given by the namer
    given: object = None            # the name its role in a recognized idiom gives it (W_Q, ω, Δ_attn), a formula


@dataclass
class Step:
    key: str                        # the symbol it defines
    node: Node
    section: str | None = None
    shape: tuple | None = None
    links: tuple = ()               # relative paths of the child modules the step calls, in order


@dataclass
class Program:
    symbols: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)
    outputs: list = field(default_factory=list)             # nodes
    inputs: list = field(default_factory=list)              # forward() parameter names, in order
    constants: list = field(default_factory=list)           # keys of constants stated once (ε = 10⁻⁵)
    notations: list = field(default_factory=list)           # notations the steps use (x^h, M_causal)
    summary: str = ""                                       # a leaf's one-sentence description
    leaf: bool = False                                      # a torch.nn leaf's own lines: one aligned block
    headline: list = field(default_factory=list)            # keys of the steps a page shows first, where a
                                                            # structure decides them (a block's residuals)
    call_args: dict = field(default_factory=dict)           # forward() arguments that are not tensors
    dtypes: set = field(default_factory=set)                # dtypes the code names in its own calls (casts)

    def add(self, key: str, kind: str, binding=None, **kw) -> Symbol:
        sym = self.symbols.get(key)
        if sym is None:
            sym = self.symbols[key] = Symbol(key, kind, binding, **kw)
        return sym

    def scalars(self) -> set[str]:
        return {k for k, s in self.symbols.items() if s.scalar}

    # -- running ------------------------------------------------------------------------------
    def bind(self, instance: nn.Module, inputs: dict) -> dict:
        env = {}
        for key, sym in self.symbols.items():
            b = sym.binding
            if b is None:
                continue
            kind = b[0]
            if kind == "input":
                env[key] = _lookup(inputs, b[1])
            elif kind == "param":
                owner = instance.get_submodule(b[1]) if b[1] else instance
                tensor = getattr(owner, b[2])
                if len(b) > 4 and b[4] is not None:                 # a slice of a fused tensor (MHA's in_proj)
                    tensor = tensor[b[4][0]:b[4][1]]
                env[key] = tensor.transpose(-2, -1) if len(b) > 3 and b[3] and tensor.dim() > 1 else tensor
            elif kind == "const":
                env[key] = b[1]
            elif kind == "module":
                env[key] = instance.get_submodule(b[1]) if b[1] else instance
            elif kind == "modules":
                env[key] = list(instance.get_submodule(b[1]))
        return env

    def run(self, instance: nn.Module, inputs: dict, sizes: dict, dtype: torch.dtype, working: str = "float32",
            watch=None) -> list:
        """The outputs' values; `watch(node, arguments, value)` sees each node evaluated."""
        ev = Evaluator(self.bind(instance, inputs), sizes, dtype, working=getattr(torch, working), watch=watch)
        for step in self.steps:
            if not self.symbols[step.key].in_scan:
                ev.env[step.key] = ev.value(step.node)
        return [ev.value(o) for o in self.outputs]


def _lookup(inputs: dict, path: str):
    """"u" or "position_embeddings[0]": an input, or an element of a tuple input."""
    name, _, rest = path.partition("[")
    value = inputs[name]
    while rest:
        index, _, rest = rest.partition("]")
        value = value[int(index)]
        rest = rest.removeprefix("[")
    return value
