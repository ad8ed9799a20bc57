"""The cell partition: every value of a small domain is its own segment.

``partition="cells"`` of :meth:`IntervalSynopsis.build
<pydp_synopsis.IntervalSynopsis.build>`, and what the workload rule takes for
``workload="short"`` on a domain of at most :data:`CELLS_RULE_MAX` values
(:func:`pydp_synopsis.interval_workload.partition_rule`).  The segments are
``[lo, lo], [lo + 1, lo + 1], ..., [hi, hi]``: a function of the domain
alone, so releasing them costs no privacy (epsilon 0) and all of epsilon goes
to the counts.  The synopsis is then the classic hierarchical histogram
([HRMS10]_) over the domain's values, with the tree chosen for the declared
workload -- for short queries usually a single level, the histogram of
noisy counts itself ([LHMW14]_'s "Identity" strategy).

Why it is the better choice for short ranges on small domains: a private
partition spends part of epsilon and its segments are wide where a few
values hold many rows (a column of integer miles, minutes or cents: many
ties); a range ending inside such a segment takes a share of it by the
uniform rule, a bias the noise cannot average away.  Cells have no bias at
all -- a segment of width 1 is never cut by an interval -- and a range of
``w`` values costs the noise of ``w`` counts.  That noise grows with the
width and with the domain, so cells are for short ranges on domains of up
to tens of thousands of values; measured in docs/guide/workload.md.

Privacy: the segments are public (the domain's values), so the partition is
0-DP; the counts are released by the tree at the build's whole epsilon
(:func:`pydp_synopsis.trees.noisy_tree`): one item moves one count per
level, calibrated as for any partition.

References
----------
.. [HRMS10] M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the Accuracy
   of Differentially Private Histograms Through Consistency", PVLDB 3(1),
   2010.
.. [LHMW14] C. Li, M. Hay, G. Miklau, Y. Wang, "A Data- and Workload-Aware
   Algorithm for Range Queries Under Differential Privacy", PVLDB 7(5), 2014
   (the Identity baseline).
"""
from fractions import Fraction

import numpy as np

from .. import persist
from ..errors import DomainError, FormatError, ParameterError
from ..params import check_beta, check_domain
from .dnrr import Partition

__all__ = ["CELLS", "CELL_PARTITION_KIND", "MAX_CELLS", "CELLS_RULE_MAX", "CellPartition",
           "check_cells_domain", "cells_epsilons", "cell_partition"]

#: The name ``partition=`` takes.
CELLS = "cells"
#: The persist record of a cell partition (``ps.save(partition)``) and its version.
CELL_PARTITION_KIND = "cell-partition"
CELL_PARTITION_VERSION = 1
#: The largest domain ``partition="cells"`` takes (values): its counts are held in memory.
MAX_CELLS = 1 << 20
#: The largest domain the workload rule gives cells to (``workload="short"``; measured).
CELLS_RULE_MAX = 1 << 14


def check_cells_domain(domain):
    """The domain's size checked for cells: at most :data:`MAX_CELLS` values, else one
    line naming ``partition`` and the limit (before anything is read).

    Examples
    --------
    >>> check_cells_domain((0, 4095))
    4096
    """
    lo, hi = domain
    size = hi - lo + 1
    if size > MAX_CELLS:
        raise ParameterError(f"partition='cells' takes a domain of at most {MAX_CELLS} values "
                             f"(2**20), got {size}: use partition='privtree' or a coarser "
                             f"resolution=")
    return size


def cells_epsilons(domain, epsilon, sums, shards):
    """``(0, epsilon_tree, epsilon_sum)`` of a cell build: nothing to the partition, the
    rest as without it (``sums``: the range sums' spec or None).  The domain's size and
    ``shards`` checked first (one line each)."""
    check_cells_domain(domain)
    if shards not in (None, 1):
        raise ParameterError("shards is an option of partition='privtree' or 'dnrr' "
                             "(partition='cells' has no partition to shard)")
    eps_t, eps_s = (epsilon, 0) if sums is None else sums.split(epsilon, sums.share)
    return Fraction(0), eps_t, eps_s


def cell_partition(data, domain, beta, weights=None):
    """``(CellPartition, true counts)``: the partition of ``domain`` (the synopsis's
    ``beta``; the partition keeps half, as the private ones do) and every cell's
    true count (int64, not private).

    ``data``: checked offsets (an ndarray, one item each, or with ``weights``)
    or a prepared source's sorted ``(offsets, counts)`` chunks.  One
    ``bincount`` or one scatter per chunk: no sort, O(n + D).
    """
    part = CellPartition(domain=domain, beta=beta / 2)
    size = len(part)
    if isinstance(data, np.ndarray) and weights is None:
        return part, np.bincount(data.astype(np.int64, copy=False),
                                 minlength=size).astype(np.int64, copy=False)
    counts = np.zeros(size, dtype=np.int64)          # integer weights: exact, no floats
    for offs, cnt in ([(data, weights)] if isinstance(data, np.ndarray) else data):
        np.add.at(counts, np.asarray(offs, dtype=np.int64), np.asarray(cnt, dtype=np.int64))
    return part, counts


class CellPartition(Partition):
    """The partition of ``[lo, hi]`` into its values: segment ``i`` is ``[lo + i, lo + i]``.

    Public and free (its epsilon is 0): :meth:`IntervalSynopsis.build
    <pydp_synopsis.IntervalSynopsis.build>` uses it with ``partition="cells"``
    or when ``workload="short"`` meets a domain of at most
    :data:`CELLS_RULE_MAX` values (module doc).

    Parameters
    ----------
    domain : pair of int
        Inclusive ``(lo, hi)``, at most :data:`MAX_CELLS` values.
    beta : float
        The synopsis's failure probability share (kept for its error bounds;
        a cell partition's weight bounds hold surely).

    Examples
    --------
    >>> p = CellPartition(domain=(10, 13), beta=0.05)
    >>> len(p), p.ends.tolist(), p.epsilon, p.interior_weight_bound()
    (4, [10, 11, 12, 13], Fraction(0, 1), 0.0)

    References
    ----------
    .. [HRMS10] Hay, Rastogi, Miklau, Suciu, PVLDB 2010 (the histogram of
       counts under a hierarchy).
    """

    def __init__(self, *, domain, beta):
        lo, hi = check_domain(domain)
        size = check_cells_domain((lo, hi))
        beta = check_beta(beta)
        self._store(np.arange(size, dtype=np.uint64), lo, hi, Fraction(0), beta, CELLS)

    @property
    def threshold(self):
        """0: no threshold (the segments are the domain's values)."""
        return 0

    @property
    def threshold_factor(self):
        """``"cells"``: the partition method."""
        return CELLS

    def interior_weight_bound(self):
        """0.0: no interval cuts a segment of width 1, so no segment is ever cut."""
        return 0.0

    def max_weight_bound(self):
        """0.0 (as :meth:`interior_weight_bound`: the uniform rule never splits a cell)."""
        return 0.0

    def leaf_weight_bounds(self):
        """Per segment, the most items an interval can cut off it: 0 (width 1)."""
        return np.zeros(len(self), dtype=np.float64)

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`pydp_synopsis.save`: the domain and
        beta (the segments follow from the domain)."""
        meta = {"version": CELL_PARTITION_VERSION, "domain": [int(self._lo), int(self._hi)],
                "beta": self._beta}
        return CELL_PARTITION_KIND, meta, {}, None

    def _key(self):
        return (self.domain, self._beta)


@persist.register(CELL_PARTITION_KIND)
def _load_cell_partition(meta, arrays):
    """A saved cell partition (its segments recomputed from the domain)."""
    try:
        if meta.get("version") != CELL_PARTITION_VERSION:
            raise FormatError(f"unknown {CELL_PARTITION_KIND} version {meta.get('version')!r}")
        return CellPartition(domain=tuple(meta["domain"]), beta=meta["beta"])
    except (KeyError, TypeError, ValueError, DomainError, ParameterError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid {CELL_PARTITION_KIND} record: {exc}") from exc
