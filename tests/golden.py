"""Golden snapshots of derived programs: every component's steps, names and symbol identities.

    .venv/bin/python tests/golden.py           # compare, print the diff of any that moved
    .venv/bin/python tests/golden.py --update  # write them again; review the change with `git diff tests/golden`
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
GOLDEN = HERE / "golden"


def snapshot(name: str) -> str:
    """The text kept for one fixture model: per component, its symbols (key, name, kind, stream), then its steps
    with the key each defines and its shape, then its constants and verification."""
    from atlas import pipeline
    from atlas.render.math_markup import names_of, plain
    doc = pipeline.describe(f"{HERE / 'fixtures' / 'golden_models.py'}:{name}")
    out = [f"# {doc.name} ({name}): {len(doc.components)} components"]
    for c in doc.components:
        e = c.equations
        out.append(f"\n== {c.id or '(model)'}  {c.cls}  [{e.status.value}]")
        if e.reason:
            out.append(f"   reason: {e.reason}")
        names = names_of(e)
        for s in e.symbols:
            out.append(f"   sym {s.key:28} {names[s.key]:40} {s.kind}{' ' + s.stream if s.stream else ''}")
        for st in e.steps:
            shape = "[" + ", ".join(str(d.symbol or d.value) for d in st.shape) + "]" if st.shape else ""
            section = f"({st.section}) " if st.section else ""
            out.append(f"   {st.defines or '-':6} {section}{plain(st.formula, names)}  {shape}")
        for line in e.constants:
            out.append(f"   const {plain(line, names)}")
        v = e.verification
        out.append(f"   verified: {v.verified if v else None} ({v.dtype if v else '-'}, tolerance {v.tolerance if v else '-'})")
    return "\n".join(out) + "\n"


def check(update: bool = False) -> list[str]:
    from fixtures.golden_models import MODELS
    moved = []
    for name in MODELS:
        path = GOLDEN / f"{name}.txt"
        text = snapshot(name)
        if update:
            GOLDEN.mkdir(exist_ok=True)
            path.write_text(text)
            continue
        old = path.read_text() if path.is_file() else ""
        if old != text:
            moved.append("".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                      f"golden/{name}.txt", f"now/{name}.txt")))
    return moved


if __name__ == "__main__":
    diffs = check("--update" in sys.argv)
    for d in diffs:
        print(d)
    sys.exit(1 if diffs else 0)
