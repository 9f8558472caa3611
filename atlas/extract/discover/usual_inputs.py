"""Inputs by the names libraries give them, sized from config fields: token ids below the vocabulary, images
of the configured size and channels, audio as samples, frames or a spectrogram, a forecaster's lagged series, a
diffusion model's timestep; and the bounds a window or a conv stack sets on a length."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

from torch import nn

from atlas.document.input_specs import input_text as _text
from atlas.extract.discover import conv_limits
from atlas.extract.discover.conventions import (
    GRAPH_EDGES,
    MASKS,
    SERIES,
    TARGET_CONTEXT,
    TEXT_CONTEXT,
    TIMESTEPS,
    TOKEN_IDS,
    WINDOWS,
    config_value,
)
from atlas.i18n import Text, msg, msgn


@dataclass(frozen=True)
class Bound:
    """A limit on a symbol: size >= minimum, size <= maximum; `hint` is a size that fits comfortably."""
    symbol: str
    minimum: int | None = None
    maximum: int | None = None
    hint: int | None = None
    because: Text | str = ""


def code(name: str) -> str:
    return f"`{name}`"


def config_field(name: str) -> str:
    return f"config.{name}"


def config_setting(name: str, value) -> str:
    """A config field and its value, as code: "config.vocab_size = 128"."""
    return f"config.{name} = {value}"


def joined(first, *then) -> Text:
    """Reasons one after another, as one sentence: "`input_ids` is the model's main_input_name; token ids ..."."""
    out = first
    for part in then:
        out = msg("%(first)s; %(then)s", first=out, then=part)
    return out


def by_convention(name, model, config, dtype):
    """(candidates, because, low, high, bounds) from the usual names and config fields, or None."""
    if name in TOKEN_IDS:
        vocab, field_name = config_value(config, "vocab_size")
        if not isinstance(vocab, int):
            return None
        setting = config_setting(field_name, vocab)
        rows = _input_rows(model)
        if rows is not None and rows < vocab:       # PaliGemma's config says 257152 where its table has 1000 rows
            vocab, setting = rows, f"model.get_input_embeddings().num_embeddings = {rows}"
        limit_fields = (TARGET_CONTEXT, *TEXT_CONTEXT) if name.startswith("decoder") else TEXT_CONTEXT
        limit, limit_name = config_value(config, *limit_fields)
        bounds = []
        if isinstance(limit, int):
            bounds.append(Bound("T", maximum=limit, because=msg("at most %(setting)s",
                                                                 setting=config_setting(limit_name, limit))))
        return ([_text(name, "int64", ("B", "T"))], msg("token ids below %(setting)s", setting=setting), 0, vocab,
                bounds)
    if name in GRAPH_EDGES:             # a graph's edges: pairs of node indices; the other inputs' rows are the nodes
        return ([_text(name, "int64", (2, "E"))], msg("a graph's edges: E pairs of node indices below N"), 0, 2,
                [])
    if name == "token_type_ids":
        types, t_field = config_value(config, "type_vocab_size")
        types = types if isinstance(types, int) and types > 0 else 2
        why = (msg("segment ids below %(setting)s", setting=config_setting(t_field, types)) if t_field
               else msg("segment ids 0 or 1"))
        return [_text(name, "int64", ("B", "T"))], why, 0, types, []
    if name in MASKS:
        return [_text(name, "int64", ("B", "T"))], msg("0/1 per position"), 0, 2, []
    if name == "inputs_embeds":
        width, field_name = config_value(config, "hidden_size", "d_model", "n_embd")
        if not isinstance(width, int):
            return None
        why = msg("width %(setting)s", setting=config_setting(field_name, width))
        return [_text(name, dtype, ("B", "T", width))], why, None, None, []
    if name == "pixel_values":
        return _pixels(name, model, config, dtype)
    if name == "input_features":
        return _features(name, model, config, dtype)
    if name == "input_values":
        if isinstance(config_value(config, "num_mel_bins")[0], int) and conv_limits.stack(model, 1) is None:
            return _spectrogram(name, config, dtype)        # no 1-D conv to take samples: a spectrogram (AST)
        return _waveform(name, model, config, dtype)
    if name in SERIES and isinstance(getattr(config, "lags_sequence", None), (list, tuple)):
        return _lagged_series(name, config, dtype)
    if name == "past_values":                         # time series: context_length steps of the input channels
        steps, s_field = config_value(config, "context_length")
        channels, c_field = config_value(config, "num_input_channels", "input_size")
        if isinstance(steps, int) and isinstance(channels, int):
            return ([_text(name, dtype, ("B", steps, channels))],
                    msg("%(steps)s steps of %(values)s values", steps=config_setting(s_field, steps),
                        values=config_setting(c_field, channels)), None, None, [])
    return None


def by_name_alone(name, dtype):
    """Where neither a convention nor a layer says anything: a diffusion model's timestep (`t`, `timestep`, `sigma`),
    one number per sample, which the code turns into features itself (a sinusoidal embedding); a mask over the
    positions (`pad_mask`, `padding_mask`), true or false per position."""
    if name.lower() in TIMESTEPS:
        return [_text(name, dtype, ("B",))], msg("the name of a diffusion model's timestep: one number per sample"), \
            None, None, []
    if name.lower().endswith("mask"):
        return [_text(name, "bool", ("B", "T"))], msg("the name of a mask: true or false per position"), \
            None, None, []
    return None


def _input_rows(model) -> int | None:
    """The rows of the table the model looks its token ids up in, where it says which (transformers' models)."""
    try:
        table = model.get_input_embeddings()
    except Exception:                   # not implemented, or no such table
        return None
    rows = getattr(table, "num_embeddings", None)
    return rows if isinstance(rows, int) and rows > 0 else None


def _waveform(name, model, config, dtype):
    """[B, T] mono samples; [B, C, T] where the first Conv1d takes C > 1 channels or config.audio_channels says so."""
    channels, c_field = config_value(config, "audio_channels")
    first = conv_limits.stack(model, 1)
    first_in = model.get_submodule(first.layers[0].path).in_channels if first else None
    c = channels if isinstance(channels, int) else first_in
    stack = conv_limits.stack(model, 1, in_channels=c if c else 1) or first
    bounds = [stack_bound("T", stack)] if stack else []
    why = msg("a raw waveform")
    if stack:
        limit = f"T >= {stack.minimum()}"
        why = joined(why, msg("%(stack)s set %(limit)s", stack=stack.describe(), limit=limit))
    cands = [_text(name, dtype, ("B", "T")), _text(name, dtype, ("B", c or 1, "T"))]
    if channels is not None:                          # the config names the channels: that layout first
        cands.reverse()
        why = joined(why, config_setting(c_field, channels))
    return cands, why, None, None, bounds


def _lagged_series(name, config, dtype):
    """A forecaster with lagged inputs (transformers' time-series transformers): the past is config.context_length
    steps and the largest of config.lags_sequence before them, the future config.prediction_length steps; values
    and their mask carry config.input_size values a step (no axis where it is 1), time features
    config.num_time_features."""
    context, c_field = config_value(config, "context_length")
    future, f_field = config_value(config, "prediction_length")
    width, w_field = config_value(config, "input_size")
    if name.endswith("time_features"):
        width, w_field = config_value(config, "num_time_features")
    lag = max(config.lags_sequence, default=0)
    if not all(isinstance(v, int) for v in (context, future, width)):
        return None
    if name.startswith("past"):
        steps = context + lag
        said = f"{steps} ({config_setting(c_field, context)} + max(config.lags_sequence) = {lag})"
    else:
        steps, said = future, config_setting(f_field, future)
    why = msg("%(steps)s steps of %(values)s values", steps=said, values=config_setting(w_field, width))
    dims = ("B", steps) if width == 1 and not name.endswith("time_features") else ("B", steps, width)
    return [_text(name, dtype, dims)], why, None, None, []


def _spectrogram(name, config, dtype):
    """[B, frames, mel bins]: config.max_length frames first, then any T, in either order."""
    bins, b_field = config_value(config, "num_mel_bins")
    frames, f_field = config_value(config, "max_length")
    why = msg("%(setting)s features", setting=config_setting(b_field, bins))
    cands = [_text(name, dtype, ("B", "T", bins)), _text(name, dtype, ("B", bins, "T"))]
    if isinstance(frames, int):
        cands.insert(0, _text(name, dtype, ("B", frames, bins)))
        why = joined(why, config_setting(f_field, frames))
    return cands, why, None, None, []


def window_bounds(config) -> list[Bound]:
    """A T hint of twice the largest window or chunk, so the recorded code is the general path: Longformer,
    with its window of 512, fails at T = 17, pins T = 512, and runs with a symbolic T at 1024."""
    out = []
    for name in WINDOWS:
        value = getattr(config, name, None) if config is not None else None
        values = [v for v in (value if isinstance(value, (list, tuple)) else [value])
                  if isinstance(v, int) and not isinstance(v, bool)]
        if values and max(values) > 1:
            out.append(Bound("T", hint=2 * max(values),
                             because=msg("twice %(setting)s", setting=config_setting(name, max(values)))))
    return out


def stack_bound(symbol: str, stack: conv_limits.Stack) -> Bound:
    return Bound(symbol, minimum=stack.minimum(1), hint=stack.minimum(2),
                 because=msg("%(stack)s: every conv output needs at least one position", stack=stack.describe()))


def _pixels(name, model, config, dtype):
    channels, c_field = config_value(config, "num_channels")
    first = conv_limits.stack(model, 2, in_channels=channels if isinstance(channels, int) else None)
    if not isinstance(channels, int):
        if first is None:
            return None
        channels, c_field = model.get_submodule(first.layers[0].path).in_channels, None
    c_why = (config_setting(c_field, channels) if c_field else
             msgn("%(n)s channel of the first %(layer)s", "%(n)s channels of the first %(layer)s", channels,
                  layer="Conv2d"))
    frames, f_field = config_value(config, "num_frames")
    if isinstance(frames, int):                 # a video model: a clip of config.num_frames images, then one image
        c_why = joined(msg("a clip of %(setting)s frames tried first", setting=config_setting(f_field, frames)), c_why)

    def texts(*height_width) -> list[str]:
        image = ("B", channels, *height_width)
        return ([_text(name, dtype, ("B", frames, *image[1:]))] if isinstance(frames, int) else []) + \
            [_text(name, dtype, image)]

    size, s_field = config_value(config, "image_size")
    patch, _ = config_value(config, "patch_size")
    if size is not None:
        h, w = (size, size) if isinstance(size, int) else size
        grids = [(patch, patch) if isinstance(patch, int) else tuple(patch or (1, 1))]
        if first is not None:           # the patch embedding's stride, where its kernel is larger (Hiera: 7x7, 4)
            grids.append(tuple(model.get_submodule(first.layers[0].path).stride))
        for ph, pw in dict.fromkeys(grids):
            table = _position_table(model, (h // ph) * (w // pw), first.layers[0].path if first is not None else None)
            if table is not None:
                fixed_by = msg("%(size)s fixed by %(field)s, since %(table)s has one row per %(patch)s patch",
                               size=f"{h}x{w}", field=config_field(s_field), table=code(table), patch=f"{ph}x{pw}")
                return [*texts(h, w), *texts("H", "W")], joined(c_why, fixed_by), None, None, []
    bounds = []
    for axis, sym in enumerate(("H", "W")):
        stack = conv_limits.stack(model, 2, axis=axis, in_channels=channels)
        if stack is not None:
            bounds.append(stack_bound(sym, stack))
    cands = texts("H", "W")
    if size is not None:                              # the configured size, should any size fail
        cands += texts(*((size, size) if isinstance(size, int) else size))
    return (cands, joined(c_why, msg("any height and width (no position table tied to the image size)")), None, None,
            bounds)


def _position_table(model: nn.Module, patches: int, near: str | None = None) -> str | None:
    """The position table with a row per patch, or a few more (class and distillation tokens): its rows are any
    dim but the last, its features. Of several, the one nearest the first conv in the module tree (`near`, the
    patch embedding: SigLIP's text table is listed before its vision table and has as many rows), then the one
    whose rows come nearest the patches."""
    near_parts = near.split(".") if near else []
    found = []
    for i, (path, t) in enumerate(itertools.chain(model.named_parameters(), model.named_buffers())):
        extra = [d - patches for d in t.shape[:-1] if patches <= d <= patches + 4]
        if "pos" in path.lower() and extra:
            found.append((-len(os.path.commonprefix([path.split("."), near_parts])), min(extra), i, path))
    return min(found)[-1] if found else None


def _features(name, model, config, dtype):
    bins, b_field = config_value(config, "num_mel_bins", "feature_size", "input_feat_per_channel")
    stack = conv_limits.stack(model, 1, in_channels=bins if isinstance(bins, int) else None)
    if not isinstance(bins, int):
        if stack is None:
            return None
        bins, b_field = model.get_submodule(stack.layers[0].path).in_channels, None
    b_why = (msg("%(setting)s features", setting=config_setting(b_field, bins)) if b_field else
             msgn("%(n)s channel of the first %(layer)s", "%(n)s channels of the first %(layer)s", bins,
                  layer="Conv1d"))
    sources, _ = config_value(config, "max_source_positions")
    variable = [_text(name, dtype, ("B", bins, "T")), _text(name, dtype, ("B", "T", bins))]
    if stack is None:       # no 1-D conv takes the bins: also a one-channel image of frames by bins (CLAP's HTSAT)
        variable += [_text(name, dtype, ("B", 1, "T", bins)), _text(name, dtype, ("B", 1, bins, "T"))]
    bounds = [stack_bound("T", stack)] if stack and stack.minimum() > 1 else []
    if isinstance(sources, int) and stack is not None:
        length = sources * stack.stride()
        strides = " x ".join(str(layer.stride) for layer in stack.layers)
        fixed_by = msg("length %(length)s = %(field)s (%(positions)s) x the conv strides (%(strides)s)",
                       length=str(length), field=config_field("max_source_positions"), positions=str(sources),
                       strides=strides)
        return [_text(name, dtype, ("B", bins, length)), *variable], joined(b_why, fixed_by), None, None, bounds
    return variable, b_why, None, None, bounds
