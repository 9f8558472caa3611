"""The model page's data-flow diagram: which child feeds which, read off the recorded forward of LDLM."""
import re

from atlas.render import diagram


def _flow(doc, cid=""):
    comp = next(c for c in doc.components if c.id == cid)
    return comp, comp.flow


def test_ldlm_model_flow_follows_the_forward(ldlm_doc):
    _, flow = _flow(ldlm_doc)
    nodes = [(n.kind, n.component or n.label) for n in flow.nodes]
    assert nodes == [("input", "input_ids"), ("module", "frozen_lm.transformer"), ("module", "feature_standardizer"),
                     ("module", "latent_encoder"), ("input", "t"), ("input", "noise"), ("module", "denoiser"),
                     ("module", "latent_decoder"), ("module", "frozen_lm.lm_head"), ("output", "output")]
    index = {n: i for i, n in enumerate(n for _, n in nodes)}
    edges = set(flow.edges)
    # the encoder's latents, the time step and the noise all reach the denoiser; nothing skips it
    assert {(index["latent_encoder"], index["denoiser"]), (index["t"], index["denoiser"]),
            (index["noise"], index["denoiser"])} <= edges
    assert all(a < b for a, b in edges)
    assert (index["denoiser"], index["latent_decoder"]) in edges


def test_ldlm_diagram_links_every_module_node(ldlm_doc):
    comp, flow = _flow(ldlm_doc)
    out = diagram.svg(ldlm_doc, comp, lambda c: f"#{c.id}")
    assert out.startswith("<svg")
    links = set(re.findall(r'href="#([^"]*)"', out))
    called = {n.component for n in flow.nodes if n.kind == "module"}
    assert links == called
    for label in ("input_ids", "noise"):
        assert label in out
