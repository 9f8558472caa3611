"""Errors the CLI reports as one line with exit code 2."""


class AtlasError(Exception):
    """Bad input or a failed check, with a message fit for one line."""


class SpecError(AtlasError):
    """A SPEC that does not load: bad form, import failure, missing attribute, raising factory, not a module."""
