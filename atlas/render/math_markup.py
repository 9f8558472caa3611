"""A page's formulas as the site shows them: each symbol's name with its hover key, the q/k/v streams with their
class; and the symbols' names as plain text, for labels.

Formulas keep structure (atlas.document.math_tree): each symbol occurrence is a reference to the symbol's key.
The JSON and the tests read plain LaTeX (atlas.render.latex); the site's pages get a hover key per symbol and a
class per attention stream.
"""

from __future__ import annotations

import re

from atlas.render.latex import braced, latex


def names_of(e) -> dict[str, str]:
    """The LaTeX of each symbol's name on a page (an Equations' symbols)."""
    return {s.key: latex(s.name) for s in e.symbols}


def plain(formula, names: dict) -> str:
    """LaTeX as a reader sees it: every reference replaced by the symbol's name (`names`: key -> its LaTeX)."""
    return latex(formula, lambda key: braced(names.get(key, key)))


# a line wider than this, in characters as typeset (breakable_latex.width), is written so that a phone's column
# may break it (breakable_latex.breakable); a narrower one is written as the JSON's LaTeX is. A line that fits
# stays one line either way, so the estimate errs wide.
LONG = 24
# an aligned block (a leaf's lines) is one table no column breaks: with a line wider than this, its lines are
# shown one by one, each breakable
ALIGNED_LONG = 30


def is_long(formula, names: dict, limit: float = LONG) -> bool:
    """Whether a line is wider than `limit` characters as typeset (`names`: key -> its LaTeX)."""
    from atlas.render.breakable_latex import width
    return width(formula, lambda key: float(len(plain_name(names.get(key, key)).replace("_", "")))) > limit


def marked(formula, names: dict, streams: dict, prefix: str) -> str:
    """LaTeX for the site: each symbol wrapped with its hover key, stream symbols with their class; a long line
    with the places a narrow column may break it."""
    from atlas.render.breakable_latex import breakable
    return (breakable if is_long(formula, names) else latex)(formula, _marker(names, streams, prefix))


def marked_aligned(formula, names: dict, streams: dict, prefix: str) -> str:
    """A line of an aligned block, "a &= b", marked for the site."""
    from atlas.render.latex import aligned
    return aligned(formula, _marker(names, streams, prefix))


def _marker(names: dict, streams: dict, prefix: str):
    def one(key: str) -> str:
        name = names.get(key, key)
        stream = streams.get(key)
        if stream:
            name = r"\htmlClass{atlas-stream-" + stream + "}{" + name + "}"
        return r"\htmlData{sym=" + hover_key(prefix, key) + "}{" + braced(name) + "}"
    return one


def hover_key(prefix: str, key: str) -> str:
    """A page-unique, HTML-safe key for a symbol: the component's and the symbol's own identity."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{prefix}-{key}" if prefix else key)


def strip_markup(tex: str, keep_streams: bool = True) -> str:
    """Page LaTeX without the site's symbol keys (and without stream classes unless kept)."""
    out, i = [], 0
    heads = ["\\htmlData{"] + ([] if keep_streams else ["\\htmlClass{"])
    while i < len(tex):
        head = next((h for h in heads if tex.startswith(h, i)), None)
        if head is None:
            out.append(tex[i])
            i += 1
            continue
        i = tex.index("}", i + len(head)) + 1          # skip the key or class
        if i < len(tex) and tex[i] == "{":               # unwrap the body: keep it, drop its braces
            depth, j = 1, i + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(tex[j], 0)
                j += 1
            out.append(strip_markup(tex[i + 1:j - 1], keep_streams))
            i = j
    return "".join(out)


_GREEK = {name: chr(code) for name, code in (
    ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4), ("epsilon", 0x3F5), ("varepsilon", 0x3B5),
    ("zeta", 0x3B6), ("eta", 0x3B7), ("theta", 0x3B8), ("iota", 0x3B9), ("kappa", 0x3BA), ("lambda", 0x3BB),
    ("mu", 0x3BC), ("nu", 0x3BD), ("xi", 0x3BE), ("pi", 0x3C0), ("rho", 0x3C1), ("sigma", 0x3C3), ("tau", 0x3C4),
    ("upsilon", 0x3C5), ("phi", 0x3D5), ("varphi", 0x3C6), ("chi", 0x3C7), ("psi", 0x3C8), ("omega", 0x3C9),
    ("Gamma", 0x393), ("Delta", 0x394), ("Theta", 0x398), ("Lambda", 0x39B), ("Xi", 0x39E), ("Pi", 0x3A0),
    ("Sigma", 0x3A3), ("Phi", 0x3A6), ("Psi", 0x3A8), ("Omega", 0x3A9))}
_ACCENTS = {"bar": "\u0304", "overline": "\u0305", "hat": "\u0302", "tilde": "\u0303", "dot": "\u0307",
            "vec": "\u20d7"}
_SUPERSCRIPTS = str.maketrans("0123456789+-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻")


def _group(tex: str, i: int) -> tuple[str, int]:
    """The argument at i: a braced group's contents, a command, or one character; and the index after it."""
    if tex[i] == "{":
        depth, j = 1, i + 1
        while depth:
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            j += 1
        return tex[i + 1:j - 1], j
    if tex[i] == "\\":
        j = i + 1
        while j < len(tex) and tex[j].isalpha():
            j += 1
        j = max(j, min(i + 2, len(tex)))           # a one-character command: \, \; \!
        return tex[i:j], j
    return tex[i], i + 1


def plain_name(tex: str) -> str:
    """A symbol's name as plain text, for labels: \\Delta_{\\mathrm{attn}} -> Δ_attn, \\bar{u'}_n -> ū′_n,
    u_{n+1} -> u_(n+1), \\gamma_{\\mathrm{norm\\,latents}} -> γ_(norm latents), \\sigma_d^2(x) -> σ_d²(x)."""
    out, i = [], 0
    while i < len(tex):
        c = tex[i]
        if c in "_^":
            arg, i = _group(tex, i + 1)
            text = plain_name(arg)
            if c == "^" and text and all(ch in "0123456789+-" for ch in text):
                out.append(text.translate(_SUPERSCRIPTS))
            else:
                out.append(c + (f"({text})" if len(text) > 1 and not text.isalnum() else text))
        elif c == "'":
            out.append("′")
            i += 1
        elif c in "{}":
            i += 1
        elif c == "\\":
            command, i = _group(tex, i)
            name = command[1:]
            if name in _GREEK:
                out.append(_GREEK[name])
            elif name in _ACCENTS and i < len(tex):
                arg, i = _group(tex, i)
                text = plain_name(arg)
                out.append(text[:1] + _ACCENTS[name] + text[1:])
            elif name in ("mathrm", "operatorname", "mathit", "mathbf", "text", "mathsf") and i < len(tex):
                arg, i = _group(tex, i)
                out.append(plain_name(arg))
            elif name in (",", ";", ":", " ", "quad"):
                out.append(" ")
            # other commands (\!, \big, \left) print nothing
        else:
            out.append(c)
            i += 1
    return "".join(out).strip()
