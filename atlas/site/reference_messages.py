"""The reference catalog's messages: what the reference pages of the default site say in words that do not come
from the atlas's own sentences.

- families.yml: titles, what each layer acts over, typical uses;
- each data file (templates/reference/<Class>.yml): summary, example titles and texts, the comments and printed
  strings of its examples' code, FAQ and use cases;
- for each class a shipped model gets a page for (the models of the repository's mkdocs.yml and of the zoo,
  atlas/zoo, and the classes their comparison tables name): its docstring's first paragraph and its
  parameters' types and descriptions.
A page for a class outside that set (another model's) is still generated: its docstring words then stay in
English on the Spanish page, marked as such.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml
from torch import nn

from atlas.analyse.reference import class_pages, example_runs
from atlas.analyse.reference.class_uses import torch_class
from atlas.resources import REPOSITORY


def site_specs(config: Path = REPOSITORY / "mkdocs.yml") -> list[str]:
    """The model specs of the atlas plugin in an mkdocs.yml; the default model when it lists none."""
    from atlas.load.spec import DEFAULT_SPEC
    from atlas.site import plugin_models
    found = plugin_models.read(config)
    return [spec for spec, _, _ in found.specs] if found is not None and found.specs else [DEFAULT_SPEC]


def zoo_specs() -> list[str]:
    """Every model of the zoo: the public functions of atlas/zoo's modules that take no argument."""
    import importlib
    import inspect
    import pkgutil

    import atlas.zoo
    specs = []
    for info in pkgutil.iter_modules(atlas.zoo.__path__):
        module = importlib.import_module(f"atlas.zoo.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and not name.startswith("_") and not any(
                    p.default is inspect.Parameter.empty for p in inspect.signature(fn).parameters.values()):
                specs.append(f"atlas.zoo.{info.name}:{name}")
    return specs


@functools.lru_cache(maxsize=None)
def site_classes() -> tuple[type, ...]:
    """The classes the shipped models get reference pages for (each model built on the meta device)."""
    from atlas.load.spec import load
    used: dict[type, list] = {}
    for spec in dict.fromkeys(site_specs() + zoo_specs()):
        for module in load(spec).model.modules():
            base = torch_class(type(module))
            if base is not None:
                used.setdefault(base, [])
    data = {getattr(nn, p.stem) for p in class_pages.DATA.glob("*.yml") if p.stem != "families"}
    return tuple(class_pages.page_classes({**used, **{c: [] for c in data}}))


def messages():
    """(text, where) for every string of the reference catalog."""
    for name, fam in sorted(class_pages.families().items()):
        where = "templates/reference/families.yml"
        yield class_pages._text(fam["title"]), where
        for m in fam["members"]:
            yield class_pages._text(m["axes"]), where
            yield class_pages._text(m["use"]), where
    with_data = set()
    for path in sorted(class_pages.DATA.glob("*.yml")):
        if path.name == "families.yml":
            continue
        data = yaml.safe_load(path.read_text())
        with_data.add(path.stem)
        where = f"templates/reference/{path.name}"
        if data.get("summary"):
            yield class_pages._text(data["summary"]), where
        for e in data.get("examples", ()):
            yield class_pages._text(e["title"]), where
            if e.get("text"):
                yield class_pages._text(e["text"]), where
            for text in example_runs.texts(e["code"]):
                yield text, where
        for f in data.get("faq", ()):
            yield class_pages._text(f["q"]), where
            yield class_pages._text(f["a"]), where
        for u in data.get("uses", ()):
            yield class_pages._text(u), where
    for cls in site_classes():
        where = f"torch.nn.{cls.__name__} docstring"
        if not (cls.__name__ in with_data and class_pages.load_data(cls).get("summary")):
            summary = class_pages.described(cls)
            if summary:
                yield class_pages._text(summary), where
        for param in class_pages.signature(cls)[1]:
            if param.kind:
                yield param.kind, where
            if param.text:
                yield param.text, where
