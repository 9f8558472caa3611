"""A component's class read as source: its header and docstring, the lines of its methods, and the lines where
its own code sets an attribute or computes with a hyper-parameter."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap

from torch import nn

from atlas.document import Claim, Excerpt, Source
from atlas.extract.source_spans import SourceFiles
from atlas.load.source_revision import locate

HEADER_LINES = 36                    # a class header and docstring, cut as the seed pages cut it


def _memo(method):
    """Cache a CodeReader method's results for the reader's pass."""
    @functools.wraps(method)
    def cached(self, *args):
        key = (method.__name__, *args)
        if key not in self.memo:
            self.memo[key] = method(self, *args)
        return self.memo[key]
    return cached


class CodeReader:
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
