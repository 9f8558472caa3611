"""Where classes and functions sit in their files: the lines `inspect.getsourcelines` gives, found without its costs.

inspect keeps every file it reads in `linecache` for the rest of the process, and finds a class by parsing its
whole file into a syntax tree, once per class (transformers' modeling_utils.py has 5,300 lines); for a large
model that would be most of the provenance stage's memory. Here a file is read once per pass and let go with it; a
function is found from its code object's first line, as inspect finds it; a class from its `class Name` line,
anchored below by the first method it defines, and by inspect only where that is ambiguous.
"""

from __future__ import annotations

import bisect
import codecs
import inspect
import io
import re
import tokenize
from array import array
from collections.abc import Sequence

# inspect.findsource's pattern for the line a function's definition starts on (after walking up from
# co_firstlineno, which can point into a decorator or a lambda's line)
_DEF = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")
# how many lines the block starting at a line of a file has, by (file, the hash of its text, the line): found by
# tokenizing the block (inspect.getblock) once per process for each version of a file, while the lines themselves
# are let go with each pass (a test suite or `mkdocs serve` makes many passes over the same classes)
_BLOCK_LENGTHS: dict[tuple[str, int, int], int] = {}
_MOST_BLOCKS = 50_000
_NEWLINE = re.compile(b"\n")


class _File:
    """A source file's bytes and where each of its lines starts; a line is decoded when asked for. Not one string:
    decoded whole, transformers' modeling_utils.py (280 KB, one emoji in it) is a 1.1 MB string, four bytes a
    character, that outlives the pass as free space the process keeps; not a string per line either (5,300 small
    objects). Lines are split as tokenize.open and linecache split them, at newlines after universal-newline
    translation, so line numbers agree with inspect's."""

    __slots__ = ("raw", "encoding", "starts", "version")

    def __init__(self, raw: bytes) -> None:
        self.encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        if self.encoding == "utf-8-sig":        # the byte-order mark is no part of the first line
            raw, self.encoding = raw.removeprefix(codecs.BOM_UTF8), "utf-8"
        if b"\r" in raw:
            raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        self.raw = raw
        self.starts = array("I" if len(raw) < 2 ** 32 else "Q", [0] if raw else [])
        self.starts.extend(m.end() for m in _NEWLINE.finditer(raw) if m.end() < len(raw))
        self.version = hash(raw)

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, i: int) -> str:
        """0-based line i with its ending."""
        end = self.starts[i + 1] if i + 1 < len(self.starts) else len(self.raw)
        return self.raw[self.starts[i]:end].decode(self.encoding)

    def lines(self, start: int, stop: int) -> list[str]:
        return [self.line(i) for i in range(max(start, 0), min(stop, len(self)))]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def pattern(self, text: str) -> bytes:
        """`text` as it is written in this file, for a regular expression over its bytes."""
        return re.escape(text.encode(self.encoding))


class _Tail(Sequence):
    """A file's lines from one line to its end, made as inspect.getblock reads them (it stops at the block's end)."""

    def __init__(self, file: _File, first: int) -> None:
        self.file, self.first = file, first

    def __len__(self) -> int:
        return max(len(self.file) - self.first, 0)

    def __iter__(self):
        return (self.file.line(i) for i in range(self.first, len(self.file)))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.file.line(self.first + range(len(self))[index])


class SourceFiles:
    """The source files one pass reads, each read once; drop the object to let them go."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}

    def _file(self, file: str) -> _File:
        found = self._files.get(file)
        if found is None:
            with open(file, "rb") as f:
                found = self._files[file] = _File(f.read())
        return found

    def source(self, file: str) -> bytes:
        """A file's bytes as read, newlines translated."""
        return self._file(file).raw

    def block(self, file: str, start: int) -> list[str]:
        """The lines of the block (a def or class, decorators included) whose first line is 0-based `start`."""
        read = self._file(file)
        key = (file, read.version, start)
        length = _BLOCK_LENGTHS.get(key)
        if length is None:
            if len(_BLOCK_LENGTHS) >= _MOST_BLOCKS:
                _BLOCK_LENGTHS.clear()
            length = _BLOCK_LENGTHS[key] = len(inspect.getblock(_Tail(read, start)))
        return read.lines(start, start + length)

    def text(self, file: str, start: int, end: int) -> str:
        """Lines start..end (1-based, inclusive), joined without their endings."""
        return "\n".join(line.rstrip("\r\n") for line in self._file(file).lines(start - 1, end))

    def function(self, fn) -> tuple[str, int, list[str]] | None:
        """(file, first line, lines) of a function, decorators included: what inspect.getsourcelines gives."""
        fn = inspect.unwrap(fn)
        code = getattr(fn, "__code__", None)
        try:
            file = inspect.getsourcefile(fn)
        except TypeError:
            return None
        if code is None or file is None:
            return None
        try:
            read = self._file(file)
        except OSError:
            return None
        n = code.co_firstlineno - 1
        if not 0 <= n < len(read):
            return None
        while n > 0 and not _DEF.match(read.line(n)):
            n -= 1
        return file, n + 1, self.block(file, n)

    def klass(self, cls: type) -> tuple[str, int, list[str]] | None:
        """(file, first line, lines) of a class, decorators included: what inspect.getsourcelines gives."""
        try:
            file = inspect.getsourcefile(cls)
        except TypeError:
            return None
        if file is None:
            return None
        try:
            read = self._file(file)
        except OSError:
            return None
        start = self._class_line(cls, file, read)
        if start is None:                           # ambiguous here: inspect decides (and parses the file)
            try:
                found, first = inspect.getsourcelines(cls)
            except (OSError, TypeError):
                return None
            return file, first, found
        return file, start + 1, self.block(file, start)

    def _class_line(self, cls: type, file: str, read: _File) -> int | None:
        """The 0-based line of the class's first decorator, else of its `class` line; None when unsure."""
        header = re.compile(rb"^([^\S\n]*)class[^\S\n]+" + read.pattern(cls.__name__) + rb"\b", re.M)
        indents = {read.line_of(m.start()): len(m.group(1)) for m in header.finditer(read.raw)}     # line: indent
        anchor = self._first_method_line(cls, file)
        if anchor is not None and anchor < len(read):
            method = read.line(anchor)
            above = [i for i, indent in indents.items() if i < anchor and indent < len(method) - len(method.lstrip())]
            if not above:
                return None
            line = above[-1]
        elif anchor is None and len(indents) == 1 and "." not in cls.__qualname__ and not next(iter(indents.values())):
            line = next(iter(indents))
        else:
            return None
        while line > 0 and read.line(line - 1).lstrip().startswith("@"):
            line -= 1
        previous = read.line(line - 1).split("#", 1)[0].strip() if line > 0 else ""
        if previous.endswith((")", ",", "(", "\\")):     # maybe a decorator written over several lines
            return None
        return line

    @staticmethod
    def _first_method_line(cls: type, file: str) -> int | None:
        """The 0-based first line of the earliest function the class body itself defines in `file`."""
        firsts = []
        for value in vars(cls).values():
            fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            fn = inspect.unwrap(fn) if callable(fn) else fn
            code = getattr(fn, "__code__", None)
            if code is not None and code.co_filename == file and \
                    getattr(fn, "__qualname__", "").startswith(cls.__qualname__ + "."):
                firsts.append(code.co_firstlineno - 1)
        return min(firsts) if firsts else None
