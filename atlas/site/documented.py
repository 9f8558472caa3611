"""The models a docs folder documents already: each folder Model Atlas owns (its `.atlas` marker) that holds the
model's JSON (atlas.json), read back as a ModelDoc (atlas.document.serialize).

The site-wide pages (the catalog, the reference pages and their index, the nav) list them beside the models of a
run; a run that does not name a model never writes, deletes or compares a file of its folder.

    read(docs, skip)        the documents, by slug; the folders named in `skip` (the run's own models) left out
    hashes(docs, skip)      the SHA-256 of each one's JSON, for the fingerprint (atlas.site.fingerprint)
    check_same_model(...)   a run's model is the one its folder documents, not another of the same name
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from atlas.document import ModelDoc, serialize
from atlas.errors import AtlasError
from atlas.render.page_paths import MODEL_JSON
from atlas.site.sync import MARKER


def folders(docs: Path, skip: set[str] = frozenset()) -> list[Path]:
    """The model folders of `docs` Model Atlas owns, by name, but those in `skip`."""
    if not docs.is_dir():
        return []
    return sorted(p for p in docs.iterdir() if p.is_dir() and p.name not in skip and (p / MARKER).is_file()
                  and (p / MODEL_JSON).is_file())


def read(docs: Path, skip: set[str] = frozenset()) -> list[ModelDoc]:
    """Every other model of the docs folder, by slug; a JSON that does not read back as this atlas writes it (one
    an older atlas wrote) fails, naming the model to rebuild."""
    out = []
    for folder in folders(docs, skip):
        path = folder / MODEL_JSON
        data = None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            doc = serialize.from_dict(data)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            spec = data.get("spec") if isinstance(data, dict) else None
            raise AtlasError(f"{path} does not read back as a model's document ({type(exc).__name__}: {exc}); the "
                             f"site-wide pages list that model: rebuild it (`atlas build {spec or 'SPEC'} --docs "
                             f"{docs}`) or remove its folder") from None
        if doc.slug != folder.name:
            raise AtlasError(f"{path} documents the model {doc.name!r}, whose folder is {doc.slug}/, not "
                             f"{folder.name}/")
        out.append(doc)
    return out


def hashes(docs: Path, skip: set[str] = frozenset()) -> dict[str, str]:
    """{slug: SHA-256 of its atlas.json} of every other model of the docs folder."""
    return {folder.name: hashlib.sha256((folder / MODEL_JSON).read_bytes()).hexdigest()
            for folder in folders(docs, skip)}


def check_same_model(docs: Path, slug: str, spec: str, name: str) -> None:
    """Refuse to document a model in a folder that documents another model of the same name (two specs whose
    models are both 'Tiny'): one run naming both is refused the same way (atlas.pipeline.generate)."""
    path = docs / slug / MODEL_JSON
    if not (docs / slug / MARKER).is_file() or not path.is_file():
        return
    try:
        held = json.loads(path.read_text(encoding="utf-8")).get("spec")
    except ValueError:
        return                  # a JSON that does not read back fails in read(), naming the model
    if isinstance(held, str) and held != spec:
        raise AtlasError(f"{docs / slug}/ documents {held}, and {spec} is named {name!r} too: their pages would "
                         f"collide; give one of them another name (an atlas_name attribute on the model), or remove "
                         f"{docs / slug}/ if {spec} is {held} moved")
