"""A private merge of adjacent PrivTree leaves of similar noisy density.

DAWA's idea ([LHMW14]_: group cells of similar density into one bucket, so
that one noisy count serves them all) applied to PrivTree's leaves.  With
``privtree_merge=rho`` the partition's budget ``epsilon_p`` is split:

1. PrivTree (:mod:`~pydp_synopsis.partitions.privtree`) releases its leaves
   with ``epsilon_1 = epsilon_p - epsilon_m``;
2. every leaf's count is released with discrete Laplace noise of scale
   ``b = 1 / epsilon_m``, ``epsilon_m = rho * epsilon_p`` (rounded down);
3. left to right, a leaf of width ``w`` and noisy count ``c`` joins the run
   before it (noisy total ``C``, width ``W``) iff ``|c W - C w| <= tau
   max(W, w)``, ``tau = MERGE_FACTOR * b``: its density is within ``tau``
   items (over the narrower of the two) of the run's, a difference the noise
   alone could make (``csrc/privtree.c``, ``pds_privtree_merge``).  The runs
   are the released segments.

Privacy.  Step 1 is ``epsilon_1``-DP (PrivTree's proof).  Given its leaves
(public after step 1: adaptive sequential composition), adding or removing
one item changes exactly one leaf's count by one: the vector of leaf counts
has l1 sensitivity 1, and discrete Laplace noise of scale ``1/epsilon_m``
makes step 2 ``epsilon_m``-DP.  Step 3 reads only released numbers (the leaf
ends, the noisy counts) and public ones (``rho``, ``MERGE_FACTOR``): it is
post-processing and costs nothing.  The partition is ``(epsilon_1 +
epsilon_m) <= epsilon_p``-DP, and the tree released over its segments with
``epsilon_t`` keeps the synopsis at ``epsilon_p + epsilon_t``.  Only the
segments and the noisy leaf counts are kept (the noisy counts are released
numbers, saved with the synopsis so that a load recomputes the merge and
checks it); no true count leaves this module.

Weight bound (error bars).  With probability ``>= 1 - beta_1`` every
PrivTree leaf of width ``>= 2`` holds at most its ``W_d`` items
(:meth:`TreePartition.leaf_weight_bounds`); with probability ``>= 1 -
beta_2`` every leaf's noise is above ``-k`` (``k`` the least integer with
``m a^k / (1 + a) <= beta_2``, ``a = e^{-1/b}``, a union bound over the ``m``
released leaves), so leaf ``i`` holds at most ``u_i = max(0, min(c_i + k,
W_i))`` items (``W_i`` infinite for a width-1 leaf).  A merged segment of
several leaves holds at most ``sum u_i`` (a single leaf keeps its PrivTree
bound, 0 for a width-1 leaf, which no interval cuts).  ``beta_1 = beta_2 =
beta / 2`` of the partition's ``beta``.

Measured (docs/guide/partition.md, ``benchmarks/bench_privtree_fanout.py``):
an option, not the default (see there for the table and the rule).

References
----------
.. [LHMW14] C. Li, M. Hay, G. Miklau, Y. Wang, "A Data- and Workload-Aware
   Algorithm for Range Queries Under Differential Privacy", PVLDB 7(5),
   2014 (the partition stage: buckets of near-uniform noisy density).
.. [ZXX16] J. Zhang, X. Xiao, X. Xie, "PrivTree: A Differentially Private
   Algorithm for Hierarchical Decompositions", SIGMOD 2016.
"""
import math

import numpy as np

from .. import persist
from .._core import check, ffi, lib
from ..errors import DomainError, FormatError, ParameterError
from ..noise import discrete_laplace
from ..params import check_share, exact_epsilon
from .cells import CellPartition
from .privtree import TreePartition, privtree_epsilon

__all__ = ["MERGE_FACTOR", "MERGED_PARTITION_KIND", "MergedPartition", "check_merge_share",
           "merge_epsilons", "merge_leaves", "merged_runs", "partition_summary"]

#: ``tau = MERGE_FACTOR / epsilon_m``: leaves within this many items (the noisy counts'
#: scale times the factor) of the run's density are merged.  Public, fixed (measured).
MERGE_FACTOR = 1
#: The persist record of a merged partition (``ps.save(partition)``) and its version.
MERGED_PARTITION_KIND = "privtree-merged-partition"
MERGED_PARTITION_VERSION = 1


def check_merge_share(share):
    """``privtree_merge`` checked: None or False (no merge), else a share in (0, 1) of the
    partition's epsilon spent on the noisy leaf counts (an exact Fraction)."""
    if share is None or share is False:
        return None
    if share is True:
        raise ParameterError("privtree_merge must be None or a share of the partition's "
                             "epsilon in (0, 1), got True")
    return check_share(share, "privtree_merge")


def merge_epsilons(eps_p, share):
    """``(epsilon_1, epsilon_m)``: PrivTree's and the leaf counts' parts of ``eps_p``
    (``epsilon_m = share eps_p`` rounded down, ``epsilon_1`` the rest, rounded down).
    Where PrivTree's scale needs ``epsilon_1`` lower (:func:`.privtree.privtree_epsilon`),
    ``epsilon_m`` is what is left of ``eps_p`` after it, rounded down."""
    eps_m = exact_epsilon(eps_p * share, "epsilon_partition * privtree_merge")
    eps_1 = exact_epsilon(eps_p - eps_m, "epsilon_partition * (1 - privtree_merge)")
    lower = privtree_epsilon(eps_1, eps_p)
    if lower != eps_1:
        return lower, exact_epsilon(eps_p - lower, "epsilon_partition * privtree_merge")
    return eps_1, eps_m


def merged_runs(end_offsets, noisy, scale):
    """The index of each run's last leaf (int64): the deterministic merge of step 3
    (module doc) of released leaf ends and noisy counts at noise scale ``scale``."""
    ends = np.ascontiguousarray(end_offsets, dtype=np.uint64)
    noisy = np.ascontiguousarray(noisy, dtype=np.int64)
    if ends.ndim != 1 or noisy.shape != ends.shape or ends.size < 1:
        raise DomainError("the noisy leaf counts must be one per leaf")
    out = np.empty(ends.size, dtype=np.uint64)
    n = ffi.new("uint64_t *")
    st = lib.pds_privtree_merge(ffi.from_buffer("uint64_t[]", ends),
                                ffi.from_buffer("int64_t[]", noisy), ends.size, 0,
                                float(MERGE_FACTOR * scale), ffi.from_buffer("uint64_t[]", out), n)
    check(st, "privtree merge")
    return out[:n[0]].astype(np.int64)


def merge_leaves(leaves, true_counts, eps_m, rng):
    """Steps 2-3 of the module doc: the merged partition and its segments' true counts.

    Parameters
    ----------
    leaves : TreePartition
        The released PrivTree leaves (built with ``epsilon_1`` and half the
        partition's ``beta``).
    true_counts : numpy.ndarray of int64
        Their true counts (not private: noised here, summed for the tree).
    eps_m : Fraction
        The leaf counts' epsilon.
    rng : Rng

    Returns
    -------
    (MergedPartition, numpy.ndarray of int64)
        The true counts are the caller's to noise (the tree).
    """
    true_counts = np.asarray(true_counts, dtype=np.int64)
    if true_counts.shape != (len(leaves),):
        raise AssertionError("one true count per leaf")
    noisy = true_counts + discrete_laplace(1 / eps_m, size=len(leaves), rng=rng)
    part = MergedPartition._make(leaves, noisy, eps_m)
    first = np.concatenate(([0], part.last_leaf[:-1] + 1))
    return part, np.add.reduceat(true_counts, first)


def partition_summary(part):
    """One line naming a partition's method and PrivTree options (released sizes only).

    Examples
    --------
    >>> partition_summary(TreePartition([1, 3, 5, 7], domain=(0, 7), epsilon=1, beta=0.1,
    ...                                 fanout=4))
    'privtree (fanout 4)'
    """
    if isinstance(part, CellPartition):
        return "cells (every value its own segment, no epsilon spent on them)"
    if not isinstance(part, TreePartition):
        return "dnrr"
    text = f"privtree (fanout {part.fanout})"
    if isinstance(part, MergedPartition):
        text += (f", {len(part.leaves):,} leaves merged by noisy density (epsilon "
                 f"{part.merge_epsilon})")
    return text


class MergedPartition(TreePartition):
    """Runs of adjacent PrivTree leaves of similar noisy density (module doc).

    Produced by :meth:`IntervalSynopsis.build
    <pydp_synopsis.IntervalSynopsis.build>` with ``privtree_merge=rho``; the
    constructor rebuilds one from its released numbers (e.g. read back from
    disk): the leaves are validated as PrivTree's, the merge recomputed.

    Parameters
    ----------
    leaf_end_offsets : array_like of uint64
        The PrivTree leaves' right ends, offsets from ``lo``.
    noisy_counts : array_like of int64
        Each leaf's released noisy count.
    domain : pair of int
    epsilon : Fraction
        The whole partition's epsilon ``epsilon_1 + epsilon_m``.
    merge_epsilon : Fraction
        ``epsilon_m``, the noisy counts' part.
    beta : float
        The failure probability of the weight bounds (half for each part).
    shards : int
    fanout : {2, 4}
        PrivTree's fanout.

    Attributes
    ----------
    leaves : TreePartition
        The PrivTree partition before the merge.
    noisy_counts : numpy.ndarray of int64
        The released noisy leaf counts.
    last_leaf : numpy.ndarray of int64
        Each segment's last leaf.
    depths : None
        A segment is a run of leaves, not one node: the leaves' depths are
        ``leaves.depths``.

    References
    ----------
    .. [LHMW14] Li, Hay, Miklau, Wang, PVLDB 2014 (DAWA's partition stage).
    """

    def __init__(self, leaf_end_offsets, noisy_counts, *, domain, epsilon, merge_epsilon, beta,
                 shards=1, fanout=2):
        eps = exact_epsilon(epsilon)
        eps_m = exact_epsilon(merge_epsilon, "merge_epsilon")
        if eps_m >= eps:
            raise ParameterError("merge_epsilon must be below epsilon (PrivTree's part is the "
                                 "rest)")
        leaves = TreePartition(leaf_end_offsets, domain=domain, epsilon=eps - eps_m,
                               beta=beta / 2, shards=shards, fanout=fanout)
        noisy = np.asarray(noisy_counts)
        if noisy.dtype.kind not in "iu" or noisy.shape != (len(leaves),):
            raise DomainError("noisy_counts must be integers, one per leaf")
        self._init_merged(leaves, noisy.astype(np.int64), eps_m)

    @classmethod
    def _make(cls, leaves, noisy, eps_m):
        self = cls.__new__(cls)
        self._init_merged(leaves, noisy, eps_m)
        return self

    def _init_merged(self, leaves, noisy, eps_m):
        self.leaves = leaves
        noisy = np.array(noisy, dtype=np.int64)
        noisy.flags.writeable = False
        self.noisy_counts = noisy
        self.merge_epsilon = eps_m
        self.last_leaf = merged_runs(leaves.end_offsets, noisy, 1 / eps_m)
        self.last_leaf.flags.writeable = False
        lo, hi = leaves.domain
        self.scale, self.bias = leaves.scale, leaves.bias
        self._fanout, self._shards = leaves.fanout, leaves.shards
        self._store(leaves.end_offsets[self.last_leaf], lo, hi, leaves.epsilon + eps_m,
                    2 * leaves.beta, "privtree")
        self._leaf_bounds = None
        self.depths = None

    def leaf_weight_bounds(self):
        """Per segment, the most items it can hold (module doc: a single leaf keeps its
        PrivTree bound; a run of several, the sum of its leaves' noisy bounds), all at
        once with probability ``>= 1 - beta``.  O(m) on the first call, then kept.

        Returns
        -------
        numpy.ndarray of float64
        """
        if self._leaf_bounds is None:
            tree = self.leaves.leaf_weight_bounds()
            m = tree.size
            a = math.exp(-float(self.merge_epsilon))
            # least k >= 0 with m a^k / (1 + a) <= beta / 2
            k = max(0.0, math.ceil((math.log(m) - math.log1p(a) - math.log(self._beta / 2))
                                   * float(1 / self.merge_epsilon) * (1 + 1e-12)))
            starts = np.concatenate(([np.uint64(0)], self.leaves.end_offsets[:-1] + np.uint64(1)))
            wide = self.leaves.end_offsets > starts
            noisy = np.maximum(self.noisy_counts.astype(np.float64) + k, 0.0)
            per_leaf = np.where(wide, np.minimum(noisy, tree), noisy)
            first = np.concatenate(([0], self.last_leaf[:-1] + 1))
            runs = np.add.reduceat(per_leaf, first)
            single = first == self.last_leaf
            w = np.where(single, tree[self.last_leaf], runs)
            w.flags.writeable = False
            self._leaf_bounds = w
        return self._leaf_bounds

    def depth_weight_bounds(self):
        """The leaves' :meth:`TreePartition.depth_weight_bounds` (PrivTree's part)."""
        return self.leaves.depth_weight_bounds()

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`pydp_synopsis.save` (released numbers)."""
        lo, hi = self.domain
        meta = {"version": MERGED_PARTITION_VERSION, "domain": [int(lo), int(hi)],
                "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
                "merge_epsilon": [self.merge_epsilon.numerator, self.merge_epsilon.denominator],
                "beta": self._beta, "shards": self._shards, "fanout": self._fanout}
        return (MERGED_PARTITION_KIND, meta,
                {"leaf_end_offsets": self.leaves.end_offsets, "noisy_counts": self.noisy_counts},
                None)

    def _key(self):
        return (self.domain, self._epsilon, self.merge_epsilon, self._beta, self._shards,
                self._fanout, self.leaves.end_offsets.tobytes(), self.noisy_counts.tobytes())


@persist.register(MERGED_PARTITION_KIND)
def _load_merged_partition(meta, arrays):
    """A saved merged partition: the leaves validated, the merge recomputed."""
    try:
        if meta.get("version") != MERGED_PARTITION_VERSION:
            raise FormatError(f"unknown {MERGED_PARTITION_KIND} version {meta.get('version')!r}")
        eps = persist.state_fraction(meta["epsilon"], "epsilon")
        eps_m = persist.state_fraction(meta["merge_epsilon"], "merge_epsilon")
        return MergedPartition(arrays["leaf_end_offsets"], arrays["noisy_counts"],
                               domain=tuple(meta["domain"]), epsilon=eps, merge_epsilon=eps_m,
                               beta=meta["beta"], shards=meta["shards"], fanout=meta["fanout"])
    except (KeyError, TypeError, ValueError, DomainError, ParameterError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid {MERGED_PARTITION_KIND} record: {exc}") from exc
