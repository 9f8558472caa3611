"""Numbers inside a page's formulas, written as the page's language writes numbers.

The analyse and document stages write their LaTeX once, in the source language's notation: a decimal point
(0.125, {768}^{-0.5}, \\operatorname{dropout}_{0.1}). A page in another language gets every formula's numbers
in its own notation when it is rendered: Spanish writes a decimal comma, braced so that TeX sets no space after
it as it would after punctuation (0{,}125). Grouped integers come from `filters.tex_thousands`, which braces the
locale's separator (16{,}515{,}072 in English, 16{.}515{.}072 in Spanish); a separator left unbraced between
digits is only ever a decimal point, so the two never mix. English pages are left as they are.
"""

from __future__ import annotations

import re

from atlas import i18n

# what a page holds that is not prose: fenced code (at any indent, as admonitions hold it), inline code, and
# the math, display ($$...$$) or inline ($...$), whose numbers are rewritten
_PARTS = re.compile(r"(?P<fence>^(?P<indent>[ \t]*)(?P<ticks>`{3,})[^\n]*\n.*?^(?P=indent)(?P=ticks)[ \t]*$)"
                    r"|(?P<code>`+)[^`\n]*?(?P=code)"
                    r"|\$\$(?P<display>.+?)\$\$"
                    r"|(?<![\\$])\$(?!\$)(?P<inline>[^$\n]+?)(?<![\\$])\$", re.S | re.M)
_DECIMAL = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?![\d.])")


def localized_page(text: str, language: str | None = None) -> str:
    """A rendered Markdown page with its formulas' numbers in `language` (the active one by default)."""
    language = language or i18n.active()
    if language == i18n.DEFAULT:
        return text
    from babel.numbers import get_decimal_symbol
    mark = "{" + get_decimal_symbol(language) + "}"

    def part(m: re.Match) -> str:
        if m.group("fence") or m.group("code"):
            return m.group(0)
        return _DECIMAL.sub(lambda d: f"{d.group(1)}{mark}{d.group(2)}", m.group(0))

    return _PARTS.sub(part, text)

