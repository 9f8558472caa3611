"""A component's data-flow diagram, drawn as plain SVG from the flow its forward recorded (atlas.analyse.data_flow).

The modules it calls stand in one column, in the order the forward ran them, each box linking to its page; a
run of calls over a list reads "× n". The forward's inputs sit to the left of the first module that reads them, and
so do side modules (atlas.analyse.data_flow: positions computed from a range, not from the state the chain carries),
each box linking to its page and joined to every module that reads it.
An arrow joins each module to the next that reads its output: straight down to the next box, around the right
side to a later one (a skip, a residual). A wrapper whose flow is a single module (transformers' `model` inside
`…ForCausalLM`) is opened: the diagram goes on with that module's own flow.
"""

from __future__ import annotations

from html import escape

from atlas import i18n
from atlas.document import Component, Flow, ModelDoc
from atlas.i18n import msg

BOX_W, BOX_H, ROW, PILL_H = 300, 40, 64, 28
CHAR = 7.6                               # average width of a character at 13px
LEFT_GAP, SKIP = 28, 16


def _label(doc: ModelDoc, node) -> str:
    if node.kind == "module":
        return node.label if node.calls == 1 else f"{node.label} × {node.calls}"
    return node.label


def _opened(doc: ModelDoc, comp: Component) -> list[tuple[Component, Flow]]:
    """The component's flow, and the flows of single-module wrappers it goes through."""
    panels = []
    while comp is not None and comp.flow is not None and len(panels) < 3:
        panels.append((comp, comp.flow))
        big = [n for n in comp.flow.nodes if n.kind == "module" and doc.component(n.component).children]
        inner = doc.component(big[0].component) if len(big) == 1 and big[0].calls == 1 else None
        comp = inner if inner is not None and inner.flow is not None else None
    return panels


def svg(doc: ModelDoc, comp: Component, href) -> str | None:
    """`href(component)` gives each box's link, relative to the page the diagram sits on. None: no flow."""
    panels = _opened(doc, comp)
    if not panels:
        return None
    parts, y, width = [], 8, 0
    pill_w = max([len(_label(doc, n)) * CHAR + 20 for _, f in panels for n in f.nodes if _beside(n)] or [0])
    x0 = (pill_w + LEFT_GAP) if pill_w else 8
    for i, (owner, flow) in enumerate(panels):
        if i:
            title = i18n.render(msg("inside %(name)s:", name=owner.name))
            parts.append(f'<text class="atlas-flow-caption" x="{x0}" y="{y + 14}">{escape(title)}</text>')
            y += 26
        drawn, y, right = _panel(doc, flow, href, x0, y, pill_w)
        parts += drawn
        width = max(width, right)
        y += 12
    label = i18n.render(msg("Data flow of %(name)s", name=doc.name if not comp.id else comp.name))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {y:.0f}" role="img" '
            f'aria-label="{escape(label, quote=True)}"><defs><marker id="atlas-arrow" viewBox="0 0 8 8" refX="7" '
            f'refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z"/>'
            f'</marker></defs>' + "".join(parts) + "</svg>")


def _beside(node) -> bool:
    """Drawn to the left of the chain: an input of the forward, or a side module."""
    return node.kind == "input" or node.side


def _panel(doc: ModelDoc, flow: Flow, href, x0: float, top: float, pill_w: float):
    center = [i for i, n in enumerate(flow.nodes) if not _beside(n)]
    row_of = {i: r for r, i in enumerate(center)}
    consumers: dict[int, list[int]] = {}
    for a, b in flow.edges:
        consumers.setdefault(a, []).append(b)
    # inputs and side modules beside the first box of the chain they reach, stacked where several share it (a side
    # module that feeds another stands above it)
    def reached(i: int) -> int:
        """The first box of the chain that node i feeds, directly or through side modules; the first box at all
        for a side module whose output reaches no box."""
        return min((b if b in row_of else reached(b) for b in consumers[i] if b in row_of or consumers.get(b)),
                   default=center[0])

    beside: dict[int, list[int]] = {}
    for i, n in enumerate(flow.nodes):
        if _beside(n) and consumers.get(i):
            beside.setdefault(row_of[reached(i)], []).append(i)
    at: dict[int, float] = {}                          # a beside node's top
    ys, y = {}, top
    for r, i in enumerate(center):
        ys[i] = y + max(0, (len(beside.get(r, [])) - 1) * (PILL_H + 6)) / 2
        y += max(ROW, len(beside.get(r, [])) * (PILL_H + 6) + ROW - BOX_H)
    parts, skips = [], 0
    right = x0 + BOX_W
    for r, i in enumerate(center):                     # boxes
        n, by = flow.nodes[i], ys[i]
        if n.kind == "module":
            parts.append(_module_box(doc, n, href, x0, by, BOX_W, BOX_H))
        else:
            word = escape(i18n.render(msg("output")))
            parts.append(f'<rect class="atlas-flow-out" x="{x0 + BOX_W / 4}" y="{by:.0f}" width="{BOX_W / 2}" '
                         f'height="{BOX_H}" rx="{BOX_H / 2}"/><text x="{x0 + BOX_W / 2}" y="{by + BOX_H / 2 + 5:.0f}" '
                         f'text-anchor="middle">{word}</text>')
    for r, ins in beside.items():                      # inputs
        first = ys[center[r]] + BOX_H / 2 - (len(ins) - 1) * (PILL_H + 6) / 2
        for k, i in enumerate(ins):
            py = first + k * (PILL_H + 6) - PILL_H / 2
            at[i] = py
            if flow.nodes[i].kind == "module":
                parts.append(_module_box(doc, flow.nodes[i], href, 8, py, pill_w - 8, PILL_H, "atlas-flow-side"))
            else:
                parts.append(f'<rect class="atlas-flow-in" x="8" y="{py:.0f}" width="{pill_w - 8:.0f}" '
                             f'height="{PILL_H}" rx="{PILL_H / 2}"/><text class="atlas-flow-name" '
                             f'x="{8 + (pill_w - 8) / 2:.0f}" y="{py + PILL_H / 2 + 4:.0f}" '
                             f'text-anchor="middle">{escape(flow.nodes[i].label)}</text>')
            for b in sorted(consumers[i]):
                if b not in row_of:                    # another side module, below it in the stack
                    continue
                ty = ys[b] + BOX_H / 2
                if row_of[b] == r:
                    parts.append(_line(pill_w, py + PILL_H / 2, x0, ty))
                else:                                  # down the left side to a later box
                    lx = pill_w + LEFT_GAP / 2
                    parts.append(f'<path class="atlas-flow-edge" d="M{pill_w:.0f},{py + PILL_H / 2:.0f} '
                                 f'H{lx:.0f} V{ty:.0f} H{x0}" marker-end="url(#atlas-arrow)"/>')
    mid = 8 + (pill_w - 8) / 2
    for a, b in flow.edges:                            # module to module
        if _beside(flow.nodes[a]):
            if a in at and b in at:                    # side module to side module: down the stack
                parts.append(_line(mid, at[a] + PILL_H, mid, at[b]))
            continue
        ra, rb = row_of[a], row_of[b]
        if rb == ra + 1:
            parts.append(_line(x0 + BOX_W / 2, ys[a] + BOX_H, x0 + BOX_W / 2, ys[b]))
        else:
            skips += 1
            sx = x0 + BOX_W + SKIP * skips
            right = max(right, sx + 8)
            parts.append(f'<path class="atlas-flow-edge" d="M{x0 + BOX_W},{ys[a] + BOX_H / 2:.0f} H{sx} '
                         f'V{ys[b] + BOX_H / 2:.0f} H{x0 + BOX_W}" marker-end="url(#atlas-arrow)"/>')
    return parts, y, right + 8


def _module_box(doc: ModelDoc, node, href, x: float, y: float, w: float, h: float, cls: str | None = None) -> str:
    """A module's box, linking to its page, its class and parameters in the tooltip."""
    target = doc.component(node.component)
    title = escape(i18n.render(msg("%(label)s · %(class_name)s · %(count)s parameters per instance",
                                   label=node.label, class_name=target.cls.rsplit(".", 1)[-1],
                                   count=target.parameters_per_instance)))
    klass, name = (f' class="{cls}"', ' class="atlas-flow-name"') if cls else ("", "")
    return (f'<a href="{escape(href(target), quote=True)}"><title>{title}</title>'
            f'<rect{klass} x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h}" rx="5"/>'
            f'<text{name} x="{x + w / 2:.0f}" y="{y + h / 2 + (4 if cls else 5):.0f}" text-anchor="middle">'
            f'{escape(_label(doc, node))}</text></a>')


def _line(x1, y1, x2, y2) -> str:
    return (f'<line class="atlas-flow-edge" x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" '
            f'marker-end="url(#atlas-arrow)"/>')
