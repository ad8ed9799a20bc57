"""The one module that touches the compiled C core.

Thin wrappers only: callers validate arguments in Python, call ``lib``,
then pass the returned status to :func:`check`, which turns it into the
matching exception.  Importing fails loudly when the extension is missing:
there is no pure-Python fallback.
"""
import types

from . import errors

try:
    from ._native import ffi, lib
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "pydp_synopsis: the compiled C core (pydp_synopsis._native) is missing. "
        "Install the package with 'pip install .' (needs a C compiler) instead of "
        "importing it from a source checkout."
    ) from exc

__all__ = ["ffi", "lib", "check", "strerror", "LIMITS"]

#: Limits of the C core (rational parameter parts stay below ``max_param``).
LIMITS = types.SimpleNamespace(max_param=1 << 62)

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
