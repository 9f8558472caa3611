"""A run of calls through every entry of a module list, each taking the previous one's result: one loop step.

`x = block(x) for block in self.blocks` is recorded as N calls in a row; when every entry has the same class
and each call passes the previous result on through the same argument, with its other arguments the same,
the program gets one `Loop` over the list instead of N steps. A block whose own result is used again (all
hidden states returned) keeps the calls apart.
"""

from __future__ import annotations

from torch import nn

from atlas.analyse.equations.nodes import Sym
from atlas.analyse.equations.ops_nn import Loop
from atlas.extract.trace.structures import Call, Ref, Size, refs
from atlas.load.hooks import hooks_of


class ListLoops:
    """The builder's part that folds a chain of list-entry calls into a loop (mixed into `Builder`)."""

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
        slot = chain_slot(run)
        if slot is None:
            return None
        inner = {r.value.id for c in run[:-1] for r in refs(c.out)}
        later = refs([(e.args, e.kwargs) for e in events[i + n:]]) + refs(self._current_out)
        if any(r.value.id in inner for r in later):
            return None                         # a block's own result is used again (all hidden states returned)
        return run

    def _loop(self, run: list, section) -> None:
        d = self.d
        first = run[0]
        slot = chain_slot(run)
        parent = first.path.rpartition(".")[0]
        rel = self._rel(parent)
        key = f"m.{rel}@list"
        d.prog.add(key, "modules", ("modules", rel), base=type(first.module).__name__, role=rel.rsplit(".", 1)[-1])
        args, kwargs = self._call_args(first)
        start = args[slot]
        rest = args[:slot] + args[slot + 1:]
        node = Loop(Sym(key), start, rest, kwargs, slot=slot, count=len(run), link=f"{rel}.0" if rel else "0",
                    name=hooks_of(first.module).name or type(first.module).__name__,
                    carry=path_of_tensor(first.out))
        self._assign(run[-1].out, node, section)
        d.loops.add(id(node))


def path_of_tensor(out) -> tuple:
    """Where the one tensor sits in a call's result: () for a tensor, (0,) for (tensor, None)."""
    if isinstance(out, Ref):
        return ()
    if isinstance(out, (tuple, list)):
        for i, o in enumerate(out):
            if refs(o):
                return (i,) + path_of_tensor(o)
    if isinstance(out, dict):
        for k, o in out.items():
            if refs(o):
                return (k,) + path_of_tensor(o)
    return ()


def chain_slot(run: list) -> int | None:
    """The argument position through which each call takes the previous call's result."""
    first_args = run[0].args
    for slot in range(len(first_args)):
        ok = True
        for prev, cur in zip(run, run[1:]):
            outs = refs(prev.out)
            a = cur.args[slot] if slot < len(cur.args) else None
            if len(outs) != 1 or not isinstance(a, Ref) or a.value is not outs[0].value:
                ok = False
                break
            others = [x for j, x in enumerate(cur.args) if j != slot]
            firsts = [x for j, x in enumerate(first_args) if j != slot]
            if len(others) != len(firsts) or any(not same(x, y) for x, y in zip(others, firsts)):
                ok = False
                break
            if set(cur.kwargs) != set(run[0].kwargs) or any(not same(cur.kwargs[k], run[0].kwargs[k])
                                                            for k in cur.kwargs):
                ok = False
                break
        if ok:
            return slot
    return None


def same(a, b) -> bool:
    """The same argument in two calls: the same value, size or data."""
    if isinstance(a, Ref) and isinstance(b, Ref):
        return a.value is b.value
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, Size) and isinstance(b, Size):
        return a.expr == b.expr
    try:
        return a is b or bool(a == b)
    except Exception:  # objects without a plain equality: only the same object is the same
        return False
