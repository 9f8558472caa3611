"""Build a component's program from the recorded call of its first instance.

Each recorded torch call is lowered to a node; what a child module's call becomes is decided in `children`,
and a chain of calls through a module list is folded into a loop in `loops`. A tensor the component uses but
did not make is an input, a parameter or buffer, or remade from the calls that made it elsewhere (a cached
table). Steps unrolled along a data-dependent path are refused (`data_dependence`). Which values become
steps, and their names, is decided afterwards (`select`, `naming`).
"""

from __future__ import annotations

import os

import torch
from torch import nn

from atlas.analyse.equations import leaves
from atlas.analyse.equations.children import ChildCalls
from atlas.analyse.equations.data_dependence import refuse_data_dependent
from atlas.analyse.equations.loops import ListLoops
from atlas.analyse.equations.lower_event import DTYPE_METHODS, lower
from atlas.analyse.equations.nodes import Node, SizeOf, Sym, substitute
from atlas.analyse.equations.ops_tensor import Item
from atlas.analyse.equations.program import Program
from atlas.analyse.equations.recorded import input_sizes, shape_symbols
from atlas.analyse.equations.scalars import Eps
from atlas.extract.trace.structures import Call, OpEvent, Ref, refs
from atlas.i18n import msg
from atlas.load.forward_calls import bind

__all__ = ["Builder", "Draft", "pieces"]


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


class Builder(ChildCalls, ListLoops):
    def __init__(self, call: Call, module: nn.Module, title_of=None) -> None:
        self.title_of = title_of or (lambda path: None)
        self.call = call
        self.module = module
        self.base = call.path
        self.d = Draft()
        self._site = None
        self.paths = {}                 # the recorded instance's tensors (the model itself, or a CPU copy of it)
        traced = call.module
        tensors = [*traced.named_parameters(remove_duplicate=False), *traced.named_buffers(remove_duplicate=False)]
        for rel, p in tensors:
            self.paths.setdefault(id(p), rel)
        # sizes the component receives (a block of u0 routed tokens): fixed by its inputs, not decided inside it
        self.given = shape_symbols(r.value for r in refs((call.args, call.kwargs)))

    # -- entry -----------------------------------------------------------------------------------
    def build(self) -> Draft:
        d = self.d
        d.naming[self.call.forward_frame] = None
        d.frames |= self.call.frames
        self._inputs()
        self._events(self.call, None, 0)
        for ref in refs(self.call.out):
            if ref.value.shape is None:             # a size it returns beside its tensors (Swin's (height, width))
                continue
            d.outputs.append(self.node_of(ref))
            d.output_values.append(ref.value)
        if not d.outputs:
            raise leaves.Unsupported(msg("forward() returns no tensor"))
        return d

    def _inputs(self) -> None:
        try:
            named = bind(self.module, self.call.args, self.call.kwargs, method=self.call.method)
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
        refuse_data_dependent(call, self.given)
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
            for n in node.distinct():
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
        for ref, node in pieces(out, result):
            if ref.value.id in d.env:
                continue
            d.env[ref.value.id] = node
            if isinstance(node, Sym):
                continue
            node.meta.setdefault("out_shape", ref.value.shape)     # what rewrites of the paper view read
            if id(node) not in d.value_of:
                d.value_of[id(node)] = ref.value
                d.section_of[id(node)] = section
            elif ref.value.names and not d.value_of[id(node)].names:      # `cos = emb.cos() * 1`: named `cos`
                d.value_of[id(node)] = ref.value

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
        if v.shape is None and v.expr is not None and not getattr(v.expr, "free_symbols", set()) - input_sizes(v.expr):
            return SizeOf(v.expr)                   # a size computed from the input dims
        computed_at = v.made_by.site if isinstance(v.made_by, OpEvent) else None
        if computed_at is not None:     # another module's forward made it: a hook or an attribute passed it on
            raise leaves.Unsupported(msg("the code uses a tensor that another module computed and did not return "
                                         "(computed at %(place)s): a hook or an attribute passed it on",
                                         place=f"{os.path.basename(computed_at.file)}:{computed_at.line}"))
        place = f"{os.path.basename(self._site.file)}:{self._site.line}" if self._site else "?"
        raise leaves.Unsupported(msg("the code uses a tensor that is neither an input, a parameter or buffer, nor "
                                     "computed in forward() (%(place)s)", place=place))

    def _constant(self, value, depth: int = 0):
        """A tensor made outside this component from constants alone (a cache's window size, a mask built
        from positions): the same calls, made again here. BEiT's cached relative position index is 20 calls deep,
        its in-place writes included."""
        ev = value.made_by
        if ev is None or depth > 64 or value.id in self.d.env:
            return self.d.env.get(value.id)
        for ref in refs(list(ev.args) + list(ev.kwargs.values())):
            if ref.value.id not in self.d.env and self._constant(ref.value, depth + 1) is None:
                return None
        for ref, node in pieces(ev.out, lower(ev, self.node_of)):    # a meshgrid's two grids too
            self.d.env.setdefault(ref.value.id, node)
        return self.d.env.get(value.id)


def pieces(out, result):
    """(Ref, node) for each tensor a recorded call returned: the node itself for one tensor, the matching node
    where the lowering gives one per output, else element i of the result (a meshgrid, an unbind), a
    ModelOutput's fields by name."""
    if isinstance(out, Ref):
        if isinstance(result, tuple):
            result = result[0] if len(result) == 1 else None
        if result is not None:
            yield out, result
    elif isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            if isinstance(result, tuple) and len(result) == len(out):
                yield from pieces(o, result[i])
            elif isinstance(result, Node):
                yield from pieces(o, Item(result, i=i))
    elif isinstance(out, dict) and isinstance(result, Node):
        for key, o in out.items():
            yield from pieces(o, Item(result, i=key))
