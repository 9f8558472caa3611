"""Errors the CLI reports as one line with exit code 2."""


class AtlasError(Exception):
    """Bad input or a failed check, with a message fit for one line."""


class SpecError(AtlasError):
    """A SPEC that does not load: bad form, import failure, missing attribute, raising factory, not a module."""


def where(exc: BaseException) -> str:
    """`Type: message (file.py:line)`, naming the deepest frame of the model's code (atlas.resources.is_model_code),
    else the last frame."""
    import traceback
    from pathlib import Path

    from atlas.resources import is_model_code

    frames = traceback.extract_tb(exc.__traceback__)
    outside = [f for f in frames if is_model_code(f.filename)]
    frame = (outside or frames or [None])[-1]
    message = _script_error(str(exc)) or " ".join(str(exc).split())
    if len(message) > 200:
        message = message[:197] + "..."
    place = f" ({Path(frame.filename).name}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {message}{place}"


def _script_error(text: str) -> str | None:
    """An error of TorchScript's interpreter, which prints a traceback of its own: where in the scripted code it
    failed, and its last line; None for any other error."""
    import re

    if "Traceback of TorchScript" not in text:
        return None
    traceback = text.split("Traceback of TorchScript", 1)[1].split("\nAt:\n", 1)[0]
    places = re.findall(r'File "([^"]+)", line (\d+), in (\w+)', traceback)
    said = re.findall(r"^\w+(?:Error|Exception): *(.*)$", traceback, re.M)
    place = f" at {places[-1][0].rsplit('/', 1)[-1]}:{places[-1][1]} ({places[-1][2]})" if places else ""
    return f"in TorchScript's interpreter{place}" + (f": {said[-1].strip()}" if said and said[-1].strip() else "")


def site_of(error: str) -> tuple[str, int] | None:
    """(file name, line) of the model's code a `where` message ends with: "... (modeling_x.py:618)"."""
    import re
    found = re.search(r"\(([^()\s:]+\.py):(\d+)\)$", error)
    return (found.group(1), int(found.group(2))) if found else None
