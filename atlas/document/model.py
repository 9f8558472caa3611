"""The atlas data model: frozen dataclasses holding plain values.

Nothing here imports torch or jinja2. Raw values live in the data (ints, tuples);
formatting (thousands separators, LaTeX, labels) lives in the render filters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from atlas.document.checkpoint_report import CheckpointReport
from atlas.document.costs import Cost, CostSummary
from atlas.document.equations import Equations
from atlas.document.sources import Claim, Source
from atlas.document.structure import Architecture, ClassUse, Flow
from atlas.document.tensor_shapes import Shapes


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


                                                 # size the record holds at, and the line (or --dim) that set it


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
    quote: str | None = None        # the library's own sentence, where the summary says what was recognized

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

    @property
    def is_normalization(self) -> bool:
        """A torch.nn normalization, or a leaf whose equations divide by a norm or a standard deviation."""
        torch_norm = self.cls.startswith(("torch.nn.modules.normalization.", "torch.nn.modules.batchnorm."))
        return torch_norm or (not self.children and self.equations is not None and self.equations.normalizes)


@dataclass(frozen=True)
class Totals:
    """Model-level totals. Parameters count each tensor once, by identity."""

    parameters: int
    trained: int
    frozen: int
    buffers: int                    # buffer elements, listed apart from parameters
    buffer_tensors: int
    experts: tuple[ExpertLayers, ...] = ()  # mixtures of experts: a token passes through top_k of their experts

    @property
    def active_parameters(self) -> int | None:
        """The parameters one token passes through: all of them but the experts its routers do not pick."""
        if not self.experts:
            return None
        return self.parameters - sum(e.idle for e in self.experts)


@dataclass(frozen=True)
class ExpertLayers:
    """The mixtures of experts at one position of the tree, read off the recognized idiom and the parameters."""

    component: str                  # the component whose equations route tokens to the experts
    instances: int                  # mixtures at this position, across the model
    experts: int                    # experts in each
    top_k: int                      # experts each token passes through
    per_expert: int                 # parameters of one expert

    @property
    def idle(self) -> int:
        """Parameters of the experts a token does not pass through, over every instance."""
        return self.instances * (self.experts - self.top_k) * self.per_expert


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
    class_uses: tuple[ClassUse, ...] = ()        # the torch.nn classes its modules are, in module order
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

    def descendants(self, comp: Component):
        """Every component below `comp`, in pre-order."""
        for cid in comp.children:
            child = self.component(cid)
            yield child
            yield from self.descendants(child)

    def ancestors(self, cid: str) -> tuple[Component, ...]:
        """The chain from the model down to, not including, the component."""
        chain = []
        parent = self.component(cid).parent
        while parent is not None:
            comp = self.component(parent)
            chain.append(comp)
            parent = comp.parent
        return tuple(reversed(chain))
