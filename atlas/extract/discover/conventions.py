"""What libraries call the sizes in a model's config and the inputs of its forward(): one table of each, and
their readers."""

from __future__ import annotations

# the sizes discovery gives each symbol: distinct, never 0 or 1, above small windows
HINTS = {"B": 3, "T": 17, "S": 13, "H": 40, "W": 56, "D": 12, "N": 19, "E": 23}

# forward() inputs
TOKEN_IDS = ("input_ids", "decoder_input_ids")
MASKS = ("attention_mask", "decoder_attention_mask")
AUDIO = ("input_features", "input_values")      # frames or samples: a length of their own beside token ids
PIXELS = ("pixel_values",)
TARGET_SIDE = ("decoder_", "tgt")               # an encoder-decoder's target inputs: transformers' and torch.nn's
SERIES = ("past_values", "past_observed_mask", "past_time_features", "future_values", "future_time_features")
GRAPH_EDGES = ("edge_index",)                   # a graph's edges: [2, E] node indices (PyTorch Geometric's `Adj`)
TIMESTEPS = ("t", "timestep", "timesteps", "time", "times", "sigma", "sigmas", "noise_level", "noise_levels")
# optional inputs a forward may need all the same, tried in this order where one without them fails
USUAL_OPTIONAL = (*PIXELS, *AUDIO, "decoder_input_ids", "attention_mask")

# config fields
# a config's longest input, by the names configs give it (MPT's max_seq_len); the first one set is the model's
CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "max_target_positions",
                  "max_source_positions")
SOURCE_CONTEXT = "max_source_positions"         # an encoder-decoder's source side (audio frames)
TARGET_CONTEXT = "max_target_positions"         # its target side
TEXT_CONTEXT = tuple(name for name in CONTEXT_FIELDS if name != SOURCE_CONTEXT)    # what bounds token ids
IMAGE_FIELDS = ("image_size", "sample_size", "img_size")     # transformers', diffusers' (latents too) and timm's names
WINDOWS = ("sliding_window", "attention_window", "chunk_size")      # attention that looks this far, or in chunks


def stated_contexts(config) -> list[tuple[str, int]]:
    """The config's position limits, (field, value), in CONTEXT_FIELDS order; 0 and -1 (XLNet: none) are no limit.
    A config that states none of its own and has a text part (a text-and-audio or text-and-image model) gives its
    text part's, named by the field that holds it: `text_config.max_position_embeddings`; those bound the text's
    positions alone."""
    own = _limits(config, "")
    if own:
        return own
    part = text_part(config)
    return _limits(*part) if part is not None else []


def text_part(config) -> tuple[object, str] | None:
    """(the text sub-config, "its_field.") of a config that has one apart from itself, else None."""
    get = getattr(config, "get_text_config", None)
    try:
        text = get() if callable(get) else None
    except Exception:                   # configs without a text part raise
        return None
    if text is None or text is config:
        return None
    field_name = next((name for name, value in vars(config).items() if value is text), None)
    return (text, f"{field_name}.") if field_name else None


def _limits(config, prefix: str) -> list[tuple[str, int]]:
    values = [(name, getattr(config, name, None)) for name in CONTEXT_FIELDS]
    return [(prefix + name, v) for name, v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]


def config_value(config, *names):
    """The first positive integer (or pair of them) among config fields, with its field name; the text, vision and
    audio sub-configs of a multimodal config too. A size of 0 or -1 is no size: XLNet's max_position_embeddings
    is -1, "no limit"."""
    text = text_part(config)
    sources = [(config, ""), *([text] if text is not None else [])]
    sources += [(getattr(config, f"{part}_config", None), f"{part}_config.") for part in ("vision", "audio")]
    sources += [(getattr(config, part, None), f"{part}.") for part in ("encoder", "decoder")]  # VisionEncoderDecoder
    for source, prefix in sources:
        for n in names:
            value = getattr(source, n, None) if source is not None else None
            if isinstance(value, bool):
                continue
            if (isinstance(value, int) and value > 0) or (isinstance(value, (list, tuple)) and len(value) == 2
                                                          and all(isinstance(v, int) and v > 0 for v in value)):
                return value, prefix + n
    return None, None


def stated_image(model) -> tuple[tuple[int, int] | None, str | None]:
    """The image size a model states, (height, width), and where: its config's field (IMAGE_FIELDS, a diffusers
    UNet's `sample_size` in latent pixels), else an `img_size` or `image_size` attribute of the model or, first in
    module order, of one of its parts (timm's `patch_embed.img_size`, open_clip's `visual.image_size`), else the
    `input_size` (channels, height, width) of timm's `pretrained_cfg` or `default_cfg`, which describes the
    pretrained weights' inputs. (None, None) where it states none."""
    value, name = config_value(getattr(model, "config", None), *IMAGE_FIELDS)
    if value is not None:
        return _pair(value), f"config.{name}"
    for path, module in model.named_modules():
        for attr in ("img_size", "image_size"):
            value = getattr(module, attr, None)
            if _pair(value) is not None:
                return _pair(value), f"model.{path + '.' if path else ''}{attr} = {value}"
    for attr in ("pretrained_cfg", "default_cfg"):
        cfg = getattr(model, attr, None)
        size = cfg.get("input_size") if isinstance(cfg, dict) else None
        if isinstance(size, (list, tuple)) and len(size) == 3 and all(isinstance(v, int) and v > 0 for v in size):
            return (size[1], size[2]), f"model.{attr}['input_size'] = {tuple(size)}"
    return None, None


def _pair(value) -> tuple[int, int] | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) and v > 0 for v in value):
        return value[0], value[1]
    return None
