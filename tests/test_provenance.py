"""Provenance and citation: excerpts from inspect, pinned revisions, claims with checks, stable permalinks."""

import inspect
import json
import shutil
from pathlib import Path

import jsonschema
import torch
from conftest import ROOT
from torch import nn

from atlas.cli import main
from atlas.document import serialize
from atlas.render import page_paths
from atlas.zoo import ldlm

SCHEMA = json.loads((ROOT / "atlas" / "render" / "schema" / "model.schema.json").read_text())


def test_excerpts_are_the_files_lines(ldlm_doc):
    for comp in ldlm_doc.components:
        src = comp.source
        assert src is not None and src.excerpts, comp.id
        if src.origin == "package":
            base = Path(torch.__file__).resolve().parent.parent
        else:
            base = ROOT
        lines = (base / src.file).read_text().splitlines()
        for x in src.excerpts:
            assert x.text == "\n".join(lines[x.start - 1:x.end]), (comp.id, x.start)


def test_line_ranges_match_inspect(ldlm_doc):
    ln = ldlm_doc.component("latent_encoder.blocks.mlp.layer_norm").source
    _, start = inspect.getsourcelines(nn.LayerNorm)
    assert ln.excerpts[0].start == start
    init_lines, init_start = inspect.getsourcelines(nn.LayerNorm.__init__)
    fwd_lines, fwd_start = inspect.getsourcelines(nn.LayerNorm.forward)
    assert (ln.excerpts[1].start, ln.excerpts[1].end) == (init_start, fwd_start + len(fwd_lines) - 1)
    attn = ldlm_doc.component("latent_encoder.blocks.attn").source
    lines, start = inspect.getsourcelines(ldlm.PerceiverAttention)
    assert (attn.excerpts[0].start, attn.excerpts[-1].end) == (start, start + len(lines) - 1)
    assert attn.file == "atlas/zoo/ldlm.py" and attn.origin == "git" and len(attn.revision) == 12


def test_torch_links_carry_git_version(ldlm_doc, ldlm_files):
    src = ldlm_doc.component("latent_encoder.blocks.mlp.layer_norm").source
    assert src.file == "torch/nn/modules/normalization.py"
    assert torch.version.git_version in src.url and src.url.startswith("https://github.com/pytorch/pytorch/blob/")
    assert torch.__version__ in src.label
    page = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    assert f"{torch.version.git_version}/torch/nn/modules/normalization.py#L{src.excerpts[0].start}-L" in page


def test_every_claim_has_code_and_a_check(ldlm_doc, ldlm_files):
    checks = {"accounting", "equations verified", "shape probes", "structure"}
    total = 0
    for comp in ldlm_doc.components:
        for c in comp.claims:
            assert c.check in checks and c.file and 1 <= c.start <= c.end and c.excerpt.strip()
            total += 1
        page = ldlm_files[page_paths.page_path(ldlm_doc, comp)]
        shown = [c for c in comp.claims if comp.source and c.file == comp.source.file
                 and any(x.start <= c.start and c.end <= x.end for x in comp.source.excerpts)]
        assert page.count('??? example "Read code excerpt"') == len(comp.claims) - len(shown)
        assert page.count("](#code)") == len(shown)
    assert total > 150
    ln = ldlm_doc.component("latent_encoder.blocks.mlp.layer_norm")
    assert "learned gain (768) and learned bias (768): 1,536 parameters per instance" in ln.claims[0].text
    assert any("epsilon 1e-05" in c.text and c.check == "equations verified" for c in ln.claims)


def test_explanation_of_the_block(ldlm_doc, ldlm_files):
    facts = " ".join(ldlm_doc.component("latent_encoder.blocks").explanation)
    assert "no normalization of its own: normalization happens inside Perceiver attention and MLP" in facts
    assert "2 of its own steps add a branch's result back" in facts
    assert "## Explanation" in ldlm_files["ldlm/latent_encoder/blocks/index.md"]


def test_cite_this_page(ldlm_files):
    page = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    assert "## Cite this page" in page
    assert "@misc{atlas-ldlm-latent-encoder-blocks-mlp-layer-norm," in page
    assert "`ldlm/latent_encoder/blocks/mlp/layer_norm/`" in page
    assert "atlas/zoo/ldlm.py, commit " in page


def test_a_citation_without_site_url_gives_the_path_and_revision_as_such(ldlm_doc, ldlm_files):
    """No address is made up: no `\\url{/ldlm/...}`, no link to the page itself, the path and revision named; no
    sentence about the site's configuration."""
    source = ldlm_doc.root.source
    revision = f"atlas/zoo/ldlm.py, {source.label} (commit date {source.date})"
    page = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    assert (f"Page path: `ldlm/latent_encoder/blocks/mlp/layer_norm/`, generated from {revision} · "
            "data: [layer_norm/index.json](layer_norm/index.json)\n") in page
    assert ("      howpublished = {Page path \\path{ldlm/latent_encoder/blocks/mlp/layer_norm/} of the site, "
            f"atlas/zoo/ldlm.py, {source.label} (commit date {source.date})}},") in page
    assert "      note         = {Component latent\\_encoder.blocks.mlp.layer\\_norm of LDLM," in page
    assert "\\url{" not in page and "Permalink" not in page and "](layer_norm.md)" not in page
    assert "site_url" not in page and "no address" not in page
    assert page.rstrip().endswith(". Page path ldlm/latent\\_encoder/blocks/mlp/layer\\_norm/ of the site.")
    spanish = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.es.md"]
    assert "Ruta de la página: `es/ldlm/latent_encoder/blocks/mlp/layer_norm/`, generada a partir de " in spanish
    assert "@misc{atlas-ldlm-latent-encoder-blocks-mlp-layer-norm-es," in spanish        # a key of its own
    # the model page links the whole model's data
    assert "· the whole model's data: [atlas.json](atlas.json)" in ldlm_files["ldlm/index.md"]


def test_a_citation_with_site_url_gives_the_absolute_url(ldlm_doc):
    from atlas.render import model_pages
    files = model_pages.render(ldlm_doc, site_url="https://atlas.example.org/docs/")
    url = "https://atlas.example.org/docs/es/ldlm/latent_encoder/blocks/"
    page = files["ldlm/latent_encoder/blocks/index.es.md"]
    assert f"Enlace permanente: [{url}]({url}) · datos: [index.json](index.json)\n" in page
    assert f"      howpublished = {{\\url{{{url}}}}}," in page
    assert "Ruta de la página" not in page and "site_url" not in page


def test_bibtex_text_escapes_latex():
    from atlas.render.citation import bibtex_text
    assert bibtex_text("a_b & 50% {x} #1 $y ~^ \\") == \
        "a\\_b \\& 50\\% \\{x\\} \\#1 \\$y \\textasciitilde{}\\textasciicircum{} \\textbackslash{}"


def test_component_json_validates(ldlm_doc, ldlm_files):
    page_schema = {"$schema": SCHEMA["$schema"], "$defs": SCHEMA["$defs"], "$ref": "#/$defs/componentPage"}
    validator = jsonschema.validators.validator_for(page_schema)(page_schema)
    validator.check_schema(page_schema)
    for comp in ldlm_doc.components:
        data = json.loads(ldlm_files[page_paths.data_path(ldlm_doc, comp)])
        validator.validate(data)
        assert data["component"]["id"] == comp.id
    assert len([f for f in ldlm_files if f.endswith("index.json")]) == len(ldlm_doc.components)


NANOGPT = ROOT / "tests" / "fixtures" / "nanogpt.py"


def _build(model: Path, docs: Path):
    assert main(["build", f"{model}:gpt", "--docs", str(docs)]) == 0


def test_permalinks_stable_after_unrelated_edit(tmp_path, capsys):
    model = tmp_path / "m.py"
    shutil.copy(NANOGPT, model)
    docs = tmp_path / "docs"
    _build(model, docs)
    before = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))
    ln = (docs / "gpt/transformer/ln_f.md").read_text()
    text = model.read_text().replace('""" LayerNorm but with an optional bias.', '""" A LayerNorm whose bias is optional.')
    assert text != model.read_text()
    model.write_text(text)
    _build(model, docs)
    assert sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md")) == before
    after = (docs / "gpt/transformer/ln_f.md").read_text()
    assert after != ln
    path = "Page path: `gpt/transformer/ln_f/`"
    assert path in ln and path in after


def test_check_fails_when_only_line_ranges_move(tmp_path, capsys):
    model = tmp_path / "m.py"
    shutil.copy(NANOGPT, model)
    docs = tmp_path / "docs"
    _build(model, docs)
    model.write_text(model.read_text().replace("\nclass MLP(nn.Module):", "\n\nclass MLP(nn.Module):"))
    assert main(["check", f"{model}:gpt", "--docs", str(docs)]) == 1
    assert "stale: gpt/transformer/h/mlp/index.md" in capsys.readouterr().err


def test_round_trip_with_provenance(ldlm_doc):
    assert serialize.loads(serialize.dumps(serialize.as_dict(ldlm_doc))) == ldlm_doc


GIT = ("git", "-c", "user.name=atlas", "-c", "user.email=atlas@example.invalid", "-c", "commit.gpgsign=false")
TINY = '''from torch import nn


class Tiny(nn.Module):
    atlas_inputs = ("x:float32[B, 4]",)

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x){tail}


def tiny():
    return Tiny()
'''


def test_the_revision_is_read_again_in_each_pass(tmp_path, capsys):
    """One process, three passes (as `mkdocs serve` builds again): committed, edited, committed again."""
    import os
    import subprocess
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}     # not a hook's repository or index
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")          # nor the user's hooks and signing

    def git(*args):
        subprocess.run([*GIT, "-C", str(tmp_path), *args], check=True, capture_output=True, env=env)

    def source():
        assert main(["describe", f"{tmp_path / 'tiny.py'}:tiny", "--json"]) == 0
        return json.loads(capsys.readouterr().out)["components"][0]["source"]

    git("init", "-q")
    (tmp_path / "tiny.py").write_text(TINY.format(tail=""))
    git("add", "tiny.py")
    git("commit", "-q", "-m", "first")
    first = source()
    assert first["origin"] == "git" and not first["dirty"] and first["revision"]
    (tmp_path / "tiny.py").write_text(TINY.format(tail=" * 2"))
    edited = source()
    assert edited["dirty"] and edited["revision"] == first["revision"]
    git("commit", "-q", "-am", "second")
    second = source()
    assert not second["dirty"] and second["revision"] != first["revision"]


def test_name_and_version_from_the_metadata_header_are_the_parsers():
    """Every installed distribution's name and version, read from its metadata's header block, are what the email
    parser behind importlib.metadata reads from the whole file."""
    import importlib.metadata

    from atlas.load.source_revision import metadata_field
    dists = list(importlib.metadata.distributions())
    assert len(dists) > 50
    for dist in dists:
        assert (metadata_field(dist, "Name"), metadata_field(dist, "Version")) == (dist.metadata["Name"], dist.metadata["Version"])


def test_a_claim_on_an_inherited_init_names_that_file_at_its_revision():
    """A subclass of nn.Linear in the model's file: its weight and bias are made by nn.Linear's __init__, in
    torch's linear.py, so the accounting claim quotes those lines and names that file at torch's revision, not the
    model's file at the same line numbers."""
    from conftest import fixture_spec

    from atlas import pipeline
    from atlas.render import model_pages
    doc = pipeline.describe(fixture_spec("my_linear"))
    comp = doc.components[0]
    assert comp.source.file.endswith("fixtures/models.py")
    claim = next(c for c in comp.claims if c.check == "accounting")
    init_lines, init_start = inspect.getsourcelines(nn.Linear.__init__)
    assert claim.file == "torch/nn/modules/linear.py" and claim.source.file == claim.file
    assert claim.source.label.startswith(f"torch {torch.__version__}") and claim.source.url.endswith(claim.file)
    assert init_start <= claim.start <= claim.end < init_start + len(init_lines)
    assert "self.weight = Parameter(" in claim.excerpt and claim.excerpt == "\n".join(
        line.rstrip("\n") for line in init_lines[claim.start - init_start:claim.end - init_start + 1])
    own = next(c for c in comp.claims if c.check == "shape probes")       # forward() is the subclass's own
    assert own.source is None and own.file == comp.source.file
    from atlas.render import json_export
    data = json_export.as_dict(doc)
    jsonschema.validate(json.loads(serialize.dumps(data)), SCHEMA)
    assert serialize.from_dict(data) == doc
    page = model_pages.render(doc)[page_paths.page_path(doc, comp)]
    assert (f"`torch/nn/modules/linear.py` lines {claim.start}–{claim.end} at {claim.source.label} · "
            f"[view]({claim.source.url}#L{claim.start}-L{claim.end})") in page


def test_a_file_outside_version_control_is_said_so_not_as_a_revision(tmp_path):
    """A model file in no repository has no revision: its excerpts and claims say the file's state in brackets,
    never "at not under version control"."""
    from atlas import pipeline
    from atlas.render import model_pages
    (tmp_path / "tiny.py").write_text(TINY.format(tail=""))
    doc = pipeline.describe(f"{tmp_path / 'tiny.py'}:tiny")
    page = model_pages.render(doc)[page_paths.page_path(doc, doc.components[0])]
    src = doc.components[0].source
    assert (src.origin, src.revision, src.label) == ("file", None, "not under version control")
    x = src.excerpts[-1]
    assert f"`tiny.py` lines {src.excerpts[0].start}–" in page and f"{x.end} (not under version control)" in page
    claim = doc.components[0].claims[0]
    assert f"`tiny.py` lines {claim.start}–{claim.end} (not under version control)" in page
    assert " at not under version control" not in page and "at not yet committed" not in page


def test_steps_through_one_part_say_no_order():
    """"Its steps run through Encoder, in that order." named one part and an order (a Siamese network's)."""
    from atlas import pipeline
    from atlas.load import spec
    doc = pipeline.document(spec.load(f"{ROOT}/tests/fixtures/models.py:siamese"), pipeline.Settings(cost=False))
    assert [str(fact) for fact in doc.root.explanation] == ["Its steps run through Encoder."]
