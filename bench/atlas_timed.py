"""`python -m atlas ARGS`, with the same timestamps the peer prints: seconds since its start after atlas's imports
(atlas, torch, sympy), after the SPEC is loaded (the factory's imports, transformers, and the model built), and at
the end. Run by bench.py for the import / model / work split; the whole-process figures come from the plain CLI.
It runs the CLI as atlas/__main__.py does (the same collector setting) and times atlas.load.spec.load from outside.
"""

import time

START = time.perf_counter()

import gc  # noqa: E402
import sys  # noqa: E402

import atlas.load.spec  # noqa: E402
from atlas.cli import main  # noqa: E402

IMPORTED = time.perf_counter()
stamps = []
_load = atlas.load.spec.load


def load(*args, **kwargs):
    out = _load(*args, **kwargs)
    stamps.append(time.perf_counter())
    return out


atlas.load.spec.load = load
gc.freeze()
code = main(sys.argv[1:])
DONE = time.perf_counter()
print(f"{IMPORTED - START:.3f} {stamps[0] - START:.3f} {DONE - START:.3f}", file=sys.stderr)
raise SystemExit(code)
