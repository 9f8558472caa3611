"""Numbers the code computed in Python are printed as the code wrote them (√64, not 8), read from the file as it
is when the pass runs: a file edited between two passes in one process shows its new expression."""

import json

from atlas.cli import main

MODEL = '''import math
from torch import nn


class Scale(nn.Module):
    atlas_inputs = ("x:float32[B, 8]",)

    def forward(self, x):
        return x * math.sqrt({n})


def scale():
    return Scale()
'''


def _summary(capsys, path) -> str:
    assert main(["describe", f"{path}:scale", "--json", "--verify"]) == 0
    root = json.loads(capsys.readouterr().out)["components"][0]
    assert root["verification"]["verified"], root["verification"]
    return root["equations"]["summary"][0]["tex"]


def test_a_scalar_is_read_from_the_file_as_it_is_now(tmp_path, capsys):
    path = tmp_path / "scaled.py"
    path.write_text(MODEL.format(n=64))
    assert _summary(capsys, path) == r"y = x\,\sqrt{64}"
    path.write_text(MODEL.format(n=16))                     # same length, same lines: only the number moved
    assert _summary(capsys, path) == r"y = x\,\sqrt{16}"


def test_an_expression_across_lines_after_wider_characters(tmp_path, capsys):
    """The call's span counts columns in UTF-8 bytes; its text is read from those bytes, across lines."""
    path = tmp_path / "wide.py"
    path.write_text(MODEL.replace("return x * math.sqrt({n})", 'échelle = "√"; return (x *\n'
                                  "                                          math.sqrt({n}))").format(n=64),
                    encoding="utf-8")
    assert _summary(capsys, path) == r"y = x\,\sqrt{64}"
