"""The one module that touches the compiled C core.

Thin wrappers only: callers validate arguments in Python, call ``lib``,
then pass the returned status to :func:`check`, which turns it into the
matching exception.  Importing fails loudly when the extension is missing:
there is no pure-Python fallback.
"""
import dataclasses

from . import errors

try:
    from ._native import ffi, lib
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "pydp_synopsis: the compiled C core (pydp_synopsis._native) is missing. "
        "Install the package with 'pip install .' (needs a C compiler) instead of "
        "importing it from a source checkout."
    ) from exc

__all__ = ["ffi", "lib", "check", "strerror", "LIMITS", "u64", "i64", "f64"]

_EXCEPTIONS = {
    lib.PDS_EINVAL: errors.ParameterError,
    lib.PDS_EENTROPY: errors.EntropyError,
    lib.PDS_ERANGE: errors.DomainError,
    lib.PDS_EHORIZON: errors.HorizonError,
    lib.PDS_ESTATE: errors.FormatError,
    lib.PDS_EPRECISION: errors.NativeError,
}


def strerror(status):
    """The C core's message for a status code."""
    return ffi.string(lib.pds_strerror(status)).decode()


def check(status, what=""):
    """Raise the exception matching a non-zero C status.

    Parameters
    ----------
    status : int
        Value returned by a ``pds_*`` function.
    what : str
        Context for the message (which operation failed).
    """
    if status == lib.PDS_OK:
        return
    if status == lib.PDS_ENOMEM:
        raise MemoryError(f"{what}: {strerror(status)}" if what else strerror(status))
    cls = _EXCEPTIONS.get(status, errors.NativeError)
    msg = strerror(status)
    raise cls(f"{what}: {msg}" if what else msg)


def _read_limits():
    """The C kernels' limits (``pds_get_limits``), as a frozen dataclass.

    One field per member of ``struct pds_limits`` (csrc/pydp_synopsis.h),
    each a Python int: ``max_*`` are inclusive maxima, ``*_limit`` exclusive
    bounds.  Python validation reads these rather than retyping the numbers.
    """
    out = ffi.new("pds_limits *")
    check(lib.pds_get_limits(out), "limits")
    names = [name for name, _ in ffi.typeof("pds_limits").fields]
    cls = dataclasses.make_dataclass("Limits", names, frozen=True)
    cls.__module__ = __name__
    cls.__doc__ = "The C core's limits (read-only); see csrc/pds_limits.h."
    return cls(**{name: int(getattr(out, name)) for name in names})


#: The C core's limits, read once at import (read-only: a frozen dataclass).
LIMITS = _read_limits()


def u64(a):
    """A ``uint64_t *`` view of a C-contiguous uint64 array (no copy)."""
    return ffi.from_buffer("uint64_t[]", a)


def i64(a):
    """An ``int64_t *`` view of a C-contiguous int64 array (no copy)."""
    return ffi.from_buffer("int64_t[]", a)


def f64(a):
    """A ``double *`` view of a C-contiguous float64 array (no copy)."""
    return ffi.from_buffer("double[]", a)
