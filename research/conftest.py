"""The research tier: explorations measured and not adopted (docs/research.md).

Opt-in: ``pytest research`` (``testpaths`` holds only ``tests``).  Every test
here is marked ``research``; real data come from the repository only
(``$PYDP_SYNOPSIS_DATA`` points at the 30,000-row flights sample in tests/data).
"""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pydp_synopsis  # noqa: F401,E402  -- the installed package, before a script puts the checkout on sys.path
from workloads import DATA_ENV  # noqa: E402

__all__ = []


@pytest.hookimpl(tryfirst=True)     # before -m deselects
def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.research)


@pytest.fixture(autouse=True)
def _sample_data(monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(ROOT / "tests" / "data"))
