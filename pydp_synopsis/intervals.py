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
from fractions import Fraction

import numpy as np

from . import persist, trees
from .accounting import check_delta_or_zero
from .budget import charge, describe
from .counters import KaryTreeCounter
from .errorbars import METHODS, noise_std
from .params import (as_offsets, check_beta, check_bool, check_choice, check_domain, check_int,
                     check_share, exact_epsilon, is_int, renamed_keyword, split_epsilon)
from .aggregates import aggregate, check_counts
from .partitions import fig1_threshold, partition_of_sorted, partition_source_axis
from .partitions.cells import CELLS, cell_partition, cells_epsilons
from .partitions.privtree import privtree_epsilon
from .partitions.sharded import check_shards
from .queryclip import QueryClipping, clips_queries
from .unitmessages import in_user_units
from .rng import resolve_rng
from .sources import as_source, carried_columns, is_source
from ._threads import halves, sort_u64
from .units import Column, prepare_build
from .range_sums import RangeSumQueries, check_sum_options, release_sums
from .interval_answers import IntervalAnswers
from .level_queries import LevelQueries
from .interval_bars import IntervalBars
from .quantiles import IntervalQuantiles
# the defaults stay importable from here (release 0.2's names)
from .interval_options import (DEFAULT_ESTIMATOR, DEFAULT_FANOUT, DEFAULT_LEVEL_RATIO,  # noqa: F401
                               DEFAULT_PARTITION, DEFAULT_SHARE, DEFAULT_TREE, DNRR_ESTIMATOR,
                               DNRR_FACTOR, DNRR_SHARE, check_level_ratio, check_level_scales,
                               check_method, check_privtree_epsilon, check_privtree_options,
                               check_tree_options, tree_scales)
from .interval_record import KIND, from_record, to_record
from .interval_workload import (cells_rule, check_tree_workload, partition_for_workload,
                                 tree_for_workload)

__all__ = ["IntervalSynopsis"]


class IntervalSynopsis(IntervalAnswers, QueryClipping, IntervalBars, IntervalQuantiles,
                       LevelQueries, RangeSumQueries):
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
    :meth:`save`, reload with :func:`pydp_synopsis.load`.  Its quantiles, CDF and
    histograms are free too (``quantile``, ``cdf``, ``histogram``: docs/guide/quantiles.md).

    >>> import numpy as np, pydp_synopsis as ps
    >>> ages = np.random.default_rng(0).integers(18, 90, 5000)
    >>> s = ps.IntervalSynopsis.build(ages, domain=(0, 120), epsilon=1.0, rng=ps.Rng(seed=1))
    >>> bool(abs(s.count(18, 40) - np.count_nonzero(ages <= 40)) < 100)
    True

    The mechanism (DNRR section 3.2; in full, with the estimators' biases, in
    docs/guide/intervals.md, "Mechanism"): a private partition
    (``partition="privtree"``, PrivTree [ZXX16]_, the default; or
    ``partition="dnrr"``, DNRR's Fig. 1) with ``epsilon * partition_share``
    cuts the domain into ``m`` segments; a noisy tree over the segment counts
    (``structure="binary"``, ``"hierarchical"`` with ``fanout`` and
    ``level_ratio``, or ``"kary"``) spends the rest; an interval is answered
    from the nodes covering the segments it touches, a boundary segment it
    cuts by ``estimator``.

    The defaults, DNRR's own configuration and the evidence for each:
    docs/guide/intervals.md and docs/benchmarks/intervals.md.

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
        The options used (``level_ratio`` a Fraction; 1 for kary; ``workload``: see build).

    References
    ----------
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
       Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.2,
       Theorem 3.2 (and Fig. 1, Theorem 2.1, Remark 2.2 for the partition).
    .. [ZXX16] Zhang, Xiao, Xie, "PrivTree: A Differentially Private Algorithm for
       Hierarchical Decompositions", SIGMOD 2016, Algorithm 2.
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
                 "_levels", "_ends", "_tau", "_coef", "_columns", "clipped", "sums", "workload")

    def __init__(self):
        raise TypeError("use IntervalSynopsis.build(...) or pydp_synopsis.load(path)")

    @classmethod
    def _from_release(cls, partition, released, *, epsilon_tree, beta, tree, fanout,
                      consistency, estimator, k, delta=0, level_ratio=1, workload=None):
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
        self.clipped, self.sums = False, None    # build(clip=True), build(sum_of=...)
        self.workload = workload                 # build(workload=...): the TreeChoice
        self._levels, self._prefix = None, None
        self.level_ratio = Fraction(level_ratio)
        self._scales, self._weights = None, None
        if tree != "kary":
            self._levels = trees.tree_shape(m, fanout)[0]
            # unequal levels: the scales released with and the kernels' per-level factors
            self._scales = tree_scales(self._levels, epsilon_tree, self.level_ratio)
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
    @in_user_units
    def build(cls, values, *, domain, epsilon, beta=0.05, rng=None, structure=None,
              fanout=DEFAULT_FANOUT, consistency=True, estimator=None,
              partition_share=None, threshold_factor=None, k=19, budget=None,
              counts=None, shards=None, delta=0, columns=None, scale=None,
              resolution=None, dropna=False, partition=None, level_ratio=None, clip=False,
              workload=None, privtree_fanout=None, privtree_merge=None, sum_of=None,
              sum_bounds=None, sum_share=None, sum_scale=None, tree=None):
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
        structure : {"hierarchical", "binary", "kary"}
            The noisy tree over the segments (default ``"hierarchical"``);
            ``tree=`` is its deprecated old name, kept until 0.3.
        fanout : int
            Fanout of ``structure="hierarchical"`` (2 .. 65536; ``"binary"`` is 2).
            Small ranges favour a flatter tree (``fanout=64``:
            docs/benchmarks/intervals.md).
        consistency : bool
            Least-squares post-processing of the binary/hierarchical tree
            (ignored for kary).
        level_ratio : float or Fraction, optional
            The leaves get ``level_ratio`` times the budget of every other
            level of the tree (class doc, step 2), in ``[1, 64]``.  Default
            7/4 for ``structure="hierarchical"`` with ``delta = 0``, else 1 (the
            equal split of DNRR and Hay et al., the only one allowed with
            ``structure="kary"`` or ``delta > 0``).  Larger ratios favour short
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
        partition : {"privtree", "dnrr", "cells"}, optional
            The private partition (class doc, step 1).  None (default):
            ``"privtree"``, or ``"dnrr"`` when ``threshold_factor`` or a
            seal estimator is given.  DNRR-only options with
            ``partition="privtree"`` raise ParameterError.  ``"cells"``:
            every value of a domain of at most 2**20 values is its own
            segment, free, so all of epsilon goes to the counts
            (:mod:`pydp_synopsis.partitions.cells`; ``workload="short"``
            takes it on domains of at most 2**14 values).
        privtree_fanout, privtree_merge : {2, 4}; float, optional
            PrivTree's fanout (default 2; a declared class: ``workload``), and
            the share of its epsilon spent on merging leaves of similar noisy
            density (default None: no merge; :mod:`pydp_synopsis.partitions.merge`,
            docs/guide/partition.md).
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
        workload : {"short", "mixed", "long"} or (lo, hi), optional
            Queries declared (public) to choose the tree by, and for a class
            PrivTree's ``privtree_fanout`` and ``partition_share`` by a public
            rule where they are not given: :mod:`pydp_synopsis.interval_workload`.
        sum_of, sum_bounds, sum_share, sum_scale : optional
            Range sums of a clipped column: :mod:`pydp_synopsis.range_sums`, docs/guide/sums.md.

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
        tree = renamed_keyword("IntervalSynopsis.build", "tree=", "structure=", tree, structure,
                               DEFAULT_TREE)
        privtree_fanout, partition_share, pchoice = partition_for_workload(
            workload, epsilon, partition=partition, estimator=estimator,
            threshold_factor=threshold_factor, privtree_fanout=privtree_fanout,
            partition_share=partition_share, shards=shards, privtree_merge=privtree_merge)
        method, estimator, partition_share, factor = check_method(
            partition, estimator, partition_share, threshold_factor)
        pt_fanout, pt_merge = check_privtree_options(method, privtree_fanout, privtree_merge)
        tree, fanout, consistency, estimator, k = check_tree_options(tree, fanout, consistency,
                                                                 estimator, k)
        share = None if method == CELLS else check_share(partition_share, "partition_share")
        eps = exact_epsilon(epsilon)
        dlt = check_delta_or_zero(delta)
        ratio = check_level_ratio(level_ratio, tree, dlt)
        beta = check_beta(beta)
        clip = check_bool(clip, "clip")
        eps_p, eps_t = (0, eps) if share is None else split_epsilon(
            eps, share, ("epsilon * partition_share", "epsilon * (1 - partition_share)"),
            round_first=privtree_epsilon if method == "privtree" and pt_merge is None else None)
        spec, eps_t, eps_s = check_sum_options(sum_of, sum_bounds, sum_share, sum_scale, eps_t,
                                               values, counts, dropna, tree, fanout, ratio, dlt)
        values, (domain,), counts, described = prepare_build(
            values, [domain], counts=counts, columns=columns, scale=scale,
            resolution=resolution, dropna=dropna, clip=clip, source=is_source(values),
            carried=carried_columns(values))
        domain = check_domain(domain)
        wl = check_tree_workload(workload, domain, described, tree)
        pchoice = cells_rule(pchoice, domain)           # public: the class, the domain's size
        if method == CELLS or (pchoice is not None and pchoice.partition == CELLS):
            method, (eps_p, eps_t, eps_s) = CELLS, cells_epsilons(domain, eps, spec,
                                                                  shards)
            spec = spec and spec._replace(epsilon=eps_s)    # the sums' share of all of eps
        elif method == "dnrr":
            fig1_threshold(domain[1] - domain[0] + 1, eps_p, beta / 2, factor)  # eps_p not too small
        else:
            check_privtree_epsilon(eps_p, pt_fanout, pt_merge)                 # the same check
        check_level_scales(ratio, domain, tree, fanout, eps_t)
        n_shards = check_shards(shards, [domain])
        rng = resolve_rng(rng)
        what = describe("IntervalSynopsis", domain=domain, epsilon=eps_p + eps_t + eps_s,
                        **({"delta": dlt} if dlt else {}), **(spec.ledger(eps_s) if spec else {}))
        source = as_source(values, counts, dropna, described)
        if source is not None:
            # every argument is checked: now read and check the data (draws nothing)
            # clip= only when asked: a Source written before it keeps working
            with source.prepare([domain], **({"clip": True} if clip else {})) as prepared:
                charge(budget, eps_p + eps_t, what, dlt)
                part, counts = cell_partition(prepared.axis(0), domain, beta) \
                    if method == CELLS else partition_source_axis(
                        prepared, 0, domain, eps_p, beta / 2, rng, n_shards, method=method,
                        threshold_factor=factor, privtree_fanout=pt_fanout,
                        privtree_merge=pt_merge)
            syn = cls._release_tree(part, counts, eps_t, rng, beta=beta, tree=tree,
                                    fanout=fanout, consistency=consistency,
                                    estimator=estimator, k=k, dlt=dlt, ratio=ratio, wl=wl,
                                    pchoice=pchoice)
            syn._columns, syn.clipped = described, clip
            return syn
        offsets = as_offsets(values, domain, "values", clip=clip)
        weights = check_counts(counts, offsets.shape)
        offsets, shifted = offsets.ravel(), spec and spec.shifted_values(sum_of, offsets.size, domain)
        charge(budget, eps_p + eps_t + eps_s, what, dlt)

        if method == CELLS:
            srt, cnt = offsets, None if weights is None else weights.ravel()   # no sort
        elif weights is not None or n_shards > 1:
            # the distinct values with their counts (the streamed builds' form)
            srt, cnt = aggregate(offsets, None if weights is None else weights.ravel())
        else:
            # One sort (in threads) serves the partition and the segment counts.
            srt, cnt = sort_u64(np.ascontiguousarray(offsets, dtype=np.uint64)), None
        part, counts = cell_partition(srt, domain, beta, cnt) \
            if method == CELLS else partition_of_sorted(
                srt, domain, eps_p, beta / 2, factor, rng, cnt, method=method, shards=n_shards,
                weights=True, privtree_fanout=pt_fanout, privtree_merge=pt_merge)
        if cnt is None and int(counts.sum()) != offsets.size:
            raise AssertionError("partition weights do not add up to the number of values")
        syn = cls._release_tree(part, counts, eps_t, rng, beta=beta, tree=tree, fanout=fanout,
                                consistency=consistency, estimator=estimator, k=k,
                                dlt=dlt, ratio=ratio, wl=wl, pchoice=pchoice)
        syn._columns, syn.clipped = described, clip
        release_sums(spec, syn, offsets, shifted, eps_s, rng)      # sum_of: range_sums.py
        return syn

    @classmethod
    def _release_tree(cls, part, counts, eps_t, rng, *, beta, tree, fanout, consistency,
                      estimator, k, dlt, ratio=1, wl=None, pchoice=None):
        """The tree over the released partition's segment ``counts`` (DNRR 3.2), for ``wl``
        (``pchoice``: the partition rule's choice, recorded)."""
        fanout, ratio, choice = tree_for_workload(wl, part, fanout, ratio, eps_t, estimator,
                                                  consistency, dlt, pchoice)
        if tree == "kary":
            counter = KaryTreeCounter(horizon=len(part), epsilon=eps_t, k=k, rng=rng, delta=dlt)
            released = np.ascontiguousarray(counter.update_many(counts), dtype=np.int64)
        else:
            fanout = 2 if tree == "binary" else fanout
            scales = tree_scales(trees.tree_shape(len(part), fanout)[0], eps_t, ratio)
            released = trees.noisy_tree(counts, fanout, eps_t, rng, dlt, scales=scales)
        return cls._from_release(part, released, epsilon_tree=eps_t, beta=beta, tree=tree,
                                 fanout=fanout, consistency=consistency and tree != "kary",
                                 estimator=estimator, k=k, delta=dlt, level_ratio=ratio,
                                 workload=choice)

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

    @property
    def structure(self):
        """The noisy tree: ``"hierarchical"``, ``"binary"`` or ``"kary"`` (also ``tree``)."""
        return self.tree

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

    @clips_queries
    def count_many(self, lo, hi, *, return_std=False, nonnegative=False):
        """Noisy counts of the inclusive intervals ``[lo[q], hi[q]]``.

        Parameters
        ----------
        lo, hi : array_like of int
            Same shape, ``lo <= hi``; a query reaching outside the domain is
            clipped to it (:mod:`pydp_synopsis.queryclip`).
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
            ``lo > hi`` (not clipped: a reversed interval is almost always a
            caller's bug).
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
    @clips_queries
    def confidence_intervals(self, lo, hi, confidence=0.95, *, method="rigorous",
                             multiplicity=1, nonnegative=False):
        """Per-query intervals for each true count: a guarantee, or a calibrated model.

        For each interval on its own (not all at once: that is
        :meth:`error_bound`), from released numbers only (post-processing):

        * ``method="rigorous"`` (the default): ``low <= true count <= high``
          with probability at least ``confidence`` over the mechanism's coins,
          a theorem for any data.  The true count lies between those of the
          whole segments inside the query (``I``) and of the whole segments
          it touches (``O``); both are answered without bias, and one-sided
          Chernoff tails of their exact noise (discrete Laplace MGF) give
          ``[I - t_I, O + t_O]``, each side failing with probability
          ``(1 - confidence) / 2`` (all of it on ``O``'s side when no
          segment is inside).  The bias part is half the released count of
          the cut segments.  :mod:`pydp_synopsis.bias_bounds` has the proof.
        * ``method="calibrated"``: a *model*, not a guarantee: the answer
          ``-+`` its rigorous noise tail widened by a beta-binomial model of
          the items inside each cut segment (fraction cut, released count).
          Far narrower on queries that cut segments; its coverage is
          measured on real data (docs/guide/error-bars.md), not proven.
          Only for ``estimator="uniform"`` (the default); other estimators
          get the rigorous interval.

        The result's ``method`` says which was given; ``std`` is the exact
        noise standard deviation of the answer (:meth:`count_many`).

        Parameters
        ----------
        lo, hi : array_like of int
            As :meth:`count_many`.
        confidence : float
            In ``(0, 1)``.
        method : {"rigorous", "calibrated"}
        multiplicity : int
            Accepted for compatibility and checked (>= 1); unused: the
            intervals read released counts, which hold any duplicates.
        nonnegative : bool
            Clip the answers and ``low`` at 0 (post-processing; true counts
            are >= 0, so the intervals keep their coverage).

        Returns
        -------
        ErrorBars
            ``(answer, low, high, std, noise, bias)``, float64 arrays of the
            queries' shape, ``high - low = 2 (noise + bias)``, and ``method``
            (:class:`pydp_synopsis.errorbars.ErrorBars`).

        Raises
        ------
        ParameterError
            ``confidence`` outside ``(0, 1)``, an unknown ``method``,
            ``multiplicity`` below 1 (all before any query is read).
        TypeError
            A non-real ``confidence``, a non-str ``method``, a non-int
            ``multiplicity``, a non-bool ``nonnegative``.
        DomainError
            As :meth:`count_many`.

        Notes
        -----
        O(q log m) plus a few C calls (answers, noise weights, tails) for
        the query and its snapped ranges.

        References
        ----------
        .. [DNRR] Dwork, Naor, Reingold, Rothblum, section 3.2 (covers,
           boundary segments).
        .. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace MGF).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = IntervalSynopsis.build(list(range(0, 4000, 3)), domain=(0, 3999),
        ...                            epsilon=1.0, rng=ps.Rng(seed=4))   # seed: tests only
        >>> bars = s.confidence_intervals([100], [2000], 0.9)
        >>> bool(bars.low[0] <= 634 <= bars.high[0]), bars.method   # 634 values in [100, 2000]
        (True, 'rigorous')
        >>> s.confidence_intervals([100], [2000], 0.9, method="calibrated").method
        'calibrated'
        """
        conf = check_beta(confidence, "confidence")
        method = check_choice(method, "method", METHODS)
        check_int(multiplicity, "multiplicity", 1, 1 << 62)
        nonnegative = check_bool(nonnegative, "nonnegative")
        lo_o, hi_o, shape = self._offsets(lo, hi)
        return self._error_bars(lo_o, hi_o, shape, conf, method, nonnegative)

    # ----------------------------------------------------------- persistence
    def save(self, path, *, mode=None):
        """Write the synopsis to ``path`` (atomic, checksummed; only released numbers).

        New files get ``0o666`` less the umask unless ``mode`` is given.

        O(m).  Load with :func:`pydp_synopsis.load`.
        """
        persist.write_record(path, *self._to_record()[:3], mode=mode)

    def _to_record(self):
        return to_record(self)


@persist.register(KIND)
def _load(meta, arrays):
    """Rebuild a saved synopsis from its released numbers (:func:`interval_record.from_record`)."""
    return from_record(meta, arrays, IntervalSynopsis._from_release)
