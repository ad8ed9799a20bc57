"""Weighted input: multisets as sorted ``(value, count)`` aggregates.

The private partition reads a column only through its sorted distinct
values and how often each occurs, and the noisy trees only through how many
items fall in each segment (or cell).  This module holds that vocabulary:

* :func:`check_counts`: the ``counts=`` argument of the builders
  (non-negative integer multiplicities, one per value or point), checked
  once, before any budget is charged or randomness drawn;
* :func:`aggregate` and :func:`merge`: sorted distinct offsets with their
  summed counts, from unsorted chunks (numpy sorts and ``reduceat``, never a
  Python loop per item);
* :class:`SortedAggregator`: the same over a stream of chunks with bounded
  memory: sorted runs are spilled to a temporary directory and merged back
  block by block (an external merge sort), so the memory does not grow with
  the number of rows (only the runs on disk do, with the distinct values);
* :func:`histogram`: exact integer histograms of weighted cell indices;
* :class:`Cells`: the rows as partition cells, chunks of ``(segments,
  weights)``, the one form in which the structures read them.

Why numpy and not ``sortedcontainers``.  A ``SortedDict`` merging
``value -> count`` across chunks costs a Python call and a boxed integer
(about 100 bytes) per distinct value: 10^8 distinct values take minutes
and ~10 GB.  Sorting each chunk and merging sorted runs with numpy's
stable sort (timsort finds the runs: O(n log k) for k runs) costs a few
nanoseconds and 16 bytes per entry, and spills to disk without a per-item
loop.  The package therefore no longer depends on ``sortedcontainers``.

Limits.  The counts of one build total at most :data:`MAX_TOTAL_COUNT`
(``2**62``, the C core's largest segment count, ``LIMITS.max_count``): then
no segment, cell or tree node count can overflow int64, noise included.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015, Remark 2.2: the offline partition needs only the sorted
   non-empty positions and their counts.
.. [K98] D. E. Knuth, *The Art of Computer Programming*, vol. 3, section
   5.4.1 (multiway merging of sorted runs).
"""
import os
import shutil
import threading

import numpy as np

from ._core import LIMITS, check, ffi, lib
from .errors import DomainError, ParameterError
from .params import dtype_name, is_int
from .spill import private_directory, read_array, write_file
from ._threads import sort_u64

__all__ = ["MAX_TOTAL_COUNT", "check_counts", "aggregate", "merge", "histogram",
           "SortedAggregator", "SegmentIndex", "Cells"]

#: Largest total of the ``counts=`` of one build (``2**62``, ``LIMITS.max_count``).
MAX_TOTAL_COUNT = LIMITS.max_count

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)
_EMPTY_COUNTS = np.empty(0, dtype=np.int64)
_MERGE_ENTRIES = 1 << 19    # entries of the blocks one step of the final merge takes
_PEEK = 1 << 12            # keys read at a time past a block to count its last key's repeats


def check_counts(counts, shape, name="counts", what="value"):
    """The multiplicities ``counts`` as a checked int64 array of ``shape``.

    Parameters
    ----------
    counts : array_like of int or None
        Non-negative integers, one per value (or per point).
    shape : tuple of int
        The shape ``counts`` must have (that of the values, or ``(n,)`` for
        n points).
    name : str
        Argument name used in error messages.
    what : str
        What one entry counts ("value", "point"), for messages.

    Returns
    -------
    numpy.ndarray of int64 or None
        ``None`` when ``counts`` is None.

    Raises
    ------
    TypeError
        Not integers (floats, NaN, bools and strings are refused).
    ParameterError
        Not one count per value.
    DomainError
        A negative count, or counts totalling more than
        :data:`MAX_TOTAL_COUNT`.  Messages never show a count: counts are data.

    Notes
    -----
    O(n): one pass for the minimum, one for the total.

    Examples
    --------
    >>> check_counts([2, 0, 5], (3,)).tolist()
    [2, 0, 5]
    >>> check_counts(None, (3,)) is None
    True
    """
    if counts is None:
        return None
    arr = np.asarray(counts)
    if arr.size == 0 and not isinstance(counts, np.ndarray):
        arr = arr.astype(np.int64)           # an empty list: no dtype to refuse
    if arr.dtype.kind == "O":
        flat = arr.ravel().tolist()
        if not all(is_int(v) for v in flat):
            raise TypeError(f"{name} must be integers")
        if any(int(v) < 0 for v in flat):
            raise DomainError(f"{name} must be >= 0: some count is negative")
        if any(int(v) > MAX_TOTAL_COUNT for v in flat):
            raise DomainError(f"{name} must total at most 2**62 (the C core's count limit)")
        arr = np.array([int(v) for v in flat], dtype=np.int64).reshape(arr.shape)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an array of non-negative integers, got dtype "
                        f"{dtype_name(arr.dtype)} (floats, NaN and bools are refused)")
    if arr.shape != tuple(shape):
        # not the shapes: the number of rows is data
        raise ParameterError(f"{name} must hold one count per {what} (the same shape)")
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype.kind == "i" and int(arr.min()) < 0:
        raise DomainError(f"{name} must be >= 0: some count is negative")
    # The float total is within a relative 1e-9 of the true one; below 2**63
    # the uint64 total cannot wrap, so it decides exactly.
    if float(arr.sum(dtype=np.float64)) >= 2.0**63 or \
            int(arr.sum(dtype=np.uint64)) > MAX_TOTAL_COUNT:
        raise DomainError(f"{name} must total at most 2**62 (the C core's count limit)")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _reduce_sorted(keys, counts):
    """Distinct ``keys`` (sorted) with their counts summed; zero totals dropped."""
    if keys.size == 0:
        return _EMPTY_KEYS, _EMPTY_COUNTS
    if counts is None and keys.dtype == np.uint64:     # one C pass (pds_reduce_sorted)
        keys = np.ascontiguousarray(keys)
        out_k, out_c = np.empty(keys.size, dtype=np.uint64), np.empty(keys.size, dtype=np.int64)
        n_out = ffi.new("uint64_t *")
        check(lib.pds_reduce_sorted(_u64(keys), keys.size, _u64(out_k), _i64(out_c), keys.size,
                                    n_out), "counting sorted keys")
        m = int(n_out[0])
        if 2 * m < keys.size:          # few distinct values: do not keep the whole buffers
            return out_k[:m].copy(), out_c[:m].copy()
        return out_k[:m], out_c[:m]
    new = np.empty(keys.size, dtype=bool)
    new[0] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    if counts is None and new.all():             # distinct already: nothing to add up
        return keys, np.ones(keys.size, dtype=np.int64)
    starts = np.flatnonzero(new)
    if counts is None:
        sums = np.diff(starts, append=keys.size).astype(np.int64)
        return keys[starts], sums
    sums = np.add.reduceat(counts, starts)
    keep = sums > 0
    return keys[starts][keep], sums[keep]


def aggregate(keys, counts=None):
    """Sorted distinct ``keys`` and how often each occurs.

    Parameters
    ----------
    keys : numpy.ndarray of uint64 (or any integer dtype)
        1-D, any order, duplicates allowed.
    counts : numpy.ndarray of int64, optional
        Non-negative multiplicity of each key (checked by the caller); None
        counts each key once.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray of int64)
        The distinct keys with a positive total, increasing, and the totals.

    Notes
    -----
    O(n log n): one sort (an ``argsort`` when there are counts to carry),
    then O(n) to find the runs of equal keys.

    Examples
    --------
    >>> k, c = aggregate(np.array([5, 1, 5, 3], dtype=np.uint64), np.array([1, 2, 3, 0]))
    >>> k.tolist(), c.tolist()
    ([1, 5], [2, 4])
    """
    if counts is None:
        return _reduce_sorted(sort_u64(keys) if keys.dtype == np.uint64 else np.sort(keys), None)
    order = np.argsort(keys)
    return _reduce_sorted(keys[order], counts[order])


def merge(parts):
    """One aggregate from several: the union of their keys, counts added.

    Parameters
    ----------
    parts : sequence of (keys, counts)
        Aggregates as returned by :func:`aggregate` (each sorted), uint64
        keys and int64 counts totalling less than ``2**63``.

    Returns
    -------
    (numpy.ndarray of uint64, numpy.ndarray of int64)

    Notes
    -----
    O(n log k) for k sorted parts of n entries in all: one C call
    (``pds_merge_runs``, a heap of the parts' heads).

    Examples
    --------
    >>> a = (np.array([1, 4], dtype=np.uint64), np.array([1, 1]))
    >>> b = (np.array([2, 4], dtype=np.uint64), np.array([5, 2]))
    >>> [x.tolist() for x in merge([a, b])]
    [[1, 2, 4], [1, 5, 3]]
    """
    parts = [(np.ascontiguousarray(k, dtype=np.uint64), np.ascontiguousarray(c, dtype=np.int64))
             for k, c in parts if len(k)]
    if not parts:
        return _EMPTY_KEYS, _EMPTY_COUNTS
    if len(parts) == 1:
        return parts[0]
    total = sum(k.size for k, _ in parts)
    keys, counts = np.empty(total, dtype=np.uint64), np.empty(total, dtype=np.int64)
    n_out = ffi.new("uint64_t *")
    check(lib.pds_merge_runs(len(parts), ffi.new("uint64_t *[]", [_u64(k) for k, _ in parts]),
                             ffi.new("int64_t *[]", [_i64(c) for _, c in parts]),
                             ffi.new("uint64_t[]", [k.size for k, _ in parts]),
                             _u64(keys), _i64(counts), total, n_out), "merging sorted runs")
    n = int(n_out[0])
    return keys[:n], counts[:n]


def _u64(a):
    return ffi.from_buffer("uint64_t[]", a)


def _i64(a):
    return ffi.from_buffer("int64_t[]", a)


class SegmentIndex:
    """The segment of each value for given segment ends: ``searchsorted(ends, x, 'left')``.

    Parameters
    ----------
    ends : numpy.ndarray of uint64
        Strictly increasing segment ends (offsets), fewer than ``2**32``.
    table_bits : int, optional
        The lookup table has about ``2**table_bits`` entries (4 bytes each);
        default about four per end, between ``2**8`` and ``2**22``.

    Notes
    -----
    Building: O(2**table_bits) (one sorted ``searchsorted``).  Each lookup
    narrows the search to the ends in one bucket of the value's top bits
    (``pds_segment_index``): about 10 times faster than numpy's
    ``searchsorted`` for a million ends, whose binary search misses the
    cache at nearly every step.

    Examples
    --------
    >>> idx = SegmentIndex(np.array([3, 9, 15], dtype=np.uint64))
    >>> idx.of(np.array([0, 3, 4, 15], dtype=np.uint64)).tolist()
    [0, 0, 1, 2]
    """

    def __init__(self, ends, table_bits=None):
        self.ends = np.ascontiguousarray(ends, dtype=np.uint64)
        if table_bits is None:
            table_bits = min(22, max(8, self.ends.size.bit_length() + 2))
        last = int(self.ends[-1])
        self.shift = max(0, last.bit_length() - table_bits)
        buckets = (last >> self.shift) + 1
        starts = np.arange(buckets, dtype=np.uint64) << np.uint64(self.shift)
        self.table = np.empty(buckets + 1, dtype=np.uint32)
        self.table[:-1] = np.searchsorted(self.ends, starts, side="left")
        self.table[-1] = self.ends.size

    def of(self, x):
        """Segment (uint32) of every offset in ``x`` (uint64, each at most ``ends[-1]``)."""
        x = np.ascontiguousarray(x, dtype=np.uint64)
        out = np.empty(x.size, dtype=np.uint32)
        check(lib.pds_segment_index(_u64(self.ends), self.ends.size,
                                    ffi.from_buffer("uint32_t[]", self.table), self.table.size,
                                    self.shift, _u64(x), x.size,
                                    ffi.from_buffer("uint32_t[]", out)), "segment index")
        return out


def histogram(index, weights, size):
    """Exact int64 counts of the cell indices ``index`` in ``0 .. size-1``.

    ``weights`` (int64, or None for one each) are summed per cell.  A float
    ``bincount`` is exact while the total stays below 2**53; above it the sum
    is taken in int64 (``np.add.at``).  O(n + size).

    Examples
    --------
    >>> histogram(np.array([0, 2, 2]), np.array([1, 5, 2]), 4).tolist()
    [1, 0, 7, 0]
    """
    if weights is None:
        return np.bincount(index, minlength=size).astype(np.int64)
    if weights.size == 0 or float(weights.sum(dtype=np.float64)) < 2.0**52:
        return np.bincount(index, weights=weights, minlength=size).astype(np.int64)
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, index, weights)
    return out


class SortedAggregator:
    """The sorted ``(key, count)`` aggregate of a stream of chunks, in bounded memory.

    Unweighted chunks are buffered as they come (:meth:`add`) and sorted
    together once ``memory_entries`` keys are held (one ``np.sort`` in a
    background thread while the next keys are buffered, so at most two runs
    are in memory; the duplicates then added up, or, when the keys are
    mostly distinct, the sorted keys themselves spilled and counted as they
    are read back); weighted chunks are aggregated at once.  A
    sorted part of more than half of ``memory_entries`` entries is written
    to a temporary directory as a run; smaller ones are merged in memory.
    :meth:`chunks` merges the runs back block by block
    (:func:`merge`).

    Parameters
    ----------
    memory_entries : int
        Keys (8 bytes, 16 once counted) held in memory before sorting and
        spilling.
    block_entries : int
        Entries read per run per step of the final merge.
    directory : str, optional
        Where runs go (a fresh subdirectory, removed by :meth:`close`);
        default: the system's temporary directory.

    Notes
    -----
    Memory O(2 memory_entries + runs * block_entries) whatever the number of
    rows; disk O(distinct keys per run, summed).  Every step is a numpy sort
    or a C merge of a block, never a Python loop per item.

    Examples
    --------
    >>> agg = SortedAggregator(memory_entries=4, block_entries=2)
    >>> for chunk in ([5, 1, 5], [9, 1], [2, 5, 7, 7]):
    ...     agg.add(np.array(chunk, dtype=np.uint64))
    >>> [(k.tolist(), c.tolist()) for k, c in agg.chunks()]
    [([1], [2]), ([2, 5], [1, 3]), ([7], [2]), ([9], [1])]
    >>> agg.close()
    """

    def __init__(self, memory_entries=1 << 23, block_entries=1 << 19, directory=None):
        self._limit = max(2, int(memory_entries))
        self._block = max(1, int(block_entries))
        self._directory = directory
        self._tmp = None
        self._raw, self._raw_size = [], 0
        self._pending, self._pending_size = [], 0
        self._runs = []            # (path of keys, path of counts, entries)
        self._job = None           # (thread, result box): the run being sorted meanwhile
        self.total = 0             # the number of items added (sum of counts)

    def add(self, keys, counts=None):
        """Add a chunk: ``keys`` (1-D integers) each ``counts`` times (None: once).

        O(k log k) for a chunk of k keys, amortised: unweighted chunks are
        sorted together, ``memory_entries`` keys at a time.
        """
        keys = np.asarray(keys, dtype=np.uint64)
        if counts is not None:
            self._wait()
            part = aggregate(keys, counts)
            self.total += int(part[1].sum(dtype=np.int64))
            self.add_sorted(*part)
            return
        self.total += keys.size
        self._raw.append(keys)
        self._raw_size += keys.size
        if self._raw_size >= self._limit:
            self._flush_raw()

    def _flush_raw(self, background=True):
        """Sort the buffered keys as one run: a full run in a background thread (numpy's
        sort and the writes release the GIL, so the next rows are read meanwhile; one run
        at a time), the last one here."""
        if not self._raw:
            self._wait()
            return
        keys = np.concatenate(self._raw) if len(self._raw) > 1 else self._raw[0].copy()
        self._raw, self._raw_size = [], 0
        self._wait()
        box = {}
        if background and keys.size > self._limit // 2:
            thread = threading.Thread(target=self._sort_run, args=(keys, box), daemon=True)
            thread.start()
            self._job = (thread, box)
            return
        self._sort_run(keys, box)
        self._finish(box)

    def _sort_run(self, keys, box):
        """Sort ``keys``; spill them as they are when mostly distinct, else count them
        (the part, in ``box``, is added by :meth:`_finish` in the caller's thread)."""
        try:
            keys.sort()
            if keys.size > self._limit // 2 and \
                    2 * (1 + np.count_nonzero(keys[1:] != keys[:-1])) > keys.size:
                # mostly distinct: the sorted keys themselves are the run (8 bytes an
                # entry, not 16), their repeats counted as it is read (_UnitRunReader)
                self._spill((keys, None))
            else:
                box["part"] = _reduce_sorted(keys, None)
        except BaseException as exc:          # handed to the caller's thread
            box["error"] = exc

    def _finish(self, box):
        if "error" in box:
            raise box["error"]
        if "part" in box:
            self.add_sorted(*box["part"])

    def _wait(self):
        """Wait for the run being sorted in the background (its error raised here)."""
        job, self._job = self._job, None
        if job is not None:
            job[0].join()
            self._finish(job[1])

    def add_sorted(self, keys, counts):
        """Add an aggregate that is already sorted and distinct (as :func:`aggregate` returns)."""
        if keys.size == 0:
            return
        if keys.size > self._limit // 2:
            self._spill((keys, counts))
            return
        self._pending.append((keys, counts))
        self._pending_size += keys.size
        if self._pending_size > self._limit // 2:
            merged = merge(self._pending)
            self._pending, self._pending_size = [], 0
            if merged[0].size > self._limit // 4:
                self._spill(merged)
            else:
                self._pending, self._pending_size = [merged], merged[0].size

    def _spill(self, part):
        if self._tmp is None:
            self._tmp = private_directory("pydp-aggregate-", self._directory)
        base = os.path.join(self._tmp, f"run{len(self._runs)}")
        write_file(base + ".keys", part[0].astype(np.uint64, copy=False))
        if part[1] is None:        # sorted keys with repeats, each once
            self._runs.append((base + ".keys", None, part[0].size))
            return
        write_file(base + ".counts", part[1].astype(np.int64, copy=False))
        self._runs.append((base + ".keys", base + ".counts", part[0].size))

    @property
    def spilled_runs(self):
        """Number of runs written to disk so far."""
        return len(self._runs)

    def chunks(self):
        """The aggregate as chunks ``(keys, counts)``, keys strictly increasing across chunks.

        May be called once the chunks are all added (again after more
        :meth:`add` calls).  O(n log k) for n entries in k runs; memory
        O(k * block_entries).
        """
        self._flush_raw(background=False)
        merged = merge(self._pending)
        if not self._runs:
            for start in range(0, merged[0].size, self._block):
                yield merged[0][start:start + self._block], merged[1][start:start + self._block]
            return
        # the readers' blocks share the memory of one run: k runs, blocks of limit / k; and
        # one merge takes at most _MERGE_ENTRIES (its buffers are then reused from the
        # heap, not fresh pages faulted in for every block)
        k = len(self._runs) + 1
        block = min(self._block, max(1 << 12, self._limit // k),
                    max(1 << 12, _MERGE_ENTRIES // k))
        readers = [(_RunReader if run[1] else _UnitRunReader)(*run, block) for run in self._runs]
        if merged[0].size:
            readers.append(_ArrayReader(merged, block))
        while True:
            live = [r for r in readers if r.keys.size]
            if not live:
                return
            # Everything up to the smallest last key of the current blocks is
            # complete: no run holds a smaller key further on.
            bound = min(r.keys[-1] for r in live)
            yield merge([r.take_through(bound) for r in live])

    def close(self):
        """Remove the spilled runs (after the run being sorted, if any, is written)."""
        job, self._job = self._job, None
        if job is not None:
            job[0].join()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self._runs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _RunReader:
    """Blocks of one spilled run, read with ``np.fromfile`` (no memory map: RSS stays small)."""

    def __init__(self, keys_path, counts_path, entries, block):
        self._paths, self._entries, self._block = (keys_path, counts_path), entries, block
        self._next = 0
        self.keys, self.counts = _EMPTY_KEYS, _EMPTY_COUNTS
        self._refill()

    def _refill(self):
        n = min(self._block, self._entries - self._next)
        if n <= 0:
            self.keys, self.counts = _EMPTY_KEYS, _EMPTY_COUNTS
            return
        self.keys = read_array(self._paths[0], np.uint64, n, self._paths[0], 8 * self._next)
        self.counts = read_array(self._paths[1], np.int64, n, self._paths[1], 8 * self._next)
        self._next += n

    def take_through(self, bound):
        cut = int(np.searchsorted(self.keys, bound, side="right"))
        out = (self.keys[:cut], self.counts[:cut])
        self.keys, self.counts = self.keys[cut:], self.counts[cut:]
        if not self.keys.size:
            self._refill()
        return out


class _UnitRunReader(_RunReader):
    """Blocks of a run of sorted keys with repeats (each key once per entry), counted
    (:func:`_reduce_sorted`) as they are read: a block never ends inside a stretch of
    equal keys -- the repeats of its last key are read on
    in pieces of ``_PEEK`` and only counted -- so no key is split between two blocks
    and the merge's chunks stay strictly increasing across chunks."""

    def _refill(self):
        n = min(self._block, self._entries - self._next)
        if n <= 0:
            self.keys, self.counts = _EMPTY_KEYS, _EMPTY_COUNTS
            return
        path = self._paths[0]
        self.keys, self.counts = _reduce_sorted(read_array(path, np.uint64, n, path,
                                                           8 * self._next), None)
        self._next += n
        self.counts = np.array(self.counts)      # writable (a block of distinct keys: ones)
        while self._next < self._entries:
            more = read_array(path, np.uint64, min(_PEEK, self._entries - self._next), path,
                              8 * self._next)
            same = int(np.searchsorted(more, self.keys[-1], side="right"))
            self.counts[-1] += same
            self._next += same
            if same < more.size:
                break


class _ArrayReader(_RunReader):
    """Blocks of an aggregate held in memory."""

    def __init__(self, part, block):
        self._part, self._block, self._next = part, block, 0
        self._entries = part[0].size
        self._refill()

    def _refill(self):
        a, b = self._next, min(self._next + self._block, self._entries)
        self.keys, self.counts = self._part[0][a:b], self._part[1][a:b]
        self._next = b


class Cells:
    """The points as partition cells: chunks of ``(segments, weights)``, re-iterable.

    ``segments`` is a (k, c) integer array of each point's partition segment
    per axis, ``weights`` an int64 array of how many points each row stands
    for (None: one each).  The structures read the cells through this class
    only, as often as they need (the adaptive grid twice), so the same code
    counts an in-memory array (one chunk) and a streamed table (chunks
    recomputed or spilled by the source).

    Built by the sources (chunks of a table's rows), by an in-memory build
    (:meth:`of`) and over refined partitions
    (:func:`~pydp_synopsis.rectangles.axes.sealed_cells`).

    Parameters
    ----------
    chunks : callable
        Returns a fresh iterator of ``(segments, weights)`` chunks.
    """

    __slots__ = ("_chunks", "single", "_seals")

    def __init__(self, chunks, single=None, seals=None):
        self._chunks = chunks
        #: the one chunk of an in-memory build, else None
        self.single = single
        self._seals = seals

    @classmethod
    def of(cls, segments, weights=None, seals=None):
        """The cells of points held in memory: one chunk (``seals``: their
        :meth:`seal_counts`, if known)."""
        one = (segments, weights)
        return cls(lambda: iter([one]), single=one,
                   seals=None if seals is None else (lambda: seals.copy()))

    def seal_counts(self):
        """Per axis, the number of points whose coordinate is a segment's end (int64,
        true counts: only the adaptive grid reads them, and adds noise)."""
        if self._seals is None:
            raise RuntimeError("these cells carry no seal counts")
        return self._seals()

    def __iter__(self):
        return iter(self._chunks())
