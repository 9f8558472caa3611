import pytest

from atlas.extract import names


def test_readable_attribute():
    assert names.readable_attribute("latent_encoder", "LatentEncoder") == "Latent encoder"
    assert names.readable_attribute("mlp", "MLP") == "MLP"
    assert names.readable_attribute("layer_norm", "LayerNorm", canonical=True) == "LayerNorm"
    assert names.readable_attribute("attn", "Foo") == "Attention"
    assert names.readable_attribute("3", "Block") is None


@pytest.mark.parametrize("attr, cls, name", [
    ("wte", "Embedding", "WTE"),                    # a short word no English word begins like: an acronym
    ("fc1", "Linear", "FC1"),                       # no vowel: an acronym, its digits kept
    ("ln_1", "LayerNorm", "LN 1"),
    ("conv1", "Conv1d", "Conv1"),
    ("swin_proj", "Linear", "Swin projection"),     # "sw" begins English words: read as a word
    ("vit", "ViTModel", "ViT"),                     # the class spells it with an inner capital
    ("layernorm_before", "LayerNorm", "LayerNorm before"),
    ("input_layernorm", "LlamaRMSNorm", "Input layernorm"),     # not the class's word: as written
    ("act_fn", "SiLU", "Activation function"),
    ("q_proj", "Linear", "Q projection"),           # q, k, v, o read as the streams and the output
    ("c_fc", "Conv1D", "c_fc"),                     # a lone letter reads as nothing: the attribute as written
    ("ln_f", "LayerNorm", "ln_f"),
])
def test_abbreviations_read_as_words_acronyms_or_code(attr, cls, name):
    assert names.readable_attribute(attr, cls) == name


def test_an_attribute_kept_as_written_is_code_not_prose():
    import torch.nn as nn

    from atlas.extract.walk import display_name
    assert display_name(nn.Linear(2, 2), "c_fc") == ("c_fc", False)
    assert display_name(nn.Embedding(2, 2), "wte") == ("WTE", True)


def test_lower_first():
    assert names.lower_first("Encoder block") == "encoder block"
    assert names.lower_first("MLP") == "MLP"
    assert names.lower_first("Block") == "block"


def test_index_spec():
    assert names.index_spec(["0", "1", "2", "5", "7", "8"]) == "0-2,5,7-8"
    assert names.index_spec(["en", "fr"]) == "en,fr"


@pytest.mark.parametrize("name, stream", [
    ("q", "q"), ("k_pe", "k"), ("value_states", "v"), ("query_states", "q"), ("q_nope", "q"), ("V", "v"),
    ("q_indices", None), ("k_mask", None), ("q_len", None), ("kv_seq_len", None), ("x", None),
])
def test_a_name_about_a_stream_is_not_the_stream(name, stream):
    """LongT5's q_indices (query positions) were colored as queries."""
    from atlas.analyse.equations.symbols import stream_of
    assert stream_of(name) == stream
