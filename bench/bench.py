"""Benchmark: wall time and peak RSS of `atlas describe` (walk, shapes, equations, provenance, cost) beside
torchinfo's summary on the meta device, on transformers' own models built from config (GPT-2 small; Llama 3 at
8B, 70B and 405B sizes: bench/hf_models.py); then a few atlas-only rows (--verify, the LDLM, --no-cost, one full
`make site`); then a checkpoint of GPT-2 medium (1.42 GB) reconciled with its code, as safetensors and as a torch
.bin, both written by the bench into a temporary folder.

Each measurement runs in a fresh child process, so its peak RSS is its own (RUSAGE_CHILDREN of a wrapper).
Times are the best of `repeat` runs; peak RSS the largest; the depth row's ratio is the median of its rounds'
own ratios (see DEPTH_ROUNDS). The peer (bench/torchinfo_summary.py) imports nothing
of atlas. Both sides print seconds since their start after their imports, after the model is built (the factory's
imports, transformers, count there on both sides) and at the end; the split columns are from those runs
(bench/atlas_timed.py for atlas), the whole-process columns from the plain `python -m atlas describe`.
Run: .venv/bin/python bench/bench.py              (everything)
     .venv/bin/python bench/bench.py peers        (the atlas / torchinfo table and the depth row alone)
     .venv/bin/python bench/bench.py checkpoint   (the checkpoint rows alone)
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LLAMA = "tests/fixtures/llama.py:llama3_70b"            # the native fixture: --verify and the checkpoint rows
HF = "bench/hf_models.py"
MODELS = (("GPT-2 small", "gpt2_small"), ("Llama-3-8B config", "llama3_8b"), ("Llama-3-70B config", "llama3_70b"),
          ("Llama-3-405B config", "llama3_405b"))
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}

# Peak RSS of one child: run the command under a wrapper that reads RUSAGE_CHILDREN after it exits.
_WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)\n"
    "dt = time.perf_counter() - t\n"
    "stamps = [line for line in (out.stdout + out.stderr).splitlines() if line.replace('.', '').replace(' ', '').isdigit()]\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(out.returncode, dt, use.ru_maxrss, use.ru_utime + use.ru_stime, *(stamps[-1:] or ['-']))\n"
)


def _run(argv: list[str]) -> tuple[float, float, tuple[float, ...], float]:
    """(wall seconds, peak RSS MB, the child's printed stamps, the child's CPU seconds: user + system)."""
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], cwd=ROOT, capture_output=True, text=True, env=ENV)
    rc, seconds, rss_kb, cpu, *stamps = out.stdout.split()
    if rc != "0":
        raise SystemExit(f"failed: {' '.join(argv)}\n{out.stderr}")
    return float(seconds), int(rss_kb) / 1024, tuple(float(s) for s in stamps if s != "-"), float(cpu)


def measure(argv: list[str], repeat: int = 3) -> tuple[float, float]:
    """(best seconds, peak RSS MB) over `repeat` runs."""
    runs = [_run(argv) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


# Each round runs the 8B and 405B configs back to back (in turns): this machine's speed moves by 10-15% within
# seconds, and the best time of each over a few rounds moved their ratio between 1.03 and 1.15 for the same code;
# the median of the rounds' own ratios holds still.
DEPTH_ROUNDS = 11
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


def python_speed() -> float:
    """Seconds for ten million additions in a Python loop (best of 3): how fast this machine runs Python, so that
    figures from different machines can be set side by side."""
    def loop() -> float:
        start, total = time.perf_counter(), 0
        for i in range(10_000_000):
            total += i
        return time.perf_counter() - start
    return min(loop() for _ in range(3))


def header() -> None:
    import torch
    load = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"10^7 Python additions in {python_speed():.2f} s")


def rounds(commands: dict, repeat: int) -> dict:
    """{label: its runs, round by round}: the commands take turns `repeat` times, in reverse order every other
    round, so that load from other work on the machine, and its drift, fall on all of them alike."""
    runs = {label: [] for label in commands}
    for i in range(repeat):
        for label, argv in (list(commands.items())[::-1] if i % 2 else commands.items()):
            runs[label].append(_run(argv))
    return runs


def interleaved(commands: dict, repeat: int) -> dict:
    """{label: (best seconds, peak RSS MB, stamps of the fastest run)} over `rounds`."""
    return {label: (min(r[0] for r in rs), max(r[1] for r in rs), min(rs, key=lambda r: r[0])[2])
            for label, rs in rounds(commands, repeat).items()}


def peer_rows(repeat: int = 3) -> list[tuple[str, float, float]]:
    """atlas describe --json beside torchinfo's summary, per model: whole process, then imports / model / work."""
    atlas = [sys.executable, "-m", "atlas", "describe"]
    timed = [sys.executable, str(ROOT / "bench" / "atlas_timed.py"), "describe"]
    peer = [sys.executable, str(ROOT / "bench" / "torchinfo_summary.py")]
    print(f"{'measurement':40s} {'seconds':>8s} {'peak RSS MB':>12s} {'imports':>8s} {'model':>8s} {'work':>8s}")
    rows = []
    for label, name in MODELS:
        spec = f"{HF}:{name}"
        got = interleaved({"atlas": atlas + [spec, "--json"], "atlas timed": timed + [spec, "--json"],
                           "peer": peer + [spec, "128"]}, repeat)
        for side, whole, stamped in (("atlas describe", "atlas", "atlas timed"),
                                     ("torchinfo summary (meta)", "peer", "peer")):
            seconds, rss, _ = got[whole]
            imported, built, done = got[stamped][2]
            print(f"{side + ' ' + label:40s} {seconds:8.2f} {rss:12.0f} {imported:8.2f} {built - imported:8.2f} "
                  f"{done - built:8.2f}")
        rows.append((label, got["atlas"][0] / got["peer"][0], got["atlas"][1] / got["peer"][1]))
    print("(imports: atlas, torch, sympy / torch, torchinfo; model: the factory's imports (transformers) and the "
          "model built on meta; work: the rest, for atlas the JSON written too)")
    for label, time_ratio, rss_ratio in rows:
        print(f"ratio atlas/torchinfo, {label}: time {time_ratio:.2f}, peak RSS {rss_ratio:.2f}")
    print("(target: at most 1.00 in time and in peak RSS for the Llama-3-70B config)")
    runs = rounds({name: atlas + [f"{HF}:{name}", "--json"] for name in ("llama3_8b", "llama3_405b")}, DEPTH_ROUNDS)
    for name, rs in runs.items():
        print(f"{'atlas describe --json ' + name:40s} {min(r[0] for r in rs):8.2f} {max(r[1] for r in rs):12.0f}   "
              f"CPU {min(r[3] for r in rs):5.2f} s")
    small, large = runs["llama3_8b"], runs["llama3_405b"]
    print(f"ratio atlas describe, Llama-3-405B config (126 layers) / Llama-3-8B config (32 layers), "
          f"{DEPTH_ROUNDS} rounds: best times {min(r[0] for r in large) / min(r[0] for r in small):.2f}; "
          f"median of the rounds' ratios {statistics.median(b[0] / a[0] for a, b in zip(small, large)):.2f} "
          f"in wall time, {statistics.median(b[3] / a[3] for a, b in zip(small, large)):.2f} in CPU time "
          f"(target at most 1.10)")
    return rows


def atlas_rows() -> None:
    atlas = [sys.executable, "-m", "atlas", "describe"]
    print(f"{'measurement':44s} {'seconds':>8s} {'peak RSS MB':>12s}")
    verified = measure(atlas + [LLAMA, "--json", "--verify"], repeat=1)
    print(f"{'atlas describe --verify native Llama-3-70B':44s} {verified[0]:8.2f} {verified[1]:12.0f}")
    for label, argv in (("atlas describe LDLM", atlas + ["--json"]),
                        ("atlas describe --verify LDLM", atlas + ["--json", "--verify"])):
        seconds, rss = measure(argv, repeat=1)
        print(f"{label:44s} {seconds:8.2f} {rss:12.0f}")
    cost_ratios = []
    for label, argv in (("LDLM", atlas + ["--json"]), ("Llama-3-70B config", atlas + [f"{HF}:llama3_70b", "--json"])):
        with_cost, _ = measure(argv)
        without, _ = measure(argv + ["--no-cost"])
        print(f"{'atlas describe --no-cost ' + label:44s} {without:8.2f}")
        cost_ratios.append((label, with_cost / without))
    seconds, rss = measure(["make", "-s", "site"], repeat=1)
    print(f"{'make site (mkdocs.yml models, after set-up)':44s} {seconds:8.2f} {rss:12.0f}")
    for label, ratio in cost_ratios:
        print(f"ratio describe with cost / without, {label}: {ratio:.2f} (target at most 1.10)")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    start = time.perf_counter()
    header()
    if sys.argv[1:] == ["checkpoint"]:
        print(f"{'measurement':44s} {'seconds':>8s} {'peak RSS MB':>12s}")
        checkpoint_rows()
    elif sys.argv[1:] == ["peers"]:
        peer_rows()
    else:
        peer_rows()
        atlas_rows()
        checkpoint_rows()
    print(f"(bench took {time.perf_counter() - start:.0f} s; load average at the end "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
