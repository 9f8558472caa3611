"""The `atlas` mkdocs plugin: glue around atlas.pipeline.build(), nothing more.

    plugins:
      - atlas:
          models:
            - spec: atlas.zoo.ldlm:ldlm
"""

from __future__ import annotations

import logging

from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin

from atlas import pipeline, render
from atlas.errors import AtlasError

log = logging.getLogger("mkdocs.plugins.atlas")


class _Model(Config):
    spec = c.Type(str)


class AtlasConfig(Config):
    models = c.ListOfItems(c.SubConfig(_Model), default=[])


class AtlasPlugin(BasePlugin[AtlasConfig]):
    def __init__(self) -> None:
        self.sources: list[str] = []

    def on_config(self, config):
        specs = [m.spec for m in self.config.models] or None
        try:
            generated, report = pipeline.build(specs, config.docs_dir)
        except AtlasError as exc:
            raise PluginError(f"atlas: {exc}") from None
        self.sources = generated.sources
        log.info("atlas: %d pages written, %d deleted, %d unchanged",
                 len(report.written), len(report.deleted), len(report.unchanged))
        nav = list(config.nav or [{"Home": "index.md"}])
        for doc in generated.docs:
            nav.extend(render.nav(doc))
        config.nav = nav
        return config

    def on_serve(self, server, config, builder):
        for source in self.sources:
            server.watch(source)
        return server
