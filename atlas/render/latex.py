"""Formulas (atlas.document.math_tree) as LaTeX for KaTeX, and as plain text.

`latex(node, name)` writes a formula; `name(key)` gives the LaTeX of the symbol a `Ref` refers to: its page name
(`names`), or the same wrapped with the site's hover key and stream class (atlas.render.math_markup). A name with
a sub- or superscript or a prime is braced where it is used, so that a script after it stays legal LaTeX.
"""

from __future__ import annotations

import math
import re

from atlas.document.math_tree import (
    Accent,
    Cases,
    Equation,
    Fenced,
    Frac,
    Glyph,
    Group,
    Ident,
    Node,
    Number,
    Product,
    Ref,
    Row,
    Script,
    Size,
    Space,
    Sqrt,
    Word,
)

GREEK = {"α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon", "ϵ": r"\epsilon",
         "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ι": r"\iota", "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu",
         "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau", "υ": r"\upsilon",
         "φ": r"\varphi", "ϕ": r"\phi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta",
         "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma", "Φ": r"\Phi", "Ψ": r"\Psi",
         "Ω": r"\Omega", "Α": r"\Alpha", "Β": r"\Beta", "Ε": r"\Epsilon", "Ζ": r"\Zeta", "Η": r"\Eta",
         "Ι": r"\Iota", "Κ": r"\Kappa", "Μ": r"\Mu", "Ν": r"\Nu", "Ρ": r"\Rho", "Τ": r"\Tau", "Υ": r"\Upsilon",
         "Χ": r"\Chi"}
GLYPHS = {"+": "+", "-": "-", "−": "-", "=": "=", "/": "/", ",": ",", ";": ";", ":": ":", "<": "<", ">": ">",
          "'": "'", "′": "'", "|": "|", "(": "(", ")": ")", "[": "[", "]": "]",
          "⊙": r"\odot ", "⊗": r"\otimes ", "·": r"\cdot ", "×": r"\times ", "⋆": r"\star ", "mod": r"\bmod ",
          "¬": r"\neg ",
          "∧": r"\land", "∨": r"\lor", "⊕": r"\oplus", "≤": r"\le", "≥": r"\ge", "≠": r"\ne", "←": r"\leftarrow",
          "∞": r"\infty", "∅": r"\varnothing", "…": r"\ldots", "⋯": r"\dots", "∑": r"\sum", "big|": r"\big|"}
SPACES = {"thin": r"\,", "negative": r"\!", "thick": r"\;", "quad": r"\quad ", "word": r"\ ", "plain": " "}
STYLES = {"operator": r"\operatorname", "roman": r"\mathrm", "sans": r"\mathsf", "bold": r"\mathbf", "text": r"\text"}
ACCENTS = {"bar": r"\bar", "hat": r"\hat", "tilde": r"\tilde", "dot": r"\dot", "vec": r"\vec"}
OPEN = {"(": "(", "[": "[", "⌊": r"\lfloor ", "⌈": r"\lceil ", "‖": r"\lVert ", "|": "|", "{": r"\{", "": "."}
CLOSE = {")": ")", "]": "]", "⌋": r"\rfloor", "⌉": r"\rceil", "‖": r"\rVert", "|": "|", "}": r"\}", "": "."}
SIZES = {"big": r"\big", "Big": r"\Big"}
_DIGIT_END, _DIGIT_START = re.compile(r"\d\}*$"), re.compile(r"\{*[\d.]")     # 8 · 3, not "8 3"


def _REF(key: str) -> str:
    return r"\atlasref{" + key + "}"


def latex(node, name=None) -> str:
    """The formula as LaTeX. `name(key)`: a symbol's LaTeX; by default `\\atlasref{key}`, the form the data
    keeps for readers that fill in names themselves."""
    return Writer(name or _REF).write(node)


def braced(tex: str) -> str:
    """A name that carries a sub/superscript or a prime, braced so a following subscript stays legal."""
    return "{" + tex + "}" if any(c in tex for c in "_^'") else tex


def named(names: dict):
    """The `name` function of `latex` for a page's names: {key: name's LaTeX}."""
    return lambda key: braced(names.get(key, key))


class Writer:
    def __init__(self, name) -> None:
        self.name = name
        self._in_frac = 0               # fractions being written around the current node


    def write(self, node) -> str:
        if node is None:
            return ""
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            raise TypeError(f"no LaTeX for {type(node).__name__}")
        return method(node)

    def _ref(self, n: Ref) -> str:
        return self.name(n.key)

    def _ident(self, n: Ident) -> str:
        return "".join(GREEK.get(c, c) + (" " if c in GREEK and i + 1 < len(n.text) and n.text[i + 1].isalpha()
                                           else "") for i, c in enumerate(n.text))

    def _number(self, n: Number) -> str:
        return number_tex(n.value)

    def _size(self, n: Size) -> str:
        return size_tex(n.expr, n.compact)

    def _glyph(self, n: Glyph) -> str:
        return GLYPHS[n.name]

    def _space(self, n: Space) -> str:
        return SPACES[n.width]

    def _word(self, n: Word) -> str:
        if n.style == "function":
            return "\\" + n.text
        if n.style == "sans" and len(n.text) == 1:
            return r"\mathsf " + n.text
        text = n.text if n.style == "text" else n.text.replace("_", r"\_").replace(" ", r"\,")
        return STYLES[n.style] + "{" + text + "}"

    def _row(self, n: Row) -> str:
        return "".join(self.write(i) for i in n.items)

    def _group(self, n: Group) -> str:
        return "{" + self.write(n.body) + "}"

    def _script(self, n: Script) -> str:
        out = self.write(n.base)
        for mark, part in (("_", n.sub), ("^", n.sup)):
            if part is not None:
                text = self.write(part)
                out += mark + (text if mark in n.tight else "{" + text + "}")
        return out

    def _product(self, n: Product) -> str:
        """A dot where the factors as written with their references end and start with digits."""
        plain = Writer(_REF)
        dot = _DIGIT_END.search(plain.write(n.left)) and _DIGIT_START.match(plain.write(n.right))
        return self.write(n.left) + (r"\cdot " if dot else r"\,") + self.write(n.right)

    def _frac(self, n: Frac) -> str:
        """A fraction inside a fraction is written on the line, ‖u‖₂/√768, as the seeds do: a stacked one there
        is typeset at a third of the size."""
        self._in_frac += 1
        try:
            num, den = self.write(n.num), self.write(n.den)
        finally:
            self._in_frac -= 1
        if self._in_frac and not isinstance(n.num, Number):       # a coefficient (1/d) stays stacked
            return _on_line(n.num, num) + "/" + _on_line(n.den, den)
        return r"\frac{" + num + "}{" + den + "}"

    def _sqrt(self, n: Sqrt) -> str:
        return r"\sqrt{" + self.write(n.body) + "}"

    def _fenced(self, n: Fenced) -> str:
        body = self.write(n.body)
        if n.size == "auto":
            return r"\left" + OPEN[n.open] + body + r"\right" + CLOSE[n.close]
        if n.size in SIZES:
            return SIZES[n.size] + OPEN[n.open] + body + SIZES[n.size] + CLOSE[n.close]
        return OPEN[n.open] + body + CLOSE[n.close]

    def _accent(self, n: Accent) -> str:
        body = self.write(n.body)
        return ACCENTS[n.mark] + (body if n.tight else "{" + body + "}")

    def _cases(self, n: Cases) -> str:
        rows = []
        for value, condition in n.rows:
            if n.worded:
                cond = r"\text{if } " + self.write(condition) if condition is not None else r"\text{otherwise}"
            else:
                cond = self.write(condition)
            rows.append(self.write(value) + " & " + cond)
        return r"\begin{cases}" + (r"\\ " if n.worded else r"\\").join(rows) + r"\end{cases}"

    def _equation(self, n: Equation) -> str:
        return self.write(n.lhs) + " = " + self.write(n.rhs)


def _on_line(node: Node, tex: str) -> str:
    """A part of an inline fraction, in parentheses where it is a sum or a product of several factors."""
    if isinstance(node, (Row, Product)):
        return r"\left(" + tex + r"\right)"
    return tex


def aligned(node: Node, name=None) -> str:
    """An equation as a line of an aligned block: "a &= b"."""
    if isinstance(node, Equation):
        writer = Writer(name or _REF)
        return writer.write(node.lhs) + " &= " + writer.write(node.rhs)
    return latex(node, name)


def size_tex(expr, compact: bool = True) -> str:
    """A size expression as the seed pages write it: 2T, B T, \\lfloor (T-400)/320\\rfloor + 1."""
    import sympy

    from atlas.document.expressions import parse
    e = parse(expr) if isinstance(expr, str) else expr
    if compact and (isinstance(e, int) or isinstance(e, sympy.Integer)):
        return str(int(e))
    return re.sub(r"(\d) (?=[A-Za-z\\])", r"\1", sympy.latex(e)) if compact else sympy.latex(e)


def number_tex(x) -> str:
    """1e-05 -> 10^{-5}; -1e10 -> -10^{10}; 10000.0 -> 10000; 50.0 -> 50; 0.1 -> 0.1; 0.7978845608 -> 0.7978845608;
    -3.4028234663852886e+38 (float32's lowest, a mask's fill) -> -3.4028234663852886\\times 10^{38}: the number
    the equations run with, in LaTeX, never Python's e+38."""
    if isinstance(x, bool):
        return r"\mathrm{" + str(x) + "}"
    if isinstance(x, int):
        return str(x)
    if math.isinf(x) or math.isnan(x):
        return r"\mathrm{NaN}" if math.isnan(x) else ("-" if x < 0 else "") + r"\infty"
    if x < 0:
        return "-" + number_tex(-x)
    if x == int(x) and x < 1e10:    # 10000 (a rotary base, a mask's fill) as the code writes it
        return str(int(x))
    if x > 0:
        k = round(math.log10(x))
        if (k <= -3 or k >= 4) and abs(x - 10.0 ** k) <= 1e-12 * x:
            return "10^{" + str(k) + "}"
    if x == int(x) and x < 1e15:
        return str(int(x))
    text = repr(float(x))           # a numpy float (np.sqrt(32)) prints as the number, not np.float64(...)
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}\\times 10^{{{int(exponent)}}}" if exponent else text


PLAIN_GLYPHS = {"-": " − ", "−": " − ", "+": " + ", "=": " = ", "⊙": " ⊙ ", "⊗": " ⊗ ", "·": " · ", "×": " × ",
                "⋆": " ⋆ ",
                "≤": " ≤ ", "≥": " ≥ ", "≠": " ≠ ", "<": " < ", ">": " > ", "∧": " ∧ ", "∨": " ∨ ", "⊕": " ⊕ ",
                "←": " ← ", "'": "′", "mod": " mod ", "big|": "|", ",": ", ", ";": "; "}
PLAIN_SPACES = {"thin": " ", "negative": "", "thick": " ", "quad": "  ", "word": " ", "plain": " "}
PLAIN_ACCENTS = {"bar": "\u0304", "hat": "\u0302", "tilde": "\u0303", "dot": "\u0307", "vec": "\u20d7"}
_SUPERSCRIPT = str.maketrans("0123456789+-−", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻")
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def plain_text(node, name=None) -> str:
    """The formula as plain Unicode text, for labels and readers of the JSON: ū = γ ⊙ u/max(‖u‖₂/√768, ε).
    `name(key)`: a symbol's plain name; by default its key."""
    text = _Plain(name or (lambda key: key)).write(node)
    return re.sub(r"\s+", " ", re.sub(r"([(\[‖]) ", r"\1", re.sub(r" ([)\],;])", r"\1", text))).strip()


class _Plain(Writer):
    def _ident(self, n: Ident) -> str:
        return n.text

    def _number(self, n: Number) -> str:
        x = n.value
        if isinstance(x, bool):
            return str(x)
        text = number_tex(x)
        m = re.fullmatch(r"(-?)10\^\{(-?\d+)\}", text)
        if m:
            return m.group(1) + "10" + m.group(2).translate(_SUPERSCRIPT)
        return text.replace(r"\infty", "∞").replace(r"\times ", "×").replace(r"\mathrm{NaN}", "NaN").replace("-", "−")

    def _size(self, n: Size) -> str:
        return re.sub(r"(\d)\*(?![A-Za-z]{2,}\()", r"\1", n.expr).replace("*", "·")

    def _glyph(self, n: Glyph) -> str:
        return PLAIN_GLYPHS.get(n.name, n.name)

    def _space(self, n: Space) -> str:
        return PLAIN_SPACES[n.width]

    def _word(self, n: Word) -> str:
        return n.text

    def _group(self, n: Group) -> str:
        return self.write(n.body)

    def _script(self, n: Script) -> str:
        out = self.write(n.base)
        if n.sub is not None:
            text = self.write(n.sub)
            out += (text.translate(_SUBSCRIPT) if text.isdigit()
                    else "_" + (text if len(text) == 1 else "(" + text + ")"))
        if n.sup is not None:
            text = self.write(n.sup)
            out += text.translate(_SUPERSCRIPT) if re.fullmatch(r"[0-9+\-−]+", text) else "^" + (
                text if len(text) == 1 else "(" + text + ")")
        return out

    def _product(self, n: Product) -> str:
        return self.write(n.left) + " " + self.write(n.right)

    def _frac(self, n: Frac) -> str:
        return _wrapped(self.write(n.num)) + "/" + _wrapped(self.write(n.den))

    def _sqrt(self, n: Sqrt) -> str:
        return "√" + _wrapped(self.write(n.body))

    def _fenced(self, n: Fenced) -> str:
        return n.open + self.write(n.body) + n.close

    def _accent(self, n: Accent) -> str:
        body = self.write(n.body)
        return body[:1] + PLAIN_ACCENTS[n.mark] + body[1:]

    def _cases(self, n: Cases) -> str:
        rows = []
        for value, condition in n.rows:
            cond = ("if " + self.write(condition) if condition is not None else "otherwise") if n.worded \
                else self.write(condition)
            rows.append(self.write(value) + " " + cond)
        return "{" + "; ".join(rows) + "}"


def _wrapped(text: str) -> str:
    """A fraction's part in parentheses where it is more than one term: a name, a number, a call, a root or a norm
    stands as it is."""
    atom = r"[\w.′\u0300-\u036f\u20d7√₀-₉⁰-⁹⁻^]+"
    return text if re.fullmatch(rf"{atom}(\(.*\))?|\(.*\)|‖.*‖{atom}?", text) else "(" + text + ")"
