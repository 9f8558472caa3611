"""Where classes and functions sit in their files: the lines `inspect.getsourcelines` gives, found without its costs.

inspect keeps every file it reads in `linecache` for the rest of the process, and finds a class by parsing its
whole file into a syntax tree, once per class (transformers' modeling_utils.py has 5,300 lines); for a large
model that was most of the provenance stage's memory. Here a file is read once per pass and let go with it; a
function is found from its code object's first line, as inspect finds it; a class from its `class Name` line,
anchored below by the first method it defines, and by inspect only where that is ambiguous.
"""

from __future__ import annotations

import inspect
import re
import tokenize

# inspect.findsource's pattern for the line a function's definition starts on (after walking up from
# co_firstlineno, which can point into a decorator or a lambda's line)
_DEF = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")
# how many lines the block starting at a line of a file has, by (file, the hash of its text, the line): found by
# tokenizing the block (inspect.getblock) once per process for each version of a file, while the lines themselves
# are let go with each pass (a test suite or `mkdocs serve` makes many passes over the same classes)
_BLOCK_LENGTHS: dict[tuple[str, int, int], int] = {}
_MOST_BLOCKS = 50_000


class SourceFiles:
    """The source files one pass reads, each read once; drop the object to let them go."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}
        self._versions: dict[str, int] = {}

    def lines(self, file: str) -> list[str]:
        """A file's lines with their endings, split as linecache splits them (so line numbers agree)."""
        found = self._lines.get(file)
        if found is None:
            with tokenize.open(file) as f:
                found = self._lines[file] = f.readlines()
            self._versions[file] = hash("".join(found))
        return found

    def block(self, file: str, start: int) -> list[str]:
        """The lines of the block (a def or class, decorators included) whose first line is 0-based `start`."""
        lines = self.lines(file)
        key = (file, self._versions[file], start)
        length = _BLOCK_LENGTHS.get(key)
        if length is None:
            if len(_BLOCK_LENGTHS) >= _MOST_BLOCKS:
                _BLOCK_LENGTHS.clear()
            length = _BLOCK_LENGTHS[key] = len(inspect.getblock(lines[start:]))
        return lines[start:start + length]

    def text(self, file: str, start: int, end: int) -> str:
        """Lines start..end (1-based, inclusive), joined without their endings."""
        return "\n".join(line.rstrip("\r\n") for line in self.lines(file)[start - 1:end])

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
            lines = self.lines(file)
        except OSError:
            return None
        n = code.co_firstlineno - 1
        if not 0 <= n < len(lines):
            return None
        while n > 0 and not _DEF.match(lines[n]):
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
            lines = self.lines(file)
        except OSError:
            return None
        start = self._class_line(cls, file, lines)
        if start is None:                           # ambiguous here: inspect decides (and parses the file)
            try:
                found, first = inspect.getsourcelines(cls)
            except (OSError, TypeError):
                return None
            return file, first, found
        return file, start + 1, self.block(file, start)

    def _class_line(self, cls: type, file: str, lines: list[str]) -> int | None:
        """The 0-based line of the class's first decorator, else of its `class` line; None when unsure."""
        header = re.compile(rf"^(\s*)class\s+{re.escape(cls.__name__)}\b")
        candidates = [i for i, line in enumerate(lines) if header.match(line)]
        anchor = self._first_method_line(cls, file)
        if anchor is not None:
            indent = len(lines[anchor]) - len(lines[anchor].lstrip())
            above = [i for i in candidates if i < anchor and len(header.match(lines[i]).group(1)) < indent]
            if not above:
                return None
            line = above[-1]
        elif len(candidates) == 1 and "." not in cls.__qualname__ and not header.match(lines[candidates[0]]).group(1):
            line = candidates[0]
        else:
            return None
        while line > 0 and lines[line - 1].lstrip().startswith("@"):
            line -= 1
        previous = lines[line - 1].split("#", 1)[0].strip() if line > 0 else ""
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
