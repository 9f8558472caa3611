"""The message catalogs: extract every translatable string, update the .po files, find what is missing.

    python -m atlas.site.message_catalogs update     # re-extract atlas/i18n/locale/<domain>.pot, merge into each .po
    python -m atlas.site.message_catalogs check      # exit 1 and list every message without a translation

Domains:
- atlas: the templates (jinja2's i18n extension), the generator's sentences (`msg`, `msgn`) and the zoo models'
  names and sentences that are the site's own words (`own_words`);
- reference: the reference pages' data files and the docstring parameter texts of their classes.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

from atlas import i18n
from atlas.resources import PACKAGE, TEMPLATES

KEYWORDS = {"msg": None, "msgn": (1, 2), "_": None, "gettext": None, "ngettext": (1, 2), "own_words": None}
JINJA_OPTIONS = {"extensions": "jinja2.ext.i18n", "trimmed": "true", "trim_blocks": "true", "lstrip_blocks": "true"}
# Catalog dates are fixed so that `update` without a change in the messages changes no byte.
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _new(domain: str, locale: str | None = None) -> Catalog:
    return Catalog(locale=locale, domain=domain, project="Model Atlas", msgid_bugs_address="",
                   creation_date=EPOCH, revision_date=EPOCH, fuzzy=False, charset="utf-8")


def extract(domain: str, templates: Path | None = None) -> Catalog:
    """A fresh template catalog of one domain, from the sources as they are now."""
    catalog = _new(domain)
    if domain == "atlas":
        sources = [(templates or TEMPLATES, [("**.j2", "jinja2.ext:babel_extract")], "templates"),
                   (PACKAGE, [("**.py", "python")], "atlas")]
        for directory, method_map, prefix in sources:
            for file, line, message, comments, context in extract_from_dir(
                    str(directory), method_map, {"**.j2": JINJA_OPTIONS}, KEYWORDS, strip_comment_tags=True):
                msgid = message[:2] if isinstance(message, tuple) else message
                if isinstance(msgid, tuple) and not msgid[1]:
                    msgid = msgid[0]
                catalog.add(msgid, locations=[(f"{prefix}/{file}", line)], auto_comments=comments,
                            context=context, flags=("python-format",) if "%(" in str(message) else ())
    elif domain == "reference":
        from atlas.site.reference_messages import messages
        for text, where in messages():
            catalog.add(text, locations=[(where, 0)])
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return catalog


def _write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog, width=100, sort_output=True, ignore_obsolete=True, include_lineno=False)


def update() -> None:
    for domain in i18n.DOMAINS:
        template = extract(domain)
        _write(i18n.LOCALE_DIR / f"{domain}.pot", template)
        for code in i18n.LANGUAGES:
            if code == i18n.DEFAULT:
                continue
            path = i18n.LOCALE_DIR / code / "LC_MESSAGES" / f"{domain}.po"
            if path.is_file():
                with path.open("rb") as f:
                    catalog = read_po(f, locale=code, domain=domain)
            else:
                catalog = _new(domain, code)
            catalog.update(template, update_header_comment=False)
            catalog.creation_date = catalog.revision_date = EPOCH
            _write(path, catalog)


def missing(code: str, templates: Path | None = None) -> list[str]:
    """Each message of the sources that `code` does not translate, or translates with other placeholders."""
    problems = []
    for domain in i18n.DOMAINS:
        translated = i18n.catalog(code, domain)
        for message in extract(domain, templates):
            if not message.id:
                continue
            found = translated.get(message.id, context=message.context)
            key = message.id[0] if isinstance(message.id, tuple) else message.id
            if found is None or found.fuzzy or not all(found.string if isinstance(found.string, tuple)
                                                       else [found.string]):
                problems.append(f"{domain}: no {code} translation of {key!r}")
                continue
            problems.extend(f"{domain}: {key!r}: {e}" for e in found.check(translated))
    return problems


def main(argv: list[str]) -> int:
    if argv == ["update"]:
        update()
        return 0
    if argv == ["check"]:
        problems = [p for code in i18n.LANGUAGES if code != i18n.DEFAULT for p in missing(code)]
        for p in problems:
            print(p)
        return 1 if problems else 0
    print("usage: python -m atlas.site.message_catalogs update|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
