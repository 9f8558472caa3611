"""Symbolic example inputs: fake tensors whose dims are the model's named symbols (B, T, ...).

One forward under FakeTensorMode with a ShapeEnv gives every size as an expression in those symbols:
`2*T`, `floor((T - 400)/320) + 1`. The run is specialized at hint values (B=2, T=6, ...), which is also
where the equations are checked, so every guard the code took holds there.
"""

from __future__ import annotations

import sympy
import torch
from torch._dynamo.source import ConstantSource
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.utils._sympy.functions import CeilDiv, FloorDiv, Mod, PythonMod


class SymbolicInputs:
    """Fake inputs for one run, and the map from the ShapeEnv's symbols back to the model's names."""

    def __init__(self, hints: dict[str, int], device: str = "meta") -> None:
        self.hints = dict(hints)
        self.device = device
        self.shape_env = ShapeEnv(allow_scalar_outputs=True, allow_dynamic_output_shape_ops=True)
        self.mode = FakeTensorMode(shape_env=self.shape_env, allow_non_fake_inputs=True)
        self.symbols = {name: sympy.Symbol(name, positive=True, integer=True) for name in hints}
        self._map: dict = {}
        self._cache: dict = {}

    def tensor(self, name: str, dims: tuple, dtype: torch.dtype) -> torch.Tensor:
        """dims: ints (fixed) and symbol names."""
        concrete = [self.hints[d] if isinstance(d, str) else d for d in dims]
        base = torch.empty(concrete, dtype=dtype, device=self.device)
        dynamic = [DimDynamic.DYNAMIC if isinstance(d, str) else DimDynamic.STATIC for d in dims]
        fake = self.mode.from_tensor(base, symbolic_context=StatelessSymbolicContext(dynamic_sizes=dynamic),
                                     source=ConstantSource(name))
        for d, size in zip(dims, fake.shape):
            if isinstance(d, str) and isinstance(size, torch.SymInt):
                self._map[size.node.expr] = self.symbols[d]
        return fake

    def expr(self, size):
        """A size as a sympy expression in the model's symbols; an int where it is fixed."""
        if isinstance(size, bool):
            return size
        if isinstance(size, int):
            return size
        if isinstance(size, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            node_expr = size.node.expr
            known = self._cache.get(node_expr)
            if known is None:
                expr = readable(self.shape_env.replace(node_expr).xreplace(self._map))
                known = self._cache[node_expr] = int(expr) if expr.is_Integer else expr
            return known
        return size

    def specialized(self) -> list[str]:
        """Symbols the run fixed to their hint: code that needed their exact value (a Python int)."""
        fixed = []
        for sym_expr, name in self._map.items():
            replaced = self.shape_env.replace(sym_expr)
            if replaced.is_number and str(name) not in fixed:
                fixed.append(str(name))
        return fixed


def readable(expr):
    """torch's size functions as plain sympy: FloorDiv -> floor(a/b), so pages and JSON read them."""
    if not isinstance(expr, sympy.Basic):
        return expr
    return expr.replace(lambda e: isinstance(e, FloorDiv), lambda e: sympy.floor(e.args[0] / e.args[1])) \
               .replace(lambda e: isinstance(e, CeilDiv), lambda e: sympy.ceiling(e.args[0] / e.args[1])) \
               .replace(lambda e: isinstance(e, (Mod, PythonMod)), lambda e: sympy.Mod(e.args[0], e.args[1]))
