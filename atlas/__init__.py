"""Model Atlas: documentation pages for neural-network architectures, generated from real PyTorch code."""

from atlas.pipeline import build, check, describe, generate

__all__ = ["build", "check", "describe", "generate"]
