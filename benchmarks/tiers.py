"""The opt-in test tiers outside ``tests/``: ``benchmarks/`` (``bench``) and
``research/`` (``research``) mark every test they collect and read real data
only from the repository (docs/development.md, "Test tiers")."""
from pathlib import Path

import pytest

from workloads import DATA_ENV

__all__ = ["SAMPLE", "mark_directory", "sample_data"]

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data"


def mark_directory(items, directory, marker):
    """Add ``marker`` to every collected item whose file lies under ``directory``."""
    here = Path(directory).resolve()
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(marker)


@pytest.fixture(autouse=True)
def sample_data(monkeypatch):
    """``$PYDP_SYNOPSIS_DATA`` points at the 30,000-row flights sample in tests/data."""
    monkeypatch.setenv(DATA_ENV, str(SAMPLE))
