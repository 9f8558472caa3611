"""The atlas's processes keep freed memory for the next tensor of its size (atlas.load.memory)."""

import subprocess
import sys

from conftest import ROOT

# glibc's settings are the process's own: a process of its own, measured as it starts, then with them set
_FAULTS = """
import resource, torch

def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):     # an instance's weights, made, filled and freed, as the equations' check does
        torch.empty(4 << 20, dtype=torch.float32).fill_(1.0)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

default = faults()
import importlib.util      # the module alone: the package's __init__ imports the whole pipeline (1.5 s)
spec = importlib.util.spec_from_file_location("allocator", "atlas/load/memory.py")
allocator = importlib.util.module_from_spec(spec)
spec.loader.exec_module(allocator)
assert allocator.keep_freed_memory()
print(default, faults())
"""


def test_a_freed_block_is_reused_without_page_faults():
    """Twenty 16 MB blocks (4,096 pages each), one after another. By default glibc maps them afresh, or trims the
    heap's free top and grows it again, and their pages are faulted in again: about 41,000 faults, ten blocks'
    worth. Kept, the first blocks' pages serve the rest: about 8,200."""
    proc = subprocess.run([sys.executable, "-c", _FAULTS], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    default, kept = map(int, proc.stdout.split()[-2:])
    assert kept < 3 * 4096 < 5 * 4096 < default, (default, kept)
