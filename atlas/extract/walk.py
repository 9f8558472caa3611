"""Walk an nn.Module tree into Components: frozen data with no torch inside.

A component is a position in the tree. Entries of ModuleList, ModuleDict and
Sequential that are structurally identical (same class, same hyper-parameters,
same parameter shapes, same children, same tying) collapse into one component
with an instance count, unless the symbolic run found that they compute
differently (`kinds`, from atlas.extract.record.plan). The walker knows nothing about any
particular model.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from dataclasses import dataclass

import torch
from torch import nn

from atlas.document import Component, ModelDoc, Published
from atlas.extract import accounting, aliases, names
from atlas.load.hooks import hooks_of
from atlas.load.spec import Loaded

_TRANSPARENT = (nn.ModuleList, nn.ModuleDict)     # containers without a forward: their entries take their place
_INDEXED = (nn.ModuleList, nn.ModuleDict, nn.Sequential)


def qualname(obj: type) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


@dataclass
class _Position:
    segment: str                         # id segment, e.g. "blocks" or "layers.0-3"
    keys: list[str]                      # path suffixes below the parent, one per entry
    attr: str | None                     # the attribute that names it, None for list entries


class _Walker:
    def __init__(self, model: nn.Module, kinds: dict | None = None, skipped: frozenset = frozenset()) -> None:
        self.model = model
        self.kinds = kinds or {}        # module path -> (kind, why), for list entries that compute differently
        self.skipped = skipped          # registrations of a twice-registered module left out (atlas.extract.aliases)
        self.owners = accounting.tensor_owners(model)
        if skipped:                     # a tensor is counted at a path kept
            for holders in self.owners.values():
                holders.sort(key=lambda place: aliases.left_out(place.rpartition(".")[0], skipped))
        self._sigs: dict[str, str] = {}
        self.components: list[Component] = []

    # -- structure -------------------------------------------------------------
    def signature(self, path: str, module: nn.Module) -> str:
        """A digest of everything that makes two entries one component."""
        if path in self._sigs:
            return self._sigs[path]
        parts = [
            qualname(type(module)),
            hooks_of(module).name or "",
            str(self.kinds.get(path, ("", None))[0]),
            _extra_repr(module),
            [(n, accounting.shape_of(p), str(p.dtype), p.requires_grad, accounting.marker(self.owners, path, n, p))
             for n, p in accounting.own_tensors(module, "_parameters") if p is not None],
            [(n, accounting.shape_of(b), str(b.dtype)) for n, b in accounting.own_tensors(module, "_buffers")
             if b is not None],
            [(k, self.signature(_join(path, k), c)) for k, c in self.children(path, module)],
        ]
        digest = hashlib.sha1(repr(parts).encode()).hexdigest()
        self._sigs[path] = digest
        return digest

    def _group(self, path: str, container: nn.Module) -> list[list[str]]:
        groups: dict[str, list[str]] = {}
        for key, child in self.children(path, container):
            groups.setdefault(self.signature(_join(path, key), child), []).append(key)
        return list(groups.values())

    def positions(self, path: str, module: nn.Module) -> list[_Position]:
        """The child positions of one instance, with list entries grouped."""
        if isinstance(module, _INDEXED):
            return [_Position(names.index_spec(keys), keys, keys[0] if len(keys) == 1 else None)
                    for keys in self._group(path, module)]
        out: list[_Position] = []
        for key, child in self.children(path, module):
            self._expand(path, key, key, child, out)
        return out

    def children(self, path: str, module: nn.Module) -> list[tuple[str, nn.Module]]:
        """Every registered child (`children`), but the registrations left out."""
        found = children(module)
        return [(k, c) for k, c in found if not aliases.left_out(_join(path, k), self.skipped)] if self.skipped \
            else found

    def _expand(self, path: str, key: str, segment: str, child: nn.Module, out: list[_Position]) -> None:
        """A transparent container's entries take its place; nested ones are opened too."""
        if not _transparent(child):
            out.append(_Position(segment, [key], key.rsplit(".", 1)[-1]))
            return
        groups = self._group(_join(path, key), child)
        for keys in groups:
            seg = segment if len(groups) == 1 else f"{segment}.{names.index_spec(keys)}"
            if len(keys) == 1 and _transparent(child._modules[keys[0]]):
                self._expand(path, f"{key}.{keys[0]}", f"{segment}.{keys[0]}", child._modules[keys[0]], out)
                continue
            attr = keys[0] if len(keys) == 1 and not keys[0].isdigit() else None
            out.append(_Position(seg, [f"{key}.{k}" for k in keys], attr))

    def _renamer(self, path: str, parent: nn.Module):
        def rename(comp: Component) -> tuple[str, bool]:
            attr = comp.id.rsplit(".", 1)[-1]
            key = comp.module_paths[0][len(path) + 1:] if path else comp.module_paths[0]
            return display_name(parent.get_submodule(key), attr, use_hint=False)
        return rename

    # -- components ------------------------------------------------------------
    def visit(self, cid: str, parent: str | None, attr: str | None,
              instances: list[tuple[str, nn.Module]], repeat: int) -> Component:
        path0, m0 = instances[0]
        children: list[Component] = []
        index = len(self.components)
        self.components.append(None)  # reserve the pre-order slot
        for pos in self.positions(path0, m0):
            sub = [(_join(p, key), m.get_submodule(key)) for p, m in instances for key in pos.keys]
            child_id = _join(cid, pos.segment)
            children.append(self.visit(child_id, cid, pos.attr, sub, len(pos.keys)))
        _dedupe_names(children, self.components, self._renamer(path0, m0))
        name, prose = display_name(m0, attr)
        comp = Component(
            id=cid,
            parent=parent,
            name=name,
            cls=qualname(type(m0)),
            instances=len(instances),
            repeat=repeat,
            module_paths=tuple(p for p, _ in instances),
            rows=accounting.param_rows(m0, path0, self.owners),
            buffers=accounting.buffer_rows(m0),
            children=tuple(c.id for c in children),
            parameters_per_instance=accounting.unique_numel(m0),
            counted_elsewhere=accounting.counted_elsewhere(m0, path0, self.owners),
            summary=summary(m0),
            reconstruction=hooks_of(m0).reconstruction,
            name_is_prose=prose,
            set_apart=self.kinds.get(path0, (None, None))[1],
        )
        self.components[index] = comp
        return comp


def _transparent(module: nn.Module) -> bool:
    """A ModuleList or ModuleDict that owns no tensors itself (a ParametrizationList owns the originals)."""
    return (isinstance(module, _TRANSPARENT) and not any(p is not None for p in module._parameters.values())
            and not any(b is not None for b in module._buffers.values()))


def children(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """Every registered child, including a module registered twice (named_children() hides the second); none of a
    TorchScript module's, an opaque leaf (atlas.extract.accounting.own_tensors)."""
    if isinstance(module, torch.jit.ScriptModule):
        return []
    return [(k, c) for k, c in module._modules.items() if c is not None]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _extra_repr(module: nn.Module) -> str:
    try:
        return module.extra_repr()
    except Exception:  # a user's extra_repr that fails must not stop the walk
        return ""


def display_name(module: nn.Module, attr: str | None, use_hint: bool = True) -> tuple[str, bool]:
    """(name, is_prose): the author's `atlas_name`, else a readable attribute name, else the class name."""
    hint = hooks_of(module).name if use_hint else None
    if hint:
        return hint, True
    cls_name = type(module).__name__
    canonical = type(module).__module__.startswith("torch.nn")
    readable = names.readable_attribute(attr or "", cls_name, canonical)
    if readable:
        return readable, readable not in (cls_name, attr) or " " in readable     # `c_fc`, kept as written, is code
    return cls_name, False


def _dedupe_names(children: list[Component], done: list, rename) -> None:
    """Siblings that would read the same are named by their attributes, else get their position appended."""
    def by_segment(c: Component) -> tuple[str, bool]:
        segment = c.id[len(c.parent) + 1:] if c.parent else c.id
        return f"{c.name} ({segment})", c.name_is_prose

    for step in (rename, by_segment):
        seen: dict[str, int] = {}
        for c in children:
            seen[c.name] = seen.get(c.name, 0) + 1
        for i, c in enumerate(children):
            if seen[c.name] > 1:
                name, prose = step(c)
                renamed = _replace(c, name=name, name_is_prose=prose)
                children[i] = renamed
                done[done.index(c)] = renamed


def _replace(comp: Component, **changes) -> Component:
    from dataclasses import replace
    return replace(comp, **changes)


_ROLE = re.compile(r":[a-z:]+:`~?([^`]*)`")


def summary(module: nn.Module) -> str:
    """The author's `atlas_summary`, else the first sentence of the class's own docstring."""
    hint = hooks_of(module).summary
    if hint:
        return hint
    doc = type(module).__dict__.get("__doc__")
    if not isinstance(doc, str) or not doc.strip():
        return ""
    para = inspect.cleandoc(doc).split("\n\n", 1)[0]
    text = " ".join(_ROLE.sub(r"\1", para).replace("``", "").split())
    sentence = _first_sentence(text)
    if sentence.endswith(":"):
        sentence = sentence[:-1] + "."
    return sentence


_ABBREVIATIONS = {"al", "e.g", "i.e", "etc", "cf", "vs", "fig", "figs", "eq", "eqs", "sec", "approx", "resp", "no"}


def _first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence: not one inside brackets, after an abbreviation ("Bahdanau
    et al. 2015", "e.g. a mask") or an initial, nor one a lowercase word follows."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if ch not in ".!?" or depth > 0 or (i + 1 < len(text) and not text[i + 1].isspace()):
            continue
        word = text[:i].rsplit(" ", 1)[-1].lstrip("([{\"'`").lower()
        following = text[i + 1:].lstrip()[:1]
        if ch == "." and (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        if following.islower():
            continue
        return text[:i + 1]
    unclosed = re.match(r"(.+?[.!?])(\s|$)", text) if depth > 0 else None     # a bracket never closed
    return unclosed.group(1) if unclosed else text


def published(model: nn.Module) -> Published | None:
    raw = hooks_of(model).published
    if raw is None or "source" not in raw:
        return None
    return Published(
        source=str(raw["source"]),
        trained=raw.get("trained"),
        frozen=raw.get("frozen"),
        frozen_composition_inferred=bool(raw.get("frozen_composition_inferred", False)),
    )


def model_name(model: nn.Module) -> tuple[str, str]:
    """The model's display name and the slug of its folder in the docs tree."""
    name, _ = display_name(model, None)
    return name, names.slug(name)


def walk(loaded: Loaded, kinds: dict | None = None, skipped: frozenset = frozenset()) -> ModelDoc:
    """The model's components; `kinds` ({module path: (kind, why)}) keeps apart list entries that compute
    differently, and says why on their pages; `skipped` are registrations of a twice-registered module that the
    record called through another path (atlas.extract.aliases), left out."""
    model = loaded.model
    walker = _Walker(model, kinds, skipped)
    walker.visit("", None, None, [("", model)], 1)
    name, slug = model_name(model)
    doc = ModelDoc(
        name=name,
        slug=slug,
        spec=loaded.spec,
        cls=qualname(type(model)),
        components=tuple(walker.components),
        totals=accounting.totals(model),
        published=published(model),
    )
    accounting.check_invariant(doc)
    return doc
