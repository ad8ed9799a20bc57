"""The research tier: explorations measured and not adopted (docs/research.md).

Opt-in: ``pytest research`` (``testpaths`` holds only ``tests``).  Every test
here is marked ``research``; real data come from the repository only
(``$PYDP_SYNOPSIS_DATA`` points at the 30,000-row flights sample in tests/data).
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import pydp_synopsis  # noqa: F401,E402  -- the installed package, before a script puts the checkout on sys.path
from tiers import mark_directory, sample_data  # noqa: F401,E402  -- an autouse fixture

__all__ = []


@pytest.hookimpl(tryfirst=True)     # before -m deselects
def pytest_collection_modifyitems(config, items):
    mark_directory(items, Path(__file__).parent, pytest.mark.research)
