"""Hand-written equations a model author supplies as `atlas_equations`, in sympy form.

    class ScaledRMSNorm(nn.Module):
        atlas_equations = ("y = gain * (x / Max(norm(x) / sqrt(features), eps))",)

Each line is `name = expression`. Names resolve to forward() inputs, the module's own parameters and
buffers, its numeric attributes (as their values; `eps` as ε), and earlier lines. They are verified
exactly like derived equations; a wrong one fails the build.
"""

from __future__ import annotations

import sympy
from sympy.parsing.sympy_parser import parse_expr
from torch import nn

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.leaves import Unsupported
from atlas.analyse.equations.nodes import Num, SizeOf, Sym
from atlas.analyse.equations.notation import Ident
from atlas.analyse.equations.program import Program, Step
from atlas.i18n import msg
from atlas.load.forward_calls import parameters

FUNCTIONS = {"norm", "mean", "softmax", "matmul", "Max", "Min", "sqrt", "tanh", "exp", "erf", "Phi", "sigmoid"}


def _node(e, names: dict, shapes: dict):
    if isinstance(e, sympy.Symbol):
        if str(e) not in names:
            raise Unsupported(msg("atlas_equations uses an unknown name %(name)s", name=repr(str(e))))
        return names[str(e)]
    if e.is_Integer:
        return Num(int(e))
    if e.is_Number:
        return Num(float(e))
    args = [_node(a, names, shapes) for a in e.args]
    if isinstance(e, sympy.Add):
        out = args[0]
        for a in args[1:]:
            out = m.Add(out, a)
        return out
    if isinstance(e, sympy.Mul):
        num = [a for a, raw in zip(args, e.args) if not (isinstance(raw, sympy.Pow) and raw.exp == -1)]
        den = [_node(raw.base, names, shapes) for raw in e.args if isinstance(raw, sympy.Pow) and raw.exp == -1]
        out = num[0] if num else Num(1)
        for a in num[1:]:
            out = m.Mul(out, a)
        for b in den:
            out = m.Div(out, b)
        return out
    if isinstance(e, sympy.Pow):
        if e.exp == sympy.Rational(1, 2):
            return m.Sqrt(args[0])
        if e.exp == -1:
            return m.Div(Num(1), args[0])
        return m.Pow(*args)
    name = type(e).__name__
    if name == "norm":
        return red.Norm2(args[0], dim=-1, keepdim=True)
    if name == "mean":
        return red.Mean(args[0], SizeOf(sympy.Symbol("n")), dim=-1, keepdim=True)
    if name == "softmax":
        return red.Softmax(args[0], SizeOf(sympy.Symbol("n")), dim=-1)
    simple = {"Max": m.Max, "Min": m.Min, "sqrt": m.Sqrt, "tanh": m.Tanh, "exp": m.Exp, "erf": m.Erf,
              "Phi": m.Phi, "sigmoid": m.Sigmoid, "matmul": t.MatMul}
    if name in simple:
        return simple[name](*args)
    raise Unsupported(msg("atlas_equations uses %(name)s, which the atlas cannot run", name=name))


def program(module: nn.Module, lines, input_names: list[str]) -> Program:
    prog = Program()
    names: dict = {}
    local = {f: sympy.Function(f) for f in FUNCTIONS}
    for name in parameters(module):
        if name in input_names:
            prog.add(f"in.{name}", "input", ("input", name), base=name)
            prog.inputs.append(name)
            names[name] = Sym(f"in.{name}")
    for name, _ in list(module.named_parameters(recurse=False)) + list(module.named_buffers(recurse=False)):
        prog.add(f"p.{name}", "param", ("param", "", name, False), base=Ident("γ") if name == "gain" else name)
        names[name] = Sym(f"p.{name}")
    for name, value in vars(module).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not name.startswith("_"):
            if name in ("eps", "epsilon"):
                key = f"c.eps.{float(value)!r}"
                prog.add(key, "const", ("const", float(value)), base="eps", scalar=True)
                prog.constants.append(key)
                names[name] = Sym(key)
            else:
                names[name] = Num(value)
    last = None
    for i, line in enumerate(lines):
        target, sep, text = str(line).partition("=")
        target = target.strip()
        if not sep or not target.isidentifier():
            raise Unsupported(msg("atlas_equations line %(line)s is not 'name = expression'", line=repr(line)))
        placeholders = {n: sympy.Symbol(n) for n in names}
        try:
            expr = parse_expr(text.strip(), local_dict={**placeholders, **local}, evaluate=False)
        except Exception as exc:
            raise Unsupported(msg("atlas_equations line %(line)s does not parse: %(error)s", line=repr(line),
                                  error=str(exc))) from None
        key = f"v{i + 1}"
        prog.add(key, "value", base=target)
        prog.steps.append(Step(key, _node(expr, names, {})))
        names[target] = Sym(key)
        last = key
    if last is None:
        raise Unsupported(msg("atlas_equations is empty"))
    prog.symbols[last].output = True
    prog.outputs.append(Sym(last))
    return prog
