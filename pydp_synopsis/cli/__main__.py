"""``python -m pydp_synopsis.cli``: the ``pydp-synopsis`` command."""
import sys

from . import main

__all__ = []

if __name__ == "__main__":          # importing the module (tests list every module) runs nothing
    sys.exit(main())
