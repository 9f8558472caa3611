"""Formatting for pages: plain functions, registered once as Jinja filters, tested on their own."""

from __future__ import annotations

import functools
import re

from atlas import i18n
from atlas.document import calculation
from atlas.document.input_specs import dim_words, parse_input
from atlas.i18n import msg, msgn
from atlas.render import repeat_words
from atlas.render.size_filters import SIZE_FILTERS
from atlas.render.view_filters import VIEW_FILTERS

# html.escape's replacements, without importing html: its entity tables (0.35 MB) are more than `describe` needs
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_HTML_QUOTES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def thousands(n: int) -> str:
    """12345 -> "12,345" in English, "12.345" in Spanish: the active locale's grouping (CLDR, via Babel)."""
    return i18n.number(n)


def tex_thousands(n: int) -> str:
    """12345 -> "12{,}345" in English, "12{.}345" in Spanish: a number inside LaTeX grouped as the page's text
    groups it, its separator braced (LaTeX sets no space after it, and no separator reads as a decimal mark)."""
    return re.sub(r"(?<=\d)([^\d])(?=\d)", r"{\1}", i18n.number(int(n)))


def shape(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


_MD_SPECIALS = re.compile(r"([\\`*_{}\[\]#|$~])")


def md_text(text: str) -> str:
    """Prose from the code (names, docstrings) made inert in Markdown, HTML and math."""
    text = i18n.render(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIALS.sub(r"\\\1", text)


def md_message(text: str) -> str:
    """One of atlas's own messages (a reason, a note), inert like md_text, but for the names it quotes in
    backticks (`input_ids`, `self_attn.layer_type`), which read as code: a quoted span with no space in it is set
    as HTML code, escaped, so no text closes the paragraph it sits in. A quoted error message (it has spaces, and
    may hold backticks of its own) stays text."""
    parts = re.split(r"`([^`\s]+)`", i18n.render(text))
    return "".join(f"<code>{part.translate(_HTML_QUOTES)}</code>" if i % 2 else md_text(part)
                   for i, part in enumerate(parts))


def md_code(text: str) -> str:
    """Inline code that holds any text, backticks included."""
    text = str(text)
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def repeat_label(comp) -> str:
    """The nav and breadcrumb form of a component: "6 encoder blocks" (en), "6 bloques encoder" (es), "6 × MLP"."""
    return repeat_words.label(comp)


def repeat_count(repeating, n: int) -> str:
    """The "6 blocks" of "× 6 blocks = ...", in the page's language; "12 instances" without a repeating ancestor."""
    return repeat_words.count(repeating, n)


def one_of(comp) -> str:
    """The tag of a repeated component: "one of 6 blocks", "uno de 6 bloques"."""
    return repeat_words.one_of(comp)


def compact_symbol(expr: str) -> str:
    """sympy's text to reading form: "2*T" -> "2T", "B*T" -> "B·T", "T/2" stays; a number times a function keeps
    its dot: "8*ceiling(T/8)" -> "8·ceiling(T/8)", not "8ceiling(T/8)"."""
    return re.sub(r"(\d)\*(?![A-Za-z]{2,}\()", r"\1", expr).replace("*", "·")


def dim_label(dim, names) -> str:
    """One dim for a page: "T positions", "2T positions", "768 d", "2304 = 3d", or a bare size."""
    if dim.symbolic:
        return f"{compact_symbol(dim.symbol)} {dim_words(dim.name)}" if dim.name else compact_symbol(dim.symbol)
    labels = dict(names.fixed)
    if dim.value in labels:
        return f"{dim.value} {dim_words(labels[dim.value])}"
    for value, label in names.fixed:
        if value and dim.value % value == 0 and 2 <= dim.value // value <= 8 and len(label) <= 2:
            return f"{dim.value} = {dim.value // value}{label}"
    return str(dim.value)


def tensor_label(tensor, names) -> str:
    """$u'_n$ [B batch, T positions, 768 d]: the symbol the calling equations give it, else the code's name (`u`)."""
    if tensor.math is not None:
        from atlas.render.latex import latex
        head = f"${latex(tensor.math)}$"
    else:
        head = md_code(tensor.name)
    return head + " [" + ", ".join(dim_label(d, names) for d in tensor.dims) + "]"


def signed(n: int) -> str:
    """-5 -> "−5", 5 -> "+5", 0 -> "0", with a true minus sign."""
    return "0" if n == 0 else ("+" if n > 0 else "\u2212") + thousands(abs(n))


def crumb(c) -> str:
    return f"[{md_text(c.label)}]({c.href})"


def row_label(r) -> str:
    """An accounting row's first cell: a child's linked name, or a tensor's label and attribute."""
    text = f"[{md_text(r.label)}]({r.href})" if r.href else f"{md_text(r.label)} {md_code(r.name)}"
    return text + (f" ({md_text(r.note)})" if r.note else "")


def frozen_part(p) -> str:
    return f"[{md_text(p.label)}]({p.href}) {thousands(p.count)}"


def symbol_entry(pair) -> str:
    return f"{pair[0]} {md_text(dim_words(pair[1]))}" if pair[1] else pair[0]


def math_aligned(formula, e) -> str:
    """A line of a leaf's aligned block, "a &= b", each symbol with its hover key."""
    from atlas.render.math_markup import marked_aligned, names_of
    return marked_aligned(formula, names_of(e), e.streams(), "")


def verification_note(e, v=None, method: str | None = None) -> str:
    """The check's outcome for the equations `e`, or `v` (their paper view's); `method`: get_bias, not forward()."""
    v = e.verification if v is None else v
    args = {"dtype": v.dtype, "error": f"{v.max_error:.0e}", "tolerance": f"{v.tolerance:.0e}"}
    if e.status.value == "override":
        text = msg("the author's override, run in %(dtype)s on random inputs with a fixed seed in evaluation mode, "
                   "reproduces `forward()` to within %(error)s (tolerance %(tolerance)s).", **args)
    else:
        text = msg("these equations, run in %(dtype)s on random inputs with a fixed seed in evaluation mode, "
                   "reproduce `%(method)s()` to within %(error)s (tolerance %(tolerance)s).",
                   method=method or "forward", **args)
    return i18n.render(text) + ("" if v.note is None else f" {md_message(v.note)}.")


def step_link(cid: str, doc, href) -> str:
    return f"[{md_text(doc.component(cid).name)}]({href(cid)})"


def line_range(x) -> str:
    return f"{x.start}–{x.end}"


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def code_block(x, file: str) -> str:
    """An excerpt as a highlighted block numbered from its first line, titled with the file and range."""
    fence = _fence(x.text)
    name = file.rsplit("/", 1)[-1]
    return f'{fence}python linenums="{x.start}" title="{name} {x.start}–{x.end}"\n{x.text}\n{fence}'


def claim_block(c, file: str) -> str:
    fence = _fence(c.excerpt)
    return f'{fence}python linenums="{c.start}"\n{c.excerpt}\n{fence}'


def cell(c) -> str:
    """A catalog cell: its parts as links where they point at a page, joined; a dash where there are none."""
    if c is None or not c.parts:
        return "—"
    return c.sep.join(f"[{text}]({link})" if link else text for text, link in c.parts)


def shown_in(c, src) -> bool:
    """Whether a claim's lines are inside an excerpt the page's Code section already shows (then the claim
    points there instead of repeating them)."""
    return bool(src) and c.file == src.file and any(x.start <= c.start and c.end <= x.end for x in src.excerpts)


def streams_in(e) -> list[str]:
    """The attention streams a page's equations use, in q, k, v order."""
    used = {s.stream for s in e.symbols if s.stream}
    return [s for s in "qkv" if s in used]


def math(formula, e) -> str:
    """A line of a page's equations, each symbol with its hover key, the q/k/v streams with their class."""
    from atlas.render.math_markup import marked, names_of
    return marked(formula, names_of(e), e.streams(), "")


def symbol_names(e) -> str:
    """The page's symbols by hover key, each named in plain text, as JSON for a single-quoted HTML attribute: the
    labels templates/assets/atlas.js gives the symbols it makes focusable ("Highlight every occurrence of Δ_attn")."""
    import json

    from atlas.render.latex import latex
    from atlas.render.math_markup import hover_key, plain_name
    names = {hover_key("", s.key): plain_name(latex(s.name)) for s in e.symbols}
    text = json.dumps(names, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.translate(_HTML).replace("'", "&#x27;")


def plain_math(formula, e) -> str:
    """The line as a reader sees it: names only (for labels and the JSON)."""
    from atlas.render.math_markup import names_of, plain
    return plain(formula, names_of(e))


def step_shape(step, names) -> str:
    """A step's value's shape in compact form: [B, 12, T, 2T]."""
    if not step.shape:
        return ""
    return "[" + ", ".join(compact_symbol(d.symbol) if d.symbolic else str(d.value) for d in step.shape) + "]"


def title_text(text: str) -> str:
    """A page title for front matter: the theme puts it into <title> and the header unescaped."""
    return str(text).translate(_HTML).replace('"', "'")


def doc_text(text: str) -> str:
    """Prose from torch's docstrings and the reference data files: HTML-escaped, Markdown and math kept."""
    return i18n.render(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


TAGS = {"learned": msg("learned"), "frozen": msg("frozen"), "partly frozen": msg("partly frozen"),
        "parameter-free": msg("parameter-free"), "tied": msg("tied")}


def tag_label(tag: str) -> str:
    """A component's tag in the active language; the tag's own value stays the CSS class."""
    return i18n.render(TAGS[tag])


FINDINGS = {"missing": msg("missing from the checkpoint"), "unexpected": msg("unexpected: not in the code"),
            "mismatched": msg("shape or dtype mismatch"), "tied": msg("tied copy, saved once")}



def tensor_type(shape, dtype: str) -> str:
    """(768, 3072), "float32" -> "[768, 3072] float32"."""
    return f"{list(shape)} {dtype}"


def finding_kind(kind: str) -> str:
    return i18n.render(FINDINGS[kind])


def finding_detail(f) -> str:
    """The last cell of a finding's row: both sides of a mismatch, or where a tied copy is saved."""
    if f.kind == "mismatched":
        m = f.mismatch
        return i18n.render(msg("code %(code)s; checkpoint %(checkpoint)s",
                               code=md_code(tensor_type(m.code_shape, m.code_dtype)),
                               checkpoint=md_code(tensor_type(m.checkpoint_shape, m.checkpoint_dtype))))
    if f.kind == "tied":
        return i18n.render(msg("the same tensor as %(name)s, which the checkpoint holds", name=md_code(f.saved_as)))
    return ""


def checkpoint_format(r) -> str:
    """ "safetensors", or "safetensors, sharded in 9 files"."""
    if r.format == "safetensors-sharded":
        return i18n.render(msgn("safetensors, sharded in %(n)s file", "safetensors, sharded in %(n)s files", r.shards))
    if r.format == "torch-sharded":
        return i18n.render(msgn("torch state dicts, sharded in %(n)s file", "torch state dicts, sharded in %(n)s files",
                                r.shards))
    return i18n.render(msg("safetensors") if r.format == "safetensors" else msg("torch state dict"))


def cost_tex(expr: str) -> str:
    """A cost formula in LaTeX, its coefficients grouped as the page's language groups them:
    6{,}144\\,B\\,T^{2}+16{,}515{,}072\\,B\\,T in English, 6144\\,B\\,T^{2}+16.515.072\\,B\\,T in Spanish."""
    return _cost_tex(expr, i18n.active())


@functools.lru_cache(maxsize=4096)      # a model's pages show each formula once per language
def _cost_tex(expr: str, language: str) -> str:
    import sympy

    from atlas.document.expressions import parse
    e = parse(expr)
    terms = sympy.Add.make_args(sympy.expand(e))
    parts = []
    for term in sorted(terms, key=lambda t: (-_degree(t), str(t))):
        coeff, rest = term.as_coeff_Mul()
        body = "" if rest == 1 else sympy.latex(rest, mul_symbol="\\,")
        num = _coeff_tex(coeff) if coeff != 1 or not body else ""
        parts.append(num + ("\\," if num and body else "") + body)
    return "+".join(parts).replace("+-", "-") if parts else "0"


def _degree(term) -> int:
    """A term's degree in the sizes: B·T² is 3; floor(H/2 - 1/2)·W, a conv's strided size times another, is 2."""
    degree = 0
    for base, exp in term.as_powers_dict().items():
        if base.free_symbols and getattr(exp, "is_Integer", False):
            degree += int(exp) * (1 if base.is_Symbol or base.is_Function else max(1, len(base.free_symbols)))
    return degree


def _coeff_tex(c) -> str:
    if c.is_Integer:
        return tex_thousands(int(c))
    if c.is_Rational:
        return r"\tfrac{" + tex_thousands(int(c.p)) + "}{" + tex_thousands(int(c.q)) + "}"
    return str(float(c))


UNITS = ("", "k", "M", "G", "T", "P", "E")


def si(value: float, unit: str) -> str:
    """2207121408 FLOPs -> "2.21 GFLOPs"; 2048 bytes -> "2.05 kB" (decimal prefixes, the active locale's digits);
    nothing -> "0 FLOPs", not "0.00 FLOPs"."""
    value = float(value)
    if value == 0:
        return f"0 {unit}"
    step = 0
    while abs(value) >= 1000 and step < len(UNITS) - 1:
        value /= 1000
        step += 1
    return f"{i18n.decimal(value, 3)} {UNITS[step]}{unit}"


def at_reference(expr: str, reference) -> float:
    """A cost formula's value at the reference sizes ((name, size) pairs)."""
    return _at_reference(expr, tuple(map(tuple, reference)))


@functools.lru_cache(maxsize=4096)      # a page evaluates a formula for several sentences, in each language
def _at_reference(expr: str, reference: tuple[tuple[str, int], ...]) -> float:
    import sympy

    from atlas.document.expressions import parse
    e = parse(expr)
    return float(e.subs({sympy.Symbol(k): v for k, v in reference}))


FILTERS = VIEW_FILTERS | SIZE_FILTERS | {
    "percent": i18n.percent,
    "cost_tex": cost_tex,
    "si": si,
    "at_reference": at_reference,
    "tensor_type": tensor_type,
    "finding_kind": finding_kind,
    "finding_detail": finding_detail,
    "checkpoint_format": checkpoint_format,
    "tr": i18n.render,
    "tag_label": tag_label,
    "doc_text": doc_text,
    "title_text": title_text,
    "streams_in": streams_in,
    "shown_in": shown_in,
    "cell": cell,
    "math": math,
    "plain_math": plain_math,
    "symbol_names": symbol_names,
    "step_shape": step_shape,
    "line_range": line_range,
    "code_block": code_block,
    "claim_block": claim_block,
    "step_link": step_link,
    "math_aligned": math_aligned,
    "verification_note": verification_note,
    "symbol_entry": symbol_entry,
    "dim_label": dim_label,
    "tensor_label": tensor_label,
    "signed": signed,
    "crumb": crumb,
    "row_label": row_label,
    "frozen_part": frozen_part,
    "thousands": thousands,
    "calculation": calculation,
    "tex_thousands": tex_thousands,
    "shape": shape,
    "md_text": md_text,
    "md_message": md_message,
    "md_code": md_code,
    "repeat_label": repeat_label,
    "repeat_count": repeat_count,
    "one_of": one_of,
}


def has_positions(doc) -> bool:
    """Whether the model's own inputs have positions (T): per-token figures are then meaningful. A T that only the
    made-up input of a part its forward never calls has (a CNN's unused padding, probed on [B, T]) does not count."""
    return any("T" in parse_input(text).dims for text in doc.inputs or ())
