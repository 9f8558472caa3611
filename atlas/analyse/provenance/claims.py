"""Where each component's code lives: pinned excerpts, claims tied to lines, and a few structural facts.

Line ranges come from the real class's code (the lines `inspect` gives: atlas.extract.source_spans), never from typing. Paths are
shown relative to the git checkout or to site-packages, so no page depends on
where a machine keeps its files, and nothing depends on the clock.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import inspect
import re
import subprocess
import textwrap
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from atlas.analyse.equations import leaves
from atlas.document import Claim, Component, Excerpt, ModelDoc, Source, calculation
from atlas.extract.source_spans import SourceFiles
from atlas.i18n import lowered, msg, msgn

CLAIM_SPAN = 24                      # lines of code a claim's excerpt may span around its main fact
HEADER_LINES = 36                    # a class header and docstring, cut as the seed pages cut it
TORCH_REPO = "https://github.com/pytorch/pytorch/blob"
# Where an installed library's files are published at a release: the repository, the tag of a version, and the
# folder its package sits in there. A library not listed is named by its version, without a link.
PACKAGE_SOURCES = {
    "transformers": ("https://github.com/huggingface/transformers", "v{version}", "src/"),
    "diffusers": ("https://github.com/huggingface/diffusers", "v{version}", "src/"),
    "timm": ("https://github.com/huggingface/pytorch-image-models", "v{version}", ""),
}


def _git(directory: str, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", directory, *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _site_packages(path: Path) -> Path | None:
    for parent in path.parents:
        if parent.name in ("site-packages", "dist-packages"):
            return parent
    return None


def locate(file: str, repo_url: str | None) -> Source:
    """The display path and revision of a source file, as the file and its checkout are now (a pass asks once per
    file: a process that builds again, `mkdocs serve`, must see a commit made in between)."""
    path = Path(file).resolve()
    packages = _site_packages(path)
    if packages is not None:
        rel = path.relative_to(packages).as_posix()
        top = rel.split("/", 1)[0]
        if top == "torch":
            git = torch.version.git_version
            return Source(rel, "package", git[:12], f"torch {torch.__version__} ({git[:12]})",
                          url=f"{TORCH_REPO}/{git}/{rel}")
        dist = _distribution_of(top)
        try:
            version = _field(importlib.metadata.distribution(dist), "Version")
        except importlib.metadata.PackageNotFoundError:
            version = None
        known = PACKAGE_SOURCES.get(dist)
        url = (f"{known[0]}/blob/{known[1].format(version=version)}/{known[2]}{rel}"
               if known and version else None)
        return Source(rel, "package", version, f"{dist} {version}" if version else dist, url=url)
    top = _git(str(path.parent), "rev-parse", "--show-toplevel")
    if top:
        rel = path.relative_to(Path(top).resolve()).as_posix()
        commit = _git(top, "log", "-1", "--format=%H", "--", rel)
        dirty = bool(_git(top, "status", "--porcelain", "--", rel))
        if commit:
            label = (msg("commit %(commit)s, with uncommitted changes", commit=commit[:12]) if dirty
                     else msg("commit %(commit)s", commit=commit[:12]))
            url = f"{repo_url.rstrip('/')}/blob/{commit}/{rel}" if repo_url else None
            return Source(rel, "git", commit[:12], label, dirty, url)
        return Source(rel, "git", None, msg("not yet committed"), True)
    return Source(path.name, "file", None, msg("not under version control"))


@functools.lru_cache(maxsize=None)
def _distribution_of(top: str) -> str:
    """The distribution that installs the import package `top`: the one of that name when its file list has it,
    else the first whose top_level.txt names it, else the first whose file list has it. Reading every installed
    distribution's file list up front cost 10 MB of peak memory for the one or two packages a model comes from.
    The one of that name is taken when the package sits where it installs files: transformers' file list has
    3,000 lines (3.5 MB as path objects, 1.7 MB as text) for that one answer."""
    installed = re.compile(rf"^\"?{re.escape(top)}(/|\.py\b)", re.M)

    def installs(dist) -> bool:
        record = dist.read_text("RECORD")      # a wheel's: one "path,hash,size" line per file
        if record is not None:
            return installed.search(record) is not None
        return any(f.parts and f.parts[0] in (top, f"{top}.py") for f in dist.files or ())
    try:
        dist = importlib.metadata.distribution(top)
        here = Path(dist.locate_file(""))
        if (here / top).is_dir() or (here / f"{top}.py").is_file() or installs(dist):
            return _field(dist, "Name") or top
    except importlib.metadata.PackageNotFoundError:
        pass
    dists = list(importlib.metadata.distributions())
    for dist in dists:
        if top in (dist.read_text("top_level.txt") or "").split():
            return _field(dist, "Name") or top
    return next((_field(dist, "Name") or top for dist in dists if installs(dist)), top)


def _field(dist, name: str) -> str | None:
    """One field of a distribution's core metadata, read from the header block alone: the email parser behind
    `dist.metadata` reads the long description too (transformers' README, 0.4 MB of parsing for a name and a
    version)."""
    text = (dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "").replace("\r\n", "\n")
    found = re.search(rf"^{re.escape(name)}:[ \t]*(.*?)[ \t]*$", text.split("\n\n", 1)[0], re.M | re.I)
    return found.group(1) if found else None


def _memo(method):
    """Cache a _Reader method's results for the reader's pass."""
    @functools.wraps(method)
    def cached(self, *args):
        key = (method.__name__, *args)
        if key not in self.memo:
            self.memo[key] = method(self, *args)
        return self.memo[key]
    return cached


class _Reader:
    """One provenance pass over a model: each source file read once, class and method spans and parsed __init__s
    found once, all let go when the pass ends (atlas.extract.source_spans says why not inspect's caches)."""

    def __init__(self) -> None:
        self.files = SourceFiles()
        self.memo: dict = {}

    @_memo
    def locate(self, file: str, repo_url: str | None) -> Source:
        return locate(file, repo_url)

    @_memo
    def class_lines(self, cls: type) -> tuple[list[str], int, str] | None:
        found = self.files.klass(cls)
        return None if found is None else (found[2], found[1], found[0])

    @_memo
    def method_span(self, cls: type, name: str) -> tuple[int, int] | None:
        """Lines of a method, from the class that defines it along the MRO, if that class is in the same file."""
        owner = next((k for k in cls.__mro__ if name in k.__dict__ and k is not nn.Module), None)
        if owner is None:
            return None
        try:
            if inspect.getsourcefile(owner) != inspect.getsourcefile(cls):
                return None
        except TypeError:
            return None
        found = self.files.function(owner.__dict__[name])
        if found is None:
            return None
        _, start, lines = found
        return start, start + len(lines) - 1

    @_memo
    def excerpts(self, cls: type) -> tuple[Excerpt, ...]:
        """The class header with its docstring, then __init__ through forward."""
        found = self.class_lines(cls)
        if found is None:
            return ()
        lines, start, file = found
        header_end = start + min(len(lines), HEADER_LINES) - 1
        spans = [(start, header_end)]
        methods = [s for s in (self.method_span(cls, "__init__"), self.method_span(cls, "forward")) if s]
        if methods:
            spans.append((min(s for s, _ in methods), max(e for _, e in methods)))
        merged: list[tuple[int, int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
            else:
                merged.append((s, e))
        return tuple(Excerpt(s, e, self.files.text(file, s, e)) for s, e in merged)

    @_memo
    def init_tree(self, klass: type):
        """The parsed source of a class's own __init__."""
        found = self.files.function(klass.__init__)
        if found is None:
            return None
        try:
            return ast.parse(textwrap.dedent("".join(found[2])))
        except SyntaxError:
            return None

    @_memo
    def assignment_lines(self, cls: type, attr: str) -> tuple[str, int, int] | None:
        """(file, first line, last line) in __init__ (along the MRO) that set self.<attr>, or register it: the file
        is the one of the class whose __init__ does (torch's linear.py for a subclass of nn.Linear in a model's)."""
        for klass in type.mro(cls):
            found = self.assignments(klass).get(attr)
            if found is not None:
                return (inspect.getsourcefile(klass), *found)
        return None

    @_memo
    def assignments(self, klass: type) -> dict[str, tuple[int, int]]:
        """Each attribute a class's own __init__ sets (self.<attr> = ...) or registers, with the lines of the first
        statement that does, in ast.walk's order: one walk of the tree for all of the class's attributes."""
        span = self.method_span(klass, "__init__")
        tree = self.init_tree(klass) if span is not None else None
        found: dict[str, tuple[int, int]] = {}
        for node in ast.walk(tree) if tree is not None else ():
            names: list[str] = []
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                         and t.value.id == "self"]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("register_parameter", "register_buffer") and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
            for name in names:
                found.setdefault(name, (span[0] + node.lineno - 1, span[0] + node.end_lineno - 1))
        return found

    def claim(self, text: str, check: str, file: str, src_file: str, start: int, end: int) -> Claim:
        return Claim(text, check, file, start, end, self.files.text(src_file, start, end))

    def claim_in(self, text: str, check: str, source: Source, src_file: str, spans: list, repo_url: str | None):
        """A claim on the lines of `spans` ((file, start, end) each) in the first span's file: the component's own
        source file, or another one (an attribute an inherited __init__ sets), then pinned at its own revision."""
        file = spans[0][0]
        a, b = min(s for f, s, _ in spans if f == file), max(e for f, _, e in spans if f == file)
        if file == src_file:
            return self.claim(text, check, source.file, src_file, a, b)
        other = self.locate(file, repo_url)
        return Claim(text, check, other.file, a, b, self.files.text(file, a, b), other)


HYPER = {"eps": msg("epsilon"), "p": msg("dropout probability"), "approximate": msg("GELU approximation"),
         "softcap": msg("softcap"), "heads": msg("heads"), "head_features": msg("features per head"),
         "num_heads": msg("heads"), "features": msg("features"), "in_features": msg("input features"),
         "out_features": msg("output features"), "normalized_shape": msg("normalized shape"),
         "num_embeddings": msg("rows"), "embedding_dim": msg("features per row")}


def claims_for(reader: _Reader, module: nn.Module, comp: Component, source: Source,
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
        (comp.shapes.method != "own" or getattr(module, "atlas_inputs", None))     # not on made-up inputs
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


def architecture_claim(reader: _Reader, doc: ModelDoc, module: nn.Module, comp: Component, source: Source,
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
    mult = _mlp_multiplier(doc, comp)
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


def _mlp_multiplier(doc: ModelDoc, comp: Component) -> int | None:
    """Width of the MLP's hidden layer over its input, from its first affine layer's parameter shape."""
    for cid in comp.children:
        child = doc.component(cid)
        if not any(w in child.id.rsplit(".", 1)[-1].lower() for w in ("mlp", "ffn", "feed_forward", "feedforward")):
            continue
        for d in doc.descendants(child):
            row = next((r for r in d.rows if r.name == "weight" and len(r.factors) == 2), None)
            if d.cls == "torch.nn.modules.linear.Linear" and row is not None:
                fan_in, fan_out = row.factors
                return fan_out // fan_in if fan_out % fan_in == 0 and fan_out > fan_in else None
    return None


def _eps_value(line: str) -> float | None:
    """The value of ε a constant's line states, read from its symbol's key (c.eps.<value>)."""
    m = re.search(r"c\.eps\.([0-9.e+-]+)\}", line)
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


def explanation(doc: ModelDoc, comp: Component) -> tuple[str, ...]:
    """Structural facts read off the code and the derived steps."""
    facts = []
    e = comp.equations
    if e is None or not e.steps or not comp.children:
        return ()
    children = [doc.component(c) for c in comp.children]
    norms = [c for c in children if c.is_normalization]
    inner = [c for c in children if not c.is_normalization and any(d.is_normalization for d in doc.descendants(c))]
    if norms:
        facts.append(msg("It normalizes with its own %(norms)s.", norms=tuple(c.name for c in norms)))
    elif inner:
        facts.append(msg("It has no normalization of its own: normalization happens inside %(parts)s.",
                         parts=tuple(c.name for c in inner)))
    sections = []
    for s in e.steps:
        if s.section and s.section not in sections:
            sections.append(s.section)
    if len(sections) > 1:
        facts.append(msg("Its steps run through %(sections)s, in that order.",
                         sections=tuple(sections)))
    elif sections:
        facts.append(msg("Its steps run through %(section)s.", section=sections[0]))
    if e.residuals:
        facts.append(msgn("One of its own steps adds a branch's result back onto the value it started from: "
                          "a residual connection.",
                          "%(n)s of its own steps add a branch's result back onto the value it started from: "
                          "residual connections.", e.residuals))
    return tuple(facts)




def enrich(model: nn.Module, doc: ModelDoc, repo_url: str | None = None) -> ModelDoc:
    reader = _Reader()
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
