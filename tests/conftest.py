"""Shared pytest hooks.

The privacy harness's mutant detectors (tests/test_privacy_mutants.py) need a
separate build of the C core and run in a child process; when those tests
are collected, they start right after collection so that the child overlaps
the rest of the suite (tests/privacy/mutants.py).
"""


def pytest_collection_modifyitems(session, config, items):
    if any(getattr(getattr(item, "module", None), "__name__", "") == "test_privacy_mutants"
           for item in items):
        from privacy import mutants

        mutants.start_background()
