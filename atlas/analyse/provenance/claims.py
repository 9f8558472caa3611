"""Where each component's code lives: pinned excerpts, claims tied to lines, and a few structural facts.

Line ranges come from the real class's code (the lines `inspect` gives: atlas.extract.source_spans), never from typing.
Paths are shown relative to the git checkout or to site-packages, so no page depends on where a machine keeps its files,
and nothing depends on the clock.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from atlas.analyse.equations import leaves
from atlas.analyse.provenance.code_reader import HEADER_LINES, CodeReader
from atlas.analyse.provenance.explanation import explanation, mlp_multiplier
from atlas.document import Claim, Component, ModelDoc, Source, calculation
from atlas.i18n import lowered, msg, msgn
from atlas.load.hooks import hooks_of

CLAIM_SPAN = 24                      # lines of code a claim's excerpt may span around its main fact


HYPER = {"eps": msg("epsilon"), "p": msg("dropout probability"), "approximate": msg("GELU approximation"),
         "softcap": msg("softcap"), "heads": msg("heads"), "head_features": msg("features per head"),
         "num_heads": msg("heads"), "features": msg("features"), "in_features": msg("input features"),
         "out_features": msg("output features"), "normalized_shape": msg("normalized shape"),
         "num_embeddings": msg("rows"), "embedding_dim": msg("features per row")}


def claims_for(reader: CodeReader, module: nn.Module, comp: Component, source: Source,
               doc: ModelDoc | None = None, repo_url: str | None = None) -> tuple[Claim, ...]:
    cls = type(module)
    found = reader.class_lines(cls)
    if found is None:
        return ()
    lines, start, src_file = found
    out: list[Claim] = []
    rows = [r for r in comp.rows]
    if rows:
        spans = [reader.assignment_lines(cls, r.name) for r in rows]
        spans = [s for s in spans if s]
        if spans:
            owned = tuple(msg("%(tensor)s (%(calculation)s)", tensor=lowered(r.label),
                              calculation=calculation(r.factors)) for r in rows)
            out.append(reader.claim_in(
                msg("%(name)s owns its %(owned)s: %(count)s parameters per instance.", name=comp.name,
                    owned=owned, count=comp.own_parameters),
                msg("accounting"), source, src_file, spans, repo_url))
    e = comp.equations
    verified = e is not None and e.verification is not None and e.verification.verified
    values = []
    for attr, what in HYPER.items():
        value = getattr(module, attr, None)
        span = reader.assignment_lines(cls, attr)
        if value is None or span is None or isinstance(value, (nn.Module, torch.Tensor)):
            continue
        values.append((what, value, span))
    if values and verified:
        file = values[0][2][0]          # the settings one file's __init__ sets: the first's
        values = [v for v in values if v[2][0] == file]
        settings = tuple(msg("%(setting)s %(value)s", setting=what, value=_show(value)) for what, value, _ in values)
        out.append(reader.claim_in(msg("Configured with %(settings)s; the equations above use these values and "
                                       "reproduce forward().", settings=settings),
                                   msg("equations verified"), source, src_file, [s for *_, s in values], repo_url))
    span = reader.method_span(cls, "forward")
    if verified and span and leaves.builder_for(module) is None:
        error = f"{e.verification.max_error:.0e}"
        out.append(reader.claim(
            msgn("forward() computes the step shown above, checked against it on random inputs "
                 "(max error within %(error)s).",
                 "forward() computes the %(n)s steps shown above, checked against it on random inputs "
                 "(max error within %(error)s).", len(e.steps), error=error),
            msg("equations verified"), source.file, src_file, span[0], span[1]))
    probed = comp.shapes is not None and comp.shapes.status.value == "derived" and \
        (comp.shapes.method != "own" or hooks_of(module).inputs)     # not on made-up inputs
    if probed and span:
        ins = ", ".join(t.name for t in comp.shapes.inputs)
        outs = ", ".join(t.name for t in comp.shapes.outputs)
        out.append(reader.claim(msg("forward() takes %(inputs)s and returns %(outputs)s, with the shapes shown above "
                              "at every probed input size.", inputs=ins, outputs=outs),
                          msg("shape probes"), source.file, src_file, span[0], span[1]))
    arch = architecture_claim(reader, doc, module, comp, source, src_file) if doc is not None else None
    if arch is not None:
        out.append(arch)
    if comp.repeat > 1:
        out.append(reader.claim(msg("The %(n)s instances at this position are structurally identical: same class, "
                              "hyper-parameters, parameter shapes and children.", n=comp.repeat),
                          msg("structure"), source.file, src_file, start, start + min(len(lines), HEADER_LINES) - 1))
    return tuple(out)


def architecture_claim(reader: CodeReader, doc: ModelDoc, module: nn.Module, comp: Component, source: Source,
                       src_file: str) -> Claim | None:
    """The hyper-parameters a block's verified steps compute with, each tied to its line; for a block that is one
    of N, said of the part that repeats it (seed 002: "The latent encoder: 12 heads of 64 features, ...")."""
    e = comp.equations
    if e is None or not e.verification or not e.verification.verified or not comp.children:
        return None
    facts = {f.kind: f for f in e.facts}
    if "heads" not in facts:
        return None
    items, lines = [], []

    def add(text, line):
        items.append(text)
        if line is not None:
            lines.append(line)

    here = lambda f: f.line if f.file and f.file == Path(src_file).name else None  # noqa: E731
    h, d = facts["heads"], facts.get("head_features")
    if "kv_heads" in facts:
        add(msg("%(heads)s query heads and %(kv)s key/value heads of %(features)s features", heads=h.value,
                kv=facts["kv_heads"].value, features=d.value if d else "?"), here(h))
    else:
        add(msg("%(heads)s heads of %(features)s features", heads=h.value, features=d.value if d else "?"), here(h))
    if "qk_norm" in facts:
        add(msg("query and key normalization"), here(facts["qk_norm"]))
    if "softcap" in facts:
        add(msg("softcap %(cap)s", cap=_show(facts["softcap"].value)), here(facts["softcap"]))
    if comp.repeat > 1:
        add(msgn("%(n)s layer", "%(n)s layers", comp.repeat), None)
    mult = mlp_multiplier(doc, comp)
    if mult is not None:
        add(msg("MLP multiplier %(m)s", m=mult), None)
    rates = sorted({float(m.p) for m in module.modules() if isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0})
    if rates:
        add(msg("dropout %(p)s", p=", ".join(_show(r) for r in rates)), None)
    eps = sorted({_eps_value(c) for c in e.constants if _eps_value(c) is not None})
    if eps:
        add(msg("ε = %(eps)s", eps=", ".join(_pretty_number(x) for x in eps)), None)
    subject = doc.component(comp.parent) if comp.repeat > 1 and comp.parent is not None else comp
    if not lines:
        return None
    near = [x for x in lines if abs(x - lines[0]) <= CLAIM_SPAN]    # an excerpt of the heads' lines, not a file
    return reader.claim(msg("%(part)s: %(facts)s.", part=subject.name, facts=tuple(items)),
                  msg("equations verified"), source.file, src_file, min(near), max(near))


def _eps_value(line) -> float | None:
    """The value of ε a constant's line states, read from its symbol's key (c.eps.<value>)."""
    found = (re.fullmatch(r"c\.eps\.([0-9.e+-]+)", key) for key in line.refs())
    m = next((f for f in found if f), None)
    return float(m.group(1)) if m else None


def _pretty_number(x: float) -> str:
    """1e-05 -> 10⁻⁵, as the seed pages write ε."""
    import math
    k = round(math.log10(x)) if x > 0 else 0
    if x > 0 and abs(x - 10.0 ** k) <= 1e-12 * x:
        sup = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
        return "10" + str(k).translate(sup)
    return _show(x)


def _show(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple) and len(value) == 1:
        return str(value[0])
    return str(value)


def with_provenance(model: nn.Module, doc: ModelDoc, repo_url: str | None = None) -> ModelDoc:
    reader = CodeReader()
    out = []
    for comp in doc.components:
        module = model.get_submodule(comp.path)
        found = reader.class_lines(type(module))
        if found is None:
            out.append(comp)
            continue
        source = replace(reader.locate(found[2], repo_url), excerpts=reader.excerpts(type(module)))
        comp = replace(comp, source=source)
        comp = replace(comp, claims=claims_for(reader, module, comp, source, doc, repo_url))
        out.append(comp)
    doc = replace(doc, components=tuple(out))
    return replace(doc, components=tuple(replace(c, explanation=explanation(doc, c)) for c in doc.components))
