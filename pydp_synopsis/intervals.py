"""The interval synopsis: a private partition plus a noisy tree over its segments.

Dwork, Naor, Reingold, Rothblum (DNRR), section 3.2 and Theorem 3.2: the
domain is cut into segments by a private partition (by default PrivTree's
[ZXX16]_, :mod:`pydp_synopsis.privtree`; or DNRR's Fig. 1: each segment
holds few items), the segments become the leaves of a noisy tree
(:mod:`pydp_synopsis.trees`), and an interval query is answered from the
tree nodes that cover the segments it touches.  The error is
``O((log D + log^2 n log(1/beta)) / epsilon)`` for all intervals at once,
and the released object holds only private quantities: the segment ends and
the noisy tree.

The defaults were chosen by measured RMSE; the evidence is in
docs/benchmarks/intervals.md, sections "Accuracy against the published peers"
(PrivTree, the default) and "Tuning (the DNRR partition's defaults)".

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
   Rectangle Queries via Private Partitions", ASIACRYPT 2015, Fig. 1,
   Theorem 2.1, Remark 2.2 (the partition), section 3.2, Theorem 3.2.
.. [ZXX16] Zhang, Xiao, Xie, "PrivTree: A Differentially Private Algorithm for
   Hierarchical Decompositions", SIGMOD 2016, Algorithm 2, Corollary 1.
.. [HRMS10] Hay, Rastogi, Miklau, Suciu, VLDB 2010 (consistency).
.. [QYL13] Qardaji, Yang, Li, VLDB 2013 (fanout).
.. [APT] Andersson, Pagh, Torkamani, Algorithm 2 (k-ary tree with subtraction).
"""
import math
from fractions import Fraction

import numpy as np

from . import persist, trees
from .accounting import check_delta_or_zero
from .budget import charge, describe
from .counters import KaryTreeCounter
from .persist import check_pure_epsilon, state_delta
from .errorbars import assemble, noise_std
from .errors import DomainError, FormatError, ParameterError
from .params import (MAX_SCALE, as_offsets, check_beta, check_bool, check_choice, check_domain, check_int,
                     check_ratio, check_share, check_threshold_factor, exact_epsilon, is_int,
                     split_epsilon)
from .aggregates import aggregate, check_counts
from .partitions import Partition, TreePartition, fig1_threshold, partition_of_sorted, partition_source_axis
from .partitions.privtree import PRIVTREE, privtree_parameters
from .partitions.sharded import MAX_SHARDS, check_shards
from .rng import resolve_rng
from .sources import as_source, is_source
from ._threads import THREAD_ROWS, halves, run_parts, sort_u64
from .tails import laplace_sum_tail, laplace_weighted_tail
from .units import (Column, clipped_from_record, columns_from_record, columns_to_record,
                    convert_corners, prepare_build)

__all__ = ["IntervalSynopsis"]

# Defaults, chosen by measured RMSE (docs/benchmarks/intervals.md: "Accuracy against
# the published peers" for PrivTree's, "Tuning" for DNRR's).
DEFAULT_TREE = "hierarchical"
DEFAULT_FANOUT = 16
DEFAULT_PARTITION = "privtree"
DEFAULT_ESTIMATOR = "uniform"            # with partition="privtree"
DEFAULT_SHARE = 0.25
DEFAULT_LEVEL_RATIO = Fraction(7, 4)     # tree="hierarchical", pure epsilon
# with partition="dnrr"
DNRR_ESTIMATOR = "seal_uniform"
DNRR_SHARE = 0.25
DNRR_FACTOR = 1
_PARTITIONS = ("privtree", "dnrr")
_PRIVTREE_ESTIMATORS = ("uniform", "cover")

_TREES = ("binary", "hierarchical", "kary")
_KIND = "interval-synopsis"
_FORMAT = 2                # DNRR partitions (release 0.1 wrote 2 as well)
_FORMAT_PRIVTREE = 3
_FORMAT_LEVELS = 4         # a tree of unequal level budgets (level_ratio != 1), either partition
_MAX_FANOUT = 65536
_MAX_K = 65535

def _check_method(partition, estimator, partition_share, threshold_factor):
    """The partition method and the options that depend on it, with their defaults."""
    if estimator is not None:
        estimator = check_choice(estimator, "estimator", trees.ESTIMATORS)
    if partition is None:
        # DNRR-only options ask for DNRR's partition
        dnrr_only = threshold_factor is not None or estimator in ("seal", "seal_uniform")
        partition = "dnrr" if dnrr_only else DEFAULT_PARTITION
    method = check_choice(partition, "partition", _PARTITIONS)
    if method == "privtree":
        if threshold_factor is not None:
            raise ParameterError("threshold_factor is an option of partition='dnrr' only "
                                 "(PrivTree has no threshold)")
        estimator = DEFAULT_ESTIMATOR if estimator is None else estimator
        if estimator not in _PRIVTREE_ESTIMATORS:
            raise ParameterError(f"estimator must be one of {_PRIVTREE_ESTIMATORS} with "
                                 f"partition='privtree' (the seal estimators need DNRR's "
                                 f"seal points), got {estimator!r}")
        share = DEFAULT_SHARE if partition_share is None else partition_share
        return method, estimator, share, None
    estimator = DNRR_ESTIMATOR if estimator is None else estimator
    share = DNRR_SHARE if partition_share is None else partition_share
    factor = check_threshold_factor(DNRR_FACTOR if threshold_factor is None
                                    else threshold_factor)
    return method, estimator, share, factor


def _check_options(tree, fanout, consistency, estimator, k):
    """The structural options, checked (one rule for build and load)."""
    tree = check_choice(tree, "tree", _TREES)
    estimator = check_choice(estimator, "estimator", trees.ESTIMATORS)
    consistency = check_bool(consistency, "consistency")
    k = check_int(k, "k", 3, _MAX_K)
    if k % 2 == 0:
        raise ParameterError(f"k must be an odd integer in [3, {_MAX_K}], got {k!r}")
    fanout = check_int(fanout, "fanout", 2, _MAX_FANOUT)
    return tree, fanout, consistency, estimator, k


def _check_level_ratio(level_ratio, tree, delta):
    """``level_ratio`` as a Fraction: its default, or the one given where it is allowed."""
    if level_ratio is None:
        return DEFAULT_LEVEL_RATIO if tree == "hierarchical" and not delta else Fraction(1)
    ratio = check_ratio(level_ratio, "level_ratio")
    if ratio != 1 and tree == "kary":
        raise ParameterError("level_ratio must be 1 with tree='kary' (the counter's levels "
                             f"share its budget equally), got {level_ratio!r}")
    if ratio != 1 and delta:
        raise ParameterError("level_ratio must be 1 with delta > 0 (the l2 calibration needs "
                             f"equal node scales), got {level_ratio!r}")
    return ratio


def _tree_scales(levels, eps_t, ratio):
    """The node scale of each level as the sampler takes them (rounded up if their parts are
    huge), or None for the equal split (``ratio == 1``, or one level: nothing to split)."""
    if ratio == 1 or levels <= 1:
        return None
    return [Fraction(*trees.scale_parts(b)) for b in trees.level_scales(levels, eps_t, ratio)]


def _check_level_scales(ratio, domain, tree, fanout, eps_t):
    """Refuse, before anything is read or spent, a ratio whose upper levels' scale could pass
    the sampler's ``2**48`` on this domain (the levels are known only after the partition:
    the most a partition of the domain can have is checked)."""
    if ratio == 1 or tree == "kary":
        return
    f = 2 if tree == "binary" else fanout
    most = min(domain[1] - domain[0] + 1, (1 << 62) - 1)
    levels = trees.tree_shape(most, f)[0]
    if levels > 1 and max(trees.level_scales(levels, eps_t, ratio)) > MAX_SCALE:
        raise ParameterError(
            f"level_ratio={float(ratio):g} is too large for this domain and epsilon: with up "
            f"to {levels} tree levels the upper levels would get noise of scale above 2**48 "
            f"(use a smaller level_ratio, a larger fanout or a larger epsilon)")


class IntervalSynopsis:
    """How many values fall in any range ``[lo, hi]``, answered with epsilon-differential privacy.

    Build it once from one integer column (``build(values, domain=(lo, hi),
    epsilon=1)``), then ask as many range counts as you like: queries cost
    no further privacy.  Each answer comes with error bars:
    ``count_many(lo, hi, return_std=True)`` gives its exact noise standard
    deviation, :meth:`confidence_intervals` a per-query interval holding the
    true count with the confidence asked, and :meth:`error_bound` one bound
    for every range at once.  One row is one unit of privacy (adding or
    removing a row changes any output's probability by at most ``e**epsilon``);
    the domain is public and may hold up to 2**64 values.  Save with
    :meth:`save`, reload with :func:`pydp_synopsis.load`.

    >>> import numpy as np, pydp_synopsis as ps
    >>> ages = np.random.default_rng(0).integers(18, 90, 5000)
    >>> s = ps.IntervalSynopsis.build(ages, domain=(0, 120), epsilon=1.0, rng=ps.Rng(seed=1))
    >>> bool(abs(s.count(18, 40) - np.count_nonzero(ages <= 40)) < 100)
    True

    The mechanism (DNRR section 3.2):

    1. A private partition with ``epsilon_p = epsilon * partition_share``
       and failure probability ``beta / 2`` cuts the domain into ``m``
       segments.

       ``partition="privtree"`` (the default): PrivTree's binary
       decomposition with depth-biased counts ([ZXX16]_ Algorithm 2,
       :class:`~pydp_synopsis.partitions.privtree.TreePartition`): nodes split while
       they hold more than about ``depth * 2.08 / epsilon_p`` items, so
       leaves are small where the data are dense, a heavy value becomes a
       leaf of its own, and empty stretches cost a few empty leaves.  A
       leaf of width >= 2 at depth ``d`` holds at most ``W_d`` items (all
       leaves at once with probability ``>= 1 - beta/2``, duplicates
       included: :meth:`TreePartition.leaf_weight_bounds
       <pydp_synopsis.partitions.privtree.TreePartition.leaf_weight_bounds>`); a leaf
       of width 1 is never cut by an interval.

       ``partition="dnrr"``: DNRR's Fig. 1
       (:func:`~pydp_synopsis.partitions.private_partition`, Theorem 2.1).
       Its threshold is
       ``T = c (ln D + ln(2/beta)) / epsilon_p`` with ``c = threshold_factor``
       (3 in Fig. 1).  Whatever ``c``, every segment's weight *excluding the
       position where it sealed* (its end) is at most ``W = T + 2 (k - 1)``
       with probability ``>= 1 - beta/2``, where ``k`` bounds the one-sided
       discrete Laplace noises of ``<= D`` thresholds and ``<= D`` positions
       (the proof of Theorem 2.1: a position that did not seal had
       ``count + nu <= T + Z``).  The seal position itself may hold any
       number of duplicates: a heavy value always ends its segment.
    2. A noisy tree over the ``m`` segment counts with
       ``epsilon_t = epsilon - epsilon_p``:

       * ``tree="binary"``: DNRR's binary tree; ``tree="hierarchical"``: the
         same with fanout ``f = fanout`` (Hay et al.'s H_b).  Levels
         ``0 .. L-1``, ``L = max(1, ceil(log_f m))``, are released (the root
         is left out: a minimal cover never needs it).  One item changes
         one node per level by one; the leaves get ``epsilon_0 = epsilon_t
         r / (r + L - 1)`` and every other level ``epsilon_t / (r + L -
         1)``, ``r = level_ratio``, each node discrete Laplace noise of
         scale ``1 / epsilon_l`` ([CPSSY12]_ section 4.1: any split over
         the levels).  ``r = 1`` is the equal split of DNRR and Hay et al.
         (scale ``L / epsilon_t`` everywhere); ``r = 7/4`` (the default of
         ``tree="hierarchical"``) gives the leaves, which answer short
         ranges, 7/4 of the others' budget, so short ranges get less
         noise and long ones, which use every level, a little more.  With
         ``consistency=True`` the released tree is post-processed into its
         least-squares consistent estimate (Hay et al. 2010; each node
         weighted by the inverse of its variance, [CPSSY12]_ section 5),
         free in privacy.
       * ``tree="kary"``: the segment counts are fed as a stream to
         :class:`~pydp_synopsis.counters.KaryTreeCounter` (Andersson, Pagh,
         Torkamani, k-ary tree with subtraction, Algorithm 2), which releases
         all ``m`` noisy prefix sums; a segment range is a difference of two.

    3. An interval ``[lo, hi]`` touches segments ``k .. r``; those strictly
       inside, and a boundary segment it covers fully, are counted whole.  A
       boundary segment it meets in part is handled by ``estimator``
       (``W`` as above, ``mu`` = the largest multiplicity of a value; over
       a PrivTree partition ``"uniform"`` and ``"cover"`` err by at most the
       cut leaf's ``W_d``, whatever the duplicates, and the seal estimators,
       which need DNRR's seal points, are refused):

       * ``"cover"`` (DNRR's minimal cover): counted whole.  Bias ``>= 0``,
         at most ``2 W + mu``: the right boundary's excess includes its seal
         point, which may be a heavy duplicate.
       * ``"uniform"``: its estimate times the fraction of its span inside.
         Unbiased when items are uniform inside segments; ``|bias| <= 2 (W +
         mu)``; loses a heavy seal point almost whole when ``lo`` is on it.
       * ``"seal"``: counted whole iff its seal (end) lies in ``[lo, hi]``,
         else not at all.  The left boundary then over-counts the items
         before ``lo`` (``<= W``, never the seal point), the right one
         under-counts the items up to ``hi`` (``<= W``, never the seal
         point): the two biases have opposite signs, ``|bias| <= W``,
         whatever the duplicates.
       * ``"seal_uniform"``: the segment is modelled as its seal point
         holding ``est - iota`` plus an interior ``[first, end - 1]`` holding
         ``iota = clip(est, 0, T)`` spread uniformly, and the query takes its
         part of that model.  Heavy seal points are kept whole like
         ``"seal"``, light interiors are split like ``"uniform"``;
         ``|bias| <= W + T``.

    Defaults: ``partition="privtree"``, ``tree="hierarchical"``,
    ``fanout=16``, ``level_ratio=7/4``, ``consistency=True``,
    ``estimator="uniform"``, ``partition_share=0.25``;
    chosen by measured RMSE against PrivTree, DAWA, OpenDP's tree and the
    hierarchical histograms with ``python benchmarks/bench_accuracy.py
    --only 1d`` (docs/benchmarks/intervals.md, "Accuracy against the
    published peers").  Passing ``threshold_factor`` or a seal estimator
    selects ``partition="dnrr"``, whose defaults are
    ``estimator="seal_uniform"``, ``partition_share=0.25``,
    ``threshold_factor=1`` (tuned with ``benchmarks/bench_intervals.py
    --tune``, docs/benchmarks/intervals.md, "Tuning"); DNRR's own configuration is
    ``partition="dnrr", tree="binary", consistency=False,
    estimator="cover", partition_share=0.5, threshold_factor=3``.

    A threshold factor below DNRR's 3 keeps epsilon-DP (the threshold is
    public) and gives more, lighter segments; Theorem 2.1's "at most n
    segments" is then not claimed, and :meth:`error_bound` uses the weight
    bound ``W`` that holds for the factor used.  Factors below 0.7 are
    refused (:func:`~pydp_synopsis.params.check_threshold_factor`): the
    partition would seal ~``D^(1-c)`` empty segments.

    Attributes
    ----------
    partition : Partition
        The released partition (segment ends only).
    epsilon : Fraction
        Total privacy loss: ``epsilon_partition + epsilon_tree <= epsilon`` asked.
    epsilon_partition, epsilon_tree : Fraction
        The split actually used (each rounded down to an exact rational).
    delta : Fraction
        The delta asked for (0: pure); the synopsis is ``(epsilon, delta)``-DP.
    pure_epsilon : Fraction
        The pure epsilon also achieved: ``epsilon_partition + S / scale``
        (``S`` the nodes one item changes); equals ``epsilon`` when
        ``delta == 0`` or when the pure scale is the smaller.
    domain : tuple of int
        Inclusive ``(lo, hi)``.
    tree, fanout, consistency, estimator, k, level_ratio
        The options used (``level_ratio`` a Fraction; 1 for kary).

    References
    ----------
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
       Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.2,
       Theorem 3.2 (and Fig. 1, Theorem 2.1, Remark 2.2 for the partition).
    .. [HRMS10] Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
       Differentially Private Histograms Through Consistency", VLDB 2010, section 4.
    .. [QYL13] Qardaji, Yang, Li, "Understanding Hierarchical Methods for
       Differentially Private Histograms", VLDB 2013 (fanout choice).
    .. [APT] Andersson, Pagh, Torkamani, "Improved Counting under Continual
       Observation with Pure Differential Privacy", Algorithm 2.
    .. [CPSSY12] Cormode, Procopiuc, Srivastava, Shen, Yu, "Differentially
       Private Spatial Decompositions", ICDE 2012, sections 4.1 and 5
       (unequal budgets over the levels, weighted least squares).
    """

    __slots__ = ("partition", "epsilon", "epsilon_partition", "epsilon_tree", "beta", "delta",
                 "pure_epsilon", "_scale", "level_ratio", "_scales", "_weights",
                 "tree", "fanout", "consistency", "estimator", "k", "_released", "_prefix",
                 "_levels", "_ends", "_tau", "_coef", "_columns", "clipped")

    def __init__(self):
        raise TypeError("use IntervalSynopsis.build(...) or pydp_synopsis.load(path)")

    @classmethod
    def _from_release(cls, partition, released, *, epsilon_tree, beta, tree, fanout,
                      consistency, estimator, k, delta=0, level_ratio=1):
        """The one constructor (build and load): released numbers and checked options in.

        Everything but the arguments is post-processing of the release: the
        consistent prefix sums, the tree shape, the seal_uniform cap.
        """
        self = cls.__new__(cls)
        self.partition = partition
        self.epsilon_partition, self.epsilon_tree = partition.epsilon, epsilon_tree
        self.epsilon = partition.epsilon + epsilon_tree
        self.beta = beta
        self.tree, self.fanout, self.consistency = tree, fanout, consistency
        self.estimator, self.k = estimator, k
        m = len(partition)
        self._released = released
        self._ends = np.ascontiguousarray(partition.end_offsets, dtype=np.uint64)
        self._tau = float(partition.threshold)
        self._coef = None
        self._columns = None                     # set by build/load when described
        self.clipped = False                     # build(clip=True): values were clipped
        self._levels, self._prefix = None, None
        self.level_ratio = Fraction(level_ratio)
        self._scales, self._weights = None, None
        if tree != "kary":
            self._levels = trees.tree_shape(m, fanout)[0]
            # unequal levels: the scales released with and the kernels' per-level factors
            self._scales = _tree_scales(self._levels, epsilon_tree, self.level_ratio)
            if self._scales is not None:
                self._weights = trees.LevelWeights(self._scales)
        if tree == "kary":
            self._prefix = np.concatenate(([0.0], released.astype(np.float64)))
        elif consistency:
            leaf = trees.consistent_leaves(released, m, fanout, self._weights)
            self._prefix = np.concatenate(([0.0], np.cumsum(leaf)))
        # the node scale: S nodes move by one per item (S = L levels, or the
        # kary counter's height h), calibrated to l1 = S (pure) or also to
        # l2 = sqrt(S) with delta > 0; with unequal levels the largest scale
        sens = self._kary_shape()[2] if tree == "kary" else self._levels
        self.delta = delta
        if self._scales is not None:
            self._scale = self._weights.scale
            self.pure_epsilon = partition.epsilon + sum(1 / b for b in self._scales)
        else:
            self._scale = trees.noise_scale(sens, epsilon_tree, delta)
            self.pure_epsilon = partition.epsilon + Fraction(sens) / self._scale
        return self

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, values, *, domain, epsilon, beta=0.05, rng=None, tree=DEFAULT_TREE,
              fanout=DEFAULT_FANOUT, consistency=True, estimator=None,
              partition_share=None, threshold_factor=None, k=19, budget=None,
              counts=None, shards=None, delta=0, columns=None, scale=None,
              resolution=None, dropna=False, partition=None, level_ratio=None, clip=False):
        """Release an epsilon-DP interval synopsis of ``values``.

        Parameters
        ----------
        values : array_like of int, or a Source
            The data items (duplicates allowed), all inside ``domain``; or a
            one-column :class:`~pydp_synopsis.sources.Source` (a file, a
            database table, a dask collection), read in chunks with memory
            independent of its length (docs/guide/sources.md).
        domain : (int, int)
            Inclusive bounds; ``hi - lo + 1`` may be up to ``2**64``.
        epsilon : float or Fraction
            Total privacy loss (rounded down to an exact rational).
        beta : float
            Failure probability of the accuracy guarantee; the partition gets
            ``beta / 2`` (DNRR Theorem 3.2 proof).
        rng : Rng, optional
            Randomness (OS-seeded by default; seeds are for tests only).
        tree : {"binary", "hierarchical", "kary"}
        fanout : int
            Fanout of ``tree="hierarchical"`` (2 .. 65536; ``"binary"`` is 2).
            Small ranges favour a flatter tree (``fanout=64``:
            docs/benchmarks/intervals.md).
        consistency : bool
            Least-squares post-processing of the binary/hierarchical tree
            (ignored for kary).
        level_ratio : float or Fraction, optional
            The leaves get ``level_ratio`` times the budget of every other
            level of the tree (class doc, step 2), in ``[1, 64]``.  Default
            7/4 for ``tree="hierarchical"`` with ``delta = 0``, else 1 (the
            equal split of DNRR and Hay et al., the only one allowed with
            ``tree="kary"`` or ``delta > 0``).  Larger ratios favour short
            ranges, 1 the longest (docs/benchmarks/intervals.md, "Accuracy against the
            published peers").
        estimator : {"cover", "uniform", "seal", "seal_uniform"}, optional
            Default ``"uniform"`` (PrivTree; ``"cover"`` is the other one
            allowed there), ``"seal_uniform"`` (DNRR).
        partition_share : float, optional
            Fraction of ``epsilon`` spent on the partition, in (0, 1)
            (default 0.25 for both partitions).
        threshold_factor : float, optional
            DNRR only: the partition threshold's constant ``c`` (see the
            class doc; default 1), 3 is DNRR's.  Any value keeps epsilon-DP;
            :meth:`error_bound` uses the weight bound that holds for the
            ``c`` used.
        k : int
            Fanout of the kary tree (odd, >= 3).
        budget : Budget, optional
            Charged ``(epsilon, delta)`` after every check, before any noise is drawn.
        counts : array_like of int, optional
            Multiplicities, one per value (same shape): ``values[i]`` occurs
            ``counts[i] >= 0`` times, totalling at most ``2**62``.  With the
            same seeded ``rng`` the synopsis is exactly that of
            ``np.repeat(values, counts)``, built in time and memory of the
            number of distinct values.  Checked with the other arguments.
        shards : int, optional
            Cut the domain at ``shards - 1`` public points (equal widths)
            and partition each piece on its own stream ``rng.derive(i)``: on
            a cluster in parallel (a dask collection), here one after the
            other.  Same epsilon (parallel composition), at most ``shards -
            1`` more segments; see :mod:`pydp_synopsis.partitions.sharded`.  None or 1:
            one partition drawn from ``rng``.
        delta : float or Fraction
            In ``[0, 1)``; 0 (default) is pure epsilon-DP.  With ``delta >
            0`` the tree's node scale is ``min(S / epsilon_tree, lambda)``,
            lambda calibrated to the l2 sensitivity ``sqrt(S)`` of the ``S``
            nodes one item changes (``L`` levels; the kary counter's height
            ``h``) by :func:`~pydp_synopsis.accounting.l2_laplace_scale`
            ([APT2]_ section 5.2, Lemma 5.5, Theorem 1.3; [KOV15]_ Theorem
            3.5).  The partition stays pure.  The synopsis is then
            ``(epsilon, delta)``-DP and :attr:`pure_epsilon`-DP.  Trees of
            ``S <= 2 ln(1/delta)`` levels (all interval trees at delta =
            1e-6) keep the pure scale.
        columns : str or Column, optional
            The column's name, or its full description
            (:class:`~pydp_synopsis.units.Column`); a Series' name is taken
            when not given.  Saved with the synopsis.
        scale : str or number, optional
            A power of ten (``"1e5"``): decimals (strings, ``Decimal``,
            floats from their exact value) become ``v * scale`` rounded half
            to even; ``domain`` is given in the same decimals.
        resolution : number, str, optional
            Real values become ``floor(v / resolution)`` (``0.01``; a float
            stands for its shortest decimal); a time such as ``"1h"`` or
            ``"7d"`` bins dates and times.  See :mod:`pydp_synopsis.units`.
        dropna : bool
            Drop the values that are missing (None, NaN, NaT, ``pandas.NA``,
            empty strings) before anything else: a per-row filter, so the
            release stays epsilon-DP.  False: a missing value raises
            ``InputError`` naming the first data row holding one.
        partition : {"privtree", "dnrr"}, optional
            The private partition (class doc, step 1).  None (default):
            ``"privtree"``, or ``"dnrr"`` when ``threshold_factor`` or a
            seal estimator is given.  DNRR-only options with
            ``partition="privtree"`` raise ParameterError.
        clip : bool
            Clip instead of refusing: a value below ``lo`` counts as ``lo``,
            one above ``hi`` as ``hi`` (exactly, on the integer grid, after the
            conversion of user units -- a date, a decimal -- and a value
            beyond int64 in that conversion too).  Default False: a value
            outside the domain is refused (one line naming the column and
            the domain) before any budget is charged.  Clipping maps each
            row on its own, so two neighbouring inputs (one row added or
            removed) stay neighbours after it: every released count keeps
            sensitivity 1 and the synopsis stays epsilon-DP for the same
            epsilon (the convention of [OpenDP]_ and [diffprivlib]_).  The
            release equals that of the clipped data under the same seed;
            the synopsis records it (``clipped``, saved and shown by
            ``pydp-synopsis info``): the counts at the domain's ends then
            include the values clipped there.

        Returns
        -------
        IntervalSynopsis

        References
        ----------
        .. [APT2] J. D. Andersson, R. Pagh, S. Torkamani, "Count on Your
           Elders: Laplace vs Gaussian Noise", section 5.2.
        .. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem
           for Differential Privacy", ICML 2015, Theorem 3.5.
        .. [OpenDP] The OpenDP Library, ``make_clamp`` (clamping to declared bounds).
        .. [diffprivlib] N. Holohan et al., "Diffprivlib: The IBM Differential
           Privacy Library", 2019 (``bounds=``: data clipped to the bounds).

        Notes
        -----
        Values in user units -- ``datetime64`` arrays, pandas Series of
        Timestamps (with or without a time zone), dates, nullable integers
        (``Int64`` with NA, whole-valued floats), Python dates and
        datetimes, ISO strings, decimal strings -- are converted exactly
        (:mod:`pydp_synopsis.units`) when ``domain`` is given in the same
        units (``("2001-01-01", "2001-12-31")``) or ``scale=`` /
        ``resolution=`` / ``columns=`` say how.  The description comes from
        the arguments, the domain and the data's dtype, never from the
        values; queries then take the same units.  Plain integer input is
        built exactly as before (same seeded release).

        O(n log n) for the one sort, O(n + m) kernel steps for the partition
        (independent of D), O(m log n) for the segment counts, O(m) for the
        tree; memory O(n + m).  With ``counts``, n is the number of
        distinct values; from a Source, memory is O(chunk + m).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build([3, 5, 5, 9], domain=(0, 15), epsilon=1e6,
        ...                            rng=ps.Rng(seed=1))   # seed: tests only
        >>> round(s.count(0, 15))
        4
        """
        method, estimator, partition_share, factor = _check_method(
            partition, estimator, partition_share, threshold_factor)
        tree, fanout, consistency, estimator, k = _check_options(tree, fanout, consistency,
                                                                 estimator, k)
        share = check_share(partition_share, "partition_share")
        eps = exact_epsilon(epsilon)
        dlt = check_delta_or_zero(delta)
        ratio = _check_level_ratio(level_ratio, tree, dlt)
        beta = check_beta(beta)
        clip = check_bool(clip, "clip")
        eps_p, eps_t = split_epsilon(eps, share, ("epsilon * partition_share",
                                                  "epsilon * (1 - partition_share)"))
        values, (domain,), counts, described = prepare_build(
            values, [domain], counts=counts, columns=columns, scale=scale,
            resolution=resolution, dropna=dropna, clip=clip, source=is_source(values))
        domain = check_domain(domain)
        if method == "dnrr":
            fig1_threshold(domain[1] - domain[0] + 1, eps_p, beta / 2, factor)  # eps_p not too small
        else:
            privtree_parameters(eps_p)                                         # the same check
        _check_level_scales(ratio, domain, tree, fanout, eps_t)
        n_shards = check_shards(shards, [domain])
        rng = resolve_rng(rng)
        what = describe("IntervalSynopsis", domain=domain, epsilon=eps_p + eps_t,
                        **({"delta": dlt} if dlt else {}))
        source = as_source(values, counts, dropna)
        if source is not None:
            # every argument is checked: now read and check the data (draws nothing)
            # clip= only when asked: a Source written before it keeps working
            with source.prepare([domain], **({"clip": True} if clip else {})) as prepared:
                charge(budget, eps_p + eps_t, what, dlt)
                part, counts = partition_source_axis(prepared, 0, domain, eps_p, beta / 2, rng,
                                                     n_shards, method=method,
                                                     threshold_factor=factor)
            syn = cls._release_tree(part, counts, eps_t, rng, beta=beta, tree=tree,
                                    fanout=fanout, consistency=consistency,
                                    estimator=estimator, k=k, dlt=dlt, ratio=ratio)
            syn._columns, syn.clipped = described, clip
            return syn
        offsets = as_offsets(values, domain, "values", clip=clip)
        weights = check_counts(counts, offsets.shape)
        offsets = offsets.ravel()
        charge(budget, eps_p + eps_t, what, dlt)

        if weights is not None or n_shards > 1:
            # the distinct values with their counts (the streamed builds' form)
            srt, cnt = aggregate(offsets, None if weights is None else weights.ravel())
        else:
            # One sort (in threads) serves the partition and the segment counts.
            srt, cnt = sort_u64(np.ascontiguousarray(offsets, dtype=np.uint64)), None
        part, counts = partition_of_sorted(srt, domain, eps_p, beta / 2, factor, rng, cnt,
                                           method=method, shards=n_shards, weights=True)
        if cnt is None and int(counts.sum()) != offsets.size:
            raise AssertionError("partition weights do not add up to the number of values")
        syn = cls._release_tree(part, counts, eps_t, rng, beta=beta, tree=tree, fanout=fanout,
                                consistency=consistency, estimator=estimator, k=k,
                                dlt=dlt, ratio=ratio)
        syn._columns, syn.clipped = described, clip
        return syn

    @classmethod
    def _release_tree(cls, part, counts, eps_t, rng, *, beta, tree, fanout, consistency,
                      estimator, k, dlt, ratio=1):
        """The tree over the released partition's true segment ``counts`` (DNRR section 3.2)."""
        if tree == "kary":
            counter = KaryTreeCounter(horizon=len(part), epsilon=eps_t, k=k, rng=rng, delta=dlt)
            released = np.ascontiguousarray(counter.update_many(counts), dtype=np.int64)
        else:
            fanout = 2 if tree == "binary" else fanout
            scales = _tree_scales(trees.tree_shape(len(part), fanout)[0], eps_t, ratio)
            released = trees.noisy_tree(counts, fanout, eps_t, rng, dlt, scales=scales)
        return cls._from_release(part, released, epsilon_tree=eps_t, beta=beta, tree=tree,
                                 fanout=fanout, consistency=consistency and tree != "kary",
                                 estimator=estimator, k=k, delta=dlt, level_ratio=ratio)

    def __repr__(self):
        # public facts and released sizes only (never the number of values)
        dlt = (f", delta={float(self.delta):.3g}, pure_epsilon={float(self.pure_epsilon):.6g}"
               if self.delta else "")
        return (f"IntervalSynopsis(domain={self.domain}, epsilon={self.epsilon}{dlt}, "
                f"segments={len(self)}, tree={self.tree!r})")

    # ---------------------------------------------------------------- queries
    @property
    def domain(self):
        """Inclusive ``(lo, hi)`` of the domain."""
        return self.partition.domain

    @property
    def noise_scale(self):
        """The discrete Laplace scale of every released node (a Fraction): ``S /
        epsilon_tree`` (``S`` = the levels ``L``, or the kary height ``h``), or its
        l2 calibration ``min(S / epsilon_tree, lambda)`` with ``delta > 0``;
        ``pure_epsilon == epsilon_partition + S / noise_scale``.  With unequal
        levels (``level_ratio != 1``) the largest scale, the upper levels'
        (:attr:`noise_scales` has them all)."""
        return self._scale

    @property
    def noise_scales(self):
        """The discrete Laplace scale of each released level, leaves first (a tuple of
        Fractions; kary: its one scale).  ``pure_epsilon == epsilon_partition + sum(1 /
        b)`` for unequal levels (:func:`~pydp_synopsis.trees.level_scales`)."""
        if self._scales is not None:
            return tuple(self._scales)
        return (self._scale,) * (1 if self.tree == "kary" else self._levels)

    def __len__(self):
        """Number of segments ``m`` of the partition."""
        return len(self.partition)

    @property
    def column(self):
        """The :class:`~pydp_synopsis.units.Column` the integers stand for (an
        unnamed integer column when the synopsis was built from integers)."""
        return Column.integer() if self._columns is None else self._columns[0]

    @property
    def user_domain(self):
        """The domain in user units (``datetime64``, ``Decimal`` or int bounds)."""
        return tuple(self.column.values(np.array(self.domain, dtype=object)
                                        if self.column.is_plain else
                                        np.array(self.domain, dtype=np.int64)).tolist())

    @property
    def user_segment_ends(self):
        """The partition's segment ends (:attr:`Partition.ends
        <pydp_synopsis.partitions.dnrr.Partition.ends>`) in user units: a
        ``datetime64`` array for dates and times, ``Decimal`` objects for
        decimals (a bin's lower end with a resolution), the integers otherwise."""
        ends = self.partition.ends
        return ends if self.column.is_plain else self.column.values(np.asarray(ends, np.int64))

    def _user(self, lo, hi):
        """Query bounds in user units -> integers (unchanged for integer synopses)."""
        if self._columns is None:
            return lo, hi
        return convert_corners(self._columns, lo, hi, True)

    def _offsets(self, lo, hi):
        """The checked endpoints as flat uint64 offsets, and the queries' shape."""
        lo, hi = self._user(lo, hi)

        def convert(v, name):
            return np.ascontiguousarray(as_offsets(v, self.domain, name), dtype=np.uint64)

        # the two columns at once when large (numpy releases the GIL); an error is
        # lo's before hi's, as in sequence
        big = np.size(lo) >= THREAD_ROWS and isinstance(lo, np.ndarray)
        lo_o, hi_o = (run_parts(convert, [(lo, "lo"), (hi, "hi")]) if big
                      else (convert(lo, "lo"), convert(hi, "hi")))
        if lo_o.shape != hi_o.shape:
            raise DomainError(f"lo and hi must have the same shape, got {lo_o.shape} and "
                              f"{hi_o.shape}")
        shape = lo_o.shape
        lo_o, hi_o = lo_o.ravel(), hi_o.ravel()
        bad = lo_o > hi_o
        if bad.any():
            q = int(np.argmax(bad))
            raise DomainError(f"lo must be <= hi, got lo > hi at index {q}")
        return lo_o, hi_o, shape

    def _answers(self, lo_o, hi_o):
        if self._prefix is None:
            return trees.interval_answers(self._ends, lo_o, hi_o, self.estimator, self._tau,
                                          nodes=self._released, fanout=self.fanout,
                                          lookup=self.partition.lookup)
        return trees.interval_answers(self._ends, lo_o, hi_o, self.estimator, self._tau,
                                      prefix=self._prefix, lookup=self.partition.lookup)

    def count_many(self, lo, hi, *, return_std=False, nonnegative=False):
        """Noisy counts of the inclusive intervals ``[lo[q], hi[q]]``.

        Parameters
        ----------
        lo, hi : array_like of int
            Same shape; every endpoint inside the domain and ``lo <= hi``.
            Python ints up to ``2**64 - 1`` (or the domain's ``hi``) are fine.
            A synopsis built in user units (:attr:`column`) takes them
            instead: dates, datetimes, decimals, ISO and decimal strings,
            converted as the data were (``hi`` inclusive of its whole bin).
        return_std : bool
            Also return each answer's noise standard deviation, exactly:
            the answer's noise is a weighted sum of the released counts'
            independent discrete Laplace noises, whose weights (the cover's
            nodes, Hay et al.'s least-squares weights on every node for a
            consistent tree, the k-ary counter's noise terms) are computed
            per query in C.  It measures the noise only, not the boundary
            segments' bias: :meth:`confidence_intervals` bounds both.  For
            ``"seal_uniform"`` it is the std with the interior clip left
            out (exact when neither boundary estimate is clipped; the clip
            only shrinks a boundary term's noise).
        nonnegative : bool
            Clip answers at 0: post-processing (free in privacy) that moves
            an answer toward its true count, never away, since true counts
            are >= 0.  ``std`` stays that of the unclipped answer.

        Returns
        -------
        answers : numpy.ndarray of float64
            One answer per interval (post-processing of the release: no
            privacy cost, any number of queries).
        std : numpy.ndarray of float64
            With ``return_std=True``: ``(answers, std)``, same shape.

        Raises
        ------
        DomainError
            An endpoint outside the domain, or ``lo > hi`` (not clipped: a
            reversed interval is almost always a caller's bug).
        TypeError
            ``return_std`` or ``nonnegative`` not a bool.

        Notes
        -----
        O(q log m): the 2q endpoints' segments (the partition's
        :attr:`~pydp_synopsis.Partition.lookup`), then one C call reading
        ``<= 2 (f - 1) L + 2`` tree nodes per query (raw tree) or 4 prefix
        sums (consistent tree, kary); the std is one more C call, O(cover)
        per query (raw tree), O(L) for the consistent tree (any fanout),
        O(log_k m) for kary.  Batches of ``2**16`` queries or more run in
        two threads (the same answers).

        References
        ----------
        .. [HRMS10] Hay, Rastogi, Miklau, Suciu, VLDB 2010, section 4: the
           least-squares estimate; its weights on the raw nodes are computed
           by Gaussian smoothing on the tree (``csrc/tree.c``).
        .. [APT] Andersson, Pagh, Torkamani, Algorithm 2 (the kary prefix
           sums' noise terms).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build(list(range(0, 4000, 3)), domain=(0, 3999),
        ...                            epsilon=1.0, rng=ps.Rng(seed=4))   # seed: tests only
        >>> answers, std = s.count_many([100, 0], [2000, 3999], return_std=True)
        >>> bool(std[0] > 0)
        True
        """
        return_std = check_bool(return_std, "return_std")
        nonnegative = check_bool(nonnegative, "nonnegative")
        lo_o, hi_o, shape = self._offsets(lo, hi)
        out = halves(self._answers, lo_o, hi_o)         # two threads for large batches
        if nonnegative:
            out = np.maximum(out, 0.0)
        if not return_std:
            return out.reshape(shape)
        sumsq, _ = halves(lambda a, b: self._noise_weights(a, b, corners=False), lo_o, hi_o)
        return out.reshape(shape), noise_std(sumsq[:, 3:], [self._noise_scale()]).reshape(shape)

    def count(self, lo, hi):
        """Noisy count of the inclusive interval ``[lo, hi]`` (a float).

        Same rules as :meth:`count_many` (user units included:
        ``syn.count("2001-03-01", "2001-03-31")``); O(log m).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build([1, 2, 2, 7], domain=(0, 7), epsilon=1e6,
        ...                            estimator="cover", rng=ps.Rng(seed=2))
        >>> round(s.count(0, 7))
        4
        """
        if self._columns is not None and not self.column.is_plain:
            return float(self.count_many([lo], [hi])[0])     # user units, converted there
        for name, v in (("lo", lo), ("hi", hi)):
            if not is_int(v):
                raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        return float(self.count_many([int(lo)], [int(hi)])[0])

    # ------------------------------------------------------------ error bound
    def _noise_bound(self, delta):
        """A bound on |noise| of every answer at once, failing with probability <= delta."""
        m = len(self)
        ranges = m * (m + 1) // 2 + 1          # every range of whole segments, and the empty one
        if self.tree == "kary":
            # every answer is P(x) - P(y) plus, for "uniform", fractions of two
            # leaves P(i+1) - P(i) (affine: extremes at corners, again
            # differences of prefixes); |P(x) - P(y)| <= 2 max_p |P(p) noise|,
            # and each noisy prefix is a +-1 sum of <= prefix_terms distinct nodes
            terms, b, _ = self._kary_shape()
            return 2 * laplace_sum_tail(terms, b, -math.log(delta / (2 * m)))
        f, L = self.fanout, self._levels
        b = float(self._scale)
        w = self._weights
        # unequal levels (w): a node of level l is a term of weight fac_l <= 1 at
        # the largest scale (trees.LevelWeights), so the counts of terms become
        # sums of fac_l^2 over the nodes of a cover
        cover = trees.cover_terms(L, f, None if w is None else w.fac ** 2)
        leaf = 1.0 if w is None else float(w.fac[0]) ** 2
        if not self.consistency:
            if self.estimator == "uniform":
                # inner cover plus fractions of the two boundary leaves: the noise
                # is affine in the two fractions, so its sup over a (k, r) pair is
                # at one of 4 corners, each a sum of <= cover + 2 distinct nodes
                return laplace_sum_tail(cover + 2 * leaf, b,
                                        -math.log(delta / (2 * 4 * ranges)))
            # cover, seal, seal_uniform: one range of whole segments (the
            # clipped interior terms of seal_uniform are bounded in the bias)
            return laplace_sum_tail(cover, b, -math.log(delta / (2 * ranges)))
        # consistent tree: an answer's noise is a^T Z with a = Pi c, c a range's
        # minimal-cover indicator and Pi the least-squares projection onto
        # consistent trees, so ||a||_2^2 <= ||c||_2^2 = #cover =: V.  With s >= every
        # |a_v|: sum_v log M(lam a_v) <= (V / s^2) log M(lam s), since
        # log M(x) / x^2 grows with |x| (log M(x) = sum_j 2 p^j (cosh jx - 1) / j);
        # so |noise| <= s * (tail of V / s^2 terms at scale b) by Chernoff.  s is
        # trees.coefficient_bound (the exact max coefficient, or sqrt(V) when too
        # costly: then the bound is s times a one-term tail).  Corners of
        # "uniform" are ranges too.
        # Unequal levels: sum (fac a)^2 <= kappa sum rho a^2 <= kappa * (the largest
        # sum of rho over a cover: the least-squares estimate's variance is at most
        # the raw cover's), and s bounds fac |a| (trees.coefficient_bound).
        if self._coef is None:
            self._coef = trees.coefficient_bound(m, f, weights=w)
        s = self._coef
        if w is not None:
            cover = w.kappa * trees.cover_terms(L, f, w.rho)
        direct = s * laplace_sum_tail(cover / s**2, b, -math.log(delta / (2 * ranges)))
        # or via prefixes: |P(x) - P(y)| <= 2 max_p |P(p)| (prefix coefficients
        # are G(p) - G(0), also bounded by s)
        pre = (trees.prefix_terms(L, f) if w is None
               else w.kappa * trees.prefix_terms(L, f, w.rho))
        s_p = min(s, math.sqrt(pre))
        via_prefix = 2 * s_p * laplace_sum_tail(pre / s_p**2, b, -math.log(delta / (2 * m)))
        return min(direct, via_prefix)

    def _kary_shape(self):
        """(max noise terms in one noisy prefix, node noise scale, height) of the kary counter.

        Algorithm 2 of [APT] adds one node per unit of each offset digit, digits in
        [-(k-1)/2, (k-1)/2] on h = ceil(log_k(2m)) levels, each node of scale h/eps_t
        (or its l2 calibration with delta > 0: :meth:`_noise_scale`).
        """
        m = len(self)
        h, power = 0, 1
        while power < 2 * m:
            power *= self.k
            h += 1
        h = max(h, 1)
        b = float(self._scale) if hasattr(self, "_scale") else None
        return h * (self.k - 1) // 2, b, h

    def interior_weight_bound(self):
        """``W``: with probability ``>= 1 - beta/2`` no segment holds more than
        ``W`` items *before its seal position* (its last value).

        :meth:`Partition.interior_weight_bound
        <pydp_synopsis.partitions.dnrr.Partition.interior_weight_bound>` of the
        partition, built with failure probability ``beta / 2`` (DNRR Theorem
        2.1's proof: ``W = T + 2 (k - 1)``, valid for any threshold factor and
        any duplicates).  O(1).  Over a PrivTree partition: the largest
        per-leaf bound ``W_d`` of a leaf of width >= 2, which bounds the whole
        leaf, duplicates included (:meth:`TreePartition.interior_weight_bound
        <pydp_synopsis.partitions.privtree.TreePartition.interior_weight_bound>`, O(m)).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build([5] * 1000, domain=(0, 2**32 - 1), epsilon=1.0,
        ...                            rng=ps.Rng(seed=3))   # seed: tests only
        >>> s.interior_weight_bound() < 1000 <= s.count(5, 5) + s.error_bound(0.9)
        True
        """
        return self.partition.interior_weight_bound()   # the partition's beta is beta/2

    def _bias_bound(self, multiplicity):
        w = self.interior_weight_bound()
        if isinstance(self.partition, TreePartition):
            return 2 * w      # a cut leaf holds <= W items, duplicates included
        if self.estimator == "seal":
            return w
        if self.estimator == "seal_uniform":
            return w + self._tau
        if self.estimator == "cover":
            return 2 * w + multiplicity
        return 2 * (w + multiplicity)

    def error_bound(self, confidence=0.95, *, multiplicity=1):
        """The simultaneous bound: the error of *all* interval answers at once (DNRR Theorem 3.2).

        With probability at least ``confidence`` over the mechanism's coins,
        ``|count(lo, hi) - true count| <= error_bound(confidence)`` for every
        interval simultaneously.  A worst case over every interval, 10-100
        times a typical error: for one query's error bar use
        :meth:`count_many` with ``return_std=True`` (the exact noise std) or
        :meth:`confidence_intervals` (a per-query guarantee).

        The failure probability ``1 - confidence`` is split: ``beta / 2`` (fixed
        at build) for the partition's interior weight bound ``W``
        (:meth:`interior_weight_bound`), the rest for the noise.  The bound is
        ``noise_bound(1 - confidence - beta / 2) + bias`` with bias ``W``
        ("seal"), ``W + T`` ("seal_uniform"), ``2 W + multiplicity``
        ("cover") or ``2 (W + multiplicity)`` ("uniform") -- see the class
        doc; over a PrivTree partition ``2 W`` (its ``W`` bounds whole leaves,
        so ``multiplicity`` plays no part).  The noise bound is a Chernoff bound on sums of discrete Laplace
        terms (the exact MGF), union-bounded over every distinct combination
        of released noise an answer can use.

        Parameters
        ----------
        confidence : float
            In ``(0, 1 - beta / 2)``.
        multiplicity : int
            Only for "cover" and "uniform": a *public* upper bound on how
            often one value occurs (1 = distinct values), fixed without
            looking at the data -- the data's true multiplicity is private
            and must not be passed.  The bound is invalid if the data repeat
            a value more often; "seal" and "seal_uniform" need no such
            assumption.  ``confidence`` is public too.

        Returns
        -------
        float

        Notes
        -----
        O(1) (a short numeric minimisation) for raw trees and kary; the first
        call on a consistent tree also computes
        :func:`~pydp_synopsis.trees.coefficient_bound` (capped, then O(1)).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build(list(range(0, 4000, 3)), domain=(0, 3999),
        ...                            epsilon=1.0, rng=ps.Rng(seed=4))   # seed: tests only
        >>> abs(s.count(100, 2000) - 633) <= s.error_bound(0.9)
        True
        """
        conf = check_beta(confidence, "confidence")
        multiplicity = check_int(multiplicity, "multiplicity", 1, 1 << 62)
        delta = 1.0 - conf
        part_fail = self.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partition's "
                f"failure probability fixed at build), got {confidence!r}")
        return self._noise_bound(delta - part_fail) + self._bias_bound(multiplicity)

    # ----------------------------------------------------------- error bars
    def _noise_scale(self):
        """The discrete Laplace scale of every released noise term (a Fraction)."""
        return self._scale

    def _noise_weights(self, lo_o, hi_o, corners=True):
        """Per query and clip corner, ``sum w^2`` and ``max |w|`` of the noise weights
        (unequal levels: ``sum rho w^2`` and ``max fac |w|``, :class:`trees.LevelWeights`)."""
        if self.tree == "kary":
            return trees.interval_noise(self._ends, lo_o, hi_o, self.estimator, kary=self.k,
                                        corners=corners, lookup=self.partition.lookup)
        return trees.interval_noise(self._ends, lo_o, hi_o, self.estimator, fanout=self.fanout,
                                    consistent=self.consistency, corners=corners,
                                    lookup=self.partition.lookup, weights=self._weights)

    def _boundaries(self, lo_o, hi_o):
        """Per query: is the left (or only) boundary segment cut, is the right one,
        does each cut one lose its seal point (its end) to the query, and the two
        boundary segments' indices?"""
        ends, lookup = self._ends, self.partition.lookup
        k, r = lookup.of(lo_o).astype(np.intp), lookup.of(hi_o).astype(np.intp)
        first = np.where(k == 0, np.uint64(0), ends[np.maximum(k, 1) - 1] + np.uint64(1))
        single = k == r
        seal_out_left = single & (hi_o < ends[k])
        left = (lo_o > first) | seal_out_left
        right = ~single & (hi_o < ends[r])
        return left, right, seal_out_left, right, k, r

    def _query_bias(self, lo_o, hi_o, multiplicity):
        """Per query, the most the estimator can miscount in the cut boundary segments.

        Per cut segment (``W`` = :meth:`interior_weight_bound`, ``mu`` =
        ``multiplicity``): ``"seal"`` ``W``; ``"uniform"`` ``W + mu``;
        ``"cover"`` ``W``, plus ``mu`` when the segment's seal point lies
        outside the query; ``"seal_uniform"`` ``W`` for one cut segment and
        ``W + T`` for two (the left one errs in ``[-T, W]``, the right one
        in ``[-W, T]``).  These are the per-boundary terms of
        :meth:`error_bound`'s bias.
        """
        left, right, seal_l, seal_r, k, r = self._boundaries(lo_o, hi_o)
        if isinstance(self.partition, TreePartition):
            # "uniform" and "cover" take a share of a cut leaf in [0, its weight]
            w = self.partition.leaf_weight_bounds()
            return np.where(left, w[k], 0.0) + np.where(right, w[r], 0.0)
        w, cut = self.interior_weight_bound(), left.astype(np.float64) + right
        if self.estimator == "seal":
            return w * cut
        if self.estimator == "seal_uniform":
            return w * np.minimum(cut, 1.0) + self._tau * (cut == 2)
        if self.estimator == "uniform":
            return (w + multiplicity) * cut
        return w * cut + multiplicity * ((left & seal_l).astype(np.float64) + (right & seal_r))

    def _noise_delta(self, confidence):
        """``1 - confidence - beta / 2``: what the noise may use after the partition's share."""
        delta, part_fail = 1.0 - confidence, self.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partition's "
                f"failure probability fixed at build), got {confidence!r}")
        return delta - part_fail

    def confidence_intervals(self, lo, hi, confidence=0.95, *, multiplicity=1,
                             nonnegative=False):
        """Per-query intervals holding each true count with probability >= ``confidence``.

        For each interval on its own (not all at once: that is
        :meth:`error_bound`, which is 10-100 times wider), the true count
        lies in ``[low, high] = answer -+ (noise + bias)`` with probability
        at least ``confidence`` over the mechanism's coins:

        * ``std``: the exact standard deviation of the answer's noise
          (:meth:`count_many` with ``return_std=True``);
        * ``noise``: ``P(|noise| > noise) <= delta`` by the Chernoff bound
          with the exact discrete Laplace MGF on the answer's weighted sum of
          noise terms (:func:`~pydp_synopsis.tails.laplace_weighted_tail`,
          which needs ``sum w^2`` and ``max |w|``, both computed exactly per
          query).  Rigorous, about ``3 std`` at 95% for sums of many terms
          (``1.96 std`` would be a normal approximation, not a bound: one
          discrete Laplace term has heavier tails).  For ``"seal_uniform"`` the
          clipped boundary terms make the noise affine in two factors in
          [0, 1]; it lies between the noises of the four corners, and the
          tail is the largest of theirs, union-bounded;
        * ``bias``: what the estimator can miscount inside the boundary
          segments the interval cuts (0 when both ends are segment ends);
          deterministic given the partition's weight bound ``W``
          (:meth:`interior_weight_bound`), which fails with probability at
          most ``beta / 2``, so the noise gets ``delta = 1 - confidence -
          beta / 2``.

        Parameters
        ----------
        lo, hi : array_like of int
            As :meth:`count_many`.
        confidence : float
            In ``(0, 1 - beta / 2)``.
        multiplicity : int
            Only for "cover" and "uniform": a public bound on how often one
            value occurs (as :meth:`error_bound`).
        nonnegative : bool
            Clip the answers and ``low`` at 0 (post-processing; true counts
            are >= 0, so the intervals keep their coverage).

        Returns
        -------
        ErrorBars
            ``(answer, low, high, std, noise, bias)``, float64 arrays of the
            queries' shape (:class:`pydp_synopsis.errorbars.ErrorBars`).

        Raises
        ------
        ParameterError
            ``confidence`` outside ``(0, 1 - beta / 2)`` or ``multiplicity``
            below 1.
        TypeError
            A non-real ``confidence``, a non-int ``multiplicity``, a
            non-bool ``nonnegative``.
        DomainError
            As :meth:`count_many`.

        Notes
        -----
        O(q log m) plus two C calls (answers, noise weights) and one C call
        for the tails per clip corner (``csrc/tails.c``).

        References
        ----------
        .. [HRMS10] Hay, Rastogi, Miklau, Suciu, VLDB 2010, section 4 (the
           consistent estimator whose weights are computed).
        .. [DNRR] Dwork, Naor, Reingold, Rothblum, section 3.2 (covers,
           boundary segments) and Theorem 2.1's proof (``W``).
        .. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace MGF).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build(list(range(0, 4000, 3)), domain=(0, 3999),
        ...                            epsilon=1.0, rng=ps.Rng(seed=4))   # seed: tests only
        >>> bars = s.confidence_intervals([100], [2000], 0.9)
        >>> bool(bars.low[0] <= 634 <= bars.high[0])       # 634 values in [100, 2000]
        True
        >>> bool(bars.high[0] - bars.low[0] < 2 * s.error_bound(0.9))
        True
        """
        conf = check_beta(confidence, "confidence")
        multiplicity = check_int(multiplicity, "multiplicity", 1, 1 << 62)
        nonnegative = check_bool(nonnegative, "nonnegative")
        delta = self._noise_delta(conf)
        lo_o, hi_o, shape = self._offsets(lo, hi)
        answer = self._answers(lo_o, hi_o)
        sumsq, maxabs = self._noise_weights(lo_o, hi_o)
        b = self._noise_scale()
        # unequal levels: the tail of sum (fac w) Z' at the largest scale, whose
        # sum of squares is at most kappa * sumsq (trees.LevelWeights)
        tail_sq = sumsq if self._weights is None else sumsq * self._weights.kappa
        if self.estimator == "seal_uniform":
            left, right = self._boundaries(lo_o, hi_o)[:2]
            log_inv = np.log(2.0 * 2.0 ** (left.astype(np.float64) + right) / delta)
            noise = np.max([laplace_weighted_tail(tail_sq[:, j:j + 1], maxabs[:, j:j + 1], [b],
                                                  log_inv) for j in range(4)], axis=0)
        else:
            noise = laplace_weighted_tail(tail_sq[:, 3:], maxabs[:, 3:], [b],
                                          math.log(2.0 / delta))
        return assemble(answer, noise_std(sumsq[:, 3:], [b]), noise,
                        self._query_bias(lo_o, hi_o, multiplicity), shape, nonnegative)

    # ----------------------------------------------------------- persistence
    def save(self, path, *, mode=None):
        """Write the synopsis to ``path`` (atomic, checksummed; only released numbers).

        New files get ``0o666`` less the umask unless ``mode`` is given.

        O(m).  Load with :func:`pydp_synopsis.load`.
        """
        persist.write_record(path, *self._to_record()[:3], mode=mode)

    def _to_record(self):
        eps = lambda f: [f.numerator, f.denominator]  # noqa: E731
        tree_part = isinstance(self.partition, TreePartition)
        levels = self.level_ratio != 1
        meta = {
            "format": (_FORMAT_LEVELS if levels else _FORMAT_PRIVTREE if tree_part
                       else _FORMAT),
            "domain": [int(self.domain[0]), int(self.domain[1])],
            "epsilon_partition": eps(self.epsilon_partition),
            "epsilon_tree": eps(self.epsilon_tree),
            "delta": [self.delta.numerator, self.delta.denominator],
            "pure_epsilon": eps(self.pure_epsilon),
            "beta": self.beta,
            "threshold_factor": self.partition.threshold_factor,
            "tree": self.tree,
            "fanout": self.fanout,
            "consistency": self.consistency,
            "estimator": self.estimator,
            "k": self.k,
        }
        if tree_part:
            meta["partition"] = PRIVTREE
            meta["shards"] = self.partition.shards
        elif levels:
            meta["partition"] = "dnrr"
        if levels:
            # format 4: a reader that knows no level ratio refuses the file
            meta["level_ratio"] = [self.level_ratio.numerator, self.level_ratio.denominator]
        if self._columns is not None:
            meta["columns"] = columns_to_record(self._columns)
        if self.clipped:        # absent: refused out-of-domain values (every older file)
            meta["clipped"] = True
        arrays = {"end_offsets": self._ends, "released": self._released}
        return _KIND, meta, arrays, None


@persist.register(_KIND)
def _load(meta, arrays):
    """Rebuild a saved synopsis from its released numbers (no data, no code).

    The record is checked here, once, with the rules of :meth:`IntervalSynopsis.build`
    and :class:`Partition`; any violation is a FormatError.
    """
    try:
        fmt = meta.get("format")
        if fmt not in (_FORMAT, _FORMAT_PRIVTREE, _FORMAT_LEVELS):
            raise FormatError(f"unknown interval-synopsis format {fmt!r}")
        ratio = Fraction(1)
        if fmt == _FORMAT_LEVELS:
            if meta.get("partition") not in (PRIVTREE, "dnrr"):
                raise FormatError("interval synopsis record: format 4 names its partition "
                                  "('privtree' or 'dnrr')")
            num, den = meta["level_ratio"]
            if not (is_int(num) and is_int(den) and den > 0):
                raise FormatError("interval synopsis record: level_ratio must be two integers")
            ratio = check_ratio(Fraction(int(num), int(den)), "level_ratio")
            if ratio == 1:
                raise FormatError("interval synopsis record: format 4 has a level_ratio != 1")
            privtree = meta["partition"] == PRIVTREE
        else:
            privtree = fmt == _FORMAT_PRIVTREE
        if privtree and (meta.get("partition") != PRIVTREE
                         or meta["threshold_factor"] != PRIVTREE):
            raise FormatError("interval synopsis record: a PrivTree partition is marked "
                              "'privtree' with its threshold factor")
        if not privtree and meta["threshold_factor"] == PRIVTREE:
            raise FormatError("interval synopsis record: threshold_factor 'privtree' marks a "
                              "PrivTree partition, but the record holds a DNRR one")
        tree, fanout, consistency, estimator, k = _check_options(
            meta["tree"], meta["fanout"], meta["consistency"], meta["estimator"], meta["k"])
        if ratio != 1 and tree == "kary":
            raise FormatError("interval synopsis record: a kary tree has level_ratio 1")
        if tree == "binary" and fanout != 2:
            raise FormatError("interval synopsis record: a binary tree has fanout 2")
        beta = check_beta(meta["beta"])
        ends = np.asarray(arrays["end_offsets"], dtype=np.uint64)
        eps_p = Fraction(*meta["epsilon_partition"])
        if privtree:
            if estimator not in _PRIVTREE_ESTIMATORS:
                raise FormatError("interval synopsis record: a PrivTree partition needs the "
                                  "uniform or cover estimator")
            shards = check_int(meta["shards"], "shards", 1, MAX_SHARDS)
            part = TreePartition(ends, domain=meta["domain"], epsilon=eps_p, beta=beta / 2,
                                 shards=shards)
        else:
            part = Partition(ends, domain=meta["domain"], epsilon=eps_p, beta=beta / 2,
                             threshold_factor=meta["threshold_factor"])
        eps_t = exact_epsilon(Fraction(*meta["epsilon_tree"]), "epsilon_tree")
        released = np.ascontiguousarray(arrays["released"], dtype=np.int64)
        want = len(part) if tree == "kary" else trees.tree_shape(len(part), fanout)[1]
        if released.shape != (want,):
            raise FormatError("interval synopsis record: released array has the wrong length")
        delta = state_delta(meta)   # absent (release 0.1): 0
        if ratio != 1 and delta:
            raise FormatError("interval synopsis record: level_ratio != 1 needs delta = 0")
        syn = IntervalSynopsis._from_release(part, released, epsilon_tree=eps_t, beta=beta,
                                             tree=tree, fanout=fanout, consistency=consistency,
                                             estimator=estimator, k=k, delta=delta,
                                             level_ratio=ratio)
        check_pure_epsilon(meta, syn.pure_epsilon, delta)
        syn._columns = columns_from_record(meta, [part.domain])
        syn.clipped = clipped_from_record(meta)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid interval synopsis record: {exc}") from exc
    return syn
