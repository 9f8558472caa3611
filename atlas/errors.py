"""Errors the CLI reports as one line with exit code 2."""


class AtlasError(Exception):
    """Bad input or a failed check, with a message fit for one line."""


class SpecError(AtlasError):
    """A SPEC that does not load: bad form, import failure, missing attribute, raising factory, not a module."""


def where(exc: BaseException) -> str:
    """`Type: message (file.py:line)`, naming the deepest frame outside torch, else the last one."""
    import traceback
    from pathlib import Path

    frames = traceback.extract_tb(exc.__traceback__)
    outside = [f for f in frames if "/torch/" not in f.filename.replace("\\", "/")]
    frame = (outside or frames or [None])[-1]
    message = " ".join(str(exc).split())
    if len(message) > 200:
        message = message[:197] + "..."
    place = f" ({Path(frame.filename).name}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {message}{place}"
