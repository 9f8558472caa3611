"""A model's names and sentences in the page's language, before its pages are rendered.

What the atlas writes about a component is the site's own words, and the catalogs translate it. Two other kinds of
words reach a page:

- what a model's author wrote (`atlas_name`, `atlas_summary`, `atlas_reconstruction`): translated where the
  catalogs hold the sentence (the zoo's models are the site's own, and mark theirs with `atlas.zoo.own_words`),
  else shown as the author wrote it;
- names the walk read off an attribute ("Q projection" from `q_proj`): English words the code's identifier spells.
  A page in another language shows the identifier itself (`q_proj`), as it shows a class name, so that no label
  mixes two languages. A name that spells a term (MLP, FC1, LayerNorm, GELU, Dropout) is the same in every language
  and stays.

A docstring's sentence is the library's words: it stays as written, and the page marks it as quoted (`quoted`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from atlas import i18n
from atlas.document import Component, ModelDoc
from atlas.extract import names
from atlas.i18n import Text

_WORD = re.compile(r"[A-Z]?[a-z]{2,}")      # a word of prose: "Projection", "encoder"; not "MLP", "FC1", "LayerNorm"


class Translated(str):
    """An author's name in the page's language, which still knows the English it translates (`source`): the
    noun that counts its repeats ("one of 6 blocks") is read off the English."""

    source: str

    def __new__(cls, text: str, source: str):
        self = super().__new__(cls, text)
        self.source = source
        return self


def localized(doc: ModelDoc) -> ModelDoc:
    """The model with its components' names and sentences in the active language; English is the source."""
    if i18n.active() == i18n.DEFAULT:
        return doc
    return replace(doc, components=tuple(component(c) for c in doc.components))


def component(comp: Component) -> Component:
    changes = {}
    translated = translation(comp.name)
    if translated is not None:
        changes.update(name=Translated(translated, comp.name), name_is_prose=True)
    elif comp.id and comp.name_is_prose and read_off_identifier(comp):
        changes.update(name=identifier(comp), name_is_prose=False)
    for field in ("summary", "reconstruction"):
        text = translation(getattr(comp, field))
        if text is not None:
            changes[field] = text
    return replace(comp, **changes) if changes else comp


def translation(text) -> str | None:
    """The active catalog's translation of an author's plain sentence; None for Text (translated when rendered),
    for nothing, and for a sentence the catalogs do not hold."""
    if not isinstance(text, str) or isinstance(text, Text) or not text:
        return None
    found = i18n.gettext(text)
    return found if found != text else None


def identifier(comp: Component) -> str:
    return comp.id.rsplit(".", 1)[-1]


def read_off_identifier(comp: Component) -> bool:
    """Whether the name is the walk's reading of the attribute's identifier in English words ("Latent encoder" of
    `latent_encoder`, or "Norm (norm)" where siblings read alike), not a term the class spells."""
    segment = identifier(comp)
    class_name = comp.cls.rsplit(".", 1)[-1]
    readable = names.readable_attribute(segment, class_name, comp.cls.startswith("torch.nn."))
    if readable is None or readable == class_name or readable == segment:
        return False
    if comp.name not in (readable, f"{readable} ({segment})"):
        return False
    return any(_WORD.fullmatch(w) for w in re.split(r"[\s\-]+", readable))


def quoted(text) -> str:
    """A sentence quoted as its author wrote it, marked as English on a page in another language."""
    from atlas.render.filters import md_text
    body = f"“{md_text(text)}”"
    return body if i18n.active() == i18n.DEFAULT else f'<span lang="en">{body}</span>'


def summary(text) -> str:
    """A component's summary: the site's words in the page's language, or an author's sentence the catalogs do not
    translate, quoted as the model's code writes it."""
    from atlas.render.filters import md_text
    if i18n.active() == i18n.DEFAULT or isinstance(text, Text) or translation(text) is not None:
        return md_text(text)
    marker = i18n.gettext("In the model's code:")
    return f'<p class="atlas-quote" markdown>*{marker}* {quoted(text)}</p>'
