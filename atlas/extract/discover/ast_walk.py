"""Reading forward()'s syntax tree: a function's node, the operand under a scaling by numbers, numeric literals,
every call in evaluation order, and the parameter an argument binds to."""

from __future__ import annotations

import ast
import inspect
import textwrap

from torch import nn


def scaled(expr: ast.expr) -> ast.expr:
    """The operand under a scaling by numbers (`2 * math.pi * x` -> `x`), which keeps its shape."""
    while isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Div, ast.Add, ast.Sub)):
        if is_number(expr.left):
            expr = expr.right
        elif is_number(expr.right):
            expr = expr.left
        else:
            break
    return expr


def is_number(expr: ast.expr) -> bool:
    """A literal, `math.pi`, or arithmetic of those."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float))
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id == "math"
    if isinstance(expr, ast.BinOp):
        return is_number(expr.left) and is_number(expr.right)
    return isinstance(expr, ast.UnaryOp) and is_number(expr.operand)


def post_order(node: ast.AST):
    """Every Call (and `a @ b`) under `node`, children first, in source order; nested function bodies are
    skipped."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield from post_order(child)
    if isinstance(node, ast.Call) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)):
        yield node


def function_node(fn) -> ast.FunctionDef:
    fn = inspect.unwrap(fn)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise TypeError("not a function")
    return node


def parameter_of(module: nn.Module, arg_index: int | None, keyword: str | None) -> str | None:
    """The name of the forward() parameter an argument binds to: its keyword, or the parameter at its position."""
    if keyword is not None:
        return keyword
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    return params[arg_index].name if arg_index is not None and arg_index < len(params) else None
