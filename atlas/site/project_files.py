"""`atlas init [SPEC]`: the files a model repository needs for its pages, written into the working folder.

    mkdocs.yml                      the atlas plugin naming the model, Material, one site per language
    docs/index.md                   the home page
    .github/workflows/atlas.yml     CI: install the repository's code and Model Atlas (from the git repository
                                    it was installed from, else the package index), `atlas check`,
                                    `mkdocs build --strict`
    .pre-commit-config.yaml         a local hook running `atlas check`

No file is ever overwritten: when one exists, nothing is written and the error names it. The SPEC is loaded
first (on the meta device), so a wrong one fails before any file is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import jinja2

from atlas import i18n
from atlas.errors import AtlasError
from atlas.load import library_specs
from atlas.load.spec import DEFAULT_SPEC, load
from atlas.resources import TEMPLATES

FILES = {                           # written file -> its template in templates/init/
    "mkdocs.yml": "mkdocs.yml.j2",
    "docs/index.md": "index.md.j2",
    ".github/workflows/atlas.yml": "atlas.yml.j2",
    ".pre-commit-config.yaml": "pre-commit-config.yaml.j2",
}


def init(spec: str | None, folder: Path = Path(".")) -> list[str]:
    """Write the files into `folder`; the paths written, in order."""
    existing = [name for name in FILES if (folder / name).exists()]
    if existing:
        raise AtlasError(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
                         "`atlas init` never overwrites a file (move it aside or edit it by hand)")
    spec = DEFAULT_SPEC if spec is None else spec
    load(spec)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES / "init")), keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    context = {
        "site_name": folder.resolve().name,
        "repo_url": _repo_url(folder),
        "spec": spec,
        "languages": list(i18n.LANGUAGES.items()),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "install": _install_line(folder, spec),
    }
    for name, template in FILES.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(env.get_template(template).render(context), encoding="utf-8")
    return list(FILES)


def _install_line(folder: Path, spec: str) -> str:
    """What CI installs: the repository's own code (its package, or its requirements) and Model Atlas, with the
    extra its SPEC needs, at the version that wrote the files."""
    parts = []
    if (folder / "pyproject.toml").is_file() or (folder / "setup.py").is_file():
        parts.append("-e .")
    elif (folder / "requirements.txt").is_file():
        parts.append("-r requirements.txt")
    parts.append(_atlas_requirement(library_specs.extra(spec)))
    return " ".join(parts)


def _origin() -> dict:
    """Where pip installed Model Atlas from (its direct_url.json): {} for the package index."""
    return json.loads(metadata.distribution("model-atlas").read_text("direct_url.json") or "null") or {}


def local_origin() -> str | None:
    """The file or folder this installation came from, which a CI machine cannot install from; None when it came
    from a git repository or the package index."""
    origin = _origin()
    return None if origin.get("vcs_info") or not origin.get("url") else origin["url"]


def _atlas_requirement(extra: str | None) -> str:
    """Model Atlas as this installation came: from a git repository (pip's direct_url.json names it), that
    repository at the installed commit; else from the package index, at the installed version."""
    name = f"model-atlas{f'[{extra}]' if extra else ''}"
    dist = metadata.distribution("model-atlas")
    origin = _origin()
    vcs = origin.get("vcs_info") or {}
    if vcs.get("vcs") == "git" and vcs.get("commit_id") and origin.get("url"):
        return f"'{name} @ git+{origin['url']}@{vcs['commit_id']}'"
    return f"'{name}=={dist.version}'"


def _repo_url(folder: Path) -> str | None:
    """The repository's web address, from its `origin` remote, when that is an https or GitHub address."""
    try:
        url = subprocess.run(["git", "config", "--get", "remote.origin.url"], cwd=folder, capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if url.startswith("git@github.com:"):
        url = "https://github.com/" + url.removeprefix("git@github.com:")
    if not url.startswith("https://"):
        return None
    return url.removesuffix(".git")

