"""The source protocol (stub)."""
from ..errors import ParameterError

__all__ = ["Source", "Prepared", "as_source"]


class Source:
    """A table read in chunks."""


class Prepared:
    """A checked source."""


def as_source(data, counts=None):
    """``data`` as a Source, or None for an in-memory array."""
    if isinstance(data, Source):
        if counts is not None:
            raise ParameterError("counts= is for arrays of values or points, not for a Source")
        return data
    return None
