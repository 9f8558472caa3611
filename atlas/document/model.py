"""The atlas data model: frozen dataclasses holding plain values.

Nothing here imports torch or jinja2. Raw values live in the data (ints, tuples);
formatting (thousands separators, LaTeX, labels) lives in the render filters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Tag(str, Enum):
    """What a component's parameters are, as a whole."""

    LEARNED = "learned"
    FROZEN = "frozen"
    PARTLY_FROZEN = "partly frozen"
    PARAMETER_FREE = "parameter-free"
    TIED = "tied"                   # every tensor it holds is another component's, counted there (a tied LM head)


@dataclass(frozen=True)
class ParamRow:
    """One learned tensor a component owns directly (not through a child)."""

    name: str                       # attribute name, e.g. "weight"
    label: str                      # reader's name, e.g. "Learned gain"
    shape: tuple[int, ...]          # the tensor's real shape
    factors: tuple[int, ...]        # the calculation's factors, in the orientation the math uses
    count: int
    trained: bool
    counted: bool = True            # False where the same tensor is counted at another place
    shared_with: tuple[str, ...] = ()   # other "module.param" paths holding the same tensor


def calculation(factors: tuple[int, ...]) -> str:
    """A row's count as its factors multiply: (768, 2304) -> "768 × 2304"; a scalar tensor -> "1"."""
    return " × ".join(str(f) for f in factors) if factors else "1"


@dataclass(frozen=True)
class CountedElsewhere:
    """Parameters a component holds through its children that a place outside it holds too, and counts (a tied
    decoder inside a prediction head, counted at the token embedding)."""

    counted_at: str                 # the "module.param" path that counts the tensor
    count: int


@dataclass(frozen=True)
class BufferRow:
    """One buffer a component owns directly; buffers are state, not parameters."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    count: int
    persistent: bool


@dataclass(frozen=True)
class Dim:
    """One dimension of a tensor: a fixed size, or an expression in the input symbols."""

    value: int | None = None        # a fixed size
    symbol: str | None = None       # a sympy expression in the input symbols, e.g. "T", "2*T", "B*T"
    name: str | None = None         # the main symbol's name, e.g. "positions"

    @property
    def symbolic(self) -> bool:
        return self.symbol is not None


@dataclass(frozen=True)
class TensorShape:
    name: str                       # the forward() parameter, "output", or "output[0]"
    dims: tuple[Dim, ...]
    dtype: str


class ShapeStatus(str, Enum):
    DERIVED = "derived"
    NOT_DERIVED = "not derived"
    NOT_CALLED = "not called"


@dataclass(frozen=True)
class Shapes:
    status: ShapeStatus
    inputs: tuple[TensorShape, ...] = ()
    outputs: tuple[TensorShape, ...] = ()
    method: str | None = None       # which forward gave them: "fake" (symbolic), "meta", "cpu"; "own": a call of its
                                    # own, on inputs made up for a component the model's forward() does not call
    reason: str | None = None       # why they are missing, why the CPU was needed, or what an own call ran on


@dataclass(frozen=True)
class MathSymbol:
    """One value a page names: defined once, named once (identity is the key, not the LaTeX)."""

    key: str                        # "in.u", "p.qkv.weight", "v12", "c.eps.1e-05"
    tex: str                        # its name on the page, plain LaTeX
    kind: str                       # "input" | "param" | "const" | "module" | "modules" | "value" | "notation"
    stream: str | None = None       # "q" | "k" | "v": the attention stream it belongs to


@dataclass(frozen=True)
class Step:
    """One line of math: LaTeX in which every symbol is a reference, `\\atlasref{key}`."""

    tex: str
    section: str | None = None      # the expanded child it belongs to ("Perceiver attention")
    links: tuple[str, ...] = ()     # ids of the child components the step calls, in order
    defines: str | None = None      # the key of the symbol it defines
    shape: tuple = ()               # the defined value's dims (Dim), where a tensor

@dataclass(frozen=True)
class Verification:
    """The equations, run on random inputs, against the module's real forward()."""

    verified: bool
    max_error: float | None = None  # max |equations − forward| / max(1, max |forward|)
    tolerance: float | None = None
    reason: str | None = None       # why it was not run, or what did not match
    dtype: str | None = None
    note: str | None = None         # inputs the check took as the model computes them, not random, and why

    @property
    def mismatch(self) -> bool:
        """The equations ran and disagree with forward(), or could not run: a failing build."""
        return not self.verified and self.max_error is not None


class EquationStatus(str, Enum):
    DERIVED = "derived"             # from the code: registry (leaves) or forward() source (composites)
    OVERRIDE = "override"           # the model author's atlas_equations
    NOT_DERIVED = "not derived"


@dataclass(frozen=True)
class Fact:
    """A hyper-parameter read off the verified steps: 12 heads of 64 features, softcap 50, query/key norms."""

    kind: str                       # "heads" | "kv_heads" | "head_features" | "softcap" | "qk_norm" | "norm"
    value: float | int | bool | str     # a norm's form: "layer", "rms" or "l2"
    file: str | None = None         # where the code computes with it
    line: int | None = None


@dataclass(frozen=True)
class Equations:
    status: EquationStatus
    summary: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    aligned: bool = False           # a leaf's lines, shown as one aligned block
    reason: str | None = None       # why they could not be derived: the construct and file:line
    verification: Verification | None = None
    residuals: int = 0              # own steps of the form x' = x + branch(...)
    normalizes: bool = False        # the steps divide by a norm (‖x‖₂) or by a square root of a mean
    symbols: tuple[MathSymbol, ...] = ()    # every symbol the lines refer to
    constants: tuple[str, ...] = ()         # lines stating constants once: ε = 10⁻⁵
    notations: tuple[tuple[str, str], ...] = ()   # (LaTeX, sentence) for notation the lines use (x^h)
    facts: tuple[Fact, ...] = ()            # hyper-parameters read off the verified steps, with their lines

    def names(self) -> dict[str, str]:
        return {s.key: s.tex for s in self.symbols}

    def streams(self) -> dict[str, str]:
        return {s.key: s.stream for s in self.symbols if s.stream}

@dataclass(frozen=True)
class Excerpt:
    start: int                      # first line, 1-based
    end: int                        # last line, inclusive
    text: str


@dataclass(frozen=True)
class Source:
    """Where a component's class is written, pinned at a revision."""

    file: str                       # "atlas/zoo/ldlm.py", "torch/nn/modules/normalization.py"
    origin: str                     # "git" (a checkout), "package" (an installed distribution), "file"
    revision: str | None            # short commit, or the package version
    label: str                      # how pages name the revision
    dirty: bool = False             # the file has uncommitted changes
    url: str | None = None          # the file at that revision, without a line anchor
    excerpts: tuple[Excerpt, ...] = ()


@dataclass(frozen=True)
class Claim:
    """A sentence the atlas established, the lines it comes from, and the check behind it."""

    text: str
    check: str                      # "accounting", "equations verified", "shape probes", "structure"
    file: str
    start: int
    end: int
    excerpt: str
    source: Source | None = None    # the file's own source, where it is not the component's (an inherited __init__)


@dataclass(frozen=True)
class Cost:
    """What one forward costs, as sympy expressions in the input symbols (B, T, ...)."""

    flops: str                      # contractions, 2 per multiply-add: one forward of one instance (or the model)
    flops_causal: str | None = None     # the same with causal attention computing T(T+1)/2 pairs; None if none
    activation_bytes: str | None = "0"  # saved for the backward pass (see README for what is assumed); None: not
                                        # measured, the forward ran only without autograd
    uncounted: tuple[str, ...] = ()     # operations whose arithmetic is not counted in `flops`
    attention: str | None = None    # how attention ran inside it ("fused", "explicit", "both"); None: it has none
    calls: int = 1                  # its calls in one forward, every instance's together
    flops_all_calls: str | None = None  # the FLOPs of all of them; None: one call each, `flops` times the instances


@dataclass(frozen=True)
class CostSummary:
    """Model-level figures at a stated reference size."""

    reference: tuple[tuple[str, int], ...]      # (symbol, size): where the formulas are evaluated on pages
    kv_cache_bytes_per_token: int | None = None     # what the cache the forward returns grows by per token
    attention: str | None = None                 # how attention was computed in the record (for activations)
    pinned: tuple[tuple[str, int], ...] = ()     # sizes the code needed exactly: the formulas hold there only
    kv_cache_note: str | None = None             # why no per-token figure, where the forward returns a state
    capped: tuple[tuple[str, int, str], ...] = ()  # (symbol, size, where): held below the usual size by the largest
                                                 # size the record holds at, and the line (or --dim) that set it


@dataclass(frozen=True)
class Trait:
    """One architectural figure of a model (a width, a norm's kind) and where it was read."""

    value: int | str
    component: str | None = None    # the component it was read off, for a link; None: the model's config
    source: str | None = None       # the config field it was read from ("max_position_embeddings"), if one


@dataclass(frozen=True)
class Architecture:
    """What a catalog compares, each field the distinct values found, in tree order (an encoder-decoder has two
    stacks of layers)."""

    layers: tuple[Trait, ...] = ()          # a stack of blocks: its instance count
    width: tuple[Trait, ...] = ()           # the stream a stack reads and writes
    heads: tuple[Trait, ...] = ()
    kv_heads: tuple[Trait, ...] = ()
    ffn: tuple[Trait, ...] = ()             # the widest hidden size of a block's matrices outside attention
    experts: tuple[Trait, ...] = ()         # matrices stacked per expert: their count
    vocabulary: tuple[Trait, ...] = ()
    context: tuple[Trait, ...] = ()
    norms: tuple[Trait, ...] = ()           # "LayerNorm", "RMSNorm", ...
    positions: tuple[Trait, ...] = ()       # "rotary", "learned", "fixed", "relative"
    activations: tuple[Trait, ...] = ()     # "gelu", "silu", ...; "gated" ones multiply another projection

    FIELDS = ("layers", "width", "heads", "kv_heads", "ffn", "experts", "vocabulary", "context", "norms",
              "positions", "activations")


@dataclass(frozen=True)
class FlowNode:
    """One box of a data-flow diagram: a model input, a child module's call (or a run of calls of one list), or
    the output."""

    kind: str                       # "input" | "module" | "output"
    label: str                      # the input's name; the output's name
    component: str | None = None    # "module": the component called
    calls: int = 1                  # "module": consecutive calls of the component (a loop over a list)


@dataclass(frozen=True)
class Flow:
    """Which child's output feeds which, in the order the forward ran them, read off the recorded forward."""

    nodes: tuple[FlowNode, ...] = ()
    edges: tuple[tuple[int, int], ...] = ()     # (from node, to node), node indices, from < to


@dataclass(frozen=True)
class Component:
    """A position in the module tree, with structurally identical list entries collapsed."""

    id: str                         # collapsed path, "" for the model itself
    parent: str | None
    name: str                       # display name
    cls: str                        # qualified class name
    instances: int                  # module instances at this position, across the model
    repeat: int                     # instances per instance of the parent
    module_paths: tuple[str, ...]
    rows: tuple[ParamRow, ...]
    buffers: tuple[BufferRow, ...]
    children: tuple[str, ...]       # child ids, in module order
    parameters_per_instance: int    # every parameter element one instance holds, children included
    summary: str
    reconstruction: str | None = None
    name_is_prose: bool = True      # "Encoder block" (prose) vs "TransformerEncoderLayer" (a class name)
    shapes: Shapes | None = None
    equations: Equations | None = None
    source: Source | None = None
    claims: tuple[Claim, ...] = ()
    explanation: tuple[str, ...] = ()
    cost: Cost | None = None
    cost_reason: object = None      # why there is no cost (a Text): it depends on sizes the data decides
    flow: Flow | None = None        # which child's output feeds which, in its forward's order
    counted_elsewhere: tuple[CountedElsewhere, ...] = ()    # of parameters_per_instance, tied tensors counted outside
    lead: int = 0                   # the instance the page describes, in module_paths: the first the forward called
    set_apart: str | None = None    # why alike entries beside it are other components: settings, or other inputs

    @property
    def path(self) -> str:
        """The module path of the instance the page describes (an expert the router sent no token to is not it)."""
        return self.module_paths[self.lead]

    @property
    def parameters_total(self) -> int:
        return self.parameters_per_instance * self.instances

    @property
    def own_parameters(self) -> int:
        return sum(r.count for r in self.rows)


@dataclass(frozen=True)
class Totals:
    """Model-level totals. Parameters count each tensor once, by identity."""

    parameters: int
    trained: int
    frozen: int
    buffers: int                    # buffer elements, listed apart from parameters
    buffer_tensors: int


@dataclass(frozen=True)
class Published:
    """Totals a publication gives for the model, declared by the model's author."""

    source: str
    trained: int | None = None
    frozen: int | None = None
    frozen_composition_inferred: bool = False


@dataclass(frozen=True)
class DimNames:
    """The model's dimension vocabulary: names of input symbols, labels of fixed sizes."""

    symbols: tuple[tuple[str, str], ...] = ()   # ("T", "positions")
    fixed: tuple[tuple[int, str], ...] = ()     # (768, "d")


@dataclass(frozen=True)
class Mismatch:
    """A tensor that both the code and the checkpoint hold, with another shape or dtype."""

    name: str                       # the code's name, e.g. "h.0.attn.c_attn.weight"
    code_shape: tuple[int, ...]
    checkpoint_shape: tuple[int, ...]
    code_dtype: str                 # torch's name without "torch.", e.g. "float32"
    checkpoint_dtype: str


@dataclass(frozen=True)
class TiedCopy:
    """A tied tensor's copy that the checkpoint leaves out, as save_pretrained does: it is saved once."""

    name: str                       # the code's name of the absent copy, e.g. "lm_head.weight"
    saved_as: str                   # the code's name of the same tensor, which the checkpoint holds


@dataclass(frozen=True)
class DtypeCount:
    """The checkpoint's tensors of one dtype."""

    dtype: str
    tensors: int
    parameters: int                 # elements
    bytes: int                      # bytes of tensor data on disk


@dataclass(frozen=True)
class ComponentCheck:
    """The code tensors at one component (all instances, children included), against the checkpoint."""

    id: str                         # the component's id
    tensors: int                    # the code's tensors: parameters (every tied copy) and persistent buffers
    matched: int                    # same name, shape and dtype in the checkpoint
    tied: int                       # absent copies of tied tensors that the checkpoint holds under another name
    unexpected: int                 # checkpoint tensors named under this component that the code does not hold
    parameters: int                 # elements of the distinct parameters that matched, directly or by their tie


@dataclass(frozen=True)
class CheckpointReport:
    """A checkpoint's tensors, read from its headers, reconciled with the code's tensors by name."""

    path: str                       # as given, relative to the working folder where it lies inside it
    format: str                     # "safetensors", "safetensors-sharded", "torch", "torch-sharded"
    file: str                       # the file read first: the .safetensors file, the index, the .bin
    shards: int                     # files holding tensor data
    sha256: str
    hashed: str                     # what the hash covers: "header", "index" or "listing"
    tensors: int
    parameters: int                 # elements of every tensor in the checkpoint
    bytes: int                      # bytes of tensor data on disk
    matched: int
    missing: tuple[str, ...]        # code names with no tensor in the checkpoint
    unexpected: tuple[str, ...]     # checkpoint names with no tensor in the code, as the checkpoint spells them
    mismatched: tuple[Mismatch, ...]
    tied: tuple[TiedCopy, ...]
    stripped: tuple[str, ...] = ()  # prefixes taken off the checkpoint's names, in the order applied
    added: str | None = None        # a prefix put before the checkpoint's names
    dtypes: tuple[DtypeCount, ...] = ()
    components: tuple[ComponentCheck, ...] = ()

    @property
    def problems(self) -> int:
        return len(self.missing) + len(self.unexpected) + len(self.mismatched)

    def code_name(self, name: str) -> str:
        """A checkpoint name as the code spells it, under this report's mapping."""
        return map_name(name, self.stripped, self.added)

    def component(self, cid: str) -> ComponentCheck | None:
        return next((c for c in self.components if c.id == cid), None)


WRAPPER = "_orig_mod."              # torch.compile's wrapper; it may sit at any depth


def map_name(name: str, stripped: tuple[str, ...], added: str | None) -> str:
    """Take the prefixes off a checkpoint name in order (torch.compile's `_orig_mod.` at any depth), then add one."""
    for prefix in stripped:
        if prefix == WRAPPER:
            name = ".".join(part for part in name.split(".") if part != WRAPPER[:-1])
        elif name.startswith(prefix):
            name = name[len(prefix):]
    if added and not name.startswith(added):
        name = added + name
    return name


@dataclass(frozen=True)
class ModelDoc:
    """Everything the atlas knows about one model."""

    name: str                       # display name, e.g. "LDLM"
    slug: str                       # URL segment, e.g. "ldlm"
    spec: str                       # how it was loaded, e.g. "atlas.zoo.ldlm:ldlm"
    cls: str
    components: tuple[Component, ...]   # the model first, then the tree in pre-order
    totals: Totals
    published: Published | None = None
    dims: DimNames = DimNames()
    inputs: tuple[str, ...] = ()                 # the example inputs, as declared ("input_ids:int64[B,T]")
    input_notes: tuple[str, ...] = ()            # how the inputs were found, and any retry the run needed
    forward_failure: str | None = None           # why the model-level forward did not run, if it did not
    checkpoint: CheckpointReport | None = None   # set when the build was given --checkpoint
    cost: Cost | None = None                     # one forward of the whole model
    cost_summary: CostSummary | None = None
    architecture: Architecture | None = None     # what the catalog compares
    _index: dict = field(default=None, init=False, repr=False, compare=False, hash=False)
    _paths: dict = field(default=None, init=False, repr=False, compare=False, hash=False)

    @property
    def paths(self) -> dict[str, str]:
        """module path -> the id of the component at it."""
        if self._paths is None:
            object.__setattr__(self, "_paths", {p: c.id for c in self.components for p in c.module_paths})
        return self._paths

    def component(self, cid: str) -> Component:
        if self._index is None:
            object.__setattr__(self, "_index", {c.id: c for c in self.components})
        return self._index[cid]

    @property
    def root(self) -> Component:
        return self.components[0]

    def ancestors(self, cid: str) -> tuple[Component, ...]:
        """The chain from the model down to, not including, the component."""
        chain = []
        parent = self.component(cid).parent
        while parent is not None:
            comp = self.component(parent)
            chain.append(comp)
            parent = comp.parent
        return tuple(reversed(chain))
