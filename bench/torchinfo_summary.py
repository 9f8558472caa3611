"""The peer: torchinfo's summary of a model built on the meta device, run by bench.py in its own process.

It imports nothing of atlas: a SPEC here is "path/to/file.py:factory" (the file is executed on its own, as a
plain module) or "module:factory" outside the atlas package; the factory is called under the meta device, as
atlas calls it. It prints, on stdout, seconds since its start: after its imports (torch, torchinfo), after the
model is built (the factory's own imports, transformers, count here, on both sides), and after the summary.
Run: .venv/bin/python bench/torchinfo_summary.py bench/hf_models.py:llama3_70b 128
"""

import time

START = time.perf_counter()

import importlib  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
from torchinfo import summary  # noqa: E402

IMPORTED = time.perf_counter()


def factory(spec: str):
    target, _, attr = spec.rpartition(":")
    if target.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location("peer_model", target)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    elif target == "atlas" or target.startswith("atlas."):
        raise SystemExit(f"the peer imports nothing of atlas: give {spec!r} as a file path")
    else:
        module = importlib.import_module(target)
    return getattr(module, attr)


spec, length = sys.argv[1], int(sys.argv[2])
with torch.device("meta"):
    model = factory(spec)()
BUILT = time.perf_counter()
summary(model, input_size=(1, length), dtypes=[torch.long], device="meta", verbose=0)
DONE = time.perf_counter()
leaked = sorted(m for m in sys.modules if m == "atlas" or m.startswith("atlas."))
if leaked:
    raise SystemExit(f"the peer imported atlas modules: {', '.join(leaked)}")
print(f"{IMPORTED - START:.3f} {BUILT - START:.3f} {DONE - START:.3f}")
