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

from pathlib import Path

from atlas import katex, pipeline, render
from atlas.errors import AtlasError

log = logging.getLogger("mkdocs.plugins.atlas")


class _Model(Config):
    spec = c.Type(str)
    inputs = c.ListOfItems(c.Type(str), default=[])     # as --input: "input_ids:int64[B,T]"


class AtlasConfig(Config):
    models = c.ListOfItems(c.SubConfig(_Model), default=[])
    memory_budget = c.Type(float, default=2.0)     # GB, the largest instance verified on the CPU


class AtlasPlugin(BasePlugin[AtlasConfig]):
    def __init__(self) -> None:
        self.sources: list[str] = []
        self.katex: katex.Renderer | None = None

    def _root(self, config) -> Path:
        return Path(config.config_file_path).resolve().parent

    def on_config(self, config):
        specs = [(m.spec, tuple(m.inputs)) for m in self.config.models] or None
        settings = pipeline.Settings(budget_bytes=int(self.config.memory_budget * 1024**3),
                                     site_url=config.site_url or None, repo_url=config.repo_url or None,
                                     site_name=config.site_name)
        try:
            generated, report = pipeline.build(specs, config.docs_dir, settings)
            self.katex = katex.Renderer(self._root(config))
        except AtlasError as exc:
            raise PluginError(f"atlas: {exc}") from None
        self.sources = generated.sources
        log.info("atlas: %d pages written, %d deleted, %d unchanged",
                 len(report.written), len(report.deleted), len(report.unchanged))
        nav = list(config.nav or [{"Home": "index.md"}])
        for doc in generated.docs:
            nav.extend(render.nav(doc))
        nav.extend(render.reference_nav(generated.refs))
        config.nav = nav
        return config

    def on_page_content(self, html, page, config, files):
        try:
            return self.katex.page(html, page.file.src_uri)
        except AtlasError as exc:
            raise PluginError(f"atlas: {exc}") from None

    def on_post_build(self, config):
        katex.copy_assets(self._root(config), Path(config.site_dir))
        if self.katex is not None:
            self.katex.close()

    def on_serve(self, server, config, builder):
        for source in self.sources:
            server.watch(source)
        return server
