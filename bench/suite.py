"""The transformers suite, described as a new user would: no --input, equations verified against forward().

For each architecture of tests/fixtures/hf_suite.py: the inputs the atlas found, the share of components
with shapes, the share of model-code components (classes outside torch.nn) whose equations are verified, and
the share with a paper view (recognized idioms in place of kernel-level steps, verified on its own); attention and
MLP in every decoder LLM. One line per model, then the totals, every failure reason and every model-code component
without a paper view.

    .venv/bin/python bench/suite.py [NAME ...]
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
logging.getLogger("transformers").setLevel(logging.ERROR)


def is_model_code(comp) -> bool:
    return not comp.cls.startswith("torch.")


def is_attention(comp) -> bool:
    return "attention" in comp.cls.rsplit(".", 1)[-1].lower() and is_model_code(comp)


def is_mlp(comp) -> bool:
    """A block's feed-forward network, by its attribute: `mlp`, `feed_forward`, `block_sparse_moe`."""
    attr = comp.path.rsplit(".", 1)[-1].lower()
    return is_model_code(comp) and any(w in attr for w in ("mlp", "feed_forward", "ffn", "moe"))


def has_paper(comp) -> bool:
    p = comp.equations.paper if comp.equations else None
    return p is not None and p.verification is not None and p.verification.verified


def measure(name: str) -> dict:
    from atlas import pipeline
    from atlas.analyse.equations.derive import EquationMismatch
    from atlas.load import spec
    start = time.perf_counter()
    error = None
    try:
        doc = pipeline.document(spec.load(f"{ROOT / 'tests/fixtures/hf_suite.py'}:{name}"), pipeline.Settings())
    except EquationMismatch as exc:
        doc, error = exc.doc, str(exc)
    except Exception as exc:  # a crash is a finding: report it and go on to the next model
        import traceback
        return {"name": name, "crash": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
    return summarize(name, doc, error, time.perf_counter() - start)


def summarize(name: str, doc, error: str | None, seconds: float) -> dict:
    """One documented model's figures (bench/library_suite.py reads them too): components with shapes, verified,
    model code and attention verified, paper views, every failure reason and the input notes."""
    comps = doc.components
    verified = [c for c in comps if c.equations and c.equations.verification and c.equations.verification.verified]
    code = [c for c in comps if is_model_code(c)]
    attn = [c for c in code if is_attention(c)]
    mlps = [c for c in code if is_mlp(c)]
    reasons = []
    for c in comps:
        if c in verified:
            continue
        e = c.equations
        why = (e.reason if e and e.reason else (e.verification.reason if e and e.verification else "no equations"))
        reasons.append((c.id or "(model)", c.cls.rsplit(".", 1)[-1], str(why)))
    return {
        "name": name, "seconds": seconds, "components": len(comps),
        "shapes": sum(1 for c in comps if c.shapes and c.shapes.status.value == "derived"),
        "code": len(code), "code_verified": sum(1 for c in code if c in verified),
        "attention": len(attn), "attention_verified": sum(1 for c in attn if c in verified),
        "paper": sum(1 for c in code if has_paper(c)), "attention_paper": sum(1 for c in attn if has_paper(c)),
        "mlp": len(mlps), "mlp_paper": sum(1 for c in mlps if has_paper(c)),
        "no_paper": [(c.id or "(model)", c.cls.rsplit(".", 1)[-1]) for c in code if not has_paper(c)],
        "verified": len(verified), "inputs": doc.inputs, "mismatch": error, "reasons": reasons,
        "notes": [str(n) for n in doc.input_notes],
    }


def main(names: list[str]) -> None:
    from fixtures.hf_suite import SUITE as ENTRIES
    SUITE = {e.name: e for e in ENTRIES}
    names = names or list(SUITE)
    rows = [measure(n) for n in names]
    print(f"{'model':24} {'kind':16} {'s':>5} {'shapes':>9} {'verified':>9} {'model code':>11} {'paper':>11} "
          f"{'attention':>9}  inputs")
    totals = Counter()
    for r in rows:
        kind = SUITE[r["name"]].kind if r["name"] in SUITE else "?"
        if "crash" in r:
            print(f"{r['name']:24} {kind:16} CRASH {r['crash'][:150]}")
            totals["crashes"] += 1
            continue
        for k in ("components", "shapes", "verified", "code", "code_verified", "attention", "attention_verified",
                  "paper"):
            totals[k] += r[k]
        if kind in ("decoder-llm", "moe"):
            for k in ("attention", "attention_paper", "mlp", "mlp_paper"):
                totals["llm_" + k] += r[k]
        print(f"{r['name']:24} {kind:16} {r['seconds']:5.1f} {r['shapes']:4}/{r['components']:<4} "
              f"{r['verified']:4}/{r['components']:<4} {r['code_verified']:5}/{r['code']:<5} "
              f"{r['paper']:5}/{r['code']:<5} {r['attention_verified']:4}/{r['attention']:<4}  {' '.join(r['inputs'])}")
    t = totals
    print(f"\nmodels {len(rows)}, crashes {t['crashes']}")
    if t["components"]:
        print(f"shapes derived: {t['shapes']}/{t['components']} ({100 * t['shapes'] / t['components']:.1f}%)")
        print(f"components verified: {t['verified']}/{t['components']} ({100 * t['verified'] / t['components']:.1f}%)")
        print(f"model-code components verified: {t['code_verified']}/{t['code']} "
              f"({100 * t['code_verified'] / max(1, t['code']):.1f}%)")
        print(f"attention modules verified: {t['attention_verified']}/{t['attention']}")
        print(f"model-code components with a verified paper view: {t['paper']}/{t['code']} "
              f"({100 * t['paper'] / max(1, t['code']):.1f}%)")
        print(f"decoder LLMs (with MoE): attention with a paper view {t['llm_attention_paper']}/{t['llm_attention']}, "
              f"MLP with a paper view {t['llm_mlp_paper']}/{t['llm_mlp']}")
    print("\nnot verified:")
    for r in rows:
        if "crash" in r:
            print(f"  {r['name']}: CRASH\n{r['trace']}")
            continue
        if r["mismatch"]:
            print(f"  {r['name']}: MISMATCH {r['mismatch'][:400]}")
        for cid, cls, why in r["reasons"]:
            print(f"  {r['name']}: {cid} ({cls}): {why[:300]}")
    print("\nno paper view:")
    for r in rows:
        for cid, cls in r.get("no_paper", ()):
            print(f"  {r['name']}: {cid} ({cls})")


if __name__ == "__main__":
    main(sys.argv[1:])
