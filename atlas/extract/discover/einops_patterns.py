"""An input rearranged by einops before its first layer: the input's layout read back from the pattern.

lucidrains' ViTs cut an image into patches with `rearrange(img, 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=8,
p2=8)` (or an `einops.layers.torch.Rearrange` layer) before a LayerNorm(192): the last group of the output,
p1·p2·c, is the layer's 192, so c = 3, and the input is [B, 3, H, W] with H and W multiples of 8. Nothing here runs.
"""

from __future__ import annotations

import math
import re

SPATIAL = {1: ("T",), 2: ("H", "W"), 3: ("D", "H", "W")}
_GROUP = re.compile(r"\(([^)]*)\)|(\S+)")


def groups(side: str) -> list[tuple[str, ...]]:
    """'b c (h p1) (w p2)' -> [('b',), ('c',), ('h', 'p1'), ('w', 'p2')]; an ellipsis or a 1 is a group of its own."""
    return [tuple(m.group(1).split()) if m.group(1) is not None else (m.group(2),) for m in _GROUP.finditer(side)]


def layer_of(module) -> tuple[str, dict] | None:
    """(pattern, axis sizes) of an einops Rearrange layer, else None."""
    pattern, axes = getattr(module, "pattern", None), getattr(module, "axes_lengths", None)
    if isinstance(pattern, str) and "->" in pattern and isinstance(axes, dict) and type(module).__name__ == "Rearrange":
        return pattern, dict(axes)
    return None


def input_dims(pattern: str, axes: dict, width: int) -> tuple[tuple, dict, str] | None:
    """(dims of the input, {symbol: the multiple it must be}, the axis solved as "c = 3") where the output's last
    group is `width` wide, or None where the pattern leaves more than the batch and the spatial sizes unknown."""
    if "->" not in pattern or "..." in pattern:
        return None
    left, right = (groups(side) for side in pattern.split("->"))
    if not right or not all(isinstance(v, int) for v in axes.values()):
        return None
    known = dict(axes)
    unknown = [a for a in right[-1] if a not in known]
    solved = ""
    if len(unknown) == 1:
        rest = math.prod(known[a] for a in right[-1] if a in known)
        if rest == 0 or width % rest:
            return None
        known[unknown[0]] = width // rest
        solved = f"{unknown[0]} = {width // rest}"
    elif unknown:
        return None
    composite = [g for g in left if len(g) > 1]
    symbols = iter(SPATIAL.get(len(composite), ()))
    dims, multiples, batch = [], {}, False
    for g in left:
        if len(g) == 1 and g[0] in known:
            dims.append(known[g[0]])
        elif len(g) == 1 and not batch:
            dims.append("B")
            batch = True
        elif len(g) > 1 and sum(a not in known for a in g) == 1:
            symbol = next(symbols, None)
            if symbol is None:
                return None
            dims.append(symbol)
            multiples[symbol] = math.prod(known[a] for a in g if a in known)
        else:
            return None
    return tuple(dims), multiples, solved
