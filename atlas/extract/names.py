"""Display names for components, from the author's hint, the attribute name or the class."""

from __future__ import annotations

import re

# Abbreviations common in model code, expanded word by word when an attribute name is made readable.
_WORDS = {
    "attn": "attention", "mlp": "MLP", "ffn": "FFN", "fc": "FC", "ln": "LN", "qkv": "QKV",
    "kv": "KV", "proj": "projection", "emb": "embedding", "embed": "embedding", "pos": "position",
    "lm": "LM", "rms": "RMS", "gelu": "GELU", "relu": "ReLU", "silu": "SiLU", "conv": "conv",
    "act": "activation", "fn": "function", "resid": "residual", "drop": "dropout", "ctx": "context",
    "src": "source", "tgt": "target", "seq": "sequence", "tok": "token", "enc": "encoder", "dec": "decoder",
}
# Single letters that read as themselves: the attention streams and the output (q_proj, o_proj).
_LETTERS = frozenset("qkvo")
# How English words may begin with two consonants. A short word that begins otherwise is read letter by
# letter, as an acronym: wte, wpe.
_ONSETS = frozenset("bl br ch cl cr dr dw fl fr gl gn gr kn ph pl pr ps qu rh sc sh sk sl sm sn sp sq st sw th "
                    "tr tw wh wr".split())
_VOWELS = frozenset("aeiouy")


def readable_attribute(attr: str, class_name: str, canonical: bool = False) -> str | None:
    """`latent_encoder` -> "Latent encoder"; `mlp` of class MLP -> "MLP"; `wte` -> "WTE"; `fc1` -> "FC1".

    An attribute that spells its class keeps the class's spelling where that
    spelling is a term (an acronym, or a torch.nn class: `canonical`), and so does
    a word the class name spells with inner capitals (`vit` of ViTModel -> "ViT").
    An attribute holding a word that reads as nothing (a lone letter: `c_fc`,
    `ln_f`) is kept as written. Returns None where the attribute name says nothing
    (a list index).
    """
    if not attr or attr.isdigit() or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", attr):
        return None
    if _squash(attr) == _squash(class_name) and (canonical or not re.search(r"[a-z][A-Z]", class_name)):
        return class_name
    words = [_word(w, class_name) for w in attr.split("_") if w]
    if not words:
        return None
    if None in words:
        return attr
    text = " ".join(words)
    return text[0].upper() + text[1:]


def _word(word: str, class_name: str) -> str | None:
    """One word of an attribute name, readable: expanded, spelled as the class does, as an acronym, or as is."""
    m = re.fullmatch(r"([a-z]*)(\d*)", word)
    if m is None or not word:
        return word                             # mixed case: the author's own spelling
    letters, digits = m.groups()
    if not letters:
        return digits
    if letters in _WORDS:
        return _WORDS[letters] + digits
    found = re.search(re.escape(letters), class_name, re.I) if len(letters) > 1 else None
    if found and re.search(r"[A-Z]", found.group(0)[1:]):
        return found.group(0) + digits
    if len(letters) == 1:
        return letters.upper() + digits if letters in _LETTERS else None
    if not _VOWELS & set(letters) or (len(letters) <= 4 and not _VOWELS & set(letters[:2])
                                      and letters[:2] not in _ONSETS):
        return letters.upper() + digits
    return letters + digits


def _squash(text: str) -> str:
    return text.replace("_", "").lower()


def lower_first(name: str) -> str:
    """"Encoder block" -> "encoder block", but "MLP" and "LayerNorm" keep their capitals."""
    if len(name) > 1 and name[0].isupper() and name[1].islower() and " " in name:
        return name[0].lower() + name[1:]
    if len(name) > 1 and name[0].isupper() and name[1:].islower():
        return name.lower()
    return name


def slug(name: str) -> str:
    """A URL segment from a display name: "LDLM" -> "ldlm", "GPT-2 small" -> "gpt-2-small"."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return text or "model"


def index_spec(indices: list[str]) -> str:
    """List keys as a compact spec: ["0","1","2","5"] -> "0-2,5"; non-numeric keys joined by commas."""
    if not all(i.isdigit() for i in indices):
        return ",".join(indices)
    nums = sorted(int(i) for i in indices)
    parts, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(parts)
