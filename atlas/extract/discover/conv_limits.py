"""The smallest input a stack of convolutions accepts, from kernels, strides, dilations and padding.

A stack is the chain of ConvNd modules of one dimensionality, in module order, starting at the first
one, where each takes the channels the previous one gives (wav2vec2's seven feature-extractor convs:
kernels 10,3,3,3,3,2,2, strides 5,2,2,2,2,2,2). Modules in between that keep the length (norms,
activations, pointwise Linear layers) do not break it, nor does a gated linear unit between two convs of one
container, which halves the channels (Speech2Text's subsampler: conv_layers.0, GLU, conv_layers.1); a conv taking
other channels ends it (a residual block's downsampling conv, beside the block's own convs, takes the block's input).

Working backwards from the last conv, each output must be at least `at_least`:
    L_in >= (L_out - 1) * stride + dilation * (kernel - 1) + 1 - 2 * padding
For wav2vec2 with `at_least=1` that is 400 samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from atlas.i18n import Text, msgn

_CONVS = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}


@dataclass(frozen=True)
class Layer:
    path: str
    kernel: int
    stride: int
    dilation: int
    padding: int            # per side; 'same' counts as kernel-preserving


@dataclass(frozen=True)
class Stack:
    layers: tuple[Layer, ...]

    def minimum(self, at_least: int = 1) -> int:
        """The smallest input length for which every layer's output has at least `at_least` positions."""
        need = at_least
        for layer in reversed(self.layers):
            need = max(1, (need - 1) * layer.stride + layer.dilation * (layer.kernel - 1) + 1 - 2 * layer.padding)
        return need

    def stride(self) -> int:
        total = 1
        for layer in self.layers:
            total *= layer.stride
        return total

    def describe(self) -> Text:
        """The stack in words: 7 convs, kernels 10,3,3,3,3,2,2, strides 5,2,2,2,2,2,2."""
        ks = ",".join(str(layer.kernel) for layer in self.layers)
        ss = ",".join(str(layer.stride) for layer in self.layers)
        return msgn("%(n)s conv, kernel %(kernels)s, stride %(strides)s",
                    "%(n)s convs, kernels %(kernels)s, strides %(strides)s", len(self.layers), kernels=ks, strides=ss)


def layer_of(path: str, conv: nn.Module, axis: int) -> Layer:
    padding = conv.padding
    if isinstance(padding, str):         # 'same' keeps the length, 'valid' is no padding
        pad = (conv.dilation[axis] * (conv.kernel_size[axis] - 1)) // 2 if padding == "same" else 0
    else:
        pad = padding[axis]
    return Layer(path, conv.kernel_size[axis], conv.stride[axis], conv.dilation[axis], pad)


def stack(model: nn.Module, dims: int, axis: int = 0, in_channels: int | None = None,
          start: str | None = None) -> Stack | None:
    """The conv stack of `dims` spatial dims that starts at the conv at path `start`, else at the first such
    conv (with `in_channels`, if given). `axis` picks the spatial axis (0 = the first after channels)."""
    cls = _CONVS[dims]
    layers: list[Layer] = []
    channels, last = None, ""
    for path, module in model.named_modules():
        if not isinstance(module, cls):
            continue
        if channels is None:
            if start is not None and path != start:
                continue
            if in_channels is not None and module.in_channels != in_channels:
                continue
        elif module.in_channels != channels and not (module.in_channels * 2 == channels and _siblings(path, last)):
            break
        layers.append(layer_of(path, module, axis))
        channels, last = module.out_channels, path
    return Stack(tuple(layers)) if layers else None


def _siblings(a: str, b: str) -> bool:
    """Two entries of one container: `conv.0` and `conv.1`."""
    return a.rpartition(".")[0] == b.rpartition(".")[0]
