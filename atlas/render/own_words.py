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
    named = {c.id: component(c) for c in doc.components}
    renamed: dict[str, set] = {}
    for c in doc.components:
        if named[c.id].name != c.name:
            renamed.setdefault(c.name, set()).add(named[c.id].name)
    names = {old: new.pop() for old, new in renamed.items() if len(new) == 1}     # an English name read one way
    before = {c.id: c for c in doc.components}
    return replace(doc, components=tuple(_sentences(named[c.id], before, named, names) for c in doc.components))


def _sentences(comp: Component, before: dict, named: dict, names: dict) -> Component:
    """The sentences the analysis wrote about a component, its equations' sections and its diagram's boxes, with the
    names they hold as the page now writes them ("inside GPT-2, latent_encoder, Denoiser and latent_decoder")."""
    if not names:
        return comp
    changes = {"claims": tuple(replace(c, text=renamed_in(c.text, names)) for c in comp.claims),
               "explanation": tuple(renamed_in(t, names) for t in comp.explanation)}
    eq = comp.equations
    if eq is not None:
        sections = lambda steps: tuple(replace(st, section=names.get(st.section, st.section)) for st in steps)  # noqa: E731
        paper = eq.paper if eq.paper is None else replace(eq.paper, steps=sections(eq.paper.steps))
        changes["equations"] = replace(eq, steps=sections(eq.steps), paper=paper)
    if comp.flow is not None:
        nodes = tuple(replace(n, label=named[n.component].name)
                      if n.component in named and n.label == before[n.component].name else n for n in comp.flow.nodes)
        changes["flow"] = replace(comp.flow, nodes=nodes)
    return replace(comp, **changes)


def renamed_in(text, names: dict):
    """A sentence (Text) with the component names among its arguments, in lists too, renamed."""
    if not isinstance(text, Text):
        return text

    def mapped(value):
        if isinstance(value, Text):
            return renamed_in(value, names)
        if isinstance(value, (list, tuple)):
            return type(value)(mapped(v) for v in value)
        return names.get(value, value) if isinstance(value, str) else value
    return Text(text.msgid, _plural=text.plural, _n=text.n, _lower=text.initial_lower,
                **{k: mapped(v) for k, v in text.args})


def component(comp: Component) -> Component:
    changes = {}
    if comp.id and comp.name_is_prose and read_off_identifier(comp):    # before the catalogs: "Attention" of
        changes.update(name=identifier(comp), name_is_prose=False)      # `attention` is `attention`, as `self_attn`
    elif (translated := translation(comp.name)) is not None:
        changes.update(name=Translated(translated, comp.name), name_is_prose=True)
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
