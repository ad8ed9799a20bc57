"""The benchmarks' tests (the ``bench`` tier) read real data only from the repository.

``$PYDP_SYNOPSIS_DATA`` points at ``tests/data/``: a 30,000-row sample of the
flights (``tests/data/README.md``); the ZIP codes come from the package.
Every test collected here is marked ``bench``.
"""
from pathlib import Path

import pytest

import pydp_synopsis  # noqa: F401  -- the installed package, before a script puts the checkout on sys.path
from tiers import mark_directory, sample_data  # noqa: F401  -- an autouse fixture


@pytest.hookimpl(tryfirst=True)     # before -m deselects
def pytest_collection_modifyitems(config, items):
    mark_directory(items, Path(__file__).parent, pytest.mark.bench)
