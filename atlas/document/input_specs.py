"""Example inputs and the dimension vocabulary, parsed from text. No torch here.

An input is written `name:dtype[D, ...]`, e.g. `input_ids:int64[B,T]` or
`noise:float32[B,T,d]`. A dim is an integer, a symbol (varies between probes:
B, T, ...), or a fixed label the model declares (`d` -> 768).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atlas.errors import AtlasError
from atlas.i18n import gettext, msg, render

STANDARD_SYMBOLS = (("B", "batch"), ("T", "positions"), ("S", "source positions"), ("H", "height"), ("W", "width"),
                    ("D", "depth"), ("N", "nodes"), ("E", "edges"))
VARIES = "varies with the input"        # the name of a dim no expression fits
DATA_DECIDED = "decided by the data"    # the name of a size the data decides (u0: tokens routed to an expert)
# The dim names pages translate: the standard symbols' (also when a model declares them) and VARIES.
# A name a model declares beyond these is shown as its code writes it, unless the catalogs hold it (a zoo model's
# own words, atlas.zoo.own_words).
DIM_WORDS = {"batch": msg("batch"), "positions": msg("positions"), "source positions": msg("source positions"),
             "height": msg("height"), "width": msg("width"),
             "depth": msg("depth"), "nodes": msg("nodes"), "edges": msg("edges"), VARIES: msg("varies with the input"),
             DATA_DECIDED: msg("decided by the data")}
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64")

_INPUT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([a-z0-9]+)\s*\[([^\]]*)\]\s*$")


@dataclass(frozen=True)
class InputSpec:
    name: str
    dtype: str
    dims: tuple[str | int, ...]       # ints, symbols, or fixed labels


@dataclass(frozen=True)
class Vocabulary:
    """Names for symbolic dims and labels for fixed ones, declared by the model or standard."""

    symbols: tuple[tuple[str, str], ...] = STANDARD_SYMBOLS        # (symbol, name)
    fixed: tuple[tuple[int, str], ...] = ()                          # (value, label)

    def symbol_name(self, symbol: str) -> str | None:
        return dict(self.symbols).get(symbol)

    def fixed_value(self, label: str) -> int | None:
        for value, lab in self.fixed:
            if lab == label:
                return value
        return None


def dim_words(name: str) -> str:
    """A dim's name in the page's language: "batch × positions" -> "lote × posiciones" (es)."""
    return " × ".join(render(DIM_WORDS[part]) if part in DIM_WORDS else gettext(part) for part in name.split(" × "))


def parse_input(text: str) -> InputSpec:
    m = _INPUT.match(text)
    if not m:
        raise AtlasError(f"bad --input {text!r}: expected 'name:dtype[D,...]', e.g. 'input_ids:int64[B,T]'")
    name, dtype, body = m.groups()
    if dtype not in DTYPES:
        raise AtlasError(f"bad --input {text!r}: unknown dtype {dtype!r} (one of {', '.join(DTYPES)})")
    dims: list[str | int] = []
    for part in (p.strip() for p in body.split(",")):
        if not part:
            if body.strip():
                raise AtlasError(f"bad --input {text!r}: empty dim")
            continue
        if part.isdigit():
            dims.append(int(part))
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_ ]*", part):
            dims.append(part)
        else:
            raise AtlasError(f"bad --input {text!r}: dim {part!r} is neither an integer nor a name")
    return InputSpec(name, dtype, tuple(dims))


def input_text(name: str, dtype: str, dims) -> str:
    """An input as --input writes it, parse_input's inverse: "x:float32[B,3,224,224]"."""
    return f"{name}:{dtype}[{','.join(str(d) for d in dims)}]"


def resolve(specs: list[InputSpec], vocab: Vocabulary) -> tuple[list[InputSpec], list[str]]:
    """Replace fixed labels by their values; return the inputs and the symbols that vary, in order."""
    symbols: list[str] = []
    out = []
    for spec in specs:
        dims: list[str | int] = []
        for d in spec.dims:
            if isinstance(d, int):
                dims.append(d)
            elif vocab.fixed_value(d) is not None:
                dims.append(vocab.fixed_value(d))
            else:
                if d not in symbols:
                    symbols.append(d)
                dims.append(d)
        out.append(InputSpec(spec.name, spec.dtype, tuple(dims)))
    return out, symbols


def used(vocab: Vocabulary, specs: list[InputSpec], declared: dict | None = None) -> tuple[tuple[str, str], ...]:
    """The vocabulary's symbols the inputs use (and those the model declares), for the page's list of dims."""
    dims = {d for s in specs for d in s.dims if isinstance(d, str)} | set(declared or ())
    named = tuple((sym, name) for sym, name in vocab.symbols if sym in dims)
    own = [d for s in specs for d in s.dims if isinstance(d, str) and vocab.symbol_name(d) is None]
    return named + tuple((sym, "") for sym in dict.fromkeys(own))     # the user's own symbols, with no name


def vocabulary(symbols: dict | None, fixed: dict | None) -> Vocabulary:
    """From a model's `atlas_dims` ({symbol: name}) and `atlas_fixed_dims` ({label: value})."""
    names = dict(STANDARD_SYMBOLS)
    for sym, name in (symbols or {}).items():
        names[str(sym)] = str(name)
    labels: list[tuple[int, str]] = []
    for label, value in (fixed or {}).items():
        if isinstance(value, int) and not any(v == value for v, _ in labels):
            labels.append((int(value), str(label)))
    return Vocabulary(tuple(names.items()), tuple(labels))
