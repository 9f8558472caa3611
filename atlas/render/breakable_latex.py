"""Formulas as LaTeX that a narrow column may break across lines: the site's long lines (math_markup.marked).

KaTeX breaks a display line as TeX breaks an inline one, only after a relation or a binary operator at the
formula's outer level (TeXbook p. 173); the page's CSS lets display math wrap (templates/assets/symbols.css).
"""

from __future__ import annotations

from atlas.document.math_tree import (
    Accent,
    Cases,
    Equation,
    Fenced,
    Frac,
    Glyph,
    Group,
    Ident,
    Node,
    Number,
    Product,
    Ref,
    Row,
    Script,
    Size,
    Space,
    Sqrt,
    Word,
)
from atlas.render.latex import CLOSE, OPEN, Writer


class _Breakable(Writer):
    """The formula with places a narrow column may break it. KaTeX breaks a line only after a relation or a binary
    operator at the formula's outer level (TeXbook p. 173): a body between delimiters sized to it (\\left( …
    \\right)) is one box, as is a group. Here, at the outer level only, such delimiters are set at a fixed size
    matched to their body, so the operators inside stand at the outer level; a group that only carries a script
    ({(…)}^h) gives the script to its closing delimiter; and a break is allowed after a comma between arguments,
    after an opening delimiter and between the factors of a product, which a column takes only where it must.
    A line that fits is set as before, on one line."""

    def __init__(self, name) -> None:
        super().__init__(name)
        self._outer = True

    def write(self, node) -> str:
        if isinstance(node, Group) and self._outer and _ends_fenced(node.body):     # {(…)}[i]: (…)[i]
            return self.write(node.body)
        if isinstance(node, (Frac, Sqrt, Accent, Cases, Group)) and self._outer:
            self._outer = False
            try:
                return super().write(node)
            finally:
                self._outer = True
        return super().write(node)

    def _glyph(self, n: Glyph) -> str:
        return ",\\allowbreak " if n.name == "," and self._outer else super()._glyph(n)

    def _row(self, n: Row) -> str:
        """Between two delimited groups side by side ((…)[…]) a break is allowed too."""
        if not self._outer:
            return super()._row(n)
        out = []
        for i, item in enumerate(n.items):
            if i and _fenced_auto(item) and _ends_fenced(_unbraced(n.items[i - 1])) or \
                    i > 1 and isinstance(n.items[i - 1], Space) and isinstance(n.items[i - 2], Fenced):
                out.append(r"\allowbreak ")     # (…)[…], and (…) v: a factor after a delimited group
            out.append(self.write(item))
        return "".join(out)

    def _fenced(self, n: Fenced) -> str:
        if n.size != "auto" or not self._outer:
            return super()._fenced(n)
        size = _fixed_size(n.body)
        return size + "l" + OPEN[n.open] + r"\allowbreak " + self.write(n.body) + size + "r" + CLOSE[n.close] \
            if size else \
            (OPEN[n.open] if n.open else "") + self.write(n.body) + (CLOSE[n.close] if n.close else "")

    def _product(self, n: Product) -> str:
        """A product by juxtaposition may break between its factors, where nothing else is left to break at."""
        tex = super()._product(n)
        if not self._outer:
            return tex
        right = self.write(n.right)
        return tex[:len(tex) - len(right)] + r"\allowbreak " + right

    def _script(self, n: Script) -> str:
        if not self._outer:
            return super()._script(n)
        flat = n.base.body if isinstance(n.base, Group) and _ends_fenced(n.base.body) else \
            n.base if _ends_fenced(n.base) else None
        out = self.write(flat) if flat is not None else None
        self._outer = False
        try:
            out = self.write(n.base) if out is None else out
            for mark, part in (("_", n.sub), ("^", n.sup)):
                if part is not None:
                    text = self.write(part)
                    out += mark + (text if mark in n.tight else "{" + text + "}")
        finally:
            self._outer = True
        return out


def _fenced_auto(node: Node) -> bool:
    return isinstance(node, Fenced) and node.size == "auto"


def _unbraced(node: Node) -> Node:
    return node.body if isinstance(node, Group) else node


def _ends_fenced(node: Node) -> bool:
    """Whether a node is written ending with a delimiter sized to its body: a script after it attaches there."""
    return _fenced_auto(node.items[-1] if isinstance(node, Row) and node.items else node)


def _fixed_size(body: Node) -> str:
    """The fixed delimiter size for a body: \\Bigg beside a sum with limits, \\bigg beside a stacked fraction or
    cases, \\big beside a script or a nested delimiter; none beside a plain row."""
    nodes = list(body.walk())
    if any(isinstance(x, Script) and isinstance(x.base, Glyph) and x.base.name == "∑" for x in nodes):
        return r"\Bigg"
    if any(isinstance(x, (Frac, Cases)) for x in nodes):
        return r"\bigg"
    if any(isinstance(x, (Script, Sqrt)) or isinstance(x, Fenced) and x.size for x in nodes):
        return r"\big"
    return ""


def breakable(node, name) -> str:
    """The formula as LaTeX a narrow column may break across lines (_Breakable), for the site's pages; `name(key)`
    a symbol's LaTeX, as for latex.latex."""
    return _Breakable(name).write(node)


_WIDE_GLYPHS = set("+-−=⊙⊗·×≤≥≠←,;∧∨⊕")


def width(node, name_width) -> float:
    """A formula's width as typeset, roughly, in characters of its text: a stacked fraction as wide as its wider
    part, scripts at the size they are set, operators with the space around them. `name_width(key)` a symbol's."""
    w = lambda x: width(x, name_width) if x is not None else 0.0       # noqa: E731
    if isinstance(node, Ref):
        return name_width(node.key)
    if isinstance(node, (Ident, Number, Size)):
        return float(len(str(getattr(node, "text", None) or getattr(node, "expr", None) or node.value)))
    if isinstance(node, Glyph):
        return 2.0 if node.name in _WIDE_GLYPHS else 1.0
    if isinstance(node, Word):
        return 0.9 * len(node.text)
    if isinstance(node, Space):
        return 0.3
    if isinstance(node, Row):
        return sum(w(i) for i in node.items)
    if isinstance(node, (Group, Accent)):
        return w(node.body)
    if isinstance(node, Script):
        return w(node.base) + 0.7 * max(w(node.sub), w(node.sup))
    if isinstance(node, Product):
        return w(node.left) + w(node.right) + 0.3
    if isinstance(node, Frac):
        return max(w(node.num), w(node.den)) + 0.5
    if isinstance(node, (Sqrt, Fenced)):
        return w(node.body) + 1.0
    if isinstance(node, Cases):
        return max((w(v) + w(c) for v, c in node.rows), default=0.0) + 3.0
    if isinstance(node, Equation):
        return w(node.lhs) + w(node.rhs) + 2.0
    return 1.0
