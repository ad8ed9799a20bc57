"""``python -m pydp_synopsis.cli``: the ``pydp-synopsis`` command."""
import sys

from . import main

__all__ = []

if __name__ == "__main__":      # importing this module (tests walk the package) runs nothing
    sys.exit(main())
