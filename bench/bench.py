"""Benchmark: wall time and peak RSS of `atlas describe` (with shapes) on LDLM and a Llama-3-70B-sized config.

Each measurement runs in a fresh child process, so its peak RSS is its own.
Run: .venv/bin/python bench/bench.py   (README records the latest output)
"""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LLAMA = "tests/fixtures/llama.py:llama3_70b"

# Peak RSS of one child: run the command under a wrapper that reads RUSAGE_CHILDREN after it exits.
_WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode\n"
    "dt = time.perf_counter() - t\n"
    "print(rc, dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def measure(argv: list[str], repeat: int = 3) -> tuple[float, float]:
    """(best seconds, peak RSS MB) over `repeat` runs."""
    best, peak = float("inf"), 0.0
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], cwd=ROOT, capture_output=True, text=True)
        rc, seconds, rss_kb = out.stdout.split()
        if rc != "0":
            raise SystemExit(f"failed: {' '.join(argv)}\n{out.stderr}")
        best, peak = min(best, float(seconds)), max(peak, int(rss_kb) / 1024)
    return best, peak


def main() -> None:
    atlas = [sys.executable, "-m", "atlas", "describe"]
    rows = [
        ("atlas describe LDLM", atlas + ["--json"]),
        ("atlas describe Llama-3-70B config", atlas + [LLAMA, "--json"]),
    ]
    import torch
    print(f"machine: {platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}")
    print(f"{'measurement':40s} {'seconds':>8s} {'peak RSS MB':>12s}")
    for label, argv in rows:
        seconds, rss = measure(argv)
        print(f"{label:40s} {seconds:8.2f} {rss:12.0f}")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"(bench took {time.perf_counter() - start:.0f} s)")
