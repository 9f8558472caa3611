"""Input discovery over the transformers suite: for each model, build it on meta, discover its inputs, run a meta
forward and a fake-tensor forward with symbolic sizes, and report what ran, how long it took and what failed.

The fake forward is tried twice: first bare (no decompositions, no assumed values for data-dependent scalars),
to show what fails or specializes on its own; then with the measures of tests/discovery_runs.py. Both forwards
retry in the dtypes the discovery lists after a dtype failure (Mixtral: bfloat16).

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/hf_suite_report.py [NAME ...]   (the report of issue 13 quotes it)
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from fixtures import hf_suite  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from atlas.extract.discover.discovery import discover  # noqa: E402
import discovery_runs  # noqa: E402

hf_logging.set_verbosity_error()


def _status(outcome, model_dtype: str) -> str:
    if not outcome.ok:
        return "FAIL"
    notes = [outcome.dtype] if outcome.dtype != model_dtype else []
    if outcome.specialized:
        notes.append("pinned " + ", ".join(s.split(" ")[0] + "=" + s.split(" ")[2] for s in outcome.specialized))
    return "ok" + (f" ({'; '.join(notes)})" if notes else "")


def report(entry) -> tuple[str, list[str], bool, bool]:
    start = time.perf_counter()
    with torch.device("meta"):
        model = entry.factory()
    d = discover(model)
    meta = discovery_runs.attempts(model, d, "meta")
    bare = discovery_runs.attempts(model, d, "fake", decompose=False, assume=False)
    fake = discovery_runs.attempts(model, d, "fake") if not bare[-1].ok or bare[-1].specialized else bare
    seconds = time.perf_counter() - start
    last_meta, last_fake = meta[-1], fake[-1]
    first_error = next((o.error for o in (*meta, *bare) if o.error), "")
    inputs = " ".join(last_meta.texts if last_meta.ok else d.texts())
    line = (f"{entry.name:22s} {entry.kind:15s} {inputs:58s} {_status(last_meta, d.dtype):16s} "
            f"{_status(last_fake, d.dtype):22s} {seconds:6.1f}  {first_error}")
    details = ["  inputs: " + "; ".join(f"{f.text} <- {f.because}" for f in d.inputs)]
    for b in d.bounds:
        limits = [f"{b.symbol} >= {b.minimum}"] * (b.minimum is not None) + \
                 [f"{b.symbol} <= {b.maximum}"] * (b.maximum is not None) + [f"hint {b.hint}"] * (b.hint is not None)
        details.append(f"  bound: {', '.join(limits)} ({b.because})")
    if len(meta) > 1 or not last_meta.ok:
        details += [f"  meta try: {' '.join(o.texts)} in {o.dtype}: {'ok' if o.ok else o.error}" for o in meta]
    if fake is not bare:
        details += [f"  bare fake try: {' '.join(o.texts)} in {o.dtype}: "
                    + ("ok, pinned " + "; ".join(o.specialized) if o.ok else o.error) for o in bare]
    if len(fake) > 1:
        details += [f"  fake try: {' '.join(o.texts)} in {o.dtype}: {'ok' if o.ok else o.error}" for o in fake[:-1]]
    if last_fake.ok:
        details.append(f"  fake outputs ({' '.join(last_fake.texts)}, {last_fake.dtype}): "
                       + ", ".join(f"{n} [{', '.join(dims)}]" for n, dims in last_fake.outputs[:3])
                       + f"; {last_fake.guards} guards; fake forward {last_fake.seconds:.2f} s, meta {last_meta.seconds:.2f} s")
    else:
        details.append(f"  fake: {last_fake.error}")
    for label, values in (("symbol ranges after guards", last_fake.ranges), ("pinned", last_fake.specialized),
                          ("assumed", last_fake.assumed), ("decomposed", last_fake.decomposed)):
        if values:
            details.append(f"  {label}: " + "; ".join(values))
    return line, details, last_meta.ok, last_fake.ok


def main(names: list[str]) -> None:
    entries = [hf_suite.entry(n) for n in names] if names else list(hf_suite.SUITE)
    print(f"torch {torch.__version__}, transformers {__import__('transformers').__version__}; "
          f"hints B=3, T=17, H=40, W=56 unless a bound raises them")
    print(f"{'model':22s} {'kind':15s} {'discovered inputs':58s} {'meta':16s} {'fake+symbolic':22s} {'s':>6s}  first error")
    all_details = []
    meta_ok = fake_ok = 0
    for entry in entries:
        line, details, m_ok, f_ok = report(entry)
        print(line, flush=True)
        meta_ok, fake_ok = meta_ok + m_ok, fake_ok + f_ok
        all_details.append((entry.name, details))
    print(f"meta forward runs: {meta_ok}/{len(entries)}; fake symbolic forward runs: {fake_ok}/{len(entries)}")
    print()
    for name, details in all_details:
        print(name)
        print("\n".join(details))


if __name__ == "__main__":
    main(sys.argv[1:])
