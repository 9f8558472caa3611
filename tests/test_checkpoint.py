"""Checkpoints counted: each test writes its own checkpoint (nothing is downloaded) and reconciles it with the code."""

import hashlib
import json
import struct
import subprocess
import sys
from dataclasses import replace

import jsonschema
import pytest
import torch
from conftest import ROOT
from fixtures.checkpoints import meta_shapes, sparse_safetensors, tiny_gpt2, tiny_ldlm, unique_state, with_buffers
from safetensors import safe_open
from safetensors.torch import save_file, save_model

from atlas import pipeline
from atlas.analyse import checkpoint_reconcile
from atlas.cli import main
from atlas.document import Mismatch, TiedCopy, serialize
from atlas.errors import AtlasError
from atlas.extract import walk
from atlas.load import checkpoint_listing
from atlas.load.spec import DEFAULT_SPEC, load
from atlas.render import model_pages

CKPT_FIXTURES = ROOT / "tests" / "fixtures" / "checkpoints.py"
GPT2_SPEC = f"{CKPT_FIXTURES}:tiny_gpt2"
SCHEMA = json.loads((ROOT / "atlas" / "render" / "schema" / "model.schema.json").read_text())
SMALL = ["--memory-budget", "0.1"]
TINY_PARAMETERS = 112_384               # the tiny GPT-2: 128·64 + 64·64 + 2 × 49,984 + 128


def reconciled(spec_or_model, path, doc=None):
    """(the report, the walked doc) for a model (a SPEC or a module) against the checkpoint at `path`."""
    loaded = load(spec_or_model) if isinstance(spec_or_model, str) else spec_or_model
    doc = doc or walk.walk(loaded)
    return checkpoint_reconcile.reconcile(loaded.model, doc, checkpoint_listing.read(str(path))), doc


def contiguous(state):
    return {k: v.detach().contiguous() for k, v in state.items()}


@pytest.fixture(scope="module")
def gpt2_safetensors(tmp_path_factory):
    """The tiny native GPT-2's weights, written by safetensors' save_model: the tied head is saved once."""
    path = tmp_path_factory.mktemp("gpt2") / "gpt2.safetensors"
    torch.manual_seed(0)
    save_model(tiny_gpt2(), str(path))
    return path


# -- zoo models ----------------------------------------------------------------------------------------------

def test_native_gpt2_safetensors_matches_with_its_tie(gpt2_safetensors):
    r, doc = reconciled(GPT2_SPEC, gpt2_safetensors)
    assert (r.format, r.file, r.shards, r.hashed) == ("safetensors", "gpt2.safetensors", 1, "header")
    assert (r.tensors, r.matched, r.missing, r.unexpected, r.mismatched) == (28, 28, (), (), ())
    with safe_open(str(gpt2_safetensors), "pt") as f:
        saved = set(f.keys())
    tie = {"transformer.wte.weight", "lm_head.weight"}
    (kept,), (dropped,) = tie & saved, tie - saved       # save_model keeps one name of the tied pair
    assert r.tied == (TiedCopy(dropped, kept),)
    assert (r.parameters, r.bytes) == (TINY_PARAMETERS, 4 * TINY_PARAMETERS)
    assert [(d.dtype, d.tensors, d.parameters, d.bytes) for d in r.dtypes] == [("float32", 28, TINY_PARAMETERS,
                                                                                 4 * TINY_PARAMETERS)]
    length = struct.unpack("<Q", gpt2_safetensors.read_bytes()[:8])[0]
    assert r.sha256 == hashlib.sha256(gpt2_safetensors.read_bytes()[8:8 + length]).hexdigest()
    root, blocks = r.component(""), r.component("transformer.h")
    assert (root.tensors, root.matched, root.tied, root.parameters) == (29, 28, 1, TINY_PARAMETERS)
    assert (blocks.tensors, blocks.matched, blocks.parameters) == (24, 24, doc.component("transformer.h").parameters_total)
    assert blocks.parameters == 2 * 49_984


def test_header_listing_agrees_with_the_safetensors_library(gpt2_safetensors):
    listing = checkpoint_listing.read(str(gpt2_safetensors))
    with safe_open(str(gpt2_safetensors), "pt") as f:
        library = {k: (tuple(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in f.keys()}
    short = {"float32": "F32"}
    assert {t.name: (t.shape, short[t.dtype]) for t in listing.tensors} == library


def test_torch_bin_state_dict_holds_both_tied_names(tmp_path):
    model = tiny_gpt2()
    path = tmp_path / "pytorch_model.bin"
    torch.save(model.state_dict(), path)
    r, _ = reconciled(GPT2_SPEC, path)
    assert (r.format, r.hashed, r.tensors, r.matched, r.tied) == ("torch", "listing", 29, 29, ())
    assert (r.missing, r.unexpected, r.mismatched) == ((), (), ())
    assert r.parameters == TINY_PARAMETERS + 128 * 64            # the tied table is listed under both names
    assert r.bytes == 4 * TINY_PARAMETERS                        # ... and its storage is saved once
    lines = "".join(f"{k}\tfloat32\t{','.join(map(str, v.shape))}\n" for k, v in model.state_dict().items())
    assert r.sha256 == hashlib.sha256(lines.encode()).hexdigest()
    assert r.component("").parameters == TINY_PARAMETERS


def test_ddp_and_compile_prefixes_are_stripped(tmp_path):
    path = tmp_path / "trained.pt"
    state = tiny_gpt2().state_dict()
    torch.save({"epoch": 3, "state_dict": {f"module._orig_mod.{k}": v for k, v in state.items()}}, path)
    r, _ = reconciled(GPT2_SPEC, path)
    assert r.stripped == ("_orig_mod.", "module.") and r.added is None
    assert (r.matched, r.missing, r.unexpected, r.mismatched) == (29, (), (), ())
    doc = pipeline.document(load(GPT2_SPEC), pipeline.Settings(verify=False, checkpoint=str(path)))
    assert doc.checkpoint == replace(r, path="trained.pt")          # outside the working folder: its name alone
    files = model_pages.render(doc)
    assert ("`trained.pt` (torch state dict), opened with torch.load(mmap=True, weights_only=True): its storages "
            "were mapped, never read") in files["gpt-2/index.md"]
    assert ("The prefixes `_orig_mod.`, `module.` were taken off the checkpoint's names, in that order."
            in files["gpt-2/index.md"])
    assert ("Se quitaron los prefijos `_orig_mod.`, `module.` de los nombres del checkpoint, en ese orden."
            in files["gpt-2/index.es.md"])
    assert ("Every tensor of the code is in the checkpoint with its shape and dtype, and the checkpoint holds "
            "nothing else.") in files["gpt-2/index.md"]


def test_compile_wrapper_inside_the_tree_is_stripped(tmp_path):
    state = unique_state(tiny_gpt2())
    renamed = {k.replace("transformer.h.", "transformer._orig_mod.h."): v for k, v in contiguous(state).items()}
    save_file(renamed, str(tmp_path / "c.safetensors"))
    r, _ = reconciled(GPT2_SPEC, tmp_path / "c.safetensors")
    assert r.stripped == ("_orig_mod.",) and (r.matched, r.problems) == (28, 0)


def test_small_ldlm_real_weights(tmp_path):
    torch.manual_seed(0)
    model = tiny_ldlm()
    save_model(model, str(tmp_path / "ldlm.safetensors"))
    spec = f"{CKPT_FIXTURES}:tiny_ldlm"
    r, doc = reconciled(spec, tmp_path / "ldlm.safetensors")
    total = sum(p.numel() for p in model.parameters())
    assert (r.tensors, r.matched, r.problems, len(r.tied)) == (126, 126, 0, 1)
    assert r.tied[0].name in ("frozen_lm.lm_head.weight", "frozen_lm.transformer.wte.weight")
    assert (r.parameters, r.component("").parameters) == (total, total)
    for comp in doc.components:         # every component: all its tensors match and its parameters are all there
        check = r.component(comp.id)
        assert check.matched + check.tied == check.tensors
        assert check.parameters == comp.parameters_total, comp.id


def test_persistent_buffers_are_expected_and_non_persistent_ones_not(tmp_path):
    spec = f"{CKPT_FIXTURES}:with_buffers"
    model = with_buffers()
    torch.save(model.state_dict(), tmp_path / "a.pt")
    r, _ = reconciled(spec, tmp_path / "a.pt")
    assert (r.tensors, r.matched, r.problems) == (3, 3, 0)                   # proj.weight, proj.bias, scale
    torch.save({**model.state_dict(), "cache": torch.zeros(8)}, tmp_path / "b.pt")
    r, _ = reconciled(spec, tmp_path / "b.pt")
    assert (r.matched, r.unexpected, r.missing) == (3, ("cache",), ())      # as load_state_dict(strict=True) says
    torch.save({k: v for k, v in model.state_dict().items() if k != "scale"}, tmp_path / "c.pt")
    r, _ = reconciled(spec, tmp_path / "c.pt")
    assert r.missing == ("scale",)


def test_dtype_mismatch(tmp_path):
    save_file({k: v.to(torch.bfloat16) for k, v in contiguous(unique_state(tiny_gpt2())).items()},
              str(tmp_path / "bf16.safetensors"))
    r, _ = reconciled(GPT2_SPEC, tmp_path / "bf16.safetensors")
    assert (r.matched, len(r.mismatched), r.bytes) == (0, 28, 2 * TINY_PARAMETERS)
    assert r.mismatched[0] == Mismatch("transformer.wte.weight", (128, 64), (128, 64), "float32", "bfloat16")
    assert r.tied == (TiedCopy("lm_head.weight", "transformer.wte.weight"),)


# -- the full LDLM, from a header over a hole: its pages in both languages ------------------------------------

@pytest.fixture(scope="module")
def ldlm_checked(ldlm_doc, tmp_path_factory):
    loaded = load(DEFAULT_SPEC)
    path = tmp_path_factory.mktemp("ldlm") / "ldlm.safetensors"
    size = sparse_safetensors(path, meta_shapes(loaded.model))
    assert size > 4 * ldlm_doc.totals.parameters
    report = checkpoint_reconcile.reconcile(loaded.model, ldlm_doc, checkpoint_listing.read(str(path)))
    return replace(ldlm_doc, checkpoint=report)


def test_ldlm_reconciles_exactly(ldlm_checked):
    r, t = ldlm_checked.checkpoint, ldlm_checked.totals
    assert (r.tensors, r.matched, r.problems) == (470, 470, 0)
    assert r.tied == (TiedCopy("frozen_lm.lm_head.weight", "frozen_lm.transformer.wte.weight"),)
    assert r.parameters == t.parameters and r.bytes == 4 * t.parameters
    ln = r.component("latent_encoder.blocks.mlp.layer_norm")
    assert (ln.tensors, ln.matched, ln.parameters) == (12, 12, 9_216)
    assert r.component("latent_encoder.blocks").parameters == 49_587_456


def test_ldlm_pages_show_the_reconciliation(ldlm_checked):
    files = model_pages.render(ldlm_checked)
    r = ldlm_checked.checkpoint
    page = files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    assert "Checkpoint counted: 12 of 12 tensors match, 9,216 parameters, in `ldlm.safetensors`." in page
    assert "no checkpoint was read" not in page
    assert f"checkpoint ldlm.safetensors, sha256 {r.sha256}" in page                 # the BibTeX note
    assert f"Checkpoint ldlm.safetensors, sha256 {r.sha256}." in page                # the plain citation
    es = files["ldlm/latent_encoder/blocks/mlp/layer_norm.es.md"]
    assert "Checkpoint contado: coinciden 12 de 12 tensores, 9216 parámetros, en `ldlm.safetensors`." in es
    model = files["ldlm/index.md"]
    assert "## Checkpoint" in model and "| Matched: same name, shape and dtype | 470 |" in model
    assert ("| `frozen_lm.lm_head.weight` | tied copy, saved once | the same tensor as "
            "`frozen_lm.transformer.wte.weight`, which the checkpoint holds |") in model
    assert f"| **All** | **470** | **{ldlm_checked.totals.parameters:,}** |" in model
    model_es = files["ldlm/index.es.md"]
    assert "| Coinciden: mismo nombre, forma y dtype | 470 |" in model_es
    assert "| `frozen_lm.lm_head.weight` | copia atada, guardada una vez |" in model_es
    head = files["ldlm/frozen_lm/lm_head.md"]
    assert "Checkpoint counted: 1 of 1 tensor matches, 38,597,376 parameters" in head


def test_component_pages_list_a_dozen_findings_and_point_to_the_model_page(tmp_path):
    torch.manual_seed(0)
    save_file({"transformer.wte.weight": torch.zeros(128, 64)}, str(tmp_path / "one.safetensors"))
    doc = pipeline.document(load(GPT2_SPEC), pipeline.Settings(verify=False, checkpoint=str(tmp_path / "one.safetensors")))
    assert (doc.checkpoint.matched, len(doc.checkpoint.missing), len(doc.checkpoint.tied)) == (1, 27, 1)
    files = model_pages.render(doc)
    trunk = files["gpt-2/transformer/index.md"]
    assert "Checkpoint counted: 1 of 28 tensors match, 8,192 parameters, in `one.safetensors`." in trunk
    assert trunk.count("| missing from the checkpoint |") == 12
    assert "15 more are listed on [the model's page](../index.md)." in trunk
    assert "15 más figuran en [la página del modelo](../index.md)." in files["gpt-2/transformer/index.es.md"]
    model = files["gpt-2/index.md"]
    assert model.count("| missing from the checkpoint |") == 27 and model.count("| tied copy, saved once |") == 1


def test_ldlm_json_validates_and_round_trips(ldlm_checked):
    from atlas.render import json_export
    data = json_export.as_dict(ldlm_checked)
    jsonschema.validate(json.loads(serialize.dumps(data)), SCHEMA)
    assert serialize.loads(serialize.dumps(data)) == ldlm_checked
    bad = json.loads(serialize.dumps(data))
    del bad["checkpoint"]["matched"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


# -- transformers: save_pretrained, single file and sharded ---------------------------------------------------

@pytest.fixture(scope="module")
def hf_saved(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    from fixtures.hf_models import gpt2
    root = tmp_path_factory.mktemp("hf")
    torch.manual_seed(0)
    model = gpt2()
    model.save_pretrained(root / "single")
    model.save_pretrained(root / "sharded", max_shard_size="50KB")
    model.transformer.save_pretrained(root / "base")             # the trunk alone: names without "transformer."
    assert isinstance(model, transformers.GPT2LMHeadModel)
    return root


HF_SPEC = f"{ROOT / 'tests' / 'fixtures' / 'hf_models.py'}:gpt2"


def test_save_pretrained_single_file(hf_saved):
    r, _ = reconciled(HF_SPEC, hf_saved / "single")
    assert (r.format, r.file, r.tensors, r.matched, r.problems) == ("safetensors", "model.safetensors", 28, 28, 0)
    assert r.tied == (TiedCopy("lm_head.weight", "transformer.wte.weight"),)
    assert r.component("").tensors == 29


@pytest.mark.parametrize("target", ["sharded", "sharded/model.safetensors.index.json"])
def test_save_pretrained_sharded(hf_saved, target):
    shards = sorted(p.name for p in (hf_saved / "sharded").glob("model-*.safetensors"))
    assert len(shards) > 1
    r, _ = reconciled(HF_SPEC, hf_saved / target)
    assert (r.format, r.file, r.shards, r.hashed) == ("safetensors-sharded", "model.safetensors.index.json",
                                                       len(shards), "index")
    assert (r.tensors, r.matched, r.problems) == (28, 28, 0)
    assert r.tied == (TiedCopy("lm_head.weight", "transformer.wte.weight"),)
    index = (hf_saved / "sharded" / "model.safetensors.index.json").read_bytes()
    assert r.sha256 == hashlib.sha256(index).hexdigest()
    single, _ = reconciled(HF_SPEC, hf_saved / "single")
    assert (r.parameters, r.bytes, r.dtypes) == (single.parameters, single.bytes, single.dtypes)


def test_base_model_prefix_goes_on_or_comes_off(hf_saved, tmp_path):
    r, _ = reconciled(HF_SPEC, hf_saved / "base")               # trunk checkpoint, head-model code
    assert (r.added, r.stripped, r.matched, r.problems) == ("transformer.", (), 28, 0)
    trunk = tmp_path / "trunk.py"
    trunk.write_text("from fixtures.hf_models import gpt2\n\ndef trunk():\n    return gpt2().transformer\n")
    r, _ = reconciled(f"{trunk}:trunk", hf_saved / "single")     # head-model checkpoint, trunk code
    assert (r.stripped, r.added, r.matched, r.problems) == (("transformer.",), None, 28, 0)


def test_hf_gpt2_checkpoint_against_native_gpt2_code(hf_saved):
    """HF's Conv1D stores its weight in × out; nn.Linear out × in: the square projection alone still fits."""
    r, _ = reconciled(GPT2_SPEC, hf_saved / "single")
    assert [m.name for m in r.mismatched] == [f"transformer.h.{i}.{n}.weight" for i in range(2)
                                              for n in ("attn.c_attn", "mlp.c_fc", "mlp.c_proj")]
    assert r.mismatched[0] == Mismatch("transformer.h.0.attn.c_attn.weight", (192, 64), (64, 192), "float32", "float32")
    assert (r.matched, r.missing, r.unexpected) == (22, (), ())


# -- tampered copies, through the CLI ---------------------------------------------------------------------------

def tampered(path, kind):
    state = contiguous(unique_state(tiny_gpt2()))
    if kind == "dropped":
        del state["transformer.h.1.mlp.c_fc.bias"]
    elif kind == "reshaped":
        state["transformer.wpe.weight"] = torch.zeros(32, 64)
    elif kind == "renamed":
        state["transformer.h.0.ln_1.gain"] = state.pop("transformer.h.0.ln_1.weight")
    save_file(state, str(path))
    return path


EXPECTED = {
    "dropped": ((), ("transformer.h.1.mlp.c_fc.bias",), (), ["  missing: transformer.h.1.mlp.c_fc.bias"]),
    "reshaped": ((Mismatch("transformer.wpe.weight", (64, 64), (32, 64), "float32", "float32"),), (), (),
                 ["  mismatched: transformer.wpe.weight: code [64, 64] float32, checkpoint [32, 64] float32"]),
    "renamed": ((), ("transformer.h.0.ln_1.weight",), ("transformer.h.0.ln_1.gain",),
                ["  missing: transformer.h.0.ln_1.weight", "  unexpected: transformer.h.0.ln_1.gain"]),
}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_tampered_copy_reconciles_and_check_fails(tmp_path, capsys, kind):
    path = tampered(tmp_path / f"{kind}.safetensors", kind)
    mismatched, missing, unexpected, lines = EXPECTED[kind]
    r, _ = reconciled(GPT2_SPEC, path)
    assert (r.mismatched, r.missing, r.unexpected) == (mismatched, missing, unexpected)
    assert r.matched == 28 - len(mismatched) - len(missing)
    docs = str(tmp_path / "docs")
    assert main(["build", GPT2_SPEC, "--docs", docs, "--checkpoint", str(path), *SMALL]) == 0
    capsys.readouterr()
    assert main(["check", GPT2_SPEC, "--docs", docs, "--checkpoint", str(path), *SMALL]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"atlas: checkpoint {path.name} does not match GPT-2: ")
    assert err[1:] == lines                                       # the pages are current: only the tensors are listed
    if kind == "dropped":           # without the checkpoint the pages are stale (whichever way the copy was tampered)
        assert main(["check", GPT2_SPEC, "--docs", docs, *SMALL]) == 1


def test_check_passes_on_a_matching_checkpoint_and_keeps_its_meaning(tmp_path, capsys, gpt2_safetensors):
    docs = str(tmp_path / "docs")
    args = [GPT2_SPEC, "--docs", docs, "--checkpoint", str(gpt2_safetensors), *SMALL]
    assert main(["build", *args]) == 0
    assert main(["check", *args]) == 0
    assert "28 matched, 1 tied (saved once), 0 missing, 0 unexpected, 0 mismatched" in capsys.readouterr().out
    page = tmp_path / "docs" / "gpt-2" / "transformer" / "h" / "index.md"
    page.write_text(page.read_text() + "edited\n")
    assert main(["check", *args]) == 1
    assert "stale: gpt-2/transformer/h/index.md" in capsys.readouterr().err


def test_describe_json_has_the_checkpoint_object(gpt2_safetensors, capsys):
    assert main(["describe", GPT2_SPEC, "--json", "--checkpoint", str(gpt2_safetensors)]) == 0
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    ck = data["checkpoint"]
    assert list(ck)[:10] == ["path", "format", "tensors", "parameters", "bytes", "matched", "missing", "unexpected",
                             "mismatched", "tied"]
    assert (ck["format"], ck["tensors"], ck["parameters"], ck["matched"]) == ("safetensors", 28, TINY_PARAMETERS, 28)
    assert (ck["missing"], ck["unexpected"], ck["mismatched"]) == ([], [], [])


def test_describe_json_lists_a_mismatch(tmp_path, capsys):
    path = tampered(tmp_path / "r.safetensors", "reshaped")
    assert main(["describe", GPT2_SPEC, "--json", "--checkpoint", str(path)]) == 0
    ck = json.loads(capsys.readouterr().out)["checkpoint"]
    assert ck["mismatched"] == [{"name": "transformer.wpe.weight", "code_shape": [64, 64], "checkpoint_shape": [32, 64],
                                 "code_dtype": "float32", "checkpoint_dtype": "float32"}]


def test_without_a_checkpoint_the_json_says_null(capsys):
    assert main(["describe", GPT2_SPEC, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint"] is None


# -- bad input: one line, exit 2, nothing written -------------------------------------------------------------

def bad_inputs(tmp_path):
    (tmp_path / "short.safetensors").write_bytes(b"\x01\x02")
    (tmp_path / "huge.safetensors").write_bytes(struct.pack("<Q", 10**9) + b"{}")
    (tmp_path / "notjson.safetensors").write_bytes(struct.pack("<Q", 4) + b"{{{{")
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 64]}}).encode()
    (tmp_path / "offsets.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)
    (tmp_path / "garbage.bin").write_bytes(b"not a zip archive at all")
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"transformer.wte.weight": "model-00001-of-00002.safetensors"}}))
    (tmp_path / "empty").mkdir()
    (tmp_path / "weights.npz").write_bytes(b"")
    return [
        (tmp_path / "absent.safetensors", "no such file or directory"),
        (tmp_path / "short.safetensors", "corrupt safetensors header in short.safetensors: the file is 2 bytes"),
        (tmp_path / "huge.safetensors", "it declares 1000000000 header bytes in a file of 10"),
        (tmp_path / "notjson.safetensors", "corrupt safetensors header in notjson.safetensors: not JSON"),
        (tmp_path / "offsets.safetensors", "'w' has the data offsets [0, 64], outside the 16 data bytes"),
        (tmp_path / "garbage.bin", "torch.load(mmap=True, weights_only=True) cannot read garbage.bin"),
        (tmp_path / "shards", "names the shard model-00001-of-00002.safetensors, which does not exist"),
        (tmp_path / "empty", "the directory holds none of model.safetensors"),
        (tmp_path / "weights.npz", "not a checkpoint this atlas reads"),
    ]


def test_bad_checkpoints_one_line_exit_2_nothing_written(tmp_path, capsys):
    docs = tmp_path / "docs"
    commands = (["describe", GPT2_SPEC, "--json"], ["build", GPT2_SPEC, "--docs", str(docs)],
                ["check", GPT2_SPEC, "--docs", str(docs)])
    for i, (path, message) in enumerate(bad_inputs(tmp_path)):
        # every message through describe; build and check read the checkpoint by the same call, shown on two
        for argv in commands if i < 2 else commands[:1]:
            assert main([*argv, "--checkpoint", str(path)]) == 2, (path, argv)
            out, err = capsys.readouterr()
            assert err.startswith(f"atlas: error: checkpoint {path}: ") and err.count("\n") == 1, err
            assert message in err and "Traceback" not in err
            assert out == "" and not docs.exists()


def test_bad_checkpoint_from_a_real_process(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "atlas", "build", GPT2_SPEC, "--docs", str(tmp_path / "d"),
                           "--checkpoint", str(tmp_path / "nope.safetensors")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "d").exists()


def test_one_checkpoint_for_two_models_is_refused(tmp_path, capsys, gpt2_safetensors):
    assert main(["build", GPT2_SPEC, DEFAULT_SPEC, "--docs", str(tmp_path / "d"),
                 "--checkpoint", str(gpt2_safetensors)]) == 2
    assert "--checkpoint belongs to one model" in capsys.readouterr().err


def test_index_placing_a_tensor_in_the_wrong_shard(tmp_path):
    save_file({"a": torch.zeros(2)}, str(tmp_path / "one.safetensors"))
    (tmp_path / "x.index.json").write_text(json.dumps({"weight_map": {"a": "one.safetensors", "b": "one.safetensors"}}))
    with pytest.raises(AtlasError, match="places b in one.safetensors, which does not hold it"):
        checkpoint_listing.read(str(tmp_path / "x.index.json"))


def test_sharded_torch_bins(tmp_path):
    state = tiny_gpt2().state_dict()
    names = list(state)
    torch.save({k: state[k] for k in names[:10]}, tmp_path / "pytorch_model-1.bin")
    torch.save({k: state[k] for k in names[10:]}, tmp_path / "pytorch_model-2.bin")
    weight_map = {k: "pytorch_model-1.bin" if i < 10 else "pytorch_model-2.bin" for i, k in enumerate(names)}
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    r, _ = reconciled(GPT2_SPEC, tmp_path)
    assert (r.format, r.shards, r.tensors, r.matched, r.problems) == ("torch-sharded", 2, 29, 29, 0)
