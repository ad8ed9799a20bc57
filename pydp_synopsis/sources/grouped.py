"""Category columns of a database: their distinct values counted by the database.

A category column (:meth:`pydp_synopsis.columns.Column.category`) is text (or
integers) mapped to the codes of public levels, a per-row map done here, not
by the database.  Streaming the column row by row to map it moves every row
across the connection; the **grouped** read moves only the distinct values:

1. ``SELECT c1, ..., ck, count(*) FROM rel GROUP BY 1, ..., k`` streamed in
   chunks (the engines' row cursors: a server-side cursor in PostgreSQL,
   Arrow record batches in DuckDB, ``fetchmany`` in SQLite), read-only as
   every statement of :mod:`pydp_synopsis.sources.sql`;
2. each chunk of distinct tuples converted by the columns' units exactly as
   the streamed rows are (:func:`~pydp_synopsis.units.convert_chunk`: the
   vectorised level mapping, ``other=`` or the one-line refusal naming the
   column and the number of levels, the missing-value rule for NULLs), then
   aggregated per axis with the counts as weights;
3. for rectangles, the converted tuples and their counts are spilled (0600,
   in a private directory) and the cell counts read from the spill: no row
   crosses the connection a second time.

A tuple of values standing for ``n`` rows maps to the same codes as each of
those rows, so the per-axis aggregates and the cells are those of the
streamed rows and the same seed gives the same synopsis.

``plan="auto"`` groups when the first :data:`~pydp_synopsis.sources.plans.SAMPLE_ROWS`
rows hold few distinct tuples (:func:`~pydp_synopsis.sources.plans.prefers_sort`
says when not: a category crossed with a timestamp has about as many tuples
as rows, and the rows are then streamed as before); ``"group"`` always groups,
``"sort"`` never does.  Like the build's time, that choice depends on the data
and is not protected (docs/security-timing.md); the release is.
"""
import os
import shutil

import numpy as np

from ..aggregates import Cells, SegmentIndex, SortedAggregator
from ..errors import InputError
from ..spill import create, private_directory, read_array, write_array
from ..units import convert_chunk, missing_message
from .base import CHUNK_ROWS, Prepared, column_offsets, prefetch
from .engines import Null, quote_identifier
from .plans import SAMPLE_ROWS, prefers_sort, run_entries

__all__ = ["groups_categories", "GroupedPrepared"]


def _tuple_sample_query(cols, relation):
    """One query: the rows and distinct tuples among the first SAMPLE_ROWS rows."""
    listed = ", ".join(cols)
    return (f"SELECT count(*), sum(pydp_n) FROM (SELECT count(*) AS pydp_n FROM "
            f"(SELECT {listed} FROM {relation} LIMIT {SAMPLE_ROWS}) AS pydp_sample "
            f"GROUP BY {listed}) AS pydp_groups")


def groups_categories(source, engine):
    """True when ``source`` (a prepared :class:`~pydp_synopsis.sources.sql.SqlSource`
    whose ``units`` hold a category column) is read grouped by its distinct tuples."""
    units = source.units
    if units is None or not any(col.kind == "category" for col in units):
        return False
    plan = source._options.get("plan", "auto")
    if plan != "auto":
        return plan == "group"
    cols = [quote_identifier(c) for c in source.columns]
    try:
        groups, rows = engine.one_row(_tuple_sample_query(cols, source._relation))
    except engine.errors as exc:
        raise engine.failed(exc, "sampling the columns") from None
    return not prefers_sort(rows or 0, groups or 0)


class GroupedPrepared(Prepared):
    """The distinct tuples of a source's columns with their counts, from the database."""

    def __init__(self, source, engine, domains, progress=None, clip=False):
        self._source, self._engine, self._domains = source, engine, tuple(domains)
        self._tmp, self._aggs = None, []
        width = len(self._domains)
        bounds = self._domains if clip else None
        cols = [quote_identifier(c) for c in source.columns]
        keys = ", ".join(str(j + 1) for j in range(width))
        sql = f"SELECT {', '.join(cols)}, count(*) FROM {source._relation} GROUP BY {keys}"
        try:       # from here on, any exit removes the spill directory
            self._tmp = private_directory("pydp-grouped-",
                                          source._options.get("temp_directory"))
            entries = run_entries(source._options.get("budget", 1 << 30))
            self._aggs = [SortedAggregator(entries, directory=self._tmp) for _ in range(width)]
            # one file of offsets per axis and one of counts: the cells' pass reads them
            self._paths = [os.path.join(self._tmp, f"axis{a}.u64") for a in range(width)]
            self._counts = os.path.join(self._tmp, "counts.i64")
            rows = 0
            files = [create(p) for p in self._paths + [self._counts]]
            try:
                for offsets, counts in prefetch(self._groups(sql, width, bounds)):
                    for a in range(width):
                        self._aggs[a].add(offsets[a], counts)
                        write_array(files[a], offsets[a], self._paths[a])
                    write_array(files[width], counts, self._counts)
                    rows += int(counts.sum(dtype=np.int64))
                    if progress is not None:
                        progress(rows)
            finally:
                for fh in files:
                    fh.close()
            self.rows = rows
        except BaseException:
            self.close()
            raise

    def _groups(self, sql, width, bounds):
        """Chunks ``(offsets per axis, counts)`` of the converted distinct tuples."""
        source, engine = self._source, self._engine
        try:
            for chunk in engine.row_chunks(sql, width + 1, source.chunk_rows):
                counts = np.ascontiguousarray(chunk[width], dtype=np.int64)
                ints, _ = convert_chunk(chunk[:width], source.units, source.columns,
                                        where=f"{source.shown}: ", clip=bounds)
                yield ([column_offsets(x, d, name, bounds is not None) for x, d, name in
                        zip(ints, self._domains, source.columns)], counts)
        except Null as null:
            raise InputError(missing_message(f"{source.shown}: ", source.columns[null.index])) \
                from None
        except engine.errors as exc:
            raise engine.failed(exc, "counting the distinct values") from None

    def axis(self, a):
        return prefetch(self._aggs[a].chunks())

    def cells(self, ends):
        index = [SegmentIndex(e) for e in ends]
        paths, counts = self._paths, self._counts

        def chunks():
            handles = [open(p, "rb") for p in paths + [counts]]
            try:
                while True:
                    cols = [read_array(fh, np.uint64, CHUNK_ROWS, p)
                            for fh, p in zip(handles[:-1], paths)]
                    weights = read_array(handles[-1], np.int64, CHUNK_ROWS, counts)
                    if weights.size == 0:
                        return
                    seg = np.empty((weights.size, len(paths)), dtype=np.uint32)
                    for a, (ix, col) in enumerate(zip(index, cols)):
                        seg[:, a] = ix.of(col)
                    yield seg, weights
            finally:
                for fh in handles:
                    fh.close()

        return Cells(chunks)

    def close(self):
        for agg in self._aggs:
            agg.close()
        self._aggs = []
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self._engine.close()
