"""transformers' own models for the benchmark: GPT-2 small, and LlamaForCausalLM at Llama 3's published sizes
(8B, 70B, 405B), built from config.

This module imports only transformers (and, through it, torch): the torchinfo peer in the benchmark loads it
without importing anything of atlas. Each factory is also an atlas SPEC: `bench/hf_models.py:llama3_70b`.
atlas calls a SPEC's factory under the meta device; the peer does the same (bench/torchinfo_summary.py), so
no weights are allocated on either side.
"""

from __future__ import annotations

import transformers as T

# (hidden, layers, heads, kv heads, intermediate) from Meta's model cards; vocabulary 128256 throughout.
SIZES = {
    "llama3_8b": (4096, 32, 32, 8, 14336),
    "llama3_70b": (8192, 80, 64, 8, 28672),
    "llama3_405b": (16384, 126, 128, 8, 53248),
}


def _build(name: str) -> T.LlamaForCausalLM:
    hidden, layers, heads, kv_heads, ffn = SIZES[name]
    config = T.LlamaConfig(vocab_size=128256, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                           num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=8192,
                           rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                           bos_token_id=128000, eos_token_id=128001)
    return T.LlamaForCausalLM(config)


def llama3_8b() -> T.LlamaForCausalLM:
    """Llama 3 8B's config: 32 layers, hidden 4096, 32 heads, 8 key/value heads."""
    return _build("llama3_8b")


def llama3_70b() -> T.LlamaForCausalLM:
    """Llama 3 70B's config: 80 layers, hidden 8192, 64 heads, 8 key/value heads."""
    return _build("llama3_70b")


def llama3_405b() -> T.LlamaForCausalLM:
    """Llama 3.1 405B's config: 126 layers, hidden 16384, 128 heads, 8 key/value heads."""
    return _build("llama3_405b")


def gpt2_small() -> T.GPT2LMHeadModel:
    """OpenAI's GPT-2 small (124M): transformers' default GPT2Config, with its language-model head."""
    return T.GPT2LMHeadModel(T.GPT2Config())
