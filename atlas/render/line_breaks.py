"""Filters for equations on a narrow page: whether a block's lines can stay one aligned block. An aligned block
(a leaf's lines, "a &= b") is one table that no column breaks; a block holding a long line is shown as lines of
their own, each of which a narrow column may break (atlas.render.latex.breakable)."""

from __future__ import annotations

from atlas.render.math_markup import ALIGNED_LONG, is_long, names_of


def any_long(lines, e) -> bool:
    """Whether any of a page's lines is too wide to stay in an aligned block (math_markup.ALIGNED_LONG)."""
    names = names_of(e)
    return any(is_long(line, names, ALIGNED_LONG) for line in lines)


LINE_FILTERS = {"any_long": any_long}
