"""The models of the `atlas` mkdocs plugin, read one way for the plugin and for the CLI's `build` and `check` with no
SPEC, so that both document the same models the same way:

    plugins:
      - atlas:
          memory_budget: 2                  # GB, as --memory-budget
          models:
            - spec: atlas.zoo.ldlm:ldlm
              inputs: ["input_ids:int64[B,T]"]              # as --input
              checkpoint: checkpoints/ldlm.safetensors      # as --checkpoint, from mkdocs.yml's folder

    specs(entries)          the `models:` entries as the builder takes them: (spec, inputs, checkpoint)
    read(mkdocs_yml)        an mkdocs.yml's atlas plugin: its models, memory budget and folder; None without one
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from atlas.errors import AtlasError
from atlas.load.memory import DEFAULT_BUDGET_GB

KEYS = ("spec", "inputs", "checkpoint")


@dataclass(frozen=True)
class PluginModels:
    specs: list[tuple[str, tuple[str, ...], str | None]]     # none: the plugin documents the default model
    memory_budget: float                                    # GB
    base_dir: str                                           # mkdocs.yml's folder: where checkpoint paths start


def specs(entries) -> list[tuple[str, tuple[str, ...], str | None]]:
    """The plugin's `models:` entries (mappings of spec, inputs, checkpoint) as atlas.pipeline.load_models takes
    them, and as the fingerprint records them."""
    out = []
    for n, entry in enumerate(entries or (), 1):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("spec"), str) or not entry["spec"]:
            raise AtlasError(f"the atlas plugin's model {n} has no spec (models: - spec: package.module:callable)")
        unknown = sorted(set(entry) - set(KEYS))
        if unknown:
            raise AtlasError(f"the atlas plugin's model {n} ({entry['spec']}) has keys it does not know: "
                             f"{', '.join(map(str, unknown))} (it takes {', '.join(KEYS)})")
        inputs = entry.get("inputs") or ()
        if isinstance(inputs, str) or not all(isinstance(i, str) for i in inputs):
            raise AtlasError(f"the atlas plugin's model {n} ({entry['spec']}): inputs is a list of NAME:DTYPE[DIMS]")
        checkpoint = entry.get("checkpoint")
        if checkpoint is not None and not isinstance(checkpoint, str):
            raise AtlasError(f"the atlas plugin's model {n} ({entry['spec']}): checkpoint is a path")
        out.append((entry["spec"], tuple(inputs), checkpoint or None))
    return out


def read(mkdocs_yml: str | Path = "mkdocs.yml") -> PluginModels | None:
    """The atlas plugin of an mkdocs.yml (read as YAML, its tags such as !ENV taken as empty): None when the file
    or the plugin is not there."""
    path = Path(mkdocs_yml)
    if not path.is_file():
        return None
    try:
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise AtlasError(f"{path} is not YAML: {' '.join(str(exc).split())}") from None
    plugins = config.get("plugins") if isinstance(config, Mapping) else None
    if isinstance(plugins, Mapping):        # mkdocs takes plugins as a mapping too
        plugins = [{name: value} for name, value in plugins.items()]
    for plugin in plugins or ():
        if plugin == "atlas" or isinstance(plugin, Mapping) and "atlas" in plugin:
            own = (plugin["atlas"] if isinstance(plugin, Mapping) else None) or {}
            if not isinstance(own, Mapping):
                raise AtlasError(f"{path}: the atlas plugin's config is a mapping (models: ...)")
            budget = own.get("memory_budget", DEFAULT_BUDGET_GB)
            if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
                raise AtlasError(f"{path}: the atlas plugin's memory_budget is a positive number of GB, not "
                                 f"{budget!r}")
            return PluginModels(specs(own.get("models")), float(budget), str(path.resolve().parent))
    return None


class _Loader(yaml.SafeLoader):
    """mkdocs.yml's tags (!ENV, !relative, python names) stand for values only mkdocs resolves: read as empty."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)
