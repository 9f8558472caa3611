"""Hand-written pages a language has no version of (the guide, `docs/guide/*.md`, is written in English).

The i18n plugin serves such a page in the other language's site as it is. The page says so, in the site's
language, before its text, and its text and table of contents are marked as English (`lang="en"`): a screen
reader reads them in English, and a reader is told why the language changed.
"""

from __future__ import annotations

from atlas import i18n

NOTE_CLASS = "atlas-untranslated"
_TOC = '<nav class="md-nav md-nav--secondary"'


def is_untranslated(src_uri: str, language: str) -> bool:
    """Whether a page built in `language` is another language's page: the language has no `<page>.<code>.md`."""
    return language != i18n.DEFAULT and src_uri.endswith(".md") and not src_uri.endswith(f".{language}.md")


def marked_content(html: str, language: str) -> str:
    """A page's content, marked as English, after a note in `language` that says so."""
    with i18n.language(language):
        note = i18n.gettext("This page is written in English only.")
    return (f'<p class="{NOTE_CLASS}"><em>{note}</em></p>\n'
            f'<div lang="{i18n.DEFAULT}">\n{html}\n</div>')


def marked_page(output: str) -> str:
    """A built page whose table of contents (the theme's secondary nav, the page's headings, in the sidebar and in
    the primary nav that holds it on narrow screens) is marked English."""
    return output.replace(_TOC, f'{_TOC} lang="{i18n.DEFAULT}"')
