"""The expression layer: sympy Functions that print to LaTeX and evaluate with torch.

Every operation a page shows is one of these classes (or a sympy number or
symbol). `latex()` prints an expression; `evaluate()` runs it on tensors. The
torch side of each op is written out (softmax as exp/sum, GELU through erf), so
evaluating a page's equations is an independent check of the module's forward().
"""

from __future__ import annotations

import math

import sympy
import torch
from sympy.printing.latex import LatexPrinter
from torch.nn import functional as F

ADD, MUL, POW, FUNC, ATOM = 40, 50, 60, 70, 1000


def _int(x) -> int:
    return int(x)


class Label(sympy.Symbol):
    """A name that only prints (the n of a mean, an activation's name); it has no value to run."""


class Op(sympy.Function):
    """Base: no automatic simplification; subclasses give `tex` and `run`."""

    precedence = FUNC

    @classmethod
    def eval(cls, *args):  # never rewrite the code's own structure
        return None

    def _latex(self, printer) -> str:
        return self.tex(printer, *self.args)

    def tex(self, p, *args) -> str:
        raise NotImplementedError

    def run(self, *values):
        raise NotImplementedError


def group(tex: str) -> str:
    """Braces around a base that already carries a sub/superscript or a prime: {p_{a}}_{1:768}."""
    return "{" + tex + "}" if any(c in tex for c in "_^'") else tex


def wrap(p, expr, prec: int, strict: bool = False) -> str:
    """Print `expr`, in parentheses when it binds looser than `prec`."""
    inner = p._print(expr)
    own = getattr(expr, "precedence", None)
    if own is None:
        own = sympy.printing.precedence.precedence(expr)
        if isinstance(expr, sympy.Number) and expr < 0:
            own = ADD
    if own < prec or (strict and own == prec):
        return r"\left(" + inner + r"\right)"
    return inner


# -- elementwise arithmetic -------------------------------------------------------
class Add(Op):
    elementwise = True
    precedence = ADD

    def tex(self, p, a, b):
        return f"{wrap(p, a, ADD)}+{wrap(p, b, ADD)}"

    def run(self, a, b):
        return a + b


class Sub(Op):
    elementwise = True
    precedence = ADD

    def tex(self, p, a, b):
        return f"{wrap(p, a, ADD)}-{wrap(p, b, ADD, strict=True)}"

    def run(self, a, b):
        return a - b


class Neg(Op):
    elementwise = True
    precedence = ADD

    def tex(self, p, a):
        return "-" + wrap(p, a, MUL)

    def run(self, a):
        return -a


def is_scalar(p, expr) -> bool:
    """Numbers, scalar symbols (ε), and elementwise operations of scalars only."""
    if isinstance(expr, sympy.Number) or expr is sympy.pi:
        return True
    if isinstance(expr, sympy.Symbol):
        return expr in p._settings.get("scalars", set())
    if getattr(expr, "elementwise", False) or isinstance(expr, (sympy.Pow, sympy.Mul, sympy.Add)):
        return all(is_scalar(p, a) for a in expr.args)
    return False


class Mul(Op):
    elementwise = True
    """Elementwise product: juxtaposition with a scalar, ⊙ between tensors."""

    precedence = MUL

    def tex(self, p, a, b):
        left, right = wrap(p, a, MUL), wrap(p, b, MUL)
        if is_scalar(p, a) or is_scalar(p, b):
            return f"{left}\\,{right}"
        return f"{left}\\odot {right}"

    def run(self, a, b):
        return a * b


class Div(Op):
    elementwise = True
    precedence = ATOM

    def tex(self, p, a, b):
        return r"\frac{" + p._print(a) + "}{" + p._print(b) + "}"

    def run(self, a, b):
        return a / b


class Pow(Op):
    elementwise = True
    precedence = POW

    def tex(self, p, a, b):
        return group(wrap(p, a, ATOM)) + "^{" + p._print(b) + "}"

    def run(self, a, b):
        return a ** b


class Sqrt(Op):
    elementwise = True
    precedence = ATOM

    def tex(self, p, a):
        return r"\sqrt{" + p._print(a) + "}"

    def run(self, a):
        return torch.sqrt(a) if isinstance(a, torch.Tensor) else math.sqrt(a)


class Rsqrt(Op):
    elementwise = True
    precedence = ATOM

    def tex(self, p, a):
        return r"\frac{1}{\sqrt{" + p._print(a) + "}}"

    def run(self, a):
        return torch.rsqrt(a) if isinstance(a, torch.Tensor) else 1 / math.sqrt(a)


def _unary(name: str, tex_name: str, fn, big: bool = False):
    def tex(self, p, a):
        inner = p._print(a)
        if big:
            return tex_name + r"\!\Big(" + inner + r"\Big)"
        return tex_name + r"\left(" + inner + r"\right)"

    def run(self, a):
        return fn(a) if isinstance(a, torch.Tensor) else fn(torch.tensor(a, dtype=torch.float64)).item()

    return type(name, (Op,), {"tex": tex, "run": run, "precedence": ATOM, "elementwise": True})


Tanh = _unary("Tanh", r"\tanh", torch.tanh, big=True)
Exp = _unary("Exp", r"\exp", torch.exp)
Log = _unary("Log", r"\log", torch.log)
Cos = _unary("Cos", r"\cos", torch.cos)
Sin = _unary("Sin", r"\sin", torch.sin)
Erf = _unary("Erf", r"\operatorname{erf}", torch.erf)
Sigmoid = _unary("Sigmoid", r"\sigma", lambda x: 1 / (1 + torch.exp(-x)))
Phi = _unary("Phi", r"\Phi", lambda x: 0.5 * (1 + torch.erf(x / math.sqrt(2))))


def _tensors_alike(a, b):
    """Two operands as tensors of one dtype, where either is a tensor; else the plain numbers."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=b.dtype)
        b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=a.dtype)
    return a, b


class Max(Op):
    elementwise = True
    precedence = ATOM

    def tex(self, p, a, b):
        return r"\max\!\big(" + p._print(a) + r",\;" + p._print(b) + r"\big)"

    def run(self, a, b):
        a, b = _tensors_alike(a, b)
        return torch.maximum(a, b) if isinstance(a, torch.Tensor) else max(a, b)


class Min(Op):
    elementwise = True
    precedence = ATOM

    def tex(self, p, a, b):
        return r"\min\!\big(" + p._print(a) + r",\;" + p._print(b) + r"\big)"

    def run(self, a, b):
        a, b = _tensors_alike(a, b)
        return torch.minimum(a, b) if isinstance(a, torch.Tensor) else min(a, b)


# -- reductions over one axis (keepdim) ------------------------------------------------
class Norm2(Op):
    """‖x‖₂ over an axis."""

    precedence = ATOM

    def tex(self, p, x, dim):
        return r"\lVert " + p._print(x) + r"\rVert_2"

    def run(self, x, dim):
        return torch.sqrt((x * x).sum(dim=_int(dim), keepdim=True))


class Mean(Op):
    """(1/n) Σ_j x_j over an axis; `n` is what the page prints."""

    precedence = ATOM

    def tex(self, p, x, dim, n):
        return r"\frac{1}{" + p._print(n) + r"}\sum_{j=1}^{" + p._print(n) + "}" + _indexed(p, x)

    def run(self, x, dim, n):
        return x.sum(dim=_int(dim), keepdim=True) / x.shape[_int(dim)]


def _indexed(p, x) -> str:
    """x_j, x_j^2 or (x_j - μ)^2: the summand of a mean over features."""
    if isinstance(x, Pow) and isinstance(x.args[0], Sub) and isinstance(x.args[0].args[0], sympy.Symbol):
        a, b = x.args[0].args
        return r"\left(" + group(p._print(a)) + "_j-" + wrap(p, b, MUL) + r"\right)^{" + p._print(x.args[1]) + "}"
    if isinstance(x, Pow) and isinstance(x.args[0], sympy.Symbol):
        return group(p._print(x.args[0])) + "_j^{" + p._print(x.args[1]) + "}"
    return group(wrap(p, x, ATOM)) + "_j"


class Softmax(Op):
    """exp(x_s) / Σ_u exp(x_u) over an axis."""

    precedence = ATOM

    def tex(self, p, x, dim):
        return r"\operatorname{softmax}\!\big(" + p._print(x) + r"\big)"

    def run(self, x, dim):
        e = torch.exp(x - x.amax(dim=_int(dim), keepdim=True))
        return e / e.sum(dim=_int(dim), keepdim=True)


# -- tensor structure ------------------------------------------------------------------
class MatMul(Op):
    precedence = MUL

    def tex(self, p, a, b):
        left = wrap(p, a, MUL, strict=not isinstance(a, MatMul))
        return left + r"\," + wrap(p, b, POW)

    def run(self, a, b):
        return a @ b


class Transpose(Op):
    """Swap two axes; the last two print as ᵀ."""

    precedence = POW

    def tex(self, p, x, d0, d1):
        if {int(d0), int(d1)} == {-1, -2}:
            return group(wrap(p, x, ATOM)) + r"^{\mathsf T}"
        return r"\operatorname{transpose}_{" + f"{int(d0)},{int(d1)}" + "}" + r"\!\left(" + p._print(x) + r"\right)"

    def run(self, x, d0, d1):
        return x.transpose(_int(d0), _int(d1))


class Reshape(Op):
    """Any view or reshape; the page shows the operation, the run keeps the code's sizes."""

    precedence = ATOM

    def tex(self, p, x, *sizes):
        if isinstance(x, Transpose) and {int(x.args[1]), int(x.args[2])} == {1, 2}:
            x = x.args[0]               # merging heads back: the page shows the operation on O itself
        return r"\operatorname{reshape}\!\left(" + p._print(x) + r"\right)"

    def run(self, x, *sizes):
        return x.reshape(*(_int(s) for s in sizes))


class Heads(Op):
    """x.view(B, T, nh, hs).transpose(1, 2): split the features into heads."""

    precedence = ATOM

    def tex(self, p, x, *sizes):
        return group(wrap(p, x, ATOM)) + "^{h}"

    def run(self, x, *sizes):
        return x.reshape(*(_int(s) for s in sizes)).transpose(1, 2)


class Expand(Op):
    """x.expand(...): the same values seen at a larger size, so the page shows x itself."""

    precedence = ATOM

    def tex(self, p, x, *sizes):
        return p._print(x)

    def run(self, x, *sizes):
        return x.expand(*(_int(a) for a in sizes))


class Unsqueeze(Op):
    """A new axis of size one (x[:, None], x.unsqueeze(d)): no change to the values."""

    precedence = ATOM

    def tex(self, p, x, dim):
        return p._print(x)

    def run(self, x, dim):
        return x.unsqueeze(_int(dim))


class Cat(Op):
    """[a; b] along an axis."""

    precedence = ATOM

    def tex(self, p, dim, *parts):
        return r"[\," + r";\;".join(p._print(x) for x in parts) + r"\,]"

    def run(self, dim, *parts):
        return torch.cat(parts, dim=_int(dim))


class Slice(Op):
    """x[..., start:stop] along an axis, printed 1-based as the seed pages do: x_{1:768}."""

    precedence = ATOM

    def tex(self, p, x, dim, start, stop):
        return group(wrap(p, x, ATOM)) + "_{" + p._print(start + 1) + ":" + p._print(stop) + "}"

    def run(self, x, dim, start, stop):
        dim, start, stop = _int(dim), _int(start), _int(stop)
        return x.narrow(dim, start, stop - start)


class Rows(Op):
    """Rows of a table: E[ids]."""

    precedence = ATOM

    def tex(self, p, table, ids):
        return wrap(p, table, ATOM) + r"\left[" + p._print(ids) + r"\right]"

    def run(self, table, ids):
        return table[ids]


class Arange(Op):
    precedence = ATOM

    def tex(self, p, n):
        return r"(0,\dots," + p._print(n - 1) + ")"

    def run(self, n):
        return torch.arange(_int(n))


class Zeros(Op):
    precedence = ATOM

    def tex(self, p, like):
        return r"\mathbf{0}"

    def run(self, like):
        return torch.zeros_like(like)


class Dropout(Op):
    """Dropout is the identity in evaluation mode, where pages are checked."""

    precedence = ATOM

    def tex(self, p, x, rate):
        return r"\operatorname{dropout}_{" + p._print(rate) + r"}\!\left(" + p._print(x) + r"\right)"

    def run(self, x, rate):
        return x


class Attention(Op):
    """softmax(q kᵀ / √d + M) v, with M the causal mask when `causal`."""

    precedence = ATOM

    def tex(self, p, q, k, v, causal, scale):
        mask = "+M" if bool(causal) else ""
        return (r"\operatorname{softmax}\!\Big(\frac{" + p._print(q) + r"\," + group(wrap(p, k, ATOM)) + r"^{\mathsf T}}{"
                + p._print(scale) + "}" + mask + r"\Big)\," + wrap(p, v, ATOM))

    def run(self, q, k, v, causal, scale):
        s = q @ k.transpose(-2, -1) / scale
        if bool(causal):
            T, S = s.shape[-2], s.shape[-1]
            s = s.masked_fill(torch.ones(T, S, dtype=torch.bool).triu(1), float("-inf"))
        e = torch.exp(s - s.amax(-1, keepdim=True))
        return (e / e.sum(-1, keepdim=True)) @ v


class Conv(Op):
    """W ⋆ x + b with the module's stride, padding, dilation and groups."""

    precedence = ADD

    def tex(self, p, x, w, b, nd, stride, padding, dilation, groups):
        core = wrap(p, w, ATOM) + r"\star " + wrap(p, x, ATOM)
        return core + ("" if b == sympy.S.Zero else "+" + p._print(b))

    def run(self, x, w, b, nd, stride, padding, dilation, groups):
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[_int(nd)]
        bias = None if isinstance(b, (int, float)) and b == 0 else b
        pad = padding if isinstance(padding, str) else tuple(_int(x) for x in padding)
        return fn(x, w, bias, tuple(_int(s) for s in stride), pad, tuple(_int(d) for d in dilation), _int(groups))


class Call(Op):
    """A child module applied to arguments; the run calls the real module."""

    precedence = ATOM

    def tex(self, p, module, *args):
        return p._print(module) + r"\!\left(" + ",\\,".join(p._print(a) for a in args) + r"\right)"

    def run(self, module, *args):
        return module(*args)


class Item(Op):
    """Element i of a tuple a module returns."""

    precedence = ATOM

    def tex(self, p, x, i):
        return group(p._print(x)) + "_{" + p._print(i) + "}"

    def run(self, x, i):
        return x[_int(i)]


class AtlasPrinter(LatexPrinter):
    """sympy's LaTeX printer with the page's symbol names and number style."""

    _default_settings = {**LatexPrinter._default_settings, "names": {}, "scalars": set()}

    def _print_Symbol(self, expr, style="plain"):
        names = self._settings["names"]
        tex = names[expr] if expr in names else super()._print_Symbol(expr, style)
        return symbol_tex(tex)

    def _print_Float(self, expr):
        return number_tex(float(expr))

    def _print_Integer(self, expr):
        return str(int(expr))


def symbol_tex(tex: str) -> str:
    """A symbol marked with a key of its own, so the site can highlight every occurrence of it."""
    import hashlib
    key = "s" + hashlib.sha1(tex.encode()).hexdigest()[:8]
    return r"\htmlData{sym=" + key + "}{" + tex + "}"


def plain_tex(tex: str, keep_streams: bool = True) -> str:
    """The LaTeX without symbol keys (and without stream classes unless kept): what a reader sees."""
    out, i = [], 0
    heads = ["\\htmlData{"] + ([] if keep_streams else ["\\htmlClass{"])
    while i < len(tex):
        head = next((h for h in heads if tex.startswith(h, i)), None)
        if head is None:
            out.append(tex[i])
            i += 1
            continue
        i = tex.index("}", i + len(head)) + 1          # skip the key or class
        if i < len(tex) and tex[i] == "{":               # unwrap the body: keep it, drop its braces
            depth, j = 1, i + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(tex[j], 0)
                j += 1
            out.append(plain_tex(tex[i + 1:j - 1], keep_streams))
            i = j
    return "".join(out)


def number_tex(x: float) -> str:
    """1e-05 -> 10^{-5}; 50.0 -> 50; 0.1 -> 0.1; π stays numeric."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    if x > 0:
        k = round(math.log10(x))
        if (k <= -3 or k >= 4) and abs(x - 10.0 ** k) <= 1e-12 * x:
            return "10^{" + str(k) + "}"
    return repr(x)


def latex(expr, names: dict, scalars: set) -> str:
    return AtlasPrinter({"names": names, "scalars": scalars}).doprint(expr)


def evaluate(expr, env: dict):
    """Run an expression: symbols come from `env`, ops run with torch."""
    if isinstance(expr, Label):
        return str(expr)
    if isinstance(expr, sympy.Symbol):
        if expr not in env:
            raise KeyError(f"no value for {expr}")
        return env[expr]
    if isinstance(expr, sympy.Integer):
        return int(expr)
    if isinstance(expr, (sympy.Float, sympy.Rational)):
        return float(expr)
    if isinstance(expr, sympy.Tuple):
        return tuple(evaluate(a, env) for a in expr)
    if expr is sympy.true or expr is sympy.false:
        return bool(expr)
    if isinstance(expr, Op):
        return expr.run(*(evaluate(a, env) for a in expr.args))
    if isinstance(expr, sympy.Add):
        vals = [evaluate(a, env) for a in expr.args]
        out = vals[0]
        for v in vals[1:]:
            out = out + v
        return out
    if isinstance(expr, sympy.Mul):
        vals = [evaluate(a, env) for a in expr.args]
        out = vals[0]
        for v in vals[1:]:
            out = out * v
        return out
    if isinstance(expr, sympy.Pow):
        return evaluate(expr.base, env) ** evaluate(expr.exp, env)
    if expr is sympy.pi:
        return math.pi
    if isinstance(expr, sympy.Function):
        fn = {"tanh": Tanh, "exp": Exp, "log": Log, "erf": Erf, "cos": Cos, "sin": Sin, "Max": Max, "Min": Min,
              "sqrt": Sqrt}.get(type(expr).__name__)
        if fn is not None:
            return fn(*expr.args).run(*(evaluate(a, env) for a in expr.args))
    raise TypeError(f"cannot evaluate {type(expr).__name__}: {expr}")


class ShapeOf(Op):
    """x.shape[i], read when the steps run; pages show the name it is assigned to."""

    precedence = ATOM

    def tex(self, p, x, i):
        return r"\operatorname{size}_{" + p._print(i) + r"}\!\left(" + p._print(x) + r"\right)"

    def run(self, x, i):
        return x.shape[_int(i)]


class FloorDiv(Op):
    elementwise = True
    precedence = MUL

    def tex(self, p, a, b):
        return r"\lfloor " + p._print(a) + "/" + p._print(b) + r"\rfloor"

    def run(self, a, b):
        return a // b


class Chunk(Op):
    """Piece i of n equal pieces along an axis."""

    precedence = ATOM

    def tex(self, p, x, n, i, dim):
        return r"\operatorname{chunk}_{" + p._print(i + 1) + r"/" + p._print(n) + r"}\!\left(" + p._print(x) + r"\right)"

    def run(self, x, n, i, dim):
        return x.chunk(_int(n), dim=_int(dim))[_int(i)]


class Flatten(Op):
    precedence = ATOM

    def tex(self, p, x, start, end):
        return r"\operatorname{flatten}\!\left(" + p._print(x) + r"\right)"

    def run(self, x, start, end):
        return x.flatten(_int(start), _int(end))


class Pick(Op):
    """x[:, [i], :]: one index along an axis, the axis kept."""

    precedence = ATOM

    def tex(self, p, x, dim, index):
        return group(wrap(p, x, ATOM)) + r"_{[" + p._print(index) + r"]}"

    def run(self, x, dim, index):
        dim, index = _int(dim), _int(index)
        return x.narrow(dim, index % x.shape[dim], 1)


class Cast(Op):
    """x.to(dtype), x.float(): the math is unchanged, but the run keeps the code's precision."""

    precedence = ATOM

    def tex(self, p, x, dtype):
        return p._print(x)

    def run(self, x, dtype):
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        return x.to(dtype) if isinstance(dtype, torch.dtype) else x


class DTypeOf(Op):
    """x.dtype, read when the steps run."""

    precedence = ATOM

    def tex(self, p, x):
        return r"\operatorname{dtype}(" + p._print(x) + ")"

    def run(self, x):
        return x.dtype
