"""One search index per language, so that a search of the Spanish site finds Spanish pages.

mkdocs-static-i18n builds each language in turn and merges every language's search entries into one
index at search/search_index.json (with `reconfigure_search` it also drops a translated page's entry
when its title and text equal the default language's, which leaves such pages without a titled
result). The atlas plugin asks i18n for the merged entries, without that de-duplication, and splits
them here: the default language's stay at search/search_index.json, and each other language's go to
<lang>/search/search_index.json with locations relative to <lang>/. Pages of that language tell
Material's search to load them there (`templates/theme/main.html`, `base`).
"""

from __future__ import annotations

import json
from pathlib import Path

INDEX = "search/search_index.json"


def split(site_dir: str | Path, default: str, languages: list[str]) -> dict[str, int]:
    """Rewrite the merged index as one index per language; returns the entries each language got."""
    site = Path(site_dir)
    merged = json.loads((site / INDEX).read_text(encoding="utf-8"))
    others = [lang for lang in languages if lang != default]
    entries: dict[str, list] = {lang: [] for lang in [default, *others]}
    for entry in merged["docs"]:
        lang = next((x for x in others if entry["location"].startswith(f"{x}/")), default)
        if lang != default:
            entry = {**entry, "location": entry["location"][len(lang) + 1:]}
        entries[lang].append(entry)
    for lang, docs in entries.items():
        config = {**merged["config"], "lang": [lang]}
        target = site / INDEX if lang == default else site / lang / INDEX
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"config": config, "docs": docs}, separators=(",", ":"), ensure_ascii=False),
                          encoding="utf-8")
    return {lang: len(docs) for lang, docs in entries.items()}


def language_root(i18n_plugin) -> str | None:
    """"es/" while mkdocs-static-i18n builds a language other than the default; None otherwise."""
    if i18n_plugin is None:
        return None
    current, default = getattr(i18n_plugin, "current_language", None), getattr(i18n_plugin, "default_language", None)
    return f"{current}/" if current and default and current != default else None
