"""Symbolic example inputs: fake tensors whose dims are the model's named symbols (B, T, ...).

One forward under FakeTensorMode with a ShapeEnv gives every size as an expression in those symbols:
`2*T`, `floor((T - 400)/320) + 1`. The run is specialized at hint values (B=2, T=6, ...), which is also
where the equations are checked, so every guard the code took holds there.
"""

from __future__ import annotations

import re

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext
from torch.utils._sympy.functions import CeilDiv, FloorDiv, Mod, PythonMod

from atlas.extract.trace.shape_env import ROUNDINGS, AssumingShapeEnv, Decompose, guard_site, lines_read_for_stacks
from atlas.extract.trace.size_values import Required, most_halved, multiple_from, near, passing_bound, value_at

_RELATIONS = (sympy.StrictGreaterThan, sympy.GreaterThan, sympy.StrictLessThan, sympy.LessThan)


class SymbolicInputs:
    """Fake inputs for one run, and the map from the ShapeEnv's symbols back to the model's names."""

    def __init__(self, hints: dict[str, int], device: str = "meta") -> None:
        self.hints = dict(hints)
        self.device = device
        self.shape_env = AssumingShapeEnv(True, allow_scalar_outputs=True, allow_dynamic_output_shape_ops=True)
        with lines_read_for_stacks():
            self.mode = FakeTensorMode(shape_env=self.shape_env, allow_non_fake_inputs=True)
        # No dispatch cache: its entries go to a cache of the class, and each holds a weak finalizer on the weights
        # it saw; their keys hold this run's symbols and so its ShapeEnv for as long as the model lives.
        self.mode.cache_enabled = False
        self.decompose = Decompose()
        self.symbols = {name: sympy.Symbol(name, positive=True, integer=True) for name in hints}
        self._map: dict = {}
        self._cache: dict = {}

    def tensor(self, name: str, dims: tuple, dtype: torch.dtype) -> torch.Tensor:
        """dims: ints (fixed) and symbol names."""
        from torch._dynamo.source import ConstantSource  # torch._dynamo takes 1 s to import: only when tracing
        concrete = [self.hints[d] if isinstance(d, str) else d for d in dims]
        base = torch.empty(concrete, dtype=dtype, device=self.device)
        dynamic = [DimDynamic.DYNAMIC if isinstance(d, str) else DimDynamic.STATIC for d in dims]
        with lines_read_for_stacks():
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
            return self.expr_of(size.node.expr)
        return size

    def expr_of(self, node_expr):
        """A ShapeEnv expression in the model's symbols."""
        known = self._cache.get(node_expr)
        if known is None:
            expr = readable(self.shape_env.replace(node_expr).xreplace(self._map))
            known = self._cache[node_expr] = int(expr) if expr.is_Integer else expr
        return known

    def upper_bounds(self) -> dict[str, tuple[int, str | None]]:
        """The largest size the code lets each symbol take, and the line that said so: a guard the run added
        (`assert t <= block_size`, a slice of a 64-row table that must hold T rows), as the ShapeEnv's range."""
        out = {}
        for sym_expr, name in self._map.items():
            upper = self.shape_env.var_to_range.get(sym_expr)
            upper = upper.upper if upper is not None else None
            if getattr(upper, "is_Integer", False) and int(upper) < 2 ** 31:
                site = next(((g.sloc.maybe_user_loc or str(g.sloc)).strip().strip("()") for g in self.shape_env.guards
                             if sym_expr in g.expr.free_symbols and isinstance(g.expr, sympy.core.relational.Relational)
                             and not isinstance(g.expr, (sympy.Eq, sympy.Ne))), None)
                out.setdefault(str(name), (int(upper), site))
        return out

    def conditions(self) -> list[tuple[str, str | None]]:
        """The conditions on the sizes that a branch of the code tested and the run took, where a remainder decides
        them (Zamba2 pads T up to a multiple of 16 and cuts it back only if it padded: at T = 32 the record holds
        for multiples of 16), or a rounding does (SEW pools T by 2, upsamples, and pads back to T when T was odd:
        its guard compares 2*floor(T/2) with T): (the condition in the model's symbols, file:line). Pins (T == 6)
        are said apart."""
        by_site: dict[str, str] = {}
        for condition, site in self.branch_conditions():
            text = str(condition)
            if site not in by_site or len(text) < len(by_site[site]):
                by_site[site] = text
        return [(text, site) for site, text in by_site.items()]

    def branch_conditions(self) -> list[tuple[object, str]]:
        """Every condition of conditions(), each site's all (Swin's "the window covers the map" holds at one stage and
        not at the next): (the sympy condition in the model's symbols, file:line)."""
        out = []
        for g in self.shape_env.guards:
            e = g.expr
            if not e.has(*ROUNDINGS) or not e.free_symbols <= set(self._map):
                continue
            site = (g.sloc.maybe_user_loc or str(g.sloc)).strip().strip("()")
            if site not in getattr(self.shape_env, "branches", ()):    # a view's divisibility: no branch
                continue
            condition = readable(e.xreplace(self._map))
            if condition not in (sympy.true, sympy.false):      # padded to a multiple, then asked if it is one
                out.append((condition, site))
        return out

    def specialized(self) -> list[str]:
        """Symbols the run fixed to their hint: code that needed their exact value (a Python int), or a number
        made from it (`int(math.ceil(H / 2) * 2)`: a guard that 2*ceiling(H/2) is 40 holds for H = 39 or 40 only)."""
        return [name for name, _ in self._pinned()]

    def specialized_sites(self) -> list[str]:
        """"T = 6 (zoo.py:459)": each fixed symbol, its value, and the line of the code that fixed it."""
        out = []
        for name, sym_expr in self._pinned():
            site = guard_site(self.shape_env, sym_expr)
            out.append(f"{name} = {self.hints[name]}" + (f" ({site})" if site else ""))
        return out

    def named(self, text: str) -> str:
        """A message with the run's own size symbols (s35, in torch's errors) written as the model's (H)."""
        names = {str(sym): str(name) for sym, name in self._map.items()}
        return re.sub(r"\bs\d+\b", lambda m: names.get(m.group(0), m.group(0)), text)

    def refused_sizes(self, error: str | None = None) -> list[Required]:
        """The input sizes the code asked for where the run stopped (`error`, its file:line last): a size it compared
        with a number and found different (`assert h == self.image_size`, which the run's 40 failed); a size it
        needs a multiple of a number (`assert h % 8 == 0`): the nearest from the run's up; a maximum or minimum it
        raised past (`if height > max_size: raise`): the largest (smallest) size that passes. A run that stopped
        there may run at that size."""
        out = []
        for g in self.shape_env.guards:
            e = g.expr
            site = (g.sloc.maybe_user_loc or str(g.sloc)).strip().strip("()")
            if isinstance(e, _RELATIONS) and error is not None and near(site, error):
                out += self._bound(e, site)
            if not isinstance(e, sympy.Ne):
                continue
            if e.lhs.is_Symbol or e.rhs.is_Symbol:
                sym, number = (e.lhs, e.rhs) if e.lhs.is_Symbol else (e.rhs, e.lhs)
                if sym in self._map and number.is_Integer and int(number) >= 2:
                    out.append(Required(str(self._map[sym]), int(number), site))
            elif e.lhs.is_Integer or e.rhs.is_Integer:
                number, size = (e.lhs, e.rhs) if e.lhs.is_Integer else (e.rhs, e.lhs)
                if number == 0 and isinstance(size, (Mod, PythonMod, sympy.Mod)) and size.args[1].is_Integer:
                    out += self._multiple(size, site) if error is not None and near(site, error) else []
                    continue
                out += [Required(name, value, site) for name, value in self._equal_at(size, int(number))]
        return out

    def _one_size(self, expr):
        """(the ShapeEnv symbol, the others at their sizes) where `expr` is in one input size besides the batch."""
        symbols = [s for s in expr.free_symbols if s in self._map and str(self._map[s]) != "B"]
        if len(symbols) != 1 or any(s not in self._map for s in expr.free_symbols):
            return None, {}
        return symbols[0], {s: self.hints[str(self._map[s])] for s in expr.free_symbols if s != symbols[0]}

    def _multiple(self, mod, site: str) -> list[Required]:
        sym, others = self._one_size(mod)
        if sym is None:
            return []
        name = str(self._map[sym])
        found = multiple_from(mod, sym, self.hints[name], others)
        if found is None:
            return []
        after = multiple_from(mod, sym, found[1] + 1, others)
        size = most_halved(*found)
        return [Required(name, size, site, "multiple", str(readable(mod.args[0].xreplace(self._map))),
                         int(mod.args[1]), self.hints[name], *found, most_halved(*after) - size if after else 0)]

    def _bound(self, relation, site: str) -> list[Required]:
        sym, others = self._one_size(relation)
        if sym is None:
            return []
        name = str(self._map[sym])
        found = passing_bound(relation, sym, self.hints[name], others)
        return [] if found is None else [Required(name, found[1], site, found[0], hint=self.hints[name])]

    def _equal_at(self, size, number: int, largest: int = 4096) -> list[tuple[str, int]]:
        """A size made from the input's sizes that the code compared with a number, found different: a learned
        table of `(32 // 4) ** 2 + 1` positions added to floor(H/4)·floor(W/4) + 1 patches. The smallest size for
        its symbols, all alike (a square image), at which it is that number; none where the batch is among them."""
        symbols = sorted(size.free_symbols, key=lambda s: str(self._map.get(s, s)))
        if number < 2 or not symbols or any(s not in self._map or str(self._map[s]) == "B" for s in symbols):
            return []
        for value in range(2, largest + 1):     # a value where a divisor made from it is 0 is no answer
            if value_at(size, {s: value for s in symbols}) == number:
                return [(str(self._map[s]), value) for s in symbols]
        return []

    def pinned_at_one(self) -> list[str]:
        """Symbols an equality guard pinned because a size made from them was 1 (or 0) at the run's sizes: an image
        so small that the last feature map is 1 x 1, where an adaptive pool or a broadcast takes its size-1 path.
        Sizes that leave that size above 1 may pin nothing; a Python loop over positions pins at any size."""
        out: list[str] = []
        for guard in self.shape_env.guards:
            e = guard.expr
            if not isinstance(e, sympy.Eq) or e.has(Mod, PythonMod, sympy.Mod):
                continue
            number, size = (e.lhs, e.rhs) if e.lhs.is_number else (e.rhs, e.lhs)
            if number.is_number and number in (0, 1) and not size.is_number and not size.is_Symbol:
                out += [str(self._map[x]) for x in size.free_symbols if x in self._map and str(self._map[x]) not in out]
        return out

    def _pinned(self) -> list[tuple[str, object]]:
        """(symbol name, ShapeEnv symbol) of each symbol a replacement or an equality guard with a number fixed."""
        out: dict[str, object] = {}
        for sym_expr, name in self._map.items():
            if self.shape_env.replace(sym_expr).is_number:
                out.setdefault(str(name), sym_expr)
        for guard in self.shape_env.guards:
            e = guard.expr
            if isinstance(e, sympy.Eq) and (e.lhs.is_number or e.rhs.is_number) \
                    and not e.has(Mod, PythonMod, sympy.Mod) \
                    and not self._relation(e):
                for sym_expr in e.free_symbols:
                    if sym_expr in self._map and str(self._map[sym_expr]) in self.hints:
                        out.setdefault(str(self._map[sym_expr]), sym_expr)
        return list(out.items())

    def _relation(self, e) -> bool:
        """Whether an equality with a number among several sizes holds with each at twice its value too: a relation
        between them, not a size fixed. nn.TransformerDecoder's cross-attention checks floor(16·B/B′) = 16, the
        target's batch against the memory's, which held at B = 3 and holds at B = 6; B stays a symbol."""
        symbols = [s for s in e.free_symbols if s in self._map and str(self._map[s]) in self.hints]
        if len(symbols) < 2 or len(symbols) != len(e.free_symbols):
            return False
        doubled = value_at(e, {s: 2 * self.hints[str(self._map[s])] for s in symbols})
        return doubled is sympy.true


def readable(expr):
    """torch's size functions as plain sympy: FloorDiv -> floor(a/b), so pages and JSON read them; and a floor
    that is a ceiling, written as one (a stride-2 conv's floor(H/2 - 1/2) + 1 is ceiling(H/2))."""
    if not isinstance(expr, sympy.Basic):
        return expr
    return expr.replace(lambda e: isinstance(e, FloorDiv), lambda e: sympy.floor(e.args[0] / e.args[1])) \
               .replace(lambda e: isinstance(e, CeilDiv), lambda e: sympy.ceiling(e.args[0] / e.args[1])) \
               .replace(lambda e: isinstance(e, (Mod, PythonMod)), lambda e: sympy.Mod(e.args[0], e.args[1])) \
               .replace(lambda e: _as_ceiling(e) is not None, _as_ceiling) \
               .replace(lambda e: _divisibility(e) is not None, _divisibility)


def _divisibility(e):
    """Mod(a·x, m) against 0 is Mod(x, m/gcd(a, m)) against 0: m divides a·x exactly where m/gcd(a, m) divides x,
    and a positive factor outside changes nothing. Zamba2 pads (-T) % 256 positions where that is positive, which
    sympy writes Mod(255*T, 256) > 0: T is no multiple of 256, Mod(T, 256) > 0; the branch not taken, <= 0 (a
    remainder is never negative: = 0), alike. None where it is no such test."""
    if not isinstance(e, (sympy.Eq, sympy.Ne, sympy.StrictGreaterThan, sympy.LessThan)) or e.rhs != 0:
        return None
    c, mod = e.lhs.as_coeff_Mul()
    if not (c.is_Integer and c > 0 and isinstance(mod, sympy.Mod) and mod.args[1].is_Integer):
        return None
    x, m = mod.args
    a, rest = x.as_coeff_Mul()
    if not a.is_Integer or rest.is_integer is not True or (a == 1 and c == 1):
        return None
    return e.func(sympy.Mod(rest, m // sympy.igcd(a, m)), 0)


def _as_ceiling(e):
    """A floor that is a ceiling, with nothing added: floor((x + q - 1)/q), or floor((x - 1)/q) + 1 (a stride-q
    conv's or pool's length), is ceiling(x/q) for x a sum of integers with integer coefficients. None where it is
    not one (floor((x - 3)/2), a kernel of 3, stays as it is)."""
    if isinstance(e, sympy.floor):
        found = _floor_shift(e)
        return sympy.ceiling(found[0]) if found is not None and found[1] == 0 else None
    if not isinstance(e, sympy.Add):
        return None
    k, rest = e.as_coeff_Add()
    floors = [t for t in sympy.Add.make_args(rest) if isinstance(t, sympy.floor)]
    for f in floors:
        found = _floor_shift(f)
        if found is not None and k.is_Integer and k + found[1] == 0:
            return rest - f + sympy.ceiling(found[0])
    return None


def _floor_shift(f):
    """(x/q, k) for floor((x + m)/q) = ceiling(x/q) + k, where m + 1 is a multiple of q; None otherwise."""
    shift, rest = sympy.expand(f.args[0]).as_coeff_Add()
    if rest == 0:
        return None
    terms = sympy.Add.make_args(rest)
    q = sympy.ilcm(1, *[t.as_coeff_Mul()[0].q for t in terms])
    m = shift * q
    if q < 2 or not m.is_Integer or (m + 1) % q != 0 or not all(
            (t * q).as_coeff_Mul()[0].is_Integer and t.as_coeff_Mul()[1].is_integer for t in terms):
        return None
    return rest, (m + 1) / q - 1
