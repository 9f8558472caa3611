"""Benchmark: wall time and peak RSS of `atlas describe` (walk, shapes, equations, provenance) beside
torchinfo's summary on the meta device, on GPT-2 small and a Llama-3-70B-sized config; then one full
`make site` of the LDLM (after set-up); then a checkpoint of GPT-2 medium (1.42 GB) reconciled with its code,
as safetensors and as a torch .bin, both written by the bench into a temporary folder.

Each measurement runs in a fresh child process, so its peak RSS is its own.
Run: .venv/bin/python bench/bench.py              (README records the latest output)
     .venv/bin/python bench/bench.py checkpoint   (the checkpoint rows alone)
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
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
MEDIUM = "tests/fixtures/checkpoints.py:gpt2_medium"


def write_checkpoints(folder: Path) -> tuple[Path, Path, Path]:
    """GPT-2 medium's weights as a safetensors file (its header over a hole) and a torch .bin (zeros, written);
    and the 70B config's as a safetensors file over a hole (282 GB that take no disk space)."""
    import torch
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures.checkpoints import gpt2_medium, meta_shapes, sparse_safetensors
    from fixtures.llama import llama3_70b
    with torch.device("meta"):
        shapes = meta_shapes(gpt2_medium())
        llama = meta_shapes(llama3_70b())
    safetensors = folder / "gpt2-medium.safetensors"
    sparse_safetensors(safetensors, shapes)
    binary = folder / "gpt2-medium.bin"
    torch.save({name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in shapes.items()}, binary)
    large = folder / "llama-70b.safetensors"
    sparse_safetensors(large, llama)
    return safetensors, binary, large


def checkpoint_rows() -> None:
    atlas = [sys.executable, "-m", "atlas", "describe", MEDIUM, "--json"]
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as tmp:
        *paths, large = write_checkpoints(Path(tmp))
        seconds, rss = measure(atlas)
        print(f"{'atlas describe GPT-2 medium':44s} {seconds:8.2f} {rss:12.0f}")
        for path, kind in zip(paths, ("safetensors", "torch .bin")):
            gb = path.stat().st_size / 1e9
            seconds, rss = measure(atlas + ["--checkpoint", str(path)])
            print(f"{f'  ... --checkpoint {kind} {gb:.2f} GB':44s} {seconds:8.2f} {rss:12.0f}")
        for spec, path, label in ((MEDIUM, paths[0], "GPT-2 medium, safetensors"),
                                  (MEDIUM, paths[1], "GPT-2 medium, torch .bin"),
                                  (LLAMA, large, "Llama-3-70B config, safetensors")):
            runs = [subprocess.run([sys.executable, str(ROOT / "bench" / "checkpoint_timing.py"), spec, str(path)],
                                   cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
                    for _ in range(3)]
            read, reconcile, grew, rss, tensors, data = min(runs, key=lambda r: float(r[0]) + float(r[1]))
            print(f"read + reconcile alone, {label} ({int(data) / 1e9:.2f} GB, {tensors} tensors): "
                  f"{float(read) + float(reconcile):.3f} s (read {float(read):.3f}, reconcile {float(reconcile):.3f}); "
                  f"RSS {float(rss):+.1f} MB, peak RSS {float(grew):+.1f} MB")


def header() -> None:
    import torch
    print(f"machine: {platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}")
    print(f"{'measurement':44s} {'seconds':>8s} {'peak RSS MB':>12s}")


def main() -> None:
    atlas = [sys.executable, "-m", "atlas", "describe"]
    peer = [sys.executable, str(ROOT / "bench" / "torchinfo_summary.py")]
    pairs = [
        ("GPT-2 small", atlas + [GPT2, "--json", "--input", "input_ids:int64[B,T]"], peer + [GPT2, "128"]),
        ("Llama-3-70B config", atlas + [LLAMA, "--json"], peer + [LLAMA, "128"]),
    ]
    header()
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
    cost_ratios = []
    for label, argv in (("LDLM", atlas + ["--json"]), ("Llama-3-70B config", atlas + [LLAMA, "--json"])):
        with_cost, _ = measure(argv)
        without, _ = measure(argv + ["--no-cost"])
        print(f"{'atlas describe --no-cost ' + label:44s} {without:8.2f}")
        cost_ratios.append((label, with_cost / without))
    seconds, rss = measure(["make", "-s", "site"], repeat=1)
    print(f"{'make site (LDLM, after set-up)':44s} {seconds:8.2f} {rss:12.0f}")
    for label, time_ratio, rss_ratio in ratios:
        print(f"ratio atlas/torchinfo, {label}: time {time_ratio:.2f}, peak RSS {rss_ratio:.2f}")
    for label, ratio in cost_ratios:
        print(f"ratio describe with cost / without, {label}: {ratio:.2f} (target at most 1.10)")


if __name__ == "__main__":
    start = time.perf_counter()
    if sys.argv[1:] == ["checkpoint"]:
        header()
        checkpoint_rows()
    else:
        main()
        checkpoint_rows()
    print(f"(bench took {time.perf_counter() - start:.0f} s)")
