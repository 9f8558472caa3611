"""torch.nn reference pages: one per class the documented models use, and per class their comparison tables name.

Everything a page needs is generated from the real class: the signature (`inspect.signature`), what the class is
and what each parameter does (the class docstring: its first paragraph and its Args section), a small instance
with its shapes and its equations verified against forward() as a component's are (atlas/extract/small_instances.py),
and an example that runs, with what it printed (atlas/analyse/reference/example_runs.py). A data file next to the
templates (templates/reference/<Class>.yml) may add a better summary, more examples, FAQ and use cases;
families.yml holds the comparison tables. Texts from docstrings and data files go through the reference catalog.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml
from torch import nn

from atlas import i18n
from atlas.analyse.reference.class_uses import Use
from atlas.document import DimNames, Equations, EquationStatus, Shapes
from atlas.i18n import Text
from atlas.resources import REFERENCE_DATA

log = logging.getLogger("atlas")
DATA = REFERENCE_DATA
SIGNATURE_WIDTH = 48            # longer signatures are written one parameter per line


@dataclass(frozen=True)
class Param:
    name: str
    kind: Text | str            # the docstring's type, e.g. "int or tuple"
    default: str | None         # repr of the signature's default; None when required
    text: Text | str


@dataclass(frozen=True)
class Example:
    title: Text | str
    text: Text | str
    code: tuple[tuple[str, str], ...]       # (language, code)
    output: tuple[tuple[str, str], ...]     # (language, what that code printed)
    generated: bool = False

    def code_in(self, language: str) -> str:
        return dict(self.code)[language]

    def output_in(self, language: str) -> str:
        return dict(self.output)[language]


@dataclass(frozen=True)
class FamilyRow:
    cls: str                    # "torch.nn.LayerNorm"
    slug: str | None            # its reference page, when the site has one
    axes: Text | str
    batch_dependent: bool
    use: Text | str


@dataclass(frozen=True)
class Family:
    title: Text | str
    rows: tuple[FamilyRow, ...]


@dataclass(frozen=True)
class ReferencePage:
    cls: str                    # "torch.nn.LayerNorm"
    qualname: str               # "torch.nn.modules.normalization.LayerNorm", as components name their class
    slug: str                   # "layernorm"
    summary: Text | str
    signature: str
    params: tuple[Param, ...]
    call: str | None            # the small instance: "nn.LayerNorm(normalized_shape=3)"
    reason: Text | None         # why there is no example or math (a container, no small arguments)
    shapes: Shapes | None
    dims: DimNames
    equations: Equations | None
    examples: tuple[Example, ...]
    family: Family | None
    faq: tuple[tuple[Text | str, Text | str], ...]
    uses: tuple[Text | str, ...]
    used_in: tuple[Use, ...]
    torch_version: str

    @property
    def name(self) -> str:
        return self.cls.rsplit(".", 1)[-1]

    @property
    def math(self) -> bool:
        e = self.equations
        return e is not None and e.status is not EquationStatus.NOT_DERIVED and bool(e.summary)


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_DEFAULT = re.compile(r"\s*\(?\bDefaults?(?: value)?\s*:?\s*(?:`[^`]*`|[^\s`]+?)\s*\)?\.?\s*$")


def _rst(text: str) -> str:
    """RST roles and literals as plain words with code marks, math blocks as inline math."""
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


def described(cls: type) -> str:
    """What the class is: its docstring's first paragraph."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    return _rst(doc.split("\n\n", 1)[0]) if doc else ""


def _shown(cls: type) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(cls).parameters.values()
            if not p.name.startswith("_") and p.name not in ("device", "dtype")]


def signature(cls: type) -> tuple[str, tuple[Param, ...]]:
    """The constructor as the page writes it, and its parameters with the docstring's words.

    A default is stated once, in the signature's words: the docstring's closing "Default: ..." is dropped."""
    args = parse_args(cls)
    shown, params = [], []
    for p in _shown(cls):
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        shown.append(p.name if default is None else f"{p.name}={default}")
        kind, text = args.get(p.name, ("", ""))
        if default is not None:
            text = _DEFAULT.sub("", text)
        kind = re.sub(r",?\s*optional$", "", kind.strip())
        params.append(Param(p.name, _text(kind), default, _text(text)))
    one_line = f"torch.nn.{cls.__name__}({', '.join(shown)})"
    if len(one_line) <= SIGNATURE_WIDTH or not shown:
        return one_line, tuple(params)
    return f"torch.nn.{cls.__name__}(\n" + "".join(f"    {s},\n" for s in shown) + ")", tuple(params)


def load_data(cls: type) -> dict:
    path = DATA / f"{cls.__name__}.yml"
    return _data_file(path) if path.is_file() else {}


def families() -> dict:
    return _data_file(DATA / "families.yml")


def _data_file(path: Path):
    """A data file, parsed once per text of it in a process (a build reads families.yml for every reference
    page); the result is shared, so read, never changed."""
    return _parsed(path.read_text())


@functools.lru_cache(maxsize=64)
def _parsed(text: str):
    return yaml.safe_load(text)


def _family_of(cls: type) -> str | None:
    name = f"torch.nn.{cls.__name__}"
    return next((k for k, f in families().items() if any(m["class"] == name for m in f["members"])), None)


def page_classes(used: dict[type, list]) -> list[type]:
    """The classes the models use, and the classes their comparison tables name, by name."""
    out = set(used)
    for key, fam in families().items():
        members = [getattr(nn, m["class"].rsplit(".", 1)[-1]) for m in fam["members"]]
        if any(c in out for c in members):
            out.update(members)
    return sorted(out, key=lambda c: c.__name__)


def page(cls: type, instance, doc, used_in: list[Use], slugs: dict[str, str] | None = None) -> ReferencePage:
    """The reference page of `cls`: `instance` is its small instance (atlas.extract.small_instances), `doc` that
    instance documented as a one-component model (None where it does not run); `slugs` maps the classes that have
    pages ("torch.nn.X") to their slug."""
    data, examples, sig, params = _made(cls, instance)
    fam = _family_of(cls)
    family = None
    if fam is not None:
        spec = families()[fam]
        family = Family(_text(spec["title"]), tuple(
            FamilyRow(m["class"], (slugs or {}).get(m["class"]), _text(m["axes"]), m["batch_dependent"],
                      _text(m["use"])) for m in spec["members"]))
    root = doc.root if doc is not None else None
    return ReferencePage(
        f"torch.nn.{cls.__name__}", f"{cls.__module__}.{cls.__name__}", slug(cls),
        _text(data.get("summary") or described(cls)), sig, params,
        instance.call if instance.runs else None, instance.reason,
        root.shapes if root else None, doc.dims if doc else DimNames(), root.equations if root else None,
        tuple(examples), family,
        tuple((_text(f["q"]), _text(f["a"])) for f in data.get("faq", ())),
        tuple(_text(u) for u in data.get("uses", ())), tuple(used_in), torch.__version__)


_MADE: dict = {}        # class -> what its page is made of, whatever uses it


def _made(cls: type, instance) -> tuple:
    """What a class's page is made of whatever uses it: its data file and its examples run. The same in one process
    for the same torch and atlas, so a process that builds again (`mkdocs serve` after an edit, a test suite) makes
    each class's once."""
    if cls in _MADE:
        return _MADE[cls]
    from atlas.analyse.reference import example_runs
    data = load_data(cls)
    where = f"templates/reference/{cls.__name__}.yml"
    examples = []
    if instance.runs:
        examples.append(_example(i18n.msg("On a small input"), i18n.msg(
            "Written from the signature: the required arguments take small values, and the input has the shape "
            "the layer takes."), lambda: example_runs.generated(instance),
            f"the generated example of torch.nn.{cls.__name__}", generated=True))
    for e in data.get("examples", ()):
        examples.append(_example(_text(e["title"]), _text(e.get("text", "")),
                                 lambda code=e["code"].rstrip(): example_runs.localized(code),
                                 f"{where} example '{e['title']}'"))
    sig, params = signature(cls)
    _MADE[cls] = data, tuple(examples), sig, params
    return _MADE[cls]


def slug(cls: type) -> str:
    return cls.__name__.lower()


def _example(title, text, code_of, where: str, generated: bool = False) -> Example:
    """An example's code in every language, each run on its own."""
    code, output = [], []
    for language in i18n.LANGUAGES:
        with i18n.language(language):
            source = code_of()
        code.append((language, source))
        output.append((language, reference_example_run(source, f"{where} ({language})")))
    return Example(title, text, tuple(code), tuple(output), generated)


def reference_example_run(code: str, where: str) -> str:
    from atlas.analyse.reference.example_runs import run
    return run(code, where)


def _text(value) -> Text | str:
    """A data file's prose, or a docstring's, as a message of the reference catalog."""
    value = " ".join(str(value).split()) if value else ""
    return Text(value) if value else value


def translated(text) -> bool:
    """Whether the active language has this docstring or data text (English always has it)."""
    if not isinstance(text, Text) or i18n.active() == i18n.DEFAULT:
        return True
    found = i18n.catalog(i18n.active(), "reference").get(text.msgid)
    return found is not None and bool(found.string) and not found.fuzzy
