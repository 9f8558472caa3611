"""The source of a number the code computed in Python: √768 rather than 27.71, 50·√64 rather than 400.

A torch call receives a Python float after Python has done the arithmetic. The call's exact position in
the source (from the instruction that made it) finds its expression in the AST; a scalar operand built
from constants, numeric attributes and `math` is rebuilt as nodes, each leaf valued from the frame the call
ran in. The rebuilt expression must evaluate to the very number the call received, or it is not used.
A name that says epsilon becomes ε, a constant the page states once.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math

import torch

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations.nodes import ATOM, Node, Num
from atlas.analyse.equations.notation import Ident, applied, op, rm

EPS_WORDS = ("eps", "epsilon")


class Eps(Num):
    """A small constant added for numerical safety (ε): the page states its value once."""

    __slots__ = ()


@contextlib.contextmanager
def one_pass():
    """Each file is read once in a pass and let go at its end: a later pass must see the file as it is then."""
    try:
        yield
    finally:
        _expression.cache_clear()
        _lines.cache_clear()


@functools.lru_cache(maxsize=64)
def _lines(file: str) -> list[bytes] | None:
    try:
        with open(file, "rb") as f:
            return f.read().splitlines(keepends=True)
    except OSError:
        return None


@functools.lru_cache(maxsize=4096)
def _expression(file: str, span: tuple) -> ast.expr | None:
    """The expression at `span` (line, column, end line, end column; columns in UTF-8 bytes, as the compiler
    gives them), parsed from its own text: a whole file's syntax tree is large (0.6 MB for transformers'
    modeling_llama.py) and a pass needs a few dozen of its expressions."""
    lines = _lines(file)
    first, col, last, end = span
    if lines is None or not 1 <= first <= last <= len(lines):
        return None
    if first == last:
        text = lines[first - 1][col:end]
    else:
        text = lines[first - 1][col:] + b"".join(lines[first:last - 1]) + lines[last - 1][:end]
    try:                    # in parentheses: an expression may span lines, as it may inside the call around it
        return ast.parse(b"(" + text + b")", mode="eval").body
    except (SyntaxError, ValueError):
        return None


def expression_at(site) -> ast.expr | None:
    """The AST expression of the call a site made (a Call, a BinOp, an attribute)."""
    if site is None or site.span is None:
        return None
    return _expression(site.file, tuple(site.span))


def operands(expr: ast.expr, is_method: bool, index: int, key: str | None):
    """The AST of argument `index` (or keyword `key`) of the torch call `expr` made."""
    if isinstance(expr, ast.BinOp):
        return [expr.left, expr.right]
    if isinstance(expr, ast.Call):
        if key is not None:
            for kw in expr.keywords:
                if kw.arg == key:
                    return [kw.value]
        args = list(expr.args)
        if is_method:
            if index == 0:
                return [expr.func.value] if isinstance(expr.func, ast.Attribute) else []
            index -= 1
        return [args[index]] if 0 <= index < len(args) else []
    return []


class DtypeLimit(Num):
    """torch.finfo(x.dtype).min or .max: the extreme finite number of x's dtype. The check runs it in the check's
    precision, as forward() does (a float32 run's -3.4·10³⁸ is -1.8·10³⁰⁸ in float64)."""

    __slots__ = ()

    def notation(self, p):
        word = "lowest" if self.meta["limit"] == "min" else "highest"
        return applied(op(word), rm(self.meta["dtype"]))

    @property
    def prec(self):
        return ATOM

    def run(self, ev):
        info = torch.finfo(ev.dtype_of(getattr(torch, self.meta["dtype"])))
        return info.min if self.meta["limit"] == "min" else info.max


def _dtype_limit(node: ast.expr, scope: "_Scope") -> Node | None:
    """`torch.finfo(t.dtype).min`: the limit of a tensor's own dtype (a literal dtype stays a number)."""
    call = node.value
    if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords and _name(call.func) == "finfo"
            and isinstance(call.args[0], ast.Attribute) and call.args[0].attr == "dtype"):
        return None
    try:
        dtype = scope.value(call.args[0])
    except Exception:  # a name the frame does not hold
        return None
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        return None
    info = torch.finfo(dtype)
    return DtypeLimit(getattr(info, node.attr), limit=node.attr, dtype=str(dtype).removeprefix("torch."))


class _Scope:
    def __init__(self, scope) -> None:
        self.local, self.glob = scope

    def value(self, node: ast.expr):
        if isinstance(node, ast.Name):
            if node.id in self.local:
                return self.local[node.id]
            if node.id in self.glob:
                return self.glob[node.id]
            raise KeyError(node.id)
        if isinstance(node, ast.Attribute):
            return getattr(self.value(node.value), node.attr)
        raise KeyError(type(node).__name__)


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


MATH_CALLS = {"sqrt": m.Sqrt, "exp": m.Exp, "log": m.Log, "tanh": m.Tanh, "cos": m.Cos, "sin": m.Sin}


def rebuild(node: ast.expr, scope: _Scope) -> Node | None:
    """Nodes for a scalar expression; None where it is not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Num(node.value)
    if isinstance(node, ast.Attribute) and node.attr in ("min", "max") and isinstance(node.value, ast.Call):
        return _dtype_limit(node, scope)
    if isinstance(node, (ast.Name, ast.Attribute)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math":
            if node.attr == "pi":
                return Pi(math.pi)
            if node.attr == "e":
                return Num(math.e)
        try:
            value = scope.value(node)
        except Exception:  # a name the frame does not hold: not a scalar expression
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        name = _name(node).lower()
        if isinstance(value, float) and any(w in name.split("_") or name.endswith(w) for w in EPS_WORDS):
            return Eps(value)
        return Num(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = rebuild(node.operand, scope)
        if inner is None:
            return None
        return Num(-inner.value) if type(inner) is Num else m.Neg(inner)
    if isinstance(node, ast.BinOp):
        a, b = rebuild(node.left, scope), rebuild(node.right, scope)
        if a is None or b is None:
            return None
        ops = {ast.Add: m.Add, ast.Sub: m.Sub, ast.Mult: m.Mul, ast.Div: m.Div, ast.Pow: m.Pow,
               ast.FloorDiv: m.FloorDiv}
        op = ops.get(type(node.op))
        return op(a, b) if op is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id == "math" and node.func.attr in MATH_CALLS and len(node.args) == 1:
        inner = rebuild(node.args[0], scope)
        return MATH_CALLS[node.func.attr](inner) if inner is not None else None
    return None


class Pi(Num):
    __slots__ = ()

    def notation(self, p):
        return Ident("π")


def value_of(node) -> float | None:
    """Evaluate a rebuilt scalar expression with plain Python numbers."""
    if isinstance(node, Num):
        return node.value
    if not isinstance(node, Node) or not all(isinstance(a, Node) for a in node.args):
        return None                                 # a symbol, a size, or settings: not a plain number
    args = [value_of(a) for a in node.args]
    if any(a is None for a in args):
        return None
    fns = {m.Add: lambda a, b: a + b, m.Sub: lambda a, b: a - b, m.Mul: lambda a, b: a * b,
           m.Div: lambda a, b: a / b, m.Pow: lambda a, b: a ** b, m.FloorDiv: lambda a, b: a // b,
           m.Neg: lambda a: -a, m.Sqrt: math.sqrt, m.Exp: math.exp, m.Log: math.log, m.Tanh: math.tanh,
           m.Cos: math.cos, m.Sin: math.sin}
    fn = fns.get(type(node))
    try:
        return fn(*args) if fn is not None else None
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


def scalar_node(ev, index: int, key: str | None, value: float) -> Node | None:
    """The source expression of a float argument of a recorded call, if it can be rebuilt exactly."""
    scope = getattr(ev, "scope", None)
    expr = expression_at(ev.site)
    if scope is None or expr is None:
        return None
    s = _Scope(scope)
    for candidate in operands(expr, ev.name.startswith("Tensor."), index, key):
        node = rebuild(candidate, s)
        if node is None:
            continue
        got = value_of(node)
        if got is not None and (got == value or abs(got - value) <= 1e-12 * max(1.0, abs(value))):
            return node
    return None


def scalar_on_left(ev) -> bool:
    """`50 * x`: Python passed the tensor first; the source writes the number first."""
    expr = expression_at(ev.site)
    if not isinstance(expr, ast.BinOp):
        return False
    scope = _Scope(ev.scope if getattr(ev, "scope", None) is not None else ({}, {}))
    return rebuild(expr.left, scope) is not None and rebuild(expr.right, scope) is None
