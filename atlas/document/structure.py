"""What a model is built of, as a catalog compares it (stacks, widths, heads, norms, positions), and which
child's output feeds which."""

from __future__ import annotations

from dataclasses import dataclass


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
    side: bool = False              # "module": reads nothing the forward was given (positions from a range, a
                                    # mask's table): a side input of the modules that read it, not a link of the chain


@dataclass(frozen=True)
class Flow:
    """Which child's output feeds which, in the order the forward ran them, read off the recorded forward."""

    nodes: tuple[FlowNode, ...] = ()
    edges: tuple[tuple[int, int], ...] = ()     # (from node, to node), node indices, from < to


@dataclass(frozen=True)
class ClassUse:
    """Modules of one torch.nn class at one component of a model, read off its module tree while the model was
    there; the class by its name, so that a model read back from its JSON still says what it uses."""

    cls: str                        # the torch.nn class, "torch.nn.Embedding"
    component: str                  # the component's id; for a container, the component holding it
    instances: int                  # modules of the class at this position, across the model
    subclass: str | None = None     # the modules' own class name, when it derives from the torch.nn class
    attribute: str | None = None    # a container's attribute on the component holding it: "blocks"
    held: tuple[tuple[str, int], ...] = ()  # a container's contents: (component id, modules in each)
