"""Both cores for post-processing: large query batches split between two threads.

The answer and noise kernels are C calls through cffi, which releases the GIL
for their duration, and read only released numbers (no randomness is drawn),
so the halves of a batch can run at once and give exactly the single-thread
result.  Small batches stay on one thread (a thread costs ~50 us).
"""
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["THREAD_ROWS", "halves"]

#: Batches of at least this many queries are split between two threads.
THREAD_ROWS = 1 << 16

_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pydp-synopsis")
    return _POOL


def halves(fn, *arrays):
    """``fn(*arrays)`` computed on the two halves of the arrays (their first axis)
    in two threads when they are long and two cores exist; outputs (an array or
    a tuple of arrays) concatenated along the first axis."""
    n = len(arrays[0])
    if n < THREAD_ROWS or (os.cpu_count() or 1) < 2:
        return fn(*arrays)
    mid = n // 2
    first = _pool().submit(fn, *(a[:mid] for a in arrays))
    second = fn(*(a[mid:] for a in arrays))
    first = first.result()
    if isinstance(first, tuple):
        return tuple(np.concatenate([x, y]) for x, y in zip(first, second))
    return np.concatenate([first, second])
