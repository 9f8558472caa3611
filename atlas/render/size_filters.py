"""The sizes a cost sentence is stated at."""

from __future__ import annotations


def sizes_in(reference, pinned, *exprs) -> str:
    """The reference sizes the formulas are in, "B = 1, T = 448", and those the record was pinned at (the formulas
    hold them as numbers): an encoder's cost, with no T in it, is at B = 1 alone, not at a decoder's context."""
    from atlas.document.expressions import parse
    used = {str(s) for e in exprs if e for s in parse(e).free_symbols} | {name for name, _ in pinned}
    return ", ".join(f"{name} = {size}" for name, size in reference if name in used)


SIZE_FILTERS = {"sizes_in": sizes_in}
