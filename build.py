"""cffi out-of-line API-mode builder for ``pydp_synopsis._native``.

The C declarations Python sees live in one header, ``csrc/pydp_synopsis.h``,
which is fed verbatim to ``ffi.cdef()``; ``set_source`` only includes it.
Every ``csrc/*.c`` is compiled; ``csrc/internal.h`` and ``csrc/pds_limits.h``
are private to the C files.  Run through ``pip install .`` (setup.py
declares ``cffi_modules``).  Do not run ``python -m build`` from the repo
root: this file shadows pypa/build; use ``pip wheel . -w dist`` for wheels.
"""
import os
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"

# PDS_SANITIZE=1 builds with AddressSanitizer and UBSan for development
# (see .ci/sanitize); releases never set it.
SANITIZE = os.environ.get("PDS_SANITIZE") == "1"
SANITIZER_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                   "-fno-omit-frame-pointer", "-g"]

# PDS_TEST_MUTANTS=1 compiles the test-only mutants of csrc/mutation.c: the
# privacy harness (tests/privacy/mutants.py) builds such a copy in a scratch
# directory to show its detectors catch them.  Releases never set it, and
# without it the mutants do not exist in the binary.
MUTANTS = os.environ.get("PDS_TEST_MUTANTS") == "1"

ffibuilder = FFI()
ffibuilder.cdef((CSRC / "pydp_synopsis.h").read_text())
ffibuilder.set_source(
    "pydp_synopsis._native",
    '#include "pydp_synopsis.h"',
    sources=sorted(str(p.relative_to(HERE)) for p in CSRC.glob("*.c")),
    # the public header and the private ones (internal.h, pds_limits.h):
    # editing any of them rebuilds the extension
    depends=sorted(str(p.relative_to(HERE)) for p in CSRC.glob("*.h")),
    include_dirs=[str(CSRC.relative_to(HERE))],
    define_macros=[("PDS_TEST_MUTANTS", "1")] if MUTANTS else [],
    extra_compile_args=["-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"]
    + (SANITIZER_FLAGS if SANITIZE else []),
    extra_link_args=SANITIZER_FLAGS if SANITIZE else [],
    libraries=["m", "pthread"],   # pthread_once / pthread_atfork (rng.c's fork check)
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
