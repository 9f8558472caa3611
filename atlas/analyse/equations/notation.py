"""Short builders for the formulas the op tree prints (atlas.document.math_tree): the shapes that recur, such as an
operator applied to an argument, `softmax(x)`, written once."""

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
    Number,
    Product,
    Ref,
    Row,
    Script,
    Size,
    Space,
    Sqrt,
    Word,
    row,
)

__all__ = ["Accent", "Cases", "Equation", "Fenced", "Frac", "Glyph", "Group", "Ident", "Number", "Product", "Ref",
           "Row", "Script", "Size", "Space", "Sqrt", "Word", "row", "THIN", "NEG", "THICK", "QUAD", "op", "fn", "rm",
           "sub", "sup", "paren", "applied", "joined", "COMMA_THIN", "glyph", "digits"]

THIN, NEG, THICK, QUAD = Space("thin"), Space("negative"), Space("thick"), Space("quad")


def glyph(name: str) -> Glyph:
    return Glyph(name)


COMMA_THIN = (Glyph(","), THIN)


def op(name: str) -> Word:
    """An operator's name set upright: softmax, concat, erf."""
    return Word(name, "operator")


def fn(name: str) -> Word:
    """A function LaTeX knows by name: exp, log, max, tanh."""
    return Word(name, "function")


def rm(text: str) -> Word:
    return Word(text, "roman")


def sub(base, subscript, tight: bool = False) -> Script:
    return Script(base, sub=subscript, tight="_" if tight else "")


def sup(base, superscript, tight: bool = False) -> Script:
    return Script(base, sup=superscript, tight="^" if tight else "")


def paren(body, size: str | None = "auto") -> Fenced:
    return Fenced("(", ")", body, size)


def joined(items, separator=COMMA_THIN):
    """Items with a separator between them: `a,\\,b,\\,c`."""
    separator = separator if isinstance(separator, tuple) else (separator,)
    out = []
    for i, item in enumerate(items):
        if i:
            out.extend(separator)
        out.append(item)
    return row(*out) if out else Row(())


def applied(name, *args, subscript=None, tight: bool = False, size: str | None = "auto", gap: bool = True,
            separator=COMMA_THIN):
    """An operator applied to arguments: `name_{subscript}\\!\\left(a,\\,b\\right)`; `gap` False leaves out the
    negative space before the parenthesis."""
    head = name if subscript is None else Script(name, sub=subscript, tight="_" if tight else "")
    return row(head, NEG if gap else None, Fenced("(", ")", joined(args, separator), size))


def digits(text: str):
    """Digits and punctuation as printed in a subscript: "0,2,1" -> 0 , 2 , 1; "1:768" -> 1 : 768."""
    out, number = [], ""
    for c in text:
        if c.isdigit() or (c == "-" and not number):
            number += c
            continue
        if number:
            out.append(Number(int(number)))
            number = ""
        out.append(Glyph(c))
    if number:
        out.append(Number(int(number)))
    return row(*out)
