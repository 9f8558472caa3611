"""The model page's component tree as HTML: one grid row per component, the same columns at every depth.

Each row is a name (linked) over its class, the instances, the parameters of one instance and of all,
and the share of the model's trained parameters: a bar, or the word "frozen" where the component trains
nothing ("tied" where what it holds is another component's, counted there). Nesting indents the name cell
only, so the number columns line up down the whole tree; how
the columns fold on a narrow screen is templates/assets/atlas.css's business. Class names may break
between their words (GPT2 | Model), never inside one.
"""

from __future__ import annotations

import html
import re

from atlas import i18n
from atlas.render.filters import repeat_label, tag_label

SMALLEST_SHARE = 0.001      # a share under 0.1% reads "< 0.1%", not "0.0%"

_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[_.])")


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def class_name(qualified: str) -> str:
    """The class's own name, with a break opportunity between its words: Scaled<wbr>RMS<wbr>Norm."""
    name = qualified.rsplit(".", 1)[-1]
    return "<wbr>".join(_esc(part) for part in _WORD_BOUNDARY.split(name))


def share(node) -> str:
    """The last cell: the trained share as a bar and a percentage, or what the component is instead."""
    if node.trained == 0:
        if node.tag in ("frozen", "parameter-free", "tied"):
            return f'<span class="atlas-tag atlas-tag--{node.tag}">{_esc(tag_label(node.tag))}</span>'
    percent = i18n.percent(node.share) if node.share >= SMALLEST_SHARE else "< " + i18n.percent(SMALLEST_SHARE)
    title = i18n.render(i18n.msg("%(percent)s of the trained parameters", percent=percent))
    return (f'<span class="atlas-bar" title="{_esc(title)}" aria-hidden="true">'
            f'<span style="width:{100 * node.share:.1f}%"></span></span><span>{_esc(percent)}</span>')


def row(node) -> str:
    c = node.comp
    repeated = c.instances > 1
    return (f'<span class="atlas-node"><span class="atlas-node-name"><a href="{_esc(node.href)}">'
            f'{_esc(repeat_label(c))}</a> <code>{class_name(c.cls)}</code></span>'
            f'<span class="atlas-node-n">{"×" + i18n.number(c.instances) if repeated else ""}</span>'
            f'<span class="atlas-node-each">{i18n.number(c.parameters_per_instance) if repeated else ""}</span>'
            f'<span class="atlas-node-total">{i18n.number(c.parameters_total)}</span>'
            f'<span class="atlas-node-share">{share(node)}</span></span>')


def tree_item(node, depth: int = 0) -> str:
    """One component and, folded open at the first level, its children, as nested list items."""
    line = row(node)
    if not node.children:
        return f'<li style="--depth:{depth}">{line}</li>'
    inner = "".join(tree_item(ch, depth + 1) for ch in node.children)
    open_attr = " open" if depth < 1 else ""
    return f'<li style="--depth:{depth}"><details{open_attr}><summary>{line}</summary><ul>{inner}</ul></details></li>'
