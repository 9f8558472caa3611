"""Where the atlas's own files are, and which code is the atlas's own machinery rather than a model's.

The templates and KaTeX lie inside the package in an installed wheel (setup.py copies them there at build time);
in a clone of the repository, the templates are at its top and KaTeX is where `npm ci` puts it.

The machinery is the stage packages and the top-level modules. Every other file is model code, the models
shipped in atlas/zoo included: frames of model code are what the recorder reads names from and what errors name.
"""

from __future__ import annotations

import importlib.util
import os
import sysconfig
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
REPOSITORY = PACKAGE.parent
TEMPLATES = PACKAGE / "templates" if (PACKAGE / "templates").is_dir() else REPOSITORY / "templates"
REFERENCE_DATA = TEMPLATES / "reference"
THEME = TEMPLATES / "theme"                 # the overrides of Material's templates that the plugin adds
ASSETS = TEMPLATES / "assets"               # the pages' CSS and script, which the plugin adds to the site
KATEX = (PACKAGE / "_vendor" / "katex" if (PACKAGE / "_vendor" / "katex").is_dir()
         else REPOSITORY / "node_modules" / "katex" / "dist")
STAGES = ("i18n", "document", "load", "extract", "analyse", "render", "site")

_HERE = os.path.dirname(__file__)            # as code objects name their files: not resolved
_MACHINERY = tuple(os.path.join(_HERE, stage) + os.sep for stage in STAGES)
_TORCH = tuple(location + os.sep for location in importlib.util.find_spec("torch").submodule_search_locations)
_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep


def is_machinery(filename: str) -> bool:
    """Whether a file is the atlas's own code: a module of a stage package, or a top-level module."""
    return filename.startswith(_MACHINERY) or os.path.dirname(filename) == _HERE


def is_model_code(filename: str) -> bool:
    """Whether a file is the model's code, or its libraries': not torch's, not the atlas's, not the standard
    library's (a library installed beside it in site-packages is the model's)."""
    if filename.startswith("<") or filename.startswith(_TORCH) or is_machinery(filename):
        return False
    return not filename.startswith(_STDLIB) or "-packages" + os.sep in filename
