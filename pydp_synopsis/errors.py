"""Exception classes.

Every exception the package raises on purpose derives from
:class:`SynopsisError` *and* from the standard exception a caller would
expect (``ValueError`` for a bad value, ``OSError`` for the OS), so both
``except ps.SynopsisError`` and ``except ValueError`` work.
"""

__all__ = [
    "SynopsisError",
    "ParameterError",
    "DomainError",
    "HorizonError",
    "FormatError",
    "BudgetError",
    "EntropyError",
    "NativeError",
    "InputError",
    "UsageError",
    "QueryClippedWarning",
]


class SynopsisError(Exception):
    """Base class of every error raised by pydp_synopsis."""


class ParameterError(SynopsisError, ValueError):
    """A privacy or structural parameter (epsilon, beta, k, ...) is out of range."""


class DomainError(SynopsisError, ValueError):
    """A value, domain or query lies outside the allowed integer range."""


class HorizonError(SynopsisError, ValueError):
    """A stream was fed past its horizon (or a partition past its size)."""


class FormatError(SynopsisError, ValueError):
    """A saved synopsis or checkpoint is truncated, edited or of an unknown version."""


class BudgetError(SynopsisError, ValueError):
    """A privacy budget would be overspent."""


class EntropyError(SynopsisError, OSError):
    """The operating system could not supply random bytes."""


class NativeError(SynopsisError, RuntimeError):
    """The C core reported a failure that is not the caller's fault."""


class InputError(DomainError):
    """An input table is missing, unreadable, or holds values that are not numbers."""


class UsageError(SynopsisError, ValueError):
    """The command line is wrong (the ``pydp-synopsis`` command exits with status 2)."""


class QueryClippedWarning(UserWarning):
    """Some queries reached outside the synopsis's domain: each was answered over its part
    inside the domain (a query wholly outside is answered 0, with a zero-width error bar).

    The synopses' ``clipped_queries(lo, hi)`` says which ones (docs/guide/units.md,
    "Queries outside the domain").  Attributes: ``clipped`` (how many queries were
    clipped), ``outside`` (how many of them hold no point of the domain), ``total``
    (queries asked) and ``domain`` (the domain as text, in the synopsis's units)."""

    def __init__(self, message, *, clipped=0, outside=0, total=0, domain=""):
        super().__init__(message)
        self.clipped, self.outside, self.total, self.domain = clipped, outside, total, domain
