"""torch.nn reference pages: one per class the documented models use, generated from the real class.

Signature and defaults come from `inspect.signature`; parameter descriptions from the
class docstring's Args section; the math from the same equation registry as the component
pages, verified the same way on an example instance; examples are executed at generation
time with a fixed seed and their printed output is captured. FAQ, use cases, examples and
family comparison tables are data files next to the templates (templates/reference/).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml
from torch import nn

from atlas.errors import AtlasError
from atlas.i18n import Text
from atlas.model import ModelDoc

DATA = Path(__file__).resolve().parent.parent / "templates" / "reference"


@dataclass(frozen=True)
class Param:
    name: str
    kind: str           # the docstring's type, e.g. "int or list or torch.Size"
    default: str | None
    text: str


@dataclass(frozen=True)
class Example:
    title: str
    text: str
    code: str
    output: str


@dataclass(frozen=True)
class UsedIn:
    model: str
    slug: str
    component: str
    name: str
    instances: int


@dataclass(frozen=True)
class Family:
    title: str
    rows: tuple[tuple[str, str, bool, str], ...]    # class, normalizes over, batch-dependent, typical use


@dataclass(frozen=True)
class ReferencePage:
    cls: str                    # "torch.nn.LayerNorm"
    qualname: str               # "torch.nn.modules.normalization.LayerNorm", as components name their class
    slug: str                   # "layernorm"
    summary: str
    signature: str
    params: tuple[Param, ...]
    equations: object           # the model's Equations of the example instance
    example_instance: str
    examples: tuple[Example, ...]
    family: Family | None
    faq: tuple[tuple[str, str], ...]
    uses: tuple[str, ...]
    used_in: tuple[UsedIn, ...]
    torch_version: str


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def _rst(text: str) -> str:
    """RST roles and literals as plain words with code marks, math blocks dropped."""
    text = re.sub(r"\.\. math::(.*?)(?:\n\s*\n|\Z)",
                  lambda m: " $" + " ".join(m.group(1).split()) + "$. ", text, flags=re.S)
    text = _ROLE.sub(r"`\1`", text).replace("``", "`")
    return " ".join(text.split())


def parse_args(cls: type) -> dict[str, tuple[str, str]]:
    """The docstring's Args section: name -> (type, description)."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    m = re.search(r"^Args:\n(.*?)(?=^\S|\Z)", doc, re.M | re.S)
    if not m:
        return {}
    out: dict[str, tuple[str, str]] = {}
    current = None
    for line in m.group(1).splitlines():
        head = re.match(r"^    (\w+)(?: \(([^)]*)\))?:\s*(.*)$", line)
        if head:
            current = head.group(1)
            out[current] = (head.group(2) or "", head.group(3))
        elif current and (line.startswith("        ") or not line.strip()):
            kind, text = out[current]
            out[current] = (kind, text + "\n" + line.strip())
    return {k: (kind, _rst(text)) for k, (kind, text) in out.items()}


def signature(cls: type) -> tuple[str, tuple[Param, ...]]:
    sig = inspect.signature(cls)
    described = parse_args(cls)
    shown, params = [], []
    for p in sig.parameters.values():
        if p.name.startswith("_") or p.name in ("device", "dtype"):
            continue
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        shown.append(p.name if default is None else f"{p.name}={default}")
        kind, text = described.get(p.name, ("", ""))
        params.append(Param(p.name, kind, default, _text(text)))
    return f"torch.nn.{cls.__name__}({', '.join(shown)})", tuple(params)


_FLOAT = re.compile(r"-?\d+\.\d{5,}(?:e[-+]?\d+)?")


def run_example(code: str, where: str) -> str:
    """Run an example with a fixed seed; its printed output, with floats rounded to 4 decimals."""
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            exec(compile(code, where, "exec"), {"__name__": "__atlas_example__"})
    except Exception as exc:
        raise AtlasError(f"{where}: the example raised {type(exc).__name__}: {exc}") from None
    finally:
        torch.set_printoptions(profile="default")
    return _FLOAT.sub(lambda m: f"{float(m.group(0)):.4f}", buffer.getvalue()).rstrip()


def load_data(cls: type) -> dict | None:
    path = DATA / f"{cls.__name__}.yml"
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def families() -> dict:
    return yaml.safe_load((DATA / "families.yml").read_text())


def used_classes(docs: list[ModelDoc]) -> list[type]:
    """torch.nn classes instantiated by the documented models, that have reference data."""
    found = []
    for doc in docs:
        for comp in doc.components:
            module, _, name = comp.cls.rpartition(".")
            if module.startswith("torch.nn.modules."):
                cls = getattr(nn, name, None)
                if cls is not None and cls not in found and load_data(cls) is not None:
                    found.append(cls)
    return sorted(found, key=lambda c: c.__name__)


def page(cls: type, docs: list[ModelDoc]) -> ReferencePage:
    from atlas import recording, shapes, spec, walk
    from atlas.equations.enrich import enrich

    data = load_data(cls)
    where = f"templates/reference/{cls.__name__}.yml"
    instance = eval(data["instance"], {"nn": nn, "torch": torch})   # the data file's own example instance
    loaded = spec.Loaded(f"torch.nn.{cls.__name__}", instance, None)
    outcome = recording.record(instance, walk.walk(loaded), list(data["inputs"]))
    doc = enrich(instance, outcome.doc, outcome.trace, shapes.inputs_mod.vocabulary(None, None))
    equations = doc.root.equations
    if not (equations.verification and equations.verification.verified):
        raise AtlasError(f"{where}: the equations of {data['instance']} are not verified: "
                         f"{equations.reason or equations.verification.reason}")
    sig, params = signature(cls)
    examples = tuple(Example(_text(e["title"]), _text(e.get("text", "")), e["code"].rstrip(),
                             run_example(e["code"], f"{where} example '{e['title']}'")) for e in data["examples"])
    fam = None
    if data.get("family"):
        spec_ = families()[data["family"]]
        fam = Family(_text(spec_["title"]), tuple(
            (m["class"], _text(m["axes"]), m["batch_dependent"], _text(m["use"])) for m in spec_["members"]))
    qual = f"{cls.__module__}.{cls.__name__}"
    used = tuple(UsedIn(d.name, d.slug, c.id, c.name, c.instances)
                 for d in docs for c in d.components if c.cls == qual)
    return ReferencePage(f"torch.nn.{cls.__name__}", qual, cls.__name__.lower(), _text(data["summary"]), sig, params,
                         equations, data["instance"], examples, fam,
                         tuple((_text(f["q"]), _text(f["a"])) for f in data.get("faq", ())),
                         tuple(_text(u) for u in data.get("uses", ())), used, torch.__version__)


def _text(value: str) -> Text | str:
    """A data file's prose, or a docstring's, as a message of the reference catalog."""
    value = " ".join(str(value).split()) if value else ""
    return Text(value) if value else value


def messages():
    """(text, where) for every translatable string of the reference data and its classes' docstrings."""
    fams = families()
    for name, fam in sorted(fams.items()):
        where = "templates/reference/families.yml"
        yield _text(fam["title"]), where
        for m in fam["members"]:
            yield _text(m["axes"]), where
            yield _text(m["use"]), where
    for path in sorted(DATA.glob("*.yml")):
        if path.name == "families.yml":
            continue
        data = yaml.safe_load(path.read_text())
        where = f"templates/reference/{path.name}"
        yield _text(data["summary"]), where
        for e in data["examples"]:
            yield _text(e["title"]), where
            if e.get("text"):
                yield _text(e["text"]), where
        for f in data.get("faq", ()):
            yield _text(f["q"]), where
            yield _text(f["a"]), where
        for u in data.get("uses", ()):
            yield _text(u), where
        cls = getattr(nn, path.stem)
        for param in signature(cls)[1]:
            if param.text:
                yield param.text, f"torch.nn.{path.stem} docstring"
