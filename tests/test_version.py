"""One version number: pyproject's, ``ps.__version__`` and the CHANGELOG's newest release."""
import re
from pathlib import Path

import pydp_synopsis as ps

ROOT = Path(__file__).resolve().parents[1]


def test_version_matches_pyproject():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (version,) = re.findall(r'^version = "([^"]+)"$', text, flags=re.M)
    assert ps.__version__ == version


def test_changelog_has_the_version_below_unreleased():
    heads = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.M)
    assert heads[:2] == ["Unreleased", ps.__version__]
