"""A component's equations: the steps, the symbols they name, the check against forward() and the facts read
off the verified steps. Lines and names are formulas (atlas.document.math_tree): structure, no markup."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from atlas.document.math_tree import Node


@dataclass(frozen=True)
class MathSymbol:
    """One value a page names: defined once, named once (identity is the key, not the name)."""

    key: str                        # "in.u", "p.qkv.weight", "v12", "c.eps.1e-05"
    name: Node                      # its name on the page
    kind: str                       # "input" | "param" | "const" | "module" | "modules" | "value" | "notation"
    stream: str | None = None       # "q" | "k" | "v": the attention stream it belongs to
    shape: tuple = ()               # its dims (Dim), where a tensor
    file: str | None = None         # the code line that computes it (a value) or first reads it (an input, a
    line: int | None = None         # parameter): the file's name and the line


@dataclass(frozen=True)
class Step:
    """One line of math: a formula in which every symbol is a reference to its key."""

    formula: Node
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
class Idiom:
    """A construct recognized in a component's verified steps (an attention, RoPE, an RMSNorm, a mixture of
    experts), with its parameters as the code computes with them and the line that computes it."""

    kind: str                       # "attention" | "rope" | "rmsnorm" | "layernorm" | "gelu" | "swiglu" | "moe" | …
    params: tuple[tuple[str, object], ...] = ()     # ("heads", 32), ("theta", 500000.0), ("eps", 1e-05)
    file: str | None = None
    line: int | None = None

    def get(self, name: str, default=None):
        return next((v for k, v in self.params if k == name), default)


@dataclass(frozen=True)
class PaperView:
    """The steps as a paper prints them: recognized idioms in place of the operations that compute them, checked
    against forward() on their own."""

    summary: tuple[Node, ...] = ()
    steps: tuple[Step, ...] = ()
    constants: tuple[Node, ...] = ()
    notations: tuple[tuple[Node, str], ...] = ()
    verification: Verification | None = None
    same: bool = False              # the steps as the code computes them already read as a paper's: no lines here


@dataclass(frozen=True)
class Equations:
    status: EquationStatus
    summary: tuple[Node, ...] = ()  # the lines a page shows first
    steps: tuple[Step, ...] = ()
    aligned: bool = False           # a leaf's lines, shown as one aligned block
    reason: str | None = None       # why they could not be derived: the construct and file:line
    verification: Verification | None = None
    residuals: int = 0              # own steps of the form x' = x + branch(...)
    normalizes: bool = False        # the steps divide by a norm (‖x‖₂) or by a square root of a mean
    symbols: tuple[MathSymbol, ...] = ()    # every symbol the lines refer to
    constants: tuple[Node, ...] = ()        # lines stating constants once: ε = 10⁻⁵
    notations: tuple[tuple[Node, str], ...] = ()  # (formula, sentence) for notation the lines use (x^h)
    facts: tuple[Fact, ...] = ()            # hyper-parameters read off the verified steps, with their lines
    idioms: tuple[Idiom, ...] = ()          # constructs recognized in the steps
    paper: PaperView | None = None          # the steps as a paper prints them, where they can be

    def names(self) -> dict[str, Node]:
        return {s.key: s.name for s in self.symbols}

    def streams(self) -> dict[str, str]:
        return {s.key: s.stream for s in self.symbols if s.stream}
