"""Input discovery: plain modules from their first layer, transformers models from config, checked by running them."""

import os
from types import SimpleNamespace

import discovery_runs
import pytest
import torch
from conftest import fixture_spec
from torch import nn
from torch.nn import functional as F

from atlas import i18n
from atlas.extract.discover import conv_limits
from atlas.extract.discover.discovery import HINTS, discover


def _found(model):
    d = discover(model)
    assert not d.unresolved, d.unresolved
    return d


def _meta(model, discovery=None):
    tried = discovery_runs.attempts(model, discovery, "meta")
    assert tried[-1].ok, [t.error for t in tried]
    return tried


# -- plain modules --------------------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 5)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_linear_first_module_gets_its_in_features_and_runs():
    d = _found(MLP())
    (x,) = d.inputs
    assert x.candidates == ("x:float32[B,3]", "x:float32[B,T,3]")
    assert "`fc1`" in x.because and "in_features = 3" in x.because and "required forward() parameter" in x.because
    run = _meta(MLP(), d)[-1]
    assert run.texts == ("x:float32[B,3]",) and run.outputs == (("output", ("3", "5")),)
    fake = discovery_runs.run(MLP(), run.texts, d.hints(), "fake")
    assert fake.ok and fake.outputs == (("output", ("B", "5")),) and fake.guards == 0


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 6)
        self.head = nn.Linear(6, 11)

    def forward(self, idx):
        h = self.emb(idx)
        return self.head(h)


def test_embedding_first_module_gets_integer_indices_in_range():
    d = _found(Tokens())
    (idx,) = d.inputs
    assert idx.text == "idx:int64[B,T]" and (idx.low, idx.high) == (0, 11)
    assert "num_embeddings = 11" in idx.because
    fake = discovery_runs.run(Tokens(), d.texts(), d.hints(), "fake")
    assert fake.outputs == (("output", ("B", "T", "11")),)


class Audio(nn.Module):
    """Two strided convs: kernel 10 stride 5, then kernel 3 stride 2."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(1, 4, kernel_size=10, stride=5)
        self.norm = nn.GroupNorm(2, 4)
        self.conv2 = nn.Conv1d(4, 4, kernel_size=3, stride=2)

    def forward(self, wave):
        return self.conv2(F.gelu(self.norm(self.conv1(wave))))


def test_conv_first_module_gets_channels_and_a_minimum_length():
    d = _found(Audio())
    assert d.texts() == ("wave:float32[B,1,T]",)
    bound = d.bound("T")
    # conv2 needs 3 positions in; conv1 gives 3 from (3 - 1) * 5 + 10 = 20 samples
    assert (bound.minimum, bound.hint) == (20, 30)          # 2 outputs of conv2 need 5 of conv1: (5 - 1) * 5 + 10
    assert d.hints()["T"] == 30
    ok = discovery_runs.run(Audio(), d.texts(), {"B": 3, "T": 20}, "meta")
    too_short = discovery_runs.run(Audio(), d.texts(), {"B": 3, "T": 19}, "meta")
    assert ok.ok and ok.outputs == (("output", ("3", "4", "1")),) and not too_short.ok
    fake = discovery_runs.run(Audio(), d.texts(), d.hints(), "fake")
    assert fake.outputs == (("output", ("B", "4", "((T//10)) - 1")),)     # ((T - 10)//5 + 1 - 3)//2 + 1


def test_conv2d_first_module_gets_height_and_width():
    net = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), nn.ReLU(), nn.Conv2d(8, 8, 2, stride=2), nn.Flatten())
    d = _found(net)
    assert d.texts() == ("input:float32[B,3,H,W]",)
    assert (d.bound("H").minimum, d.bound("W").minimum) == (8, 8)
    assert len(set(d.hints().values())) == 3 and min(d.hints().values()) > 1
    fake = discovery_runs.run(net, d.texts(), d.hints(), "fake")
    assert fake.outputs == (("output", ("B", "8*((H//8))*((W//8))")),)


def test_a_latent_vector_viewed_as_a_map_is_a_row_of_values():
    """A DCGAN generator views its latent `z` as [B, 12, 1, 1] (12 a module-level name) before a ConvTranspose2d:
    discovery offered [B, 12, H, W], the view failed ("invalid for input of size 12*B*H*W"), and nothing ran."""
    from atlas import pipeline
    from atlas.load import spec
    doc = pipeline.document(spec.load(fixture_spec("latent_generator")), pipeline.Settings())
    assert doc.inputs == ("z:float32[B,12]",)
    assert "view of it as `[B, 12, 1, 1]`" in str(doc.input_notes[0])
    assert [str(d.symbol or d.value) for d in doc.root.shapes.outputs[0].dims] == ["B", "3", "8", "8"]
    assert all(c.equations.verification.verified for c in doc.components)


class TeacherForced(nn.Module):
    """A decoder stepped over the target in Python, one column of it at a time: `tgt[:, t]`."""

    def __init__(self):
        super().__init__()
        self.src_embed, self.tgt_embed = nn.Embedding(50, 8), nn.Embedding(60, 8)
        self.cell, self.out = nn.GRUCell(8, 8), nn.Linear(8, 60)

    def forward(self, src, tgt):
        batch, steps = tgt.shape
        h = self.src_embed(src).mean(1)
        outputs = []
        for t in range(steps):
            h = self.cell(self.tgt_embed(tgt[:, t]), h)
            outputs.append(self.out(h))
        return torch.stack(outputs, 1)


def _timestep_features(t, dim):
    freqs = torch.exp(-torch.arange(dim // 2, dtype=torch.float32, device=t.device) / (dim // 2))
    args = t[:, None].float() * freqs[None]
    return torch.cat([args.cos(), args.sin()], -1)


class Denoiser(nn.Module):
    """A diffusion denoiser's (x, t), the timestep made into features by a plain function; and a padding mask."""

    def __init__(self):
        super().__init__()
        self.time, self.inp = nn.Linear(8, 4), nn.Linear(4, 4)

    def forward(self, x, t, pad_mask):
        h = self.inp(x) + self.time(_timestep_features(t, 8))[:, None]
        return h.masked_fill(pad_mask[..., None], 0.0)


def test_a_step_of_an_input_reaches_the_layer_it_feeds():
    """`tgt[:, t]` in a Python loop was no use of `tgt`: "no example input for `tgt`", and nothing ran."""
    d = _found(TeacherForced())
    assert d.texts() == ("src:int64[B,S]", "tgt:int64[B,T]")


def test_a_timestep_and_a_mask_no_layer_takes_are_known_by_their_names():
    """A timestep the code turns into features itself, and a mask it applies itself: no layer says their shapes,
    and the whole model went undescribed for want of them. By their names: one number per sample, and true or
    false per position."""
    d = _found(Denoiser())
    assert d.texts() == ("x:float32[B,4]", "t:float32[B]", "pad_mask:bool[B,T]")
    assert "timestep" in str(d.inputs[1].because) and "mask" in str(d.inputs[2].because)
    _meta(Denoiser(), d)


class SmallerTable(nn.Module):
    """A config whose vocab_size is larger than the table the ids are looked up in (PaliGemma's says 257152 where its
    text model has 1000 rows)."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(vocab_size=500)
        self.embed = nn.Embedding(100, 8)

    def get_input_embeddings(self):
        return self.embed

    def forward(self, input_ids):
        return self.embed(input_ids)


def test_token_ids_stay_below_the_rows_of_the_table_they_are_looked_up_in():
    d = _found(SmallerTable())
    assert d.texts() == ("input_ids:int64[B,T]",) and d.inputs[0].high == 100
    assert "model.get_input_embeddings().num_embeddings = 100" in str(d.inputs[0].because)


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8)) for _ in range(2)])

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return x


class Helper(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(7, 2)

    def forward(self, x, scale: float = 1.0):
        return self._project(x) * scale

    def _project(self, y):
        return self.proj(y)


class Functional(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(5, 9))

    def forward(self, x):
        return F.linear(x, self.weight)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x):
        B, T, C = x.size()
        return self.qkv(x).view(B, T, 3, C)


class DropFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.unused = nn.Linear(9, 9)             # first in module order: the source must win
        self.drop, self.act, self.fc = nn.Dropout(0.1), nn.GELU(), nn.Linear(6, 2)

    def forward(self, x):
        h = self.act(x)                          # layers that keep any shape pass the input on
        return self.fc(self.drop(h))


class ProjectThenAttend(nn.Module):
    """A Linear in front of torch's encoder and an LSTM, sequence first: its input is [T, B, 16], not [B, 16]
    (which torch takes as one unbatched sequence, B read as positions)."""

    def __init__(self, batch_first: bool = False):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=batch_first), 1,
                                         enable_nested_tensor=False)
        self.rnn = nn.LSTM(32, 32, batch_first=batch_first)

    def forward(self, src):
        return self.rnn(self.enc(self.inp(src)))[0]


class StagesByName(nn.ModuleDict):
    """A dict of stages run in order by its own forward, keeping some outputs by name (torchvision's
    IntermediateLayerGetter, which segmentation models run their backbone through)."""

    def __init__(self):
        super().__init__({"stem": nn.Conv2d(3, 8, 3), "body": nn.Conv2d(8, 16, 3)})

    def forward(self, x):
        out = {}
        for name, module in self.items():
            x = module(x)
            out[name] = x
        return out


class Segmenter(nn.Module):
    """The backbone's stages, then a head on its last: the head's conv (16 channels in) is not the first layer."""

    def __init__(self):
        super().__init__()
        self.backbone = StagesByName()
        self.head = nn.Conv2d(16, 4, 1)

    def forward(self, x):
        features = self.backbone(x)
        x = features["body"]                    # the name read next is the backbone's output, not the input
        return self.head(x)


@pytest.mark.parametrize("model, first", [
    (Segmenter(), "x:float32[B,3,H,W]"),                                  # a loop over a ModuleDict's items()
    (ProjectThenAttend(), "src:float32[T,B,16]"),
    (ProjectThenAttend(batch_first=True), "src:float32[B,T,16]"),
    (DropFirst(), "x:float32[B,6]"),
    (Blocks(), "x:float32[B,T,8]"),                                      # a loop over a ModuleList
    (Helper(), "x:float32[B,7]"),                                         # a helper method
    (Functional(), "x:float32[B,9]"),                                     # F.linear on a weight
    (Attention(), "x:float32[B,T,16]"),                                   # B, T, C = x.size() fixes the rank
    (nn.Sequential(nn.Flatten(), nn.Linear(784, 10)), "input:float32[B,784]"),
    (nn.LSTM(4, 6), "input:float32[T,B,4]"),                              # sequence first
    (nn.GRU(4, 6, batch_first=True), "input:float32[B,T,4]"),
])
def test_first_layer_through_the_code(model, first):
    d = _found(model)
    assert d.texts() == (first,)
    assert discovery_runs.run(model, d.texts(), d.hints(), "meta").ok


def test_torch_transformer_inputs_name_the_layer_each_reaches():
    """nn.Transformer as the model: `src` reaches the encoder's first layer, `tgt` the decoder's (it read
    `.encoder.layers.0` for both), and the two lengths are S and T."""
    d = _found(nn.Transformer(16, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, batch_first=True))
    src, tgt = d.inputs
    assert (src.text, tgt.text) == ("src:float32[B,S,16]", "tgt:float32[B,T,16]")
    assert "`encoder.layers.0`" in src.because and "`decoder.layers.0`" in tgt.because


def test_required_inputs_only_and_every_required_one():
    mha = nn.MultiheadAttention(12, 3)
    d = _found(mha)
    assert d.texts() == ("query:float32[T,B,12]", "key:float32[S,B,12]", "value:float32[S,B,12]")
    assert _found(Helper()).texts() == ("x:float32[B,7]",)                # `scale` has a default


def test_unresolved_inputs_say_why():
    class Scaled(nn.Module):
        def forward(self, x):
            return x * 2

    d = discover(Scaled())
    assert d.inputs == () and d.unresolved == (
        ("x", "`x` is a required forward() parameter, but no convention or layer says its shape"),)
    tried = discovery_runs.attempts(Scaled(), d)
    assert len(tried) == 1 and not tried[0].ok and tried[0].error.startswith("no example input for `x`")


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if (x > 0).any():                        # data-dependent: no value on meta or fake tensors
            return self.fc(x)
        return x


def test_data_dependent_branch_runs_on_fake_tensors_with_an_assumption():
    d = _found(Branchy())
    meta = discovery_runs.run(Branchy(), d.texts(), d.hints(), "meta")
    assert not meta.ok and "item() cannot be called on meta tensors" in meta.error
    strict = discovery_runs.run(Branchy(), d.texts(), d.hints(), "fake", assume=False)
    assert not strict.ok and strict.error.startswith("GuardOnDataDependentSymNode") and "test_discover.py:" in strict.error
    fake = discovery_runs.run(Branchy(), d.texts(), d.hints(), "fake")
    assert fake.ok and fake.outputs == (("output", ("B", "4")),)
    assert len(fake.assumed) == 1 and fake.assumed[0].startswith("Eq(u0, 1) = False (test_discover.py:")


def test_sentences_render_in_spanish():
    (x,) = _found(MLP()).inputs
    wave = _found(Audio())
    unresolved = discover(nn.Identity()).unresolved[0][1]
    with i18n.language("es"):
        assert i18n.render(x.because) == (
            "`x` es un parámetro obligatorio de forward(); según la primera capa a la que llega, `fc1`, "
            "Linear(in_features=3, out_features=3, bias=True): in_features = 3")
        assert i18n.render(wave.bound("T").because) == "2 convoluciones, núcleos 10,3, pasos 5,2 desde `conv1`"
        assert i18n.render(wave.dtype_because) == "los parámetros son float32"
        assert i18n.render(unresolved) == (
            "`input` es un parámetro obligatorio de forward(), pero ninguna convención ni capa indica su forma")
    assert i18n.render(x.because) == x.because == (       # English, the source, is the Text's own str
        "`x` is a required forward() parameter; from the first layer it reaches `fc1`, "
        "Linear(in_features=3, out_features=3, bias=True): in_features = 3")
    assert wave.bound("T").because == "2 convs, kernels 10,3, strides 5,2 from `conv1`"


def _length_out(stack, length: int) -> int:
    """The stack's output length for an input of `length`, by torch's formula for each conv."""
    for layer in stack.layers:
        length = (length + 2 * layer.padding - layer.dilation * (layer.kernel - 1) - 1) // layer.stride + 1
    return length


def test_conv_stack_minimum_matches_wav2vec2():
    layers = tuple(conv_limits.Layer(str(i), k, s, 1, 0)
                   for i, (k, s) in enumerate(zip((10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2))))
    stack = conv_limits.Stack(layers)
    assert stack.minimum(1) == 400 and _length_out(stack, 400) == 1 and _length_out(stack, 399) == 0
    assert stack.minimum(2) == 720 and _length_out(stack, 720) == 2 and stack.stride() == 320
    assert stack.describe() == "7 convs, kernels 10,3,3,3,3,2,2, strides 5,2,2,2,2,2,2"
    assert conv_limits.Stack(layers[:1]).describe() == "1 conv, kernel 10, stride 5"


class _GatedSubsampler(nn.Module):
    """Speech2Text's subsampler: each conv doubles the channels, a GLU halves them, the next conv takes the half."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(8, 16, 5, stride=2, padding=2), nn.Conv1d(8, 16, 5, stride=2, padding=2)])

    def forward(self, x):
        for conv in self.convs:
            x = F.glu(conv(x), dim=1)
        return x


class _ResidualDown(nn.Module):
    """A residual block whose shortcut conv takes the block's input, half the channels its last conv gives."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.down = nn.Sequential(nn.Conv2d(4, 8, 1, stride=2))


def test_a_conv_stack_goes_on_through_a_gate_that_halves_the_channels():
    """The total stride of a gated stack is every conv's: a length 60 positions long after it is 240 frames long,
    where the stack that stopped at the first conv read 120 ('the conv strides (2)'). A shortcut conv beside a block
    is no next layer."""
    stack = conv_limits.stack(_GatedSubsampler(), 1)
    assert [layer.path for layer in stack.layers] == ["convs.0", "convs.1"] and stack.stride() == 4
    assert _length_out(stack, 240) == 60 and _length_out(stack, 236) == 59
    assert [layer.path for layer in conv_limits.stack(_ResidualDown(), 2).layers] == ["conv1", "conv2"]


# -- transformers models from config ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hf_suite():
    pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from fixtures import hf_suite
    return hf_suite


@pytest.fixture
def build(hf_suite):
    def build(name):
        with torch.device("meta"):
            return hf_suite.entry(name).factory()
    return build


def test_suite_covers_every_kind_with_features_on(hf_suite, build):
    assert len(hf_suite.SUITE) >= 24 and len({e.name for e in hf_suite.SUITE}) == len(hf_suite.SUITE)
    assert {e.kind for e in hf_suite.SUITE} == set(hf_suite.KINDS)
    for e in hf_suite.SUITE:
        assert e.kind in hf_suite.KINDS and e.features, e.name
        cfg = build(e.name).config
        if "gqa" in e.features:
            kv = getattr(cfg, "num_key_value_heads", None) or cfg.num_kv_heads      # Falcon's name
            assert kv < cfg.num_attention_heads, e.name
        if "sliding-window" in e.features:
            assert cfg.sliding_window < HINTS["T"], e.name
        if "softcap" in e.features:
            assert cfg.attn_logit_softcapping and cfg.final_logit_softcapping, e.name
        if "experts" in e.features:
            experts = getattr(cfg, "num_local_experts", None) or cfg.num_experts
            assert experts >= 4 and cfg.num_experts_per_tok >= 2, e.name


@pytest.mark.parametrize("name, texts, out", [
    ("llama", ("input_ids:int64[B,T]",), ("logits", ("3", "17", "128"))),
    ("t5", ("input_ids:int64[B,S]", "decoder_input_ids:int64[B,T]"), ("logits", ("3", "17", "128"))),
    ("vit", ("pixel_values:float32[B,3,32,32]",), ("last_hidden_state", ("3", "17", "64"))),
    ("convnext", ("pixel_values:float32[B,3,H,W]",), ("last_hidden_state", ("3", "64", "5", "7"))),
    # a video model: config.num_frames images of 4x4 patches, one class token
    ("timesformer", ("pixel_values:float32[B,4,3,32,32]",), ("last_hidden_state", ("3", "65", "64"))),
    ("whisper", ("input_features:float32[B,16,32]", "decoder_input_ids:int64[B,T]"), ("logits", ("3", "17", "128"))),
    ("wav2vec2", ("input_values:float32[B,T]",), ("last_hidden_state", ("3", "2", "64"))),
])
def test_discovered_inputs_run_on_meta(build, name, texts, out):
    model = build(name)
    d = _found(model)
    run = _meta(model, d)[-1]
    assert run.texts == texts and run.outputs[0] == out


def test_wav2vec2_frames_are_an_expression_of_T(build):
    model = build("wav2vec2")
    d = _found(model)
    assert (d.bound("T").minimum, d.hints()["T"]) == (400, 720)
    assert "kernels 10,3,3,3,3,2,2, strides 5,2,2,2,2,2,2" in d.inputs[0].because
    fake = discovery_runs.run(model, d.texts(), d.hints(), "fake")
    assert fake.ok and fake.outputs[0] == ("last_hidden_state", ("B", "((((((((T//80)) - 3)//2)) - 1)//2)) + 1", "64"))
    assert fake.ranges == ("720 <= T",)                    # every conv output has at least 2 frames at the hint


def test_mixtral_default_dtype_fails_on_meta_and_runs_in_bfloat16(build):
    model = build("mixtral")
    d = _found(model)
    assert (d.dtype, d.retry_dtypes) == ("float32", ("bfloat16",))
    first, retry = _meta(model, d)
    assert not first.ok and "Expected inputs of BF16 type" in first.error and "(moe.py:" in first.error
    assert retry.dtype == "bfloat16" and retry.outputs == (("logits", ("3", "17", "128")),)
    assert next(model.parameters()).dtype == torch.float32            # the retry ran on a copy
    declared = discover(build("mixtral_bf16_declared"))
    assert declared.retry_dtypes == ("bfloat16",) and "config.dtype declares bfloat16" in declared.dtype_because


def test_bart_needs_fake_tensors_not_the_cpu(build):
    model = build("bart")
    d = _found(model)
    meta = discovery_runs.run(model, d.texts(), d.hints(), "meta")
    assert not meta.ok and meta.error.endswith("(masking_utils.py:292)")
    fake = discovery_runs.run(model, d.texts(), d.hints(), "fake")
    assert fake.ok and fake.outputs[0] == ("logits", ("B", "T", "128"))


def test_an_encoder_decoder_keeps_source_and_target_lengths_apart(build):
    """The source side runs over S, the target side over T (torch.nn.Transformer's names): one T for both would tie
    the lengths, and a cross-attention's T x S scores would read T x T."""
    model = build("bart")
    d = _found(model)
    assert d.texts() == ("input_ids:int64[B,S]", "decoder_input_ids:int64[B,T]")
    assert (d.bound("S").maximum, d.bound("T").maximum) == (256, 256)           # config.max_position_embeddings
    assert d.hints()["S"] != d.hints()["T"]
    fake = discovery_runs.run(model, d.texts(), d.hints(), "fake")
    assert fake.ok and dict(fake.outputs)["encoder_last_hidden_state"] == ("B", "S", "64")
    assert dict(fake.outputs)["logits"] == ("B", "T", "128")


def test_src_and_tgt_of_a_plain_module_get_their_own_lengths():
    from fixtures.contractions import seq2seq
    d = _found(seq2seq())
    assert d.texts() == ("src:int64[B,S]", "tgt:int64[B,T]")
    assert _meta(seq2seq(), d)[-1].outputs == (("output", ("3", "17", "60")),)


class Stereo(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 4, kernel_size=5, stride=2)

    def forward(self, input_values):
        return self.conv(input_values)


def test_usual_name_with_the_layout_the_first_conv_takes():
    d = _found(Stereo())
    assert d.inputs[0].candidates == ("input_values:float32[B,T]", "input_values:float32[B,2,T]")
    first, second = _meta(Stereo(), d)
    assert not first.ok and second.texts == ("input_values:float32[B,2,T]",)
    assert second.outputs == (("output", ("3", "4", "7")),)          # (17 - 5) // 2 + 1


def test_multimodal_model_gets_the_second_input_after_a_failed_run(hf_suite):
    from transformers import CLIPConfig, CLIPModel
    small = dict(hidden_size=32, intermediate_size=64, num_attention_heads=2, num_hidden_layers=1)
    cfg = CLIPConfig(text_config=dict(small, vocab_size=99, max_position_embeddings=32),
                     vision_config=dict(small, image_size=16, patch_size=8), projection_dim=16)
    with torch.device("meta"):
        model = CLIPModel(cfg)
    d = _found(model)
    assert d.texts() == ("input_ids:int64[B,T]",)
    tried = _meta(model, d)
    assert "NoneType" in tried[0].error                                  # no pixel_values
    assert tried[-1].texts == ("input_ids:int64[B,T]", "pixel_values:float32[B,3,16,16]")
    assert ("logits_per_image", ("3", "3")) in tried[-1].outputs


class _TextAndVisionTables(nn.Module):
    """A text model's 4 positions listed before a vision model's table of 4 patches and a class token."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(image_size=16, patch_size=8, num_channels=3)
        self.text_pos = nn.Embedding(4, 8)
        self.vision = nn.Module()
        self.vision.patch = nn.Conv2d(3, 8, 8, 8)
        self.vision.pos = nn.Parameter(torch.zeros(1, 5, 8))

    def forward(self, pixel_values):
        return self.vision.patch(pixel_values).flatten(2).transpose(1, 2) + self.vision.pos[:, 1:]


def test_the_image_size_is_tied_to_the_table_beside_the_patch_embedding():
    """SigLIP's note named its text table (listed first, as many rows as the vision table's 16 patches) as the one
    with a row per 8x8 patch: the table nearest the first conv in the module tree is named, whatever its rows."""
    d = _found(_TextAndVisionTables())
    assert d.inputs[0].candidates[0] == "pixel_values:float32[B,3,16,16]"
    assert d.inputs[0].because.endswith("16x16 fixed by config.image_size, since `vision.pos` has one row per 8x8 "
                                        "patch")


class _OverlappingPatches(nn.Module):
    """A patch embedding whose 7x7 kernels move 4 pixels at a time (Hiera's): a 32x32 image makes 8x8 tokens, one
    per 4x4 patch, and the table has a row for each; patch_size is the kernel's, 7."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(image_size=32, patch_size=7, num_channels=3)
        self.patch = nn.Conv2d(3, 8, 7, stride=4, padding=3)
        self.pos_embed = nn.Parameter(torch.zeros(1, 64, 8))

    def forward(self, pixel_values):
        return self.patch(pixel_values).flatten(2).transpose(1, 2) + self.pos_embed


def test_a_table_per_patch_embedding_stride_fixes_the_image_size():
    """The table's rows count the patch embedding's grid, its stride (4), not config.patch_size (7, its kernel):
    the image size is fixed by it, where the note said "any height and width (no position table ...)" and the
    model then failed at H x W."""
    d = _found(_OverlappingPatches())
    assert d.inputs[0].candidates[0] == "pixel_values:float32[B,3,32,32]"
    assert d.inputs[0].because.endswith("32x32 fixed by config.image_size, since `pos_embed` has one row per 4x4 "
                                        "patch")


def test_a_vision_encoder_decoder_reads_its_encoders_config(hf_suite):
    """VisionEncoderDecoder keeps the image size in config.encoder: found there, and named so (it ran at no size
    and nothing was derived)."""
    from transformers import GPT2Config, VisionEncoderDecoderConfig, VisionEncoderDecoderModel, ViTConfig
    vit = ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, image_size=16,
                    patch_size=8)
    gpt2 = GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=64, n_positions=32, add_cross_attention=True,
                      is_decoder=True)
    with torch.device("meta"):
        model = VisionEncoderDecoderModel(VisionEncoderDecoderConfig.from_encoder_decoder_configs(vit, gpt2))
    d = _found(model)
    assert d.texts() == ("pixel_values:float32[B,3,16,16]", "decoder_input_ids:int64[B,T]")
    assert "config.encoder.image_size" in d.inputs[0].because
    assert _meta(model, d)[-1].ok


def test_windows_raise_the_positions_hint(hf_suite):
    from transformers import MistralConfig, MistralForCausalLM
    with torch.device("meta"):
        model = MistralForCausalLM(MistralConfig(num_hidden_layers=1, hidden_size=32, intermediate_size=64,
                                                 num_attention_heads=2, num_key_value_heads=1, vocab_size=50,
                                                 sliding_window=40, max_position_embeddings=64))
    d = _found(model)
    assert (d.bound("T").hint, d.bound("T").maximum, d.hints()["T"]) == (80, 64, 64)   # capped by the positions


def test_a_product_with_a_weight_matrix_is_the_first_layer():
    """`(2 pi coords) @ self.B_mat` comes before any layer: discovery took the first Linear in module order
    ([B, T, 32]), with which forward() failed; the matrix's 2 rows give the input's width."""
    from atlas import pipeline
    from atlas.load import spec
    doc = pipeline.document(spec.load(fixture_spec("fourier_features")), pipeline.Settings())
    assert doc.inputs == ("coords:float32[B,2]",)
    assert all(c.equations.verification.verified for c in doc.components)


def test_a_spectrogram_under_the_waveforms_name(hf_suite):
    """The Audio Spectrogram Transformer calls its [B, frames, mel bins] input `input_values`, the name of a raw
    waveform elsewhere; it has no 1-D conv to take samples. Taken for a waveform, [B, T] stopped its forward()
    and nothing was derived."""
    from transformers import ASTConfig, ASTForAudioClassification

    from atlas import pipeline
    from atlas.load import spec
    cfg = ASTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                    patch_size=16, max_length=64, num_mel_bins=32, frequency_stride=10, time_stride=10)
    with torch.device("meta"):
        model = ASTForAudioClassification(cfg)
    doc = pipeline.document(spec.Loaded("ast", model, None), pipeline.Settings())
    assert doc.inputs == ("input_values:float32[B,64,32]",)
    assert "config.num_mel_bins = 32" in str(doc.input_notes) and doc.forward_failure is None
    assert all(c.equations.verification.verified for c in doc.components)


def test_optional_inputs_the_code_reaches_in_turn_are_added_in_turn(hf_suite):
    """A Decision Transformer's forward() takes states, actions, returns and timesteps, all None by default, and
    stops at each in turn on a line that names the next (no error message names one): each is added where its
    line stops the run, and the four run as sequences."""
    from transformers import DecisionTransformerConfig, DecisionTransformerModel

    from atlas import pipeline
    from atlas.load import spec
    cfg = DecisionTransformerConfig(state_dim=11, act_dim=3, hidden_size=32, n_layer=1, n_head=2, max_ep_len=64,
                                    n_positions=64, vocab_size=10)
    with torch.device("meta"):
        model = DecisionTransformerModel(cfg)
    doc = pipeline.document(spec.Loaded("dt", model, None), pipeline.Settings(verify=False))
    assert doc.inputs == ("states:float32[B,T,11]", "actions:float32[B,T,3]", "returns_to_go:float32[B,T,1]",
                          "timesteps:int64[B,T]")
    assert doc.forward_failure is None and all(c.shapes.inputs for c in doc.components)


def test_a_forecaster_with_lags_gets_its_past_from_the_config(hf_suite):
    """transformers' time-series transformers take the past as context_length steps and the largest lag before
    them; no convention said so, and their three required inputs were unresolved."""
    from transformers import TimeSeriesTransformerConfig, TimeSeriesTransformerModel

    from atlas import pipeline
    from atlas.load import spec
    cfg = TimeSeriesTransformerConfig(prediction_length=4, context_length=8, input_size=2, lags_sequence=[1, 3],
                                      num_time_features=2, d_model=16, encoder_layers=1, decoder_layers=1,
                                      encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=16,
                                      decoder_ffn_dim=16)
    with torch.device("meta"):
        model = TimeSeriesTransformerModel(cfg)
    doc = pipeline.document(spec.Loaded("tst", model, None), pipeline.Settings())
    assert doc.inputs == ("past_values:float32[B,11,2]", "past_time_features:float32[B,11,2]",
                          "past_observed_mask:float32[B,11,2]")
    assert "11 (config.context_length = 8 + max(config.lags_sequence) = 3)" in str(doc.input_notes[0])
    assert doc.forward_failure is None and all(c.equations.verification.verified for c in doc.components)


def test_a_bound_on_the_source_length_is_stated_on_s(hf_suite):
    """An encoder-decoder's source length is S once the target side takes T; the sentence that says where the
    waveform's bound came from said "set T >= 400", a symbol its input no longer has."""
    from transformers import SpeechT5Config, SpeechT5ForSpeechToText
    cfg = SpeechT5Config(vocab_size=100, hidden_size=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                         decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16)
    with torch.device("meta"):
        model = SpeechT5ForSpeechToText(cfg)
    d = _found(model)
    assert d.texts() == ("input_values:float32[B,S]", "decoder_input_ids:int64[B,T]")
    because = str(d.inputs[0].because)
    assert "set S >= 400" in because and "T >=" not in because
    assert d.bound("S").minimum == 400 and (d.bound("T") is None or d.bound("T").minimum != 400)
    with i18n.language("es"):
        assert "S >= 400" in i18n.render(d.inputs[0].because)


def test_a_text_and_audio_model_gets_a_spectrogram_image_and_lengths_of_its_own():
    """CLAP's audio tower reads `input_features` as a one-channel image of frames by mel bins, [B, 1, frames, 16]:
    discovery offered [B, 16, T] and [B, T, 16] only, and no forward ran ("'NoneType' object has no attribute
    'transpose'"), 0 of 89 components. Its frames are a length of their own (S), not the text's positions (T).

    Its config states the text's 64 positions in its text part alone (`text_config.max_position_embeddings`): the
    model page's context and the size costs are counted at say so (they read T = 1024, past the table's rows), and
    the token ids' note names the field the vocabulary was read from. The text's limit does not bound the frames."""
    pytest.importorskip("transformers")
    from conftest import ROOT

    from atlas import pipeline
    from atlas.load import spec
    doc = pipeline.document(spec.load(f"{ROOT / 'tests' / 'fixtures' / 'hf_models.py'}:clap"),
                            pipeline.Settings(verify=False))
    assert [(t.value, t.source) for t in doc.architecture.context] == [(64, "text_config.max_position_embeddings")]
    reference = dict(doc.cost_summary.reference)
    assert reference["T"] == 64 and reference["S"] > 64
    assert "config.text_config.vocab_size = 128" in str(doc.input_notes[0])
    assert doc.forward_failure is None
    assert doc.inputs == ("input_ids:int64[B,T]", "input_features:float32[B,1,S,16]")
    assert all(c.shapes.status.value == "derived" for c in doc.components)
    text, audio = doc.component("text_projection"), doc.component("audio_projection")
    assert [str(d.symbol or d.value) for d in text.shapes.outputs[0].dims] == ["B", "32"]
    assert [str(d.symbol or d.value) for d in audio.shapes.outputs[0].dims] == ["B", "32"]


class MemoryAttention(nn.Module):
    """Queries 64 wide attending to a memory 32 wide, of a length of its own (nn.MultiheadAttention's kdim, vdim)."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(64, 4, kdim=32, vdim=32, batch_first=True)

    def forward(self, x, memory):
        return self.attn(x, memory, memory)[0]


def test_keys_and_values_take_kdim_and_vdim_and_a_length_of_their_own():
    """What is attended to is as wide as kdim and vdim say, S positions long (it was given embed_dim, and the
    forward failed: "expecting key weights shape of (64, 64)")."""
    d = _found(MemoryAttention())
    assert d.texts() == ("x:float32[B,T,64]", "memory:float32[B,S,32]")
    assert "kdim = 32" in d.inputs[1].because
    assert _found(nn.MultiheadAttention(8, 2, kdim=4, vdim=6)).texts() == (
        "query:float32[T,B,8]", "key:float32[S,B,4]", "value:float32[S,B,6]")
    assert _meta(MemoryAttention())


class PaddedSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, ids, pad_mask):
        x = self.emb(ids)
        return self.attn(x, x, x, key_padding_mask=pad_mask)[0]


def test_a_padding_mask_spans_the_keys_and_they_may_be_the_queries():
    """nn.MultiheadAttention's padding mask spans its keys: S positions first; where the keys are the queries,
    as in self-attention, the mask over S fails and the one over T is taken, and the model's page says so."""
    from atlas import pipeline
    from atlas.load import spec
    d = _found(PaddedSelfAttention())
    assert d.choices()[:2] == [("ids:int64[B,T]", "pad_mask:bool[B,S]"), ("ids:int64[B,T]", "pad_mask:bool[B,T]")]
    doc = pipeline.document(spec.Loaded("inline", PaddedSelfAttention(), None), pipeline.Settings(cost=False))
    mask = doc.root.shapes.inputs[1]
    assert (mask.name, [x.symbol for x in mask.dims]) == ("pad_mask", ["B", "T"])
    assert any("pad_mask:bool[B,S], with which forward() failed" in str(n) for n in doc.input_notes)
    assert doc.component("attn").equations.status.name == "DERIVED"


class ReshapedFunctional(nn.Module):
    """A layer of raw weights (a KAN layer's): its input reshaped to rows of in_features, then F.linear."""

    def __init__(self, i: int = 4, o: int = 3):
        super().__init__()
        self.in_features = i
        self.weight = nn.Parameter(torch.randn(o, i))

    def forward(self, x):
        x = x.reshape(-1, self.in_features)
        return F.linear(x, self.weight)


class ReshapedFunctionals(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([ReshapedFunctional()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_a_view_before_a_functional_call_names_the_call():
    """The code's view of an input before F.linear on a weight of its own (it crashed: the view's sentence read the
    layer's name off a module, and a functional call has none)."""
    d = _found(ReshapedFunctionals())
    assert d.texts() == ("x:float32[B,4]",)
    assert "before F.linear in `layers.0`: 4 values a batch row" in str(d.inputs[0].because)
    assert _found(ReshapedFunctional()).texts() == ("x:float32[B,4]",)
