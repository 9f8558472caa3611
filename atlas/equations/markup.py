"""Symbol references in step LaTeX: `\\atlasref{key}` -> the symbol's name, plain or marked for the site.

Steps keep structure: each symbol occurrence is a reference to the symbol's key. The JSON and the tests
read plain LaTeX; the site's pages get a hover key per symbol and a class per attention stream.
No torch here: the render layer uses this.
"""

from __future__ import annotations

import re

_REF = re.compile(r"\\atlasref\{([^{}]+)\}")


def _braced(tex: str) -> str:
    """A name that carries a sub/superscript or a prime, braced so a following subscript stays legal."""
    return "{" + tex + "}" if any(c in tex for c in "_^'") else tex


def plain(tex: str, names: dict) -> str:
    """LaTeX as a reader sees it: every reference replaced by the symbol's name."""
    return _REF.sub(lambda m: _braced(names.get(m.group(1), m.group(1))), tex)


def refs(tex: str) -> list[str]:
    """The keys a line refers to, in order."""
    return _REF.findall(tex)


def marked(tex: str, names: dict, streams: dict, prefix: str) -> str:
    """LaTeX for the site: each symbol wrapped with its hover key, stream symbols with their class."""
    def one(m):
        key = m.group(1)
        name = names.get(key, key)
        stream = streams.get(key)
        if stream:
            name = r"\htmlClass{atlas-stream-" + stream + "}{" + name + "}"
        return r"\htmlData{sym=" + hover_key(prefix, key) + "}{" + _braced(name) + "}"
    return _REF.sub(one, tex)


def hover_key(prefix: str, key: str) -> str:
    """A page-unique, HTML-safe key for a symbol: the component's and the symbol's own identity."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{prefix}-{key}" if prefix else key)


def strip_markup(tex: str, keep_streams: bool = True) -> str:
    """Page LaTeX without the site's symbol keys (and without stream classes unless kept)."""
    out, i = [], 0
    heads = ["\\htmlData{"] + ([] if keep_streams else ["\\htmlClass{"])
    while i < len(tex):
        head = next((h for h in heads if tex.startswith(h, i)), None)
        if head is None:
            out.append(tex[i])
            i += 1
            continue
        i = tex.index("}", i + len(head)) + 1          # skip the key or class
        if i < len(tex) and tex[i] == "{":               # unwrap the body: keep it, drop its braces
            depth, j = 1, i + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(tex[j], 0)
                j += 1
            out.append(strip_markup(tex[i + 1:j - 1], keep_streams))
            i = j
    return "".join(out)
