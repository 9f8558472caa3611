"""Readable LaTeX for the code's own names: u_bar -> \\bar{u}, delta_attn -> \\Delta_{\\mathrm{attn}}.

Names of the query, key and value streams are wrapped in \\htmlClass{atlas-stream-q|k|v}{...}
so the site can color them.
"""

from __future__ import annotations

import re

GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
    "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega",
}
ACCENTS = {"bar": r"\bar", "hat": r"\hat", "tilde": r"\tilde", "dot": r"\dot", "vec": r"\vec"}
STREAMS = {"q": "q", "k": "k", "v": "v"}


def _base(word: str) -> str:
    if word.lower() in GREEK:
        if word == "epsilon" or word == "eps":
            return r"\varepsilon"
        return "\\" + (word if word.islower() else word.capitalize())
    if word == "eps":
        return r"\varepsilon"
    if len(word) == 1 or (len(word) == 2 and word[1].isdigit()):
        return word if len(word) == 1 else f"{word[0]}_{{{word[1]}}}"
    return r"\mathrm{" + word.replace("_", r"\_") + "}"


def stream_of(name: str) -> str | None:
    """q/Q, k_a, V ... -> "q" | "k" | "v" for the attention streams."""
    head = name.split("_")[0]
    return STREAMS.get(head.lower()) if len(head) == 1 else None


def tex_name(name: str) -> str:
    """A Python identifier as LaTeX."""
    words = [w for w in name.split("_") if w]
    if not words:
        return r"\mathrm{" + name.replace("_", r"\_") + "}"
    primes = 0
    while words and words[-1] == "prime":
        primes += 1
        words.pop()
    accent = None
    if len(words) > 1 and words[-1] in ACCENTS:
        accent = ACCENTS[words.pop()]
    head, rest = words[0], words[1:]
    if head == "delta" and rest:
        tex = r"\Delta_{\mathrm{" + r"\,".join(rest) + "}}"
        rest = []
    else:
        tex = _base(head)
        if accent:
            tex = f"{accent}{{{tex}}}"
    if rest:
        sub = ",".join(r if len(r) <= 2 else r"\mathrm{" + r + "}" for r in rest)
        tex = f"{tex}_{{{sub}}}" if "_{" not in tex else tex
    tex += "'" * primes
    stream = stream_of(name)
    if stream:
        tex = r"{\htmlClass{atlas-stream-" + stream + "}{" + tex + "}}"
    return tex


def subscripted(base: str, attr: str) -> str:
    """A parameter named by the child that owns it: W with `qkv` -> W_{\\mathrm{qkv}}."""
    clean = re.sub(r"[^A-Za-z0-9]+", r"\\,", attr).strip("\\,")
    return f"{base}_{{\\mathrm{{{clean}}}}}" if clean else base


def primed(tex: str, n: int) -> str:
    """The n-th reassignment of a name: x, x', x''."""
    return tex + "'" * n
