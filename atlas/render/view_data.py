"""View data for templates, computed from the data model. No torch, no Jinja here."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from atlas.document import Component, ModelDoc, Tag
from atlas.i18n import lowered, msg
from atlas.render import page_paths


@dataclass(frozen=True)
class Crumb:
    label: str
    href: str


@dataclass(frozen=True)
class TableRow:
    label: str
    name: str | None            # the attribute, for tensor rows
    href: str | None            # the child's page, for child rows
    calculation: str
    count: int
    note: str | None = None


@dataclass(frozen=True)
class FrozenPart:
    label: str
    href: str
    count: int


def tag(doc: ModelDoc, comp: Component) -> Tag:
    trained = frozen = elsewhere = 0
    for c in subtree(doc, comp):
        for r in c.rows:
            if r.shared_with and not r.counted:
                elsewhere += r.count
            elif r.trained:
                trained += r.count
            else:
                frozen += r.count
    if trained == 0 and frozen == 0:
        return Tag.TIED if elsewhere else Tag.PARAMETER_FREE
    if frozen == 0:
        return Tag.LEARNED
    return Tag.FROZEN if trained == 0 else Tag.PARTLY_FROZEN


def subtree(doc: ModelDoc, comp: Component) -> list[Component]:
    out = [comp]
    for cid in comp.children:
        out.extend(subtree(doc, doc.component(cid)))
    return out


def repeating(doc: ModelDoc, comp: Component) -> Component | None:
    """The nearest component at or above this one that repeats, when it accounts for every instance."""
    for c in (comp, *reversed(doc.ancestors(comp.id))):
        if c.repeat > 1:
            return c if c.repeat == comp.instances else None
    return None


def crumbs(doc: ModelDoc, comp: Component, labeler) -> list[Crumb]:
    here = page_paths.page_path(doc, comp)
    return [Crumb(labeler(a), page_paths.link(here, page_paths.page_path(doc, a))) for a in doc.ancestors(comp.id)]


def table_rows(doc: ModelDoc, comp: Component, labeler, thousands, calculation) -> list[TableRow]:
    """Per-instance accounting: owned tensors, then children's subtotals."""
    here = page_paths.page_path(doc, comp)
    rows = []
    for r in comp.rows:
        note = None
        if r.shared_with:
            paths_ = ", ".join(r.shared_with)
            note = (msg("tied; also held by %(paths)s", paths=paths_) if r.counted
                    else msg("tied; counted at %(paths)s", paths=paths_))
        rows.append(TableRow(r.label, r.name, None, calculation(r.factors), r.count, note))
    for cid in comp.children:
        child = doc.component(cid)
        if child.parameters_per_instance == 0:
            continue
        per = child.parameters_per_instance
        calc = (f"{thousands(per)} × {child.repeat}" if child.repeat > 1
                else msg("%(count)s across its components", count=per) if child.children
                else calculation_of(child, calculation))
        rows.append(TableRow(labeler(child), None, page_paths.link(here, page_paths.page_path(doc, child)),
                             calc, per * child.repeat))
    return rows


def calculation_of(comp: Component, calculation) -> str:
    parts = [calculation(r.factors) for r in comp.rows]
    return " + ".join(parts) if parts else "0"


def shared_within(comp: Component, rows: list[TableRow]) -> int:
    """Elements listed more than once in this instance's table because tensors are shared inside it."""
    return sum(r.count for r in rows) - comp.parameters_per_instance


def experts_within(doc: ModelDoc, comp: Component) -> list[SimpleNamespace]:
    """The mixtures of experts inside one instance of a component (or it itself), each with how many of them one
    instance holds and the parameters one token leaves idle in them."""
    out = []
    if comp.parent is None:
        return out
    for e in doc.totals.experts:
        if e.component == comp.id or e.component.startswith(comp.id + "."):
            each = e.instances // comp.instances
            out.append(SimpleNamespace(layers=e, each=each, idle=each * (e.experts - e.top_k) * e.per_expert))
    return out


def frozen_parts(doc: ModelDoc) -> list[FrozenPart]:
    """The frozen total, composed: the topmost all-frozen components, and frozen tensors of mixed ones."""
    out: list[FrozenPart] = []
    root_page = page_paths.page_path(doc, doc.root)

    def visit(c: Component) -> None:
        rows = [(x, r) for x in subtree(doc, c) for r in x.rows if r.counted]
        if rows and all(not r.trained for _, r in rows) and c.id:
            out.append(FrozenPart(c.name, page_paths.link(root_page, page_paths.page_path(doc, c)),
                                  sum(r.count * x.instances for x, r in rows)))
            return
        for r in c.rows:
            if r.counted and not r.trained:
                out.append(FrozenPart(msg("%(tensor)s (%(component)s)", tensor=lowered(r.label), component=c.name)
                                      if c.id else r.label,
                                      page_paths.link(root_page, page_paths.page_path(doc, c)), r.count * c.instances))
        for cid in c.children:
            visit(doc.component(cid))

    visit(doc.root)
    return out


def reconstructions(doc: ModelDoc) -> list[Component]:
    return [c for c in doc.components if c.reconstruction]


def in_reconstruction(doc: ModelDoc, comp: Component) -> Component | None:
    """The component itself or the nearest ancestor marked as a reconstruction."""
    for c in (comp, *reversed(doc.ancestors(comp.id))):
        if c.reconstruction:
            return c
    return None


@dataclass(frozen=True)
class TreeNode:
    comp: Component
    href: str                   # a directory URL relative to the model page
    trained: int                # trained parameters at this position, all instances, each tensor once
    share: float                # of the model's trained parameters, 0..1
    children: tuple             # TreeNode, ...
    tag: str = Tag.LEARNED.value    # learned, frozen, partly frozen, parameter-free or tied


def trained_total(doc: ModelDoc, comp: Component) -> int:
    return sum(r.count * c.instances for c in subtree(doc, comp) for r in c.rows if r.counted and r.trained)


def tree(doc: ModelDoc, href) -> TreeNode:
    total = max(doc.totals.trained, 1)

    def node(comp: Component) -> TreeNode:
        trained = trained_total(doc, comp)
        children = tuple(node(doc.component(c)) for c in comp.children)
        return TreeNode(comp, href(comp), trained, trained / total, children, tag(doc, comp).value)

    return node(doc.root)


@dataclass(frozen=True)
class CheckpointFinding:
    """A tensor that is not a plain match: missing, unexpected, mismatched, or a tied copy saved once."""

    name: str                   # the code's name; for an unexpected tensor, the checkpoint's
    kind: str                   # "missing", "unexpected", "mismatched" or "tied"
    mismatch: object = None     # model.Mismatch, for "mismatched"
    saved_as: str | None = None     # for "tied": the name the checkpoint holds the tensor under


def checkpoint_findings(doc: ModelDoc, comp: Component) -> list[CheckpointFinding]:
    """The findings at a component (all instances, children included): problems first, then tied copies."""
    r = doc.checkpoint
    if r is None:
        return []
    prefixes = tuple(p + "." for p in comp.module_paths if p)

    def here(name: str) -> bool:
        return not comp.id or name.startswith(prefixes)

    return ([CheckpointFinding(n, "missing") for n in r.missing if here(n)]
            + [CheckpointFinding(n, "unexpected") for n in r.unexpected if here(r.code_name(n))]
            + [CheckpointFinding(m.name, "mismatched", mismatch=m) for m in r.mismatched if here(m.name)]
            + [CheckpointFinding(t.name, "tied", saved_as=t.saved_as) for t in r.tied if here(t.name)])
