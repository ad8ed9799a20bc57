"""The one entry to a partition: ``method="dnrr"`` or ``method="privtree"``.

Every builder reaches a partition through :func:`partition_of_sorted` (sorted
offsets held in memory) or :func:`partition_of_chunks` (a stream of sorted
aggregates); :func:`partition_sharded` runs either over public shards
(:mod:`~pydp_synopsis.partitions.sharded`), here or, one shard per task, on a
cluster (:func:`shard_partition`, :mod:`~pydp_synopsis.partitions.runner`).
The public :func:`private_partition` is Fig. 1's offline partition of a
user's values.

``method`` chooses the algorithm: ``"dnrr"`` is Fig. 1 of DNRR with the
threshold constant ``threshold_factor``
(:mod:`~pydp_synopsis.partitions.dnrr`), ``"privtree"`` is PrivTree
(:mod:`~pydp_synopsis.partitions.privtree`), which has no threshold.  The
string ``threshold_factor="privtree"`` of release 0.2 still selects PrivTree,
with a :class:`DeprecationWarning`.

These functions take checked parameters (the builders check them at their
public entry) and never re-validate them, except :func:`private_partition`,
which is public.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: Fig. 1, Theorem 2.1, Remark 2.2.
.. [ZXX16] J. Zhang, X. Xiao, X. Xie, "PrivTree: A Differentially Private
   Algorithm for Hierarchical Decompositions", SIGMOD 2016.
"""
import warnings

import numpy as np

from ..aggregates import aggregate, check_counts
from ..errors import DomainError, ParameterError
from ..params import as_offsets, check_beta, check_bool, check_domain, check_threshold_factor, exact_epsilon
from ..rng import Rng, resolve_rng
from .._threads import sort_u64
from .merge import merge_epsilons, merge_leaves
from .dnrr import DNRR_FACTOR, Partition, dnrr_of_chunks, dnrr_of_sorted
from .privtree import (PRIVTREE, TreePartition, check_privtree_fanout, privtree_of_chunks,
                       privtree_of_sorted)
from .sharded import shard_domains, shard_streams, split_chunks

__all__ = ["METHODS", "method_of", "private_partition", "partition_of_sorted", "partition_of_chunks",
           "partition_sharded", "shard_partition", "assemble_partition"]

#: The partition algorithms, by the name ``method=`` (and the builders' ``partition=``) takes.
METHODS = ("dnrr", PRIVTREE)


def method_of(method, threshold_factor, stacklevel=3):
    """``(method, threshold_factor)`` checked: the factor is None for PrivTree, a float for DNRR.

    ``threshold_factor="privtree"`` (release 0.2's way to ask for PrivTree, a
    string in a numeric parameter) is read as ``method="privtree"`` with a
    :class:`DeprecationWarning`.

    Raises
    ------
    ParameterError
        An unknown method, or a threshold factor given with PrivTree.
    """
    if isinstance(threshold_factor, str) and threshold_factor == PRIVTREE:
        warnings.warn("threshold_factor='privtree' is deprecated: pass method='privtree' "
                      "(the builders: partition='privtree'); it will be removed in 0.3",
                      DeprecationWarning, stacklevel=stacklevel)
        method, threshold_factor = PRIVTREE, None
    if method not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}, got {method!r}")
    if method == PRIVTREE:
        if threshold_factor is not None:
            raise ParameterError("threshold_factor is an option of method='dnrr' only "
                                 "(PrivTree has no threshold)")
        return method, None
    return method, DNRR_FACTOR if threshold_factor is None else threshold_factor


def private_partition(values, *, domain, epsilon, beta=0.05, rng=None, threshold_factor=3,
                      presorted=False, counts=None, clip=False):
    """An epsilon-DP partition of ``domain`` for the multiset ``values`` (offline).

    Parameters
    ----------
    values : array_like of int
        Items, any order, duplicates allowed, each inside ``domain``.
    domain : pair of int
        Inclusive ``(lo, hi)``; ``hi - lo + 1 <= 2**64``; inside the int64
        or the uint64 range.
    epsilon : float or Fraction
        Privacy parameter (> 0); a float is rounded down to an exact rational.
    beta : float
        Failure probability of the accuracy guarantee, in (0, 1).
    rng : Rng, optional
        Randomness source; None draws fresh OS entropy.  Seeded Rngs are for
        tests and benchmarks only.
    threshold_factor : float
        The constant ``c`` of ``T = c (ln D + ln(1/beta)) / epsilon``; 3 is
        Fig. 1's (the one Theorem 2.1 is stated for).  Privacy holds for any
        public threshold; a smaller ``c`` gives more, lighter segments and
        the weight bound ``(c + 2) (ln D + ln(1/beta)) / epsilon``.
    presorted : bool
        ``values`` are already in non-decreasing order (checked, O(n)): the
        sort is skipped, for callers that sort the data themselves (one sort,
        not two).  DomainError if they are not.
    counts : array_like of int, optional
        Multiplicities: ``values[i]`` occurs ``counts[i] >= 0`` times (same
        shape as ``values``; duplicates in ``values`` add up; the counts
        total at most ``2**62``).  With the same seeded ``rng`` the result is
        exactly that of ``np.repeat(values, counts)``, at a cost in the
        number of distinct values, not in their total (checked before any
        randomness is drawn: :func:`~pydp_synopsis.aggregates.check_counts`).
    clip : bool
        Clip instead of refusing: a value below ``lo`` counts as ``lo``, one
        above ``hi`` as ``hi`` (exactly, a Python int beyond int64 too).
        Default False: an out-of-domain value is refused before any
        budget is charged.  Clipping maps each row on its own, so two
        neighbouring inputs (one row added or removed) stay neighbours
        after it: every count keeps sensitivity 1 and the release stays
        epsilon-DP for the same epsilon [OpenDP]_ [diffprivlib]_.  The
        release equals that of the clipped data under the same seed.

    Returns
    -------
    Partition
        Same distribution as feeding the whole stream of per-position counts
        to :class:`OnlinePartition`.  Empty ``values`` give a valid partition
        (the domain end always seals).

    Notes
    -----
    O(n log n) for the sort plus O(n + #segments) kernel steps, independent
    of the domain size (Remark 2.2 with the exact skip of csrc/partition.c).

    References
    ----------
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, Fig. 1, Theorem 2.1,
       Remark 2.2.
    .. [OpenDP] The OpenDP Library, ``make_clamp`` (clamping to declared bounds).
    .. [diffprivlib] N. Holohan et al., "Diffprivlib: The IBM Differential
       Privacy Library", 2019 (``bounds=``: data clipped to the bounds).

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> part = private_partition([5, 7, 7, 100], domain=(0, 2**64 - 1),
    ...                          epsilon=1.0, rng=ps.Rng(seed=1))
    >>> int(part.ends[-1]) == 2**64 - 1
    True
    """
    domain = check_domain(domain)
    eps = exact_epsilon(epsilon)
    beta = check_beta(beta)
    factor = check_threshold_factor(threshold_factor)
    clip = check_bool(clip, "clip")
    offsets = as_offsets(values, domain, clip=clip)
    weights = check_counts(counts, offsets.shape)
    offsets = offsets.ravel()
    if presorted and np.any(offsets[1:] < offsets[:-1]):
        raise DomainError("values must be in non-decreasing order when presorted=True")
    rng = resolve_rng(rng)
    if weights is not None:
        weights = weights.ravel()
        if not presorted:
            offsets, weights = aggregate(offsets, weights)
        return partition_of_sorted(offsets, domain, eps, beta, factor, rng, counts=weights)
    # The sort (of a copy, in threads) is the floor of the whole computation; duplicates
    # are counted by the kernel on the sorted array.
    return partition_of_sorted(offsets if presorted else sort_u64(offsets), domain, eps, beta,
                               factor, rng)


def partition_of_sorted(sorted_offsets, domain, epsilon, beta, threshold_factor=None, rng=None,
                        counts=None, *, method="dnrr", shards=1, weights=False,
                        privtree_fanout=2, privtree_merge=None):
    """The package's one entry to a partition: checked, sorted offsets in, a partition out.

    For builders that check their arguments at their own public entry and
    need the sorted data themselves (one check, one sort, one partition).

    Parameters
    ----------
    sorted_offsets : numpy.ndarray of uint64
        1-D, non-decreasing offsets ``value - lo`` (as from
        :func:`~pydp_synopsis.params.as_offsets`, then sorted).
    domain : (int, int)
        Inclusive ``(lo, hi)`` as returned by
        :func:`~pydp_synopsis.params.check_domain`; the partition is returned
        in this domain.
    epsilon : Fraction
        As returned by :func:`~pydp_synopsis.params.exact_epsilon`.
    beta : float
        As returned by :func:`~pydp_synopsis.params.check_beta`.
    threshold_factor : float, optional
        DNRR's threshold constant, as returned by
        :func:`~pydp_synopsis.params.check_threshold_factor` (None: Fig. 1's
        3).  ``"privtree"`` is deprecated: pass ``method="privtree"``.
    rng : Rng
        A resolved generator; the kernel draws from it in the order of Fig. 1
        (or of PrivTree's walk).
    counts : numpy.ndarray of int64, optional
        Checked multiplicities of ``sorted_offsets`` (None: one each).  Zero
        counts are dropped: a position the data do not occupy must not start
        a run of its own, or the draws would differ from those of the
        repeated values.
    method : {"dnrr", "privtree"}
        The algorithm.
    shards : int
        Public shards (:func:`~pydp_synopsis.partitions.sharded.check_shards`),
        1: none.
    weights : bool
        Also return the true number of items in each segment (not private:
        the caller adds noise).
    privtree_fanout : {2, 4}
        PrivTree's fanout (:mod:`~pydp_synopsis.partitions.privtree`; checked
        before any draw); ignored by DNRR.
    privtree_merge : Fraction, optional
        PrivTree only: the share of ``epsilon`` spent on noisy leaf counts
        that merge adjacent leaves of similar density
        (:mod:`~pydp_synopsis.partitions.merge`, checked by
        :func:`~pydp_synopsis.partitions.merge.check_merge_share`); PrivTree
        gets the rest and half of ``beta``.  None: no merge.

    Returns
    -------
    Partition or (Partition, numpy.ndarray of int64)
        Under a seed the same ends as :func:`private_partition` (DNRR), and
        as :func:`partition_of_chunks` of the same aggregates.

    Notes
    -----
    O(n + #segments) kernel steps (DNRR) or O(m log n) (PrivTree),
    independent of the domain size.
    """
    method, factor = method_of(method, threshold_factor)
    fanout = check_privtree_fanout(privtree_fanout)
    rng = resolve_rng(rng)
    if privtree_merge is not None and method == PRIVTREE:
        eps_1, eps_m = merge_epsilons(epsilon, privtree_merge)
        leaves, true = partition_of_sorted(sorted_offsets, domain, eps_1, beta / 2, None, rng,
                                           counts, method=method, shards=shards, weights=True,
                                           privtree_fanout=fanout)
        part, true = merge_leaves(leaves, true, eps_m, rng)
        return (part, true) if weights else part
    if shards > 1 or (weights and counts is not None):
        chunks = [(sorted_offsets, counts) if counts is not None else aggregate(sorted_offsets)]
        out = partition_sharded(chunks, domain, shards, epsilon, beta, factor, rng, method=method,
                                privtree_fanout=fanout)
        return out if weights else out[0]
    if method == PRIVTREE:
        return privtree_of_sorted(sorted_offsets, domain, epsilon, beta, rng, counts,
                                  leaf_counts=weights, fanout=fanout)
    part = dnrr_of_sorted(sorted_offsets, domain, epsilon, beta, factor, rng, counts)
    if not weights:
        return part
    cut = np.searchsorted(sorted_offsets, part.end_offsets, side="right")
    return part, np.diff(cut, prepend=0).astype(np.int64)


def partition_of_chunks(chunks, domain, epsilon, beta, threshold_factor=None, rng=None,
                        threshold_size=None, *, method="dnrr", privtree_fanout=2):
    """The partition of a stream of sorted aggregates, and its true segment weights.

    The streaming form of :func:`partition_of_sorted` (under a seed the same
    ends): :func:`~pydp_synopsis.partitions.dnrr.dnrr_of_chunks` or
    :func:`~pydp_synopsis.partitions.privtree.privtree_of_chunks`.

    Parameters
    ----------
    chunks : iterable of (numpy.ndarray of uint64, numpy.ndarray of int64)
        Offsets from ``lo`` with their counts: offsets non-decreasing within
        and across chunks, counts >= 0 (checked by the caller).
    domain, epsilon, beta, threshold_factor, rng, method, privtree_fanout
        As for :func:`partition_of_sorted`.
    threshold_size : int, optional
        The size of the whole domain when ``domain`` is one of its shards.

    Returns
    -------
    (Partition, numpy.ndarray of int64)
    """
    method, factor = method_of(method, threshold_factor)
    rng = resolve_rng(rng)
    if method == PRIVTREE:
        return privtree_of_chunks(chunks, domain, epsilon, beta, rng, threshold_size,
                                  fanout=privtree_fanout)
    return dnrr_of_chunks(chunks, domain, epsilon, beta, factor, rng, threshold_size)


def assemble_partition(end_offsets, lo, hi, epsilon, beta, threshold_factor=None, shards=1, *,
                       method="dnrr", privtree_fanout=2):
    """The partition whose shards (in order) ended at ``end_offsets`` (no re-validation
    for DNRR; PrivTree's leaf depths are recomputed, which checks them)."""
    method, factor = method_of(method, threshold_factor)
    if method == PRIVTREE:
        return TreePartition._checked(end_offsets, lo, hi, epsilon, beta, shards,
                                      fanout=privtree_fanout)
    return Partition._checked(end_offsets, lo, hi, epsilon, beta, factor)


def partition_sharded(chunks, domain, k, epsilon, beta, threshold_factor=None, rng=None, *,
                      method="dnrr", privtree_fanout=2):
    """The partition of a sorted aggregate stream over k public shards, and its weights.

    Parameters
    ----------
    chunks : iterable of (numpy.ndarray of uint64, numpy.ndarray of int64)
        Sorted ``(offsets from lo, counts)``, as for :func:`partition_of_chunks`.
    domain : (int, int)
    k : int
        Number of shards (1: the unsharded partition, drawn from ``rng``).
    epsilon, beta, threshold_factor, rng, method, privtree_fanout
        Checked parameters; when k > 1 shard i draws from
        ``shard_streams(rng).derive(i)``.

    Returns
    -------
    (Partition, numpy.ndarray of int64)

    Notes
    -----
    Here the shards run one after the other on one stream of aggregates (the
    same result as on a cluster, :func:`shard_partition`).
    """
    method, factor = method_of(method, threshold_factor)
    rng = resolve_rng(rng)
    if k == 1:
        return partition_of_chunks(chunks, domain, epsilon, beta, factor, rng, method=method,
                                   privtree_fanout=privtree_fanout)
    lo, hi = domain
    shards = shard_domains(domain, k)
    streams = shard_streams(rng)
    stream = split_chunks(chunks, domain, k)
    ahead = next(stream, None)
    ends, weights = [], []

    def own(i):
        """Shard i's part of the stream (consumed before shard i + 1's starts)."""
        nonlocal ahead
        while ahead is not None and ahead[0] == i:
            yield ahead[1], ahead[2]
            ahead = next(stream, None)

    for i, shard in enumerate(shards):
        # the stream is sorted: shard i's entries come before shard i+1's, so
        # each shard's partition consumes them as they pass (memory O(chunk))
        part, w = partition_of_chunks(own(i), shard, epsilon, beta, factor, streams.derive(i),
                                      hi - lo + 1, method=method, privtree_fanout=privtree_fanout)
        ends.append(part.end_offsets.astype(np.uint64) + np.uint64(shard[0] - lo))
        weights.append(w)
    return (assemble_partition(np.concatenate(ends), lo, hi, epsilon, beta, factor, k, method=method,
                               privtree_fanout=privtree_fanout),
            np.concatenate(weights))


def shard_partition(agg, shard, shift, epsilon, beta, threshold_factor, threshold_size, key, seeded,
                    method="dnrr", privtree_fanout=2):
    """One shard's partition from its own stream, ends as offsets of the whole domain.

    The task a cluster runs per shard (:mod:`~pydp_synopsis.partitions.runner`):
    ``agg`` is the shard's whole sorted aggregate ``(offsets from the domain's
    lo, counts)``, ``shift`` the shard's first offset, ``key``/``seeded`` the
    shard's child stream (``shard_streams(rng)``'s child key i).  Under a
    seed, exactly shard i of :func:`partition_sharded`.
    """
    keys, counts = agg
    part, weights = partition_of_chunks(iter([(keys - np.uint64(shift), counts)]), shard, epsilon,
                                        beta, threshold_factor, Rng._from_key(key, seeded),
                                        threshold_size, method=method,
                                        privtree_fanout=privtree_fanout)
    return part.end_offsets.astype(np.uint64) + np.uint64(shift), weights
