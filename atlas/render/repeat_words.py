"""Repeated components counted in words, in the page's language: "6 encoder blocks", "one of 6 blocks".

A component's name comes from code, in English, and every language shows it as written. What the atlas
adds is the count and, where the name ends in a noun the catalogs know (block, layer, head, ...), that
noun in the page's language, so that it agrees with the count and with what surrounds it:

- English: "6 encoder blocks", "one of 6 blocks", "× 6 blocks";
- Spanish: "6 bloques", "uno de 6 bloques", "× 6 bloques"; "una de 32 capas".

A name that ends in any other word, or a class name, is counted with a sign, the same in every language
("6 × MLP", "32 × LlamaDecoderLayer"), and its instances are "instances" ("una de 6 instancias"). So is, in
another language than English, a name with words before its noun, which are English (an author's "Encoder block":
"6 × Encoder block"), or their translation ("6 × Bloque codificador"): its instances are still counted by the
English noun ("uno de 6 bloques").
The noun of a class name is its last capitalized word: LlamaDecoderLayer counts layers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from atlas import i18n
from atlas.extract import names
from atlas.i18n import Text, msg, msgn


@dataclass(frozen=True)
class Noun:
    """The messages of one countable noun; each language's catalog inflects and orders them."""

    count: Callable[[int], Text]                 # "6 blocks"
    one_of: Callable[[int], Text]                # "one of 6 blocks"
    named: Callable[[int, str], Text] | None = None     # "6 encoder blocks": the words before the noun, as written


NOUNS = {
    "block": Noun(lambda n: msgn("%(n)s block", "%(n)s blocks", n),
                  lambda n: msg("one of %(n)s blocks", n=n),
                  named=lambda n, name: msgn("%(n)s %(name)s block", "%(n)s %(name)s blocks", n, name=name)),
    "layer": Noun(lambda n: msgn("%(n)s layer", "%(n)s layers", n),
                  lambda n: msg("one of %(n)s layers", n=n),
                  named=lambda n, name: msgn("%(n)s %(name)s layer", "%(n)s %(name)s layers", n, name=name)),
    "head": Noun(lambda n: msgn("%(n)s head", "%(n)s heads", n),
                 lambda n: msg("one of %(n)s heads", n=n),
                 named=lambda n, name: msgn("%(n)s %(name)s head", "%(n)s %(name)s heads", n, name=name)),
    "expert": Noun(lambda n: msgn("%(n)s expert", "%(n)s experts", n),
                   lambda n: msg("one of %(n)s experts", n=n),
                   named=lambda n, name: msgn("%(n)s %(name)s expert", "%(n)s %(name)s experts", n, name=name)),
    "stage": Noun(lambda n: msgn("%(n)s stage", "%(n)s stages", n),
                  lambda n: msg("one of %(n)s stages", n=n),
                  named=lambda n, name: msgn("%(n)s %(name)s stage", "%(n)s %(name)s stages", n, name=name)),
    "cell": Noun(lambda n: msgn("%(n)s cell", "%(n)s cells", n),
                 lambda n: msg("one of %(n)s cells", n=n),
                 named=lambda n, name: msgn("%(n)s %(name)s cell", "%(n)s %(name)s cells", n, name=name)),
}

INSTANCES = Noun(lambda n: msgn("%(n)s instance", "%(n)s instances", n),
                 lambda n: msg("one of %(n)s instances", n=n))


def head_noun(comp) -> str | None:
    """The noun a component's name ends in, when the catalogs count it: "Encoder block" -> "block"."""
    if comp.name_is_prose:
        words = getattr(comp.name, "source", comp.name).split()     # a translated name's English (own_words)
        word = words[-1].lower() if words else ""
    else:
        parts = re.findall(r"[A-Z][a-z]+", comp.name)
        word = parts[-1].lower() if parts and comp.name.endswith(parts[-1]) else ""
    return word if word in NOUNS else None


def _noun(comp) -> Noun:
    word = None if comp is None else head_noun(comp)
    return NOUNS[word] if word else INSTANCES


def label(comp) -> str:
    """The nav and breadcrumb label: the name, or "6 encoder blocks" / "6 bloques encoder", or "6 × MLP"."""
    if comp.repeat <= 1:
        return comp.name
    word = head_noun(comp)
    if word is None or not comp.name_is_prose:
        return f"{comp.repeat} × {i18n.render(comp.name)}"
    before = names.lower_first(comp.name)[: -len(word)].strip()
    if before and i18n.active() != i18n.DEFAULT:    # the words before the noun are English: not inside a sentence
        return f"{comp.repeat} × {i18n.render(comp.name)}"
    noun = NOUNS[word]
    return i18n.render(noun.named(comp.repeat, before) if before else noun.count(comp.repeat))


def one_of(comp) -> str:
    """The tag of a repeated component's page: "one of 6 blocks", "uno de 6 bloques", "una de 6 instancias"."""
    return i18n.render(_noun(comp).one_of(comp.repeat))


def count(repeating, n: int) -> str:
    """n instances, named by the repeating ancestor's noun: "6 blocks", "6 bloques", or "12 instances"."""
    return i18n.render(_noun(repeating).count(n))
