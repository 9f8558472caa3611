"""Reading forward()'s syntax tree: the operand under a scaling by numbers, numeric literals, and every call in
evaluation order."""

from __future__ import annotations

import ast


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
