"""Freed memory kept for the next tensor of its size, in the atlas's own processes that check equations (the CLI's
build, check and describe --verify; the mkdocs plugin).

Checking equations materializes one component instance after another on the CPU, each a few MB to a few hundred MB,
and frees it. glibc's malloc hands every block over its mmap threshold back to the system when it is freed, and its
heap's free top over its trim threshold; both start small and grow only as blocks are freed. Under those defaults
each new instance would be mapped afresh and every page of it faulted in as it is filled, a cost in system time paid
again for every instance. Blocks under 32 MB (glibc's largest mmap threshold) are therefore taken from the heap, and
up to 256 MB of free heap is kept, so that the next instance reuses the memory the last one freed. Larger blocks are
mapped and handed back as glibc does by default. Elsewhere than glibc (macOS, musl), nothing changes.
"""

from __future__ import annotations

import ctypes

# The most memory one CPU copy may take (a component instance the equations' check runs, a model the fallback probes
# run): --memory-budget and the mkdocs plugin's memory_budget, in GB.
DEFAULT_BUDGET_GB = 2.0
DEFAULT_BUDGET_BYTES = int(DEFAULT_BUDGET_GB * 1024**3)

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # malloc.h
_MMAP_THRESHOLD = 32 << 20                          # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
_TRIM_THRESHOLD = 256 << 20


def keep_freed_memory() -> bool:
    """Set glibc's thresholds for this process; True where they were set."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):       # not glibc
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
