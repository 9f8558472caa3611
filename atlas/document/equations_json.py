"""A component's equations as JSON data and back: the op-level steps, the paper view, the idioms and the check
against forward()."""

from __future__ import annotations

from atlas.document.equations import (
    Equations,
    EquationStatus,
    Fact,
    Idiom,
    MathSymbol,
    PaperView,
    Step,
    Verification,
)
from atlas.document.json_text import as_data
from atlas.document.math_tree import from_data
from atlas.document.tensor_shapes import Dim


def dim_value(d: Dim):
    """A fixed dim is an int; a symbolic one is {"symbol": "2*T", "name": "positions"}."""
    return d.value if not d.symbolic else {"symbol": d.symbol, "name": d.name}


def dim_from(v) -> Dim:
    return Dim(value=v) if isinstance(v, int) else Dim(symbol=v["symbol"], name=v["name"])


def equations_dict(e: Equations | None):
    if e is None:
        return None
    return {
        "status": e.status.value,
        "summary": [{"formula": as_data(f)} for f in e.summary],
        "steps": [{"formula": as_data(st.formula), "section": st.section, "links": list(st.links),
                   "defines": st.defines, "shape": [dim_value(d) for d in st.shape]} for st in e.steps],
        "symbols": [{"key": s.key, "name": as_data(s.name), "kind": s.kind, "stream": s.stream,
                     "shape": [dim_value(d) for d in s.shape], "file": s.file, "line": s.line} for s in e.symbols],
        "constants": [{"formula": as_data(f)} for f in e.constants],
        "notations": [{"formula": as_data(f), "text": text} for f, text in e.notations],
        "facts": [{"kind": f.kind, "value": f.value, "file": f.file, "line": f.line} for f in e.facts],
        "aligned": e.aligned,
        "reason": e.reason,
        "residuals": e.residuals,
        "normalizes": e.normalizes,
        "paper": paper_dict(e.paper),
    }


def idiom_dict(i: Idiom) -> dict:
    return {"kind": i.kind, "params": dict(i.params), "file": i.file, "line": i.line}


def paper_dict(p: PaperView | None):
    if p is None:
        return None
    v = p.verification
    return {
        "same_as_steps": p.same,
        "summary": [{"formula": as_data(f)} for f in p.summary],
        "steps": [{"formula": as_data(st.formula), "section": st.section, "links": list(st.links),
                   "defines": st.defines, "shape": [dim_value(d) for d in st.shape]} for st in p.steps],
        "constants": [{"formula": as_data(f)} for f in p.constants],
        "notations": [{"formula": as_data(f), "text": text} for f, text in p.notations],
        "verified": v is not None and v.verified,
        "max_error": None if v is None else v.max_error,
        "verification": None if v is None else {"verified": v.verified, "max_error": v.max_error,
                                                 "tolerance": v.tolerance, "reason": v.reason, "dtype": v.dtype,
                                                 "note": v.note},
    }


def _steps_from(steps) -> tuple:
    return tuple(Step(from_data(st["formula"]), st["section"], tuple(st["links"]), st["defines"],
                      tuple(dim_from(d) for d in st["shape"])) for st in steps)


def _verification_from(v) -> Verification | None:
    return None if v is None else Verification(v["verified"], v["max_error"], v["tolerance"], v["reason"],
                                               v["dtype"], v.get("note"))


def paper_from(p: dict | None) -> PaperView | None:
    if p is None:
        return None
    return PaperView(tuple(from_data(x["formula"]) for x in p["summary"]), _steps_from(p["steps"]),
                     tuple(from_data(x["formula"]) for x in p["constants"]),
                     tuple((from_data(x["formula"]), x["text"]) for x in p["notations"]),
                     _verification_from(p["verification"]), p.get("same_as_steps", False))


def verification_dict(e: Equations | None):
    v = e.verification if e is not None else None
    if v is None:
        return None
    return {"verified": v.verified, "max_error": v.max_error, "tolerance": v.tolerance, "reason": v.reason,
            "dtype": v.dtype, "note": v.note}


def equations_from(c: dict) -> Equations | None:
    e, v = c["equations"], c["verification"]
    if e is None:
        return None
    return Equations(
        EquationStatus(e["status"]), tuple(from_data(x["formula"]) for x in e["summary"]),
        _steps_from(e["steps"]), e["aligned"], e["reason"], _verification_from(v),
        e["residuals"], e["normalizes"],
        tuple(MathSymbol(s["key"], from_data(s["name"]), s["kind"], s["stream"],
                         tuple(dim_from(d) for d in s.get("shape", ())), s.get("file"), s.get("line"))
              for s in e["symbols"]),
        tuple(from_data(x["formula"]) for x in e["constants"]),
        tuple((from_data(x["formula"]), x["text"]) for x in e["notations"]),
        tuple(Fact(f["kind"], f["value"], f["file"], f["line"]) for f in e.get("facts", ())),
        tuple(Idiom(i["kind"], tuple(i["params"].items()), i["file"], i["line"]) for i in c.get("idioms", ())),
        paper_from(e.get("paper")),
    )
