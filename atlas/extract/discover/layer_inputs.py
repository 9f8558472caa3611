"""What a layer says about its input: dtype, dims (symbols B, T, H, W and fixed sizes), integer range.

`candidates(consumer, model)` turns the first layer an input reaches (atlas/extract/discover/first_consumer.py) into
example inputs, in the order to try them: a Linear(3, 3) accepts [B, 3] and [B, T, 3], and both are returned unless the
forward() fixed the rank (`B, T, C = x.size()`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import nn

from atlas.extract.discover import conv_limits
from atlas.extract.discover.first_consumer import Consumer
from atlas.i18n import Text, msg, msgn

SPATIAL = {1: ("T",), 2: ("H", "W"), 3: ("D", "H", "W")}


@dataclass(frozen=True)
class Candidate:
    dtype: str
    dims: tuple[str | int, ...]
    because: Text                                   # "the first layer it reaches `fc1`, Linear(...): in_features = 3"
    low: int | None = None                          # integer values in [low, high)
    high: int | None = None
    minimum: tuple[tuple[str, int, int, Text], ...] = ()  # (symbol, least size, hint size, why)


def _ranked(rank: int | None, options: list[tuple]) -> list[tuple]:
    """Options of the rank the code fixed first; all options otherwise."""
    if rank is None:
        return options
    same = [o for o in options if len(o) == rank]
    return same + [o for o in options if len(o) != rank]


_SEQUENCE = (nn.MultiheadAttention, nn.RNNBase, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


def _sequence_layer(model: nn.Module) -> tuple[str, bool] | None:
    """The first torch.nn layer in module order that takes sequences: its path, and whether the batch comes first."""
    for path, m in model.named_modules():
        if isinstance(m, _SEQUENCE):
            return path, bool(getattr(m, "self_attn", m).batch_first)
    return None


def _join(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


def _seq(batch_first: bool, width: int, length: str = "T") -> tuple:
    return ("B", length, width) if batch_first else (length, "B", width)


def _code(name: str) -> str:
    return f"`{name}`"


def _says(where: Text, setting: str) -> Text:
    """The layer and the attribute that sizes its input: "..., Linear(3, 3): in_features = 3"."""
    return msg("%(layer)s: %(setting)s", layer=where, setting=setting)


# The mask parameters of torch's attention layers: the positions they span, T the queries' (S a decoder's memory's;
# nn.MultiheadAttention's masks span its keys, tried at S positions first).
# A padding mask is boolean, true where a key is left out; an attention mask additive, so that no example of it
# leaves a query with no key to attend to.
_MASKS = {"key_padding_mask": ("bool", ("B", "T")), "src_key_padding_mask": ("bool", ("B", "T")),
          "tgt_key_padding_mask": ("bool", ("B", "T")), "memory_key_padding_mask": ("bool", ("B", "S")),
          "attn_mask": (None, ("T", "T")), "src_mask": (None, ("T", "T")), "mask": (None, ("T", "T")),
          "tgt_mask": (None, ("T", "T")), "memory_mask": (None, ("T", "S"))}
_MASKED = (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.TransformerEncoder,
           nn.TransformerDecoder)


def candidates(consumer: Consumer, model: nn.Module, float_dtype: str) -> list[Candidate]:
    """The inputs to try, the first preferred: a row of as many values as the code's view of the input has (a
    latent vector viewed as a 1 × 1 map), else what the layer takes."""
    own = _layer_candidates(consumer, model, float_dtype)
    if consumer.rearranged is not None:
        return _rearranged(consumer, own) + own
    if consumer.viewed is None:
        return own
    size = math.prod(consumer.viewed)
    because = msg("the code's view of it as %(view)s before %(layer)s: %(n)s values a batch row",
                  view=_code("[B, " + ", ".join(map(str, consumer.viewed)) + "]"), layer=_label(consumer), n=size)
    dtype = own[0].dtype if own else float_dtype
    return [Candidate(dtype, ("B", size), because), *own]


def _layer_candidates(consumer: Consumer, model: nn.Module, float_dtype: str) -> list[Candidate]:
    if consumer.module is None:
        return _functional(consumer, float_dtype)
    m, where = consumer.module, _label(consumer)
    rank = consumer.rank
    if isinstance(m, _MASKED) and consumer.argument in _MASKS:
        dtype, dims = _MASKS[consumer.argument]
        because = msg("%(layer)s: a mask, its %(argument)s argument", layer=where, argument=_code(consumer.argument))
        options = [dims]
        if isinstance(m, nn.MultiheadAttention):        # over its keys: S positions first, T where they are the queries
            options = [tuple("S" if i == len(dims) - 1 else d for i, d in enumerate(dims)), dims]
        return [Candidate(dtype or float_dtype, d, because) for d in options]
    if isinstance(m, (nn.Embedding, nn.EmbeddingBag)):
        dims = _ranked(rank, [("B", "T"), ("B",)])
        setting = f"num_embeddings = {m.num_embeddings}"
        because = msg("%(layer)s: integer indices below %(setting)s", layer=where, setting=setting)
        return [Candidate("int64", d, because, 0, m.num_embeddings) for d in dims]
    if isinstance(m, nn.Linear):
        options = [("B", m.in_features), ("B", "T", m.in_features)]
        because = _says(where, f"in_features = {m.in_features}")
        seq = _sequence_layer(model) if rank is None else None
        if seq is not None:              # a Linear in front of attention or an RNN: one vector per position
            path, batch_first = seq
            options = [_seq(batch_first, m.in_features), ("B", m.in_features)]
            because = msg("%(first)s; a sequence of them, as %(layer)s in the model takes sequences (%(flag)s)",
                          first=because, layer=_code(path), flag=f"batch_first={batch_first}")
        return [Candidate(float_dtype, d, because) for d in _ranked(rank, options)]
    if isinstance(m, nn.Bilinear):
        return [Candidate(float_dtype, d, _says(where, f"in1_features = {m.in1_features}"))
                for d in _ranked(rank, [("B", m.in1_features), ("B", "T", m.in1_features)])]
    if isinstance(m, (nn.modules.conv._ConvNd,)):
        return [_conv(m, consumer, model, float_dtype, where)]
    if isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
        shape = tuple(m.normalized_shape) if m.normalized_shape is not None else ()
        return [Candidate(float_dtype, d, _says(where, f"normalized_shape = {list(shape)}"))
                for d in _ranked(rank, [("B", "T", *shape), ("B", *shape)])]
    if isinstance(m, nn.GroupNorm):
        return [Candidate(float_dtype, d, _says(where, f"num_channels = {m.num_channels}"))
                for d in _ranked(rank, [("B", m.num_channels, "T"), ("B", m.num_channels, "H", "W")])]
    if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)):
        c = m.num_features
        options = {nn.BatchNorm1d: [("B", c), ("B", c, "T")], nn.InstanceNorm1d: [("B", c, "T")],
                   nn.BatchNorm3d: [("B", c, "D", "H", "W")], nn.InstanceNorm3d: [("B", c, "D", "H", "W")]}
        dims = next((v for k, v in options.items() if isinstance(m, k)), [("B", c, "H", "W")])
        return [Candidate(float_dtype, d, _says(where, f"num_features = {c}")) for d in _ranked(rank, dims)]
    if isinstance(m, nn.RNNBase):
        size = f"input_size = {m.input_size}"
        because = (_says(where, f"{size}, batch_first") if m.batch_first else
                   msg("%(layer)s: %(setting)s, sequence first (%(flag)s)", layer=where, setting=size,
                       flag="batch_first=False"))
        return [Candidate(float_dtype, _seq(m.batch_first, m.input_size), because)]
    if isinstance(m, nn.MultiheadAttention):
        if consumer.argument in ("key", "value"):       # what is attended to: kdim and vdim wide, S positions long
            setting = "kdim" if consumer.argument == "key" else "vdim"
            width = getattr(m, setting)
            return [Candidate(float_dtype, _seq(m.batch_first, width, length), _says(where, f"{setting} = {width}"))
                    for length in ("S", "T")]       # T where the code needs the queries' length (self-attention)
        return [Candidate(float_dtype, _seq(m.batch_first, m.embed_dim), _says(where, f"embed_dim = {m.embed_dim}"))]
    if isinstance(m, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        attn = m.self_attn
        length = "S" if consumer.argument == "memory" else "T"     # a decoder's memory: the source's positions
        return [Candidate(float_dtype, _seq(attn.batch_first, attn.embed_dim, length),
                          _says(where, f"d_model = {attn.embed_dim}"))]
    if isinstance(m, (nn.TransformerEncoder, nn.TransformerDecoder)) and len(m.layers):
        return candidates(Consumer(_join(consumer.path, "layers.0"), m.layers[0], rank=rank), model, float_dtype)
    if isinstance(m, nn.Transformer):
        return candidates(Consumer(_join(consumer.path, "encoder"), m.encoder, rank=rank), model, float_dtype)
    return []


def _label(consumer: Consumer) -> Text:
    """Which layer, and how it was found: "the first layer it reaches `fc1`, Linear(in_features=3, ...)"; a
    functional call on a weight: "F.linear in `layers.0`"."""
    m = consumer.module
    if m is None:
        call = f"F.{consumer.function}"
        return msg("%(function)s in %(path)s", function=call, path=_code(consumer.path)) if consumer.path else call
    text = f"{type(m).__name__}({m.extra_repr()})"
    if len(text) > 60:
        text = type(m).__name__
    path = _code(consumer.path)
    if consumer.how == "the model itself":
        return msg("the model, a torch.nn layer, %(layer)s", layer=text)
    if consumer.how == "module order":
        return (msg("the first layer in module order %(path)s, %(layer)s", path=path, layer=text) if consumer.path
                else msg("the first layer in module order, %(layer)s", layer=text))
    return (msg("the first layer it reaches %(path)s, %(layer)s", path=path, layer=text) if consumer.path
            else msg("the first layer it reaches, %(layer)s", layer=text))


def _conv(m: nn.modules.conv._ConvNd, consumer: Consumer, model: nn.Module, float_dtype: str,
          where: Text) -> Candidate:
    n = len(m.kernel_size)
    spatial = SPATIAL[n]
    minimum = []
    if not isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        for axis, sym in enumerate(spatial):
            stack = conv_limits.stack(model, n, axis=axis, start=consumer.path) if consumer.path else None
            stack = stack or conv_limits.Stack((conv_limits.layer_of(consumer.path, m, axis),))
            least = stack.minimum(1)
            if least > 1:
                why = (msg("%(stack)s from %(path)s", stack=stack.describe(), path=_code(consumer.path))
                       if consumer.path else stack.describe())
                minimum.append((sym, least, stack.minimum(2), why))
    return Candidate(float_dtype, ("B", m.in_channels, *spatial), _says(where, f"in_channels = {m.in_channels}"),
                     minimum=tuple(minimum))


def _functional(consumer: Consumer, float_dtype: str) -> list[Candidate]:
    w, fn = consumer.weight, consumer.function
    call = f"F.{fn}"
    if consumer.path:
        call = msg("%(function)s in %(path)s", function=call, path=_code(consumer.path))
    if fn == "embedding":
        rows = int(w.shape[0])
        because = msg("%(function)s on a %(rows)s-row weight", function=call, rows=rows)
        return [Candidate("int64", d, because, 0, rows) for d in _ranked(consumer.rank, [("B", "T"), ("B",)])]
    if fn == "linear" and w.dim() == 2:
        n = int(w.shape[1])
        because = msgn("%(function)s: weight has %(n)s input feature", "%(function)s: weight has %(n)s input features",
                       n, function=call)
        return [Candidate(float_dtype, d, because) for d in _ranked(consumer.rank, [("B", n), ("B", "T", n)])]
    if fn == "matmul" and w.dim() == 2:
        n = int(w.shape[0])
        because = msgn("%(product)s: the matrix has %(n)s row", "%(product)s: the matrix has %(n)s rows", n,
                       product="`@`" if not consumer.path else msg("`@` in %(path)s", path=_code(consumer.path)))
        return [Candidate(float_dtype, d, because) for d in _ranked(consumer.rank, [("B", n), ("B", "T", n)])]
    if fn in ("conv1d", "conv2d", "conv3d") and w.dim() >= 3:
        n = int(w.shape[1])
        because = msgn("%(function)s: weight has %(n)s input channel", "%(function)s: weight has %(n)s input channels",
                       n, function=call)
        return [Candidate(float_dtype, ("B", n, *SPATIAL[w.dim() - 2]), because)]
    return []


def _rearranged(consumer: Consumer, own: list[Candidate]) -> list[Candidate]:
    """The input laid out as an einops pattern takes it to the layer (einops_patterns): [B, 3, H, W] with H and W
    multiples of the patch, where `(p1 p2 c)` must be the layer's 192."""
    from atlas.extract.discover.conventions import HINTS
    from atlas.extract.discover.einops_patterns import input_dims
    width = own[0].dims[-1] if own and isinstance(own[0].dims[-1], int) else None
    found = input_dims(*consumer.rearranged, width) if width is not None else None
    if found is None:
        return []
    dims, multiples, solved = found
    because = msg("%(layer)s, through %(pattern)s", layer=_label(consumer),
                  pattern=_code(consumer.rearranged[0]) + (f" ({solved})" if solved else ""))
    minimum = tuple((sym, k, -(-HINTS.get(sym, 7) // k) * k, msg("a multiple of %(n)s, as %(pattern)s takes it",
                                                                   n=k, pattern=_code(consumer.rearranged[0])))
                    for sym, k in multiples.items() if k > 1)
    return [Candidate(own[0].dtype, dims, because, minimum=minimum)]
