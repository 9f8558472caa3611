"""How close the equations must come to forward(): the tolerance of the check's dtype (or of a lower one the code
casts to), widened where the values computed call for it (`Conditioning`), the error measured, and the bound pages
report in decades of the tolerance."""

from __future__ import annotations

import math

import torch

from atlas.analyse.equations.ops_nn import Apply
from atlas.analyse.equations.ops_tensor import Cast
from atlas.analyse.equations.program import Program
from atlas.i18n import msg

TOLERANCE = {torch.float64: 1e-9, torch.float32: 2e-4, torch.bfloat16: 5e-2, torch.float16: 5e-3}


LOW = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def flat(x) -> list:
    """Tensors of a result in a fixed order: tuples and lists in order, dicts by their values."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for i in x for t in flat(i)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in flat(v)]
    return []


def tolerance_for(prog: Program, dtype: torch.dtype, working: str = "float32") -> float:
    return TOLERANCE[precision_for(prog, dtype, working)]


def precision_for(prog: Program, dtype: torch.dtype, working: str = "float32") -> torch.dtype:
    """The precision whose tolerance applies: the check's, or a lower one where the code casts down to it
    (a cast to float32 that changed nothing in the record still runs in float32 when checked in float64)."""
    low = None
    retried = {working} if working != "float32" else set()     # a record made in bfloat16 to get through a kernel
    for name in prog.dtypes - retried:
        if name in LOW and (low is None or TOLERANCE[LOW[name]] > TOLERANCE[low]):
            low = LOW[name]
    for step in prog.steps:
        for node in step.node.walk():
            name = node.meta.get("dtype") if isinstance(node, Cast) else None
            if isinstance(node, Apply):
                d = node.args[1].get("dtype") if isinstance(node.args[1], dict) else None
                name = str(d).removeprefix("torch.") if d is not None else None
            if name in LOW and name not in retried and (low is None or TOLERANCE[LOW[name]] > TOLERANCE[low]):
                low = LOW[name]
    if low is not None and TOLERANCE[low] > TOLERANCE[dtype]:
        return low
    return dtype


SLACK = 4       # roundings of a function's argument (a product, a sum of two) and of its own value, with room


class Conditioning:
    """Watches a run of the equations (Program.run's `watch`) for what forward()'s rounding alone does to them.

    An elementwise function f of a value x that forward() computes in a precision whose numbers are ε apart at 1
    (torch.finfo's eps) inherits x's rounding error, up to |x|·ε/2, times |f'(x)|: in units of the output's scale
    max(1, |f(x)|), an error of κ·ε/2, where κ = max |x·f'(x)| / max(1, |f(x)|) over the values. κ is small for
    most functions (1 for log, the argument for exp, 0 where a mask made exp 0), and large only where a bounded
    function takes large arguments: the cos and sin of a rotary table's angles, positions × frequencies up to
    T·max(inv_freq), so that cos of an angle near 8192 computed in float32 is off by up to 5e-4 whatever the
    equations. f' is taken by autograd on the values the run computes. The tolerance becomes SLACK·κ·ε where that
    is larger than the precision's own, and the page says so (`note`)."""

    def __init__(self) -> None:
        self.condition = 0.0            # κ
        self.function = None            # the function where κ is largest ("cos"), and its largest argument there
        self.argument = 0.0

    def __call__(self, node, kids, out) -> None:
        function = getattr(node, "function", None)
        x = kids[0] if function is not None and len(kids) == 1 else None
        if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()):
            return
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            y = function(x)
            (slope,) = torch.autograd.grad(y.sum(), x)
        kappa = ((x.detach() * slope).abs() / y.detach().abs().clamp_min(1)).nan_to_num(0.0, 0.0, 0.0)
        worst = float(kappa.max())
        if worst > self.condition:
            self.condition, self.function = worst, type(node).__name__.lower()
            self.argument = float(x.detach().abs().nan_to_num(0.0, 0.0, 0.0).max())

    def tolerance(self, base: float, precision: torch.dtype) -> float:
        """The larger of `base` and SLACK·κ·ε, rounded up to one significant digit (a page reads 4e-03, not
        3.906e-03 that moves with the sizes' last rounding)."""
        wide = SLACK * self.condition * torch.finfo(precision).eps
        if wide <= base:
            return base
        exponent = math.floor(math.log10(wide))
        return float(f"{math.ceil(wide / 10 ** exponent - 1e-9)}e{exponent}")

    def note(self, tolerance: float, base: float, precision: torch.dtype):
        """The sentence that states a widened tolerance and why; None where it is the precision's own."""
        if tolerance <= base:
            return None
        return msg("The tolerance follows the values computed: forward() takes %(function)s of arguments up to "
                   "%(argument)s in %(dtype)s, whose rounding alone moves its value by about %(condition)s·ε "
                   "(ε = %(eps)s); the tolerance is %(slack)s times that, rounded up: %(tolerance)s instead of "
                   "%(default)s", function=f"`{self.function}`", argument=_figure(self.argument),
                   dtype=str(precision).removeprefix("torch."), condition=_figure(self.condition),
                   eps=f"{torch.finfo(precision).eps:.3g}", slack=str(SLACK), tolerance=f"{tolerance:g}",
                   default=f"{base:g}")


def _figure(x: float):
    """A whole number where it is one to the eye (an int, grouped by the page's language), else three digits."""
    return round(x) if x >= 100 else f"{x:.3g}"


def nan_only_in(expected: list, got: list) -> tuple[int, int] | None:
    """(NaN values in forward()'s outputs where the equations' are numbers, values in all), or None if none."""
    nan = total = 0
    for e, a in zip(expected, got):
        if isinstance(e, torch.Tensor) and (e.is_floating_point() or e.is_complex()):
            nan += int((torch.isnan(e) & ~torch.isnan(a.to(e.dtype))).sum())
            total += e.numel()
    return (nan, total) if nan else None


def relative_error(e: torch.Tensor, a: torch.Tensor) -> float:
    if e.numel() == 0:
        return 0.0
    if not (e.is_floating_point() or e.is_complex()):
        return 0.0 if torch.equal(a.to(e.dtype), e) else math.inf
    a = a.to(e.dtype)
    both_nan = torch.isnan(e) & torch.isnan(a)
    same_inf = torch.isinf(e) & (a == e)
    ok = both_nan | same_inf
    finite = torch.isfinite(e) & torch.isfinite(a)
    if bool((~(ok | finite)).any()):
        return math.inf
    if not bool(finite.any()):
        return 0.0
    scale = max(1.0, float(e[finite].abs().max()))
    return float((a[finite] - e[finite]).abs().max()) / scale


def reported_bound(error: float, tolerance: float) -> float:
    """The smallest of tolerance/1000, /100, /10 and the tolerance itself that the error is within: a bound in
    decades, so that a page stays the same from machine to machine (an error's last digits do not), without saying
    "within 2e-04" of a float32 rotary table whose error is 3e-07."""
    bounds = [float(f"{tolerance / 10 ** k:.3g}") for k in (3, 2, 1)]     # 2e-07, not 2.0000000000000002e-07
    return next((bound for bound in bounds if error <= bound), tolerance)
