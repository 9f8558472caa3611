"""JSON text of the data model: a fixed key order, two-space indentation and a final newline, so that a page's data
regenerated without a change is the same bytes; each formula on one line, so that a tree of nodes does not take a
screen of lines."""

from __future__ import annotations

import json
import math
import re

from atlas.document.math_tree import as_data as _as_data

_JSON = {"indent": 2, "ensure_ascii": False, "allow_nan": False}


def dumps(data: dict) -> str:
    """Stable JSON text: fixed key order, two-space indent, a final newline; each formula on one line."""
    return "".join(_chunks(data)) + "\n"


def dump(data: dict, stream) -> None:
    """The text of dumps(data), written piece by piece: never the whole of it in memory."""
    for chunk in _chunks(data):
        stream.write(chunk)
    stream.write("\n")


class _Compact(list):
    """A formula's data, written on one line inside the indented text."""


def as_data(formula) -> _Compact:
    return _Compact(_as_data(formula))


class _Encoder(json.JSONEncoder):
    def iterencode(self, o, _one_shot=False):
        compact = json.JSONEncoder(ensure_ascii=self.ensure_ascii, separators=(",", ":"))
        for chunk in _with_compact(o, super().iterencode, compact):
            yield chunk


def _with_compact(data, encode, compact):
    """Encode `data`, each _Compact inside it as compact JSON: the indented encoder sees a marker string in its
    place."""
    found = []

    def mark(x):
        if isinstance(x, _Compact):
            found.append(compact.encode(_strict(list(x))))
            return f"\x00{len(found) - 1}\x00"
        if isinstance(x, float) and not math.isfinite(x):
            return NON_FINITE[str(x)]
        if isinstance(x, dict):
            return {k: mark(v) for k, v in x.items()}
        if isinstance(x, list):
            return [mark(v) for v in x]
        return x
    marked = mark(data)
    for chunk in encode(marked):
        if "\x00" in chunk or "\\u0000" in chunk:
            chunk = _MARKER.sub(lambda m: found[int(m.group(1))], chunk)
        yield chunk


# JSON has no infinity: a value that is one (a mask's −∞) is written as the string JavaScript's JSON.stringify would
# leave unquoted, so that every JSON reader parses the file; math_tree.from_data reads a Number's back as a float.
NON_FINITE = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}


def _strict(x):
    if isinstance(x, float) and not math.isfinite(x):
        return NON_FINITE[str(x)]
    if isinstance(x, list):
        return [_strict(v) for v in x]
    if isinstance(x, dict):
        return {k: _strict(v) for k, v in x.items()}
    return x


_MARKER = re.compile(r'"\\u0000(\d+)\\u0000"')


def _chunks(data):
    return _Encoder(**_JSON).iterencode(data)
