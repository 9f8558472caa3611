"""Formatting for pages: plain functions, registered once as Jinja filters, tested on their own."""

from __future__ import annotations

import re

from atlas import names


def thousands(n: int) -> str:
    """12345 -> "12,345"."""
    return f"{int(n):,}"


def calculation(factors) -> str:
    """(768, 2304) -> "768 × 2304"; a scalar tensor -> "1"."""
    return " × ".join(str(f) for f in factors) if factors else "1"


def tex_thousands(n: int) -> str:
    """12345 -> "12{,}345", for numbers inside LaTeX."""
    return thousands(n).replace(",", "{,}")


def shape(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


_MD_SPECIALS = re.compile(r"([\\`*_{}\[\]#|$~])")


def md_text(text: str) -> str:
    """Prose from the code (names, docstrings) made inert in Markdown, HTML and math."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIALS.sub(r"\\\1", text)


def md_code(text: str) -> str:
    """Inline code that holds any text, backticks included."""
    text = str(text)
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def repeat_label(comp) -> str:
    """The breadcrumb form of a repeated component: "6 encoder blocks", or "6 × TransformerEncoderLayer"."""
    if comp.repeat <= 1:
        return comp.name
    if comp.name_is_prose:
        return f"{comp.repeat} {names.plural(names.lower_first(comp.name))}"
    return f"{comp.repeat} × {comp.name}"


def instances_noun(repeating) -> str:
    """The noun for "× 6 blocks": the repeating ancestor's last word, plural; "instances" otherwise."""
    if repeating is None:
        return "instances"
    word = names.lower_first(repeating.name).split()[-1]
    return names.plural(word) if repeating.name_is_prose else "instances"


def signed(n: int) -> str:
    """-5 -> "−5", 5 -> "+5", 0 -> "0", with a true minus sign."""
    return "0" if n == 0 else ("+" if n > 0 else "\u2212") + thousands(abs(n))


def crumb(c) -> str:
    return f"[{md_text(c.label)}]({c.href})"


def row_label(r) -> str:
    """An accounting row's first cell: a child's linked name, or a tensor's label and attribute."""
    text = f"[{md_text(r.label)}]({r.href})" if r.href else f"{md_text(r.label)} {md_code(r.name)}"
    return text + (f" ({md_text(r.note)})" if r.note else "")


def frozen_part(p) -> str:
    return f"[{md_text(p.label)}]({p.href}) {thousands(p.count)}"


FILTERS = {
    "signed": signed,
    "crumb": crumb,
    "row_label": row_label,
    "frozen_part": frozen_part,
    "thousands": thousands,
    "calculation": calculation,
    "tex_thousands": tex_thousands,
    "shape": shape,
    "md_text": md_text,
    "md_code": md_code,
    "repeat_label": repeat_label,
    "instances_noun": instances_noun,
}
