"""What a model's author can tell the atlas: attributes named `atlas_*` on the model or on any of its modules.

    class Block(nn.Module):
        atlas_name = "Encoder block"                # the component's name on its pages
        atlas_summary = "Attend, then transform."   # its one sentence (else its docstring's first sentence)
        atlas_equations = ("y = x + f(x)",)         # equations written by hand, in sympy's syntax (on the class)

    model.atlas_inputs = ("input_ids:int64[B,T]",)  # example inputs of forward() (on any module the model never
                                                    # calls, the inputs of its own run)
    model.atlas_dims = {"T": "positions"}           # the names of the input symbols
    model.atlas_fixed_dims = {"d": 768}             # labels of fixed sizes
    model.atlas_reference_sizes = {"B": 1, "T": 512}    # the sizes pages evaluate cost formulas at
    model.atlas_published = {"source": "the paper, Table 2", "trained": 86_000_000}   # a publication's totals
    part.atlas_reconstruction = "Not public; rebuilt from the authors' earlier code."  # why a part is rebuilt

Every hook is optional and read here alone, into `Hooks`: nothing else in the atlas reads an `atlas_` attribute.
A hook of the wrong type is no hook (a name that is no string), so a model never fails for its hints.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hooks:
    name: str | None = None
    summary: str | None = None
    reconstruction: str | None = None
    equations: tuple[str, ...] | None = None
    inputs: tuple[str, ...] | None = None
    dims: dict | None = None                # {symbol: its name}
    fixed_dims: dict | None = None          # {label: size}
    reference_sizes: dict | None = None     # {symbol: size}
    published: dict | None = None           # {"source": ..., "trained": ..., "frozen": ..., ...}


def hooks_of(module) -> Hooks:
    """A module's hooks: its own attributes; `atlas_equations` from its class."""
    get = vars(module).get if hasattr(module, "__dict__") else (lambda name, default=None: default)

    def attr(name: str):
        value = get(name)
        return getattr(type(module), name, None) if value is None else value

    return Hooks(name=_text(attr("atlas_name")), summary=_text(attr("atlas_summary")),
                 reconstruction=_text(attr("atlas_reconstruction")),
                 equations=_texts(getattr(type(module), "atlas_equations", None)),
                 inputs=_texts(attr("atlas_inputs")), dims=_mapping(attr("atlas_dims")),
                 fixed_dims=_mapping(attr("atlas_fixed_dims")), reference_sizes=_mapping(attr("atlas_reference_sizes")),
                 published=_mapping(attr("atlas_published")))


def _text(value) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _texts(value) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _mapping(value) -> dict | None:
    return dict(value) if isinstance(value, dict) and value else None
