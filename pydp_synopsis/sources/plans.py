"""How a database column's sorted aggregate is computed: in the database, or here.

The private partition reads a column only as its sorted distinct values with
their counts (DNRR Remark 2.2).  A database can compute them itself (``GROUP
BY col ORDER BY col``, the **group** plan): little crosses the connection when
the column has few distinct values, but the database then holds one hash
entry per distinct value, and a column with about as many distinct values as
rows (timestamps, identifiers, amounts) took 5.8 GB for 10^8 rows in DuckDB.
The **sort** plan streams the column instead, in chunks of ``chunk_rows``, and
aggregates it here with :class:`~pydp_synopsis.aggregates.SortedAggregator`:
each chunk is sorted, runs of at most ``memory_entries`` entries are spilled to
a private temporary directory, and the runs are merged block by block (an
external merge sort, [K98]_), so memory does not grow with the rows.

Both plans give exactly the same aggregate, so the same seed gives the same
synopsis whichever runs.  ``plan="auto"`` chooses by a fact that changes only
the speed: the number of distinct values among the first :data:`SAMPLE_ROWS`
rows of the column (one query reading at most that many rows).  A full sample
with more than a quarter distinct values takes the sort plan.  Like the
build's time, that choice depends on the data and is not protected
(docs/security-timing.md); the release is.

One memory budget (:func:`memory_budget`) covers the process: DuckDB (which
runs inside it) and the sort plan's runs get a quarter each (the rest is left
to numpy's temporaries and the chunks in flight).

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015, Remark 2.2.
.. [K98] D. E. Knuth, *The Art of Computer Programming*, vol. 3, section
   5.4.1 (multiway merging of sorted runs).
"""
import os
import re

from ..aggregates import SortedAggregator
from ..errors import InputError

__all__ = ["PLANS", "SAMPLE_ROWS", "DEFAULT_MEMORY_FRACTION", "check_plan", "memory_budget",
           "parse_memory", "run_entries", "sample_query", "prefers_sort", "sorted_aggregate"]

#: The plans: ``"auto"`` chooses, ``"group"`` aggregates in the database, ``"sort"`` here.
PLANS = ("auto", "group", "sort")
#: Rows read to estimate how many distinct values a column has (``plan="auto"``).
SAMPLE_ROWS = 1 << 17
#: Default memory budget: this fraction of the machine's memory, at most 1 GiB.
DEFAULT_MEMORY_FRACTION = 0.25
_DEFAULT_CAP = 1 << 30
_MIN_BUDGET = 64 << 20
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")
#: Bytes the sort plan needs per entry held in memory: the raw keys, their sorted copy,
#: the reduced (key, count) pair and the merge's output.
_BYTES_PER_ENTRY = 48


def check_plan(plan):
    """``plan`` checked: one of :data:`PLANS`."""
    if not isinstance(plan, str):
        raise TypeError(f"plan must be a str ({', '.join(PLANS)}), not {type(plan).__name__}")
    if plan not in PLANS:
        raise InputError(f"plan must be one of {', '.join(PLANS)}, got {plan!r}")
    return plan


def parse_memory(text, name="memory_limit"):
    """Bytes of a size such as ``"1GB"``, ``"512MiB"`` or ``"1.5 GB"`` (decimal and binary units).

    At least 64 MiB; a bad size is one line naming ``name``.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise TypeError(f"{name} must be a size such as '1GB', not {type(text).__name__}")
    m = _SIZE.fullmatch(str(text))
    unit = m.group(2).upper() if m else None
    if m is None or unit not in _UNITS:
        raise InputError(f"{name} must be a size such as 1GB, 512MB or 2GiB, got {text!r}")
    size = int(float(m.group(1)) * _UNITS[unit])
    if size < _MIN_BUDGET:
        raise InputError(f"{name} must be at least 64MiB, got {text!r}")
    return size


def memory_budget(memory_limit=None):
    """The process's memory budget in bytes: ``memory_limit`` parsed, or by default
    :data:`DEFAULT_MEMORY_FRACTION` of the machine's memory, at most 1 GiB."""
    if memory_limit is not None:
        return parse_memory(memory_limit)
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        total = 4 * _DEFAULT_CAP
    return max(_MIN_BUDGET, min(_DEFAULT_CAP, int(total * DEFAULT_MEMORY_FRACTION)))


def run_entries(budget):
    """Entries of one in-memory run of the sort plan: a quarter of ``budget``."""
    return max(1 << 16, min(1 << 26, budget // 4 // _BYTES_PER_ENTRY))


def sample_query(column, relation):
    """One query: the rows and distinct values among the first :data:`SAMPLE_ROWS` rows."""
    return (f"SELECT count(*), count(DISTINCT v) FROM (SELECT {column} AS v FROM {relation} "
            f"LIMIT {SAMPLE_ROWS}) AS pydp_sample")


def prefers_sort(rows, distinct):
    """The sort plan for a full sample with more than a quarter distinct values."""
    return int(rows) >= SAMPLE_ROWS and 4 * int(distinct) > int(rows)


def sorted_aggregate(chunks, entries, directory=None):
    """The sorted distinct offsets and counts of a stream of offset chunks, chunk by chunk.

    ``chunks`` yields uint64 offsets (checked); runs of ``entries`` entries are
    spilled to a private directory under ``directory`` and removed when the
    stream ends, fails or is closed.
    """
    with SortedAggregator(memory_entries=entries, block_entries=min(entries, 1 << 20),
                          directory=directory) as agg:
        for offsets in chunks:
            agg.add(offsets)
        yield from agg.chunks()
