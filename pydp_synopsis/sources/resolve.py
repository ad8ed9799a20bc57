"""What the builders read as a source: a :class:`~pydp_synopsis.sources.Source`, or a dask
collection wrapped in a :class:`~pydp_synopsis.sources.dask.DaskSource`."""
from ..errors import ParameterError
from .base import Source
from .dask import DaskSource

__all__ = ["is_source", "as_source"]


def is_source(data):
    """Whether the builders read ``data`` as a :class:`Source` (a Source, or a dask
    Array, Series or DataFrame), not as an in-memory array."""
    return isinstance(data, Source) or (type(data).__module__ or "").startswith("dask")


def as_source(data, counts=None, dropna=False):
    """``data`` as a :class:`Source`, or None when it is an in-memory array.

    A Source is returned as is; a dask Array, Series or DataFrame becomes a
    :class:`~pydp_synopsis.sources.dask.DaskSource` (``dropna``: its rows
    with a missing value dropped, lazily on the cluster).

    Raises
    ------
    ParameterError
        ``counts`` given with a Source (a source carries its own rows).
    """
    if not isinstance(data, Source):
        if not is_source(data):
            return None
        data = DaskSource(data, dropna=True) if dropna else DaskSource(data)
    if counts is not None:
        raise ParameterError("counts= weighs the rows of an array; a Source is read as it is "
                             "(aggregate it with counts= of an ArraySource)")
    return data
