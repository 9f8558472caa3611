"""Source spans agree with inspect's, line for line, without inspect's caches."""

import inspect
import linecache
import sys

import pytest
from torch import nn
from transformers.models.llama import modeling_llama

from atlas.extract.source_spans import SourceFiles
from atlas.zoo import ldlm

MODULES = (nn.modules.linear, nn.modules.conv, nn.modules.activation, nn.modules.rnn, nn.modules.transformer,
           modeling_llama, ldlm)


def _classes():
    for module in MODULES:
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                yield value


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_spans_are_the_lines_inspect_gives(module):
    files, checked = SourceFiles(), 0
    for cls in (c for c in _classes() if c.__module__ == module.__name__):
        try:
            want_lines, want_start = inspect.getsourcelines(cls)
        except OSError:                 # made at run time (a NamedTuple's): inspect has no source either
            assert files.klass(cls) is None
            continue
        file, start, lines = files.klass(cls)
        assert (start, lines) == (want_start, want_lines), cls
        for fn in (v for v in vars(cls).values() if inspect.isfunction(v)):
            try:
                want_lines, want_start = inspect.getsourcelines(fn)
            except OSError:             # a dataclass's generated __init__: no file
                assert files.function(fn) is None
                continue
            assert files.function(fn)[1:] == (want_start, want_lines), fn
            checked += 1
    assert checked > 5


def test_files_are_read_once_and_not_kept_in_linecache():
    linecache.clearcache()
    files = SourceFiles()
    file, start, lines = files.klass(modeling_llama.LlamaAttention)
    assert lines[0].startswith("@") and lines[1].startswith("class LlamaAttention(")     # its decorator first
    assert files.text(file, start, start + 1) == "".join(lines[:2]).rstrip("\n")
    assert files.source(file) is files.source(file)
    assert file not in linecache.cache


def test_a_block_is_found_again_in_an_edited_file(tmp_path, monkeypatch):
    """Block lengths are kept for the process by the text of the file, so an edit, even one keeping the file's size,
    gives the edited block in the next pass."""
    import importlib.util
    path = tmp_path / "edited.py"

    def module(text):
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("edited", path)
        mod = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, "edited", mod)
        spec.loader.exec_module(mod)
        return mod
    one = module("class A:\n    def f(self):\n        return 1\nx = 222\n")
    assert SourceFiles().klass(one.A)[2] == ["class A:\n", "    def f(self):\n", "        return 1\n"]
    size = path.stat().st_size
    two = module("class A:\n    def f(self):\n        return 1\n    x=2\n")     # the same size, one line longer
    assert path.stat().st_size == size
    assert SourceFiles().klass(two.A)[2][-1] == "    x=2\n"
    assert SourceFiles().function(two.A.f)[2] == ["    def f(self):\n", "        return 1\n"]


@pytest.mark.parametrize("encoded", [
    "\ufeffclass A:\n    def f(self):\n        return 'é'\n".encode("utf-8"),                    # a byte-order mark
    b"# -*- coding: latin-1 -*-\nclass A:\n    def f(self):\n        return '\xe9'\n",           # a coding cookie
    "x = '🤗'\r\nclass A:\r\n    def f(self):\r\n        return 1\r\n".encode("utf-8"),       # CRLF, 4-byte char
    b"x = 1\rclass A:\r    def f(self):\r        return 1\r",                                    # old Mac endings
], ids=["bom", "latin-1", "crlf", "cr"])
def test_spans_of_encoded_files_are_inspects(encoded, tmp_path, monkeypatch):
    """Lines are decoded and split as inspect reads them, whatever the file's encoding and line endings, and the class
    is found without inspect (which would parse the file and keep it in linecache)."""
    import importlib.util
    path = tmp_path / "encoded.py"
    path.write_bytes(encoded)
    spec = importlib.util.spec_from_file_location("encoded", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "encoded", mod)
    spec.loader.exec_module(mod)
    files = SourceFiles()
    klass, function = files.klass(mod.A), files.function(mod.A.f)
    assert str(path) not in linecache.cache
    lines, start = inspect.getsourcelines(mod.A)
    assert klass[1:] == (start, lines)
    assert function[1:] == tuple(reversed(inspect.getsourcelines(mod.A.f)))
    assert files.text(str(path), start, start + 2) == "".join(lines).rstrip("\n")
