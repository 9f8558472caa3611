from atlas import names


def test_readable_attribute():
    assert names.readable_attribute("latent_encoder", "LatentEncoder") == "Latent encoder"
    assert names.readable_attribute("mlp", "MLP") == "MLP"
    assert names.readable_attribute("layer_norm", "LayerNorm", canonical=True) == "LayerNorm"
    assert names.readable_attribute("attn", "Foo") == "Attention"
    assert names.readable_attribute("3", "Block") is None


def test_plural_and_lower():
    assert names.plural(names.lower_first("Encoder block")) == "encoder blocks"
    assert names.plural("MLP") == "MLPs"
    assert names.plural("layer_norm query") == "layer_norm queries"
    assert names.lower_first("Block") == "block"


def test_index_spec():
    assert names.index_spec(["0", "1", "2", "5", "7", "8"]) == "0-2,5,7-8"
    assert names.index_spec(["en", "fr"]) == "en,fr"
