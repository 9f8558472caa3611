"""A page as Material's search plugin reads it: the same text, without the markup of its code blocks.

The search plugin parses every page's HTML with Python's html.parser, tag by tag. A highlighted source excerpt is
mostly tags: Pygments puts every token in a span, and each line has an anchor and a numbered link in the line
numbers' column (which the search skips). The plugin reads the page from this view instead (mkdocs_plugin), and the
page keeps its markup. What the search gets is the same: inside a <pre> it keeps every piece of text as it is, so
one text node holds what the token spans held, and the line numbers are left out either way. Built either way,
the site's two indexes are the same, byte for byte (tests/test_site_build.py compares the parser's sections page
by page), and the search has far less markup to parse.
"""

from __future__ import annotations

import re

# a Pygments block's code (the tokens' spans, the lines' anchors; the text, its entities as written, has no "<")
_CODE = re.compile(r"(<pre><span></span><code[^>]*>)(.*?)(</code></pre>)", re.S)
# the line numbers' column of a block with numbered lines: Material's search skips what it holds
_LINE_NUMBERS = re.compile(r'(<div class="linenodiv">).*?(</div>)', re.S)
_TAG = re.compile(r"<[^>]*>")


def for_search(html: str) -> str:
    """The page's HTML with its code blocks' text only."""
    html = _LINE_NUMBERS.sub(r"\1\2", html)
    return _CODE.sub(lambda m: m.group(1) + _TAG.sub("", m.group(2)) + m.group(3), html)
