"""The data a model page's size and dtype calculator reads (templates/assets/calculator.js): the cost formulas as
the model's atlas.json carries them, element counts where a figure depends on a dtype, and the sizes the page
states its figures at. The browser evaluates them exactly; this module only chooses and checks them."""

from __future__ import annotations

import json
import re

import sympy
from markupsafe import escape

from atlas.document.expressions import parse
from atlas.document.input_specs import dim_words

# torch's names of floating dtypes -> the short names readers and the calculator use
SHORT_NAMES = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16",
               "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}
# the calculator's dtypes: (name, bytes per element as numerator, denominator); int4 is for weights only
DTYPES = (("fp32", 4, 1), ("bf16", 2, 1), ("fp8", 1, 1), ("int4", 1, 2))
OTHER_DTYPES = {"fp64": 8, "fp16": 2}  # a model's own dtype outside that list: offered too, at its size
BITS = re.compile(r"(?:b?float|u?int|complex)(\d+)")     # torch's dtype names carry their width in bits
WEIGHT_ONLY = ("int4",)
GRADIENTS_FOR_INT4 = "bf16"     # no gradient is kept in int4: its weights' gradients are taken in this dtype
ADAM_STATES = "fp32"            # Adam's two moment estimates, per trained parameter


def dtype_name(dtype: str) -> str:
    """float32 -> fp32: the name the page's text and the calculator give the model's dtype."""
    return SHORT_NAMES.get(dtype, dtype)


def dtype_bytes(name: str) -> float:
    """fp32 -> 4; int4 -> 0.5."""
    for dtype, num, den in DTYPES:
        if dtype == name:
            return num / den
    if name in OTHER_DTYPES:
        return OTHER_DTYPES[name]
    raise ValueError(f"no dtype {name!r} in the calculator: known {', '.join(d for d, _, _ in DTYPES)}")


def polynomial(expr: str | None, symbols) -> str | None:
    """The formula as the calculator reads it (sympy's text: integers, + - * / **, the size symbols), or None
    where it is no polynomial with rational coefficients in those symbols (a ceiling, a maximum): that figure is
    then not recomputed, and the page says so."""
    if expr is None:
        return None
    e = parse(expr)
    names = {str(s) for s in e.free_symbols}
    if not names <= set(symbols):
        return None
    if e.free_symbols and not e.is_polynomial(*e.free_symbols):
        return None
    poly = sympy.Poly(e, *sorted(e.free_symbols, key=str)) if e.free_symbols else None
    coefficients = poly.coeffs() if poly is not None else [e]
    return expr if all(c.is_Rational for c in coefficients) else None


def calculator_data(doc) -> dict | None:
    """What the calculator needs, or None where the model has no cost to recompute."""
    cost, summary = doc.cost, doc.cost_summary
    if cost is None or summary is None:
        return None
    pinned = {name for name, _ in summary.pinned}
    names = dict(doc.dims.symbols)
    sizes = [{"symbol": s, "name": dim_words(names[s]) if names.get(s) else "", "default": v}
             for s, v in summary.reference if s not in pinned]
    symbols = [s["symbol"] for s in sizes]
    activations, unread = None, []      # unread: figures the page has whose formula the calculator cannot read
    if cost.activation_elements is not None and cost.activation_fixed_bytes is not None:
        elements, fixed = (polynomial(e, symbols) for e in (cost.activation_elements, cost.activation_fixed_bytes))
        activations = {"elements": elements, "fixed_bytes": fixed} if elements and fixed else None
        unread += [] if activations else ["activations"]
    unread += [key for key, e in (("flops", cost.flops), ("flops_causal", cost.flops_causal))
               if e is not None and polynomial(e, symbols) is None]
    kv = summary.kv_cache_elements_per_token
    model = dtype_name(summary.dtype or "")
    own = _own_dtype(model, summary.dtype or "")
    if own is None:
        return None
    return {
        "sizes": sizes,
        "pinned": dict(summary.pinned),     # sizes the formulas hold at only: no input, their values put in
        "dtype": model,
        "dtypes": [{"name": d, "bytes": [num, den], "weights_only": d in WEIGHT_ONLY} for d, num, den in own + DTYPES],
        "gradients_for_int4": GRADIENTS_FOR_INT4,
        "adam_states": ADAM_STATES,
        "flops": polynomial(cost.flops, symbols),
        "flops_causal": polynomial(cost.flops_causal, symbols),
        "activations": activations,
        "kv_cache_elements_per_token": kv if kv and "T" in symbols else None,
        "parameters": doc.totals.parameters,
        "trained": doc.totals.trained,
        "unread": unread,
    }


def _own_dtype(model: str, dtype: str) -> tuple | None:
    """The model's own dtype as a calculator row when the calculator's list lacks it (fp64, fp16, an fp8 variant:
    its width read off torch's name), () when the list has it, None when its width cannot be known."""
    if model in {d for d, _, _ in DTYPES}:
        return ()
    if model in OTHER_DTYPES:
        return ((model, OTHER_DTYPES[model], 1),)
    bits = BITS.match(dtype)
    return ((model, int(bits.group(1)) // 8, 1),) if bits and int(bits.group(1)) % 8 == 0 else None


def calculator_json(doc) -> str:
    """calculator_data as an attribute's value (escaped for double quotes)."""
    return str(escape(json.dumps(calculator_data(doc), ensure_ascii=False, sort_keys=True)))


CALCULATOR_FILTERS = {"calculator_data": calculator_data, "calculator_json": calculator_json,
                      "dtype_name": dtype_name, "dtype_bytes": dtype_bytes}
