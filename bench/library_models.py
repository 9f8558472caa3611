"""A cross-library suite: models from seven libraries besides torch.nn, each built from a config or its constructor
(no weights downloaded: pretrained=False everywhere, HF_HUB_OFFLINE=1).

Every factory takes no argument and returns the model, so each is a SPEC: `bench/library_models.py:dit`. Sizes
are small (2 layers or stages, width 32-64, images of 32-64 pixels) so each documents in seconds, but each keeps
what defines its architecture: the UNets' cross-attention and time embedding, DiT's adaLN-Zero, SD3's and Flux's
joint attention over text and image tokens, MaxViT's block and grid attention, Swin's shifted windows, squeeze and
excitation in the EfficientNet and MobileNetV3 blocks, message passing over an edge list in the graph networks,
CLIP's two towers and its logit scale, x-transformers' rotary embeddings.

The transformers entries are architectures tests/fixtures/hf_suite.py does not hold.
`SUITE` lists every entry with its library, kind and the features it exercises.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VOCAB = 128
TEXT = 32           # the text length a config fixes (CLIP's context, x-transformers' max_seq_len)


# diffusers ----------------------------------------------------------------------------------------------

def unet2d_condition():
    from diffusers import UNet2DConditionModel
    return UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=8, norm_num_groups=16)


def unet2d():
    from diffusers import UNet2DModel
    return UNet2DModel(sample_size=32, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(32, 64),
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"), attention_head_dim=8, norm_num_groups=16)


def dit():
    from diffusers import DiTTransformer2DModel
    return DiTTransformer2DModel(num_attention_heads=4, attention_head_dim=16, in_channels=4, num_layers=2,
                                 sample_size=16, patch_size=2, num_embeds_ada_norm=1000)


def sd3():
    from diffusers import SD3Transformer2DModel
    return SD3Transformer2DModel(sample_size=16, patch_size=2, in_channels=4, out_channels=4, num_layers=2,
                                 attention_head_dim=16, num_attention_heads=4, joint_attention_dim=32,
                                 caption_projection_dim=64, pooled_projection_dim=32, pos_embed_max_size=16)


def flux():
    from diffusers import FluxTransformer2DModel
    return FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
                                  attention_head_dim=16, num_attention_heads=4, joint_attention_dim=32,
                                  pooled_projection_dim=32, axes_dims_rope=(4, 6, 6))


def autoencoder_kl():
    from diffusers import AutoencoderKL
    return AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                         up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(32, 64), layers_per_block=1,
                         latent_channels=4, norm_num_groups=16, sample_size=32)


def autoencoder_tiny():
    from diffusers import AutoencoderTiny
    return AutoencoderTiny(encoder_block_out_channels=(32, 32), decoder_block_out_channels=(32, 32),
                           num_encoder_blocks=(1, 1), num_decoder_blocks=(1, 1), latent_channels=4)


# timm ---------------------------------------------------------------------------------------------------

def timm_maxvit():
    from timm.models.maxxvit import MaxxVit, MaxxVitCfg, _tf_cfg
    cfg = MaxxVitCfg(embed_dim=(32, 64), depths=(1, 1), block_type=("M", "M"), stem_width=16, stem_bias=True,
                     **_tf_cfg())
    cfg.transformer_cfg.dim_head = 16
    return MaxxVit(cfg, img_size=64, num_classes=10)


def timm_convnext():
    from timm.models.convnext import ConvNeXt
    return ConvNeXt(depths=(1, 1, 1, 1), dims=(16, 32, 48, 64), num_classes=10)      # timm builds four stages


def timm_vit():
    import timm
    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, embed_dim=64,
                             depth=2, num_heads=4, num_classes=10)


def timm_resnet():
    from timm.models.resnet import BasicBlock, ResNet
    return ResNet(BasicBlock, layers=(1, 1, 1, 1), num_classes=10, stem_width=16, stem_type="deep",
                  channels=(16, 32, 64, 128))


def timm_swin():
    import timm
    return timm.create_model("swin_tiny_patch4_window7_224", pretrained=False, img_size=32, patch_size=4,
                             embed_dim=32, depths=(1, 1), num_heads=(2, 4), window_size=4, num_classes=10)


def timm_efficientnet():
    from timm.models._efficientnet_builder import decode_arch_def
    from timm.models.efficientnet import EfficientNet
    arch = [["ds_r1_k3_s1_e1_c16_se0.25"], ["ir_r1_k3_s2_e6_c24_se0.25"], ["ir_r1_k5_s2_e6_c40_se0.25"]]
    return EfficientNet(decode_arch_def(arch), num_classes=10, num_features=64, stem_size=16, act_layer="swish")


def timm_mixer():
    from timm.models.mlp_mixer import MlpMixer
    return MlpMixer(img_size=32, patch_size=8, embed_dim=64, num_blocks=2, num_classes=10)


# torchvision --------------------------------------------------------------------------------------------

def tv_resnet():
    from torchvision.models.resnet import BasicBlock, ResNet
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)


def tv_vit():
    from torchvision.models import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                             num_classes=10)


def tv_convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)], num_classes=10)


def tv_mobilenet_v3():
    from torchvision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf
    setting, last = _mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.5)
    return MobileNetV3(setting[:4], last_channel=64, num_classes=10)      # SE and hardswish among the first four


# torch_geometric ----------------------------------------------------------------------------------------

def gcn():
    import torch
    from torch_geometric.nn import GCNConv

    class GCN(torch.nn.Module):
        """Two graph convolutions, the second to the classes (Kipf & Welling)."""

        def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4):
            super().__init__()
            self.conv1, self.conv2 = GCNConv(features, hidden), GCNConv(hidden, classes)

        def forward(self, x, edge_index):
            return self.conv2(torch.relu(self.conv1(x, edge_index)), edge_index)

    return GCN()


def gat():
    from torch_geometric.nn.models import GAT
    return GAT(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4, heads=4, v2=False)


def graphsage():
    from torch_geometric.nn.models import GraphSAGE
    return GraphSAGE(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4)


def gin():
    from torch_geometric.nn.models import GIN
    return GIN(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4)


# open_clip ----------------------------------------------------------------------------------------------

_CLIP_TEXT = dict(context_length=TEXT, vocab_size=VOCAB, width=64, heads=4, layers=2)


def open_clip_vit():
    import open_clip
    return open_clip.CLIP(embed_dim=32, vision_cfg=dict(layers=2, width=64, head_width=16, patch_size=8,
                                                         image_size=32), text_cfg=_CLIP_TEXT)


def open_clip_resnet():
    import open_clip
    return open_clip.CLIP(embed_dim=32, vision_cfg=dict(layers=(1, 1, 1, 1), width=16, head_width=16, image_size=64),
                          text_cfg=_CLIP_TEXT)


# x-transformers -----------------------------------------------------------------------------------------

def x_decoder():
    from x_transformers import Decoder, TransformerWrapper
    return TransformerWrapper(num_tokens=VOCAB, max_seq_len=TEXT,
                              attn_layers=Decoder(dim=64, depth=2, heads=4, rotary_pos_emb=True))


def x_encoder():
    from x_transformers import Encoder, TransformerWrapper
    return TransformerWrapper(num_tokens=VOCAB, max_seq_len=TEXT, attn_layers=Encoder(dim=64, depth=2, heads=4))


def x_vit():
    from x_transformers import Encoder, ViTransformerWrapper
    return ViTransformerWrapper(image_size=32, patch_size=8, num_classes=10, attn_layers=Encoder(dim=64, depth=2,
                                                                                                 heads=4))


def x_encoder_decoder():
    from x_transformers import XTransformer
    return XTransformer(dim=64, enc_num_tokens=VOCAB, enc_depth=2, enc_heads=4, enc_max_seq_len=TEXT,
                        dec_num_tokens=VOCAB, dec_depth=2, dec_heads=4, dec_max_seq_len=TEXT)


# transformers (architectures tests/fixtures/hf_suite.py does not hold) ----------------------------------

def hf_dinov2():
    import transformers as T
    return T.Dinov2Model(T.Dinov2Config(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, image_size=32,
                                        patch_size=8, mlp_ratio=2, layerscale_value=1.0))


def hf_segformer():
    import transformers as T
    return T.SegformerModel(T.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                                              hidden_sizes=[32, 64], patch_sizes=[7, 3], strides=[4, 2],
                                              num_attention_heads=[1, 2], mlp_ratios=[2, 2], image_size=32))


def hf_modernbert():
    import transformers as T
    return T.ModernBertModel(T.ModernBertConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                                num_attention_heads=4, vocab_size=VOCAB, max_position_embeddings=256,
                                                global_attn_every_n_layers=2, local_attention=8,
                                                pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                                                sep_token_id=2))


def hf_siglip():
    import transformers as T
    return T.SiglipModel(T.SiglipConfig(
        text_config=dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                         vocab_size=VOCAB, max_position_embeddings=TEXT, pad_token_id=0, bos_token_id=1,
                         eos_token_id=2),
        vision_config=dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                           image_size=32, patch_size=8)))


def hf_gpt_bigcode():
    import transformers as T
    return T.GPTBigCodeForCausalLM(T.GPTBigCodeConfig(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB,
                                                      n_positions=256, multi_query=True, bos_token_id=0,
                                                      eos_token_id=0))


@dataclass(frozen=True)
class Entry:
    name: str
    library: str
    kind: str                          # diffusion | autoencoder | vision | graph | multimodal | decoder-llm | encoder
    features: tuple[str, ...]
    factory: Callable


def _e(factory: Callable, library: str, kind: str, *features: str) -> Entry:
    return Entry(factory.__name__, library, kind, features, factory)


SUITE: tuple[Entry, ...] = (
    _e(unet2d_condition, "diffusers", "diffusion", "cross-attention", "time-embedding", "skip-connections"),
    _e(unet2d, "diffusers", "diffusion", "self-attention", "time-embedding", "skip-connections"),
    _e(dit, "diffusers", "diffusion", "patch-embedding", "adaln-zero", "class-conditioning"),
    _e(sd3, "diffusers", "diffusion", "joint-attention", "pooled-projection", "cropped-positions"),
    _e(flux, "diffusers", "diffusion", "joint-attention", "single-stream-blocks", "rope-from-ids"),
    _e(autoencoder_kl, "diffusers", "autoencoder", "diagonal-gaussian", "mid-block-attention"),
    _e(autoencoder_tiny, "diffusers", "autoencoder", "tanh-clamp", "no-normalization"),
    _e(timm_maxvit, "timm", "vision", "mbconv", "block-attention", "grid-attention", "relative-position-bias"),
    _e(timm_convnext, "timm", "vision", "depthwise-conv", "layer-scale"),
    _e(timm_vit, "timm", "vision", "patch-embedding", "cls-token"),
    _e(timm_resnet, "timm", "vision", "deep-stem", "residual"),
    _e(timm_swin, "timm", "vision", "windowed-attention", "shifted-windows", "patch-merging"),
    _e(timm_efficientnet, "timm", "vision", "inverted-residual", "squeeze-excite", "swish"),
    _e(timm_mixer, "timm", "vision", "token-mixing-mlp"),
    _e(tv_resnet, "torchvision", "vision", "residual", "batch-norm"),
    _e(tv_vit, "torchvision", "vision", "patch-embedding", "cls-token", "nn-multihead-attention"),
    _e(tv_convnext, "torchvision", "vision", "depthwise-conv", "layer-scale", "stochastic-depth"),
    _e(tv_mobilenet_v3, "torchvision", "vision", "inverted-residual", "squeeze-excite", "hardswish"),
    _e(gcn, "torch_geometric", "graph", "edge-list", "symmetric-normalization", "self-loops"),
    _e(gat, "torch_geometric", "graph", "edge-list", "attention-over-neighbours", "multi-head"),
    _e(graphsage, "torch_geometric", "graph", "edge-list", "mean-aggregation"),
    _e(gin, "torch_geometric", "graph", "edge-list", "sum-aggregation", "mlp-update"),
    _e(open_clip_vit, "open_clip", "multimodal", "two-towers", "causal-text", "logit-scale"),
    _e(open_clip_resnet, "open_clip", "multimodal", "two-towers", "modified-resnet", "attention-pool"),
    _e(x_decoder, "x_transformers", "decoder-llm", "rotary", "causal"),
    _e(x_encoder, "x_transformers", "encoder", "absolute-positions"),
    _e(x_vit, "x_transformers", "vision", "patch-embedding"),
    _e(x_encoder_decoder, "x_transformers", "encoder-decoder", "cross-attention", "autoregressive-wrapper"),
    _e(hf_dinov2, "transformers", "vision", "patch-embedding", "layer-scale", "interpolated-positions"),
    _e(hf_segformer, "transformers", "vision", "overlapping-patches", "spatial-reduction-attention", "mix-ffn"),
    _e(hf_modernbert, "transformers", "encoder", "rope", "alternating-local-global", "gated-mlp"),
    _e(hf_siglip, "transformers", "multimodal", "two-towers", "sigmoid-logits"),
    _e(hf_gpt_bigcode, "transformers", "decoder-llm", "multi-query-attention", "learned-positions"),
)
LIBRARIES = ("diffusers", "timm", "torchvision", "torch_geometric", "open_clip", "x_transformers", "transformers")


def entry(name: str) -> Entry:
    for e in SUITE:
        if e.name == name:
            return e
    raise KeyError(name)
