"""Architectures documented from the transformers library's own code, built from config at their published
sizes on the meta device (no weights are downloaded or allocated). The configs restate the published model
cards' hyper-parameters; everything on the pages is then read off the library's code.

Each factory is a SPEC: `atlas.zoo.transformers_models:llama3_8b`. They need the `thirdparty` extra
(transformers, pinned in constraints.txt).
"""

from __future__ import annotations

from atlas.zoo import own_words


def _named(model, name: str, summary: str):
    """The display name and the one-sentence summary the pages use (the class names say less)."""
    model.atlas_name = name
    model.atlas_summary = summary
    return model


def llama3_8b():
    """Meta's Llama 3 8B: grouped-query attention (8 KV heads for 32 query heads) and rotary positions."""
    import transformers as T
    config = T.LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                           num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                           rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                           bos_token_id=128000, eos_token_id=128001)
    return _named(T.LlamaForCausalLM(config), "Llama 3 8B",
                  own_words("A decoder-only language model with grouped-query attention, rotary positions and SwiGLU MLPs."))


def olmoe_1b_7b():
    """AllenAI's OLMoE-1B-7B: 64 experts per layer, 8 of them active per token."""
    import transformers as T
    config = T.OlmoeConfig(vocab_size=50304, hidden_size=2048, intermediate_size=1024, num_hidden_layers=16,
                           num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=4096,
                           rope_theta=10000.0, rms_norm_eps=1e-5, num_experts=64, num_experts_per_tok=8,
                           tie_word_embeddings=False, pad_token_id=1, eos_token_id=50279)
    return _named(T.OlmoeForCausalLM(config), "OLMoE 1B-7B",
                  own_words("A decoder-only mixture-of-experts language model: each token is routed to 8 of 64 expert MLPs."))


def bert_base():
    """Google's BERT-base, uncased: a bidirectional encoder."""
    import transformers as T
    return _named(T.BertModel(T.BertConfig(vocab_size=30522)), "BERT base",
                  own_words("An encoder-only transformer: every position attends to every other, in both directions."))


def vit_base():
    """Google's ViT-B/16 at 224 × 224 pixels, with an ImageNet classification head."""
    import transformers as T
    config = T.ViTConfig(image_size=224, patch_size=16, num_labels=1000)
    return _named(T.ViTForImageClassification(config), "ViT-B/16",
                  own_words("A vision transformer: the image is cut into 16 × 16 patches, read as a sequence by an encoder."))


def whisper_base():
    """OpenAI's Whisper base: a speech encoder over log-mel frames and a text decoder."""
    import transformers as T
    config = T.WhisperConfig(vocab_size=51865, num_mel_bins=80, encoder_layers=6, decoder_layers=6, d_model=512,
                             encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                             decoder_ffn_dim=2048, max_source_positions=1500, max_target_positions=448,
                             pad_token_id=50257, bos_token_id=50257, eos_token_id=50257,
                             decoder_start_token_id=50258)
    return _named(T.WhisperForConditionalGeneration(config), "Whisper base",
                  own_words("An encoder-decoder speech recognizer: a convolutional and transformer encoder over "
                            "log-mel frames, and a text decoder that attends to it."))
