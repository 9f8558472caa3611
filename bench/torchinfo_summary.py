"""The peer: torchinfo's summary of a model built on the meta device (run by bench.py in its own process)."""

import sys

import torch
from torchinfo import summary

from atlas.spec import load

spec, length = sys.argv[1], int(sys.argv[2])
model = load(spec).model
summary(model, input_size=(1, length), dtypes=[torch.long], device="meta", verbose=0)
