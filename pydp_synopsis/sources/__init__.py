"""Streaming sources: files, databases and clusters, read with memory independent of their length.

A :class:`Source` is passed to the builders in place of an array::

    src = ps.sources.files("sales/*.parquet", ["minute"])
    syn = ps.IntervalSynopsis.build(src, domain=(0, 262079), epsilon=1)

    src = ps.sources.SqlSource("postgresql://me@db/sales", ["x", "y"], table="orders")
    rect = ps.RectangleSynopsis.build(src, domain=[(0, 999)] * 2, epsilon=1)

Sources: :func:`files` (CSV, Parquet, ``.npy``, ``.npz``; a file, a glob or
a directory; pyarrow's streaming readers, or DuckDB with
``engine="duckdb"``), :class:`SqlSource` (SQLite, DuckDB, PostgreSQL, with
the aggregation pushed into the database), :class:`ArraySource` (arrays in
memory, in chunks) and :class:`~pydp_synopsis.sources.dask.DaskSource`
(dask collections; the builders also take them directly).  The protocol is
in :mod:`pydp_synopsis.sources.base`.

What is public: the domain (given by the caller, never read from the data)
and, on a cluster, the shard cut points (:mod:`pydp_synopsis.sources.dask`).
The number of rows is *not* released; messages about the data name a file,
a column or a row, never a value.
"""
from .base import ArraySource, Prepared, Source
from .files import expand_paths, files
from .resolve import as_source, carried_columns, is_source
from .sql import SqlSource, parse_database, quote_identifier

__all__ = ["Source", "Prepared", "ArraySource", "SqlSource", "is_source", "as_source", "carried_columns", "files",
           "expand_paths", "parse_database", "quote_identifier"]
