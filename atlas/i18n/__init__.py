"""Languages of the site: gettext catalogs (Babel .po files), locale-aware numbers, and Text.

Pages are written once per language from the same data model. Everything the generator
writes in words goes through a catalog: template strings (jinja2's i18n extension), the
generator's own sentences (`msg`, kept as `Text` in the model until a page is rendered),
and the reference pages' data. Names, docstrings and code from the model are shown as they
are in every language, as are math and code.

The catalogs are atlas/i18n/locale/<lang>/LC_MESSAGES/<domain>.po; `python -m atlas.site.message_catalogs update`
extracts the messages again (atlas/i18n/locale/<domain>.pot) and merges them into every .po.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext as _gettext
import io
import re
from pathlib import Path

DEFAULT = "en"
LANGUAGES = {"en": "English", "es": "Español"}     # code -> the language's own name, for the switch
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAINS = ("atlas", "reference")

# CLDR's <minimumGroupingDigits>, which Babel does not import: Spanish writes 4096 but 50.257
# (common/main/es.xml). Locales not listed group from four digits, CLDR's default of 1.
MIN_GROUPING_DIGITS = {"es": 2}

_active: contextvars.ContextVar[str] = contextvars.ContextVar("atlas_language", default=DEFAULT)


@contextlib.contextmanager
def language(code: str):
    """Render in `code` inside the block."""
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}; known: {', '.join(LANGUAGES)}")
    token = _active.set(code)
    try:
        yield
    finally:
        _active.reset(token)


def active() -> str:
    return _active.get()


@functools.lru_cache(maxsize=None)
def catalog(code: str, domain: str):
    """The Babel catalog of one language and domain, read from its .po file."""
    from babel.messages.pofile import read_po
    path = LOCALE_DIR / code / "LC_MESSAGES" / f"{domain}.po"
    with path.open("rb") as f:
        return read_po(f, locale=code, domain=domain)


@functools.lru_cache(maxsize=None)
def translations(code: str) -> _gettext.NullTranslations:
    """All domains of one language as one gettext object; English is the source and needs none."""
    if code == DEFAULT:
        return _gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    merged: _gettext.NullTranslations | None = None
    for domain in DOMAINS:
        buffer = io.BytesIO()
        write_mo(buffer, catalog(code, domain))     # fuzzy entries are left out, as msgfmt does
        buffer.seek(0)
        t = _gettext.GNUTranslations(buffer)
        if merged is None:
            merged = t
        else:
            merged.add_fallback(t)
    return merged


def gettext(message: str) -> str:
    return translations(active()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translations(active()).ngettext(singular, plural, n)


# English, the source language, is written without Babel: `atlas describe` builds every sentence
# in English and stays as lean as the model walk (Babel's import alone is 6 MB of RSS). These
# two functions give what CLDR gives for "en"; tests/test_i18n.py compares them with Babel.

def english_number(n: int) -> str:
    return f"{int(n):,}"


def english_list(items: list[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + ", and " + items[-1]


def number(n: int) -> str:
    """An integer with the active locale's grouping: 4,096 and 50,257 (en), 4096 and 50.257 (es)."""
    code = active()
    if code == DEFAULT:
        return english_number(n)
    from babel.numbers import format_decimal
    digits = len(str(abs(int(n))))
    grouped = digits >= 4 + MIN_GROUPING_DIGITS.get(code, 1) - 1
    return format_decimal(int(n), locale=code, group_separator=grouped)


def decimal(x: float, digits: int = 3) -> str:
    """A number with `digits` significant digits in the active locale: 2.21 (en), 2,21 (es)."""
    from babel.numbers import format_decimal
    places = max(0, digits - 1 - (len(str(int(abs(x)))) - 1 if abs(x) >= 1 else 0))
    pattern = "0." + "0" * places if places else "0"
    return format_decimal(x, pattern, locale=active() if active() != DEFAULT else "en_US")


def percent(share: float) -> str:
    """A share with one decimal: 12.3% (en), 12,3 % (es)."""
    from babel.numbers import format_percent
    return format_percent(share, "#,##0.0%", locale=active())


def conjunction(items) -> str:
    """["a", "b", "c"] -> "a, b, and c" (en), "a, b y c" (es)."""
    items = [render(i) for i in items]
    if active() == DEFAULT or not items:
        return english_list(items)
    from babel.lists import format_list
    return format_list(items, locale=active())


class Text(str):
    """A sentence the generator writes, kept translatable until a page is rendered.

    It is a str (its English text), so the data model, JSON and tests read it as text;
    `render` gives it in the active language. Arguments: ints are formatted with the
    locale's grouping, lists and tuples become a conjunction, Text nests.
    """

    msgid: str
    plural: str | None
    n: int | None
    args: tuple
    initial_lower: bool             # begin with a lower-case letter, for use inside a sentence

    def __new__(cls, msgid: str, /, *, _plural: str | None = None, _n: int | None = None, _lower: bool = False,
                **args):
        items = tuple(sorted(args.items()))
        self = super().__new__(cls, _translate(msgid, _plural, _n, items, _lower, None))
        self.msgid, self.plural, self.n, self.args, self.initial_lower = msgid, _plural, _n, items, _lower
        return self

    def __reduce__(self):
        return (_rebuild, (self.msgid, self.plural, self.n, self.args, self.initial_lower))

    def lowered(self) -> Text:
        return _rebuild(self.msgid, self.plural, self.n, self.args, True)

    def with_words(self, fn) -> Text:
        """The same sentence with `fn` applied to its plain-text arguments, nested sentences' too (a size's
        symbol renamed where the sentence states a bound on it)."""
        def mapped(value):
            if isinstance(value, Text):
                return value.with_words(fn)
            return fn(value) if isinstance(value, str) else value
        return _rebuild(self.msgid, self.plural, self.n, tuple((k, mapped(v)) for k, v in self.args),
                        self.initial_lower)

    def translated(self) -> str:
        return _translate(self.msgid, self.plural, self.n, self.args, self.initial_lower, translations(active()))


def _translate(msgid, plural, n, args, lower, t) -> str:
    """The text in the language of `t`; None means the source language, English."""
    if t is None:
        with language(DEFAULT):
            text = _format(msgid if plural is None or n == 1 else plural, args)
    else:
        text = _format(t.gettext(msgid) if plural is None else t.ngettext(msgid, plural, n), args)
    return text[:1].lower() + text[1:] if lower else text


def _rebuild(msgid, plural, n, args, lower=False):
    return Text(msgid, _plural=plural, _n=n, _lower=lower, **dict(args))


def msg(msgid: str, /, **args) -> Text:
    """A translatable sentence with %(name)s arguments. Extracted by `python -m atlas.site.message_catalogs update`."""
    return Text(msgid, **args)


def msgn(singular: str, plural: str, n: int, **args) -> Text:
    """A translatable sentence whose form depends on n; n is also an argument."""
    return Text(singular, _plural=plural, _n=n, n=n, **args)


def lowered(value):
    """Text or str, beginning with a lower-case letter: "Learned gain" -> "learned gain" inside a sentence."""
    if isinstance(value, Text):
        return value.lowered()
    return value[:1].lower() + value[1:]


def _arg(value) -> str:
    if isinstance(value, Text):
        return value.translated()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return number(value)
    if isinstance(value, (list, tuple)):
        return conjunction(value)
    if isinstance(value, str) and active() != DEFAULT and _DECIMALS.fullmatch(value):
        return _decimal_marked(value)
    return str(value)


# an argument that is a decimal number, or a list of them, as the analysis writes them ("0.1", "0.1, 0.2"): in
# another language it gets that language's decimal mark ("0,1"); e-notation and any other text stay as they are
_DECIMALS = re.compile(r"-?\d+\.\d+(?:, -?\d+\.\d+)*")


def _decimal_marked(value: str) -> str:
    from babel.numbers import get_decimal_symbol
    mark = get_decimal_symbol(active())
    numbers = [n.replace(".", mark) for n in value.split(", ")]
    return conjunction(numbers) if len(numbers) > 1 else numbers[0]


def _format(template: str, args: tuple) -> str:
    return template % {k: _arg(v) for k, v in args} if args else template


def render(value) -> str:
    """Text in the active language; anything else (names, docstrings, code) as it is."""
    if isinstance(value, Text):
        return value.translated()
    return "" if value is None else str(value)
