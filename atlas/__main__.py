import gc

from atlas.cli import main

# One run per process, and what the imports made lives to its end: the cyclic collector need not walk it again and
# again, which would cost a sizeable share of a describe's time. Only here: a program that calls main() keeps its
# collector.
gc.freeze()
raise SystemExit(main())
