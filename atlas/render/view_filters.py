"""Filters for a page's two views of its equations: the paper view's lines the code's view points to, and the runs
of steps a part's own page shows."""

from __future__ import annotations


def step_numbers(steps) -> dict:
    """{formula: its step's number, from 1}: the lines one view shows, for the other to point to."""
    out = {}
    for i, st in enumerate(steps, 1):
        out.setdefault(st.formula, i)
    return out


def section_end(steps, i: int) -> int:
    """The number (from 1) of the last step of the run of one section that step i (from 0) is in."""
    end = i
    while end + 1 < len(steps) and steps[end + 1].section == steps[i].section:
        end += 1
    return end + 1


VIEW_FILTERS = {"step_numbers": step_numbers, "section_end": section_end}
