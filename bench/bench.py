"""Benchmark: wall time and peak RSS of `atlas describe` (walk, shapes, equations, provenance) beside
torchinfo's summary on the meta device, on GPT-2 small and a Llama-3-70B-sized config; then one full
`make site` of the LDLM (after set-up).

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


GPT2 = "atlas.zoo.gpt2:gpt2_small"


def main() -> None:
    atlas = [sys.executable, "-m", "atlas", "describe"]
    peer = [sys.executable, str(ROOT / "bench" / "torchinfo_summary.py")]
    pairs = [
        ("GPT-2 small", atlas + [GPT2, "--json", "--input", "input_ids:int64[B,T]"], peer + [GPT2, "128"]),
        ("Llama-3-70B config", atlas + [LLAMA, "--json"], peer + [LLAMA, "128"]),
    ]
    import torch
    print(f"machine: {platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}")
    print(f"{'measurement':44s} {'seconds':>8s} {'peak RSS MB':>12s}")
    ratios = []
    for label, ours, theirs in pairs:
        a_s, a_m = measure(ours)
        t_s, t_m = measure(theirs)
        print(f"{'atlas describe ' + label:44s} {a_s:8.2f} {a_m:12.0f}")
        print(f"{'torchinfo summary (meta) ' + label:44s} {t_s:8.2f} {t_m:12.0f}")
        ratios.append((label, a_s / t_s, a_m / t_m))
    verified = measure(atlas + [LLAMA, "--json", "--verify"], repeat=1)
    print(f"{'atlas describe --verify Llama-3-70B config':44s} {verified[0]:8.2f} {verified[1]:12.0f}")
    for label, argv in (("atlas describe LDLM", atlas + ["--json"]),
                        ("atlas describe --verify LDLM", atlas + ["--json", "--verify"])):
        seconds, rss = measure(argv, repeat=1)
        print(f"{label:44s} {seconds:8.2f} {rss:12.0f}")
    seconds, rss = measure(["make", "-s", "site"], repeat=1)
    print(f"{'make site (LDLM, after set-up)':44s} {seconds:8.2f} {rss:12.0f}")
    for label, time_ratio, rss_ratio in ratios:
        print(f"ratio atlas/torchinfo, {label}: time {time_ratio:.2f}, peak RSS {rss_ratio:.2f}")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"(bench took {time.perf_counter() - start:.0f} s)")
