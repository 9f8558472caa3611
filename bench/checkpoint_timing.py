"""Time the checkpoint stage alone: read the headers and reconcile (run by bench.py in its own process).

Prints: seconds of the read, seconds of the reconciliation, how much the peak RSS grew during both and how
much the RSS grew (MB), the checkpoint's tensors and bytes of data.
"""

import resource
import sys
import time

from atlas.analyse import checkpoint_reconcile
from atlas.extract.walk import walk
from atlas.load import checkpoint_listing
from atlas.load.spec import load


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


spec, path = sys.argv[1], sys.argv[2]
loaded = load(spec)
doc = walk(loaded)
before, rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rss_mb()
start = time.perf_counter()
listing = checkpoint_listing.read(path)
read = time.perf_counter() - start
report = checkpoint_reconcile.reconcile(loaded.model, doc, listing)
total = time.perf_counter() - start
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
assert report.problems == 0, report
print(f"{read:.4f} {total - read:.4f} {grew:.1f} {rss_mb() - rss:.1f} {report.tensors} {report.bytes}")
