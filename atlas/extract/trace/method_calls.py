"""Calls of a module through another method than forward(), made by its parent's code: timm's MaxViT asks its
`RelPosMlp` for `self.rel_pos.get_bias()`, and never calls the module itself. Each such call is recorded as a call of
the module, its `method` named, where the parent makes it; the check then calls that same method on its copy.
"""

from __future__ import annotations

import functools

from torch import nn

from atlas.extract.method_uses import methods_on_parts
from atlas.extract.trace import direct_calls
from atlas.extract.trace.structures import Call
from atlas.load.nested import tensors


class MethodCalls:
    """The Recorder's listeners on the methods a parent's code calls on its children (method_uses)."""

    def _watch_methods(self, module: nn.Module) -> list:
        """Watch each method the module's code calls on a child of its (`self.rel_pos.get_bias()`); what undoes
        each watch."""
        undo = []
        for name, methods in methods_on_parts(module).items():
            for method in methods:
                enter, leave = (functools.partial(f, method) for f in (self._pre_method, self._post_method))
                undo.append(direct_calls.watch(module._modules[name], enter, leave, True, method))
        return undo

    def _pre_method(self, method, module, args, kwargs):
        """A call of another method of the module than forward(), from its parent's code: a call of the module."""
        depth = len(self.stack)
        self._pre(module, args, kwargs)
        if len(self.stack) > depth:
            self.stack[-1].method = method

    def _post_method(self, method, module, args, kwargs, output):
        """The method's call closed; one that returns no tensor (`self.rnn.flatten_parameters()`) is no step of
        the module: what ran inside it stays in its parent's call."""
        if self.paused or not self.stack or self.stack[-1].module is not module or self.stack[-1].method != method:
            return
        call = self.stack[-1]
        self._post(module, args, kwargs, output)
        if tensors(output):
            return
        events = call.parent.events if call.parent is not None else None
        if events and events[-1] is call:
            events[-1:] = call.events
            for e in call.events:
                if isinstance(e, Call):
                    e.parent = call.parent
