"""Run the docstring examples of every public module (they are documentation users copy)."""
import doctest
import importlib
import pkgutil

import pytest

import pydp_synopsis

MODULES = sorted(m.name for m in pkgutil.iter_modules(pydp_synopsis.__path__) if not m.name.startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(f"pydp_synopsis.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
