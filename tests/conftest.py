"""Shared pytest hooks.

Tiers: a test that uses the ``postgres`` fixture (a throwaway PostgreSQL
cluster, tests/pg_cluster.py) is marked ``integration`` here, wherever it is.

The privacy harness's mutant detectors (tests/privacy/test_mutants.py) need a
separate build of the C core and run in a child process; when those tests
are collected, they start right after collection so that the child overlaps
the rest of the suite (tests/privacy/mutants.py).
"""
import pytest


@pytest.hookimpl(tryfirst=True)     # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if "postgres" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(trylast=True)      # the final items, after -m: a deselected harness starts nothing
def pytest_collection_finish(session):
    items = session.items
    if any(getattr(getattr(item, "module", None), "__name__", "") == "privacy.test_mutants"
           for item in items):
        from privacy import mutants

        mutants.start_background()
