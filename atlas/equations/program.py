"""A program: the steps of a component's equations, with what each symbol is bound to.

Steps are sympy expressions over uniquely named symbols. Each symbol has a LaTeX
name for pages and a binding that says where its value comes from when the
program is run to check it: an input of forward(), a parameter or constant of
the instance, a child module, or an earlier step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy
import torch
from torch import nn

from atlas.equations import ops


@dataclass(frozen=True)
class Binding:
    kind: str                       # "input" | "param" | "const" | "module" | "modules" | "eps"
    path: str = ""                  # module path relative to the component
    name: str = ""                  # parameter or input name
    transpose: bool = False         # a Linear weight, written in × out
    value: object = None            # a constant's value


@dataclass
class Stmt:
    target: sympy.Symbol | None
    expr: object                    # sympy expression, or a Loop
    lhs: str | None = None          # LaTeX of the left side when it is not the target's name
    section: str | None = None      # the expanded child this step belongs to
    link: str | None = None         # relative module path of a child the step calls
    shown: bool = True              # size bindings run but are not shown


@dataclass(frozen=True)
class Loop:
    """`for block in self.blocks: u = block(u, ...)`: the modules run in turn."""

    modules: sympy.Symbol           # bound to the list of modules
    carried: sympy.Symbol           # the value passed from one block to the next
    args: tuple                     # the call's arguments; `carried` among them
    count: int
    name: str                       # operator name for the page


@dataclass
class Program:
    stmts: list[Stmt] = field(default_factory=list)
    outputs: list = field(default_factory=list)
    names: dict = field(default_factory=dict)          # Symbol -> LaTeX
    scalars: set = field(default_factory=set)
    bindings: dict = field(default_factory=dict)       # Symbol -> Binding
    inputs: list = field(default_factory=list)         # forward() parameters, in order
    summary: str = ""                                  # a leaf's one-sentence description
    _count: int = 0

    def symbol(self, key: str, tex: str, binding: Binding | None = None, scalar: bool = False) -> sympy.Symbol:
        self._count += 1
        sym = sympy.Symbol(f"{key}#{self._count}")
        self.names[sym] = tex
        if binding is not None:
            self.bindings[sym] = binding
        if scalar:
            self.scalars.add(sym)
        return sym

    def tex(self, expr) -> str:
        return ops.latex(expr, self.names, self.scalars)

    # -- running ---------------------------------------------------------------------
    def bind(self, instance: nn.Module, inputs: dict[str, torch.Tensor]) -> dict:
        env = {}
        for sym, b in self.bindings.items():
            if b.kind == "input":
                env[sym] = inputs[b.name]
            elif b.kind == "param":
                tensor = getattr(instance.get_submodule(b.path), b.name)
                env[sym] = tensor.T if b.transpose else tensor
            elif b.kind == "const":
                env[sym] = b.value
            elif b.kind == "module":
                env[sym] = instance.get_submodule(b.path)
            elif b.kind == "modules":
                env[sym] = list(instance.get_submodule(b.path))
        return env

    def run(self, instance: nn.Module, inputs: dict[str, torch.Tensor]) -> list:
        env = self.bind(instance, inputs)
        for stmt in self.stmts:
            if isinstance(stmt.expr, Loop):
                loop = stmt.expr
                value = env[loop.carried]
                for module in env[loop.modules]:
                    env[loop.carried] = value
                    value = module(*(ops.evaluate(a, env) for a in loop.args))
                env[stmt.target] = value
            else:
                env[stmt.target] = ops.evaluate(stmt.expr, env)
        return [ops.evaluate(o, env) for o in self.outputs]
