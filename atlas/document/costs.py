"""What a forward costs, as expressions in the input symbols, and the model-level figures at a stated size."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cost:
    """What one forward costs, as sympy expressions in the input symbols (B, T, ...)."""

    flops: str                      # contractions, 2 per multiply-add: one forward of one instance (or the model)
    flops_causal: str | None = None     # the same with causal attention computing T(T+1)/2 pairs; None if none
    activation_bytes: str | None = "0"  # saved for the backward pass (see README for what is assumed); None: not
                                        # measured, the forward ran only without autograd
    uncounted: tuple[str, ...] = ()     # operations whose arithmetic is not counted in `flops`
    attention: str | None = None    # how attention ran inside it ("fused", "explicit", "both"); None: it has none
    calls: int = 1                  # its calls in one forward, every instance's together
    flops_all_calls: str | None = None  # the FLOPs of all of them; None: one call each, `flops` times the instances
    # activation_bytes split for another dtype: the floating elements saved (bytes in the activation dtype each),
    # and the bytes of the integers and dropout masks saved, which keep their own dtypes; None as activation_bytes
    activation_elements: str | None = None
    activation_fixed_bytes: str | None = None


@dataclass(frozen=True)
class CostSummary:
    """Model-level figures at a stated reference size."""

    reference: tuple[tuple[str, int], ...]      # (symbol, size): where the formulas are evaluated on pages
    kv_cache_bytes_per_token: int | None = None     # what the cache the forward returns grows by per token
    attention: str | None = None                 # how attention was computed in the record (for activations)
    pinned: tuple[tuple[str, int], ...] = ()     # sizes the code needed exactly: the formulas hold there only
    kv_cache_note: str | None = None             # why no per-token figure, where the forward returns a state
    capped: tuple[tuple[str, int, str], ...] = ()  # (symbol, size, where): held below the usual size by the largest
    kv_cache_elements_per_token: int | None = None  # the same cache in floating elements: bytes in any cache dtype
    dtype: str = "float32"                       # the model's floating dtype: the bytes above are in it
