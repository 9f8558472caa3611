"""Display names for components, from the author's hint, the attribute name or the class."""

from __future__ import annotations

import re

# Names come from code, whose words are English; `plural` inflects them on English pages only.
LANGUAGE = "en"

# Abbreviations common in model code, expanded word by word when an attribute name is made readable.
_WORDS = {
    "attn": "attention", "mlp": "MLP", "ffn": "FFN", "fc": "FC", "ln": "LN", "qkv": "QKV",
    "kv": "KV", "proj": "projection", "emb": "embedding", "embed": "embedding", "pos": "position",
    "lm": "LM", "rms": "RMS", "gelu": "GELU", "relu": "ReLU", "silu": "SiLU", "conv": "conv",
}


def readable_attribute(attr: str, class_name: str, canonical: bool = False) -> str | None:
    """`latent_encoder` -> "Latent encoder"; `mlp` of class MLP -> "MLP".

    An attribute that spells its class keeps the class's spelling where that
    spelling is a term (an acronym, or a torch.nn class: `canonical`).
    Returns None where the attribute name says nothing (a list index).
    """
    if not attr or attr.isdigit() or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", attr):
        return None
    if _squash(attr) == _squash(class_name) and (canonical or not re.search(r"[a-z][A-Z]", class_name)):
        return class_name
    words = [w for w in attr.split("_") if w]
    if not words:
        return None
    text = " ".join(_WORDS.get(w.lower(), w) for w in words)
    return text[0].upper() + text[1:]


def _squash(text: str) -> str:
    return text.replace("_", "").lower()


def plural(name: str) -> str:
    """English plural of a display name's last word: "encoder block" -> "encoder blocks"."""
    if re.search(r"(s|x|z|ch|sh)$", name):
        return name + "es"
    if re.search(r"[^aeiou]y$", name):
        return name[:-1] + "ies"
    return name + "s"


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
