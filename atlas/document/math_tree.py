"""Mathematics as a structure: the lines, names and notations of a page's equations, without markup.

A formula is a tree of the nodes below. Its leaves are references to the page's symbols (`Ref`, by key: the namer
gives each a name once per page), identifiers, numbers, sizes (expressions in the input symbols, as text),
glyphs (operators, relations and punctuation, by their Unicode character or a name) and words (a function's or an
operator's name, upright text). The other nodes lay them out: rows, groups, sub- and superscripts, fractions,
roots, fences, accents, cases, and the equation a step states. atlas.render.latex turns a tree into LaTeX, with
or without the site's hover keys, and into plain text; nothing here knows LaTeX.

In JSON a node is a list, its kind first: ["ref", "v1"], ["frac", num, den] (`as_data` / `from_data`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields


class Node:
    """A node of a formula. Subclasses are frozen dataclasses; `KIND` names them in JSON."""

    KIND = ""

    def children(self) -> tuple:
        return tuple(v for f in fields(self) for v in _nodes(getattr(self, f.name)))

    def walk(self):
        yield self
        for child in self.children():
            yield from child.walk()

    def refs(self) -> list[str]:
        """The keys of the symbols it refers to, in order."""
        return [n.key for n in self.walk() if isinstance(n, Ref)]


def _nodes(value) -> tuple:
    if isinstance(value, Node):
        return (value,)
    if isinstance(value, tuple):
        return tuple(n for v in value for n in _nodes(v))
    return ()


@dataclass(frozen=True)
class Ref(Node):
    """A symbol of the page, by its key: the namer's name for it, wherever it is used."""
    key: str
    KIND = "ref"


@dataclass(frozen=True)
class Ident(Node):
    """An identifier written in math italic: a letter (Greek in Unicode: γ, Δ) with any digits after it."""
    text: str
    KIND = "ident"


@dataclass(frozen=True)
class Number(Node):
    """A number the code wrote or computed: 768, 0.5, 1e-05."""
    value: int | float | bool
    KIND = "num"


@dataclass(frozen=True)
class Size(Node):
    """A size in the input symbols, as sympy writes it: "2*T", "floor((T - 400)/320) + 1"; `compact` where a
    number and the symbol after it are set without a space (2T)."""
    expr: str
    compact: bool = True
    KIND = "size"


@dataclass(frozen=True)
class Glyph(Node):
    """An operator, relation, punctuation mark or symbol: "+", "−", "⊙", "·", "≤", "∞", "′", ",", "mod"."""
    name: str
    KIND = "glyph"


@dataclass(frozen=True)
class Space(Node):
    """Space between items: "thin", "negative", "thick", "quad", "word"; "plain", a space that sets nothing."""
    width: str
    KIND = "space"


@dataclass(frozen=True)
class Word(Node):
    """Upright text: a function's name ("softmax", style "operator"; "exp", style "function"), a label ("mach",
    "roman"), a letter set in sans-serif ("T" of a transpose, "sans") or bold ("1", "bold"), or words ("text")."""
    text: str
    style: str
    KIND = "word"


@dataclass(frozen=True)
class Row(Node):
    """Items side by side."""
    items: tuple
    KIND = "row"


@dataclass(frozen=True)
class Group(Node):
    """Items kept together as one, the base of a script or an argument."""
    body: Node
    KIND = "group"


@dataclass(frozen=True)
class Script(Node):
    """A base with a subscript and/or a superscript; `tight` names the scripts ("_", "^") of one character set
    without a group of their own (concat_h, ‖x‖₂, σ_g²)."""
    base: Node
    sub: Node | None = None
    sup: Node | None = None
    tight: str = ""
    KIND = "script"


@dataclass(frozen=True)
class Product(Node):
    """A product written by juxtaposition, a scalar beside a value (γ x, 2 T): a thin space, or a dot where a
    number would otherwise stand beside a number."""
    left: Node
    right: Node
    KIND = "product"


@dataclass(frozen=True)
class Frac(Node):
    num: Node
    den: Node
    KIND = "frac"


@dataclass(frozen=True)
class Sqrt(Node):
    body: Node
    KIND = "sqrt"


@dataclass(frozen=True)
class Fenced(Node):
    """A body between delimiters ("(", ")", "[", "]", "⌊", "⌋", "‖", "|"), sized to it ("auto"), set "big" or
    "Big", or at the text's size (None)."""
    open: str
    close: str
    body: Node
    size: str | None = None
    KIND = "fenced"


@dataclass(frozen=True)
class Accent(Node):
    """A mark over a name: "bar", "hat", "tilde", "dot", "vec"; `tight` over one letter, without a group."""
    mark: str
    body: Node
    tight: bool = False
    KIND = "accent"


@dataclass(frozen=True)
class Cases(Node):
    """A value by cases: each row a value and its condition; a condition in words ("if", "otherwise") where
    `worded`, else as math."""
    rows: tuple                     # (value, condition or None)
    worded: bool = False
    KIND = "cases"


@dataclass(frozen=True)
class Equation(Node):
    """A line stating that its left side is its right side: a step, a constant, a loop's form."""
    lhs: Node
    rhs: Node
    KIND = "equation"


KINDS = {cls.KIND: cls for cls in (Ref, Ident, Number, Size, Glyph, Space, Word, Row, Group, Script, Product, Frac,
                                    Sqrt, Fenced, Accent, Cases, Equation)}


def row(*items) -> Node:
    """Items side by side: one item as itself, nested rows flattened, empty parts dropped."""
    flat = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, Row):
            flat.extend(item.items)
        else:
            flat.append(item)
    return flat[0] if len(flat) == 1 else Row(tuple(flat))


def as_data(node):
    """A node as JSON data: [kind, field, ...]; tuples as lists."""
    if isinstance(node, Node):
        return [node.KIND, *(as_data(getattr(node, f.name)) for f in fields(node))]
    if isinstance(node, tuple):
        return [as_data(v) for v in node]
    return node


def from_data(data):
    """The node `as_data` gave."""
    if isinstance(data, list) and data and isinstance(data[0], str) and data[0] in KINDS:
        cls = KINDS[data[0]]
        if cls is Number and isinstance(data[1], str):      # a non-finite value, as json_text writes it
            return Number(float(data[1]))
        return cls(*(_field(v) for v in data[1:]))
    return _field(data)


def _field(value):
    if isinstance(value, list):
        if value and isinstance(value[0], str) and value[0] in KINDS:
            return from_data(value)
        return tuple(_field(v) for v in value)
    return value
