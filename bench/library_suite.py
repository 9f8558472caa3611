"""The cross-library suite, described as a new user would: no --input, every figure checked against the model itself.

For each model of bench/library_models.py: whether the atlas crashed; whether its parameter total is exact (the
sum of numel over model.parameters()); the components with shapes, verified, model code (classes outside torch.nn)
verified, attention verified; and the model's FLOPs at the sizes its pages state (doc.cost_summary.reference)
against the corrected FlopCounterMode (tests/flop_reference.py) run on the inputs the atlas found, at those sizes:
on fake tensors, or on a real forward of a fresh model where the fake run fails. Then every crash with its
traceback, every input-discovery note of a model whose forward did not run as found, every unverified component with
its reason, every FLOPs disagreement with the components that differ most.

    bench/library_env.sh && .venv-libraries/bin/python bench/library_suite.py [--markdown] [NAME ...]

--markdown prints the table alone (for a README).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from suite import summarize  # noqa: E402  (bench/suite.py: the figures of one document)

MODELS = ROOT / "bench" / "library_models.py"
REAL_FLOPS_LIMIT = 5e10      # a real forward for the reference only below this many FLOPs (the fake one failed)
DISTRIBUTIONS = {"torch": "torch", "torchvision": "torchvision", "transformers": "transformers",
                 "diffusers": "diffusers", "timm": "timm", "torch_geometric": "torch_geometric",
                 "open_clip": "open_clip_torch", "x_transformers": "x-transformers"}


def versions() -> str:
    out = []
    for name, dist in DISTRIBUTIONS.items():
        try:
            out.append(f"{name} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    return ", ".join(out)


def _sizes_inputs(model, texts, sizes: dict[str, int]):
    """The atlas's inputs (doc.inputs texts) resolved against the model's vocabulary, as InputSpecs."""
    from atlas.document import input_specs
    vocab = input_specs.vocabulary(getattr(model, "atlas_dims", None), getattr(model, "atlas_fixed_dims", None))
    specs, _ = input_specs.resolve([input_specs.parse_input(t) for t in texts], vocab)
    missing = {d for s in specs for d in s.dims if isinstance(d, str) and d not in sizes}
    if missing:
        raise ValueError(f"no reference size for {sorted(missing)}")
    return specs


def reference_flops(name: str, texts, sizes: dict[str, int], expected: int) -> tuple[dict[str, int], str]:
    """The corrected FlopCounterMode's counts per module path ("" the model) at `sizes`, and how they were had:
    "fake" (a fresh meta-built model on fake tensors, as tests/test_cost.py counts) or "real" (a fresh model built
    by the factory, on zeros and uniform noise, where the fake run failed)."""
    import flop_reference
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from atlas.extract.trace.runs import DTYPES, fake_tensors
    from atlas.load import code_caches, spec
    from atlas.load.forward_calls import call, evaluation
    model = spec.load(f"{MODELS}:{name}").model
    specs = _sizes_inputs(model, texts, sizes)
    code_caches.clear(model)
    try:
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        with mode:
            inputs = {s.name: torch.zeros([sizes.get(d, d) for d in s.dims], dtype=DTYPES[s.dtype]) for s in specs}
        with evaluation(model), fake_tensors(model, mode), mode, flop_reference.flop_counter() as counter, \
                torch.enable_grad():
            call(model, inputs)
        return flop_reference.by_module(counter), "fake"
    except Exception as exc:
        fake_error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
    if expected > REAL_FLOPS_LIMIT:
        raise RuntimeError(f"fake run failed ({fake_error}); a real one is too large ({expected:.3g} FLOPs)")
    from atlas.extract.probes.probe_runs import example_inputs
    sys.path.insert(0, str(MODELS.parent))
    import library_models
    model = library_models.entry(name).factory()
    code_caches.clear(model)
    inputs = example_inputs(specs, sizes, "cpu")
    with evaluation(model), torch.no_grad(), flop_reference.flop_counter() as counter:
        call(model, inputs)
    return flop_reference.by_module(counter), f"real (fake failed: {fake_error})"


def _at(expr: str, sizes: dict[str, int]):
    import sympy

    from atlas.document.expressions import parse      # every name a symbol: sympify reads N and E as sympy's own
    value = parse(expr).subs({sympy.Symbol(k): v for k, v in sizes.items()})
    return int(value) if value.is_number else value


def check_flops(name: str, doc) -> dict:
    """The model's FLOPs at its reference sizes, the atlas's against the reference's; the components that differ."""
    if doc.cost is None or doc.cost_summary is None:
        root = doc.components[0]
        why = doc.forward_failure or (str(root.cost_reason) if root.cost_reason else "no cost")
        return {"flops": "no cost", "flops_note": why}
    sizes = dict(doc.cost_summary.reference)
    atlas = _at(doc.cost.flops, sizes)
    out = {"sizes": sizes, "atlas_flops": atlas}
    if not isinstance(atlas, int):
        return {**out, "flops": "symbolic", "flops_note": f"{doc.cost.flops} at {sizes}: {atlas}"}
    try:
        counted, how = reference_flops(name, doc.inputs, sizes, atlas)
    except Exception as exc:
        return {**out, "flops": "ref failed", "flops_note": f"{type(exc).__name__}: {str(exc)[:300]}",
                "trace": traceback.format_exc()}
    ref = counted.get("", 0)
    out.update(ref_flops=ref, ref_how=how)
    if atlas == ref:
        return {**out, "flops": "exact"}
    diffs = []
    for comp in doc.components[1:]:
        path = comp.module_paths[comp.lead] if comp.module_paths else None
        if comp.cost is None or path not in counted:
            continue
        mine = _at(comp.cost.flops, sizes)
        if mine != counted[path]:
            diffs.append((comp.id, comp.cls.rsplit(".", 1)[-1], mine, counted[path]))
    # the outermost first: a child's difference shows again in each of its ancestors
    diffs.sort(key=lambda d: d[0].count("."))
    return {**out, "flops": f"{atlas / ref:.3g}x" if ref else "ref 0", "flops_diffs": diffs[:6]}


def is_attention(comp) -> bool:
    """An attention module, torch.nn's MultiheadAttention included (bench/suite.py counts model code only): its
    class is named for attention, and is no block, layer or processor holding one."""
    cls = comp.cls.rsplit(".", 1)[-1].lower()
    return ("attention" in cls or cls.endswith("attn")) and not any(w in cls for w in ("block", "layer", "processor"))


def measure(name: str) -> dict:
    from atlas import pipeline
    from atlas.analyse.equations.derive import EquationMismatch
    from atlas.load import spec
    sys.path.insert(0, str(MODELS.parent))
    import library_models
    library = library_models.entry(name).library
    start = time.perf_counter()
    error, stage = None, "load"
    try:
        loaded = spec.load(f"{MODELS}:{name}")
        params = sum(p.numel() for p in loaded.model.parameters())
        stage = "document"
        doc = pipeline.document(loaded, pipeline.Settings())
    except EquationMismatch as exc:
        doc, error = exc.doc, str(exc)
    except Exception as exc:  # a crash is a finding: report it and go on to the next model
        return {"name": name, "library": library, "crash": f"{stage}: {type(exc).__name__}: {exc}",
                "trace": traceback.format_exc()}
    row = summarize(name, doc, error, time.perf_counter() - start)
    attn = [c for c in doc.components if is_attention(c)]
    verified = {c.id for c in doc.components if c.equations and c.equations.verification and
                c.equations.verification.verified}
    row.update(attention=len(attn), attention_verified=sum(1 for c in attn if c.id in verified))
    root_why = next((why for cid, _, why in row["reasons"] if cid == "(model)"), "")
    row.update(library=library, params=params, params_atlas=doc.totals.parameters,
               forward_failure=doc.forward_failure or (root_why if "forward() failed" in root_why else None))
    try:
        row.update(check_flops(name, doc))
    except Exception as exc:
        row.update(flops="check crashed", flops_note=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc())
    return row


def _frac(a: int, b: int) -> str:
    return f"{a}/{b}"


def table(rows: list[dict]) -> list[str]:
    lines = ["| model | library | s | params exact | shapes | verified | model code verified | attention verified "
             "| FLOPs vs reference | inputs found |",
             "|---|---|---:|---|---:|---:|---:|---:|---|---|"]
    t = Counter()
    for r in rows:
        t["models"] += 1
        if "crash" in r:
            t["crashes"] += 1
            lines.append(f"| {r['name']} | {r['library']} | | CRASH | | | | | | {r['crash'][:80]} |")
            continue
        exact = r["params"] == r["params_atlas"]
        t["params_exact"] += exact
        t["flops_exact"] += r["flops"] == "exact"
        t["flops_compared"] += "ref_flops" in r
        t["discovered"] += bool(r["inputs"]) and not r["forward_failure"]
        for k in ("components", "shapes", "verified", "code", "code_verified", "attention", "attention_verified"):
            t[k] += r[k]
        params = "yes" if exact else f"no: {r['params_atlas']} vs {r['params']}"
        inputs = " ".join(f"`{i}`" for i in r["inputs"]) or "none"
        if r["forward_failure"]:
            inputs += " (forward failed)"
        lines.append(f"| {r['name']} | {r['library']} | {r['seconds']:.0f} | {params} | "
                     f"{_frac(r['shapes'], r['components'])} | {_frac(r['verified'], r['components'])} | "
                     f"{_frac(r['code_verified'], r['code'])} | {_frac(r['attention_verified'], r['attention'])} | "
                     f"{r['flops']}{_value(r)} | {inputs} |")
    ran = t["models"] - t["crashes"]
    lines.append(f"| **total** {t['models']} models | {len({r['library'] for r in rows})} libraries | | "
                 f"{t['params_exact']}/{ran} | {_frac(t['shapes'], t['components'])} | "
                 f"{_frac(t['verified'], t['components'])} | {_frac(t['code_verified'], t['code'])} | "
                 f"{_frac(t['attention_verified'], t['attention'])} | {t['flops_exact']}/{ran} exact "
                 f"({t['flops_compared']} compared) | {t['discovered']}/{ran} ran; {t['crashes']} crashes |")
    return lines


def _value(r: dict) -> str:
    return f" ({r['atlas_flops']:.3g})" if isinstance(r.get("atlas_flops"), int) else ""


def _n(x) -> str:
    return f"{x:,}" if isinstance(x, int) else str(x)


def details(rows: list[dict]) -> list[str]:
    out = ["", "## Crashes"]
    for r in rows:
        if "crash" in r:
            out += [f"- {r['name']}: {r['crash'][:300]}", "```", r["trace"].rstrip(), "```"]
    out += ["", "## Input discovery (models whose forward did not run as found, or with no inputs)"]
    for r in rows:
        if "crash" not in r and (r["forward_failure"] or not r["inputs"]):
            out.append(f"- {r['name']}: forward failure: {r['forward_failure']}")
            out += [f"    - note: {n[:400]}" for n in r["notes"]]
    out += ["", "## Input notes (every model)"]
    for r in rows:
        if "crash" not in r and r["notes"]:
            out += [f"- {r['name']}: {n[:300]}" for n in r["notes"]]
    out += ["", "## Not verified"]
    for r in rows:
        if "crash" in r:
            continue
        if r["mismatch"]:
            out.append(f"- {r['name']}: MISMATCH {r['mismatch'][:400]}")
        grouped: dict[str, list[str]] = {}
        for cid, cls, why in r["reasons"]:
            grouped.setdefault(why, []).append(f"{cid} ({cls})")
        for why, comps in grouped.items():
            shown = comps if len(comps) <= 12 else comps[:3]     # a whole model not run: its reason says so once
            more = f" and {len(comps) - len(shown)} more" if len(comps) > len(shown) else ""
            out.append(f"- {r['name']}: {', '.join(shown)}{more}: {why[:300]}")
    out += ["", "## Parameter totals not exact"]
    out += [f"- {r['name']}: atlas {_n(r['params_atlas'])}, model.parameters() {_n(r['params'])}"
            for r in rows if "crash" not in r and r["params"] != r["params_atlas"]]
    out += ["", "## FLOPs not exact (atlas vs corrected FlopCounterMode, at the atlas's reference sizes)"]
    for r in rows:
        if "crash" in r or r["flops"] == "exact":
            continue
        head = f"- {r['name']}: {r['flops']}"
        if "atlas_flops" in r:
            head += f"; atlas {_n(r['atlas_flops'])} at {r['sizes']}"
        if "ref_flops" in r:
            head += f", reference {_n(r['ref_flops'])} ({r['ref_how']})"
        if r.get("flops_note"):
            head += f"; {r['flops_note']}"
        out.append(head)
        out += [f"    - {cid} ({cls}): atlas {_n(a)}, reference {_n(b)}" for cid, cls, a, b in r.get("flops_diffs", ())]
        if r.get("trace"):
            out += ["```", r["trace"].rstrip()[-1500:], "```"]
    return out


def main(argv: list[str]) -> None:
    markdown = "--markdown" in argv
    names = [a for a in argv if not a.startswith("--")]
    import library_models
    unknown = [n for n in names if n not in {e.name for e in library_models.SUITE}]
    if unknown:
        known = " ".join(e.name for e in library_models.SUITE)
        sys.exit(f"unknown model(s) {', '.join(unknown)}; the suite's: {known}")
    names = names or [e.name for e in library_models.SUITE]
    rows = []
    for n in names:
        rows.append(measure(n))
        if not markdown:
            r = rows[-1]
            print(f"{n}: {r.get('crash') or r['flops']} ({r.get('seconds', 0):.0f} s)", file=sys.stderr, flush=True)
    if markdown:
        print("\n".join(table(rows)))
        return
    print(versions() + "\n")
    print("\n".join(table(rows) + details(rows)))


if __name__ == "__main__":
    main(sys.argv[1:])
