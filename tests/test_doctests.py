"""Run the docstring examples of every public module (they are documentation users copy)."""
import doctest
import importlib
import pkgutil

import pytest

import pydp_synopsis

# every public module, including those of subpackages (pydp_synopsis.rectangles.*)
MODULES = sorted(m.name for m in pkgutil.walk_packages(pydp_synopsis.__path__, prefix="pydp_synopsis.")
                 if not any(part.startswith("_") for part in m.name.split(".")[1:]))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
