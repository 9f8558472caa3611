"""Time the checkpoint stage alone: read the headers and reconcile (run by bench.py in its own process).

Prints: seconds of the read, seconds of the reconciliation, and how much the peak RSS grew during both (MB).
"""

import resource
import sys
import time

from atlas import checkpoint, checkpoint_files
from atlas.spec import load
from atlas.walk import walk

spec, path = sys.argv[1], sys.argv[2]
loaded = load(spec)
doc = walk(loaded)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
listing = checkpoint_files.read(path)
read = time.perf_counter() - start
report = checkpoint.reconcile(loaded.model, doc, listing)
total = time.perf_counter() - start
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
assert report.problems == 0, report
print(f"{read:.4f} {total - read:.4f} {grew:.1f} {report.tensors} {report.bytes}")
