"""Readable names for the code's own names, as formulas: u_bar -> ū, delta_attn -> Δ_attn, W with `qkv` -> W_qkv.

Long names that model code conventionally uses for the usual quantities read as their usual letters
(hidden_states -> x, query_states -> q, attn_weights -> A). Stream membership (q, k, v) is reported
separately; the render layer colors the streams.
"""

from __future__ import annotations

import re

from atlas.analyse.equations.notation import Accent, Glyph, Group, Ident, Number, Row, Script, Word, joined, rm, row
from atlas.document.math_tree import Node

GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "zeta": "ζ", "eta": "η", "theta": "θ",
    "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ",
    "tau": "τ", "upsilon": "υ", "phi": "ϕ", "chi": "χ", "psi": "ψ", "omega": "ω",
}
CAPITALS = {"ϕ": "Φ"}
ACCENTS = {"bar", "hat", "tilde", "dot", "vec"}
STREAMS = {"q": "q", "k": "k", "v": "v"}
PRIME = Glyph("′")

# Names the PyTorch ecosystem gives the usual quantities, and the letters papers give them.
CONVENTIONAL = {
    "hidden_states": "x", "hidden_state": "x", "hidden": "x", "residual": "r", "inputs_embeds": "e",
    "input_embeds": "e", "embeddings": "e", "query_states": "q", "key_states": "k", "value_states": "v",
    "query_layer": "q", "key_layer": "k", "value_layer": "v", "query": "q", "key": "k", "value": "v",
    "xq": "q", "xk": "k", "xv": "v", "queries": "q", "keys": "k", "values": "v",      # Meta's Llama code
    "attn_output": "o", "attention_output": "o", "context_layer": "o", "attn_weights": "A", "attention_probs": "A",
    "attn_probs": "A", "attention_scores": "S", "attn_scores": "S", "scores": "S", "attention_mask": "M",
    "causal_mask": "M", "input_ids": "ids", "position_ids": "pos", "q_embed": "q", "k_embed": "k",
    "input": "x", "inputs": "x", "output": "y", "outputs": "y", "hx": "h",
}
HINTS = {"mu": Ident("μ"), "sigma2": Script(Ident("σ"), sup=Number(2), tight="^"), "ms": rm("ms"), "a": Ident("a"),
         "f": Ident("f"), "x_prime": row(Ident("x"), PRIME)}


def greek(word: str) -> str | None:
    """The Greek letter a word names: "gamma" -> γ, "Delta" -> Δ; None for other words."""
    letter = GREEK.get(word.lower())
    if letter is None:
        return None
    return letter if word.islower() else CAPITALS.get(letter, letter.upper())


def _base(word: str) -> Node:
    if word in ("epsilon", "eps"):
        return Ident("ε")
    letter = greek(word)
    if letter is not None:
        return Ident(letter)
    if len(word) == 1 or (len(word) == 2 and word[1].isdigit()):
        return Ident(word) if len(word) == 1 else Script(Ident(word[0]), sub=Number(int(word[1])))
    return rm(word)


# words after q, k or v that name something about a stream, not the stream: LongT5's q_indices are positions
_ABOUT_A_STREAM = {"indices", "index", "idx", "ids", "mask", "len", "lens", "length", "lengths", "size", "sizes",
                   "shape", "pos", "position", "positions"}


def stream_of(name: str) -> str | None:
    """q/Q, k_a, V, query_states ... -> "q" | "k" | "v" for the attention streams; not q_indices, k_mask."""
    name = CONVENTIONAL.get(name, name)
    words = name.split("_")
    if any(w.lower() in _ABOUT_A_STREAM for w in words[1:]):
        return None
    return STREAMS.get(words[0].lower()) if len(words[0]) == 1 else None


def parts(name: str) -> tuple[str, str | None, int]:
    """(stem, accent, primes): u_bar_prime -> ("u", "bar", 1)."""
    words = [w for w in name.split("_") if w]
    primes = 0
    while words and words[-1] == "prime":
        primes += 1
        words.pop()
    accent = None
    if len(words) > 1 and words[-1] in ACCENTS:
        accent = words.pop()
    return "_".join(words), accent, primes


def primed(name: Node, primes: int) -> Node:
    """A name with primes after it: x, x′, x″."""
    return row(name, *[PRIME] * primes)


def unprimed(name: Node) -> Node:
    """A name without the primes at its end."""
    if isinstance(name, Row):
        items = list(name.items)
        while items and items[-1] == PRIME:
            items.pop()
        return row(*items)
    return name


def name_of(name: str, stem: Node | None = None, avoid: tuple[str, ...] = ()) -> Node:
    """A Python identifier as a name; `stem` replaces the stem (x_bar with x = u' -> ū′). The usual letter for a
    name is not used where it is in `avoid`, the page's size symbols: attention scores are `scores`, not S, beside a
    source length S."""
    if name in CONVENTIONAL and CONVENTIONAL[name] not in avoid:
        name = CONVENTIONAL[name]
    base_name, accent, primes = parts(name)
    words = [w for w in base_name.split("_") if w]
    if not words:
        return rm(name)
    head, rest = words[0], words[1:]
    if stem is not None:
        return primed(stem if not accent else Accent(accent, stem), primes)
    if head == "delta" and rest:
        out = Script(Ident("Δ"), sub=rm(" ".join(rest)))
        rest = []
    else:
        out = _base(head)
        if accent:
            out = Accent(accent, out)
    if rest and not has_subscript(out):
        out = Script(out, sub=joined([Ident(r) if len(r) <= 2 else rm(r) for r in rest], Glyph(",")))
    return primed(out, primes)


def subscripted(base: Node, attr: str) -> Node:
    """A parameter named by the child that owns it: W with `qkv` -> W_qkv."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", attr) if w]
    if not words:
        return base
    return Script(Group(base) if scripted(base) else base, sub=rm(" ".join(words)))


def has_subscript(name: Node) -> bool:
    return any(isinstance(n, Script) and n.sub is not None for n in name.walk())


def has_superscript(name: Node) -> bool:
    return any(isinstance(n, Script) and n.sup is not None for n in name.walk())


def scripted(name: Node) -> bool:
    """A name with a subscript or a grouped superscript in it, or a word with an underscore: a subscript after it
    would be a second one."""
    return any((isinstance(n, Script) and (n.sub is not None or (n.sup is not None and "^" not in n.tight)))
               or (isinstance(n, Word) and "_" in n.text) for n in name.walk())
