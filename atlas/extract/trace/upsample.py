"""F.interpolate on symbolic sizes, through aten's decompositions.

F.interpolate works out the output size in Python, `floor(float(size) * scale)`, which pins every size it reads
to its hint; and with `size=` the composite kernel refuses symbolic sizes outright. Either way an upsampling model
(a U-Net, a segmentation head) would lose its symbolic record. The `.vec` upsample ops' decompositions compute the same
size symbolically (torch._decomp's upsample_compute_output_size) and run the kernels' meta functions.
"""

from __future__ import annotations

import torch
from torch._decomp import decomposition_table

_OPS = {("nearest", 1): "upsample_nearest1d", ("nearest", 2): "upsample_nearest2d",
        ("nearest", 3): "upsample_nearest3d", ("nearest-exact", 1): "_upsample_nearest_exact1d",
        ("nearest-exact", 2): "_upsample_nearest_exact2d", ("nearest-exact", 3): "_upsample_nearest_exact3d",
        ("bilinear", 2): "upsample_bilinear2d", ("trilinear", 3): "upsample_trilinear3d",
        ("bicubic", 2): "upsample_bicubic2d"}
_ALIGNED = ("bilinear", "trilinear", "bicubic")         # these take align_corners


def symbolic(args, kwargs) -> bool:
    """Whether an F.interpolate call holds a symbolic size: its input's, or the size it asks for (a table of
    positions, a parameter of fixed size, resized to the image's patches)."""
    x = args[0] if args else kwargs.get("input")
    size = args[1] if len(args) > 1 else kwargs.get("size")
    sizes = [*(x.shape if isinstance(x, torch.Tensor) else ()), *(size if isinstance(size, (list, tuple)) else [size])]
    return any(isinstance(s, torch.SymInt) for s in sizes)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """The output of F.interpolate with these arguments, or None where this path does not cover them (the caller
    then runs F.interpolate itself)."""
    spatial = input.dim() - 2
    name = _OPS.get((mode, spatial))
    if name is None or antialias or (size is None) == (scale_factor is None):
        return None
    op = getattr(torch.ops.aten, name).vec
    if op not in decomposition_table:
        return None
    if size is not None:
        output_size, scales = list(size) if isinstance(size, (list, tuple)) else [size] * spatial, None
    else:
        scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [float(scale_factor)] * spatial
        output_size = None
        if recompute_scale_factor:      # the size from the scales, then the kernel works from the size alone
            output_size = [torch.sym_int(torch.sym_float(input.shape[i + 2]) * s) for i, s in enumerate(scales)]
            scales = None
    if mode in _ALIGNED:
        return decomposition_table[op](input, output_size, bool(align_corners), scales)
    return decomposition_table[op](input, output_size, scales)
