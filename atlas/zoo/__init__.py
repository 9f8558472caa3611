"""Reference models shipped with the atlas. The generator never special-cases them."""


def own_words(text: str) -> str:
    """A name or sentence of a zoo model that is the site's own words: the message catalogs extract it
    (`python -m atlas.site.message_catalogs update`) and the pages in other languages show its translation. It
    returns the text as it is: the model's code and its English pages read it unchanged."""
    return text
