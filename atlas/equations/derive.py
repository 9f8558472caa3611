"""Steps of a composite module, derived from the source of its forward().

Each assignment becomes a step named after the code's variable. A call of a
child module becomes, by what the child is:
- a leaf with a one-line equation (Linear, GELU, ...) or a composite that is pure
  math (no children of its own): its expression, inlined;
- a composite child of the documented component: its own steps, as a section;
- anything else: the child's operator, linked to its page.
Tensor methods and torch / F / math functions print as math. Anything else is
reported as unsupported, with the file and line.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from dataclasses import dataclass, field

import sympy
import torch
from torch import nn

from atlas.equations import leaves, ops
from atlas.equations.leaves import Unsupported
from atlas.equations.program import Binding, Loop, Program, Stmt
from atlas.equations.symbols import primed, subscripted, tex_name
from atlas.i18n import msg

EPS_NAMES = {"eps", "epsilon", "variance_epsilon", "norm_eps"}
GAIN_NAMES = {"gain": r"\gamma", "gamma": r"\gamma", "scale": r"\gamma", "beta": r"\beta"}
MAX_INLINE_OPS = 40


# -- values the interpreter tracks ----------------------------------------------------------
@dataclass
class Tensor:
    expr: object
    section: str | None = None
    trailing: list = field(default_factory=list)    # constant steps (ε = 10⁻⁵) shown after the step


@dataclass
class Size:
    expr: object
    static: int | None = None


@dataclass
class Const:
    value: object


@dataclass
class ModuleRef:
    module: nn.Module
    path: str
    attr: str


@dataclass
class ModuleListRef:
    modules: list
    path: str
    attr: str


@dataclass
class Shape:
    tensor: object
    static: tuple | None


@dataclass
class Tup:
    items: list


@dataclass
class Split:
    tensor: object
    size: object
    dim: int


@dataclass
class Namespace:
    name: str


NAMESPACES = {"torch": "torch", "F": "F", "math": "math", "nn": "nn", "functional": "F"}


@dataclass
class Frame:
    module: nn.Module
    path: str                       # relative to the documented component
    depth: int
    section: str | None
    file: str
    first_line: int
    vars: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    ret: object = None


def _join(path: str, attr: str) -> str:
    return f"{path}.{attr}" if path else attr


def op_count(expr) -> int:
    return sum(1 for _ in sympy.preorder_traversal(expr)) if isinstance(expr, sympy.Basic) else 0


class Deriver:
    def __init__(self, prog: Program) -> None:
        self.prog = prog

    # -- entry ---------------------------------------------------------------------------
    def component(self, module: nn.Module, input_dims: dict[str, tuple]) -> None:
        """Fill the program with the steps of `module`'s forward; inputs from the derived shapes."""
        builder = leaves.builder_for(module)
        params = list(inspect.signature(module.forward).parameters.values())
        ins, args = [], {}
        for param in params:
            if param.name in input_dims:
                shown = "x" if param.name == "input" else tex_name(param.name)
                sym = self.prog.symbol(f"in.{param.name}", shown, Binding("input", name=param.name))
                self.prog.inputs.append(param.name)
                ins.append(sym)
                args[param.name] = Tensor(sym)
            elif param.default is not inspect.Parameter.empty:
                args[param.name] = Const(param.default)
            elif param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            else:
                raise Unsupported(msg("forward() parameter %(name)s has no example input", name=repr(param.name)))
        if builder is not None:
            leaf = leaves.build(module, self.prog, "", ins, None)
            self.prog.summary = leaf.summary
            self.prog.stmts.extend(s for s in leaf.stmts if not _is_const(s))
            self._output(leaf.out)
            self.prog.stmts.extend(s for s in leaf.stmts if _is_const(s))
            return
        frame = self._frame(module, "", 0, None)
        frame.vars.update(args)
        for name, value in args.items():
            if isinstance(value, Tensor):
                self._static_dims[value.expr] = input_dims.get(name)
        result = self._call_forward(frame)
        if isinstance(result, Tup):     # (logits, None): the tensors, in order, as forward() returns them
            items = [self._tensor(v, frame, None).expr for v in result.items
                     if not (isinstance(v, Const) and v.value is None)]
            self._output(sympy.Tuple(*items) if len(items) > 1 else items[0])
        else:
            self._output(self._tensor(result, frame, None).expr)

    _static_dims: dict

    def _output(self, expr) -> None:
        items = list(expr) if isinstance(expr, sympy.Tuple) else [expr]
        for i, item in enumerate(items):
            if isinstance(item, sympy.Symbol):
                self.prog.outputs.append(item)
            else:
                base = r"\mathrm{out}" if "y" in self.prog.names.values() else "y"
                name = base if len(items) == 1 else f"{base}_{{{i + 1}}}"
                sym = self.prog.symbol(f"out.{i}", name)
                self.prog.stmts.append(Stmt(sym, item))
                self.prog.outputs.append(sym)

    def _frame(self, module: nn.Module, path: str, depth: int, section: str | None) -> Frame:
        fn = type(module).forward
        try:
            lines, first = inspect.getsourcelines(fn)
            file = inspect.getsourcefile(fn) or "?"
        except (OSError, TypeError):
            raise Unsupported(msg("the source of %(cls_name)s.forward is not available", cls_name=type(module).__name__)) from None
        frame = Frame(module, path, depth, section, file, first)
        frame.tree = ast.parse(textwrap.dedent("".join(lines)))
        return frame

    def _call_forward(self, frame: Frame):
        fn = frame.tree.body[0]
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise Unsupported(msg("%(cls_name)s.forward is not a plain function", cls_name=type(frame.module).__name__))
        self._body(frame, fn.body)
        if frame.ret is None:
            raise self._err(frame, fn, msg("forward() has no return statement"))
        return frame.ret

    def _err(self, frame: Frame, node, what: str) -> Unsupported:
        line = frame.first_line + getattr(node, "lineno", 1) - 1
        import os
        place = f"{os.path.basename(frame.file)}:{line}"
        return Unsupported(msg("%(what)s (%(place)s)", what=what, place=place))

    # -- statements --------------------------------------------------------------------------
    def _body(self, frame: Frame, body: list) -> bool:
        for node in body:
            if self._stmt(frame, node):
                return True
        return False

    def _stmt(self, frame: Frame, node) -> bool:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return False
        if isinstance(node, (ast.Pass, ast.Assert)):
            return False
        if isinstance(node, ast.Return):
            frame.ret = self._expr(frame, node.value) if node.value is not None else Const(None)
            return True
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            self._assign(frame, node.targets[0], self._expr(frame, node.value), node)
            return False
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            self._assign(frame, node.target, self._expr(frame, node.value), node)
            return False
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            value = self._binop(frame, node.op, self._expr(frame, node.target), self._expr(frame, node.value), node)
            self._assign(frame, node.target, value, node)
            return False
        if isinstance(node, ast.If):
            test = self._static(frame, node.test)
            return self._body(frame, node.body if test else node.orelse)
        if isinstance(node, ast.For):
            self._loop(frame, node)
            return False
        raise self._err(frame, node, msg("unsupported statement %(kind)s", kind=type(node).__name__))

    def _assign(self, frame: Frame, target, value, node) -> None:
        if isinstance(target, ast.Name):
            self._bind(frame, target.id, value, node)
            return
        if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(t, ast.Name) for t in target.elts):
            names = [t.id for t in target.elts]
            items = self._unpack(frame, value, len(names), node)
            for name, item in zip(names, items):
                self._bind(frame, name, item, node)
            return
        raise self._err(frame, node, msg("unsupported assignment target"))

    def _unpack(self, frame: Frame, value, n: int, node) -> list:
        if isinstance(value, Tup) and len(value.items) == n:
            return value.items
        if isinstance(value, Shape):
            return [self._dim(frame, value, i) for i in range(n)]
        if isinstance(value, Split):
            out = []
            for i in range(n):
                if isinstance(value.size, Size) and value.size.static is not None:
                    s = value.size.static
                    out.append(Tensor(ops.Slice(value.tensor, value.dim, i * s, (i + 1) * s)))
                else:
                    out.append(Tensor(ops.Chunk(value.tensor, n, i, value.dim)))
            return out
        if isinstance(value, Tensor):
            return [Tensor(ops.Item(value.expr, i)) for i in range(n)]
        raise self._err(frame, node, msg("cannot unpack this value"))

    def _bind(self, frame: Frame, name: str, value, node) -> None:
        if isinstance(value, Tensor):
            if isinstance(value.expr, (sympy.Symbol, ops.DTypeOf)) and not value.trailing:
                frame.vars[name] = value
                return
            version = frame.versions.get(name, -1) + 1 if name in frame.vars or name in frame.versions else 0
            frame.versions[name] = version
            sym = self.prog.symbol(f"{frame.path}:{name}", primed(tex_name(name), version))
            self.prog.stmts.append(Stmt(sym, value.expr, section=value.section or frame.section))
            for extra in value.trailing:
                self.prog.stmts.append(extra)
            frame.vars[name] = Tensor(sym)
        elif isinstance(value, Size) and value.static is None and not isinstance(value.expr, sympy.Symbol):
            sym = self.prog.symbol(f"{frame.path}:{name}", tex_name(name))
            self.prog.stmts.append(Stmt(sym, value.expr, shown=False))
            frame.vars[name] = Size(sym, None)
        else:
            frame.vars[name] = value

    def _loop(self, frame: Frame, node: ast.For) -> None:
        seq = self._expr(frame, node.iter)
        body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        if not (isinstance(seq, ModuleListRef) and isinstance(node.target, ast.Name) and len(body) == 1
                and isinstance(body[0], ast.Assign) and isinstance(body[0].targets[0], ast.Name)
                and isinstance(body[0].value, ast.Call) and isinstance(body[0].value.func, ast.Name)
                and body[0].value.func.id == node.target.id):
            raise self._err(frame, node, msg("unsupported loop (only `for m in self.<list>: x = m(x, ...)`)"))
        carried = body[0].targets[0].id
        start = self._tensor(frame.vars.get(carried), frame, node)
        args = tuple(self._tensor(self._expr(frame, a), frame, node).expr for a in body[0].value.args)
        if start.expr not in args:
            raise self._err(frame, node, msg("the loop does not pass its value from one module to the next"))
        mods = self.prog.symbol(f"{seq.path}@list", seq.attr, Binding("modules", seq.path))
        first = seq.modules[0]
        name = getattr(type(first), "__name__", "Module")
        loop = Loop(mods, start.expr, args, len(seq.modules), name)
        base = tex_name(carried)
        sym = self.prog.symbol(f"{frame.path}:{carried}", f"{base}_{{{len(seq.modules)}}}")
        shown_args = ",\\,".join(f"{base}_n" if a == start.expr else self.prog.tex(a) for a in args)
        tex = (rf"{base}_{{n+1}} = \operatorname{{{name}}}_n\!\left({shown_args}\right),\quad "
               rf"n=0,\dots,{len(seq.modules) - 1};\quad {base}_0 = {self.prog.tex(start.expr)}")
        self.prog.stmts.append(Stmt(sym, loop, lhs=tex, section=frame.section, link=seq.path))
        frame.vars[carried] = Tensor(sym)

    def _static(self, frame: Frame, node):
        """The value of a condition that depends only on constants and the module's attributes."""
        value = self._expr(frame, node)
        if isinstance(value, Const):
            return value.value
        if isinstance(value, Size) and value.static is not None:
            return value.static
        raise self._err(frame, node, msg("a condition that depends on tensor values"))

    # -- expressions ---------------------------------------------------------------------------
    def _expr(self, frame: Frame, node):
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.Name):
            return self._name(frame, node)
        if isinstance(node, ast.Attribute):
            return self._attribute(frame, node)
        if isinstance(node, ast.Subscript):
            return self._subscript(frame, node)
        if isinstance(node, ast.BinOp):
            return self._binop(frame, node.op, self._expr(frame, node.left), self._expr(frame, node.right), node)
        if isinstance(node, ast.UnaryOp):
            value = self._expr(frame, node.operand)
            if isinstance(node.op, ast.USub):
                if isinstance(value, Const) and isinstance(value.value, (int, float)):
                    return Const(-value.value)
                if isinstance(value, Size) and value.static is not None:
                    return Size(sympy.Integer(-value.static), -value.static)
                return Tensor(ops.Neg(self._tensor(value, frame, node).expr))
            if isinstance(node.op, ast.Not):
                return Const(not self._static(frame, node.operand))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self._expr(frame, node.left), self._expr(frame, node.comparators[0])
            if isinstance(left, (Const, Size)) and isinstance(right, (Const, Size)):
                a = left.value if isinstance(left, Const) else left.static
                b = right.value if isinstance(right, Const) else right.static
                if isinstance(left, Size) and a is None or isinstance(right, Size) and b is None:
                    raise self._err(frame, node, msg("a comparison of sizes known only at run time"))
                op = node.ops[0]
                table = {ast.Is: lambda: a is b, ast.IsNot: lambda: a is not b, ast.Eq: lambda: a == b,
                         ast.NotEq: lambda: a != b, ast.Lt: lambda: a < b, ast.Gt: lambda: a > b,
                         ast.LtE: lambda: a <= b, ast.GtE: lambda: a >= b}
                if type(op) in table:
                    return Const(table[type(op)]())
        if isinstance(node, ast.BoolOp):
            values = [self._static(frame, v) for v in node.values]
            return Const(all(values) if isinstance(node.op, ast.And) else any(values))
        if isinstance(node, (ast.List, ast.Tuple)):
            return Tup([self._expr(frame, e) for e in node.elts])
        if isinstance(node, ast.Call):
            return self._call(frame, node)
        if isinstance(node, ast.IfExp):
            return self._expr(frame, node.body if self._static(frame, node.test) else node.orelse)
        raise self._err(frame, node, msg("unsupported expression %(kind)s", kind=type(node).__name__))

    def _name(self, frame: Frame, node: ast.Name):
        if node.id in frame.vars:
            return frame.vars[node.id]
        if node.id == "self":
            return ModuleRef(frame.module, frame.path, "")
        if node.id in NAMESPACES:
            return Namespace(NAMESPACES[node.id])
        glob = getattr(type(frame.module).forward, "__globals__", {}).get(node.id)
        if isinstance(glob, (int, float, bool)):
            return Const(glob)
        if glob is torch:
            return Namespace("torch")
        if glob is torch.nn.functional:
            return Namespace("F")
        if glob is math:
            return Namespace("math")
        raise self._err(frame, node, msg("unknown name %(name)s", name=repr(node.id)))

    def _attribute(self, frame: Frame, node: ast.Attribute):
        base = self._expr(frame, node.value)
        attr = node.attr
        if isinstance(base, ModuleRef) and base.attr == "" and base.module is frame.module:
            return self._self_attr(frame, attr, node)
        if isinstance(base, ModuleRef) and isinstance(getattr(base.module, attr, None), nn.Module):
            sub = getattr(base.module, attr)
            if isinstance(sub, nn.ModuleList):
                return ModuleListRef(list(sub), _join(base.path, attr), attr)
            return ModuleRef(sub, _join(base.path, attr), attr)
        if isinstance(base, Tensor) and attr == "shape":
            return Shape(base.expr, self._static_of(frame, base.expr))
        if isinstance(base, Tensor) and attr in ("T", "mT"):
            return Tensor(ops.Transpose(base.expr, -2, -1))
        if isinstance(base, Tensor) and attr == "dtype":
            return Tensor(ops.DTypeOf(base.expr))
        if isinstance(base, Tensor) and attr == "device":
            return Const(None)
        if isinstance(base, Namespace):
            if base.name == "math" and attr == "pi":
                return Tensor(sympy.pi)
            if base.name == "math" and attr in ("e", "inf"):
                return Const(getattr(math, attr))
            full = f"{base.name}.{attr}"
            return Namespace({"torch.nn.functional": "F", "nn.functional": "F", "torch.nn": "nn"}.get(full, full))
        raise self._err(frame, node, msg("unsupported attribute .%(attr)s", attr=attr))

    def _self_attr(self, frame: Frame, attr: str, node):
        module = frame.module
        if attr == "training":
            return Const(False)         # pages describe evaluation mode, where they are checked
        value = getattr(module, attr, None)
        path = frame.path
        if isinstance(value, nn.Parameter) or (isinstance(value, torch.Tensor) and attr in module._buffers):
            base = GAIN_NAMES.get(attr, tex_name(attr))
            owner = path.rsplit(".", 1)[-1] if path else ""
            tex = subscripted(base, owner) if owner and attr in GAIN_NAMES else base
            return Tensor(self.prog.symbol(f"{path}.{attr}", tex, Binding("param", path, attr)))
        if isinstance(value, (nn.ModuleList, nn.Sequential)) and not _has_own_forward(value):
            return ModuleListRef(list(value), _join(path, attr), attr)
        if isinstance(value, nn.ModuleList):
            return ModuleListRef(list(value), _join(path, attr), attr)
        if isinstance(value, nn.Module):
            return ModuleRef(value, _join(path, attr), attr)
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return Const(value)
        if isinstance(value, int):
            return Size(sympy.Integer(value), value)
        if isinstance(value, float):
            if attr in EPS_NAMES:
                sym = self.prog.symbol(f"{path}.{attr}", r"\varepsilon", Binding("const", value=value), scalar=True)
                return Tensor(sym, trailing=[Stmt(sym, sympy.Float(value), section=frame.section)])
            return Tensor(sympy.Float(value))
        if isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value):
            return Tup([Size(sympy.Integer(v), v) for v in value])
        raise self._err(frame, node, msg("unsupported attribute self.%(attr)s (%(kind)s)", attr=attr, kind=type(value).__name__))

    def _static_of(self, frame: Frame, expr):
        """Fixed sizes of a tensor, where it is one of the component's inputs (None for symbolic dims)."""
        return self._static_dims.get(expr)

    def _dim(self, frame: Frame, shape: Shape, i: int) -> Size:
        if shape.static is not None and -len(shape.static) <= i < len(shape.static) and shape.static[i] is not None:
            return Size(sympy.Integer(shape.static[i]), shape.static[i])
        return Size(ops.ShapeOf(shape.tensor, i), None)

    def _subscript(self, frame: Frame, node: ast.Subscript):
        base = self._expr(frame, node.value)
        index = node.slice
        if isinstance(base, Shape):
            i = self._static(frame, index)
            return self._dim(frame, base, int(i))
        if isinstance(base, Tup):
            return base.items[int(self._static(frame, index))]
        if isinstance(base, Tensor):
            return Tensor(self._index(frame, base.expr, index, node))
        raise self._err(frame, node, msg("unsupported subscript"))

    def _index(self, frame: Frame, x, index, node):
        parts = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        if len(parts) == 1 and isinstance(parts[0], ast.Slice) and parts[0].step is None:
            lo = self._size(frame, parts[0].lower, 0) if parts[0].lower is not None else sympy.Integer(0)
            hi = self._size(frame, parts[0].upper, None)
            return ops.Slice(x, 0, lo, hi)
        if (len(parts) == 2 and isinstance(parts[0], ast.Constant) and parts[0].value is Ellipsis
                and isinstance(parts[1], ast.Slice) and parts[1].step is None):
            lo = self._size(frame, parts[1].lower, 0) if parts[1].lower is not None else sympy.Integer(0)
            hi = self._size(frame, parts[1].upper, None)
            return ops.Slice(x, -1, lo, hi)
        picks = [i for i, p in enumerate(parts) if isinstance(p, ast.List)]
        if (len(picks) == 1 and len(parts[picks[0]].elts) == 1
                and all(isinstance(p, ast.Slice) and p.lower is p.upper is p.step is None
                        for i, p in enumerate(parts) if i != picks[0])):
            index = int(self._static(frame, parts[picks[0]].elts[0]))
            return ops.Pick(x, picks[0], index)
        if all(isinstance(p, ast.Slice) and p.lower is p.upper is p.step is None
               or isinstance(p, ast.Constant) and p.value is None for p in parts):
            out = x
            for i, p in enumerate(parts):
                if isinstance(p, ast.Constant):
                    out = ops.Unsqueeze(out, i)
            return out
        raise self._err(frame, node, msg("unsupported tensor indexing"))

    def _size(self, frame: Frame, node, default):
        if node is None:
            return default
        value = self._expr(frame, node)
        if isinstance(value, Size):
            return value.expr
        if isinstance(value, Const) and isinstance(value.value, int):
            return sympy.Integer(value.value)
        raise self._err(frame, node, msg("a slice bound that is not a size"))

    def _tensor(self, value, frame: Frame, node) -> Tensor:
        if isinstance(value, Tensor):
            return value
        if isinstance(value, Size):
            return Tensor(value.expr)
        if isinstance(value, Const) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
            return Tensor(sympy.Integer(value.value) if isinstance(value.value, int) else sympy.Float(value.value))
        raise self._err(frame, node, msg("expected a tensor, got %(kind)s", kind=type(value).__name__))

    def _binop(self, frame: Frame, op, left, right, node):
        if isinstance(left, (Size, Const)) and isinstance(right, (Size, Const)):
            a = left.static if isinstance(left, Size) else left.value
            b = right.static if isinstance(right, Size) else right.value
            la = left.expr if isinstance(left, Size) else _num(left.value)
            rb = right.expr if isinstance(right, Size) else _num(right.value)
            ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b))
            if isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)) and (ints or a is None or b is None):
                known = ints and a is not None and b is not None
                fn = {ast.Add: (ops.Add, lambda: a + b), ast.Sub: (ops.Sub, lambda: a - b),
                      ast.Mult: (ops.Mul, lambda: a * b), ast.FloorDiv: (ops.FloorDiv, lambda: a // b)}[type(op)]
                if known:
                    value = fn[1]()
                    return Size(sympy.Integer(value), value)
                return Size(fn[0](la, rb), None)
        l_t, r_t = self._tensor(left, frame, node), self._tensor(right, frame, node)
        table = {ast.Add: ops.Add, ast.Sub: ops.Sub, ast.Mult: ops.Mul, ast.Div: ops.Div, ast.MatMult: ops.MatMul,
                 ast.Pow: ops.Pow, ast.FloorDiv: ops.FloorDiv}
        if type(op) not in table:
            raise self._err(frame, node, msg("unsupported operator %(kind)s", kind=type(op).__name__))
        trailing = l_t.trailing + r_t.trailing
        return Tensor(table[type(op)](l_t.expr, r_t.expr), trailing=trailing)

    # -- calls -----------------------------------------------------------------------------
    def _call(self, frame: Frame, node: ast.Call):
        func = node.func
        args = [self._expr(frame, a) for a in node.args]
        kwargs = {k.arg: self._expr(frame, k.value) for k in node.keywords if k.arg}
        if isinstance(func, ast.Name) and func.id in ("int", "float") and len(args) == 1:
            return args[0]
        if (isinstance(func, ast.Attribute) and func.attr == "forward" and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"):
            return self._super_forward(frame, args, node)
        callee = self._expr(frame, func) if not (isinstance(func, ast.Attribute)) else None
        if isinstance(func, ast.Attribute):
            base = self._expr(frame, func.value)
            if isinstance(base, ModuleRef) and base.attr == "" and base.module is frame.module:
                callee = self._self_attr(frame, func.attr, func)
            elif isinstance(base, ModuleRef) and isinstance(getattr(base.module, func.attr, None), nn.Module):
                callee = ModuleRef(getattr(base.module, func.attr), _join(base.path, func.attr), func.attr)
            elif isinstance(base, Namespace):
                return self._function(frame, f"{base.name}.{func.attr}", args, kwargs, node)
            elif isinstance(base, (Tensor, Size)):
                return self._method(frame, base, func.attr, args, kwargs, node)
            else:
                raise self._err(frame, node, msg("unsupported call .%(method)s()", method=func.attr))
        if isinstance(callee, ModuleRef):
            return self._child(frame, callee, args, kwargs, node)
        raise self._err(frame, node, msg("unsupported call"))

    def _child(self, frame: Frame, ref: ModuleRef, args, kwargs, node):
        child = ref.module
        ins = [self._tensor(a, frame, node) for a in args]
        trailing = [t for a in ins for t in a.trailing]
        params = list(inspect.signature(child.forward).parameters)
        for name, value in kwargs.items():
            if name not in params:
                raise self._err(frame, node, msg("unknown keyword %(name)s for %(cls_name)s", name=repr(name), cls_name=type(child).__name__))
        exprs = [a.expr for a in ins]
        builder = leaves.builder_for(child)
        if builder is not None:
            try:
                leaf = leaves.build(child, self.prog, ref.path, exprs, ref.attr)
            except Unsupported:
                return Tensor(self._opaque(ref, exprs, kwargs), trailing=trailing)
            if leaf.inline and not leaf.stmts and not kwargs and _inlinable(leaf.out, exprs):
                return Tensor(leaf.out, trailing=trailing)
            return Tensor(self._opaque(ref, exprs, kwargs), trailing=trailing)
        try:
            sub = self._frame(child, ref.path, frame.depth + 1, frame.section)
            sub_params = [p for p in inspect.signature(child.forward).parameters.values()]
            bound = inspect.signature(child.forward).bind(*ins, **kwargs)
            bound.apply_defaults()
            for p in sub_params:
                if p.name in bound.arguments:
                    v = bound.arguments[p.name]
                    sub.vars[p.name] = v if not isinstance(v, inspect.Parameter) else Const(None)
            start = len(self.prog.stmts)
            result = self._call_forward(sub)
            emitted = self.prog.stmts[start:]
            del self.prog.stmts[start:]
        except (Unsupported, TypeError):
            return Tensor(self._opaque(ref, exprs, kwargs), trailing=trailing)
        if isinstance(result, Tup):
            return Tensor(self._opaque(ref, exprs, kwargs), trailing=trailing)
        out = self._tensor(result, sub, node)
        visible = [s for s in emitted if s.shown and not _is_const(s)]
        pure = all(not isinstance(s.expr, Loop) and not _calls(s.expr) for s in emitted) and not _calls(out.expr)
        if pure:
            expr, repeated = out.expr, False
            for s in reversed(visible):
                repeated |= sum(1 for node in sympy.preorder_traversal(expr) if node == s.target) > 1
                expr = expr.xreplace({s.target: s.expr})
            if not repeated and op_count(expr) <= MAX_INLINE_OPS and _inlinable(expr, exprs):
                consts = [s for s in emitted if _is_const(s)] + out.trailing
                hidden = [s for s in emitted if not s.shown]
                self.prog.stmts.extend(hidden)
                return Tensor(expr, trailing=trailing + consts)
        if frame.depth == 0:
            title = getattr(child, "atlas_name", None) or type(child).__name__
            for s in emitted:
                s.section = s.section or title
            self.prog.stmts.extend(emitted)
            return Tensor(out.expr, section=title, trailing=trailing + out.trailing)
        return Tensor(self._opaque(ref, exprs), trailing=trailing)

    def _layer_norm(self, frame: Frame, args, kwargs, node):
        """F.layer_norm(x, shape, weight, bias, eps) over the last axis, written out in steps."""
        values = args + [kwargs.get(k) for k in ("normalized_shape", "weight", "bias", "eps")[len(args) - 1:]]
        x = self._tensor(values[0], frame, node).expr
        weight, bias = values[2] if len(values) > 2 else None, values[3] if len(values) > 3 else None
        eps = float(_value(values[4])) if len(values) > 4 and values[4] is not None else 1e-5
        n = ops.Label("n")
        mu = self.prog.symbol(f"{frame.path}:mu", r"\mu")
        var = self.prog.symbol(f"{frame.path}:var", r"\sigma^2")
        eps_sym = self.prog.symbol(f"{frame.path}:eps", r"\varepsilon", Binding("const", value=eps), scalar=True)
        self.prog.stmts.append(Stmt(mu, ops.Mean(x, -1, n), lhs=r"\mu_n(x)", section=frame.section))
        self.prog.stmts.append(Stmt(var, ops.Mean(ops.Pow(ops.Sub(x, mu), 2), -1, n), lhs=r"\sigma_n^2(x)",
                                    section=frame.section))
        out = ops.Div(ops.Sub(x, mu), ops.Sqrt(ops.Add(var, eps_sym)))
        if isinstance(weight, Tensor):
            out = ops.Mul(weight.expr, out)
        if isinstance(bias, Tensor):
            out = ops.Add(out, bias.expr)
        return Tensor(out, trailing=[Stmt(eps_sym, sympy.Float(eps), section=frame.section)])

    def _super_forward(self, frame: Frame, args, node):
        """super().forward(x) in a subclass of a registered leaf: the base class's equations."""
        for cls in type(frame.module).__mro__[1:]:
            if cls in leaves.REGISTRY and cls.forward is not type(frame.module).forward:
                ins = [self._tensor(a, frame, node).expr for a in args]
                leaf = leaves.REGISTRY[cls](leaves._B(frame.module, self.prog, frame.path, None), *ins)
                self.prog.stmts.extend(leaf.stmts)
                return Tensor(leaf.out)
        raise self._err(frame, node, msg("super().forward() of a class with no registered equations"))

    def _definition(self, expr):
        """The expression a step assigned to a symbol, else the expression itself."""
        for stmt in reversed(self.prog.stmts):
            if stmt.target == expr and not isinstance(stmt.expr, Loop):
                return stmt.expr
        return expr

    def _opaque(self, ref: ModuleRef, exprs, kwargs=None):
        """A child shown as its operator and run as itself. Its arguments must all be positional tensors:
        a call that passes keywords cannot be shown faithfully, so it is reported, not simplified."""
        passed = {k: v for k, v in (kwargs or {}).items()
                  if not (isinstance(v, Const) and v.value is _default(ref.module, k))}
        if passed:
            raise Unsupported(msg("a call of %(cls_name)s with keyword arguments (%(names)s)",
                                  cls_name=type(ref.module).__name__, names=", ".join(sorted(passed))))
        name = type(ref.module).__name__
        sym = self.prog.symbol(f"{ref.path}@", rf"\operatorname{{{name}}}", Binding("module", ref.path))
        return ops.Call(sym, *exprs)

    def _method(self, frame: Frame, base, name: str, args, kwargs, node):
        if isinstance(base, Size):
            raise self._err(frame, node, msg("unsupported method .%(method)s() on a size", method=name))
        x = base.expr
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)

        def size_args(values):
            items = values[0].items if len(values) == 1 and isinstance(values[0], Tup) else values
            return [self._tensor(v, frame, node).expr for v in items]

        if name in ("view", "reshape"):
            return Tensor(ops.Reshape(x, *size_args(args)))
        if name == "transpose":
            d0, d1 = (int(self._static(frame, a)) for a in node.args[:2])
            if isinstance(x, ops.Reshape) and {d0, d1} == {1, 2}:
                return Tensor(ops.Heads(x.args[0], *x.args[1:]))
            return Tensor(ops.Transpose(x, d0, d1))
        if name in ("contiguous", "clone", "detach"):
            return base
        if name in ("float", "double", "half", "bfloat16"):
            return Tensor(ops.Cast(x, ops.Label({"float": "float32", "double": "float64", "half": "float16"}.get(name, name))))
        if name == "type_as":
            return Tensor(ops.Cast(x, ops.DTypeOf(self._tensor(args[0], frame, node).expr)))
        if name == "to":
            target = args[0] if args else kwargs.get("dtype")
            if isinstance(target, Namespace) and target.name.startswith("torch."):
                return Tensor(ops.Cast(x, ops.Label(target.name.split(".", 1)[1])))
            if isinstance(target, Tensor) and isinstance(target.expr, ops.DTypeOf):
                return Tensor(ops.Cast(x, target.expr))
            if target is None or isinstance(target, Const):      # .to(device) and the like
                return base
            raise self._err(frame, node, msg("unsupported .to() argument"))
        if name in ("split",):
            split_dim = kwargs.get("dim", args[1] if len(args) > 1 else Const(0))
            return Split(x, args[0], int(_value(split_dim)))
        if name == "chunk":
            n = int(_value(args[0]))
            cdim = int(_value(kwargs.get("dim", args[1] if len(args) > 1 else Const(0))))
            return Tup([Tensor(ops.Chunk(x, n, i, cdim)) for i in range(n)])
        if name == "expand":
            return Tensor(ops.Expand(x, *size_args(args)))
        if name == "unsqueeze":
            return Tensor(ops.Unsqueeze(x, int(_value(args[0]))))
        if name == "size":
            if args:
                return self._dim(frame, Shape(x, self._static_of(frame, x)), int(_value(args[0])))
            return Shape(x, self._static_of(frame, x))
        if name == "flatten":
            start = int(_value(args[0])) if args else 0
            end = int(_value(args[1])) if len(args) > 1 else -1
            return Tensor(ops.Flatten(x, start, end))
        unary = {"tanh": ops.Tanh, "exp": ops.Exp, "sqrt": ops.Sqrt, "rsqrt": ops.Rsqrt, "sigmoid": ops.Sigmoid,
                 "cos": ops.Cos, "sin": ops.Sin, "log": ops.Log}
        if name in unary and not args:
            return Tensor(unary[name](x))
        if name == "softmax":
            return Tensor(ops.Softmax(x, int(_value(dim if dim is not None else args[0]))))
        if name == "pow":
            return Tensor(ops.Pow(x, self._tensor(args[0], frame, node).expr))
        if name in ("clamp", "clamp_min") and ("min" in kwargs or name == "clamp_min") and "max" not in kwargs:
            low = kwargs.get("min", args[0] if args else None)
            lo = self._tensor(low, frame, node)
            return Tensor(ops.Max(x, lo.expr), trailing=lo.trailing)
        if name in ("norm",) and _value(kwargs.get("keepdim", Const(False))) and _value(kwargs.get("p", Const(2))) == 2:
            return Tensor(ops.Norm2(x, int(_value(kwargs.get("dim", args[0] if args else Const(-1))))))
        if name == "mean" and _value(kwargs.get("keepdim", Const(False))):
            d = int(_value(kwargs.get("dim", args[0] if args else Const(-1))))
            return Tensor(ops.Mean(x, d, ops.Label("n")))
        raise self._err(frame, node, msg("unsupported tensor method .%(method)s()", method=name))

    def _function(self, frame: Frame, name: str, args, kwargs, node):
        tensors = lambda: [self._tensor(a, frame, node).expr for a in args]  # noqa: E731
        unary = {"tanh": ops.Tanh, "exp": ops.Exp, "sqrt": ops.Sqrt, "rsqrt": ops.Rsqrt, "sigmoid": ops.Sigmoid,
                 "cos": ops.Cos, "sin": ops.Sin, "log": ops.Log, "erf": ops.Erf}
        short = name.split(".", 1)[1] if "." in name else name
        if name.startswith(("torch.", "math.", "F.")) and short in unary and len(args) == 1:
            arg = self._tensor(args[0], frame, node)
            return Tensor(unary[short](arg.expr), trailing=arg.trailing)
        if name in ("torch.softmax", "F.softmax"):
            return Tensor(ops.Softmax(tensors()[0], int(_value(kwargs.get("dim", args[1] if len(args) > 1 else None)))))
        if name == "torch.cat":
            parts = args[0].items if isinstance(args[0], Tup) else None
            if parts is None:
                raise self._err(frame, node, msg("torch.cat of something other than a list"))
            d = int(_value(kwargs.get("dim", args[1] if len(args) > 1 else Const(0))))
            return Tensor(ops.Cat(d, *(self._tensor(p, frame, node).expr for p in parts)))
        if name == "torch.linalg.vector_norm" and _value(kwargs.get("keepdim", Const(False))):
            return Tensor(ops.Norm2(tensors()[0], int(_value(kwargs.get("dim", Const(None))))))
        if name in ("torch.clamp", "torch.clamp_min") and "max" not in kwargs:
            low = self._tensor(kwargs.get("min", args[1] if len(args) > 1 else None), frame, node)
            return Tensor(ops.Max(self._tensor(args[0], frame, node).expr, low.expr), trailing=low.trailing)
        if name == "torch.arange" and len(args) in (1, 2) and not kwargs.keys() - {"dtype", "device"}:
            if len(args) == 2 and _value(args[0]) != 0:
                raise self._err(frame, node, msg("torch.arange with a start other than 0"))
            return Tensor(ops.Arange(self._tensor(args[-1], frame, node).expr))
        if name == "F.layer_norm":
            return self._layer_norm(frame, args, kwargs, node)
        if name == "torch.zeros_like":
            return Tensor(ops.Zeros(tensors()[0]))
        if name == "torch.matmul":
            a, b = tensors()
            return Tensor(ops.MatMul(a, b))
        if name == "F.gelu":
            x = tensors()[0]
            if _value(kwargs.get("approximate", Const("none"))) == "tanh":
                return Tensor(leaves.gelu(_GeluTanh(), x).out)
            return Tensor(ops.Mul(x, ops.Phi(x)))
        if name == "F.relu":
            return Tensor(ops.Max(tensors()[0], sympy.Integer(0)))
        if name == "F.silu":
            x = tensors()[0]
            return Tensor(ops.Mul(x, ops.Sigmoid(x)))
        if name == "F.scaled_dot_product_attention":
            plain = (_value(kwargs.get("attn_mask", Const(None))) is None
                     and not _value(kwargs.get("dropout_p", Const(0))) and "scale" not in kwargs)
            if not plain or len(args) != 3:
                raise self._err(frame, node, msg("scaled_dot_product_attention with a mask, dropout or scale"))
            q, k, v = tensors()
            causal = bool(_value(kwargs.get("is_causal", Const(False))))
            head = self._definition(q)
            if isinstance(head, ops.Heads) and isinstance(head.args[-1], sympy.Integer):
                scale = ops.Sqrt(head.args[-1])                 # the real head size, e.g. √64
            else:
                scale = ops.Sqrt(ops.ShapeOf(q, -1))
            return Tensor(ops.Attention(q, k, v, sympy.true if causal else sympy.false, scale))
        raise self._err(frame, node, msg("unsupported function %(function)s()", function=name))


class _GeluTanh:
    class module:
        approximate = "tanh"


def _value(v):
    if isinstance(v, Const):
        return v.value
    if isinstance(v, Size) and v.static is not None:
        return v.static
    raise Unsupported(msg("a value that is known only at run time"))


def _num(v):
    if isinstance(v, bool) or v is None:
        raise Unsupported(msg("arithmetic on %(value)s", value=repr(v)))
    return sympy.Integer(v) if isinstance(v, int) else sympy.Float(v)


def _default(module: nn.Module, name: str):
    param = inspect.signature(module.forward).parameters.get(name)
    return param.default if param is not None else inspect.Parameter.empty


def _inlinable(out, inputs) -> bool:
    """Inline a child's expression unless it would repeat a compound input (x σ(x) with x = a W + b)."""
    for x in inputs:
        if _simple(x) or not isinstance(out, sympy.Basic):
            continue
        if sum(1 for node in sympy.preorder_traversal(out) if node == x) > 1:
            return False
    return True


VIEWS = (ops.Heads, ops.Slice, ops.Reshape, ops.Transpose, ops.Unsqueeze, ops.Expand, ops.Pick)


def _simple(x) -> bool:
    """A symbol, or a view of one (q^h, latents_{1:T}): it reads fine where it appears twice."""
    while isinstance(x, VIEWS):
        x = x.args[0]
    return isinstance(x, sympy.Symbol)


def _is_const(stmt: Stmt) -> bool:
    return isinstance(stmt.expr, sympy.Number)


def _calls(expr) -> bool:
    if not isinstance(expr, sympy.Basic):
        return False
    return any(isinstance(node, ops.Call) for node in sympy.preorder_traversal(expr))


def _has_own_forward(module: nn.Module) -> bool:
    return type(module).forward is not nn.Sequential.forward


def derive(module: nn.Module, input_dims: dict[str, tuple]) -> Program:
    """The program for one component; raises Unsupported with file:line where it cannot."""
    prog = Program()
    deriver = Deriver(prog)
    deriver._static_dims = {}
    deriver.component(module, input_dims)
    return prog
