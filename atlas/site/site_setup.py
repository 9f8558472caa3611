"""What the `atlas` plugin adds to a project's mkdocs config, so that a mkdocs.yml naming the plugin is enough:

- the Markdown extensions the pages are written for, with the options they need (a project that configures one
  of them keeps its own options, unless they contradict what the pages need: that is an error naming the option);
- Material's template overrides (atlas.resources.THEME) after the project's own custom_dir;
- the pages' stylesheet and script, and KaTeX's stylesheet (its fonts are copied at the end of the build).
"""

from __future__ import annotations

from mkdocs.config.config_options import ExtraScriptValue
from mkdocs.structure.files import File, Files

from atlas.errors import AtlasError
from atlas.resources import ASSETS, THEME

# In the order the pages' Markdown is processed with them; None: the extension's defaults.
EXTENSIONS = {
    "admonition": None,
    "attr_list": None,
    "md_in_html": None,
    "tables": None,
    "toc": {"permalink": True},
    "pymdownx.details": None,
    "pymdownx.superfences": None,
    "pymdownx.tabbed": {"alternate_style": True},
    "pymdownx.highlight": {"anchor_linenums": True},
    "pymdownx.inlinehilite": None,
    "pymdownx.arithmatex": {"generic": True},
}
# Options the pages cannot do without: the math is found by the generic wrapper, the tabs use Material's style.
REQUIRED = {"pymdownx.arithmatex": {"generic": True}, "pymdownx.tabbed": {"alternate_style": True}}
# KaTeX's stylesheet, then every stylesheet and script of the assets folder, in name order.
STYLESHEETS = ("assets/katex/katex.min.css",
               *(f"assets/{path.name}" for path in sorted(ASSETS.glob("*.css"))))
SCRIPTS = tuple(f"assets/{path.name}" for path in sorted(ASSETS.glob("*.js")))


def configure(config) -> None:
    """The extensions, the theme overrides and the stylesheets and script, each added once."""
    if config.theme.name != "material":
        raise AtlasError(f"the pages are written for the Material theme (mkdocs-material); mkdocs.yml names "
                         f"{config.theme.name!r}: set `theme: name: material`")
    _extensions(config)
    theme_dir = str(THEME)
    if theme_dir not in config.theme.dirs:
        config.theme.dirs.insert(1 if config.theme.custom_dir else 0, theme_dir)
    for sheet in STYLESHEETS:
        if sheet not in config.extra_css:
            config.extra_css.append(sheet)
    present = {str(script) for script in config.extra_javascript}
    for script in SCRIPTS:
        if script not in present:
            config.extra_javascript.append(ExtraScriptValue(script))


def _extensions(config) -> None:
    names = config.markdown_extensions
    for name, options in EXTENSIONS.items():
        given = config.mdx_configs.get(name)
        for key, value in REQUIRED.get(name, {}).items():
            if given is not None and key in given and given[key] != value:
                raise AtlasError(f"mkdocs.yml: the pages need `{name}` with `{key}: {str(value).lower()}`, "
                                 f"not {str(given[key]).lower()}")
        if name not in names:
            names.append(name)
        if options and given is None:
            config.mdx_configs[name] = dict(options)
        elif name in REQUIRED:
            config.mdx_configs[name] = {**given, **REQUIRED[name]}


def add_assets(files: Files, config) -> Files:
    """The pages' stylesheet and script, unless the project's docs folder has its own at the same path."""
    for path in sorted(ASSETS.iterdir()):
        uri = f"assets/{path.name}"
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files
