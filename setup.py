"""What a wheel carries beyond the `atlas` package's own files (pyproject.toml holds the rest of the metadata):

- the page templates, kept at the top of the repository in `templates/`, copied into the package as
  `atlas/templates/`;
- KaTeX's distribution (its JS, its CSS, its woff2 fonts and its license) as `atlas/_vendor/katex/`, from the
  npm package that package-lock.json pins: taken from `node_modules/` when `npm ci` put that very version there,
  else fetched from the npm registry and checked against the lock file's sha512. Neither is committed to git.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import tarfile
import urllib.request
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
KATEX_FILES = ("katex.min.js", "katex.min.css")


def _katex_lock() -> dict:
    return json.loads((ROOT / "package-lock.json").read_text())["packages"]["node_modules/katex"]


def _from_node_modules(version: str) -> dict[str, bytes] | None:
    package = ROOT / "node_modules" / "katex"
    if not (package / "package.json").is_file():
        return None
    if json.loads((package / "package.json").read_text())["version"] != version:
        return None
    files = {name: (package / "dist" / name).read_bytes() for name in KATEX_FILES}
    files["LICENSE"] = (package / "LICENSE").read_bytes()
    for font in sorted((package / "dist" / "fonts").glob("*.woff2")):
        files[f"fonts/{font.name}"] = font.read_bytes()
    return files


def _from_registry(version: str, integrity: str) -> dict[str, bytes]:
    registry = os.environ.get("NPM_CONFIG_REGISTRY", "https://registry.npmjs.org").rstrip("/")
    url = f"{registry}/katex/-/katex-{version}.tgz"
    with urllib.request.urlopen(url, timeout=120) as reply:
        data = reply.read()
    algorithm, _, expected = integrity.partition("-")
    if base64.b64encode(hashlib.new(algorithm, data).digest()).decode() != expected:
        raise RuntimeError(f"{url} does not have the {algorithm} that package-lock.json records")
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            wanted = (name == "LICENSE" or name in {f"dist/{f}" for f in KATEX_FILES}
                      or (name.startswith("dist/fonts/") and name.endswith(".woff2")))
            if member.isfile() and wanted:
                files[name.removeprefix("dist/")] = tar.extractfile(member).read()
    missing = [f for f in (*KATEX_FILES, "LICENSE") if f not in files]
    if missing:
        raise RuntimeError(f"{url} has no {', '.join(missing)}")
    return files


class BuildWithResources(build_py):
    def run(self) -> None:
        super().run()
        package = Path(self.build_lib) / "atlas"
        templates = package / "templates"
        if templates.exists():
            shutil.rmtree(templates)
        shutil.copytree(ROOT / "templates", templates, ignore=shutil.ignore_patterns("__pycache__"))
        lock = _katex_lock()
        files = _from_node_modules(lock["version"]) or _from_registry(lock["version"], lock["integrity"])
        vendor = package / "_vendor" / "katex"
        if vendor.exists():
            shutil.rmtree(vendor)
        for name, data in sorted(files.items()):
            (vendor / name).parent.mkdir(parents=True, exist_ok=True)
            (vendor / name).write_bytes(data)
        (vendor / "VERSION").write_text(lock["version"] + "\n")


setup(cmdclass={"build_py": BuildWithResources})
