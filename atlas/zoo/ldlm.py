"""LDLM: a latent diffusion language model, as readable reference code.

Meshchaninov, Shabalin, Chimbulatov, Gushchin, Koziev, Korotin, Vetrov:
"How to Train Your Latent Diffusion Language Model Jointly With the Latent
Space", arXiv 2605.07933 (2026). The authors' implementation is not public.

A frozen GPT-2 small gives token features; a trained latent encoder reshapes
them into latents; a denoiser removes noise from latents; a latent decoder maps
latents back to GPT-2's hidden size, read out through GPT-2's own vocabulary head.

The latent encoder follows the published component pages exactly. The denoiser,
the latent decoder and the feature statistics are reconstructions from the
authors' earlier public code (Cosmos); their classes say so in
``atlas_reconstruction``, and the atlas marks their pages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from atlas.zoo import own_words
from atlas.zoo.gpt2 import GPT2, GPT2Config


@dataclass(frozen=True)
class LDLMConfig:
    d: int = 768                 # latent and feature width
    heads: int = 12
    head_features: int = 64
    encoder_layers: int = 6
    decoder_layers: int = 6
    denoiser_layers: int = 12
    mlp_multiplier: int = 4
    dropout: float = 0.1
    eps: float = 1e-5
    softcap: float = 50.0
    positions: int = 128         # latent positions (one latent per token position)
    lm: GPT2Config = field(default_factory=GPT2Config)


class ScaledRMSNorm(nn.Module):
    """RMS-style normalization with a learned gain: the features are divided by their root mean square, floored at eps."""

    atlas_name = own_words("RMS norm")

    def __init__(self, features: int, eps: float) -> None:
        super().__init__()
        self.features = features
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.linalg.vector_norm(x, dim=-1, keepdim=True) / math.sqrt(self.features)
        return self.gain * (x / torch.clamp(rms, min=self.eps))


class PerceiverAttention(nn.Module):
    """Attention from the latents to the latents and the features, with query/key normalization and softcapped logits."""

    atlas_name = own_words("Perceiver attention")

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.head_features = cfg.head_features
        self.softcap = cfg.softcap
        self.norm_latents = ScaledRMSNorm(cfg.d, cfg.eps)                      # gamma_a
        self.norm_features = ScaledRMSNorm(cfg.d, cfg.eps)                     # gamma_b
        self.qkv = nn.Linear(cfg.d, 3 * cfg.d, bias=False)                     # W_QKV
        self.kv = nn.Linear(cfg.d, 2 * cfg.d, bias=False)                      # W_KV
        self.q_norm = ScaledRMSNorm(cfg.head_features, cfg.eps)
        self.k_norm = ScaledRMSNorm(cfg.head_features, cfg.eps)
        self.out_proj = nn.Linear(cfg.d, cfg.d, bias=False)                    # W_O

    def forward(self, u: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        B, T, d = u.shape
        N = h.shape[1]                                                         # feature positions
        nh, hs = self.heads, self.head_features
        u_bar = self.norm_latents(u)                                           # (B, T, d)
        h_bar = self.norm_features(h)                                          # (B, N, d)
        p_a = self.qkv(u_bar)                                                  # (B, T, 3d)
        p_b = self.kv(h_bar)                                                   # (B, N, 2d)
        q, k_a, v_a = p_a.split(d, dim=-1)                                     # (B, T, d) each
        k_b, v_b = p_b.split(d, dim=-1)                                        # (B, N, d) each
        k = torch.cat([k_a, k_b], dim=1)                                       # (B, T+N, d)
        v = torch.cat([v_a, v_b], dim=1)                                       # (B, T+N, d)
        Q = self.q_norm(q.view(B, T, nh, hs).transpose(1, 2))                  # (B, nh, T, hs)
        K = self.k_norm(k.view(B, T + N, nh, hs).transpose(1, 2))              # (B, nh, T+N, hs)
        V = v.view(B, T + N, nh, hs).transpose(1, 2)                           # (B, nh, T+N, hs)
        S = Q @ K.transpose(-2, -1)                                            # (B, nh, T, T+N)
        F = self.softcap * torch.tanh(S / (self.softcap * math.sqrt(hs)))     # softcapped logits
        A = torch.softmax(F, dim=-1)                                           # (B, nh, T, T+N)
        O = A @ V                                                              # (B, nh, T, hs)
        o = O.transpose(1, 2).reshape(B, T, d)                                 # (B, T, d)
        return self.out_proj(o)


class MLP(nn.Module):
    """Normalize the input, widen it, apply the exact GELU and dropout, and project back."""

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        hidden = cfg.mlp_multiplier * cfg.d
        self.layer_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.fc_in = nn.Linear(cfg.d, hidden)                                  # W_1, b_1
        self.gelu = nn.GELU()
        self.dropout = nn.Dropout(cfg.dropout)
        self.fc_out = nn.Linear(hidden, cfg.d)                                 # W_2, b_2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_bar = self.layer_norm(x)                                             # (B, T, d)
        h = self.fc_in(x_bar)                                                  # (B, T, 4d)
        g = self.dropout(self.gelu(h))                                         # (B, T, 4d)
        return self.fc_out(g)                                                  # (B, T, d)


class PerceiverBlock(nn.Module):
    """Perceiver attention from the latents to the latents and the features, then an MLP, each added to the latents."""

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        self.attn = PerceiverAttention(cfg)
        self.mlp = MLP(cfg)

    def forward(self, u: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        delta_attn = self.attn(u, h)                                           # (B, T, d)
        u_prime = u + delta_attn
        delta_mlp = self.mlp(u_prime)                                          # (B, T, d)
        return u_prime + delta_mlp


class EncoderBlock(PerceiverBlock):
    """Perceiver attention from the latents to the latents and the features, then an MLP, each added to the latents."""

    atlas_name = own_words("Encoder block")


class DecoderBlock(PerceiverBlock):
    """Perceiver attention from the token queries to the queries and the latents, then an MLP, each added to the queries."""

    atlas_name = own_words("Decoder block")
    atlas_reconstruction = own_words(
        "The decoder's blocks are taken to be of the encoder's kind, as in the authors' earlier public code.")


class FeatureStandardizer(nn.Module):
    """Standardize GPT-2's features with stored per-feature statistics, which are not trained."""

    atlas_name = own_words("Feature standardizer")
    atlas_reconstruction = own_words(
        "Stored feature mean and standard deviation, as in the authors' earlier public code; "
        "counting them as frozen parameters is inferred from the published frozen total."
    )

    def __init__(self, d: int) -> None:
        super().__init__()
        self.mean = nn.Parameter(torch.zeros(d), requires_grad=False)
        self.std = nn.Parameter(torch.ones(d), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class LatentEncoder(nn.Module):
    """Add positions to the features, normalize the learned queries, apply the blocks, each attending to the features, and normalize the result."""

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        self.d = cfg.d
        self.positions = nn.Embedding(cfg.positions, cfg.d)
        self.latents = nn.Parameter(0.02 * torch.randn(cfg.positions, cfg.d))
        self.query_norm = ScaledRMSNorm(cfg.d, cfg.eps)
        self.blocks = nn.ModuleList([EncoderBlock(cfg) for _ in range(cfg.encoder_layers)])
        self.out_norm = ScaledRMSNorm(cfg.d, cfg.eps)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        B, T, d = h.shape
        pos = torch.arange(T, device=h.device)                                 # (T,)
        h_p = h + self.positions(pos) * d ** -0.5                              # (B, T, d)
        u = self.query_norm(self.latents[:T]).expand(B, T, d)                  # (B, T, d)
        for block in self.blocks:
            u = block(u, h_p)
        return self.out_norm(u)


class TimeEmbedding(nn.Module):
    """Sinusoidal features of the diffusion time, passed through a two-layer MLP."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.d = d
        self.fc_in = nn.Linear(d, 4 * d)
        self.act = nn.SiLU()
        self.fc_out = nn.Linear(4 * d, d)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.d // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)   # (d/2,)
        angles = t[:, None] * freqs[None, :]                                   # (B, d/2)
        feats = torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)     # (B, d)
        return self.fc_out(self.act(self.fc_in(feats)))                        # (B, d)


class SelfAttention(nn.Module):
    """Bidirectional multi-head self-attention over the latents."""

    atlas_name = own_words("Self-attention")

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.head_features = cfg.head_features
        self.qkv = nn.Linear(cfg.d, 3 * cfg.d)
        self.out_proj = nn.Linear(cfg.d, cfg.d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        nh, hs = self.heads, self.head_features
        q, k, v = self.qkv(x).split(d, dim=-1)                                 # (B, T, d) each
        Q = q.view(B, T, nh, hs).transpose(1, 2)                               # (B, nh, T, hs)
        K = k.view(B, T, nh, hs).transpose(1, 2)                               # (B, nh, T, hs)
        V = v.view(B, T, nh, hs).transpose(1, 2)                               # (B, nh, T, hs)
        A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(hs), dim=-1)     # (B, nh, T, T)
        o = (A @ V).transpose(1, 2).reshape(B, T, d)                           # (B, T, d)
        return self.out_proj(o)


class DenoiserLayer(nn.Module):
    """Pre-norm transformer layer: self-attention, then an MLP, each added to the latents."""

    atlas_name = own_words("Denoiser layer")

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        self.norm_attn = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.attn = SelfAttention(cfg)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm_attn(x))
        x = x + self.mlp(x)
        return x


class Denoiser(nn.Module):
    """Predict clean latents from noisy ones, conditioned on the diffusion time and on the previous estimate (self-conditioning)."""

    atlas_reconstruction = own_words(
        "The paper's denoiser is not public; this is a transformer of 12 layers, 12 heads and width 768 "
        "with time conditioning and self-conditioning, as third-party summaries and the authors' earlier code describe."
    )

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        self.self_condition = nn.Linear(2 * cfg.d, cfg.d)
        self.time = TimeEmbedding(cfg.d)
        self.positions = nn.Embedding(cfg.positions, cfg.d)
        self.layers = nn.ModuleList([DenoiserLayer(cfg) for _ in range(cfg.denoiser_layers)])
        self.out_norm = nn.LayerNorm(cfg.d, eps=cfg.eps)
        self.out = nn.Linear(cfg.d, cfg.d)

    def forward(self, z_t: torch.Tensor, t: torch.Tensor, z_prev: torch.Tensor) -> torch.Tensor:
        T = z_t.shape[1]
        pos = torch.arange(T, device=z_t.device)                               # (T,)
        x = self.self_condition(torch.cat([z_t, z_prev], dim=-1))              # (B, T, d)
        x = x + self.positions(pos) + self.time(t)[:, None, :]                 # (B, T, d)
        for layer in self.layers:
            x = layer(x)
        return self.out(self.out_norm(x))                                      # (B, T, d)


class LatentDecoder(nn.Module):
    """Token queries (a mask vector plus positions) attend to the latents through Perceiver blocks; a head maps them to GPT-2's hidden size."""

    atlas_reconstruction = own_words(
        "The paper's decoder is not public; its queries, blocks and head follow the authors' earlier public code."
    )

    def __init__(self, cfg: LDLMConfig) -> None:
        super().__init__()
        self.mask_vector = nn.Parameter(torch.zeros(cfg.d), requires_grad=False)   # not trained
        self.positions = nn.Embedding(cfg.positions, cfg.d)
        self.blocks = nn.ModuleList([DecoderBlock(cfg) for _ in range(cfg.decoder_layers)])
        self.out_norm = ScaledRMSNorm(cfg.d, cfg.eps)
        self.head = nn.Linear(cfg.d, cfg.lm.d)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        B, T, d = z.shape
        pos = torch.arange(T, device=z.device)                                 # (T,)
        u = (self.mask_vector + self.positions(pos) * d ** -0.5).expand(B, T, d)      # (B, T, d)
        for block in self.blocks:
            u = block(u, z)
        return self.head(self.out_norm(u))                                     # (B, T, d_lm)


class LDLM(nn.Module):
    """A frozen GPT-2 gives token features; the encoder turns them into latents, the denoiser cleans noisy latents, the decoder reads tokens back out."""

    atlas_name = "LDLM"
    atlas_published = {
        "source": "Meshchaninov et al., arXiv 2605.07933 (2026)",
        "trained": 306_011_162,
        "frozen": 124_442_112,
        "frozen_composition_inferred": True,
    }
    atlas_inputs = ("input_ids:int64[B,T]", "t:float32[B]", "noise:float32[B,T,d]")
    atlas_dims = {"B": "batch", "T": "positions"}

    def __init__(self, cfg: LDLMConfig = LDLMConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        self.atlas_reference_sizes = {"B": 1, "T": cfg.positions}            # where pages evaluate cost formulas
        self.atlas_fixed_dims = {                                               # labels for fixed sizes on pages
            "d": cfg.d, own_words("heads"): cfg.heads, own_words("head features"): cfg.head_features,
            own_words("hidden"): cfg.mlp_multiplier * cfg.d, own_words("vocabulary"): cfg.lm.vocab_size,
        }
        self.frozen_lm = GPT2(cfg.lm)
        self.frozen_lm.requires_grad_(False)
        self.feature_standardizer = FeatureStandardizer(cfg.lm.d)
        self.latent_encoder = LatentEncoder(cfg)
        self.denoiser = Denoiser(cfg)
        self.latent_decoder = LatentDecoder(cfg)

    def forward(self, input_ids: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        features = self.frozen_lm.transformer(input_ids)                       # (B, T, d)
        h = self.feature_standardizer(features)                                # (B, T, d)
        z = self.latent_encoder(h)                                             # (B, T, d)
        alpha = torch.cos(0.5 * math.pi * t)[:, None, None]                    # (B, 1, 1)
        z_t = alpha * z + torch.sqrt(1 - alpha**2) * noise                     # (B, T, d)
        z_hat = self.denoiser(z_t, t, torch.zeros_like(z_t))                   # (B, T, d)
        hidden = self.latent_decoder(z_hat)                                    # (B, T, d)
        return self.frozen_lm.lm_head(hidden)                                  # (B, T, vocab)


def ldlm() -> LDLM:
    """Factory for the atlas CLI; the default model: `atlas build atlas.zoo.ldlm:ldlm`."""
    return LDLM(LDLMConfig())
