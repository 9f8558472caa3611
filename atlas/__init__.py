"""Model Atlas: documentation pages for neural-network architectures, generated from real PyTorch code.

The package is a pipeline of stages, each a subpackage that imports only the ones before it:

    i18n        messages (Text) and their translations, locale-aware numbers
    document    the data model: frozen dataclasses of plain values, and their JSON
    load        specs, settings, the model authors' hooks, forward() calls, module copies, buffer values, memory
    extract     the module tree walked, example inputs discovered, one forward recorded, shapes read off it
    analyse     equations verified against forward(), costs, architecture, data flow, provenance, checkpoints
    render      pages, JSON, math markup, translated sentences
    pipeline    one run of the stages above, in memory (a module)
    site        the docs folder written and checked, the fingerprint, search, KaTeX, the mkdocs plugin

The CLI (atlas.cli) sits on top. `describe`, `generate`, `build` and `check` are the library's entry points.
"""

__all__ = ["build", "check", "describe", "generate"]


def __getattr__(name: str):
    """The entry points, imported when first asked for: importing one stage does not import them all."""
    if name == "describe":
        from atlas.pipeline import describe
        return describe
    if name in ("build", "check", "generate"):
        from atlas.site import builder
        return getattr(builder, name)
    raise AttributeError(f"module 'atlas' has no attribute {name!r}")
