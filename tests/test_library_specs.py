"""SPECs that name where a library keeps a model (atlas.load.library_specs): a save_pretrained folder with its
checkpoint, its config.json alone, `hf:<org>/<name>` from a local Hugging Face cache, and `timm:` / `torchvision:`,
whose libraries this environment does not have."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
from conftest import ONE_THREAD, ROOT

from atlas import pipeline
from atlas.errors import SpecError
from atlas.load import pretrained_folders
from atlas.load.spec import load

REVISION = "0123456789abcdef0123456789abcdef01234567"      # a snapshot's commit hash, as the cache names it
REPO = "tiny-org/tiny-gpt2"
SUMMARY = re.compile(r"^atlas: checkpoint (\S+) \((\d+) tensors\) against GPT2LMHeadModel: (\d+) matched, (\d+) tied "
                     r"\(saved once\), (\d+) missing, (\d+) unexpected, (\d+) mismatched$", re.M)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A GPT-2 of two layers, written by save_pretrained (config.json and model.safetensors, its LM head tied to the
    token embedding and saved once), and the number of its parameters."""
    transformers = pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("saved")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64, bos_token_id=0, eos_token_id=0))
    model.save_pretrained(root / "tiny_gpt2")
    return root, sum(p.numel() for p in model.parameters())


def describe(spec: str, cwd, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")}
    return subprocess.run([sys.executable, "-m", "atlas", "describe", spec], capture_output=True, text=True, cwd=cwd,
                          env={**environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **ONE_THREAD, **env})


def total(stdout: str) -> int:
    return int(re.search(r"^parameters ([\d,]+) \(", stdout, re.M).group(1).replace(",", ""))


def one_line_error(proc) -> str:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("atlas: error: SPEC "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    return proc.stderr


def test_save_pretrained_folder_with_its_checkpoint(saved):
    root, parameters = saved
    proc = describe("tiny_gpt2", root)
    assert proc.returncode == 0, proc.stderr
    assert total(proc.stdout) == parameters == 112_384
    # 28 tensors saved; the LM head is the token embedding's, saved once
    assert SUMMARY.search(proc.stdout).groups() == ("tiny_gpt2", "28", "28", "1", "0", "0", "0")


def test_config_json_alone_is_the_code_without_a_checkpoint(saved):
    root, parameters = saved
    proc = describe(str(root / "tiny_gpt2" / "config.json"), ROOT)
    assert proc.returncode == 0, proc.stderr
    assert total(proc.stdout) == parameters
    assert "atlas: checkpoint" not in proc.stdout


def test_loaded_fields_show_no_path_of_this_machine(saved, monkeypatch):
    root, _ = saved
    monkeypatch.chdir(root)
    folder = load("tiny_gpt2")
    assert (folder.spec, type(folder.model).__name__) == ("tiny_gpt2", "GPT2LMHeadModel")
    assert folder.source_file == str(root / "tiny_gpt2" / "config.json")
    assert folder.checkpoint == str(root / "tiny_gpt2")
    assert {p.device.type for p in folder.model.parameters()} == {"meta"}
    monkeypatch.chdir(ROOT)
    config = load(str(root / "tiny_gpt2" / "config.json"))
    assert (config.spec, config.checkpoint) == ("config.json", None)


def test_the_model_takes_the_configs_dtype_as_from_pretrained_does(tmp_path):
    """A bfloat16 config builds bfloat16 parameters, which a bfloat16 checkpoint then matches; torch's default
    dtype is float32 again after."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2,
                                                      "vocab_size": 64, "n_positions": 16, "dtype": "bfloat16"}))
    loaded = load(str(tmp_path / "config.json"))
    assert type(loaded.model).__name__ == "GPT2Model"          # no `architectures`: AutoModel
    assert {p.dtype for p in loaded.model.parameters()} == {torch.bfloat16}
    assert torch.get_default_dtype() == torch.float32


def test_a_config_that_needs_its_own_code_is_refused_without_a_prompt(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mystery", "auto_map": {
        "AutoConfig": "configuration_mystery.MysteryConfig", "AutoModel": "modeling_mystery.MysteryModel"}}))
    with pytest.raises(SpecError, match=re.escape("config.json names code of its own (configuration_mystery."
                                                  "MysteryConfig, modeling_mystery.MysteryModel), which the atlas "
                                                  "does not run")):
        load(str(tmp_path / "config.json"))


def test_an_explicit_checkpoint_wins_over_the_folders(saved, monkeypatch):
    root, _ = saved
    monkeypatch.chdir(root)
    [(_, loaded, own)] = pipeline.load_models(["tiny_gpt2"])
    assert own.checkpoint == loaded.checkpoint == str(root / "tiny_gpt2")
    [(_, _, own)] = pipeline.load_models(["tiny_gpt2"], pipeline.Settings(checkpoint="other.safetensors"))
    assert own.checkpoint == "other.safetensors"


def test_the_fingerprint_follows_the_config_and_the_checkpoint(saved, tmp_path):
    from atlas.load.checkpoint_listing import read
    from atlas.render import model_pages
    from atlas.site import fingerprint
    root, _ = saved
    folder = tmp_path / "copy"
    shutil.copytree(root / "tiny_gpt2", folder)

    def models():
        loaded = load(str(folder))
        return fingerprint.current([(str(folder), loaded)], pipeline.Settings(), model_pages.templates_dir())["models"]
    before = models()
    assert before[0]["checkpoint"] == read(str(folder)).sha256
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "layer_norm_epsilon": 1e-6}))
    after = models()
    assert after[0]["sources"] != before[0]["sources"] and after[0]["checkpoint"] == before[0]["checkpoint"]


def test_a_download_cut_short_is_documented_without_its_checkpoint(saved, tmp_path, caplog):
    root, _ = saved
    shutil.copy(root / "tiny_gpt2" / "config.json", tmp_path)
    index = {"metadata": {}, "weight_map": {"transformer.wte.weight": "model-00001-of-00002.safetensors",
                                            "transformer.wpe.weight": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    shutil.copy(root / "tiny_gpt2" / "model.safetensors", tmp_path / "model-00001-of-00002.safetensors")
    with caplog.at_level("WARNING", logger="atlas"):
        assert pretrained_folders.checkpoint_in(tmp_path, "cut") is None
    assert caplog.messages == ["cut: model.safetensors.index.json names 2 shards, 1 of them absent "
                               "(model-00002-of-00002.safetensors first): the checkpoint is not reconciled"]


def hub_cache(home, saved_folder) -> None:
    """The layout huggingface_hub writes: models--org--name/{refs/main, snapshots/<commit>/...}."""
    repo = home / "hub" / f"models--{REPO.replace('/', '--')}"
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(saved_folder / name, snapshot / name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)


def test_hf_spec_reads_the_local_cache(saved, tmp_path):
    root, parameters = saved
    hub_cache(tmp_path / "hf", root / "tiny_gpt2")
    proc = describe(f"hf:{REPO}", ROOT, HF_HOME=str(tmp_path / "hf"))
    assert proc.returncode == 0, proc.stderr
    assert total(proc.stdout) == parameters
    assert SUMMARY.search(proc.stdout).groups() == ("model.safetensors", "28", "28", "1", "0", "0", "0")


def test_hf_spec_not_in_the_cache_is_one_line(tmp_path):
    cache = tmp_path / "hub"
    cache.mkdir()
    err = one_line_error(describe("hf:nobody/absent-model", ROOT, HF_HUB_CACHE=str(cache)))
    assert f"the local Hugging Face cache {cache} does not hold nobody/absent-model" in err


@pytest.mark.parametrize("library", ["timm", "torchvision"])
def test_a_missing_library_names_its_extra(library):
    if importlib.util.find_spec(library) is not None:
        pytest.skip(f"{library} is installed here: its absence cannot be shown")
    err = one_line_error(describe(f"{library}:resnet18", ROOT))
    assert err == (f"atlas: error: SPEC '{library}:resnet18' needs the {library} library: "
                   f"pip install 'model-atlas[{library}]'\n")


@pytest.mark.parametrize("spec,message", [
    ("timm:", "names no model after 'timm:'"),
    ("no/such/folder", "no such file or folder"),
    ("hf:not a repo", "not a Hugging Face repo id"),
])
def test_bad_library_specs(spec, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        load(spec)
