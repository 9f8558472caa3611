"""GPT-2 small, written natively in torch (nanoGPT style).

The LM head is tied to the token embedding, so the model holds 124,439,808
unique parameters. LDLM uses it frozen, as its source of token features.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from atlas.zoo import own_words


@dataclass(frozen=True)
class GPT2Config:
    vocab_size: int = 50257
    context: int = 1024
    d: int = 768
    heads: int = 12
    layers: int = 12
    eps: float = 1e-5


class CausalSelfAttention(nn.Module):
    """Causal multi-head self-attention with a fused query/key/value projection."""

    atlas_name = own_words("Causal self-attention")

    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.c_attn = nn.Linear(cfg.d, 3 * cfg.d)
        self.c_proj = nn.Linear(cfg.d, cfg.d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)                          # (B, T, C) each
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)      # (B, nh, T, hs)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)      # (B, nh, T, hs)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)      # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)       # (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(B, T, C)                              # (B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    """Position-wise feed-forward network with a tanh-approximated GELU."""

    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.d, 4 * cfg.d)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * cfg.d, cfg.d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    """Pre-norm transformer block: attention, then MLP, each added to the residual stream."""

    atlas_name = own_words("Transformer block")

    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2Model(nn.Module):
    """Token and position embeddings, the transformer blocks and a final LayerNorm."""

    atlas_name = own_words("GPT-2 trunk")

    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d)
        self.wpe = nn.Embedding(cfg.context, cfg.d)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.ln_f = nn.LayerNorm(cfg.d, eps=cfg.eps)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[1]
        pos = torch.arange(T, device=input_ids.device)                    # (T,)
        x = self.wte(input_ids) + self.wpe(pos)                            # (B, T, d)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)                                                # (B, T, d)


class GPT2(nn.Module):
    """GPT-2 language model; the vocabulary head shares its weight with the token embedding."""

    atlas_name = "GPT-2"
    atlas_inputs = ("input_ids:int64[B,T]",)

    def __init__(self, cfg: GPT2Config = GPT2Config()) -> None:
        super().__init__()
        self.cfg = cfg
        self.transformer = GPT2Model(cfg)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight                  # tied: one tensor, counted once
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.transformer(input_ids)                               # (B, T, d)
        return self.lm_head(hidden)                                        # (B, T, vocab)


def gpt2_small() -> GPT2:
    """Factory for the atlas CLI: `atlas build atlas.zoo.gpt2:gpt2_small`."""
    return GPT2(GPT2Config())


