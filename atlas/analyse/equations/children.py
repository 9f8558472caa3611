"""What a child module's call becomes in its parent's program, by what the child is:

- an evaluation-mode dropout: its input, unchanged;
- a torch.nn leaf with registered equations: its expression, inlined where it is one line (x W + b);
- a direct child of the documented component with children of its own code, and no stack of blocks inside:
  its steps, as a section;
- a child of few operations and no children (pure math: an RMS norm): its expression, inlined;
- anything else, a TorchScript module, or a child whose steps follow a data-dependent path (`data_dependence`): the
  child's operator, linked to its page, and run as the real module when checked.
"""

from __future__ import annotations

import inspect
from itertools import islice

from torch import nn

from atlas.analyse.equations import leaves
from atlas.analyse.equations.data_dependence import data_dependent
from atlas.analyse.equations.nodes import Node, Sym
from atlas.analyse.equations.ops_nn import Call as CallNode
from atlas.analyse.equations.recorded import call_params, is_object
from atlas.extract.trace import direct_calls
from atlas.extract.trace.structures import Call, OpEvent, Ref, Size, refs
from atlas.load.forward_calls import parameters
from atlas.load.hooks import hooks_of

MAX_PURE_EVENTS = 24                    # a child with at most this many operations and no children is inlined
# a section's own children of model code are sections too (BERT's attention.output)
MAX_SECTION_DEPTH = 1
MAX_INLINE = 14                         # nodes of a pure child's expression that still read well inline
_DROPOUTS = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


class ChildCalls:
    """The builder's part that places child module calls (mixed into `Builder`)."""

    def _rel(self, path: str) -> str:
        """A module path relative to the component: "" for the component itself (a Sequential being documented)."""
        if not self.base:
            return path
        if path == self.base:
            return ""
        return path[len(self.base) + 1:] if path.startswith(self.base + ".") else path

    def _child(self, c: Call, section, depth: int) -> None:
        d = self.d
        outs = refs(c.out)
        if outs and all(r.value.id in d.env for r in outs) and not c.skipped:
            return                                  # it returned its input unchanged (Identity, eval Dropout)
        rel = self._rel(c.path)
        if not direct_calls.hookable(c.module):     # TorchScript: what it runs is out of sight, its operator stays
            self._opaque(c, rel, section)
            return
        if not c.skipped and isinstance(c.module, _DROPOUTS):
            ins = refs(list(c.args) + list(c.kwargs.values()))
            if len(ins) == 1 and len(outs) == 1:
                d.env[outs[0].value.id] = self.node_of(ins[0])      # the identity in evaluation mode
                return
        if leaves.builder_for(c.module) is not None and c.method is None:     # a skipped entry too: no record needed
            if self._leaf(c, rel, section):
                return
        elif not c.skipped and depth <= MAX_SECTION_DEPTH and composite(c.module) and not holds_stack(c.module) \
                and not rel.rsplit(".", 1)[-1].isdigit() and data_dependent(c, self.given) is None:
            title = self.title_of(c.path) or hooks_of(c.module).name or type(c.module).__name__
            d.section_attr[title] = c.path.rsplit(".", 1)[-1]
            d.naming[c.forward_frame] = title
            d.frames |= c.frames
            d.section_params[title] = call_params(c)
            self._events(c, title, depth + 1)
            return
        elif not c.skipped and pure(c) and data_dependent(c, self.given) is None:
            d.frames |= c.frames                    # its variables may name a value used twice
            self._events(c, section, depth + 1)
            for ref in outs:                        # a long expression is a step of its own, named by the child
                node = d.env.get(ref.value.id)
                if isinstance(node, Node) and not isinstance(node, Sym):
                    node.meta.setdefault("module", rel)     # the paper view names the child's idiom after it
                if isinstance(node, Node) and not isinstance(node, Sym) and \
                        next(islice(node.walk(), MAX_INLINE, None), None) is not None:
                    node.meta.setdefault("hint", rel.rsplit(".", 1)[-1])
                    d.hoist.add(id(node))
            return
        self._opaque(c, rel, section)

    def _leaf(self, c: Call, rel: str, section) -> bool:
        d = self.d
        args = [self.node_of(r) for r in refs(list(c.args) + list(c.kwargs.values()))]
        shapes = [r.value.shape for r in refs(list(c.args))]
        try:
            named = leaves.named_arguments(c.module, c.args, c.kwargs, self.node_of)
            leaf = leaves.build(c.module, d.prog, rel, args, rel.rsplit(".", 1)[-1], shapes, named)
        except (leaves.Unsupported, TypeError):
            return False
        if leaf.inline and not leaf.steps and isinstance(leaf.out, Node):
            if not isinstance(leaf.out, Sym):
                leaf.out.meta.setdefault("hint", rel.rsplit(".", 1)[-1])
                _called_at(leaf.out, c)
            self._assign(c.out, leaf.out, section)
            return True
        return False

    def _opaque(self, c: Call, rel: str, section) -> None:
        d = self.d
        key = f"m.{rel}"
        d.prog.add(key, "module", ("module", rel), base=type(c.module).__name__, role=rel.rsplit(".", 1)[-1])
        args, kwargs = self._call_args(c)
        node = CallNode(Sym(key), args, kwargs, **({"method": c.method} if c.method else {}))
        _called_at(node, c)
        self._assign(c.out, node, section)

    def _call_args(self, c: Call):
        """The call's arguments for the check: tensors as nodes; objects that hold state (a cache) as the
        parameter's default, since the recorded object is not the one a fresh call would get."""
        params = parameters(c.module, c.method)
        names = list(params)
        args = tuple(params[names[i]].default if i < len(names) and is_object(a)
                     and params[names[i]].default is not inspect.Parameter.empty else self._data(a)
                     for i, a in enumerate(c.args))
        kwargs = {}
        for k, v in c.kwargs.items():
            if is_object(v) and k in params and params[k].default is not inspect.Parameter.empty:
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


def _called_at(node: Node, c: Call) -> None:
    """Marks the nodes a child's call gave with the line of code that called it (what a symbol's line reads where
    no operation of the record is placed in them; the claims read only the operations' own lines)."""
    if c.site is not None:
        for n in node.distinct():
            if not isinstance(n, Sym):
                n.meta.setdefault("call_site", (c.site.file, c.site.line))


def composite(module: nn.Module) -> bool:
    """A module of model code with children of its own: shown as a section of its parent's page."""
    return any(True for _ in module.children()) and not type(module).__module__.startswith("torch.nn")


def holds_stack(module: nn.Module) -> bool:
    """A network of its own (a list of blocks somewhere inside): one linked step of its parent's page, not a
    section, which is for a part of a block (its attention, its MLP)."""
    return any(isinstance(m, (nn.ModuleList, nn.Sequential, nn.ModuleDict)) and any(composite(k) for k in m.children())
               for m in module.modules())


def pure(c: Call) -> bool:
    """A small module with no children, whose few operations read as one expression."""
    if any(True for _ in c.module.children()):
        return False
    ops = [e for e in c.events if isinstance(e, OpEvent)]
    return len(ops) <= MAX_PURE_EVENTS and len(ops) == len(c.events)
