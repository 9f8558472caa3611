"""Readable LaTeX for the code's own names: u_bar -> \\bar{u}, delta_attn -> \\Delta_{\\mathrm{attn}}.

Long names that model code conventionally uses for the usual quantities read as their usual letters
(hidden_states -> x, query_states -> q, attn_weights -> A). Stream membership (q, k, v) is reported
separately; the render layer colors the streams.
"""

from __future__ import annotations

import re

GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
    "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega",
}
ACCENTS = {"bar": r"\bar", "hat": r"\hat", "tilde": r"\tilde", "dot": r"\dot", "vec": r"\vec"}
STREAMS = {"q": "q", "k": "k", "v": "v"}

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
HINTS = {"mu": r"\mu", "sigma2": r"\sigma^2", "ms": r"\mathrm{ms}", "a": "a", "f": "f", "x_prime": "x'"}


def _base(word: str) -> str:
    if word.lower() in GREEK:
        if word in ("epsilon", "eps"):
            return r"\varepsilon"
        return "\\" + (word if word.islower() else word.capitalize())
    if word == "eps":
        return r"\varepsilon"
    if len(word) == 1 or (len(word) == 2 and word[1].isdigit()):
        return word if len(word) == 1 else f"{word[0]}_{{{word[1]}}}"
    return r"\mathrm{" + word.replace("_", r"\_") + "}"


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


def tex_name(name: str, stem_tex: str | None = None, avoid: tuple[str, ...] = ()) -> str:
    """A Python identifier as LaTeX; `stem_tex` replaces the stem (x_bar with x = u' -> \\bar{u'}). The usual
    letter for a name is not used where it is in `avoid`, the page's size symbols: attention scores are
    \\mathrm{scores}, not S, beside a source length S."""
    if name in CONVENTIONAL and CONVENTIONAL[name] not in avoid:
        name = CONVENTIONAL[name]
    stem, accent, primes = parts(name)
    words = [w for w in stem.split("_") if w]
    if not words:
        return r"\mathrm{" + name.replace("_", r"\_") + "}"
    head, rest = words[0], words[1:]
    if stem_tex is not None:
        tex = stem_tex if not accent else f"{ACCENTS[accent]}{{{stem_tex}}}"
        return tex + "'" * primes
    if head == "delta" and rest:
        tex = r"\Delta_{\mathrm{" + r"\,".join(rest) + "}}"
        rest = []
    else:
        tex = _base(head)
        if accent:
            tex = f"{ACCENTS[accent]}{{{tex}}}"
    if rest:
        sub = ",".join(r if len(r) <= 2 else r"\mathrm{" + r + "}" for r in rest)
        tex = f"{tex}_{{{sub}}}" if "_{" not in tex else tex
    return tex + "'" * primes


def subscripted(base: str, attr: str) -> str:
    """A parameter named by the child that owns it: W with `qkv` -> W_{\\mathrm{qkv}}."""
    clean = re.sub(r"[^A-Za-z0-9]+", r"\\,", attr).strip("\\,")
    if not clean:
        return base
    if "_{" in base or "^{" in base or "_" in base:
        return "{" + base + "}_{\\mathrm{" + clean + "}}"
    return f"{base}_{{\\mathrm{{{clean}}}}}"
