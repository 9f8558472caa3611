"""The sizes pages evaluate cost formulas at, and the sizes a model states for its symbols."""

from __future__ import annotations

from torch import nn

from atlas.extract.discover.conventions import SOURCE_CONTEXT, stated_contexts
from atlas.load.hooks import hooks_of

REFERENCE = {"B": 1, "T": 1024, "S": 1024, "H": 224, "W": 224}


def reference_sizes(model: nn.Module, symbols, pinned: dict | None = None,
                    upper: dict | None = None) -> tuple[tuple[str, int], ...]:
    """Where pages evaluate the formulas: at a size the code was pinned to, if it was; the model's
    `atlas_reference_sizes`, else B = 1 and T (and an encoder-decoder's source length S) = 1024, within the config's
    position limit and within the largest size the code allows (`upper`: a table of 32 positions, an assert, a
    --dim bound); images at the size the model states (MobileViT's config: 64 × 64; a diffusers UNet's
    `sample_size`; timm's `pretrained_cfg`), else 224 × 224."""
    config = getattr(model, "config", None)
    declared = {**(hooks_of(model).reference_sizes or {}), **(pinned or {})}
    stated = stated_contexts(config)
    source = [value for name, value in stated if name.endswith(SOURCE_CONTEXT)]
    # a text part's limit bounds the text alone; an encoder-decoder's source length its own limit, where it has one
    limits = {"T": next((value for name, value in stated if not name.endswith(SOURCE_CONTEXT)), None),
              "S": source[0] if source else next((value for name, value in stated if "." not in name), None)}
    images = _images(model)
    out = []
    for sym in symbols:
        size = declared.get(sym, images.get(sym, REFERENCE.get(sym, 16)))
        if limits.get(sym) is not None and sym not in declared:
            size = min(size, limits[sym])
        if sym in (upper or {}) and sym not in declared:
            size = min(size, upper[sym])
        out.append((sym, int(size)))
    return tuple(out)


def stated_sizes(model: nn.Module) -> dict[str, int]:
    """The sizes the model itself states for its symbols: its `atlas_reference_sizes`, the image size it states."""
    return {**_images(model), **(hooks_of(model).reference_sizes or {})}


def _images(model: nn.Module) -> dict[str, int]:
    """H and W from the image size the model states (atlas.extract.discover.conventions.stated_image)."""
    from atlas.extract.discover.conventions import stated_image
    image, _ = stated_image(model)
    return dict(zip("HW", image)) if image is not None else {}
