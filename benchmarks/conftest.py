"""The benchmarks' tests (the ``bench`` tier) read real data only from the repository.

``$PYDP_SYNOPSIS_DATA`` points at ``tests/data/``: a 30,000-row sample of the
flights (``tests/data/README.md``); the ZIP codes come from the package.
Every test collected here is marked ``bench``.
"""
from pathlib import Path

import pytest

import pydp_synopsis  # noqa: F401  -- the installed package, before a script puts the checkout on sys.path
from workloads import DATA_ENV

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data"


@pytest.hookimpl(tryfirst=True)     # before -m deselects
def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.bench)


@pytest.fixture(autouse=True)
def _sample_data(monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(SAMPLE))
