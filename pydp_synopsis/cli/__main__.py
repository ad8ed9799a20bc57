"""``python -m pydp_synopsis.cli``: the ``pydp-synopsis`` command."""
import sys

from . import main

sys.exit(main())
