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


def child_steps(steps) -> dict:
    """{key of the value a step defines: the children it calls}: in the paper view, a child's computation is one
    line that names it (RMSNorm_γ(x) of `input_layernorm`), which the code's view can point to."""
    return {st.defines: st.links for st in steps if st.defines and st.links}


VIEW_FILTERS = {"step_numbers": step_numbers, "section_end": section_end, "child_steps": child_steps}
