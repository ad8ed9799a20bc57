"""The source protocol: how a synopsis reads a table it cannot hold in memory.

A synopsis needs two things of its data (DNRR Remark 2.2 and section 3):

1. per axis, the sorted distinct values with their counts -- the private
   partition reads nothing else;
2. for rectangles, once the partitions are released, how many rows fall in
   each partition cell (the tuple of a row's segment per axis) -- the noisy
   structures read nothing else.

A :class:`Source` delivers both in chunks.  :meth:`Source.prepare` reads and
checks the data *before* anything is released (no budget is charged and no
noise drawn until every value is known to be an integer inside the domain):
a row source reads everything once into per-axis
:class:`~pydp_synopsis.aggregates.SortedAggregator` runs; a database checks
types, NULLs and the minimum and maximum with one query and aggregates later.
The :class:`Prepared` result then streams the aggregates
(:meth:`Prepared.axis`) and the cell counts (:meth:`Prepared.cells`).
Memory is O(chunk + distinct values held per run + segments), never O(rows).

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015, Remark 2.2 (the offline partition from sorted counts),
   section 3.3 (the rectangle structures count points per cell).
"""
import contextlib
import os
import queue
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..aggregates import Cells, SegmentIndex, SortedAggregator, aggregate, check_counts
from ..errors import InputError, ParameterError
from ..params import as_offsets
from ..spill import create, private_directory, read_array, write_array

__all__ = ["CHUNK_ROWS", "Source", "Prepared", "RowSource", "ArraySource", "RowPrepared",
           "column_offsets",
           "spilled_cells", "replayed_cells", "prefetch", "report", "reported_merge"]

#: Rows per chunk read from a source (about 8 MB per int64 column).
CHUNK_ROWS = 1 << 20


class Source:
    """A table of ``c`` integer columns, read in chunks.

    Subclasses implement :meth:`prepare`; the synopses call nothing else.

    Attributes
    ----------
    columns : tuple of str
        Column names, in axis order (used in messages, never a value).
    """

    columns = ()

    def __repr__(self):
        # where the rows come from and which columns, never how many rows
        where = self._describe_origin()
        return f"{type(self).__name__}({where + ', ' if where else ''}columns={list(self.columns)!r})"

    def _describe_origin(self):
        """A short public description of where the rows come from ('' when in memory)."""
        paths = getattr(self, "paths", None)
        if paths:
            more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
            return f"{str(paths[0])!r}{more}"
        shown = getattr(self, "shown", None)
        if shown:
            table = getattr(self, "table", None)
            return f"{shown!r}" + (f", table={table!r}" if table else "")
        return ""

    @property
    def dims(self):
        """Number of columns c (axes of the synopsis)."""
        return len(self.columns)

    def check_dims(self, domains):
        """ParameterError unless one domain pair is given per column."""
        if len(domains) != self.dims:
            raise ParameterError(f"the domain has {len(domains)} (lo, hi) pairs for a source of "
                                 f"{self.dims} column(s) ({', '.join(self.columns)})")

    def prepare(self, domains, progress=None, clip=False):
        """Read and check the data against ``domains``; release nothing.

        Parameters
        ----------
        domains : sequence of (int, int)
            Checked inclusive bounds, one pair per column.
        progress : callable, optional
            Called with the number of rows read so far.  An object with a
            ``step(phase, done, total, unit)`` method also hears every pass
            (:func:`report`).
        clip : bool
            Clip every value to its column's domain (a value beyond int64
            when converted included) instead of refusing one outside it: a
            per-row map, so the release stays epsilon-DP (the builders'
            ``clip=``).

        Returns
        -------
        Prepared

        Raises
        ------
        InputError
            A missing column, a non-integer or NULL value, a value outside
            its column's domain (the message names the column, never a value),
            or an unreachable database.
        """
        raise NotImplementedError


class Prepared:
    """A source whose data are known to be valid: the streams a synopsis reads.

    Attributes
    ----------
    rows : int
        The number of rows (items) of the source.
    """

    rows = 0

    def axis(self, a):
        """Axis ``a``'s sorted ``(offsets, counts)`` chunks: uint64 offsets from the
        axis's ``lo``, strictly increasing across chunks, int64 counts > 0."""
        raise NotImplementedError

    #: None, or, for data held on a cluster, a method ``map_shards(a, shards, function,
    #: arguments)`` that returns ``[function(aggregate_i, *arguments[i]) for each shard i]``
    #: computed where the data are (``aggregate_i``: the merged sorted ``(offsets, counts)``
    #: of axis a in public shard i).  A source reads data and never runs a mechanism:
    #: :func:`~pydp_synopsis.partitions.runner.partition_source_axis` decides what runs.
    map_shards = None

    def cells(self, ends):
        """The rows' partition cells, as :class:`~pydp_synopsis.aggregates.Cells`.

        ``ends`` holds, per axis, the released segment ends (uint64 offsets);
        a row's cell is its segment per axis (``searchsorted(ends, offset,
        'left')``).  Re-iterable: structures may read it more than once.
        """
        raise NotImplementedError

    def close(self):
        """Release temporary files and connections."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ------------------------------------------------------------ row sources

class RowSource(Source):
    """A source read as chunks of rows in Python (files, arrays, a SQL row stream).

    Subclasses implement :meth:`chunks`: an iterator of lists of c integer
    columns (numpy arrays of equal length, values already exact integers).
    """

    #: directory for spilled runs (None: the system's temporary directory)
    spill_directory = None
    #: entries kept in memory per axis before a sorted run is spilled
    memory_entries = 1 << 23
    #: Spill the checked offsets (8 bytes per value) during the first pass, so
    #: that the cells are computed from the spill instead of a second read:
    #: for sources that are slow to parse (CSV) rather than slow to store.
    spill_offsets = False

    #: set by :meth:`prepare`: per column, the bounds values are clipped to while they
    #: are converted (None: refused when out of the domain)
    _clip_bounds = None

    def chunks(self):
        """Iterate over the rows: lists of c integer arrays (one per column)."""
        raise NotImplementedError

    def clip_bounds(self, a):
        """Column a's bounds for :func:`~pydp_synopsis.inputs.to_fixed_point` (None: no clip)."""
        return None if self._clip_bounds is None else self._clip_bounds[a]

    def prepare(self, domains, progress=None, clip=False):
        self.check_dims(domains)
        self._clip_bounds = tuple(domains) if clip else None
        return RowPrepared(self, domains, progress, clip)


def report(progress, phase, done=None, total=None, unit="rows"):
    """Tell ``progress`` where a pass stands, if it listens.

    ``progress.step(phase, done, total, unit)`` is called when ``progress`` has
    such a method (the CLI's progress line, :mod:`pydp_synopsis.cli.progress`):
    ``phase`` names the pass (``"reading column 'x'"``, ``"counting cells"``),
    ``done`` how many ``unit`` (rows, distinct values, cells) it has processed
    so far (None at its start), ``total`` how many it will when known.  Those numbers are
    data: they are for the data owner's own terminal only, never for a log or
    a released output (docs/security-messages.md).  A plain callable hears
    only the rows read by :meth:`Source.prepare`; None hears nothing.  No
    library code prints.
    """
    step = getattr(progress, "step", None)
    if step is not None:
        step(phase, done, total, unit)


def reported_merge(chunks, progress, name):
    """The sorted ``(offsets, counts)`` chunks of column ``name``, each reported to
    ``progress`` as the distinct values merged so far (:func:`report`)."""
    merged = 0
    for chunk in chunks:
        merged += len(chunk[0])
        report(progress, f"merging the runs of column {name!r}", merged, unit="distinct values")
        yield chunk


def column_offsets(col, domain, name, clip=False):
    """Offsets of one column chunk; the message names the column, never a value."""
    return as_offsets(np.asarray(col).ravel(), domain, f"column {name!r}", clip=clip)


def prefetch(iterator, depth=2):
    """``iterator``'s items, computed ``depth`` ahead in a background thread.

    The streams of a build are numpy and C calls that release the GIL: the
    next chunk (a merge of sorted runs, a database fetch) is made while the
    partition kernel consumes the current one, on a second core.
    Exceptions reach the consumer; a consumer that stops early stops the
    thread at its next item.
    """
    items, stop, done = queue.Queue(maxsize=depth), threading.Event(), object()
    began = threading.Event()

    def offer(entry):
        """Put ``entry`` unless the consumer has gone (then never block)."""
        while not stop.is_set():
            try:
                items.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        began.set()
        if stop.is_set():             # the consumer left before this thread ran
            return
        try:
            for item in iterator:
                if not offer((True, item)):
                    return
            offer((True, done))
        except BaseException as exc:   # handed to the consumer
            offer((False, exc))

    thread = threading.Thread(target=produce, daemon=True)
    try:
        # inside the try: a signal's exception raised while start() waits for the thread
        # still stops and joins it (else it would read from a connection being closed)
        thread.start()
        while True:
            ok, item = items.get()
            if not ok:
                raise item
            if item is done:
                return
            yield item
    finally:
        stop.set()
        _join(thread, began)


def _join(thread, began):
    """Join ``thread``, also when its start() was interrupted before it was known to run."""
    try:
        thread.join()
    except RuntimeError:      # start() interrupted: the thread may be starting, or never be
        if began.wait(timeout=5.0):
            thread.join()


class _AxisWorkers:
    """One thread per axis (at most one per core): numpy sorts and C lookups release the
    GIL, so the c columns of a chunk are processed in parallel.  Each axis's state is
    touched by its own task only."""

    def __init__(self, c):
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(c, os.cpu_count() or 1)))

    def map(self, fn, *iterables):
        return list(self._pool.map(fn, *iterables))

    def close(self):
        self._pool.shutdown(wait=True)


class RowPrepared(Prepared):
    """Pass 1 of a row source: every row read and checked, per-axis aggregates spilled."""

    def __init__(self, source, domains, progress, clip=False):
        self._source, self._domains, self._clip = source, tuple(domains), clip
        self._progress = progress
        self._tmp, self._aggs, workers = None, [], None
        # one spill file per axis, written by that axis's worker
        self._offsets = None
        try:     # from here on, any exit (a signal too) removes the spill directory
            self._tmp = private_directory("pydp-source-", source.spill_directory)
            self._aggs = [SortedAggregator(source.memory_entries, directory=self._tmp)
                          for _ in domains]
            workers = _AxisWorkers(len(domains))
            if source.spill_offsets:
                self._offsets = [os.path.join(self._tmp, f"offsets{a}.u64")
                                 for a in range(len(domains))]

            def add(agg, col, dom, name, spill, path):
                offsets = column_offsets(col, dom, name, clip)
                agg.add(offsets)
                if spill is not None:
                    write_array(spill, offsets, path)

            with contextlib.ExitStack() as files:
                paths = self._offsets or [None] * len(self._domains)
                spills = [files.enter_context(create(path)) if path else None for path in paths]
                rows = 0
                # reading the next chunk overlaps sorting this one (both release the GIL)
                for cols in prefetch(iter(source.chunks())):
                    workers.map(add, self._aggs, cols, self._domains, source.columns, spills,
                                paths)
                    rows += len(cols[0]) if cols else 0
                    if progress is not None:
                        progress(rows)
                        report(progress, "reading rows", rows)
            self.rows = rows
        except BaseException:
            if workers is not None:      # no task may write once the directory is removed
                workers.close()
                workers = None
            self.close()
            raise
        finally:
            if workers is not None:
                workers.close()

    def axis(self, a):
        return prefetch(reported_merge(self._aggs[a].chunks(), self._progress,
                                       self._source.columns[a]))

    def cells(self, ends):
        if self._offsets is not None:       # checked offsets, read back: no second parse
            paths = self._offsets

            def chunks():
                handles = [open(path, "rb") for path in paths]
                try:
                    while True:
                        cols = [read_array(fh, np.uint64, CHUNK_ROWS, path)
                                for fh, path in zip(handles, paths)]
                        if cols[0].size == 0:
                            return
                        yield cols
                finally:
                    for fh in handles:
                        fh.close()

            return spilled_cells(self._tmp, chunks, ends, None, self._source.columns,
                                 self.rows, progress=self._progress)
        return spilled_cells(self._tmp, self._source.chunks, ends, self._domains,
                             self._source.columns, self.rows, self._clip, self._progress)

    def close(self):
        for agg in self._aggs:
            agg.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def spilled_cells(directory, chunks, ends, domains, names, rows, clip=False, progress=None):
    """Cells of rows streamed by ``chunks()`` (lists of c integer columns; with
    ``domains`` None, columns of checked uint64 offsets).

    The first pass maps each row to its segment per axis and spills the
    segments (uint32, c per row) to ``directory`` as it goes, so further
    passes read the spill instead of the source; a first pass that sees a
    number of rows other than ``rows`` raises InputError (the source changed).
    ``clip``: values are clipped to ``domains`` (as :meth:`Source.prepare`).
    ``progress`` hears the rows of each pass (:func:`report`).

    Memory is O(chunk) whatever the rows: a chunk's segments go to the spill
    as they are made (``4 c`` bytes per row on disk), and the passes over the
    spill read :data:`CHUNK_ROWS` rows at a time.
    """
    path = os.path.join(directory, f"cells{len(os.listdir(directory))}.u32")
    c = len(ends)
    index = [SegmentIndex(e) for e in ends]
    done = []

    def first_pass():
        seen, workers = 0, _AxisWorkers(c)
        try:
            with create(path) as out:
                for cols in prefetch(iter(chunks())):
                    seg = np.empty((len(cols[0]), c), dtype=np.uint32)
                    workers.map(_fill_segments, [seg] * c, range(c), index, cols,
                                domains or [None] * c, names, [clip] * c)
                    write_array(out, seg, path)
                    seen += seg.shape[0]
                    report(progress, "counting cells", seen, rows)
                    yield seg, None
        finally:
            workers.close()
        if seen != rows:
            # not the two numbers: the number of rows is data
            raise InputError("the input changed while it was read (a different number of "
                             "rows the second time): nothing was written")
        done.append(True)

    return Cells(lambda: _read_cells(path, c, progress, rows) if done else first_pass())


def replayed_cells(directory, chunks, c, progress=None):
    """Cells counted elsewhere (``chunks()`` yields ``(segments, weights)``: a database's
    ``GROUP BY`` cell), read once: the first pass spills them to ``directory``
    (``4 c + 8`` bytes per cell) and the structure's further passes read the spill, so the
    database runs the query once.  ``progress`` hears the cells of each pass (:func:`report`).
    """
    stem = os.path.join(directory, f"weighted{len(os.listdir(directory))}")
    paths = (stem + ".u32", stem + ".i64")
    done = []

    def first_pass():
        with create(paths[0]) as segs, create(paths[1]) as weights:
            for seg, w in chunks():
                seg = np.ascontiguousarray(seg, dtype=np.uint32).reshape(-1, c)
                w = np.ascontiguousarray(w, dtype=np.int64)
                write_array(segs, seg, paths[0])
                write_array(weights, w, paths[1])
                yield seg, w
        done.append(True)

    def replay():
        seen = 0
        with open(paths[0], "rb") as segs, open(paths[1], "rb") as weights:
            while True:
                seg = read_array(segs, np.uint32, CHUNK_ROWS * c, paths[0])
                w = read_array(weights, np.int64, CHUNK_ROWS, paths[1])
                if w.size == 0:
                    return
                seen += w.size
                report(progress, "counting cells (from the spill)", seen, unit="cells")
                yield seg.reshape(-1, c), w

    return Cells(lambda: replay() if done else first_pass())


def _fill_segments(seg, a, index, col, domain, name, clip=False):
    """Column a of ``seg``: each value's segment (a per-axis worker task)."""
    seg[:, a] = index.of(col if domain is None else column_offsets(col, domain, name, clip))


def _read_cells(path, c, progress=None, rows=None):
    """The spilled cells, CHUNK_ROWS rows at a time (read, not memory-mapped)."""
    seen = 0
    with open(path, "rb") as fh:
        while True:
            seg = read_array(fh, np.uint32, CHUNK_ROWS * c, path)
            if seg.size == 0:
                return
            seen += seg.size // c
            report(progress, "counting cells (from the spill)", seen, rows)
            yield seg.reshape(-1, c), None


class ArraySource(RowSource):
    """Columns held in memory (or memory-mapped ``.npy`` files), read in chunks.

    Parameters
    ----------
    columns : sequence of array_like
        c integer columns of equal length.
    names : sequence of str, optional
        Their names (default ``"0"``, ``"1"``, ...).
    counts : array_like of int, optional
        Multiplicity of each row (see ``counts=`` of the builders).
    chunk_rows : int
        Rows per chunk.

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> src = ArraySource([[3, 5, 5, 9]], names=["x"], chunk_rows=2)
    >>> s = ps.IntervalSynopsis.build(src, domain=(0, 15), epsilon=1e6, rng=ps.Rng(seed=1))
    >>> round(s.count(0, 15))
    4
    """

    def __init__(self, columns, names=None, counts=None, chunk_rows=CHUNK_ROWS):
        self._cols = [np.asarray(col) for col in columns]
        if not self._cols or len({col.shape for col in self._cols}) != 1 or \
                self._cols[0].ndim != 1:
            raise ParameterError("columns must be one or more 1-D arrays of equal length")
        self.columns = tuple(names) if names is not None else \
            tuple(str(i) for i in range(len(self._cols)))
        if len(self.columns) != len(self._cols):
            raise ParameterError(f"{len(self.columns)} names for {len(self._cols)} columns")
        self._counts = check_counts(counts, self._cols[0].shape, what="row")
        self._chunk = max(1, int(chunk_rows))

    def chunks(self):
        n = self._cols[0].shape[0]
        for start in range(0, n, self._chunk):
            yield [np.asarray(col[start:start + self._chunk]) for col in self._cols]

    def prepare(self, domains, progress=None, clip=False):
        if self._counts is None:
            return super().prepare(domains, progress, clip)
        self.check_dims(domains)
        return _WeightedArrayPrepared(self, domains, clip)


class _WeightedArrayPrepared(Prepared):
    """An in-memory weighted table: aggregates and cells straight from the arrays."""

    def __init__(self, source, domains, clip=False):
        self._offsets = [column_offsets(col, dom, name, clip) for col, dom, name in
                         zip(source._cols, domains, source.columns)]
        self._counts = source._counts
        self.rows = int(self._counts.sum(dtype=np.int64))

    def axis(self, a):
        return iter([aggregate(self._offsets[a], self._counts)])

    def cells(self, ends):
        seg = np.stack([SegmentIndex(e).of(o) for e, o in zip(ends, self._offsets)], axis=1)
        return Cells.of(seg, self._counts)
