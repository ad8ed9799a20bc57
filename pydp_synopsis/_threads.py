"""Both cores: how many threads the package's C kernels may use, and the pool they share.

The answer, counting and noise kernels are C calls through cffi, which
releases the GIL for their duration, so pieces of one batch can run at once.
Every split is deterministic and randomness is never shared between threads
(kernels that draw use one seekable ChaCha20 stream per piece, derived from
the caller's generator), so the result is the same for any thread count:
seeded runs stay reproducible.  Small batches stay on one thread (a thread
hand-off costs ~50 us).

The count is :func:`get_threads`: the value given to :func:`set_threads`,
else the environment variable ``PDS_THREADS``, else the number of CPUs the
process may run on.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from ._core import check, ffi, lib
from .errors import ParameterError

__all__ = ["THREAD_ROWS", "SORT_ROWS", "get_threads", "set_threads", "pieces", "halves",
           "run_parts", "sort_u64"]

#: Batches of at least this many queries are split between threads.
THREAD_ROWS = 1 << 16

#: Columns of at least this many values are sorted in pieces in threads.
SORT_ROWS = 1 << 20

_POOL = None
_POOL_SIZE = 0
_SET = None   # set_threads' value; None: PDS_THREADS or the CPUs


def _check_count(n, name):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 256:
        raise ParameterError(f"{name} must be an integer in [1, 256], got {n!r}")
    return int(n)


def _cpus():
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def get_threads():
    """How many threads the package's kernels may use.

    Returns
    -------
    int
        The value of :func:`set_threads` if one was set, else the
        environment variable ``PDS_THREADS`` (an integer in [1, 256]), else
        the number of CPUs this process may run on.

    Raises
    ------
    ParameterError
        ``PDS_THREADS`` is set to something other than an integer in [1, 256].

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> before = ps.set_threads(1)
    >>> ps.get_threads()
    1
    >>> _ = ps.set_threads(before)
    """
    if _SET is not None:
        return _SET
    env = os.environ.get("PDS_THREADS")
    if env is not None and env.strip():
        try:
            value = int(env.strip())
        except ValueError:
            value = env
        return _check_count(value, "PDS_THREADS")
    return _cpus()


def set_threads(n):
    """Set how many threads the package's kernels may use; return the previous setting.

    Results never depend on it: work is split the same way whatever the
    count, and every piece that draws noise has its own stream derived from
    the generator, so a seeded build or fill gives the same numbers with 1
    or 2 threads (only the time differs).

    Parameters
    ----------
    n : int or None
        Threads, in [1, 256]; ``None`` goes back to the default
        (``PDS_THREADS``, else the CPUs of the process).

    Returns
    -------
    int or None
        The previous setting (``None``: the default).

    Raises
    ------
    ParameterError
        ``n`` is not ``None`` or an integer in [1, 256].
    """
    global _SET
    value = None if n is None else _check_count(n, "n")
    before, _SET = _SET, value
    return before


def _forget_pool():
    """In a child made by ``fork()``: the pool's threads stayed in the parent,
    so a new pool is made on first use (submitting to the inherited one would
    wait forever)."""
    global _POOL, _POOL_SIZE
    _POOL, _POOL_SIZE = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool(size):
    global _POOL, _POOL_SIZE
    if _POOL is None or _POOL_SIZE < size:
        _POOL = ThreadPoolExecutor(max_workers=size, thread_name_prefix="pydp-synopsis")
        _POOL_SIZE = size
    return _POOL


_LOCAL = threading.local()


def _inside(fn, args):
    """``fn(*args)`` marked as running inside a split: nested splits stay on this thread."""
    before = getattr(_LOCAL, "inside", False)
    _LOCAL.inside = True
    try:
        return fn(*args)
    finally:
        _LOCAL.inside = before


def run_parts(fn, parts):
    """``[fn(*p) for p in parts]``, the parts spread over :func:`get_threads` threads.

    The calling thread takes the first part; the results are in the order of
    ``parts``.  With one thread (or one part) nothing is handed off; a split
    inside a part (e.g. a sort inside one axis's partition) runs on that
    part's thread, so the pool never waits on itself.
    """
    parts = list(parts)
    workers = min(get_threads(), len(parts))
    if workers <= 1 or getattr(_LOCAL, "inside", False):
        return [fn(*p) for p in parts]
    pool = _pool(workers - 1)
    futures = [pool.submit(_inside, fn, p) for p in parts[1:]]
    try:
        first = _inside(fn, parts[0])
    finally:
        wait(futures)        # no part outlives the call, even when one raised
    return [first] + [f.result() for f in futures]


def pieces(n, min_rows):
    """The one split rule: ``[(start, stop), ...]`` ranges covering ``range(n)``,
    one per thread (:func:`get_threads`, and no piece under ``min_rows / 2``
    rows) when ``n >= min_rows``; else, and inside a split (whose other
    threads are busy), the single range ``(0, n)``."""
    k = min(get_threads(), max(1, n // (min_rows // 2)))
    if n < min_rows or k < 2 or getattr(_LOCAL, "inside", False):
        return [(0, n)]
    return [(n * i // k, n * (i + 1) // k) for i in range(k)]


def halves(fn, *arrays):
    """``fn(*arrays)`` computed on pieces of the arrays (their first axis) in
    :func:`get_threads` threads when they are long; outputs (an array or a
    tuple of arrays) concatenated along the first axis (the same result as
    one call)."""
    ranges = pieces(len(arrays[0]), THREAD_ROWS)
    if len(ranges) == 1:
        return fn(*arrays)
    outs = run_parts(fn, [tuple(a[lo:hi] for a in arrays) for lo, hi in ranges])
    if isinstance(outs[0], tuple):
        return tuple(np.concatenate(parts) for parts in zip(*outs))
    return np.concatenate(outs)


def sort_u64(values):
    """``np.sort`` of a one-dimensional uint64 array, in :func:`get_threads` threads.

    Each thread sorts one piece (numpy's sort releases the GIL); the sorted
    pieces are merged pairwise by ``pds_merge_sorted_u64``, each merge split
    between the threads by output position (merge path [OGMSB12]_).  The
    result is the sorted array whatever the thread count.  Small arrays and
    one thread: one ``np.sort``.

    References
    ----------
    .. [OGMSB12] S. Odeh, O. Green, Z. Mwassi, O. Shmueli, Y. Birk, "Merge
       Path - Parallel Merging Made Simple", IPDPS Workshops 2012.
    """
    values = np.asarray(values)
    if values.dtype != np.uint64 or values.ndim != 1:
        raise TypeError("sort_u64 needs a one-dimensional uint64 array")
    ranges = pieces(values.size, SORT_ROWS)
    if len(ranges) == 1:
        return np.sort(values)
    k = len(ranges)
    runs = run_parts(lambda a, b: np.sort(values[a:b]), ranges)
    while len(runs) > 1:
        merged = []
        for i in range(0, len(runs) - 1, 2):
            a, b = runs[i], runs[i + 1]
            out = np.empty(a.size + b.size, dtype=np.uint64)
            pa, pb, po = (ffi.from_buffer("uint64_t[]", x) for x in (a, b, out))
            total = out.size
            bounds = [total * j // k for j in range(k + 1)]

            def merge(first, last, pa=pa, pb=pb, po=po, na=a.size, nb=b.size):
                check(lib.pds_merge_sorted_u64(pa, na, pb, nb, po, first, last), "merge")

            run_parts(merge, [(bounds[j], bounds[j + 1]) for j in range(k)])
            merged.append(out)
        if len(runs) % 2:
            merged.append(runs[-1])
        runs = merged
    return runs[0]
