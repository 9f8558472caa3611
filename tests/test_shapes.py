"""Named symbolic shapes: derived on the meta device, checked against real CPU forwards."""

import json

import pytest
import sympy
import torch
from conftest import ROOT, fixture_spec

from atlas.cli import main
from atlas.document import ShapeStatus, input_specs
from atlas.extract import walk
from atlas.extract.probes import dim_fitting, probe_runs, probe_shapes, probe_sizes
from atlas.load import spec
from atlas.render import filters

VOCAB = input_specs.vocabulary({"B": "batch", "T": "positions"}, None)
PROBES = [{"B": 2, "T": 6}, {"B": 3, "T": 10}, {"B": 5, "T": 14}]


def fitted(f):
    return dim_fitting.fit([f(p["B"], p["T"]) for p in PROBES], PROBES, VOCAB)


def test_fit_expressions():
    assert fitted(lambda B, T: 768).value == 768
    assert fitted(lambda B, T: T).symbol == "T" and fitted(lambda B, T: T).name == "positions"
    assert fitted(lambda B, T: 2 * T).symbol == "2*T"
    assert fitted(lambda B, T: T // 2).symbol == "T/2"
    assert fitted(lambda B, T: T + 1).symbol == "T + 1"
    assert fitted(lambda B, T: B * T).symbol == "B*T" and fitted(lambda B, T: B * T).name == "batch × positions"
    assert fitted(lambda B, T: 12 * B).symbol == "12*B"
    assert fitted(lambda B, T: T * T * B).symbol == "?"


def test_fits_must_hold_at_the_checking_probes():
    """Four probes in which the batch and the length grow together, close together, fit a conv's length
    (floor((T - 10)/5) + 1 from T = 60 to 73) to the batch; the checking probes, well past them and moving the
    symbols apart, keep the formula that holds there too, and one nothing fits stays unknown rather than wrong."""
    probes = [{"B": b, "T": t} for b, t in ((3, 60), (4, 64), (6, 68), (8, 73))]
    conv = lambda B, T: (T - 10) // 5 + 1                                           # noqa: E731
    values = [conv(p["B"], p["T"]) for p in probes]
    assert dim_fitting.fit(values, probes, VOCAB).symbol == "ceiling(B/2) + 9"         # four probes alone: the batch
    checks = probe_sizes.check_sizes(probes)
    assert len(checks) == 4 and all(c["T"] not in (60, 64, 68, 73) for c in checks)
    assert {c["T"] > 73 for c in checks} == {True, False} and {c["B"] > 8 for c in checks} == {True, False}
    fitted = dim_fitting.fit(values, probes, VOCAB, [(c, conv(c["B"], c["T"])) for c in checks])
    assert fitted.symbol == "floor(T/5) - 1"
    twice = lambda B, T: conv(B, conv(B, T))                                        # noqa: E731
    assert dim_fitting.fit([twice(p["B"], p["T"]) for p in probes], probes, VOCAB,
                      [(c, twice(c["B"], c["T"])) for c in checks]).symbol == "?"


def test_a_rounding_to_a_multiple_of_four_is_told_from_one_to_two():
    """Funnel pools twice, then keeps an even number of positions: 2*ceiling(T/4). Its probes, moved up to the
    17 positions the code needs, were T = 17, 21, 25, 30, and the checks 18 and 57, at all of which
    ceiling(T/2) + 1 gives the same sizes; it was written on the page, and is wrong at T = 16. The checks now take
    four sizes in a row, which tell them apart, and the multiple of a rounding is fitted."""
    probes = probe_sizes.probe_sizes(["B", "T"], {"T": (17, None)})
    assert [p["T"] for p in probes] == [17, 21, 25, 30]
    pooled = lambda B, T: 2 * -(-T // 4)                                            # noqa: E731
    checks = [(c, pooled(c["B"], c["T"])) for c in probe_sizes.check_sizes(probes, {"T": (17, None)})]
    assert {c["T"] for c, _ in checks} >= {18, 19, 20}
    assert dim_fitting.fit([pooled(p["B"], p["T"]) for p in probes], probes, VOCAB, checks).symbol == "2*ceiling(T/4)"
    once = lambda B, T: -(-T // 2) + 1                                              # noqa: E731
    assert dim_fitting.fit([once(p["B"], p["T"]) for p in probes], probes, VOCAB,
                      [(c, once(c["B"], c["T"])) for c, _ in checks]).symbol == "ceiling(T/2) + 1"


def test_a_floor_that_is_a_ceiling_is_written_as_one(capsys):
    """A stride-2 conv padded by 1 gives floor((H - 1)/2) + 1 rows: written floor(H/2 - 1/2) + 1 (ResNet's pages),
    it is ceiling(H/2); one of kernel 3 unpadded, floor((H - 3)/2) + 1, stays a floor. Equal at every size."""
    from torch.fx.experimental.symbolic_shapes import FloorDiv

    from atlas.extract.trace.symbolic_inputs import readable
    h = sympy.Symbol("H", positive=True, integer=True)
    assert readable(FloorDiv(h - 1, 2) + 1) == sympy.ceiling(h / 2)
    assert readable(FloorDiv(h + 3, 4)) == sympy.ceiling(h / 4)
    kept = readable(FloorDiv(h - 3, 2) + 1)
    assert not kept.has(sympy.ceiling) and all(kept.subs(h, n) == (n - 3) // 2 + 1 for n in range(3, 40))
    assert main(["describe", fixture_spec("stride_two_conv"), "--json", "--verify"]) == 0
    import json
    root = json.loads(capsys.readouterr().out)["components"][0]
    assert [d["symbol"] if isinstance(d, dict) else d for d in root["outputs"][0]["shape"]] == \
        ["B", 4, "ceiling(H/2)", "ceiling(W/2)"] and root["verification"]["verified"]


def test_a_height_is_not_fitted_to_the_width(capsys):
    """The code needs exact sizes (a loop over rows), so the shapes come from probes, in which height and width
    grow together: the pooled height was written floor(W/5). The checking probes move them apart."""
    assert main(["describe", "tests/fixtures/recording_models.py:two_strides", "--json", "--verify"]) == 0
    import json
    root = json.loads(capsys.readouterr().out)["components"][0]
    assert [d["symbol"] if isinstance(d, dict) else d for d in root["outputs"][0]["shape"]] == \
        ["B", 1, "floor(H/5)", "floor(W/3)"]
    assert root["verification"]["verified"]


def evaluate(dim, sizes):
    if not dim.symbolic:
        return dim.value
    return int(sympy.sympify(dim.symbol).subs({sympy.Symbol(k): v for k, v in sizes.items()}))


def test_ldlm_symbolic_shapes_match_real_cpu_forwards(ldlm_doc):
    """One real CPU forward at two small sizes; every page's shapes evaluate to what was observed."""
    torch.manual_seed(0)
    model = spec.load("atlas.zoo.ldlm:ldlm", device="cpu").model.eval()
    specs, _ = input_specs.resolve([input_specs.parse_input(t) for t in ldlm_doc.inputs],
                              input_specs.vocabulary(model.atlas_dims, model.atlas_fixed_dims))
    checked = 0
    for sizes in ({"B": 1, "T": 3}, {"B": 2, "T": 4}):
        observed = probe_runs.capture(model, probe_runs.example_inputs(specs, sizes, "cpu"))
        for comp in ldlm_doc.components:
            module = model.get_submodule(comp.module_paths[0])
            assert comp.shapes.status is ShapeStatus.DERIVED, comp.id
            if id(module) not in observed:      # not called by LDLM's forward: probed with its own inputs
                own, _ = input_specs.resolve([input_specs.parse_input(t) for t in module.atlas_inputs], input_specs.vocabulary(None, None))
                observed.update(probe_runs.capture(module, probe_runs.example_inputs(own, sizes, "cpu")))
            ins, outs = observed[id(module)]
            for declared, seen in ((comp.shapes.inputs, ins), (comp.shapes.outputs, outs)):
                assert [t.name for t in declared] == [n for n, _, _ in seen], comp.id
                for t, (_, shape, _) in zip(declared, seen):
                    assert tuple(evaluate(d, sizes) for d in t.dims) == shape, (comp.id, t.name)
                    checked += 1
    assert checked > 250


def test_seed_shapes_on_pages(ldlm_files):
    ln = ldlm_files["ldlm/latent_encoder/blocks/mlp/layer_norm.md"]
    # seed 000: the symbols the block's equations give the LayerNorm's input and output
    assert "**in:** $u'_n$ [B batch, T positions, 768 d]<br>" in ln
    assert "**out:** $\\bar{u'}_n$ [B batch, T positions, 768 d]" in ln
    block = ldlm_files["ldlm/latent_encoder/blocks/index.md"]
    assert "**in:** $u_n$ [B batch, T positions, 768 d] · $h$ [B batch, T positions, 768 d]<br>" in block
    assert "**out:** $u_{n+1}$ [B batch, T positions, 768 d]" in block
    k_norm = ldlm_files["ldlm/latent_encoder/blocks/attn/k_norm.md"]
    # its input is k split into heads: the caller names no one symbol so, the page's own x does
    assert "**in:** $x$ [B batch, 12 heads, 2T positions, 64 head features]<br>" in k_norm
    assert "**out:** $K$ [B batch, 12 heads, 2T positions, 64 head features]" in k_norm
    assert "$y$ [B batch, T positions, 2304 = 3d]" in ldlm_files["ldlm/latent_encoder/blocks/attn/qkv.md"]
    assert "**in:** $\\mathrm{ids}$ [B batch, T positions]<br>" in ldlm_files["ldlm/frozen_lm/index.md"]


def test_tuple_dict_outputs_and_expressions():
    doc = describe("shapes")
    root = doc.root.shapes
    assert [t.name for t in root.outputs] == ["output[0]", "output[1]"]
    assert [d.symbol or d.value for d in root.outputs[0].dims] == ["B", "floor(T/2)", 4]    # odd T too
    assert [d.symbol or d.value for d in root.outputs[1].dims] == ["B*T + B", 4]
    split = doc.component("split").shapes
    assert [t.name for t in split.outputs] == ["output['a']", "output['b']"]
    assert [d.symbol or d.value for d in split.outputs[1].dims] == ["B", "T + 1", 4]


def line_of_fixture(text: str) -> int:
    return next(i for i, line in enumerate((ROOT / "tests" / "fixtures" / "models.py").read_text().splitlines(), 1)
                if text in line)


def describe(name, inputs_=None):
    loaded = spec.load(fixture_spec(name))
    return probe_shapes.derive(loaded.model, walk.walk(loaded), inputs_)


def test_data_dependent_falls_back_to_cpu(capsys):
    doc = describe("data_dependent")
    s = doc.component("fc").shapes
    assert s.status is ShapeStatus.DERIVED and s.method == "cpu"
    assert "meta-device forward failed" in s.reason


def test_probes_run_on_a_cpu_copy_say_so_on_stderr(capsys):
    """Reading its input through NumPy, the forward runs neither on fake tensors nor on the meta device: the
    probes' CPU fallback is said once on stderr and on the model page, as every fallback is (DeepSeek-V2's was
    only in each part's shapes)."""
    assert main(["describe", fixture_spec("reads_numpy"), "--json"]) == 0
    out = capsys.readouterr()
    note = ("the meta-device forward failed (NotImplementedError: Cannot copy out of meta tensor; no data! "
            f"(models.py:{line_of_fixture('.numpy().std()')})), so a tiny CPU forward was run")
    assert out.err.count("the meta-device forward failed") == 1 and note in out.err
    assert note in json.loads(out.out)["input_notes"]


def test_failing_forward_is_documented_with_the_reason(tmp_path, capsys):
    docs = tmp_path / "docs"
    assert main(["build", fixture_spec("always_fails"), "--docs", str(docs)]) == 0
    out = capsys.readouterr().out
    assert "shapes not derived for 2" in out
    page = (docs / "alwaysfails" / "fc.md").read_text()
    assert "*Shapes not derived:* the meta-device forward failed" in page
    assert "RuntimeError: this model refuses every input (models.py:" in page


def test_inputs_discovered_from_the_first_layer(tmp_path, capsys):
    assert main(["build", fixture_spec("two_layer_mlp"), "--docs", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "shapes not derived for 0" in captured.out
    assert "in_features = 3" in captured.err


def test_undiscoverable_inputs_still_build(tmp_path, capsys):
    assert main(["build", fixture_spec("graph_input"), "--docs", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "shapes not derived for 2" in captured.out
    assert "graph" in captured.err
    assert "no example inputs" in (tmp_path / "graphinput" / "index.md").read_text()


def test_input_flag(capsys):
    import json
    assert main(["describe", fixture_spec("two_layer_mlp"), "--json", "--input", "x:float32[B,3]"]) == 0
    data = json.loads(capsys.readouterr().out)
    first = {c["id"]: c for c in data["components"]}["0"]
    assert first["inputs"] == [{"name": "input", "shape": [{"symbol": "B", "name": "batch"}, 3], "dtype": "float32",
                                "symbol": ["ident", "x"]}]     # the x of the Linear's own equations
    assert first["outputs"][0]["shape"] == [{"symbol": "B", "name": "batch"}, 5]


def test_symbols_of_the_users_own_are_printed_once_and_listed(tmp_path, capsys):
    """`--input x:float32[V,8] --input edge_index:int64[2,K]`: V and K are no standard symbol and have no name. The
    pages print them alone (`[V, 8]`, not "V V"), the model page lists them, and the JSON has them with no name."""
    import json
    args = ["--input", "x:float32[V,8]", "--input", "edge_index:int64[2,K]"]
    assert main(["describe", fixture_spec("message_passing"), "--json", *args]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dims"]["symbols"] == [{"symbol": "V", "name": ""}, {"symbol": "K", "name": ""}]
    model, message = data["components"]
    assert model["outputs"][0]["shape"] == [{"symbol": "V", "name": ""}, 8]
    assert message["inputs"][0]["shape"] == [{"symbol": "K", "name": ""}, 16]
    assert main(["build", fixture_spec("message_passing"), "--docs", str(tmp_path), *args]) == 0
    home = (tmp_path / "messagepassing" / "index.md").read_text()
    assert r"$x$ [V, 8] · $\mathrm{edge}_{\mathrm{index}}$ [2, K]" in home and "Symbols: V, K;" in home
    assert "$y$ [V, 8]" in home and "V V" not in home
    assert "$x$ [K, 16]" in (tmp_path / "messagepassing" / "message.md").read_text()


def test_bad_input_flag(capsys):
    assert main(["describe", fixture_spec("two_layer_mlp"), "--input", "x:float99[B]"]) == 2
    assert "unknown dtype 'float99'" in capsys.readouterr().err


def test_70b_config_stays_on_meta():
    loaded = spec.load(f"{fixture_spec('x').rsplit('/', 1)[0]}/llama.py:llama3_70b")
    doc = probe_shapes.derive(loaded.model, walk.walk(loaded))
    assert doc.totals.parameters == 70_553_706_496
    assert all(p.device.type == "meta" for p in loaded.model.parameters())
    q = doc.component("layers.self_attn.q_proj").shapes
    assert q.method == "meta" and [d.value or d.symbol for d in q.outputs[0].dims] == ["B", "T", 8192]


def test_a_fit_must_hold_at_every_probe():
    """Longformer pads T up to a multiple of its window: ceil(T/8)*8 is 8, 16, 16 at (B, T) = (2, 6), (3, 10),
    (5, 14), which -8*B + 4*T fits too. The fourth probe refutes it; the multiple of a rounding fits them all."""
    from atlas.document import input_specs as inputs_mod
    from atlas.extract.probes.dim_fitting import fit
    from atlas.extract.probes.probe_sizes import probe_sizes
    vocab = inputs_mod.vocabulary(None, None)
    probes = probe_sizes(["B", "T"])
    assert len(probes) == 4
    padded = [-(-p["T"] // 8) * 8 for p in probes]
    assert padded[:3] == [8, 16, 16] and fit(padded, probes, vocab).symbol == "8*ceiling(T/8)"
    assert fit([p["T"] // 2 for p in probes], probes, vocab).symbol == "floor(T/2)"
    assert fit([-(-p["T"] // 2) for p in probes], probes, vocab).symbol == "ceiling(T/2)"     # Funnel's pooling
    assert fit([p["B"] * p["T"] + 1 for p in probes], probes, vocab).symbol == "B*T + 1"


def test_probes_start_where_the_code_needs_them():
    """A window of 8 wants T >= 16, a position table T <= 20: the probes move into that range."""
    from atlas.extract.probes.probe_sizes import probe_sizes
    assert [p["T"] for p in probe_sizes(["B", "T"], {"T": (16, None)})] == [16, 20, 24, 29]
    assert [p["T"] for p in probe_sizes(["B", "T"], {"T": (None, 15)})] == [2, 6, 10, 15]
    assert [p["B"] for p in probe_sizes(["B", "T"], {"T": (16, None)})] == [2, 3, 5, 7]


def test_probes_tell_height_from_width_and_find_a_cnns_stride():
    """EfficientNet, probed from 131 px up: H and W moved in lockstep (W = H - 2 at every probe, equal once both
    were shifted to 131), so a height read `ceiling(W/2) - 1`; floor(H/2) was not found from an odd first probe;
    and probes 13 px apart left a stride of 32 constant, `[B, 320, 4, 4]` at every size."""
    from atlas.extract.probes.dim_fitting import fit
    from atlas.extract.probes.probe_sizes import probe_sizes
    vocab = input_specs.vocabulary(None, None)
    probes = probe_sizes(["B", "H", "W"], {"H": (131, None), "W": (131, None)})
    assert len({p["H"] - p["W"] for p in probes}) > 1
    assert fit([p["H"] // 2 for p in probes], probes, vocab).symbol == "floor(H/2)"
    assert fit([-(-p["W"] // 2) for p in probes], probes, vocab).symbol == "ceiling(W/2)"
    assert fit([p["W"] // 32 for p in probes], probes, vocab).symbol == "floor(W/32)"
    assert fit([p["H"] // 32 for p in probes], probes, vocab).symbol == "floor(H/32)"


def _strided_by_search(mono, xs, values, checks=()):
    """The stride fit by trying every shift in the window: what shapes._strided_once must agree with. None where
    a fit with a smaller shift, or another shift of the same stride, gives other sizes from the smallest point to
    four times the largest."""
    points = [*zip(xs, values), *checks]
    at = lambda q, m, c, x: -((-(x + m)) // q) if c else (x + m) // q                 # noqa: E731
    best, fits = None, []
    for q in range(2, 65):
        centre = values[0] * q - xs[0]
        for m in range(centre - q, centre + q + 1):
            for ceiling in (False, True):
                if all(at(q, m, ceiling, x) == v for x, v in points):
                    fits.append((q, m, ceiling))
                    key = (dim_fitting._largest_prime(q), abs(m), q, ceiling)
                    if best is None or key < best[0]:
                        best = (key, (sympy.ceiling if ceiling else sympy.floor)((mono + m) / q), (q, m, ceiling))
    if best is None:
        return None
    span = range(min(x for x, _ in points), 4 * max(x for x, _ in points) + 1)
    q, m, ceiling = best[2]
    if m != 0 and any((abs(m2) < abs(m) or (q2 == q and m2 != m)) and
                      any(at(q2, m2, c2, x) != at(q, m, ceiling, x) for x in span) for q2, m2, c2 in fits):
        return None
    return best[:2]


def test_a_remainder_tested_against_zero_is_the_plain_remainder():
    """(-T) % 256 > 0, Zamba2's test for padding, reads Mod(255*T, 256) > 0 in sympy; it holds where T is no
    multiple of 256. A factor the modulus shares is divided out; a value that is not a test is left alone."""
    from atlas.extract.trace.symbolic_inputs import readable
    t = sympy.Symbol("T", positive=True, integer=True)
    assert readable(sympy.Mod(-t, 256) > 0) == (sympy.Mod(t, 256) > 0)
    assert readable(sympy.Eq(sympy.Mod(2 * t, 8), 0)) == sympy.Eq(sympy.Mod(t, 4), 0)
    assert readable(sympy.Ne(sympy.Mod(6 * t, 9), 0)) == sympy.Ne(sympy.Mod(t, 3), 0)
    for before, after in ((sympy.Mod(-t, 256) > 0, sympy.Mod(t, 256) > 0),
                          (sympy.Ne(sympy.Mod(6 * t, 9), 0), sympy.Ne(sympy.Mod(t, 3), 0))):
        assert all(bool(before.subs(t, n)) == bool(after.subs(t, n)) for n in range(1, 600))
    assert readable(sympy.Mod(-t, 256) <= 0) == (sympy.Mod(t, 256) <= 0)      # the branch not taken
    assert readable(sympy.Eq(sympy.Mod(-3 * t, 12), 0)) == sympy.Eq(sympy.Mod(t, 4), 0)
    assert readable(sympy.Mod(-t, 256) + 1) == sympy.Mod(-t, 256) + 1


@pytest.mark.parametrize("window", [8, 16])
def test_a_length_padded_to_whole_windows_is_fitted(window):
    """Longformer pads its positions to a multiple of its attention window (here 8): the embeddings, the layers
    and the attention read [B, ?, 64], where the page can say [B, 8·ceiling(T/8), 64]. (A window wider than the
    probes, 32 or a released model's 512, still reads "?": every probe pads to one window.)"""
    probes = probe_sizes.probe_sizes(["B", "T"])
    padded = lambda B, T: window * -(-T // window)                                  # noqa: E731
    checks = [(c, padded(c["B"], c["T"])) for c in probe_sizes.check_sizes(probes)]
    fitted = dim_fitting.fit([padded(p["B"], p["T"]) for p in probes], probes, VOCAB, checks).symbol
    assert fitted == f"{window}*ceiling(T/{window})"
    assert filters.compact_symbol(fitted) == f"{window}·ceiling(T/{window})"


def test_stride_shifts_from_intervals_equal_the_search():
    import random
    rng = random.Random(0)
    T = sympy.Symbol("T", positive=True, integer=True)
    fitted = 0
    for _ in range(60):
        q, m, ceiling = rng.randint(1, 40), rng.randint(-30, 30), rng.random() < 0.5
        size = (lambda x: -((-(x + m)) // q)) if ceiling else (lambda x: (x + m) // q)      # noqa: E731
        xs = sorted(rng.sample(range(5, 300), 4))
        values = [size(x) for x in xs]
        if rng.random() < 0.3:
            values[2] += 1                      # a size no stride gives
        check = rng.randint(5, 600)
        if values[-1] <= values[0]:
            continue
        got = dim_fitting._strided_once(T, xs, values, [(check, size(check))])
        assert got == _strided_by_search(T, xs, values, [(check, size(check))]), (q, m, ceiling, xs, values)
        fitted += got is not None
    assert fitted >= 10                     # the rest: another shift fits the four points too


def test_a_patch_grid_over_height_and_width_is_fitted():
    """DINOv2's tokens are floor(H/14)·floor(W/14) + 1, probed at (H, W) from (40, 56) to (53, 68): no rounding
    of one size fits them, yet 4*floor(H/16 + 7/16) held at every probe and check (the W check, 93, gave 2·6 = 12
    as 3·4 does), and the page gave 12 tokens at 56 × 56 px, where there are 16. A patch of 14 is no stride of
    16 shifted by 6, either, though these probes do not tell them apart (see shapes._strided)."""
    vocab = input_specs.vocabulary({"B": "batch", "H": "height", "W": "width"}, None)
    probes = [{"B": b, "H": h, "W": w} for b, h, w in ((3, 40, 56), (4, 44, 61), (6, 48, 63), (8, 53, 68))]
    checks = [{"B": 19, "H": 41, "W": 93}, {"B": 5, "H": 80, "W": 57}, {"B": 5, "H": 42, "W": 58},
              {"B": 7, "H": 43, "W": 59}]
    tokens = lambda s: (s["H"] // 14) * (s["W"] // 14) + 1                      # noqa: E731
    fitted = dim_fitting.fit([tokens(p) for p in probes], probes, vocab, [(c, tokens(c)) for c in checks])
    assert fitted.symbol == "floor(H/14)*floor(W/14) + 1" and fitted.name == "height × width"
    assert filters.compact_symbol("floor(H/14)*floor(W/14) + 1") == "floor(H/14)·floor(W/14) + 1"


def test_sizes_on_the_branch_the_record_took_are_written_as_that_branch_has_them():
    """Falcon-H1's mixer pads T to a multiple of its chunk of 16 only when it is not one; recorded at T = 128, its
    output length read floor((T + Mod(15T, 16))/floor(T/16 + Mod(15T, 16)/16))·floor(T/16 + Mod(15T, 16)/16),
    32 at T = 20 where the output has 20. On the branch the record took, a multiple of 16, that is T."""
    from atlas.extract.trace import branch_sizes
    on = branch_sizes.multiples([("Mod(T, 16) <= 0", "modeling_falcon_h1.py:571"), ("Mod(S, 8) > 0", None),
                                 ("Eq(Mod(H, 4), 0)", "x.py:1")])
    assert on == {"T": 16, "H": 4}                      # a size that is no multiple tells nothing to substitute
    T, B = sympy.symbols("T B", positive=True, integer=True)
    chunks = sympy.floor(T / 16 + sympy.Mod(15 * T, 16) / 16)
    mixer = sympy.floor((T + sympy.Mod(15 * T, 16)) / chunks) * chunks
    assert branch_sizes.on_branch(mixer, on) == T
    assert branch_sizes.on_branch(sympy.floor(T / 16), on) == T / 16
    assert branch_sizes.on_branch(B * T + 3, on) == B * T + 3               # nothing shorter: unchanged
    assert branch_sizes.on_branch(mixer, {}) == mixer and branch_sizes.on_branch(7, on) == 7
    assert branch_sizes.on_branch(528 * T * sympy.floor(T / 16) * 16, on) == 528 * T**2


def test_a_shifted_stride_another_unshifted_one_also_fits_is_not_guessed():
    """Depth Anything's output height is 14·floor(H/14) (a patch of 14, then upsampling by 14). Probed from 40 to
    80 px, floor((H + 6)/16) fits every probe and check as well, and the smoother stride was taken: 42 rows at
    56 px, where there are 56. Where a fit with a smaller shift gives other sizes, the dim reads "?"."""
    vocab = input_specs.vocabulary({"B": "batch", "H": "height", "W": "width"}, None)
    probes = [{"B": b, "H": h, "W": w} for b, h, w in ((3, 40, 56), (4, 44, 61), (6, 48, 63), (8, 53, 68))]
    checks = [{"B": 19, "H": 41, "W": 93}, {"B": 5, "H": 80, "W": 57}, {"B": 5, "H": 42, "W": 58},
              {"B": 7, "H": 43, "W": 59}]
    height = lambda s: 14 * (s["H"] // 14)                                      # noqa: E731
    assert dim_fitting.fit([height(p) for p in probes], probes, vocab, [(c, height(c)) for c in checks]).symbol == "?"


def test_a_check_that_gives_a_fraction_refutes_the_fit():
    """A fit was checked with int() of its value, which truncates: floor(H/4) read H/4 from probes starting at
    64 px (64, 96, 128, 168 are multiples of 4), and a check at 65 px gave int(65/4) = 16 = floor(65/4)."""
    limits = {"H": (64, None)}
    probes = probe_sizes.probe_sizes(["B", "H"], limits)
    checks = probe_sizes.check_sizes(probes, limits)
    quarter = lambda s: s["H"] // 4                                             # noqa: E731
    vocab = input_specs.vocabulary({"B": "batch", "H": "height"}, None)
    fitted = dim_fitting.fit([quarter(p) for p in probes], probes, vocab, [(c, quarter(c)) for c in checks]).symbol
    assert fitted in ("floor(H/4)", "?"), fitted


def test_the_model_page_says_how_its_shapes_were_found():
    """A model whose shapes come from probes at several sizes (a Python loop over time pins B and T) said "the
    shapes come from one forward on fake tensors" right above the note that they came from forwards at several
    sizes. The sentence follows the model's own record."""
    from atlas import pipeline
    from atlas.render import model_pages, page_paths
    one = "the shapes come from one forward on fake tensors whose sizes are these symbols, never typed."
    several = "the shapes come from forwards at several sizes of these symbols, each dim the expression that fits them"
    for given, method, said, unsaid in ((fixture_spec("two_layer_mlp"), "fake", one, several),
                                        (f"{ROOT / 'tests' / 'fixtures' / 'contractions.py'}:cell_loop", "meta",
                                         several, one)):
        doc = pipeline.describe(given)
        home = model_pages.render(doc)[page_paths.page_path(doc, doc.root)]
        assert doc.root.shapes.method == method and said in home and unsaid not in home, given


def test_a_part_used_through_other_methods_is_recorded_where_its_parent_calls_them():
    """EnCodec's quantizer is used through `self.quantizer.encode(...)` and `.decode(...)`: its page read "not
    called by the model's forward()", which its reader knows to be false. Its first method the parent calls is
    recorded as its call, with its equations checked against that method."""
    from atlas import pipeline
    doc = pipeline.describe(fixture_spec("quantized_autoencoder"))
    codebook = doc.component("codebook")
    assert codebook.shapes.status is ShapeStatus.DERIVED and codebook.shapes.called_as == "encode"
    assert codebook.equations.verification.verified
    assert doc.root.equations.verification.verified
    assert doc.component("decoder").shapes.status is ShapeStatus.DERIVED
    # a child of the part called past it (OPTForCausalLM's `self.model.decoder(...)`) is no method of the part
    core = pipeline.describe(fixture_spec("reaching_past")).component("core")
    assert core.shapes.reason == "not called by the model's forward() with the example inputs"


def test_a_shift_the_probes_cannot_pin_reads_unknown_not_a_guess():
    """Moonshine's first conv (kernel 127, stride 64) gives floor((T - 63)/64) positions; probes at 200, 300 and
    400 fit floor((T - 45)/64) as well, and the page stated that one, false at T = 172. Where another shift of the
    stride fits the probes and gives other sizes, the size reads "?"; an unshifted one still fits."""
    vocab = input_specs.vocabulary(None, None)
    xs = [200, 300, 400]
    conv = dim_fitting.fit([(t - 127) // 64 + 1 for t in xs], [{"B": 2, "T": t} for t in xs], vocab)
    assert conv.symbol == "?", conv
    assert dim_fitting.fit([t // 32 for t in (136, 221, 255)], [{"W": t} for t in (136, 221, 255)], vocab).symbol == \
        "floor(W/32)"


def test_a_part_whose_weights_its_parent_uses_says_so():
    """nn.MultiheadAttention hands its out_proj's weight and bias to F.multi_head_attention_forward and never calls
    it: the page said only that the model's forward() does not call it, and "Not counted", though every FLOP of it
    is in its parent's count."""
    from conftest import ROOT

    from atlas import i18n, pipeline
    from atlas.load import spec
    doc = pipeline.document(spec.load(f"{ROOT}/tests/fixtures/golden_models.py:encoder_layer"),
                            pipeline.Settings(verify=False))
    out_proj = doc.component("self_attn.out_proj")
    assert out_proj.shapes.method == "own"
    assert i18n.render(out_proj.shapes.reason).endswith("its weights are used by `self_attn`, whose own code computes "
                                                        "with them")
    assert i18n.render(out_proj.cost_reason).startswith("Counted in the cost of `self_attn`")
