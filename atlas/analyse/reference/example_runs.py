"""The examples of a reference page, in the page's language, run when the page is generated.

- `generated(instance)`: the example every page has, written from the small instance
  (atlas/extract/small_instances.py): construct it, build its input, call it, print the shapes and the parameter count;
- `localized(code)`: a data file's example with its comments and the strings it prints in the active language, from
  the reference catalog (`texts(code)` lists them for the catalog);
- `run(code, where)`: execute with a fixed seed and capture what it prints.
Each language's code is run on its own, so the output a page shows is what that page's code printed.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import tokenize

import torch

from atlas import i18n
from atlas.errors import AtlasError
from atlas.i18n import msg


def generated(instance) -> str:
    """The generated example's code, comments and printed labels in the active language."""
    lines = ["import torch", "from torch import nn", ""]
    if instance.arguments:
        lines.append(_comment(msg("the required arguments, small; the others keep their defaults")))
    else:
        lines.append(_comment(msg("no argument is required: every one keeps its default")))
    lines.append(f"layer = {instance.call}")
    names = _names(instance.inputs)
    for name, i in zip(names, instance.inputs):
        lines.append(_comment(_describe(i)))
        if getattr(torch, i.dtype).is_floating_point:
            lines.append(f"{name} = torch.randn({', '.join(map(str, i.sizes))})")
        else:
            low, high = i.low or 0, _high(i)
            lines.append(f"{name} = torch.randint({low}, {high}, ({', '.join(map(str, i.sizes))},))")
    lines.append(f"y = layer({', '.join(names)})")
    for name in names:
        label = msg("input shape:") if len(names) == 1 else msg("shape of %(input)s:", input=name)
        lines.append(_print(label, f"tuple({name}.shape)"))
    out = _probe(instance)
    if isinstance(out, torch.Tensor):
        lines.append(_print(msg("output shape:"), "tuple(y.shape)"))
    else:
        lines.append(_print(msg("output shapes:"), "[tuple(t.shape) for t in y if isinstance(t, torch.Tensor)]"))
    lines.append(_print(msg("parameters:"), "sum(p.numel() for p in layer.parameters())"))
    return "\n".join(lines)


def _names(inputs) -> list[str]:
    """x for a single input; the forward() parameters' names for several."""
    return ["x"] if len(inputs) == 1 else [i.name for i in inputs]


def _describe(i) -> object:
    dims = "(" + ", ".join(str(d) for d in i.dims) + ")"
    symbols = ", ".join(f"{d} = {s}" for d, s in zip(i.dims, i.sizes) if isinstance(d, str))
    if getattr(torch, i.dtype).is_floating_point:
        return msg("shape %(dims)s with %(sizes)s", dims=dims, sizes=symbols) if symbols else \
            msg("shape %(dims)s", dims=dims)
    return msg("integers below %(high)s, of shape %(dims)s with %(sizes)s", high=str(_high(i)), dims=dims,
               sizes=symbols) if symbols else msg("integers below %(high)s, of shape %(dims)s", high=str(_high(i)),
                                                  dims=dims)


def _high(i) -> int:
    from atlas.extract.small_instances import OTHER_SIZE
    return i.high or OTHER_SIZE


def _string(text) -> str:
    """A Python string literal in double quotes, as the data files' examples write them."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _print(label, expression: str) -> str:
    return f"print({_string(i18n.render(label))}, {expression})"


def _comment(text) -> str:
    return "# " + i18n.render(text)


def _probe(instance):
    from atlas.extract.small_instances import run as run_instance
    return run_instance(instance.module, instance.inputs)


_FLOAT = re.compile(r"-?\d+\.\d{5,}(?:e[-+]?\d+)?")


def run(code: str, where: str) -> str:
    """Run an example with a fixed seed; its printed output, with floats rounded to 4 decimals."""
    torch.manual_seed(0)
    torch.set_printoptions(precision=4, sci_mode=False)
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            exec(compile(code, where, "exec"), {"__name__": "__atlas_example__"})
    except Exception as exc:
        raise AtlasError(f"{where}: the example raised {type(exc).__name__}: {exc}") from None
    finally:
        torch.set_printoptions(profile="default")
    return _FLOAT.sub(lambda m: f"{float(m.group(0)):.4f}", buffer.getvalue()).rstrip()


def _printed(code: str) -> set[tuple[int, int]]:
    """(line, column) of each string literal passed to print(): the labels an example prints."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add((arg.lineno, arg.col_offset))
    return found


def _words(code: str):
    """(token, text) for each comment and printed string literal of the code, in order."""
    printed = _printed(code)
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string[1:].strip()
            if text:
                yield tok, text
        elif tok.type == tokenize.STRING and tok.start in printed:
            value = ast.literal_eval(tok.string)
            if value.strip():
                yield tok, value


def texts(code: str) -> list[str]:
    """The comments and printed strings of an example: what its translation needs."""
    return [text for _, text in _words(code)]


def localized(code: str) -> str:
    """The code with its comments and printed strings in the active language (the reference catalog)."""
    lines = code.splitlines(keepends=True)
    edits = []
    for tok, text in _words(code):
        translated = i18n.gettext(text)
        if translated == text:
            continue
        if tok.type == tokenize.COMMENT:
            new = "# " + translated
        else:
            new = _string(translated) if tok.string[0] == '"' else repr(translated)
        edits.append((tok.start, tok.end, new))
    for (row, col), (end_row, end_col), new in reversed(edits):
        if row != end_row:
            raise AtlasError(f"an example's string spans lines {row}-{end_row}; write it on one line")
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end_col:]
    return "".join(lines)
