"""The `atlas` mkdocs plugin: glue around atlas.site.builder, nothing more.

    plugins:
      - search
      - atlas:
          models:
            - spec: atlas.zoo.ldlm:ldlm
              checkpoint: checkpoints/ldlm.safetensors    # optional: reconciled with the code
      - i18n:               # mkdocs-static-i18n: one build per language, pages as <page>.<lang>.md
          docs_structure: suffix
          languages: [...]

The pages of every language are generated once, in the default language's build; the i18n
plugin's builds of the other languages reuse them and only ask for the nav in their language.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, CombinedEvent, event_priority

from atlas import i18n
from atlas.errors import AtlasError
from atlas.load import memory
from atlas.load.settings import Settings, mkdocs_settings
from atlas.site import builder, home_models, katex, plugin_models, search_index, search_text, site_setup, untranslated

log = logging.getLogger("mkdocs.plugins.atlas")


class _Model(Config):
    spec = c.Type(str)
    inputs = c.ListOfItems(c.Type(str), default=[])     # as --input: "input_ids:int64[B,T]"
    checkpoint = c.Optional(c.Type(str))                # as --checkpoint; a relative path starts at mkdocs.yml


class AtlasConfig(Config):
    models = c.ListOfItems(c.SubConfig(_Model), default=[])
    memory_budget = c.Type(float, default=memory.DEFAULT_BUDGET_GB)  # GB: the largest instance checked on the CPU
    cache = c.Type(bool, default=True)             # skip generation when the stored fingerprint matches


def no_address_notice() -> None:
    """One line on stderr when mkdocs.yml has no site_url: the pages' citations then give each page's path and the
    code's revision. Written past mkdocs' logger: as its WARNING, `mkdocs build --strict` would fail every site
    without an address."""
    sys.stderr.write("atlas: mkdocs.yml has no site_url: citations give each page's path on the site and the "
                     "model code's revision instead of its address\n")


def building_language(config) -> str:
    """The language the i18n plugin is building now; the default language without that plugin."""
    plugin = config.plugins.get("i18n")
    code = getattr(plugin, "current_language", None) or i18n.DEFAULT
    return code if code in i18n.LANGUAGES else i18n.DEFAULT


class AtlasPlugin(BasePlugin[AtlasConfig]):
    def __init__(self) -> None:
        self.sources: list[str] = []
        self.katex: katex.Renderer | None = None
        self.navs: dict | None = None               # language -> the generated pages' nav
        self.page_html: dict[str, str] = {}         # a page's HTML while the search reads it without code markup
        self.user_nav = None
        self.serving = False

    def _root(self, config) -> Path:
        return Path(config.config_file_path).resolve().parent

    def on_startup(self, *, command, dirty):
        """Declared so that `mkdocs serve` keeps this plugin, and its KaTeX process, across rebuilds."""
        self.serving = command == "serve"

    def on_config(self, config):
        try:
            site_setup.configure(config)
        except AtlasError as exc:
            raise PluginError(f"atlas: {exc}") from None
        i18n_plugin = config.plugins.get("i18n")
        if i18n_plugin is not None:
            # i18n's de-duplication drops a translated page's search entry when it reads as the default language's
            # (a title that is a model's name); each language gets its own index instead (search_index.split)
            i18n_plugin.config.reconfigure_search = False
        if not getattr(i18n_plugin, "building", False):    # not one of i18n's language builds
            memory.keep_freed_memory()
            self._generate(config)
        language = building_language(config)
        with i18n.language(language):
            nav = list(self.user_nav or [{i18n.gettext("Home"): "index.md"}])
        config.nav = nav + self.navs[language]
        return config

    def _generate(self, config) -> None:
        site_url = config.site_url or None
        if self.serving:    # serve puts its own address in site_url; permalinks keep the configured one
            site_url = mkdocs_settings(config.config_file_path).get("site_url")
        if not site_url:
            no_address_notice()
        settings = Settings(budget_bytes=int(self.config.memory_budget * 1024**3),
                                     site_url=site_url, repo_url=config.repo_url or None,
                                     site_name=config.site_name, base_dir=str(self._root(config)))
        self.user_nav = config.nav
        try:
            specs = plugin_models.specs(self.config.models) or None         # as the CLI reads them from mkdocs.yml
            stored = builder.unchanged(specs, config.docs_dir, settings) if self.config.cache else None
            if stored is not None:
                self.navs, self.sources = stored["nav"], stored["sources"]
                log.info("atlas: 0 pages written, 0 deleted, %d unchanged (the stored fingerprint matches)",
                         len(stored["files"]))
            else:
                generated, report = builder.build(specs, config.docs_dir, settings)
                self.navs, self.sources = builder.navigation(generated), generated.sources
                log.info("atlas: %d pages written, %d deleted, %d unchanged",
                         len(report.written), len(report.deleted), len(report.unchanged))
            self.katex = self.katex or katex.Renderer()
        except AtlasError as exc:
            raise PluginError(f"atlas: {exc}") from None

    def on_files(self, files, config):
        return site_setup.add_assets(files, config)

    def on_page_markdown(self, markdown, page, config, files):
        """A hand-written page's `<!-- atlas:models -->` becomes the list of the documented models (home_models)."""
        with i18n.language(building_language(config)):
            return home_models.fill(markdown, page.file.src_uri, Path(config.docs_dir))

    def on_page_content(self, html, page, config, files):
        language = building_language(config)
        if untranslated.is_untranslated(page.file.src_uri, language):
            html = untranslated.marked_content(html, language)
        return katex.exclude_from_search(html)

    def on_post_page(self, output, page, config):
        """The page's math rendered by KaTeX, once the search has read the page (katex.exclude_from_search)."""
        if untranslated.is_untranslated(page.file.src_uri, building_language(config)):
            output = untranslated.marked_page(output)
        try:
            return self.katex.page(output, page.file.src_uri)
        except AtlasError as exc:
            raise PluginError(f"atlas: {exc}") from None

    @event_priority(100)        # before Material's search (0) reads the page
    def _page_for_search(self, context, page, config, nav):
        """Pages of a language other than the default load that language's search index (see search_index); the
        search reads the page's code without its markup (search_text)."""
        context["atlas_language_root"] = search_index.language_root(config.plugins.get("i18n"))
        self.page_html[page.file.src_uri] = page.content
        page.content = search_text.for_search(page.content)
        return context

    @event_priority(-100)       # after it: the page is written whole
    def _page_whole(self, context, page, config, nav):
        page.content = self.page_html.pop(page.file.src_uri)
        return context

    on_page_context = CombinedEvent(_page_for_search, _page_whole)

    def _copy_katex(self, config):
        katex.copy_assets(Path(config.site_dir))

    @event_priority(-200)       # after mkdocs-static-i18n (-100) has built every language and merged their entries
    def _split_search(self, config):
        plugin = config.plugins.get("i18n")
        searched = {"search", "material/search"} & set(config.plugins)
        if plugin is None or getattr(plugin, "building", False) or not searched:
            return
        counts = search_index.split(config.site_dir, plugin.default_language, plugin.build_languages)
        log.info("atlas: one search index per language (%s)",
                 ", ".join(f"{lang}: {n} entries" for lang, n in counts.items()))

    on_post_build = CombinedEvent(_copy_katex, _split_search)

    def on_shutdown(self):
        if self.katex is not None:
            self.katex.close()
            self.katex = None

    def on_serve(self, server, config, builder):
        for source in self.sources:
            server.watch(source)
        return server
