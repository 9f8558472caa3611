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
import re
from dataclasses import dataclass, field, replace

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from atlas.document.input_specs import input_text as _text
from atlas.document.input_specs import parse_input
from atlas.extract.discover.conventions import (
    AUDIO,
    GRAPH_EDGES,
    HINTS,
    TARGET_SIDE,
    TOKEN_IDS,
)
from atlas.extract.discover.usual_inputs import (
    Bound,
    by_convention,
    by_name_alone,
    code,
    config_field,
    joined,
    window_bounds,
)
from atlas.i18n import Text, msg
from atlas.load.forward_calls import parameters


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
    needed: dict[str, Text] = {}                # why each unresolved input is needed
    for i, (name, why) in enumerate(_needed(model, params, config, also)):
        result = by_convention(name, model, config, dtype)
        if result is None:
            result = _by_layer(name, model, dtype, main=i == 0)
        if result is None:
            result = by_name_alone(name, dtype)
        if not isinstance(result, tuple):
            reason = result or msg("no convention or layer says its shape")
            unresolved.append((name, msg("%(why)s, but %(reason)s", why=why, reason=reason)))
            needed[name] = why
            continue
        cands, because, low, high, bs = result
        found.append(Found(name, tuple(cands), joined(why, because), low, high))
        bounds += [(name, b) for b in bs]
    if unresolved:
        found, bounds, unresolved = _traced(model, dtype, found, bounds, unresolved, needed)
    found, kept = _source_and_target(found, bounds)
    found = _graph(found)
    for sym in ("T", "S"):
        if any(sym in parse_input(f.text).dims for f in found):
            kept += [replace(b, symbol=sym) for b in window_bounds(config)]
    return Discovery(tuple(found), _merge(kept), dtype, retry, dtype_because, tuple(unresolved), tuple(also))


def _traced(model, dtype, found, bounds, unresolved, needed):
    """The inputs reading the code left unsized, each found along the data flow of a run on fake tensors with the
    others (atlas.extract.discover.traced_consumer), at the image size the model states if it states one:
    (found, bounds, still unresolved)."""
    from atlas.extract.discover.conventions import stated_image
    from atlas.extract.discover.traced_consumer import concrete, traced_consumer
    image, _ = stated_image(model)
    still = []
    for name, why in unresolved:
        texts = {f.name: f.text for f in found}
        hints = {**Discovery(tuple(found)).hints(), **(dict(zip("HW", image)) if image else {})}
        consumer = traced_consumer(model, name, concrete(texts, hints), dtype)
        result = _from_consumer(name, consumer, model, dtype) if consumer is not None else None
        if result is None:
            still.append((name, why))
            continue
        cands, because, low, high, bs = result
        found.append(Found(name, tuple(cands), joined(needed[name], because), low, high))
        bounds += [(name, b) for b in bs]
    return found, bounds, still


def _graph(found: list[Found]) -> list[Found]:
    """A graph's inputs: where one is a list of edges (`edge_index`, [2, E]), the rows of the others are its N
    nodes, not a batch: node features [N, F]."""
    if not any(f.name in GRAPH_EDGES for f in found):
        return found

    def nodes(f: Found) -> Found:
        cands = [_renamed(c, "B", "N") for c in f.candidates]
        rows = sorted(cands, key=lambda c: len(parse_input(c).dims) != 2)      # a row of features per node first
        return replace(f, candidates=tuple(rows))
    return [f if f.name in GRAPH_EDGES else nodes(f) for f in found]


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
    def to_s(text):             # the reasons state the bounds they found on T ("set T >= 400"), which hold for S
        return text.with_words(lambda w: re.sub(r"\bT\b", "S", w)) if isinstance(text, Text) else text
    out = [replace(f, candidates=tuple(_renamed(c, "T", "S") for c in f.candidates), because=to_s(f.because))
           if f.name in source else f for f in found]
    return out, [replace(b, symbol="S", because=to_s(b.because)) if name in source and b.symbol == "T" else b
                 for name, b in bounds]


def _renamed(text: str, old: str, new: str) -> str:
    spec = parse_input(text)
    return _text(spec.name, spec.dtype, tuple(new if d == old else d for d in spec.dims))


# -- which parameters ---------------------------------------------------------------------------------------

def _parameters(model: nn.Module) -> list[inspect.Parameter]:
    return [p for p in parameters(model).values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _needed(model, params, config, also) -> list[tuple[str, Text]]:
    names = [p.name for p in params]
    out: list[tuple[str, Text]] = []

    def add(name: str, why: Text) -> None:
        if name in names and name not in [n for n, _ in out]:
            out.append((name, why))

    main = getattr(model, "main_input_name", None)
    if isinstance(main, str):
        add(main, msg("%(name)s is the model's %(attribute)s", name=code(main), attribute="main_input_name"))
    for p in params:
        if p.default is p.empty:
            add(p.name, msg("%(name)s is a required %(function)s parameter", name=code(p.name), function="forward()"))
    if config is not None and getattr(config, "is_encoder_decoder", False):
        add("decoder_input_ids", msg("an encoder-decoder (%(field)s) needs %(name)s",
                                     field=config_field("is_encoder_decoder"), name=code("decoder_input_ids")))
    for name in also:
        add(name, msg("%(name)s was added after a forward without it failed", name=code(name)))
    if not out:             # none required: every input the code reads into a layer (a CLIP's image and text)
        for name in _read_inputs(model, params):
            add(name, msg("%(name)s is an optional %(function)s parameter that the code reads into a layer",
                          name=code(name), function="forward()"))
    if not out and params:
        first = next((p for p in params if "Tensor" in str(p.annotation)), params[0])
        why = (msg("%(name)s is %(function)s's first tensor parameter (none is required)", name=code(first.name),
                   function="forward()") if "Tensor" in str(first.annotation) else
               msg("%(name)s is %(function)s's first parameter (none is required)", name=code(first.name),
                   function="forward()"))
        add(first.name, why)
    return out


def _read_inputs(model, params) -> list[str]:
    """The optional parameters (default None) that forward()'s code reads into a layer, where more than one is:
    a model of several modalities takes each, none required (open_clip's CLIP: `image=None, text=None`)."""
    from atlas.extract.discover.first_consumer import first_consumer
    names = []
    for p in params:
        if p.default is not None:
            continue
        try:
            consumer = first_consumer(model, p.name)
        except Exception:               # the source is only read: a reading that fails finds nothing
            consumer = None
        if consumer is not None and consumer.how == "forward() source":
            names.append(p.name)
    return names if len(names) > 1 else []


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
        because = joined(because, msg("%(field)s declares %(dtype)s", field=config_field(attr), dtype=declared))
    if current != "bfloat16" and "bfloat16" not in retry:
        retry.append("bfloat16")
    return current, tuple(retry), because


# -- the usual names ----------------------------------------------------------------------------------------


def _by_layer(name, model, dtype, main: bool):
    """(candidates, because, low, high, bounds), or why not (None: nothing found). Read from the code where the
    usual names and config fields said nothing: its modules are imported here, where they are used."""
    from atlas.extract.discover.first_consumer import first_consumer
    consumer = first_consumer(model, name)
    if consumer is None or (consumer.how == "module order" and not main):
        return None
    return _from_consumer(name, consumer, model, dtype)


def _from_consumer(name, consumer, model, dtype):
    """(candidates, because, low, high, bounds) from the first layer an input reaches, or why not (None: nothing)."""
    from atlas.extract.discover.layer_inputs import candidates
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
        because = old.because if b.because in old.because else joined(*(x for x in (old.because, b.because) if x))
        out[b.symbol] = Bound(b.symbol, lo, hi, hint, because)
    return tuple(out.values())
