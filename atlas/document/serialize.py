"""One serialization path for the data model: as_dict / from_dict, and JSON text.

The JSON adds a few keys derived from the data for readers who do not run Python (`parameters_total`, a row's
`calculation`); the published JSON adds each formula's LaTeX and plain text (atlas.render.json_export). from_dict
ignores them.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace

from atlas.document import (
    Architecture,
    BufferRow,
    CheckpointReport,
    Claim,
    ClassUse,
    Component,
    ComponentCheck,
    Cost,
    CostSummary,
    CountedElsewhere,
    DimNames,
    DtypeCount,
    Excerpt,
    ExpertLayers,
    Flow,
    FlowNode,
    Mismatch,
    ModelDoc,
    ParamRow,
    Published,
    Shapes,
    ShapeStatus,
    Source,
    TensorShape,
    TiedCopy,
    Totals,
    Trait,
    calculation,
    role_entries,
)
from atlas.document.equations_json import (
    dim_from,
    dim_value,
    equations_dict,
    equations_from,
    idiom_dict,
    verification_dict,
)
from atlas.document.json_text import as_data, dump, dumps
from atlas.document.math_tree import from_data

__all__ = ["SCHEMA_VERSION", "as_dict", "component_page", "dump", "dumps", "from_dict", "loads"]
SCHEMA_VERSION = 1


def row_dict(row: ParamRow) -> dict:
    return {
        "name": row.name,
        "label": row.label,
        "shape": list(row.shape),
        "factors": list(row.factors),
        "calculation": calculation(row.factors),
        "count": row.count,
        "trained": row.trained,
        "counted": row.counted,
        "shared_with": list(row.shared_with),
    }


def tensor_dicts(shapes: tuple[TensorShape, ...]) -> list[dict]:
    return [{"name": t.name, "shape": [dim_value(d) for d in t.dims], "dtype": t.dtype}
            | ({"symbol": as_data(t.math)} if t.math is not None else {}) for t in shapes]


def tensors_from(items: list[dict]) -> tuple[TensorShape, ...]:
    return tuple(TensorShape(t["name"], tuple(dim_from(d) for d in t["shape"]), t["dtype"],
                             from_data(t["symbol"]) if "symbol" in t else None) for t in items)


def _pinned(source: Source) -> dict:
    """A source file at its revision, without excerpts."""
    return {"file": source.file, "origin": source.origin, "revision": source.revision, "label": source.label,
            "dirty": source.dirty, "url": source.url, "date": source.date}


def _source_from(d: dict) -> Source:
    return Source(d["file"], d["origin"], d["revision"], d["label"], d["dirty"], d["url"], date=d.get("date"))


def component_dict(c: Component) -> dict:
    s = c.shapes
    return {
        "id": c.id,
        "parent": c.parent,
        "name": c.name,
        "name_is_prose": c.name_is_prose,
        "class": c.cls,
        "instances": c.instances,
        "repeat": c.repeat,
        "module_paths": list(c.module_paths),
        "lead": c.lead,
        "set_apart": c.set_apart,
        "parameters_per_instance": c.parameters_per_instance,
        "parameters_total": c.parameters_total,
        "counted_elsewhere": [{"counted_at": e.counted_at, "count": e.count} for e in c.counted_elsewhere],
        "rows": [row_dict(r) for r in c.rows],
        "buffers": [
            {"name": b.name, "shape": list(b.shape), "dtype": b.dtype, "count": b.count, "persistent": b.persistent}
            for b in c.buffers
        ],
        "children": list(c.children),
        "summary": c.summary,
        "quote": c.quote,
        "reconstruction": c.reconstruction,
        "inputs": tensor_dicts(s.inputs) if s else [],
        "outputs": tensor_dicts(s.outputs) if s else [],
        "shapes": None if s is None else {"status": s.status.value, "method": s.method, "reason": s.reason,
                                          **({"called_as": s.called_as} if s.called_as else {})},
        "idioms": [idiom_dict(i) for i in c.equations.idioms] if c.equations is not None else [],
        "equations": equations_dict(c.equations),
        "verification": verification_dict(c.equations),
        "source": None if c.source is None else {
            **_pinned(c.source),
            "excerpts": [{"start": x.start, "end": x.end, "text": x.text} for x in c.source.excerpts],
        },
        "claims": [{"text": x.text, "check": x.check, "file": x.file, "start": x.start, "end": x.end,
                    "excerpt": x.excerpt, "source": None if x.source is None else _pinned(x.source)}
                   for x in c.claims],
        "explanation": list(c.explanation),
        "cost": cost_dict(c.cost),
        "cost_reason": c.cost_reason,
        "flow": flow_dict(c.flow),
    }


def flow_dict(flow: Flow | None):
    if flow is None:
        return None
    return {"nodes": [{"kind": n.kind, "label": n.label, "component": n.component, "calls": n.calls,
                       "side": n.side} for n in flow.nodes],
            "edges": [list(e) for e in flow.edges]}


def flow_from(d) -> Flow | None:
    if d is None:
        return None
    return Flow(tuple(FlowNode(n["kind"], n["label"], n["component"], n["calls"], n.get("side", False))
                      for n in d["nodes"]),
                tuple((a, b) for a, b in d["edges"]))


def cost_dict(cost):
    if cost is None:
        return None
    return {"flops": cost.flops, "flops_causal": cost.flops_causal, "activation_bytes": cost.activation_bytes,
            "uncounted": list(cost.uncounted), "attention": cost.attention, "calls": cost.calls,
            "flops_all_calls": cost.flops_all_calls, "activation_elements": cost.activation_elements,
            "activation_fixed_bytes": cost.activation_fixed_bytes}


def cost_from(d):
    return None if d is None else Cost(d["flops"], d["flops_causal"], d["activation_bytes"], tuple(d["uncounted"]),
                                       d.get("attention"), d.get("calls", 1), d.get("flops_all_calls"),
                                       d.get("activation_elements"), d.get("activation_fixed_bytes"))


def component_page(doc: ModelDoc, comp: Component, permalink: str) -> dict:
    """The JSON published beside a component's page: the component, with its model and permalink."""
    return {"schema_version": SCHEMA_VERSION, "model": doc.name, "slug": doc.slug, "permalink": permalink,
            "component": component_dict(comp)}


def checkpoint_dict(r: CheckpointReport | None):
    """The issue's contract first (path ... mismatched), then what the pages also show."""
    if r is None:
        return None
    return {
        "path": r.path, "format": r.format,
        "tensors": r.tensors, "parameters": r.parameters, "bytes": r.bytes,
        "matched": r.matched,
        "missing": list(r.missing), "unexpected": list(r.unexpected),
        "mismatched": [{"name": m.name, "code_shape": list(m.code_shape), "checkpoint_shape": list(m.checkpoint_shape),
                        "code_dtype": m.code_dtype, "checkpoint_dtype": m.checkpoint_dtype} for m in r.mismatched],
        "tied": [{"name": t.name, "saved_as": t.saved_as} for t in r.tied],
        "file": r.file, "shards": r.shards, "sha256": r.sha256, "hashed": r.hashed,
        "stripped": list(r.stripped), "added": r.added,
        "dtypes": [{"dtype": d.dtype, "tensors": d.tensors, "parameters": d.parameters, "bytes": d.bytes}
                   for d in r.dtypes],
        "components": [{"id": c.id, "tensors": c.tensors, "matched": c.matched, "tied": c.tied,
                        "unexpected": c.unexpected, "parameters": c.parameters} for c in r.components],
    }


def checkpoint_from(d: dict | None) -> CheckpointReport | None:
    if d is None:
        return None
    return CheckpointReport(
        path=d["path"], format=d["format"], file=d["file"], shards=d["shards"], sha256=d["sha256"],
        hashed=d["hashed"], tensors=d["tensors"], parameters=d["parameters"], bytes=d["bytes"], matched=d["matched"],
        missing=tuple(d["missing"]), unexpected=tuple(d["unexpected"]),
        mismatched=tuple(Mismatch(m["name"], tuple(m["code_shape"]), tuple(m["checkpoint_shape"]), m["code_dtype"],
                                  m["checkpoint_dtype"]) for m in d["mismatched"]),
        tied=tuple(TiedCopy(t["name"], t["saved_as"]) for t in d["tied"]),
        stripped=tuple(d["stripped"]), added=d["added"],
        dtypes=tuple(DtypeCount(x["dtype"], x["tensors"], x["parameters"], x["bytes"]) for x in d["dtypes"]),
        components=tuple(ComponentCheck(c["id"], c["tensors"], c["matched"], c["tied"], c["unexpected"],
                                        c["parameters"]) for c in d["components"]),
    )


def as_dict(doc: ModelDoc) -> dict:
    t = doc.totals
    return {
        "schema_version": SCHEMA_VERSION,
        "model": doc.name,
        "slug": doc.slug,
        "spec": doc.spec,
        "class": doc.cls,
        "totals": {
            "parameters": t.parameters, "trained": t.trained, "frozen": t.frozen,
            "buffers": t.buffers, "buffer_tensors": t.buffer_tensors,
            "cost": cost_dict(doc.cost),
        } | ({"active_parameters": t.active_parameters,
              "experts": [{"component": e.component, "instances": e.instances, "experts": e.experts,
                           "top_k": e.top_k, "parameters_per_expert": e.per_expert} for e in t.experts]}
             if t.experts else {}),
        "cost_reference": None if doc.cost_summary is None else {
            "sizes": dict(doc.cost_summary.reference),
            "kv_cache_bytes_per_token": doc.cost_summary.kv_cache_bytes_per_token,
            "attention": doc.cost_summary.attention,
            "pinned": dict(doc.cost_summary.pinned),
            "kv_cache_note": doc.cost_summary.kv_cache_note,
            "capped": [{"symbol": s, "size": v, "where": w} for s, v, w in doc.cost_summary.capped],
            "kv_cache_elements_per_token": doc.cost_summary.kv_cache_elements_per_token,
            "dtype": doc.cost_summary.dtype,
        },
        "published": None if doc.published is None else {
            f.name: getattr(doc.published, f.name) for f in fields(Published)
        },
        "dims": {
            "symbols": [{"symbol": sym, "name": name} for sym, name in doc.dims.symbols],
            "fixed": [{"value": value, "label": label} for value, label in doc.dims.fixed],
        },
        "example_inputs": list(doc.inputs),
        "input_notes": [str(n) for n in doc.input_notes],
        "forward_failure": None if doc.forward_failure is None else str(doc.forward_failure),
        "checkpoint": checkpoint_dict(doc.checkpoint),
        "architecture": None if doc.architecture is None else {
            name: [{"value": t.value, "component": t.component, "source": t.source}
                   for t in getattr(doc.architecture, name)] for name in Architecture.FIELDS},
        "components": [component_dict(c) for c in doc.components],
        "roles": role_entries.as_dicts(doc),
        "class_uses": [{"class": u.cls, "component": u.component, "instances": u.instances, "subclass": u.subclass,
                        "attribute": u.attribute,
                        "held": [{"component": cid, "instances": n} for cid, n in u.held]} for u in doc.class_uses],
    }


def from_dict(data: dict) -> ModelDoc:
    def row(r: dict) -> ParamRow:
        return ParamRow(
            name=r["name"], label=r["label"], shape=tuple(r["shape"]), factors=tuple(r["factors"]),
            count=r["count"], trained=r["trained"], counted=r["counted"], shared_with=tuple(r["shared_with"]),
        )

    def comp(c: dict) -> Component:
        return Component(
            id=c["id"], parent=c["parent"], name=c["name"], cls=c["class"], instances=c["instances"],
            repeat=c["repeat"], module_paths=tuple(c["module_paths"]), lead=c.get("lead", 0),
            set_apart=c.get("set_apart"), rows=tuple(row(r) for r in c["rows"]),
            buffers=tuple(BufferRow(b["name"], tuple(b["shape"]), b["dtype"], b["count"], b["persistent"])
                          for b in c["buffers"]),
            children=tuple(c["children"]), parameters_per_instance=c["parameters_per_instance"],
            summary=c["summary"], quote=c.get("quote"), reconstruction=c["reconstruction"],
            name_is_prose=c["name_is_prose"],
            shapes=None if c["shapes"] is None else Shapes(
                ShapeStatus(c["shapes"]["status"]), tensors_from(c["inputs"]), tensors_from(c["outputs"]),
                c["shapes"]["method"], c["shapes"]["reason"], c["shapes"].get("called_as")),
            equations=equations_from(c),
            source=None if c["source"] is None else replace(
                _source_from(c["source"]), excerpts=tuple(Excerpt(x["start"], x["end"], x["text"])
                                                          for x in c["source"]["excerpts"])),
            claims=tuple(Claim(x["text"], x["check"], x["file"], x["start"], x["end"], x["excerpt"],
                               None if x["source"] is None else _source_from(x["source"])) for x in c["claims"]),
            explanation=tuple(c["explanation"]),
            cost=cost_from(c.get("cost")),
            cost_reason=c.get("cost_reason"),
            flow=flow_from(c.get("flow")),
            counted_elsewhere=tuple(CountedElsewhere(e["counted_at"], e["count"])
                                    for e in c.get("counted_elsewhere", ())),
        )

    t = data["totals"]
    pub = data.get("published")
    return ModelDoc(
        name=data["model"], slug=data["slug"], spec=data["spec"], cls=data["class"],
        components=tuple(comp(c) for c in data["components"]),
        totals=Totals(t["parameters"], t["trained"], t["frozen"], t["buffers"], t["buffer_tensors"],
                      tuple(ExpertLayers(e["component"], e["instances"], e["experts"], e["top_k"],
                                         e["parameters_per_expert"]) for e in t.get("experts", ()))),
        cost=cost_from(t.get("cost")),
        cost_summary=None if data.get("cost_reference") is None else CostSummary(
            tuple(data["cost_reference"]["sizes"].items()), data["cost_reference"]["kv_cache_bytes_per_token"],
            data["cost_reference"]["attention"], tuple(data["cost_reference"].get("pinned", {}).items()),
            data["cost_reference"].get("kv_cache_note"),
            tuple((c["symbol"], c["size"], c["where"]) for c in data["cost_reference"].get("capped", ())),
            data["cost_reference"].get("kv_cache_elements_per_token"), data["cost_reference"].get("dtype", "float32")),
        published=None if pub is None else Published(**pub),
        dims=DimNames(tuple((d["symbol"], d["name"]) for d in data["dims"]["symbols"]),
                      tuple((d["value"], d["label"]) for d in data["dims"]["fixed"])),
        inputs=tuple(data["example_inputs"]),
        input_notes=tuple(data.get("input_notes", ())),
        forward_failure=data.get("forward_failure"),
        checkpoint=checkpoint_from(data.get("checkpoint")),
        architecture=None if data.get("architecture") is None else Architecture(**{
            name: tuple(Trait(t["value"], t["component"], t["source"]) for t in data["architecture"][name])
            for name in Architecture.FIELDS}),
        class_uses=tuple(ClassUse(u["class"], u["component"], u["instances"], u["subclass"], u["attribute"],
                                  tuple((h["component"], h["instances"]) for h in u["held"]))
                         for u in data["class_uses"]),
    )


def loads(text: str) -> ModelDoc:
    return from_dict(json.loads(text))
