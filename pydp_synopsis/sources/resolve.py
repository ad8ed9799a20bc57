"""What the builders read as a source: a :class:`~pydp_synopsis.sources.Source`, or a dask
collection wrapped in a :class:`~pydp_synopsis.sources.dask.DaskSource`; and what a source
says about its columns (their names and units), the one place a build's units come from
when the source carries them (docs/guide/units.md, "One place for units")."""
import copy
import dataclasses

from ..errors import ParameterError
from ..units import Column, needs_conversion
from .base import Source
from .dask import DaskSource

__all__ = ["is_source", "as_source", "carried_columns"]


def is_source(data):
    """Whether the builders read ``data`` as a :class:`Source` (a Source, or a dask
    Array, Series or DataFrame), not as an in-memory array."""
    return isinstance(data, Source) or (type(data).__module__ or "").startswith("dask")


def carried_columns(data):
    """Per axis, what a source says of its column: its :class:`~pydp_synopsis.units.Column`
    (the source's ``units=``, or a decimal of its ``scale=``), else its name (a str); None
    for an in-memory input and for a source that names no column (a query's columns are
    learnt when it runs).  Public things only: the source's arguments, never its data.

    >>> from pydp_synopsis import sources
    >>> carried_columns(sources.ArraySource([[1, 2]], names=["x"]))
    ['x']
    """
    if isinstance(data, Source):
        names = [str(c) for c in data.columns]
        units = getattr(data, "units", None)
        if units is not None:
            return [dataclasses.replace(col, name=name) if col.name is None else col
                    for col, name in zip(units, names)]
        scale = getattr(data, "scale", None)
        if scale is not None:
            return [Column.decimal(name, scale=scale) for name in names]
        return names or None
    if not is_source(data):
        return None
    cols = getattr(data, "columns", None)          # a dask DataFrame, Series or Array
    if cols is not None and type(data).__name__ == "DataFrame":
        return [str(c) for c in cols]
    name = getattr(data, "name", None)
    if type(data).__name__ == "Series" and name is not None:
        return [str(name)]
    return None


def _reads_units(source):
    """Whether ``source`` converts its columns by the ``units`` it is given (the file, SQL
    and dask sources); another Source reads its integers its own way."""
    return isinstance(source, Source) and "units" in vars(source)


def as_source(data, counts=None, dropna=False, described=None):
    """``data`` as a :class:`Source`, or None when it is an in-memory array.

    A Source is returned as is; a dask Array, Series or DataFrame becomes a
    :class:`~pydp_synopsis.sources.dask.DaskSource` (``dropna``: its rows
    with a missing value dropped, lazily on the cluster).  ``described``: the
    build's column descriptions (:func:`pydp_synopsis.units.prepare_build`,
    which checked them against :func:`carried_columns`); a source that
    carries no units of its own reads its values by them (a copy: the
    caller's source is not changed).

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
    if described is not None and _reads_units(data) and data.units is None \
            and getattr(data, "scale", None) is None and needs_conversion(described):
        data = copy.copy(data)
        data.units = tuple(described)
    return data
