"""Hand-written equations a model author supplies as `atlas_equations`, in sympy form.

    class ScaledRMSNorm(nn.Module):
        atlas_equations = ("y = gain * (x / Max(norm(x) / sqrt(features), eps))",)

Each line is `name = expression`. Names resolve to forward() inputs, the module's
own parameters and buffers, its numeric attributes (as their values), and earlier
lines. They are verified exactly like derived equations; a wrong one fails the build.
"""

from __future__ import annotations

import inspect

import sympy
from sympy.parsing.sympy_parser import parse_expr
from torch import nn

from atlas.equations import ops
from atlas.equations.leaves import Unsupported
from atlas.equations.program import Binding, Program, Stmt
from atlas.equations.symbols import tex_name
from atlas.i18n import msg

FUNCTIONS = {
    "norm": lambda x: ops.Norm2(x, -1),
    "mean": lambda x: ops.Mean(x, -1, ops.Label("n")),
    "softmax": lambda x: ops.Softmax(x, -1),
    "matmul": ops.MatMul,
    "Max": ops.Max,
    "Min": ops.Min,
    "sqrt": ops.Sqrt,
    "tanh": ops.Tanh,
    "exp": ops.Exp,
    "erf": ops.Erf,
    "Phi": ops.Phi,
    "sigmoid": ops.Sigmoid,
}


def program(module: nn.Module, lines, input_names: list[str]) -> Program:
    prog = Program()
    ns: dict = dict(FUNCTIONS)
    for name in inspect.signature(module.forward).parameters:
        if name in input_names:
            ns[name] = prog.symbol(f"in.{name}", tex_name(name), Binding("input", name=name))
            prog.inputs.append(name)
    for name, p in list(module.named_parameters(recurse=False)) + list(module.named_buffers(recurse=False)):
        ns[name] = prog.symbol(f"p.{name}", r"\gamma" if name == "gain" else tex_name(name), Binding("param", "", name))
    for name, value in vars(module).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not name.startswith("_"):
            if name in ("eps", "epsilon"):
                ns[name] = prog.symbol(f"c.{name}", r"\varepsilon", Binding("const", value=float(value)), scalar=True)
                prog.stmts.append(Stmt(ns[name], sympy.Float(value)))
            else:
                ns[name] = sympy.Integer(value) if isinstance(value, int) else sympy.Float(value)
    last = None
    for line in lines:
        target, sep, text = str(line).partition("=")
        target = target.strip()
        if not sep or not target.isidentifier():
            raise Unsupported(msg("atlas_equations line %(line)s is not 'name = expression'", line=repr(line)))
        try:
            expr = parse_expr(text.strip(), local_dict=ns, evaluate=False)
        except Exception as exc:
            raise Unsupported(msg("atlas_equations line %(line)s does not parse: %(error)s", line=repr(line), error=str(exc))) from None
        sym = prog.symbol(f"o.{target}", tex_name(target))
        prog.stmts.append(Stmt(sym, expr))
        ns[target] = sym
        last = sym
    if last is None:
        raise Unsupported(msg("atlas_equations is empty"))
    prog.outputs.append(last)
    return prog
