"""Input discovery: the example inputs a model's forward() needs, found from its code and config.

Sources, in order:
1. the forward() signature: required parameters are inputs; optional ones only when the model needs them
   (the model's `main_input_name`; `decoder_input_ids` for an encoder-decoder);
2. the usual names, sized from config fields: `input_ids` (token ids below `vocab_size`), `pixel_values`
   (`num_channels`, `image_size`, `patch_size`), `input_features` (`num_mel_bins`, `max_source_positions`),
   `input_values` (raw audio; a spectrogram where the config has `num_mel_bins` and no 1-D conv takes the
   samples), `past_values` and the other inputs of a forecaster (`context_length`, `lags_sequence`,
   `input_size`, `num_time_features`), `inputs_embeds` (`hidden_size`), `attention_mask`;
3. for everything else, the first layer that consumes the input (atlas/extract/discover/first_consumer.py): a Linear's
   in_features, a Conv's channels, an Embedding's indices, a LayerNorm's width, an RNN's input_size.

Each input is the text form `name:dtype[dims]` of atlas/document/input_specs.py, with candidates in the order to try
them, and the sentence that says where it came from (a Text of atlas.i18n, rendered in the page's
language; config fields, names and values stay as code in it). Symbols: B batch, T positions, and H, W
only where an image may have any size. Conv front-ends bound their symbol from below (wav2vec2:
T >= 400), the config's position limits from above; windows and chunks in the config raise the size
hint of T.
Nothing here runs the model: atlas/extract/record/escalation.py tries the candidates.
"""

from __future__ import annotations

import inspect
import itertools
import os
import re
from dataclasses import dataclass, field, replace

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from atlas.document.input_specs import input_text as _text
from atlas.document.input_specs import parse_input
from atlas.extract.discover import conv_limits
from atlas.extract.discover.conventions import (
    AUDIO,
    MASKS,
    SERIES,
    TARGET_CONTEXT,
    TARGET_SIDE,
    TEXT_CONTEXT,
    TIMESTEPS,
    TOKEN_IDS,
    WINDOWS,
    config_value,
)
from atlas.i18n import Text, msg, msgn

HINTS = {"B": 3, "T": 17, "S": 13, "H": 40, "W": 56, "D": 12}    # distinct, never 0 or 1, above small windows


@dataclass(frozen=True)
class Bound:
    """A limit on a symbol: size >= minimum, size <= maximum; `hint` is a size that fits comfortably."""
    symbol: str
    minimum: int | None = None
    maximum: int | None = None
    hint: int | None = None
    because: Text | str = ""


@dataclass(frozen=True)
class Found:
    name: str
    candidates: tuple[str, ...]            # "name:dtype[dims]", the first preferred
    because: Text                          # where it came from, in the active language when rendered
    low: int | None = None                 # integer inputs take values in [low, high)
    high: int | None = None

    @property
    def text(self) -> str:
        return self.candidates[0]


@dataclass(frozen=True)
class Discovery:
    inputs: tuple[Found, ...]
    bounds: tuple[Bound, ...] = ()
    dtype: str = "float32"                 # the floating dtype of the model's parameters
    retry_dtypes: tuple[str, ...] = ()     # to retry in when a forward fails for a dtype reason
    dtype_because: Text | str = ""
    unresolved: tuple[tuple[str, Text], ...] = field(default_factory=tuple)  # (parameter, why not)
    also: tuple[str, ...] = ()             # optional parameters included on request (see discover)

    def texts(self) -> tuple[str, ...]:
        return tuple(f.text for f in self.inputs)

    def choices(self, limit: int = 8) -> list[tuple[str, ...]]:
        """Combinations of candidates, in the order to try them: the first `limit` of all of them, then, for each
        set of symbols a candidate has, every input's first candidate with that set (with four inputs of two
        candidates each, the first eight all keep the first input's first one; a model whose inputs are all
        sequences needs each input's [B, T, ...])."""
        first = list(itertools.islice(itertools.product(*(f.candidates for f in self.inputs)), limit))

        def symbols(text: str) -> frozenset:
            return frozenset(d for d in parse_input(text).dims if isinstance(d, str))
        kinds = dict.fromkeys(symbols(c) for f in self.inputs for c in f.candidates)
        alike = [tuple(next((c for c in f.candidates if symbols(c) == kind), f.candidates[0]) for f in self.inputs)
                 for kind in kinds]
        return first + [c for c in dict.fromkeys(alike) if c not in first]

    def bound(self, symbol: str) -> Bound | None:
        return next((b for b in self.bounds if b.symbol == symbol), None)

    def hints(self, texts: tuple[str, ...] | None = None) -> dict[str, int]:
        """A distinct size per symbol, never 0 or 1, within the bounds."""
        symbols: list[str] = []
        for text in texts or self.texts():
            symbols += [d for d in parse_input(text).dims if isinstance(d, str) and d not in symbols]
        out: dict[str, int] = {}
        for sym in symbols:
            b = self.bound(sym)
            size = HINTS.get(sym, 7)
            if b is not None:
                size = max(size, b.hint or 0, b.minimum or 0)
                if b.maximum is not None and size > b.maximum:
                    size = max(2, b.maximum)
            step = 1 if b is None or b.maximum is None or size < b.maximum else -1
            while size in out.values() or size < 2:      # distinct hints keep the symbols apart
                size += step
            out[sym] = size
        return out


def discover(model: nn.Module, also: tuple[str, ...] = ()) -> Discovery:
    """The inputs `model.forward()` needs, and where each was found. `also` names optional parameters
    to include anyway (a caller that learned from a failed run that the model needs them)."""
    config = getattr(model, "config", None)
    dtype, retry, dtype_because = _dtypes(model, config)
    params = _parameters(model)
    found: list[Found] = []
    bounds: list[tuple[str, Bound]] = []        # (the input that set it, the bound)
    unresolved: list[tuple[str, Text]] = []
    for i, (name, why) in enumerate(_needed(model, params, config, also)):
        result = _by_convention(name, model, config, dtype)
        if result is None:
            result = _by_layer(name, model, dtype, main=i == 0)
        if result is None:
            result = _by_name_alone(name, dtype)
        if not isinstance(result, tuple):
            reason = result or msg("no convention or layer says its shape")
            unresolved.append((name, msg("%(why)s, but %(reason)s", why=why, reason=reason)))
            continue
        cands, because, low, high, bs = result
        found.append(Found(name, tuple(cands), _joined(why, because), low, high))
        bounds += [(name, b) for b in bs]
    found, kept = _source_and_target(found, bounds)
    for sym in ("T", "S"):
        if any(sym in parse_input(f.text).dims for f in found):
            kept += [replace(b, symbol=sym) for b in _window_bounds(config)]
    return Discovery(tuple(found), _merge(kept), dtype, retry, dtype_because, tuple(unresolved), tuple(also))


def _source_and_target(found: list[Found], bounds: list[tuple[str, Bound]]) -> tuple[list[Found], list[Bound]]:
    """An encoder-decoder's two lengths kept apart. Where target-side inputs (`decoder_input_ids`, `tgt`) run over T
    and source-side ones too, the source side's T is S, as torch.nn.Transformer names them (source S, target T):
    otherwise the record would tie the two lengths, and a cross-attention's T x S would read T x T. Likewise a
    text-and-audio model's audio frames (CLAP's `input_features` beside its `input_ids`) are S, not the text's T."""
    def uses_t(f: Found) -> bool:
        return any("T" in parse_input(c).dims for c in f.candidates)

    target = [f for f in found if f.name.startswith(TARGET_SIDE)]
    if any(uses_t(f) for f in target) and any(uses_t(f) for f in found if f not in target):
        source = {f.name for f in found if f not in target}
    else:                       # a text-and-audio model (CLAP): the audio's frames are not the text's positions
        audio = {f.name for f in found if f.name in AUDIO and uses_t(f)}
        source = audio if audio and any(f.name in TOKEN_IDS and uses_t(f) for f in found) else set()
    if not source:
        return found, [b for _, b in bounds]
    def to_s(text):             # the reasons state the bounds they found on T ("set T >= 400"): now on S
        return text.with_words(lambda w: re.sub(r"\bT\b", "S", w)) if isinstance(text, Text) else text
    out = [replace(f, candidates=tuple(_renamed(c, "T", "S") for c in f.candidates), because=to_s(f.because))
           if f.name in source else f for f in found]
    return out, [replace(b, symbol="S", because=to_s(b.because)) if name in source and b.symbol == "T" else b
                 for name, b in bounds]


def _renamed(text: str, old: str, new: str) -> str:
    spec = parse_input(text)
    return _text(spec.name, spec.dtype, tuple(new if d == old else d for d in spec.dims))


def _code(name: str) -> str:
    return f"`{name}`"


def _field(name: str) -> str:
    return f"config.{name}"


def _setting(name: str, value) -> str:
    """A config field and its value, as code: "config.vocab_size = 128"."""
    return f"config.{name} = {value}"


def _joined(first, *then) -> Text:
    """Reasons one after another, as one sentence: "`input_ids` is the model's main_input_name; token ids ..."."""
    out = first
    for part in then:
        out = msg("%(first)s; %(then)s", first=out, then=part)
    return out


# -- which parameters ---------------------------------------------------------------------------------------

def _parameters(model: nn.Module) -> list[inspect.Parameter]:
    try:
        sig = inspect.signature(model.forward)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _needed(model, params, config, also) -> list[tuple[str, Text]]:
    names = [p.name for p in params]
    out: list[tuple[str, Text]] = []

    def add(name: str, why: Text) -> None:
        if name in names and name not in [n for n, _ in out]:
            out.append((name, why))

    main = getattr(model, "main_input_name", None)
    if isinstance(main, str):
        add(main, msg("%(name)s is the model's %(attribute)s", name=_code(main), attribute="main_input_name"))
    for p in params:
        if p.default is p.empty:
            add(p.name, msg("%(name)s is a required %(function)s parameter", name=_code(p.name), function="forward()"))
    if config is not None and getattr(config, "is_encoder_decoder", False):
        add("decoder_input_ids", msg("an encoder-decoder (%(field)s) needs %(name)s",
                                     field=_field("is_encoder_decoder"), name=_code("decoder_input_ids")))
    for name in also:
        add(name, msg("%(name)s was added after a forward without it failed", name=_code(name)))
    if not out and params:
        first = next((p for p in params if "Tensor" in str(p.annotation)), params[0])
        why = (msg("%(name)s is %(function)s's first tensor parameter (none is required)", name=_code(first.name),
                   function="forward()") if "Tensor" in str(first.annotation) else
               msg("%(name)s is %(function)s's first parameter (none is required)", name=_code(first.name),
                   function="forward()"))
        add(first.name, why)
    return out


# -- dtypes -------------------------------------------------------------------------------------------------

def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _dtypes(model: nn.Module, config) -> tuple[str, tuple[str, ...], Text]:
    floats = [t.dtype for t in itertools.chain(model.parameters(), model.buffers()) if t.is_floating_point()]
    current = _name(max(set(floats), key=floats.count)) if floats else "float32"
    because = (msg("the parameters are %(dtype)s", dtype=current) if floats
               else msg("the model has no floating parameters"))
    declared = None
    attr = "dtype" if config is not None and "dtype" in dir(config) else "torch_dtype"   # torch_dtype warns
    value = getattr(config, attr, None) if config is not None else None
    if isinstance(value, torch.dtype) or (isinstance(value, str) and isinstance(getattr(torch, value, None),
                                                                                torch.dtype)):
        declared = _name(value if isinstance(value, torch.dtype) else getattr(torch, value))
    retry: list[str] = []
    if declared and declared != current:
        retry.append(declared)
        because = _joined(because, msg("%(field)s declares %(dtype)s", field=_field(attr), dtype=declared))
    if current != "bfloat16" and "bfloat16" not in retry:
        retry.append("bfloat16")
    return current, tuple(retry), because


# -- the usual names ----------------------------------------------------------------------------------------


def _by_convention(name, model, config, dtype):
    """(candidates, because, low, high, bounds) from the usual names and config fields, or None."""
    if name in TOKEN_IDS:
        vocab, field_name = config_value(config, "vocab_size")
        if not isinstance(vocab, int):
            return None
        setting = _setting(field_name, vocab)
        rows = _input_rows(model)
        if rows is not None and rows < vocab:       # PaliGemma's config says 257152 where its table has 1000 rows
            vocab, setting = rows, f"model.get_input_embeddings().num_embeddings = {rows}"
        limit_fields = (TARGET_CONTEXT, *TEXT_CONTEXT) if name.startswith("decoder") else TEXT_CONTEXT
        limit, limit_name = config_value(config, *limit_fields)
        bounds = []
        if isinstance(limit, int):
            bounds.append(Bound("T", maximum=limit, because=msg("at most %(setting)s",
                                                                 setting=_setting(limit_name, limit))))
        return ([_text(name, "int64", ("B", "T"))], msg("token ids below %(setting)s", setting=setting), 0, vocab,
                bounds)
    if name == "token_type_ids":
        types, t_field = config_value(config, "type_vocab_size")
        types = types if isinstance(types, int) and types > 0 else 2
        why = (msg("segment ids below %(setting)s", setting=_setting(t_field, types)) if t_field
               else msg("segment ids 0 or 1"))
        return [_text(name, "int64", ("B", "T"))], why, 0, types, []
    if name in MASKS:
        return [_text(name, "int64", ("B", "T"))], msg("0/1 per position"), 0, 2, []
    if name == "inputs_embeds":
        width, field_name = config_value(config, "hidden_size", "d_model", "n_embd")
        if not isinstance(width, int):
            return None
        why = msg("width %(setting)s", setting=_setting(field_name, width))
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
                    msg("%(steps)s steps of %(values)s values", steps=_setting(s_field, steps),
                        values=_setting(c_field, channels)), None, None, [])
    return None


def _by_name_alone(name, dtype):
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
    bounds = [_stack_bound("T", stack)] if stack else []
    why = msg("a raw waveform")
    if stack:
        limit = f"T >= {stack.minimum()}"
        why = _joined(why, msg("%(stack)s set %(limit)s", stack=stack.describe(), limit=limit))
    cands = [_text(name, dtype, ("B", "T")), _text(name, dtype, ("B", c or 1, "T"))]
    if channels is not None:                          # the config names the channels: that layout first
        cands.reverse()
        why = _joined(why, _setting(c_field, channels))
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
        said = f"{steps} ({_setting(c_field, context)} + max(config.lags_sequence) = {lag})"
    else:
        steps, said = future, _setting(f_field, future)
    why = msg("%(steps)s steps of %(values)s values", steps=said, values=_setting(w_field, width))
    dims = ("B", steps) if width == 1 and not name.endswith("time_features") else ("B", steps, width)
    return [_text(name, dtype, dims)], why, None, None, []


def _spectrogram(name, config, dtype):
    """[B, frames, mel bins]: config.max_length frames first, then any T, in either order."""
    bins, b_field = config_value(config, "num_mel_bins")
    frames, f_field = config_value(config, "max_length")
    why = msg("%(setting)s features", setting=_setting(b_field, bins))
    cands = [_text(name, dtype, ("B", "T", bins)), _text(name, dtype, ("B", bins, "T"))]
    if isinstance(frames, int):
        cands.insert(0, _text(name, dtype, ("B", frames, bins)))
        why = _joined(why, _setting(f_field, frames))
    return cands, why, None, None, []


def _window_bounds(config) -> list[Bound]:
    """A T hint of twice the largest window or chunk, so the recorded code is the general path: Longformer,
    with its window of 512, fails at T = 17, pins T = 512, and runs with a symbolic T at 1024."""
    out = []
    for name in WINDOWS:
        value = getattr(config, name, None) if config is not None else None
        values = [v for v in (value if isinstance(value, (list, tuple)) else [value])
                  if isinstance(v, int) and not isinstance(v, bool)]
        if values and max(values) > 1:
            out.append(Bound("T", hint=2 * max(values),
                             because=msg("twice %(setting)s", setting=_setting(name, max(values)))))
    return out


def _stack_bound(symbol: str, stack: conv_limits.Stack) -> Bound:
    return Bound(symbol, minimum=stack.minimum(1), hint=stack.minimum(2),
                 because=msg("%(stack)s: every conv output needs at least one position", stack=stack.describe()))


def _pixels(name, model, config, dtype):
    channels, c_field = config_value(config, "num_channels")
    first = conv_limits.stack(model, 2, in_channels=channels if isinstance(channels, int) else None)
    if not isinstance(channels, int):
        if first is None:
            return None
        channels, c_field = model.get_submodule(first.layers[0].path).in_channels, None
    c_why = (_setting(c_field, channels) if c_field else
             msgn("%(n)s channel of the first %(layer)s", "%(n)s channels of the first %(layer)s", channels,
                  layer="Conv2d"))
    frames, f_field = config_value(config, "num_frames")
    if isinstance(frames, int):                 # a video model: a clip of config.num_frames images, then one image
        c_why = _joined(msg("a clip of %(setting)s frames tried first", setting=_setting(f_field, frames)), c_why)

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
                               size=f"{h}x{w}", field=_field(s_field), table=_code(table), patch=f"{ph}x{pw}")
                return [*texts(h, w), *texts("H", "W")], _joined(c_why, fixed_by), None, None, []
    bounds = []
    for axis, sym in enumerate(("H", "W")):
        stack = conv_limits.stack(model, 2, axis=axis, in_channels=channels)
        if stack is not None:
            bounds.append(_stack_bound(sym, stack))
    cands = texts("H", "W")
    if size is not None:                              # the configured size, should any size fail
        cands += texts(*((size, size) if isinstance(size, int) else size))
    return (cands, _joined(c_why, msg("any height and width (no position table tied to the image size)")), None, None,
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
    b_why = (msg("%(setting)s features", setting=_setting(b_field, bins)) if b_field else
             msgn("%(n)s channel of the first %(layer)s", "%(n)s channels of the first %(layer)s", bins,
                  layer="Conv1d"))
    sources, _ = config_value(config, "max_source_positions")
    variable = [_text(name, dtype, ("B", bins, "T")), _text(name, dtype, ("B", "T", bins))]
    if stack is None:       # no 1-D conv takes the bins: also a one-channel image of frames by bins (CLAP's HTSAT)
        variable += [_text(name, dtype, ("B", 1, "T", bins)), _text(name, dtype, ("B", 1, bins, "T"))]
    bounds = [_stack_bound("T", stack)] if stack and stack.minimum() > 1 else []
    if isinstance(sources, int) and stack is not None:
        length = sources * stack.stride()
        strides = " x ".join(str(layer.stride) for layer in stack.layers)
        fixed_by = msg("length %(length)s = %(field)s (%(positions)s) x the conv strides (%(strides)s)",
                       length=str(length), field=_field("max_source_positions"), positions=str(sources),
                       strides=strides)
        return [_text(name, dtype, ("B", bins, length)), *variable], _joined(b_why, fixed_by), None, None, bounds
    return variable, b_why, None, None, bounds


def _by_layer(name, model, dtype, main: bool):
    """(candidates, because, low, high, bounds), or why not (None: nothing found). Read from the code where the
    usual names and config fields said nothing: its modules are imported here, where they are used."""
    from atlas.extract.discover.first_consumer import first_consumer
    from atlas.extract.discover.layer_inputs import candidates
    consumer = first_consumer(model, name)
    if consumer is None or (consumer.how == "module order" and not main):
        return None
    if consumer.module is not None and any(is_lazy(p) for p in consumer.module.parameters(recurse=False)):
        return msg("the first layer it reaches, %(layer)s, takes its sizes from that input",
                   layer=type(consumer.module).__name__)
    cands = candidates(consumer, model, dtype)
    if not cands:
        return None
    c = cands[0]
    bounds = [Bound(sym, minimum=least, hint=hint, because=why) for sym, least, hint, why in c.minimum]
    because = msg("from %(source)s", source=c.because)
    return [_text(name, x.dtype, x.dims) for x in cands], because, c.low, c.high, bounds


def _merge(bounds: list[Bound]) -> tuple[Bound, ...]:
    out: dict[str, Bound] = {}
    for b in bounds:
        old = out.get(b.symbol)
        if old is None:
            out[b.symbol] = b
            continue
        lo = max((x for x in (old.minimum, b.minimum) if x is not None), default=None)
        hi = min((x for x in (old.maximum, b.maximum) if x is not None), default=None)
        hint = max((x for x in (old.hint, b.hint) if x is not None), default=None)
        because = old.because if b.because in old.because else _joined(*(x for x in (old.because, b.because) if x))
        out[b.symbol] = Bound(b.symbol, lo, hi, hint, because)
    return tuple(out.values())
