"""Side inputs in the data-flow diagram: Llama 3 8B's rotary embedding is handed the hidden state only for its dtype
and device; it computes cos/sin from positions, so it feeds the decoder layers beside the chain and is not a link
of it (Embedding → DecoderLayer). Read from the committed docs/llama-3-8b/atlas.json."""
import json
import re
from pathlib import Path

from atlas.document import serialize
from atlas.render import diagram

ROOT = Path(__file__).resolve().parents[1]


def _llama():
    return serialize.from_dict(json.loads((ROOT / "docs" / "llama-3-8b" / "atlas.json").read_text()))


def _node(flow, component):
    return next(i for i, n in enumerate(flow.nodes) if n.component == component)


def test_rotary_is_a_side_input_of_the_decoder_layers():
    doc = _llama()
    flow = doc.component("model").flow
    embed, rotary, layers = (_node(flow, c) for c in ("model.embed_tokens", "model.rotary_emb", "model.layers"))
    assert flow.nodes[rotary].side and not flow.nodes[embed].side and not flow.nodes[layers].side
    assert (embed, rotary) not in flow.edges            # the hidden state is read for its dtype alone
    assert (rotary, layers) in flow.edges and (embed, layers) in flow.edges
    # the chain: what is not a side node or an input, in the forward's order
    chain = [n.component for n in flow.nodes if n.kind == "module" and not n.side]
    assert chain == ["model.embed_tokens", "model.layers", "model.norm"]


def test_diagram_draws_rotary_beside_the_chain():
    doc = _llama()
    svg = diagram.svg(doc, doc.root, lambda c: f"#{c.id}")
    boxes = {}
    for m in re.finditer(r'<a href="#([^"]+)"><title>[^<]*</title><rect( class="[^"]*")? x="([\d.]+)" '
                         r'y="([\d.]+)" width="([\d.]+)"', svg):
        boxes[m.group(1)] = (float(m.group(3)), float(m.group(4)), float(m.group(5)), m.group(2) or "")
    ex, ey, ew, _ = boxes["model.embed_tokens"]
    lx, ly, _, _ = boxes["model.layers"]
    rx, ry, rw, rclass = boxes["model.rotary_emb"]
    assert "atlas-flow-side" in rclass
    assert lx == ex and rx + rw < ex                    # rotary left of the column the chain stands in
    # the embedding's arrow goes straight down to the decoder layers: nothing stands between them
    assert not [c for c, (x, y, _, _) in boxes.items() if x == ex and ey < y < ly]
    lines = [tuple(float(v) for v in m.groups()) for m in re.finditer(
        r'<line class="atlas-flow-edge" x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)"', svg)]
    mid = ex + ew / 2
    assert [ln for ln in lines if abs(ln[0] - mid) <= 1 and abs(ln[2] - mid) <= 1 and abs(ln[1] - ey - 40) <= 1
            and abs(ln[3] - ly) <= 1]
