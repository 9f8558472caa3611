"""Which documented components use which torch.nn class, and which are attention or normalization.

Read off two things only: each model's module tree (the class of every module, containers included, which the
component tree folds away), recorded in its ModelDoc while the module is there (`record`), and each ModelDoc's
verified equations:
- a torch.nn class is used by every module of that class or of a subclass (WhisperPositionalEmbedding is an
  Embedding); a module that is not a component of its own (a ModuleList) is listed at the component holding it;
- an attention is a component whose verified equations split heads (the `heads` fact) and none of whose
  descendants does; its variant follows from the `kv_heads` fact: as many key/value heads as query heads is
  multi-head attention, one is multi-query, any number between is grouped-query;
- a normalization is what `Component.is_normalization` says is one; its form is the `norm` fact (layer, RMS, L2).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from atlas.document import ClassUse, ModelDoc
from atlas.errors import AtlasError
from atlas.i18n import Text, msg


@dataclass(frozen=True)
class Use:
    """Modules of one torch.nn class at one position of a model."""

    model: str                          # the model's display name
    slug: str
    component: str                      # the component's id; for a container, the component holding it
    name: str                           # the component's display name
    instances: int                      # modules of the class at this position, across the model
    subclass: str | None = None         # the modules' own class, when it derives from the torch.nn class
    attribute: str | None = None        # a container's attribute on the component holding it: "blocks"
    held: tuple[tuple[str, str, int], ...] = ()  # a container's contents: (component id, name, modules in each)


@dataclass(frozen=True)
class Member:
    """A component of a kind (an attention variant, a form of normalization)."""

    model: str
    slug: str
    component: str
    name: str
    cls: str                            # its qualified class
    instances: int
    detail: Text | None = None          # "32 query heads, 8 key/value heads of 128 features"


@dataclass(frozen=True)
class Kind:
    key: str                            # "attention/grouped-query+qk-norm", "norm/rms"
    title: Text
    text: Text                          # how the kind is told from the others
    members: tuple[Member, ...]


def torch_class(cls: type) -> type | None:
    """The public torch.nn class `cls` is or derives from (not nn.Module itself); None for model code."""
    for c in cls.__mro__:
        if c is nn.Module:
            return None
        if c.__module__.startswith("torch.nn.") and getattr(nn, c.__name__, None) is c:
            return c
    return None


def record(model: nn.Module, doc: ModelDoc) -> tuple[ClassUse, ...]:
    """The torch.nn classes of `model`'s modules at `doc`'s components, in module order: what the reference pages
    need of the live module, kept in the document (its JSON too) so that a model read back from it has them."""
    at = {p: c for c in doc.components for p in c.module_paths}
    counts: dict[tuple, list] = {}
    for path, module in model.named_modules():
        base = torch_class(type(module))
        if base is None:
            continue
        own = type(module).__name__ if type(module) is not base else None
        if path in at:
            counts.setdefault((base, at[path].id, None, own), [0, {}])[0] += 1
            continue
        owner, attribute = _owner(path, at)
        if owner is None:
            continue
        entry = counts.setdefault((base, owner.id, attribute, own), [0, {}])
        entry[0] += 1
        for child_path, _ in module.named_children():
            child = at.get(f"{path}.{child_path}" if path else child_path)
            if child is not None:
                entry[1][child.id] = entry[1].get(child.id, 0) + 1
    return tuple(ClassUse(f"torch.nn.{base.__name__}", cid, n, own, attribute,
                          tuple((h, round(k / n)) for h, k in held.items()))
                 for (base, cid, attribute, own), (n, held) in counts.items())


def resolve(name: str) -> type:
    """The torch.nn class a use names ("torch.nn.Linear"); a name this torch does not have fails loudly."""
    cls = getattr(nn, name.removeprefix("torch.nn."), None)
    if not name.startswith("torch.nn.") or not isinstance(cls, type) or not issubclass(cls, nn.Module):
        raise AtlasError(f"{name} is no torch.nn module class in torch {torch.__version__}")
    return cls


def uses(docs: list[ModelDoc]) -> dict[type, list[Use]]:
    """torch.nn class -> its uses, in model order then module order, read off each document's class uses."""
    out: dict[type, list[Use]] = {}
    for doc in docs:
        for u in doc.class_uses:
            comp = doc.component(u.component)
            held = tuple((cid, doc.component(cid).name, n) for cid, n in u.held)
            out.setdefault(resolve(u.cls), []).append(
                Use(doc.name, doc.slug, u.component, comp.name, u.instances, u.subclass, u.attribute, held))
    return out


def _owner(path: str, at: dict):
    """The component holding a module that is not one, and the module's attribute on it (list indices dropped)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, -1, -1):
        comp = at.get(".".join(parts[:cut]))
        if comp is not None:
            rest = [p for p in parts[cut:] if not p.isdigit()]
            return comp, ".".join(rest) or parts[-1]
    return None, None



def _facts(comp) -> dict:
    e = comp.equations
    if e is None or e.verification is None or not e.verification.verified:
        return {}
    return {f.kind: f.value for f in e.facts}


ATTENTION = {
    "multi-head": (msg("Multi-head attention"), msg("As many key/value heads as query heads.")),
    "grouped-query": (msg("Grouped-query attention"),
                      msg("Fewer key/value heads than query heads: each key/value head serves a group of query "
                          "heads.")),
    "multi-query": (msg("Multi-query attention"), msg("One key/value head serves every query head.")),
}
NORMS = {
    "layer": (msg("Layer normalization"),
              msg("Centres each position's features, then divides them by their standard deviation.")),
    "rms": (msg("RMS normalization"), msg("Divides each position's features by their root mean square, without "
                                          "centring them.")),
    "l2": (msg("L2 normalization"), msg("Divides each position's features by their 2-norm.")),
    None: (msg("Other normalization"), msg("Normalizations whose form the verified equations do not show.")),
}


def kinds(docs: list[ModelDoc]) -> list[Kind]:
    """Attention variants, then forms of normalization; members in model order then tree order."""
    groups: dict[str, tuple[Text, Text, list[Member]]] = {}
    for doc in docs:
        for comp in doc.components:
            facts = _facts(comp)
            if "heads" in facts and not any("heads" in _facts(d) for d in doc.descendants(comp)):
                key, title, text, detail = _attention(facts)
                groups.setdefault(key, (title, text, []))[2].append(_member(doc, comp, detail))
            elif comp.is_normalization and not comp.children:
                form = facts.get("norm")
                title, text = NORMS.get(form, NORMS[None])
                groups.setdefault(f"norm/{form or 'other'}", (title, text, []))[2].append(_member(doc, comp, None))
    order = [f"attention/{k}" for k in ATTENTION] + [f"norm/{k or 'other'}" for k in NORMS]
    keys = sorted(groups, key=lambda k: (order.index(k.split("+")[0]) if k.split("+")[0] in order else len(order), k))
    return [Kind(k, *groups[k][:2], tuple(groups[k][2])) for k in keys]


def _attention(facts: dict) -> tuple[str, Text, Text, Text]:
    heads = facts["heads"]
    kv = facts.get("kv_heads", heads)
    variant = "multi-head" if kv == heads else ("multi-query" if kv == 1 else "grouped-query")
    extras = []
    if facts.get("qk_norm"):
        extras.append(("qk-norm", msg("query and key normalization")))
    if "softcap" in facts:
        extras.append(("softcap", msg("a logit softcap")))
    key = f"attention/{variant}" + "".join(f"+{k}" for k, _ in extras)
    name, text = ATTENTION[variant]
    title = name if not extras else msg("%(variant)s, with %(extras)s", variant=name,
                                        extras=tuple(t for _, t in extras))
    features = facts.get("head_features")
    if kv != heads:
        detail = msg("%(heads)s query heads and %(kv)s key/value heads of %(features)s features", heads=heads,
                     kv=kv, features=features if features is not None else "?")
    else:
        detail = msg("%(heads)s heads of %(features)s features", heads=heads,
                     features=features if features is not None else "?")
    return key, title, text, detail


def _member(doc: ModelDoc, comp, detail) -> Member:
    return Member(doc.name, doc.slug, comp.id, comp.name, comp.cls, comp.instances, detail)


@dataclass(frozen=True)
class Index:
    classes: tuple[tuple[str, str, tuple], ...]         # (torch.nn.X, slug, uses), by class name
    kinds: tuple[Kind, ...]
    models: tuple[tuple[str, str], ...]                 # (name, slug), in site order
    pages: tuple[tuple[str, str], ...]                  # (qualified class, slug) of every class page

    def kinds_of(self, prefix: str) -> list:
        """The attention variants ("attention/") or the forms of normalization ("norm/")."""
        return [k for k in self.kinds if k.key.startswith(prefix)]

    def page_of(self, qualname: str) -> str | None:
        return dict(self.pages).get(qualname)


def index(refs: list, docs: list[ModelDoc]) -> Index:
    """The cross-model index of the reference pages `refs` (atlas.analyse.reference.class_pages) and `docs`."""
    return Index(tuple((r.cls, r.slug, r.used_in) for r in refs if r.used_in), tuple(kinds(docs)),
                 tuple((d.name, d.slug) for d in docs), tuple((r.qualname, r.slug) for r in refs))
