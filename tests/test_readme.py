"""The README's Python examples run as written (in order, in one namespace)."""
import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(blocks()) >= 6


def test_readme_examples_run(tmp_path):
    namespace = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)  # examples save files
    try:
        for i, code in enumerate(blocks()):
            try:
                exec(compile(code, f"README block {i}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message is the point
                pytest.fail(f"README python block {i} failed: {exc!r}\n{code}")
    finally:
        os.chdir(cwd)
