"""Noisy trees over partition segments: the package's one door to the tree kernels.

The layout (``csrc/tree.c``): level 0 holds the ``m`` segment counts
(leaves); level ``l`` holds ``ceil(m / f^l)`` nodes, node ``u`` covering
segments ``[u f^l, min((u+1) f^l, m))``.  Levels ``0 .. L-1`` with
``L = max(1, ceil(log_f m))`` are released: the root is never part of a
minimal cover, so it is neither stored nor noised, and one item changes
exactly ``L`` released counts (L1 sensitivity ``L``).  ``f = 2`` is DNRR's
binary tree, larger ``f`` Hay et al.'s ``H_b``.

Every ``lib.pds_tree_*`` and ``lib.pds_interval_answer_*`` call of the
package is in this module: synopses call the functions below, never the C
core.  Arguments are taken as checked by the calling synopsis.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015, section 3.2, Theorem 3.2 (the tree over the segments).
.. [HRMS10] M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the Accuracy
   of Differentially Private Histograms Through Consistency", VLDB 2010,
   section 4 (the least-squares consistent tree, ``H_b``).
.. [QYL13] W. Qardaji, W. Yang, N. Li, "Understanding Hierarchical Methods
   for Differentially Private Histograms", VLDB 2013 (the choice of fanout).
.. [CPSSY12] G. Cormode, C. Procopiuc, D. Srivastava, E. Shen, T. Yu,
   "Differentially Private Spatial Decompositions", ICDE 2012, section 4.1
   (unequal splits of the budget over the levels) and section 5 (least
   squares with unequal node variances).
"""
import math
from fractions import Fraction

import numpy as np

from ._core import check, f64, ffi, i64, lib, u64
from .accounting import unit_shift_scale
from .aggregates import SegmentIndex
from .params import scale_parts

__all__ = ["ESTIMATORS", "MAX_COEF_WORK", "tree_shape", "noise_scale", "level_scales",
           "LevelWeights", "noisy_tree", "consistent_leaves", "coefficient_bound", "cover_terms",
           "prefix_terms", "interval_answers", "interval_noise"]

#: The boundary estimators of :func:`interval_answers`; the index is the kernel's code.
ESTIMATORS = ("cover", "uniform", "seal", "seal_uniform")

#: Node updates allowed for the exact coefficient of :func:`coefficient_bound`
#: (about 0.1 s per 10^8); beyond it the bound falls back to sqrt(#cover).
MAX_COEF_WORK = 2 * 10**8


def tree_shape(m, fanout=2):
    """``(levels, nodes)`` of the released tree of fanout ``fanout`` over ``m`` segments.

    Parameters
    ----------
    m : int
        Number of leaves, ``1 <= m < 2**62``.
    fanout : int
        ``f >= 2``.

    Returns
    -------
    (int, int)
        ``L = max(1, ceil(log_f m))`` released levels and their node count.

    Raises
    ------
    ParameterError
        ``m`` or ``fanout`` out of range.

    Examples
    --------
    >>> tree_shape(5)        # 5 leaves, 3 + 2 nodes, then the (unreleased) root
    (3, 10)
    >>> tree_shape(16, 16)
    (1, 16)
    """
    levels = ffi.new("uint32_t *")
    nodes = ffi.new("uint64_t *")
    check(lib.pds_tree_shape(m, fanout, levels, nodes), "tree shape")
    return int(levels[0]), int(nodes[0])


def noise_scale(levels, epsilon, delta=0):
    """Discrete Laplace scale of every node: ``L / epsilon`` (epsilon-DP for sensitivity ``L``).

    With ``delta > 0`` (a checked Fraction), ``min(L / epsilon, lambda)``
    with lambda calibrated to the l2 sensitivity ``sqrt(L)``
    (:func:`~pydp_synopsis.accounting.unit_shift_scale`; Andersson, Pagh,
    Torkamani, "Count on Your Elders", Lemma 5.5 and Theorem 1.3):
    ``(epsilon, delta)``-DP and ``L / scale``-DP.

    Examples
    --------
    >>> from fractions import Fraction
    >>> noise_scale(3, Fraction(1, 2))
    Fraction(6, 1)
    """
    return unit_shift_scale(levels, epsilon, delta)


def level_scales(levels, epsilon, ratio):
    """The discrete Laplace scale of each level when the leaves get ``ratio`` times the budget
    of every other level.

    Level ``l`` (leaves ``l = 0``) gets ``epsilon_l = epsilon w_l / (r + L -
    1)`` with ``w_0 = r = ratio`` and ``w_l = 1`` above, so ``sum_l
    epsilon_l = epsilon`` exactly.  One item changes one node per level by
    one, so scales ``1 / epsilon_l`` make the tree epsilon-DP ([CPSSY12]_
    section 4.1: any split of the budget over the levels).  Short ranges are
    answered mostly by leaves, long ones by every level about equally (a
    cover takes up to ``2 (f - 1)`` nodes of each level below the top), so
    only the leaves get more.  ``ratio = 1`` is the equal split, every scale
    ``L / epsilon`` (:func:`noise_scale`).

    Parameters
    ----------
    levels : int
        ``L >= 1``.
    epsilon : Fraction
        The tree's budget (exact, checked by the caller).
    ratio : Fraction
        ``r >= 1`` (checked by the caller).

    Returns
    -------
    list of Fraction
        ``L`` scales, leaves first.

    Examples
    --------
    >>> from fractions import Fraction
    >>> [str(b) for b in level_scales(3, Fraction(1), Fraction(2))]
    ['2', '4', '4']
    """
    ratio = Fraction(ratio)
    total = ratio + (levels - 1)
    return [total / (epsilon * (ratio if l == 0 else 1)) for l in range(levels)]


class LevelWeights:
    """The per-level factors the noise kernels take for a tree of unequal node scales.

    For scales ``b_l`` (:func:`level_scales`) with largest ``B``:
    ``rho[l] = Var(b_l) / Var(B)`` (the node variances of the least-squares
    estimate, in units of one ``B``-noise's variance) and ``fac[l] = b_l /
    B <= 1``.  An answer ``sum_v w_v Z_v`` then has variance ``Var(B) sum_v
    rho_v w_v^2`` (what :func:`interval_noise` returns as ``sumsq``), and its
    moment generating function is at most that of ``sum_v (fac_v w_v)
    Z'_v`` with ``Z'`` i.i.d. of scale ``B``: for the discrete Laplace,
    ``log E exp(x Z_b)`` at fixed ``u = b x`` grows with ``b`` (``1 / M =
    1 - sinh^2(u s) / sinh^2(s)`` with ``s = 1 / (2 b)``, and ``sinh(u s) /
    sinh(s)`` falls as ``s`` grows for ``u < 1``).  So the tail bounds take
    ``sum (fac w)^2 <= kappa * sumsq`` (``kappa = max_l fac_l^2 / rho_l``)
    and ``max |fac w|`` at scale ``B``.

    Attributes
    ----------
    rho, fac : numpy.ndarray of float64
        One entry per level, leaves first.
    kappa : float
        ``max_l fac_l^2 / rho_l`` (about 1), rounded up.
    scale : Fraction
        ``B``, the largest scale.
    """

    __slots__ = ("rho", "fac", "kappa", "scale")

    def __init__(self, scales):
        big = max(scales)
        self.scale = big
        # Var(b) = 2 q / (1 - q)^2, q = exp(-1/b), in the log domain: tiny scales
        # (epsilon in the millions) underflow the variances but not their ratios;
        # rho is kept >= 1e-100 (the kernels need positive variances whose
        # products stay normal)
        log_var = [math.log(2.0) - float(1 / b) - 2.0 * math.log(-math.expm1(-float(1 / b)))
                   for b in scales]
        top = log_var[scales.index(big)]
        self.rho = np.maximum(np.exp(np.array(log_var) - top), 1e-100)
        self.fac = np.array([float(b / big) for b in scales])
        self.kappa = float(np.exp(np.max(2 * np.log(self.fac) - np.log(self.rho)))) * (1 + 1e-12)


def noisy_tree(counts, fanout, epsilon, rng, delta=0, scales=None):
    """Release the tree over segment counts: every node's count plus discrete Laplace noise.

    Parameters
    ----------
    counts : numpy.ndarray of int64
        The ``m >= 1`` segment counts (all ``>= 0``).
    fanout : int
        ``f >= 2``.
    epsilon : Fraction
        Privacy parameter of the release (exact, checked by the caller).
    rng : Rng
        The generator; one draw per node, leaves first, level by level.
    delta : Fraction
        0 (pure) or in (0, 1): the node scale is :func:`noise_scale` ``(L, epsilon, delta)``.
    scales : list of Fraction, optional
        One scale per level (:func:`level_scales`, pure only) instead.

    Returns
    -------
    numpy.ndarray of int64
        The :func:`tree_shape` nodes, level by level, leaves first.

    Notes
    -----
    epsilon-DP: one item changes exactly ``L`` released counts by one, and
    each gets noise of scale :func:`noise_scale` ``(L, epsilon)``
    (DNRR section 3.2), or level ``l``'s node noise of scale ``b_l`` with
    ``sum_l 1 / b_l = epsilon``.  O(#nodes).
    """
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    m = counts.size
    levels, n_nodes = tree_shape(m, fanout)
    nodes = np.empty(n_nodes, dtype=np.int64)
    if scales is not None:
        parts = [scale_parts(b) for b in scales]
        t = ffi.new("uint64_t[]", [a for a, _ in parts])
        s = ffi.new("uint64_t[]", [b for _, b in parts])
        with rng.native() as p:
            check(lib.pds_tree_build_levels(p, i64(counts), m, fanout, t, s, levels,
                                            i64(nodes), n_nodes), "noisy tree")
        return nodes
    t, s = scale_parts(noise_scale(levels, epsilon, delta))
    with rng.native() as p:
        check(lib.pds_tree_build(p, i64(counts), m, fanout, t, s, i64(nodes), n_nodes),
              "noisy tree")
    return nodes


def consistent_leaves(nodes, m, fanout, weights=None):
    """Hay et al.'s least-squares leaf estimates implied by every released node (float64[m]).

    Post-processing: free in privacy.  Exact generalised least squares,
    including the ragged right edge of each level; with ``weights`` (a
    :class:`LevelWeights`) each level's nodes weighted by the inverse of
    their variance ([CPSSY12]_ section 5).  O(#nodes).
    """
    leaf = np.empty(m, dtype=np.float64)
    if weights is None:
        check(lib.pds_tree_consistent_leaves(i64(nodes), m, fanout, f64(leaf)), "consistency")
    else:
        check(lib.pds_tree_consistent_leaves_levels(i64(nodes), m, fanout, f64(weights.rho),
                                                    weights.rho.size, f64(leaf)), "consistency")
    return leaf


def cover_terms(levels, fanout, per_level=None):
    """Most nodes in a minimal cover of a segment range.

    ``< f`` at each end of every level below the top, ``2 (f - 1)`` in all,
    and the ``<= f`` nodes of the top level.  With ``per_level`` (one
    number per level, leaves first), the largest sum of those numbers over
    the nodes of a cover.

    Examples
    --------
    >>> cover_terms(3, 2)
    6
    >>> cover_terms(3, 2, [1.0, 1.0, 1.0])
    6.0
    """
    if per_level is None:
        return 2 * (fanout - 1) * (levels - 1) + fanout
    w = [float(x) for x in per_level]
    return 2 * (fanout - 1) * sum(w[:levels - 1]) + fanout * w[levels - 1]


def prefix_terms(levels, fanout, per_level=None):
    """Most nodes in a minimal cover of a prefix ``[0, j)``.

    ``f - 1`` per level below the top, ``f`` on the top level (with
    ``per_level``: the largest sum of its numbers, as :func:`cover_terms`).

    Examples
    --------
    >>> prefix_terms(3, 2)
    4
    """
    if per_level is None:
        return (fanout - 1) * (levels - 1) + fanout
    w = [float(x) for x in per_level]
    return (fanout - 1) * sum(w[:levels - 1]) + fanout * w[levels - 1]


def coefficient_bound(m, fanout, max_work=None, weights=None):
    """``s >= |a_v|`` for the consistent estimate ``sum_v a_v x_v`` of any segment range.

    Parameters
    ----------
    m, fanout : int
        The tree (:func:`tree_shape`).
    max_work : int, optional
        Node updates allowed for the exact value (default
        :data:`MAX_COEF_WORK`, read at call time).
    weights : LevelWeights, optional
        Unequal node scales: the bound is then on ``fac_v |a_v|`` for the
        estimate weighted by ``rho`` (:class:`LevelWeights`), its fallback
        ``sqrt(kappa * sum of rho over the largest cover)``.

    Returns
    -------
    float
        The exact maximum coefficient, found by smoothing a unit observation
        at every node of the (at most two distinct) top-level subtrees and
        rounded up for the float rounding (about 0.61 for ``f = 2``, 0.94
        for ``f = 16``); ``sqrt(cover_terms)`` when that costs more than
        ``max_work`` or is larger (the projection's ``||a||_2 <= ||c||_2``).

    Notes
    -----
    O(s^2) for top-level subtrees of s nodes, capped by ``max_work``.

    Examples
    --------
    >>> round(coefficient_bound(13, 2), 2)
    0.61
    """
    levels = tree_shape(m, fanout)[0]
    out = ffi.new("double *")
    work = MAX_COEF_WORK if max_work is None else max_work
    if weights is None:
        fallback = math.sqrt(cover_terms(levels, fanout))
        st = lib.pds_tree_consistent_max_coef(m, fanout, work, out)
    else:
        fallback = math.sqrt(weights.kappa * cover_terms(levels, fanout, weights.rho))
        st = lib.pds_tree_consistent_max_coef_levels(m, fanout, f64(weights.rho),
                                                     f64(weights.fac), levels, work, out)
    if st == lib.PDS_ERANGE:
        return fallback
    check(st, "consistent tree coefficients")
    return min(float(out[0]) * (1 + 1e-9) + 1e-12, fallback)


def _segments(ends, lo, hi, lookup):
    """The segments of the endpoints (``searchsorted(ends, x, "left")``, uint64)
    through ``lookup``, the partition's bucket-table search; without one, a
    lookup over ``ends`` is built for this call."""
    if lookup is None:
        lookup = SegmentIndex(ends)
    return lookup.of(lo).astype(np.uint64), lookup.of(hi).astype(np.uint64)


def interval_answers(ends, lo, hi, estimator, tau, *, nodes=None, fanout=2, prefix=None,
                     lookup=None):
    """Answers of the inclusive offset intervals ``[lo[q], hi[q]]`` from a released tree.

    Parameters
    ----------
    ends : numpy.ndarray of uint64
        Segment end offsets (strictly increasing, the last the domain's).
    lo, hi : numpy.ndarray of uint64
        1-D, ``lo <= hi <= ends[-1]``.
    estimator : str
        One of :data:`ESTIMATORS`: how a boundary segment the interval meets
        only in part is counted (the IntervalSynopsis class doc).
    tau : float
        The interior cap of ``"seal_uniform"`` (the partition threshold).
    nodes : numpy.ndarray of int64, optional
        The raw noisy tree of fanout ``fanout`` (answers from minimal covers) ...
    prefix : numpy.ndarray of float64, optional
        ... or the ``m + 1`` prefix sums of segment estimates (``prefix[0] = 0``).
    lookup : SegmentIndex, optional
        The partition's :attr:`~pydp_synopsis.Partition.lookup` over ``ends``
        (default: one built for this call): the endpoints' segments by its
        bucket table.

    Returns
    -------
    numpy.ndarray of float64

    Notes
    -----
    O(q log m): the endpoints' segments (``lookup``), then one C
    call reading ``<= 2 (f - 1) L + 2`` nodes or 4 prefix sums per interval.
    """
    seg_lo, seg_hi = _segments(ends, lo, hi, lookup)
    out = np.empty(lo.size, dtype=np.float64)
    args = (u64(ends), u64(lo), u64(hi), u64(seg_lo), u64(seg_hi), lo.size,
            ESTIMATORS.index(estimator), tau, f64(out))
    if prefix is None:
        check(lib.pds_interval_answer_tree(i64(nodes), ends.size, fanout, *args),
              "interval answers")
    else:
        check(lib.pds_interval_answer_prefix(f64(prefix), ends.size, *args), "interval answers")
    return out


def interval_noise(ends, lo, hi, estimator, *, fanout=2, consistent=False, kary=None,
                   corners=True, lookup=None, weights=None):
    """The exact weights of the released noise in the answers of :func:`interval_answers`.

    An answer's noise is ``sum_v w_v Z_v`` over the independent noise terms
    ``Z_v`` of the release, all of one scale: the tree's nodes (the minimal
    cover and the boundary leaves; ``consistent=True``: Hay et al.'s least
    squares weights on every raw node, computed by Gaussian smoothing on the
    tree) or the k-ary counter's noise terms (``kary=k``: each prefix sum
    holds the terms of its offset digits, APT Algorithm 2).

    Parameters
    ----------
    ends, lo, hi, estimator
        As :func:`interval_answers`.
    fanout : int
        The tree's fanout (ignored with ``kary``).
    consistent : bool
        The consistent estimate instead of the raw tree's covers.
    kary : int, optional
        The counter's odd fanout ``k``: the answers are prefix differences
        of the counter's releases.
    corners : bool
        False: only the unclipped linear map (column 3, copied to all four
        columns), which is all the std needs.
    lookup : SegmentIndex, optional
        As for :func:`interval_answers`.
    weights : LevelWeights, optional
        A tree of unequal node scales: ``sumsq`` is then ``sum_v rho_v
        w_v^2`` (the variance in units of the largest scale's) and
        ``maxabs`` is ``max_v fac_v |w_v|`` (:class:`LevelWeights`).

    Returns
    -------
    sumsq, maxabs : numpy.ndarray of float64, shape (q, 4)
        ``sum_v w_v^2`` (the variance in units of one term's variance) and
        ``max_v |w_v|`` at each clip corner: ``"seal_uniform"`` clips a
        boundary segment's estimate into ``[0, tau]``, which scales that
        term's noise by some ``theta`` in [0, 1], so the noise lies between
        those of the four corners ``theta`` in {0, 1}^2 (column ``j``: bit 0
        keeps the left boundary's fraction, bit 1 the right one's).  Column
        3 is the unclipped linear map; the other estimators are linear and
        their four columns are equal.

    Notes
    -----
    O(q log m) for the searches, then one C call: O(cover) per query for
    the raw tree, O(levels) for the consistent tree (independent of the
    fanout), O(log_k m) for kary.
    """
    seg_lo, seg_hi = _segments(ends, lo, hi, lookup)
    sumsq = np.empty((lo.size, 4), dtype=np.float64)
    maxabs = np.empty((lo.size, 4), dtype=np.float64)
    args = (u64(ends), u64(lo), u64(hi), u64(seg_lo), u64(seg_hi), lo.size,
            ESTIMATORS.index(estimator), int(bool(corners)), f64(sumsq), f64(maxabs))
    if kary is not None:
        check(lib.pds_interval_var_kary(ends.size, kary, *args), "interval noise")
    elif weights is not None:
        check(lib.pds_interval_var_tree_levels(ends.size, fanout, int(bool(consistent)),
                                               f64(weights.rho), f64(weights.fac),
                                               weights.rho.size, *args), "interval noise")
    else:
        check(lib.pds_interval_var_tree(ends.size, fanout, int(bool(consistent)), *args),
              "interval noise")
    return sumsq, maxabs
