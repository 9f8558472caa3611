"""Build a component's program from the recorded call of its first instance.

Each recorded torch call is lowered to a node. A child module's call becomes, by what the child is:
- a torch.nn leaf with registered equations: its expression, inlined where it is one line (x W + b);
- a direct child of the documented component with children of its own code, and no stack of blocks inside:
  its steps, as a section;
- a child of few operations and no children (pure math: an RMS norm): its expression, inlined;
- anything else: the child's operator, linked to its page, and run as the real module when checked.
A run of calls through every entry of a module list, each taking the previous one's result, is a loop.
Which values become steps, and their names, is decided afterwards (`select`, `naming`).
"""

from __future__ import annotations

import inspect
import os

import torch
from torch import nn

from atlas.equations import leaves
from atlas.equations.lower import DTYPE_METHODS, lower
from atlas.equations.nodes import Node, SizeOf, Sym, substitute
from atlas.equations.scalars import Eps
from atlas.equations.ops_nn import Call as CallNode
from atlas.equations.ops_nn import Loop
from atlas.equations.ops_tensor import Item
from atlas.equations.program import Program
from atlas.i18n import msg
from atlas.trace.structures import Call, OpEvent, Ref, Size

MAX_PURE_EVENTS = 24
MAX_INLINE = 14                         # nodes of a pure child's expression that still read well inline
_DROPOUTS = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)                    # a child with at most this many operations and no children is inlined


class Draft:
    """The program while it is built: every value's node, where it was made, and the outputs."""

    def __init__(self) -> None:
        self.prog = Program()
        self.env: dict[int, Node] = {}              # Value id -> node
        self.value_of: dict[int, object] = {}       # id(node) -> the Value it computes
        self.section_of: dict[int, str | None] = {} # id(node) -> the section it was made in
        self.loops: set[int] = set()                # ids of Loop nodes (always steps)
        self.hoist: set[int] = set()                # ids of nodes that are steps of their own (long expressions)
        self.naming: dict[int, str | None] = {}     # frame number -> section: frames whose variables name steps
        self.frames: set[int] = set()               # every user frame of the component and its sections
        self.outputs: list = []                     # output nodes, in order
        self.output_values: list = []
        self.inputs: dict[str, object] = {}         # input key -> its Value
        self.section_params: dict = {}              # section -> {forward() parameter: Value id}
        self.section_attr: dict = {}                # section -> the attribute of its module ("mlp")
        self.repeat_input: str | None = None        # the input a repeated block carries from one to the next


class Builder:
    def __init__(self, call: Call, module: nn.Module, title_of=None) -> None:
        self.title_of = title_of or (lambda path: None)
        self.call = call
        self.module = module
        self.base = call.path
        self.d = Draft()
        self._site = None
        self.paths = {}                 # the recorded instance's tensors (the model itself, or a CPU copy of it)
        traced = call.module
        for rel, p in list(traced.named_parameters(remove_duplicate=False)) + list(traced.named_buffers(remove_duplicate=False)):
            self.paths.setdefault(id(p), rel)

    # -- entry -----------------------------------------------------------------------------------
    def build(self) -> Draft:
        d = self.d
        d.naming[self.call.forward_frame] = None
        d.frames |= self.call.frames
        self._inputs()
        self._events(self.call, None, 0)
        for ref in _refs(self.call.out):
            if ref.value.shape is None:             # a size it returns beside its tensors (Swin's (height, width))
                continue
            d.outputs.append(self.node_of(ref))
            d.output_values.append(ref.value)
        if not d.outputs:
            raise leaves.Unsupported(msg("forward() returns no tensor"))
        return d

    def _inputs(self) -> None:
        try:
            named = bound_arguments(self.module, self.call.args, self.call.kwargs)
        except TypeError as exc:
            raise leaves.Unsupported(msg("the recorded call does not fit forward()'s signature: %(error)s",
                                         error=str(exc))) from None
        for path, v in named.items():
            self._input(path, v)
            self.d.prog.inputs.append(path)

    def _input(self, path: str, value) -> None:
        d = self.d
        if isinstance(value, Ref):
            if value.value.id not in d.env:
                key = f"in.{path}"
                d.prog.add(key, "input", ("input", path), base=path, shape=value.value.shape)
                d.env[value.value.id] = Sym(key)
                d.inputs[key] = value.value
        elif isinstance(value, (tuple, list)) and any(isinstance(v, Ref) for v in value):
            for i, v in enumerate(value):
                self._input(f"{path}[{i}]", v)
        else:
            d.prog.call_args[path] = value

    # -- events ----------------------------------------------------------------------------------
    def _events(self, call: Call, section: str | None, depth: int) -> None:
        events = call.events
        self._current_out = call.out
        i = 0
        while i < len(events):
            ev = events[i]
            if isinstance(ev, OpEvent):
                self._op(ev, section)
                i += 1
                continue
            run = self._loop_run(events, i)
            if run:
                self._loop(run, section)
                i += len(run)
                continue
            self._child(ev, section, depth)
            i += 1

    def _op(self, ev: OpEvent, section) -> None:
        self._site = ev.site
        for x in list(ev.args) + list(ev.kwargs.values()):
            if isinstance(x, torch.dtype):
                self.d.prog.dtypes.add(str(x).removeprefix("torch."))
        short = ev.name.removeprefix("Tensor.")
        if short in DTYPE_METHODS:                      # x.float(): a cast even where it changed nothing here
            self.d.prog.dtypes.add(DTYPE_METHODS[short])
        result = self._constants(lower(ev, self.node_of))
        if ev.site is not None:                         # where the code wrote it, for the claims read off the steps
            for node in (result if isinstance(result, tuple) else (result,)):
                if isinstance(node, Node) and not isinstance(node, Sym):
                    node.meta.setdefault("site", (ev.site.file, ev.site.line))
        self._assign(ev.out, result, section)

    def _constants(self, result):
        """ε and its kin become constants of the page, stated once."""
        nodes = result if isinstance(result, tuple) else (result,)
        table = {}
        for node in nodes:
            if not isinstance(node, Node):
                continue
            for n in node.walk():
                if isinstance(n, Eps):
                    key = f"c.eps.{n.value!r}"
                    self.d.prog.add(key, "const", ("const", n.value), base="eps", scalar=True)
                    if key not in self.d.prog.constants:
                        self.d.prog.constants.append(key)
                    table[id(n)] = Sym(key)
        if not table:
            return result
        out = tuple(substitute(n, table) for n in nodes)
        return out if isinstance(result, tuple) else out[0]

    def _assign(self, out, result, section) -> None:
        d = self.d
        if isinstance(out, Ref):
            if isinstance(result, tuple):
                result = result[0] if len(result) == 1 else None
            if result is None or out.value.id in d.env:
                return
            d.env[out.value.id] = result
            if id(result) not in d.value_of and not isinstance(result, Sym):
                d.value_of[id(result)] = out.value
                d.section_of[id(result)] = section
            return
        if isinstance(out, (tuple, list)):
            for i, o in enumerate(out):
                if isinstance(result, tuple) and len(result) == len(out):
                    part = result[i]
                elif isinstance(result, Node):
                    part = Item(result, i=i)
                else:
                    continue
                self._assign(o, part, section)
        elif isinstance(out, dict) and isinstance(result, Node):   # a ModelOutput: its fields by name
            for key, o in out.items():
                self._assign(o, Item(result, i=key), section)

    def node_of(self, ref: Ref) -> Node:
        d = self.d
        v = ref.value
        node = d.env.get(v.id)
        if node is not None:
            return node
        rel = self.paths.get(id(v.source if v.source is not None else v.obj))
        if rel is not None:
            owner, _, attr = rel.rpartition(".")
            key = f"p.{rel}"
            role = owner.rsplit(".", 1)[-1] if owner else None
            d.prog.add(key, "param", ("param", owner, attr, False), base=attr, role=role, shape=v.shape)
            d.env[v.id] = Sym(key)
            return d.env[v.id]
        made = self._constant(v)
        if made is not None:
            return made
        if v.shape is None and v.expr is not None and not getattr(v.expr, "free_symbols", set()) - _sizes(v.expr):
            return SizeOf(v.expr)                   # a size computed from the input dims
        place = f"{os.path.basename(self._site.file)}:{self._site.line}" if self._site else "?"
        raise leaves.Unsupported(msg("the code uses a tensor that is neither an input, a parameter or buffer, nor "
                                     "computed in forward() (%(place)s)", place=place))

    def _constant(self, value, depth: int = 0):
        """A tensor made outside this component from constants alone (a cache's window size, a mask built
        from positions): the same calls, made again here."""
        ev = value.made_by
        if ev is None or depth > 16 or value.id in self.d.env:
            return self.d.env.get(value.id)
        for ref in _refs(list(ev.args) + list(ev.kwargs.values())):
            if ref.value.id not in self.d.env and self._constant(ref.value, depth + 1) is None:
                return None
        result = lower(ev, self.node_of)
        outs = _refs(ev.out)
        if isinstance(result, tuple):
            for r, o in zip(outs, result):
                self.d.env.setdefault(o.value.id, r)
        elif len(outs) == 1:
            self.d.env.setdefault(outs[0].value.id, result)
        return self.d.env.get(value.id)

    # -- child modules ------------------------------------------------------------------------------
    def _rel(self, path: str) -> str:
        if not self.base:
            return path
        return path[len(self.base) + 1:] if path.startswith(self.base + ".") else path

    def _child(self, c: Call, section, depth: int) -> None:
        d = self.d
        outs = _refs(c.out)
        if outs and all(r.value.id in d.env for r in outs) and not c.skipped:
            return                                  # it returned its input unchanged (Identity, eval Dropout)
        rel = self._rel(c.path)
        if not c.skipped and isinstance(c.module, _DROPOUTS):
            ins = _refs(list(c.args) + list(c.kwargs.values()))
            if len(ins) == 1 and len(outs) == 1:
                d.env[outs[0].value.id] = self.node_of(ins[0])      # the identity in evaluation mode
                return
        if leaves.builder_for(c.module) is not None:               # a skipped entry too: no record needed
            if self._leaf(c, rel, section):
                return
        elif not c.skipped and depth == 0 and _composite(c.module) and not _holds_stack(c.module) \
                and not rel.rsplit(".", 1)[-1].isdigit():
            title = self.title_of(c.path) or getattr(c.module, "atlas_name", None) or type(c.module).__name__
            d.section_attr[title] = c.path.rsplit(".", 1)[-1]
            d.naming[c.forward_frame] = title
            d.frames |= c.frames
            d.section_params[title] = _params(c)
            self._events(c, title, depth + 1)
            return
        elif not c.skipped and _pure(c):
            d.frames |= c.frames                    # its variables may name a value used twice
            self._events(c, section, depth + 1)
            for ref in outs:                        # a long expression is a step of its own, named by the child
                node = d.env.get(ref.value.id)
                if isinstance(node, Node) and not isinstance(node, Sym) and sum(1 for _ in node.walk()) > MAX_INLINE:
                    node.meta.setdefault("hint", rel.rsplit(".", 1)[-1])
                    d.hoist.add(id(node))
            return
        self._opaque(c, rel, section)

    def _leaf(self, c: Call, rel: str, section) -> bool:
        d = self.d
        args = [self.node_of(r) for r in _refs(list(c.args) + list(c.kwargs.values()))]
        shapes = [r.value.shape for r in _refs(list(c.args))]
        try:
            leaf = leaves.build(c.module, d.prog, rel, args, rel.rsplit(".", 1)[-1], shapes)
        except (leaves.Unsupported, TypeError):
            return False
        if leaf.inline and not leaf.steps and isinstance(leaf.out, Node):
            if not isinstance(leaf.out, Sym):
                leaf.out.meta.setdefault("hint", rel.rsplit(".", 1)[-1])
            self._assign(c.out, leaf.out, section)
            return True
        return False

    def _opaque(self, c: Call, rel: str, section) -> None:
        d = self.d
        key = f"m.{rel}"
        d.prog.add(key, "module", ("module", rel), base=type(c.module).__name__, role=rel.rsplit(".", 1)[-1])
        args, kwargs = self._call_args(c)
        node = CallNode(Sym(key), args, kwargs)
        self._assign(c.out, node, section)

    def _call_args(self, c: Call):
        """The call's arguments for the check: tensors as nodes; objects that hold state (a cache) as the
        parameter's default, since the recorded object is not the one a fresh call would get."""
        sig = _signature(c.module)
        params = sig.parameters
        names = list(params)
        args = tuple(params[names[i]].default if i < len(names) and _is_object(a)
                     and params[names[i]].default is not inspect.Parameter.empty else self._data(a)
                     for i, a in enumerate(c.args))
        kwargs = {}
        for k, v in c.kwargs.items():
            if _is_object(v) and k in params and params[k].default is not inspect.Parameter.empty:
                kwargs[k] = params[k].default
            else:
                kwargs[k] = self._data(v)
        return args, kwargs

    def _data(self, x):
        if isinstance(x, Ref):
            return self.node_of(x)
        if isinstance(x, Size):
            return x.expr
        if isinstance(x, tuple):
            return tuple(self._data(i) for i in x)
        if isinstance(x, list):
            return [self._data(i) for i in x]
        if isinstance(x, dict):
            return {k: self._data(v) for k, v in x.items()}
        return x

    # -- loops -------------------------------------------------------------------------------------
    def _loop_run(self, events, i: int) -> list | None:
        first = events[i]
        if not isinstance(first, Call):
            return None
        parent, _, key = first.path.rpartition(".")
        if key != "0":
            return None
        try:
            container = self.module if parent == self.base else self.module.get_submodule(self._rel(parent))
        except AttributeError:
            return None
        if not isinstance(container, (nn.ModuleList, nn.Sequential)) or len(container) < 2 \
                or len({type(m) for m in container}) != 1:
            return None
        n = len(container)
        run = events[i:i + n]
        if len(run) < n or any(not isinstance(c, Call) or c.path != f"{parent}.{k}" for k, c in enumerate(run)):
            return None
        slot = _chain_slot(run)
        if slot is None:
            return None
        inner = {r.value.id for c in run[:-1] for r in _refs(c.out)}
        later = _refs([(e.args, e.kwargs) for e in events[i + n:]]) + _refs(self._current_out)
        if any(r.value.id in inner for r in later):
            return None                         # a block's own result is used again (all hidden states returned)
        return run

    def _loop(self, run: list, section) -> None:
        d = self.d
        first = run[0]
        slot = _chain_slot(run)
        parent = first.path.rpartition(".")[0]
        rel = self._rel(parent)
        key = f"m.{rel}@list"
        d.prog.add(key, "modules", ("modules", rel), base=type(first.module).__name__, role=rel.rsplit(".", 1)[-1])
        args, kwargs = self._call_args(first)
        start = args[slot]
        rest = args[:slot] + args[slot + 1:]
        node = Loop(Sym(key), start, rest, kwargs, slot=slot, count=len(run), link=f"{rel}.0" if rel else "0",
                    name=getattr(first.module, "atlas_name", None) or type(first.module).__name__,
                    carry=_path_of_tensor(first.out))
        self._assign(run[-1].out, node, section)
        d.loops.add(id(node))


def bound_arguments(module: nn.Module, args, kwargs) -> dict:
    """forward()'s arguments by name; *args as name[i], **kwargs by their own keys."""
    sig = _signature(module)
    bound = sig.bind(*args, **kwargs)
    out = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out.update({f"{name}[{i}]": v for i, v in enumerate(value)})
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        else:
            out[name] = value
    return out


def _sizes(expr) -> set:
    """The input symbols (B, T, H, W) among an expression's symbols; an unbacked one (u0) is not one."""
    return {s for s in getattr(expr, "free_symbols", set()) if not str(s).startswith(("u", "s"))}


def _params(c: Call) -> dict:
    """A call's forward() parameters bound to the values it received."""
    try:
        bound = _signature(c.module).bind(*c.args, **c.kwargs)
    except TypeError:
        return {}
    return {k: v.value.id for k, v in bound.arguments.items() if isinstance(v, Ref)}


def _signature(module: nn.Module) -> inspect.Signature:
    return inspect.signature(module.forward)


def _refs(x) -> list[Ref]:
    if isinstance(x, Ref):
        return [x]
    if isinstance(x, (list, tuple)):
        return [r for i in x for r in _refs(i)]
    if isinstance(x, dict):
        return [r for i in x.values() for r in _refs(i)]
    return []


def _is_object(x) -> bool:
    """An argument that is neither a tensor, a size, nor plain data."""
    if x is None or isinstance(x, (Ref, Size, bool, int, float, str, bytes)):
        return False
    if isinstance(x, (tuple, list)):
        return any(_is_object(i) for i in x)
    if isinstance(x, dict):
        return any(_is_object(i) for i in x.values())
    return type(x).__module__.split(".")[0] not in ("torch", "builtins")


def _composite(module: nn.Module) -> bool:
    """A module of model code with children of its own: shown as a section of its parent's page."""
    return any(True for _ in module.children()) and not type(module).__module__.startswith("torch.nn")


def _holds_stack(module: nn.Module) -> bool:
    """A network of its own (a list of blocks somewhere inside): one linked step of its parent's page, not a
    section, which is for a part of a block (its attention, its MLP)."""
    return any(isinstance(m, (nn.ModuleList, nn.Sequential, nn.ModuleDict)) and any(_composite(k) for k in m.children())
               for m in module.modules())


def _pure(c: Call) -> bool:
    """A small module with no children, whose few operations read as one expression."""
    if any(True for _ in c.module.children()):
        return False
    ops = [e for e in c.events if isinstance(e, OpEvent)]
    return len(ops) <= MAX_PURE_EVENTS and len(ops) == len(c.events)


def _path_of_tensor(out) -> tuple:
    """Where the one tensor sits in a call's result: () for a tensor, (0,) for (tensor, None)."""
    if isinstance(out, Ref):
        return ()
    if isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            if _refs(o):
                return (i,) + _path_of_tensor(o)
    if isinstance(out, dict):
        for k, o in out.items():
            if _refs(o):
                return (k,) + _path_of_tensor(o)
    return ()


def _chain_slot(run: list) -> int | None:
    """The argument position through which each call takes the previous call's result."""
    first_args = run[0].args
    for slot in range(len(first_args)):
        ok = True
        for prev, cur in zip(run, run[1:]):
            outs = _refs(prev.out)
            a = cur.args[slot] if slot < len(cur.args) else None
            if len(outs) != 1 or not isinstance(a, Ref) or a.value is not outs[0].value:
                ok = False
                break
            others = [x for j, x in enumerate(cur.args) if j != slot]
            firsts = [x for j, x in enumerate(first_args) if j != slot]
            if len(others) != len(firsts) or any(not _same(x, y) for x, y in zip(others, firsts)):
                ok = False
                break
            if set(cur.kwargs) != set(run[0].kwargs) or any(not _same(cur.kwargs[k], run[0].kwargs[k])
                                                            for k in cur.kwargs):
                ok = False
                break
        if ok:
            return slot
    return None


def _same(a, b) -> bool:
    if isinstance(a, Ref) and isinstance(b, Ref):
        return a.value is b.value
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, Size) and isinstance(b, Size):
        return a.expr == b.expr
    try:
        return a is b or bool(a == b)
    except Exception:  # objects without a plain equality: only the same object is the same
        return False
