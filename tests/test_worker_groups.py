"""`make test` runs the suite on two xdist workers with --dist loadgroup; conftest puts the tests that share a
module-scoped fixture in one group, so that the fixture (a Chromium, a documented model) is made once."""

import pytest


@pytest.fixture(scope="module")
def shared():
    return object()


def test_tests_sharing_a_module_fixture_are_sent_to_one_worker(request, shared):
    """xdist sends a group to one worker by the suffix it appends to each grouped test's node id. pytest-xdist 3.8
    appends it through an attribute pytest 9 no longer reads: there every test was its own group, and each worker
    made its own Chromium and documented the same models again (constraints.txt keeps pytest 8). This test shares
    a module fixture too: it is checked with the others."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run by xdist with --dist loadgroup (make test does)")
    grouped = [item for item in request.session.items if item.get_closest_marker("xdist_group")]
    assert request.node in grouped
    assert [item.nodeid for item in grouped if not item.nodeid.endswith("@" + item.module.__name__)] == []
