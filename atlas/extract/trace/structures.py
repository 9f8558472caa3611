"""What one recorded forward holds: values, the torch calls that made them, and the module calls around them.

A `Value` is one SSA value of the run: an input, a parameter or buffer, or the result of a torch call.
Its identity is the value, never its printed name. An in-place call makes a new value from the object it
changes. Sizes are sympy expressions in the model's input symbols (B, T, ...) when the run was symbolic,
plain ints when it was concrete.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atlas.load.nested import leaves


@dataclass(eq=False)
class Value:
    id: int
    kind: str                       # "input" | "param" | "buffer" | "op" | "external"
    shape: tuple | None = None      # sympy expressions or ints; None for a non-tensor (an .item() scalar)
    dtype: str | None = None
    obj: object = None              # the tensor itself (kept alive, so ids stay unique during the run)
    owner: str | None = None        # "param"/"buffer": the module path that owns it
    attr: str | None = None         # "param"/"buffer": its attribute name; "input": the parameter name
    names: list = field(default_factory=list)   # (frame number, variable, line, is a parameter) bindings in user code
    made_by: object = None          # the OpEvent that produced it
    source: object = None           # a parameter or buffer: the model's own tensor (the run may use a stand-in)
    expr: object = None             # a scalar a call returned (.item()): its expression in the input symbols

    def __repr__(self) -> str:
        return f"Value({self.id}, {self.kind}, {self.shape})"


@dataclass(frozen=True)
class Ref:
    """A value used as an argument."""

    value: Value


def refs(x) -> list[Ref]:
    """Every tensor reference inside encoded data, in order."""
    return leaves(x, Ref)


def upstream(values, depth: int, through=None):
    """(value, steps back) for the values and those the calls that made them read, at most `depth` steps back,
    each once; `through(op event)` False stops the walk at that call (its operands are not visited)."""
    pending, seen = [(v, 0) for v in values], set()
    while pending:
        v, d = pending.pop()
        if v is None or id(v) in seen:
            continue
        seen.add(id(v))
        yield v, d
        ev = v.made_by
        if ev is not None and d < depth and (through is None or through(ev)):
            pending += [(r.value, d + 1) for r in refs((ev.args, ev.kwargs))]


@dataclass(frozen=True)
class Size:
    """A size computed from input dims: a sympy expression (or an int in a concrete run)."""

    expr: object


@dataclass(frozen=True)
class Site:
    """Where user code made a call: the innermost frame outside torch."""

    file: str
    line: int
    function: str
    frame: int                      # the frame's number in this run, to tell calls of one function apart
    code: object = None             # the frame's code object
    span: tuple | None = None       # (line, column, end line, end column) of the expression that made the call


@dataclass(eq=False)
class OpEvent:
    """One torch call made by the code: `func(*args, **kwargs) -> out`."""

    func: object                    # the callable torch dispatched (torch.cat, Tensor.view, F.linear, ...)
    name: str                       # "cat", "Tensor.view", "linear", ...
    args: tuple                     # encoded: Ref, Size, constants, nested tuples/lists/slices
    kwargs: dict
    out: object                     # encoded like args: a Ref, a tuple of Refs, a constant
    site: Site | None
    inplace: bool = False
    scope: tuple | None = None      # (locals, globals) of the calling frame, kept where a Python float is passed


@dataclass(eq=False)
class Call:
    """One call of a module's forward, with the events inside it in order (ops and child calls)."""

    module: object
    path: str                       # the module's path in the model
    args: tuple                     # encoded
    kwargs: dict
    out: object = None              # encoded
    events: list = field(default_factory=list)
    parent: "Call | None" = None
    frames: set = field(default_factory=set)    # numbers of the user frames that ran inside this call
    forward_frame: int | None = None             # the number of the frame running the module's forward()
    skipped: bool = False           # a repeated list entry whose result was taken from its first entry's shape
    repeats: "Call | None" = None   # skipped: the first entry's call, whose shapes and code it repeats
    failed: str | None = None       # the error that stopped the call, if any
    guards: list = field(default_factory=list)  # Guard: data-dependent values its own code needed as numbers
    site: Site | None = None        # the line of model code that called it
    method: str | None = None       # the method the parent's code called, where not forward() (`get_bias`)

    def calls(self):
        """Every call inside this one, depth-first, this one included."""
        yield self
        for e in self.events:
            if isinstance(e, Call):
                yield from e.calls()


@dataclass(frozen=True)
class Guard:
    """A data-dependent value (an unbacked symbol) that the code needed as a Python number while recording, and
    got from the value assumed for it: a loop's count, a list index."""

    expr: object                    # the sympy expression the code needed (u0)
    value: object                   # what the assumption made it (2)
    site: str                       # file:line of the model's code that needed it


@dataclass
class Trace:
    """A recorded forward of a whole model."""

    root: Call | None
    values: list                    # every Value, in creation order
    symbols: dict                   # name -> sympy Symbol used in sizes ("B", "T")
    hints: dict                     # name -> the int the symbolic run was specialized at
    symbolic: bool                  # sizes are expressions (a fake run with a ShapeEnv)
    method: str                     # "fake" | "meta" | "cpu"
    dtype: str = "float32"          # the working dtype of the run
    error: str | None = None        # why the run stopped early, if it did
    notes: tuple = ()               # how the run was made to work (a retry in bfloat16, a larger T)
    specialized: tuple = ()         # symbols the code needed as exact numbers, so the run fixed them
    specialized_at: tuple = ()      # "T = 6 (zoo.py:459)": each of them, its value and where it was fixed
    pinned_at_one: tuple = ()       # the ones pinned because a size made from them was 1 there (a 1 x 1 map)
    extra: dict = field(default_factory=dict)   # module path -> its own record (a module the model never calls)
    saved: dict | None = field(default_factory=dict)   # id(call) -> [(storage key, bytes, floating elements)] saved
                                                    # for the backward
                                                    # pass; None where the forward ran only without autograd
    assumed: dict = field(default_factory=dict)  # unbacked symbol name (u0) -> the value the run assumed for it
    upper: dict = field(default_factory=dict)    # symbol name -> (the largest size the code allows, file:line)
    conditions: tuple = ()          # (a condition on the sizes a branch took, file:line): the record holds there
    branches: tuple = ()            # every such condition, as sympy relations in the model's symbols
    refused: tuple = ()             # a failed run: (symbol, size, file:line) the code compared a size with, unequal
    returned_state: dict = field(default_factory=dict)  # module path -> (bytes, floating elements) handed back
                                                        # (a cache's keys, values)

    def first_calls(self) -> dict:
        """module path -> its first call in the run."""
        out: dict = {}
        if self.root is not None:
            for call in self.root.calls():
                out.setdefault(call.path, call)
        return out


def short_name(name: str) -> str:
    """"Tensor.add_" -> "add"; dunders ("__getitem__") as they are."""
    name = name.removeprefix("Tensor.").removeprefix("torch.")
    return name if name.startswith("__") else name.rstrip("_")
