"""The command lines README.md shows in its ```sh blocks: the one list of them.

tests/test_readme.py keeps README to this list: every line of a ```sh block is one of COMMANDS, and every one of
COMMANDS is in README. tests/test_wheel.py runs them verbatim, in README order:
- the two pip commands, in a copy of this repository with a fresh venv's pip (the wheel, then its install);
- the atlas and mkdocs commands, in a model repository of their own holding the README's first ```python block as
  mymodel.py, and `gpt2-tiny`, a folder written by transformers' save_pretrained;
- not SETUP_COMMANDS: this repository's own set-up. `make test` is what .ci/run runs (CI runs the suite that way),
  and `make site` builds this repository's site; tests/test_readme.py checks that both are Makefile targets.
"""

WHEEL = "dist/model_atlas-0.1.0-py3-none-any.whl"

SETUP_COMMANDS = (
    "make site",
    "make test",
)

COMMANDS = (
    "pip wheel --no-deps --wheel-dir dist .",
    f"pip install {WHEEL}",
    "atlas describe mymodel.py:tiny",
    "atlas describe --json mymodel.py:tiny",
    "atlas init mymodel.py:tiny",
    "atlas build",
    "atlas check",
    "mkdocs build --strict",
    "atlas describe gpt2-tiny",
) + SETUP_COMMANDS
