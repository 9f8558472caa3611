"""Derived programs of small fixture models against their reviewed snapshots (tests/golden/*.txt)."""

from golden import check


def test_programs_match_their_snapshots():
    diffs = check()
    assert not diffs, ("derived programs moved; review and run `.venv/bin/python tests/golden.py --update`:\n"
                       + "\n".join(diffs))
