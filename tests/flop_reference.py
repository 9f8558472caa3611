"""The FLOPs reference the atlas is measured against: torch's FlopCounterMode, corrected where it misses arithmetic.

- `aten._scaled_dot_product_flash_attention_for_cpu`: torch 2.13's FlopCounterMode has no formula for the CPU
  attention kernel (pytorch#195460), so `F.scaled_dot_product_attention` on CPU counted zero; it gets torch's own
  sdpa formula (`sdpa_flop_count`).
- `aten._grouped_mm` (mixture-of-experts dispatch): no formula either. Its count is 2·M·N·K summed over the groups,
  each group's size read from the offsets (`offs`, the cumulative ends of the groups along the grouped dim). On fake
  or meta tensors the offsets have no values: the groups are then taken to cover the whole grouped dim, which is
  what MoE dispatch gives (the tokens sorted by expert, offs = cumsum of the counts).
- nn.MultiheadAttention's fast path (`torch._native_multi_head_attention`, taken in eval mode without grad) has no
  formula: it is turned off during the count, so the projections and attention run as counted ops.

Used by tests/test_cost.py and bench/library_suite.py (which puts tests/ on sys.path).
"""

from __future__ import annotations

import contextlib

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

aten = torch.ops.aten


def cpu_flash(query, key, value, *args, out_shape=None, **kwargs) -> int:
    """The CPU flash-attention kernel: the same count as every other sdpa kernel (shapes in, as FlopCounterMode
    passes them to a formula that is not raw)."""
    return sdpa_flop_count(query, key, value)


def _offsets_end(offs, full):
    """offs[-1], the rows (or columns) the groups cover; `full` where its value cannot be read (fake, meta, or a
    symbolic tensor: no data, and reading one would make an unbacked symbol)."""
    if offs is None or isinstance(offs, FakeTensor) or offs.device.type == "meta" or offs.numel() == 0:
        return full
    try:
        return int(offs[-1].item())
    except Exception:   # a data-dependent read the mode refuses: the whole dim
        return full


def grouped_mm_flop(mat_a, mat_b, offs=None, bias=None, out_dtype=None, *args, out_val=None, **kwargs) -> int:
    """2·M·N·K of every group, summed. The four layouts of `_grouped_mm`:
    a (M, K) · b (G, K, N), groups along M  -> 2 · offs[-1] · K · N
    a (M, K) · b (K, N),    groups along K  -> 2 · M · offs[-1] · N
    a (G, M, K) · b (K, N), groups along N  -> 2 · M · K · offs[-1]
    a (G, M, K) · b (G, K, N), a bmm        -> 2 · G · M · K · N"""
    a, b = mat_a.shape, mat_b.shape
    if len(a) == 2 and len(b) == 3:
        return 2 * _offsets_end(offs, a[0]) * a[1] * b[-1]
    if len(a) == 2 and len(b) == 2:
        return 2 * a[0] * _offsets_end(offs, a[1]) * b[1]
    if len(a) == 3 and len(b) == 2:
        return 2 * a[1] * a[2] * _offsets_end(offs, b[1])
    return 2 * a[0] * a[1] * a[2] * b[-1]


grouped_mm_flop._get_raw = True      # FlopCounterMode passes the tensors themselves: the offsets' values are needed

CUSTOM_MAPPING = {aten._scaled_dot_product_flash_attention_for_cpu: cpu_flash, aten._grouped_mm: grouped_mm_flop}


@contextlib.contextmanager
def flop_counter(display: bool = False):
    """A FlopCounterMode with the corrections above, nn.MultiheadAttention's fast path off while it counts. Enter it
    as the counter itself: `with flop_counter() as counter: model(x)`, then counter.get_flop_counts()."""
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with FlopCounterMode(display=display, custom_mapping=dict(CUSTOM_MAPPING)) as counter:
            yield counter
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)


def by_module(counter: FlopCounterMode) -> dict[str, int]:
    """The counts per module path, "" for the model; the "Global" count left out."""
    return {(name.split(".", 1)[1] if "." in name else ""): sum(ops.values())
            for name, ops in counter.get_flop_counts().items() if name != "Global"}
