"""torch.nn reference pages: one per class the models use, generated from the real class, examples executed,
math verified, in English and Spanish; the cross-model index."""

import re

import pytest
import torch
from torch import nn

from atlas import pipeline
from atlas.analyse.reference import class_pages, class_uses, example_runs
from atlas.errors import AtlasError
from atlas.extract import small_instances
from atlas.render import reference_pages
from atlas.render.latex import latex


@pytest.fixture(scope="module")
def gpt2():
    from atlas import pipeline
    from atlas.load import spec
    loaded = spec.load("atlas.zoo.gpt2:gpt2_small")
    return pipeline.document(loaded, pipeline.Settings(cost=False)), loaded.model


@pytest.fixture(scope="module")
def models(ldlm_doc, gpt2):
    from atlas.load import spec
    return [(ldlm_doc, spec.load(spec.DEFAULT_SPEC).model), gpt2]


@pytest.fixture(scope="module")
def built(models):
    return pipeline.references([doc for doc, _ in models])


@pytest.fixture(scope="module")
def refs(built):
    return {r.slug: r for r in built[0]}


@pytest.fixture(scope="module")
def files(built, models):
    from atlas.render import model_pages
    refs, index = built
    return reference_pages.render(refs, index, [d for d, _ in models], model_pages.environment())


@pytest.fixture(scope="module")
def conv2d(built, models):
    """A class no model here uses, generated and rendered the same way: nothing about it is written by hand."""
    from atlas.render import model_pages
    ref = pipeline.reference_page(nn.Conv2d)
    return ref, reference_pages.render([ref], built[1], [d for d, _ in models], model_pages.environment())


def test_every_class_of_ldlm_and_gpt2_has_a_page_in_both_languages(models, files):
    used = {class_uses.torch_class(type(m)) for _, model in models for m in model.modules()} - {None}
    assert {c.__name__ for c in used} == {"Dropout", "Embedding", "GELU", "LayerNorm", "Linear", "ModuleList", "SiLU"}
    for cls in used:
        for suffix in (".md", ".es.md"):
            assert f"reference/{cls.__name__.lower()}{suffix}" in files, cls
    # and the classes their comparison tables name
    pages = {p.split("/")[1].split(".")[0] for p in files}
    assert pages == {"index", "batchnorm1d", "dropout", "embedding", "gelu", "groupnorm", "instancenorm1d",
                     "layernorm", "linear", "modulelist", "relu", "rmsnorm", "silu", "tanh"}


def test_a_generated_page_has_signature_parameters_example_and_verified_math(conv2d):
    ref, files = conv2d
    page = files["reference/conv2d.md"]
    assert ref.call == "nn.Conv2d(in_channels=3, out_channels=4, kernel_size=2)"
    assert "```python\ntorch.nn.Conv2d(\n    in_channels,\n    out_channels,\n    kernel_size,\n    stride=1,\n" in page
    # parameters and their words from the docstring, each default stated once
    assert "- **`in_channels`** (int), required: Number of channels in the input image" in page
    assert "- **`stride`** (int or tuple), default `1`: Stride of the convolution.\n" in page
    assert "- **`padding_mode`** (str), default `'zeros'`: `'zeros'`, `'reflect'`, `'replicate'` or `'circular'`.\n" \
        in page
    assert "Default" not in page.split("## Parameters")[1].split("##")[0]
    # the example ran, and its captured output is on the page: (6 - 2 + 1) = 5
    assert "layer = nn.Conv2d(in_channels=3, out_channels=4, kernel_size=2)\n" in page
    assert "x = torch.randn(2, 3, 6, 6)" in page
    assert "input shape: (2, 3, 6, 6)\noutput shape: (2, 4, 5, 5)\nparameters: 52" in page
    # shapes and math of the same instance, verified against forward()
    assert "**in:** `input` [B batch, 3, H height, W width]" in page
    assert "**out:** `output` [B batch, 4, H - 1 height, W - 1 width]" in page
    assert ref.equations.verification.verified and "**Verified:**" in page
    assert page.count("$$") == 2


def test_the_spanish_example_is_written_and_run_in_spanish(conv2d):
    _, files = conv2d
    page = files["reference/conv2d.es.md"]
    code = page.split("### Con una entrada pequeña")[1].split("```python\n")[1].split("```")[0]
    assert "# los argumentos obligatorios, pequeños; los demás conservan sus valores por defecto\n" in code
    assert "# forma (B, 3, H, W) con B = 2, H = 6, W = 6\n" in code
    assert 'print("forma de la salida:", tuple(y.shape))' in code
    words = example_runs.texts(code)          # every comment and printed string
    english = r"\b(shape|input|output|arguments?|parameters?)\b"
    assert len(words) == 5 and not any(re.search(english, w) for w in words), words
    assert "forma de la entrada: (2, 3, 6, 6)\nforma de la salida: (2, 4, 5, 5)\nparámetros: 52" in page
    assert "- **`stride`** (int o tuple), por defecto `1`: Paso de la convolución." in page


def test_data_file_examples_speak_the_page_language(files, refs):
    spanish = files["reference/layernorm.es.md"]
    assert "x = torch.randn(4, 10)          # lote de 4, 10 características" in spanish
    assert 'print("media de cada fila:", ' in spanish and "media de cada fila: [0.0, 0.0, 0.0, 0.0]" in spanish
    assert "forma de la salida: (4, 100, 512)" in spanish
    english = files["reference/layernorm.md"]
    assert "x = torch.randn(4, 10)          # batch of 4, 10 features" in english
    out = {e.title: e.output_in("en") for e in refs["layernorm"].examples}
    assert out["3D and 4D inputs"] == "3D: (2, 10, 64) -> (2, 10, 64)\n4D: (2, 8, 8, 128) -> (2, 8, 8, 128)"
    assert "parameters: 0" in out["Without learned parameters"]


def test_relu_page_is_generated_with_verified_math(files, refs):
    ref = refs["relu"]
    assert class_pages.load_data(nn.ReLU) == {} and ref.used_in == ()
    page = files["reference/relu.md"]
    from conftest import page_math
    assert r"y &= \max\left(x, 0\right)" in page_math(page) or "max" in page_math(page)
    assert ref.equations.verification.verified
    assert "input shape: (2, 5)\noutput shape: (2, 5)\nparameters: 0" in page
    assert "No documented model uses it: its page is here for the comparison table above." in page


def test_signatures_fit_beside_the_copy_button(refs):
    for ref in refs.values():
        assert max(len(line) for line in ref.signature.splitlines()) <= class_pages.SIGNATURE_WIDTH, ref.cls
    assert refs["layernorm"].signature == ("torch.nn.LayerNorm(\n    normalized_shape,\n    eps=1e-05,\n"
                                           "    elementwise_affine=True,\n    bias=True,\n)")
    assert refs["gelu"].signature == "torch.nn.GELU(approximate='none')"


def test_defaults_are_stated_once(files):
    page = files["reference/layernorm.md"]
    assert "- **`eps`**, default `1e-05`: a value added to the denominator for numerical stability.\n" in page
    assert "Default" not in page.split("## Parameters")[1].split("##")[0]


def test_rmsnorm_is_in_the_normalization_comparison(files, refs):
    page = files["reference/layernorm.md"]
    table = page.split("## Normalization layers compared")[1].split("##")[0]
    rows = [line.split(" | ")[0].strip("| ") for line in table.strip().splitlines()[2:]]
    # class names as words (not inline code, which the theme breaks anywhere in a narrow column)
    assert rows == ["[BatchNorm1d](batchnorm1d.md)", "**LayerNorm**", "[RMSNorm](rmsnorm.md)",
                    "[InstanceNorm1d](instancenorm1d.md)", "[GroupNorm](groupnorm.md)"]
    assert "| [RMSNorm](rmsnorm.md) | the last dimensions of each sample, without centring | no |" in page
    assert "| [RMSNorm](rmsnorm.md) | las últimas dimensiones de cada muestra, sin centrar | no |" in \
        files["reference/layernorm.es.md"]
    # RMSNorm's own page, with torch's default eps=None: the machine epsilon, verified
    rms = refs["rmsnorm"]
    assert rms.equations.verification.verified and latex(rms.equations.notations[0][0]) == r"\epsilon_{\mathrm{mach}}"


def test_used_in_and_links(refs, files):
    used = {(u.slug, u.component): u.instances for u in refs["layernorm"].used_in}
    assert used[("ldlm", "latent_encoder.blocks.mlp.layer_norm")] == 6
    assert used[("ldlm", "frozen_lm.transformer.h.ln_1")] == 12 and used[("gpt-2", "transformer.h.ln_1")] == 12
    page = files["reference/layernorm.md"]
    assert ("- [LDLM › LayerNorm](../ldlm/latent_encoder/blocks/mlp/layer_norm.md) "
            "`latent_encoder.blocks.mlp.layer_norm`, ×\u00a06\n") in page
    assert "- [GPT-2 › ln\\_f](../gpt-2/transformer/ln_f.md) `transformer.ln_f`, ×\u00a01\n" in page


def test_a_container_has_an_honest_page(refs, files):
    ref = refs["modulelist"]
    assert ref.call is None and not ref.examples and ref.signature == "torch.nn.ModuleList(modules=None)"
    page = files["reference/modulelist.md"]
    assert "*No equations and no example:* it has no forward() of its own (calling it raises " \
           "NotImplementedError)" in page
    assert "- [GPT-2 › GPT-2 trunk](../gpt-2/transformer/index.md) holds `h`: 12\u00a0× " \
           "[Transformer block](../gpt-2/transformer/h/index.md)\n" in page
    holders = {(u.slug, u.component, u.attribute): u.held for u in ref.used_in}
    assert holders[("ldlm", "latent_encoder", "blocks")] == (("latent_encoder.blocks", "Encoder block", 6),)


def test_the_index_lists_each_class_and_kind_with_its_components(files, built):
    page = files["reference/index.md"]
    layernorm = page.split("### [`torch.nn.LayerNorm`](layernorm.md)")[1].split("###")[0]
    assert ("- [LDLM › LayerNorm](../ldlm/latent_encoder/blocks/mlp/layer_norm.md) "
            "`latent_encoder.blocks.mlp.layer_norm`, ×\u00a06\n") in layernorm
    assert "- [GPT-2 › LN 1](../gpt-2/transformer/h/ln_1.md) `transformer.h.ln_1`, ×\u00a012\n" in layernorm
    kinds = {k.key: k for k in built[1].kinds}
    assert list(kinds) == ["attention/multi-head", "attention/multi-head+qk-norm+softcap", "norm/layer", "norm/rms"]
    perceiver = {m.component for m in kinds["attention/multi-head+qk-norm+softcap"].members}
    assert perceiver == {"latent_encoder.blocks.attn", "latent_decoder.blocks.attn"}
    rms = kinds["norm/rms"].members
    assert {m.cls.rsplit(".", 1)[-1] for m in rms} == {"ScaledRMSNorm"} and len(rms) == 11
    assert "### Multi-head attention, with query and key normalization and a logit softcap" in page
    assert ("`latent_encoder.blocks.attn`, `PerceiverAttention`, ×\u00a06: 12 heads of 64 features") in page
    assert ("- [LDLM › LayerNorm](../ldlm/latent_encoder/blocks/mlp/layer_norm.md) "
            "`latent_encoder.blocks.mlp.layer_norm`, [`LayerNorm`](layernorm.md), ×\u00a06\n") in page
    spanish = files["reference/index.es.md"]
    assert "# Capas en todos los modelos" in spanish and "### Normalización RMS" in spanish
    assert "Qué componentes de los 2 modelos de este sitio (LDLM, GPT-2)" in spanish


def test_nav_starts_with_the_index(built):
    from atlas import i18n
    refs, _ = built
    with i18n.language("es"):
        (section,) = reference_pages.nav(refs)
    assert list(section) == ["Referencia"]
    entries = section["Referencia"]
    assert entries[0] == "reference/index.md" and entries[1] == {"torch.nn.BatchNorm1d": "reference/batchnorm1d.md"}
    assert len(entries) == 1 + len(refs)


def test_a_class_outside_the_catalog_keeps_torchs_words_marked(built, models):
    from atlas.render import model_pages
    ref = pipeline.reference_page(nn.Softsign)
    files = reference_pages.render([ref], built[1], [d for d, _ in models], model_pages.environment())
    assert "(en inglés: la documentación de torch no tiene traducción aquí)" in files["reference/softsign.es.md"]
    assert "(in English" not in files["reference/softsign.md"]


def test_a_class_without_small_arguments_says_so():
    ref = pipeline.reference_page(nn.TransformerEncoder)
    assert ref.call is None and not ref.examples
    assert "no small integer arguments construct it and run its forward()" in ref.reason
    assert "int is not a Module subclass" in ref.reason


def test_small_arguments_are_the_first_that_construct_and_run():
    assert small_instances.build(nn.Linear).call == "nn.Linear(in_features=3, out_features=4)"
    assert small_instances.build(nn.GroupNorm).call == "nn.GroupNorm(num_groups=3, num_channels=6)"
    assert small_instances.build(nn.MultiheadAttention).call == "nn.MultiheadAttention(embed_dim=4, num_heads=2)"
    emb = small_instances.build(nn.Embedding)
    assert [(i.text, i.sizes, i.low, i.high) for i in emb.inputs] == [("input:int64[B,T]", (2, 5), 0, 3)]


def test_generation_is_deterministic():
    first, second = pipeline.reference_page(nn.Embedding), pipeline.reference_page(nn.Embedding)
    assert first.examples == second.examples and first.equations == second.equations


def test_an_example_that_raises_fails():
    with pytest.raises(AtlasError, match="the example raised ZeroDivisionError"):
        example_runs.run("print(1 / 0)", "test example")


def test_localized_code_translates_comments_and_printed_strings_only():
    from atlas import i18n
    code = 'x = torch.randn(4, 10)  # batch of 4, 10 features\nprint("input shape:", "input shape:")\ny = "bias:"\n'
    with i18n.language("es"):
        out = example_runs.localized(code)
    assert out == ('x = torch.randn(4, 10)  # lote de 4, 10 características\n'
                   'print("forma de la entrada:", "forma de la entrada:")\ny = "bias:"\n')
    assert example_runs.texts(code) == ["batch of 4, 10 features", "input shape:", "input shape:"]


def _batch_dependent(module: nn.Module, shape) -> bool:
    """Does one sample's output change when another sample in the batch changes?"""
    module.train()
    torch.manual_seed(0)
    x = torch.randn(*shape)
    y = module(x)
    x2 = x.clone()
    x2[1:] = torch.randn_like(x2[1:]) * 3 + 2
    return not torch.allclose(module(x2)[0], y[0])


FACT_MODULES = {
    "torch.nn.BatchNorm1d": (nn.BatchNorm1d(4), (6, 4, 5)), "torch.nn.LayerNorm": (nn.LayerNorm(5), (6, 4, 5)),
    "torch.nn.RMSNorm": (nn.RMSNorm(5), (6, 4, 5)),
    "torch.nn.InstanceNorm1d": (nn.InstanceNorm1d(4), (6, 4, 5)), "torch.nn.GroupNorm": (nn.GroupNorm(2, 4), (6, 4, 5)),
    "torch.nn.ReLU": (nn.ReLU(), (6, 4)), "torch.nn.GELU": (nn.GELU(), (6, 4)), "torch.nn.SiLU": (nn.SiLU(), (6, 4)),
    "torch.nn.Tanh": (nn.Tanh(), (6, 4)),
}


def test_family_facts_are_true_of_the_code():
    checked = 0
    for family in class_pages.families().values():
        for member in family["members"]:
            module, shape = FACT_MODULES[member["class"]]
            assert _batch_dependent(module, shape) == member["batch_dependent"], member["class"]
            checked += 1
    assert checked == 9
