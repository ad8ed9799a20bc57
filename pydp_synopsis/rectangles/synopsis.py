"""RectangleSynopsis: the front of the c private partitions and one of three structures.

:meth:`RectangleSynopsis.build` hands its arguments to :func:`.release.release`
(checks, one private partition per axis, the budget, then the multi-tree of
:mod:`.multitree`, the adaptive grid of :mod:`.grid` or the quadtree of
:mod:`.quadtree`); the synopsis holds the
structure and delegates queries, error bounds and saving to it.
"""
from collections import namedtuple

import numpy as np

from .. import persist
from .._threads import halves
from ..persist import check_pure_epsilon, state_delta
from ..errorbars import METHODS, noise_std
from ..errors import FormatError, ParameterError
from ..params import check_beta, check_bool, check_choice, check_int, renamed_keyword
from ..queryclip import QueryClipping, clips_queries, note_queries
from ..unitmessages import in_user_units
from .axes import Axes, as_int_array, check_corners
from .bars import rectangle_bars
from .grid import AdaptiveGrid
from .levels import RectangleLevels
from .losses import RectangleLosses
from .marginals import RectangleMarginals
from .multitree import MultiTree
from .quadtree import QuadTree
from .release import CONFIGS, MECHANISMS, release
from .workload import choice_from_record
from ..units import (Column, clipped_from_record, columns_from_record, columns_to_record,
                     convert_corners)

__all__ = ["RectangleSynopsis", "ErrorTerms"]

_KIND = "rectangle-synopsis"
_FORMAT = 1
#: An adaptive grid with seal counts (release 0.2.0): readers of format 1 refuse it
#: rather than answer without the seal model.
_FORMAT_SEALS = 2
#: A quadtree over partition cells (release 0.3): older readers refuse it.
_FORMAT_QUADTREE = 3

#: The parts of :meth:`RectangleSynopsis.error_bound`: it is their sum.
ErrorTerms = namedtuple("ErrorTerms", ["noise", "bias", "pruning"])


def _structure_attribute(mechanism, name, doc):
    """A property reading ``name`` of the held structure if it is a ``mechanism``, else None."""
    def get(self):
        held = self._mechanism
        return getattr(held, name) if isinstance(held, mechanism) else None
    return property(get, doc=doc)


class RectangleSynopsis(QueryClipping, RectangleMarginals, RectangleLevels, RectangleLosses):
    """How many points fall in any box ``[lo, hi]`` (2 to 8 columns), answered with epsilon-DP.

    Build it once from c integer columns (``build(points, domain=[(lo0,
    hi0), (lo1, hi1)], epsilon=1)``), then ask as many box counts as you
    like: queries cost no further privacy.  Each answer comes with error
    bars: ``count_many(lo, hi, return_std=True)`` gives its exact noise
    standard deviation, :meth:`confidence_intervals` a per-query interval,
    and :meth:`error_bound` one bound for every box at once.  One row (one
    point) is one unit of privacy; the domains are public.  Save with
    :meth:`save`, reload with :func:`pydp_synopsis.load`; the constructor is
    not public.

    >>> import numpy as np, pydp_synopsis as ps
    >>> pts = np.random.default_rng(0).integers(0, 1000, (5000, 2))
    >>> r = ps.RectangleSynopsis.build(pts, domain=[(0, 999)] * 2, epsilon=1.0, rng=ps.Rng(seed=1))
    >>> answer, std = r.count_many([[0, 0]], [[499, 999]], return_std=True)
    >>> bool(abs(answer[0] - np.count_nonzero(pts[:, 0] <= 499)) < 200)
    True

    The mechanism -- one private partition per axis, then the adaptive grid
    (:mod:`pydp_synopsis.rectangles.grid`, the default for c >= 2) or DNRR's
    multi-tree (:mod:`pydp_synopsis.rectangles.multitree`), pure epsilon-DP
    by sequential composition -- the option profiles
    (:mod:`pydp_synopsis.rectangles.options`) and the tuning evidence are in
    docs/guide/rectangles.md; each attribute is a documented property.

    References
    ----------
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
       Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.3,
       Claim 3.3, Theorem 3.3, Remark 3.4.
    .. [AG] Qardaji, Yang, Li, "Differentially Private Grids for Geospatial
       Data", ICDE 2013.
    """

    __slots__ = ("_axes", "_mechanism", "_config", "_columns", "clipped", "workload")

    def __init__(self):
        raise TypeError("use RectangleSynopsis.build(...) or pydp_synopsis.load(path)")

    @classmethod
    def _from_parts(cls, axes, mechanism, config):
        """The one constructor of build and load: released partitions plus one structure."""
        self = object.__new__(cls)
        self._axes, self._mechanism, self._config = axes, mechanism, config
        self._columns = None                     # set by build/load when described
        self.clipped = False                     # build(clip=True): points were clipped
        self.workload = None                     # build(workload=...): the BoxChoice
        return self

    # ------------------------------------------------------------------ build
    @classmethod
    @in_user_units
    def build(cls, points, *, domain, epsilon, beta=0.05, rng=None, config="default",
              structure="auto", budget=None, counts=None, shards=None, delta=0,
              columns=None, scale=None, resolution=None, dropna=False, clip=False,
              workload=None, **tuning):
        """Release an epsilon-DP rectangle synopsis of ``points``.

        Parameters
        ----------
        points : array_like of int, shape (n, c), or a Source
            One row per data item, every coordinate inside its axis's domain;
            or a c-column :class:`~pydp_synopsis.sources.Source` (files, a
            database table, a dask collection), read in chunks with memory
            independent of its length (docs/guide/sources.md).
            In memory, the multi-tree takes at most ``2**32 - 1`` rows
            (:data:`~pydp_synopsis.rectangles.multitree.MAX_POINTS`): a
            declared, public part of the input space like the domain
            (docs/guide/privacy.md); the adaptive grid has no limit.
        domain : sequence of c (int, int)
            Inclusive bounds per axis; each may hold up to ``2**64`` values.
            ``1 <= c <= 8``.
        epsilon : float or Fraction
            Total privacy loss (rounded down to an exact rational).
        beta : float
            Failure probability of the partitions' weight bounds (``beta /
            (2c)`` per axis).
        rng : Rng, optional
            Randomness (OS-seeded by default; seeds are for tests/benchmarks only).
        config : {"default", "dnrr"}
            ``"dnrr"``: DNRR section 3.3 as written (the ``DNRR`` profile).
        structure : {"auto", "adaptive", "multitree", "quadtree"}
            "auto": the multi-tree for c = 1, ``config="dnrr"`` or a
            multi-tree option, else the adaptive grid (or the quadtree where
            ``workload="short"`` takes it: c = 2, epsilon >= 1/2, no tuning
            keyword).  ``"quadtree"``: PrivTree's quadtree over the cells of
            the two partitions with flat noisy leaves
            (:mod:`pydp_synopsis.rectangles.quadtree`; c = 2; options
            ``split_share``, ``split_levels``, ``partition_share``,
            ``threshold_factor``).
        budget : Budget, optional
            Charged ``(epsilon, delta)`` after every check, before any noise is drawn.
        counts : array_like of int, shape (n,), optional
            Multiplicities: row i stands for ``counts[i] >= 0`` points
            (totalling at most ``2**62``).  With the same seeded ``rng`` the
            synopsis is exactly that of ``np.repeat(points, counts, axis=0)``,
            built in time and memory of the number of distinct rows.
        shards : int, optional
            Cut every axis at ``shards - 1`` public points and partition the
            pieces on their own streams (:mod:`pydp_synopsis.partitions.sharded`: same
            epsilon, at most ``shards - 1`` more segments per axis).
        delta : float or Fraction
            In ``[0, 1)``; 0 (default) is pure epsilon-DP.  ``delta > 0`` is
            accepted by the multi-tree only (``structure="multitree"``,
            ``config="dnrr"``, c = 1 or a multi-tree option): each node group
            of ``S`` nodes per point (Claim 3.3) gets the scale ``min(S / e,
            lambda)``, lambda calibrated to the l2 sensitivity ``sqrt(S)``
            ([APT2]_ section 5.2, Lemma 5.5, Theorem 1.3; [KOV15]_ Theorem
            3.5); with a final share the two groups split delta in
            proportion to their epsilon.  The partitions stay pure.  The
            synopsis is then ``(epsilon, delta)``-DP and
            :attr:`pure_epsilon`-DP.  The adaptive grid refuses it: one point
            moves one cell per level, where the l2 calibration cannot help.
        columns, scale, resolution, dropna
            User units, as :meth:`IntervalSynopsis.build
            <pydp_synopsis.IntervalSynopsis.build>`, per axis: ``columns``
            c names or :class:`~pydp_synopsis.columns.Column` objects (a
            DataFrame's column names by default), ``scale`` and
            ``resolution`` one value or one per axis (None: that axis is
            read as the domain and dtype say).  ``points`` may then be a
            DataFrame or rows of dates, times and decimals.
        clip : bool
            Clip instead of refusing: a coordinate below its axis's ``lo``
            counts as ``lo``, one above ``hi`` as ``hi`` (per axis, exactly,
            on the integer grid, after the conversion of user units -- a
            date, a decimal -- and a value beyond int64 in that conversion
            too).  Default False: a point outside the domain is refused (one
            line naming the column and the domain) before any budget is
            charged.  Clipping maps each row on its own, so two neighbouring
            inputs (one point added or removed) stay neighbours after it:
            every released count keeps sensitivity 1 and the synopsis stays
            epsilon-DP for the same epsilon (the convention of [OpenDP]_ and
            [diffprivlib]_).  The release equals that of the clipped points
            under the same seed; the synopsis records it (``clipped``,
            saved and shown by ``pydp-synopsis info``).
        workload : {"short", "mixed", "long"} or (lo, hi), optional
            Boxes declared (public) to choose by: :mod:`pydp_synopsis.rectangles.workload`.
        **tuning
            The options below.  Each starts at the value of the profile the
            structure and ``config`` select (``ADAPTIVE_2D``, ``ADAPTIVE``,
            ``DEFAULT_MULTITREE``, ``DNRR`` in
            :mod:`pydp_synopsis.rectangles.options`, which states the rule);
            a keyword given replaces that one value (``None``: keep it,
            except for ``final_share`` and ``prune``).

        Other Parameters
        ----------------
        partition_share : float in (0, 1)
            Share of ``epsilon`` for the c partitions.
        threshold_factor : float in [0.7, 100]
            Partition threshold ``factor (ln D + ln(1/beta)) / epsilon_axis``
            (3: DNRR's Fig. 1).
        coarse_share : float in (0, 1)
            Adaptive grid: share of ``epsilon_tree`` for the coarse level
            (after the seal counts' share).
        seal_share : 0 or float in (0, 0.5]
            Adaptive grid: share of ``epsilon_tree`` for the c seal counts
            (default 1/32): per axis, how many points lie on a partition
            segment's end, with discrete Laplace noise of scale ``c /
            epsilon_seal``.  A cut segment then counts its end with weight
            ``rho_a`` (the released share of axis a's points on segment
            ends, at most 0.95) and its span uniformly with ``1 - rho_a``;
            0 spreads every segment uniformly (release 0.2).  See
            :attr:`seal_shares`.
        fine_constant : "auto" or float in [0.25, 100]
            Adaptive grid: the constant ``kappa_2`` of the fine grids' size,
            ``ceil((v epsilon_fine / kappa_2)^(2/(c+2)))`` runs per axis in a
            coarse cell of noisy count ``v`` (AG's is 5; smaller: finer).
            "auto" (the 2-D default): 5, or down to 2 when the released seal
            counts say that 20-50% or more of the points lie on segment ends
            on some axis (heavy values: the mass sits on lines) and the
            released coarse counts are spread (the top 10% of coarse cells
            hold 50-35% or less of the mass); ``grid.fine_constant_of``.
            5 for ``c >= 3``.  See :attr:`fine_constant`.
        fanout : int or sequence of c ints
            Multi-tree: fanout per axis, in ``[2, 2**24]``.
        estimator : {"uniform", "cover"}
            Multi-tree: a partial boundary segment counts by the fraction of
            its span inside the query, or whole (DNRR).
        final_share : float in (0, 1), 1, "auto" or None
            Multi-tree: share of ``epsilon_tree`` for the final-axis nodes;
            None: one scale for all nodes (DNRR); 1: intermediate nodes
            uncounted (needs no pruning); "auto": 1 unpruned, else 0.9.
            Ignored when c = 1.
        prune : float >= 0, "auto", "dnrr" or None
            Multi-tree: pruning threshold in units of each node's noise scale
            (Remark 3.4); "dnrr": ``ln(N / beta)``, N the unpruned node
            count; "auto": none up to 4e6 nodes, else 2; None: none.
        threshold : int, optional
            Multi-tree: absolute pruning threshold for every node (overrides
            ``prune``).
        merge : "auto", int or sequence of c ints
            Multi-tree: partition segments per tree segment (1: DNRR).
        max_nodes : int
            Refuse (MemoryError) to materialise more multi-tree nodes than
            this (24 bytes each).

        Returns
        -------
        RectangleSynopsis

        References
        ----------
        .. [APT2] J. D. Andersson, R. Pagh, S. Torkamani, "Count on Your
           Elders: Laplace vs Gaussian Noise", section 5.2.
        .. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem
           for Differential Privacy", ICML 2015, Theorem 3.5.
        .. [OpenDP] The OpenDP Library, ``make_clamp`` (clamping to declared bounds).
        .. [diffprivlib] N. Holohan et al., "Diffprivlib: The IBM Differential
           Privacy Library", 2019 (``bounds=``: data clipped to the bounds).

        Raises
        ------
        TypeError, ParameterError, DomainError
            A bad argument (nothing charged, no randomness drawn).
        BudgetError
            ``budget`` cannot pay ``epsilon``.
        MemoryError
            The multi-tree would exceed ``max_nodes``: decided by the shape
            and the pruned noisy counts, i.e. by released numbers, after the
            budget was charged (a refusal is post-processing, like a release).

        Notes
        -----
        O(c n log n) for the partitions, then O(n c + cells) for the grid or
        O(n S + k N) for the multi-tree (S from Claim 3.3, N materialised
        nodes); memory O(n + cells or N).  With ``counts``, n is the number
        of rows given; from a Source, memory is O(chunk + cells or N) (the
        multi-tree holds its distinct tree cells).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> pts = [[1, 2], [3, 4], [3, 5]]
        >>> s = RectangleSynopsis.build(pts, domain=[(0, 7), (0, 7)], epsilon=1e6,
        ...                             threshold=0, rng=ps.Rng(seed=1))  # seed: tests only
        >>> round(s.count([0, 0], [7, 7]))
        3
        """
        axes, built, described, clip, choice = release(
            points, domain=domain, epsilon=epsilon, beta=beta, rng=rng, config=config,
            structure=structure, budget=budget, counts=counts, shards=shards, delta=delta,
            columns=columns, scale=scale, resolution=resolution, dropna=dropna, clip=clip,
            tuning=tuning, workload=workload)
        return cls._from_parts(axes, built, config)._described(described, clip, choice)

    def _described(self, described, clipped=False, workload=None):
        self._columns, self.clipped, self.workload = described, clipped, workload
        return self

    @property
    def columns(self):
        """One :class:`~pydp_synopsis.columns.Column` per axis (unnamed integer
        columns when built from integers)."""
        if self._columns is None:
            return tuple(Column.integer() for _ in self.domain)
        return self._columns

    @property
    def user_domain(self):
        """The domain in user units, one ``(lo, hi)`` per axis."""
        return tuple(tuple(col.values(np.array(d, dtype=object) if col.is_plain else
                                      np.array(d, dtype=np.int64)).tolist())
                     for col, d in zip(self.columns, self.domain))

    @property
    def user_segment_ends(self):
        """Per axis, the partition's segment ends in user units (see
        :attr:`IntervalSynopsis.user_segment_ends
        <pydp_synopsis.IntervalSynopsis.user_segment_ends>`)."""
        return tuple(p.ends if col.is_plain else col.values(np.asarray(p.ends, np.int64))
                     for col, p in zip(self.columns, self.partitions))

    def _user(self, lo, hi):
        if self._columns is None:
            return note_queries(self, lo, hi)
        return note_queries(self, *convert_corners(self._columns, lo, hi, True))

    def __repr__(self):
        # public facts and released sizes only (never the number of points)
        dlt = (f", delta={float(self.delta):.3g}, pure_epsilon={float(self.pure_epsilon):.6g}"
               if self.delta else "")
        return (f"RectangleSynopsis(domain={self.domain}, epsilon={self.epsilon}{dlt}, "
                f"structure={self.structure!r}, nodes={self.num_nodes})")

    # ------------------------------------------------------------- attributes
    @property
    def partitions(self):
        """One released :class:`~pydp_synopsis.partitions.dnrr.Partition` per axis."""
        return self._axes.partitions

    @property
    def dims(self):
        """Number of axes c."""
        return self._axes.dims

    @property
    def domain(self):
        """The c inclusive ``(lo, hi)`` pairs."""
        return self._axes.domain

    @property
    def beta(self):
        """Failure probability of the partitions' weight bounds, as built."""
        return self._axes.beta

    @property
    def threshold_factor(self):
        """The partitions' threshold constant."""
        return self._axes.threshold_factor

    @property
    def config(self):
        """``"default"`` or ``"dnrr"``, as built."""
        return self._config

    @property
    def structure(self):
        """``"multitree"`` or ``"adaptive"``."""
        return self._mechanism.structure

    @property
    def scales(self):
        """Noise scales of the first and second level (0: uncounted)."""
        return self._mechanism.scales

    @property
    def merge(self):
        """Consecutive partition segments per tree segment / coarse-cell side, per axis."""
        return self._mechanism.merge

    @property
    def segments(self):
        """Tree segments (multi-tree) or coarse cells (grid) per axis."""
        return self._mechanism.segments

    @property
    def num_nodes(self):
        """Released noisy counts: materialised tree nodes, or coarse + fine cells."""
        return self._mechanism.num_nodes

    @property
    def sensitivity(self):
        """``(S_int, S_fin)``: counts of each level one point lies in (Claim 3.3).

        ``(1, 1)`` for the adaptive grid (one coarse and one fine cell).
        """
        return self._mechanism.sensitivity

    @property
    def estimator(self):
        """How a partial boundary segment counts: ``"uniform"`` or ``"cover"``."""
        return self._mechanism.estimator

    fanout = _structure_attribute(MultiTree, "fanout", "Tree fanout per axis (multi-tree).")
    final_share = _structure_attribute(
        MultiTree, "final_share", "Share of epsilon_tree of the final nodes (multi-tree; None: "
        "one scale for every node).")
    prune = _structure_attribute(
        MultiTree, "prune", "The pruning rule (multi-tree): a float, 'dnrr', ('threshold', t) "
        "or None.")
    thresholds = _structure_attribute(
        MultiTree, "thresholds", "Pruning thresholds of intermediate and final nodes (multi-tree).")
    levels = _structure_attribute(
        MultiTree, "levels", "Stored tree levels L_a per axis (multi-tree).")
    unpruned_nodes = _structure_attribute(
        MultiTree, "unpruned_nodes", "Nodes of the unpruned multi-tree, the N of prune='dnrr'.")
    coarse_share = _structure_attribute(
        AdaptiveGrid, "coarse_share", "Share of epsilon_tree of the coarse cells (adaptive grid).")
    fine_constant = _structure_attribute(
        AdaptiveGrid, "fine_constant", "The fine grids' constant kappa_2 this build used "
        "(adaptive grid; AG's is 5; None for files of release 0.2).")

    def tree_nodes(self):
        """The multi-tree's released nodes, one row per node in preorder.

        Returns
        -------
        numpy.ndarray
            Structured, fields ``axis``, ``level`` (0 = segments), ``index``
            (within its level), ``predecessor`` (record of the axis-(a-1)
            node whose successor tree holds it; -1 on axis 0) and ``count``
            (noisy; 0 when uncounted).  Released numbers only.

        Raises
        ------
        TypeError
            The synopsis is not a multi-tree.
        """
        return self._held(MultiTree, "tree_nodes").nodes()

    def grid_cells(self):
        """The adaptive grid's released cells: ``(coarse, fine)`` structured arrays.

        ``coarse``: ``count`` (noisy), ``start``/``end`` (partition segments
        ``[start, end)`` per axis) and ``fine_shape`` (fine runs per axis);
        ``fine``: ``coarse`` (its coarse cell), ``count`` (noisy),
        ``estimate`` (after constrained inference: what queries spread) and
        ``start``/``end``.

        Raises
        ------
        TypeError
            The synopsis is not an adaptive grid.
        """
        return self._held(AdaptiveGrid, "grid_cells").cells()

    def quadtree_leaves(self):
        """The quadtree's released leaves: a structured array with ``count`` (noisy),
        ``start``/``end`` (partition segments, inclusive, per axis), ``first``/``last``
        (their offsets from each axis's ``lo``) and ``depth``.

        Raises
        ------
        TypeError
            The synopsis is not a quadtree.
        """
        return self._held(QuadTree, "quadtree_leaves").leaves()

    def _held(self, mechanism, what):
        if not isinstance(self._mechanism, mechanism):
            raise TypeError(f"{what}() needs structure={mechanism.structure!r}, "
                            f"this synopsis is {self.structure!r}")
        return self._mechanism

    # ---------------------------------------------------------------- queries
    @clips_queries
    def count_many(self, lo, hi, *, return_std=False, nonnegative=False):
        """Noisy counts of the inclusive rectangles ``[lo[q], hi[q]]``.

        Parameters
        ----------
        lo, hi : array_like of int, shape (q, c)
            Corners, every coordinate inside its axis's domain, ``lo <= hi``;
            in user units for axes built in them (:attr:`columns`: dates,
            datetimes, decimals, ISO and decimal strings).
        return_std : bool
            Also return each answer's noise standard deviation, exactly: an
            answer is a linear combination of the released counts (the
            multi-tree's final nodes in the product cover; the grid's coarse
            and fine cells, through the constrained inference and the
            fractional weights of partly covered segments), computed per
            query in C.  Noise only: :meth:`confidence_intervals` adds the
            boundary bias.
        nonnegative : bool
            Clip answers at 0: post-processing (free in privacy) that never
            moves an answer away from its true count (counts are >= 0).
            ``std`` stays that of the unclipped answer.

        Returns
        -------
        answers : numpy.ndarray of float64, shape (q,)
            Post-processing of the release: no privacy cost.
        std : numpy.ndarray of float64, shape (q,)
            With ``return_std=True``: ``(answers, std)``.

        Raises
        ------
        DomainError
            ``lo > hi`` on some axis (a corner outside the domain is clipped
            to it: :mod:`pydp_synopsis.queryclip`).
        ParameterError
            Wrong shapes.
        TypeError
            ``return_std`` or ``nonnegative`` not a bool.

        Notes
        -----
        O(q c log m) for the searches plus one C call: the grid reads one
        box of coarse prefix sums and the boundary cells' fine prefix sums;
        the multi-tree at most ``prod_a (2 (k_a - 1) L_a + 2)`` nodes per
        rectangle (Claim 3.3's product cover; fewer where pruned).  The std
        is one more C call visiting the same cells or nodes (the grid: O(c)
        per boundary coarse cell, whatever its fine grid).  Batches of
        ``2**16`` rectangles or more are answered in two threads (the same
        answers).
        """
        return_std = check_bool(return_std, "return_std")
        nonnegative = check_bool(nonnegative, "nonnegative")
        lo_o, hi_o = check_corners(*self._user(lo, hi), self.domain)
        out = halves(self._mechanism.answer, lo_o, hi_o)    # two threads for large batches
        if nonnegative:
            out = np.maximum(out, 0.0)
        if not return_std:
            return out
        sumsq, _, scales = self._mechanism.noise(lo_o, hi_o)
        return out, noise_std(sumsq, scales)

    @clips_queries
    def confidence_intervals(self, lo, hi, confidence=0.95, *, method="rigorous",
                             multiplicity=None, nonnegative=False, max_multiplicity=None):
        """Per-query intervals for each true count: a guarantee, or a calibrated model.

        For each rectangle on its own (not all at once: that is
        :meth:`error_bound`), from released numbers (post-processing);
        ``std`` is the exact noise standard deviation (:meth:`count_many`):

        * ``method="rigorous"`` (the default): ``low <= true count <= high``
          with probability at least ``confidence``, for any data.
          Multi-tree: between the released answers of the boxes of whole
          tree segments inside and around the rectangle, with one-sided
          Chernoff tails of their exact noise (a pruned tree: ``answer -+``
          the noise tail plus the per-side terms of :meth:`error_bound`'s
          bias and the pruning term, with the partitions' ``beta / 2``).
          Grid: ``answer -+`` the noise tail plus the released count of the
          fine cells the rectangle cuts and a lower-tail bound of their
          noise.
        * ``method="calibrated"``: a *model* of the cut slabs or cells (their
          released counts, a beta-binomial spread), far narrower, whose
          coverage was measured on real data, not proven; for the
          ``"uniform"`` estimator on unpruned trees and for the grid
          (otherwise the rigorous interval is returned).

        The result's ``method`` says which; :mod:`pydp_synopsis.rectangles.bars`
        and docs/guide/error-bars.md have the arguments.

        Parameters
        ----------
        lo, hi : array_like of int, shape (q, c)
            As :meth:`count_many`.
        confidence : float
            In ``(0, 1)``; for a pruned multi-tree in ``(0, 1 - beta / 2)``.
        method : {"rigorous", "calibrated"}
        multiplicity : int
            Pruned multi-tree only, as :meth:`error_bound` (default 1;
            ``max_multiplicity=`` is its deprecated old name).
        nonnegative : bool
            Clip the answers and ``low`` at 0 (post-processing).

        Returns
        -------
        ErrorBars
            ``(answer, low, high, std, noise, bias)``, float64 arrays of
            shape (q,) (:class:`pydp_synopsis.errorbars.ErrorBars`).

        Raises
        ------
        ParameterError, TypeError, DomainError
            Bad ``confidence``, ``method``, ``multiplicity``, ``nonnegative``
            or corners (as :meth:`count_many` and :meth:`error_bound`).

        Notes
        -----
        A few C calls: answers and noise weights of the rectangle and of its
        snapped boxes or slabs, tails.

        References
        ----------
        .. [DNRR] Dwork, Naor, Reingold, Rothblum, section 3.3, Claim 3.3
           (the product cover whose final nodes an answer sums).
        .. [AG] Qardaji, Yang, Li, ICDE 2013, section IV (the grid's
           constrained inference, whose weights are computed).
        .. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace MGF).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> pts = [[x, (7 * x) % 64] for x in range(64)]
        >>> s = RectangleSynopsis.build(pts, domain=[(0, 63), (0, 63)], epsilon=1.0,
        ...                             rng=ps.Rng(seed=5))     # seed: tests only
        >>> bars = s.confidence_intervals([[0, 0]], [[63, 63]], 0.9)
        >>> bool(bars.low[0] <= 64 <= bars.high[0])
        True
        """
        conf = check_beta(confidence, "confidence")
        method = check_choice(method, "method", METHODS)
        mu = check_int(renamed_keyword("RectangleSynopsis.confidence_intervals", "max_multiplicity=",
                                       "multiplicity=", max_multiplicity, multiplicity, 1),
                       "multiplicity", 1, 1 << 62)
        nonnegative = check_bool(nonnegative, "nonnegative")
        lo_o, hi_o = check_corners(*self._user(lo, hi), self.domain)
        return rectangle_bars(self._mechanism, lo_o, hi_o, conf, mu, method, nonnegative)

    def count(self, lo, hi):
        """Noisy count of the inclusive rectangle ``[lo, hi]`` (length-c corners; a float).

        Same rules as :meth:`count_many`.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = RectangleSynopsis.build([[1, 1], [2, 6]], domain=[(0, 7), (0, 7)],
        ...                             epsilon=1e6, threshold=0, rng=ps.Rng(seed=3))
        >>> round(s.count([0, 0], [7, 7]))
        2
        """
        if self._columns is not None:           # user units: converted by count_many
            lo, hi = np.array(lo, dtype=object), np.array(hi, dtype=object)
            for name, v in (("lo", lo), ("hi", hi)):
                if v.ndim != 1 or v.shape[0] != self.dims:
                    raise ParameterError(f"{name} must have length {self.dims}, "
                                         f"got shape {v.shape}")
            return float(self.count_many(lo[None, :], hi[None, :])[0])
        lo, hi = as_int_array(lo), as_int_array(hi)
        for name, v in (("lo", lo), ("hi", hi)):
            if v.ndim != 1 or v.shape[0] != self.dims:
                raise ParameterError(f"{name} must have length {self.dims}, got shape {v.shape}")
        return float(self.count_many(lo[None, :], hi[None, :])[0])

    # ------------------------------------------------------------ error bound
    def error_terms(self, confidence=0.95, *, multiplicity=None, max_multiplicity=None):
        """The parts of :meth:`error_bound`: ``ErrorTerms(noise, bias, pruning)``.

        ``noise`` bounds the answers' noise, ``bias`` the items the boundary
        segments (multi-tree) or boundary fine cells (grid) can miscount,
        ``pruning`` what pruned nodes can hide (0 unpruned and for the grid).
        The structures' docstrings (``MultiTree.error_terms``,
        ``AdaptiveGrid.error_terms``) derive each term.  Same parameters and
        errors as :meth:`error_bound`.
        """
        conf = check_beta(confidence, "confidence")
        mu = check_int(renamed_keyword("RectangleSynopsis.error_terms", "max_multiplicity=",
                                       "multiplicity=", max_multiplicity, multiplicity, 1),
                       "multiplicity", 1, 1 << 62)
        return ErrorTerms(*self._mechanism.error_terms(conf, mu))

    def error_bound(self, confidence=0.95, *, multiplicity=None, max_multiplicity=None):
        """The simultaneous bound: the error of *all* rectangle answers at once (Theorem 3.3).

        With probability at least ``confidence`` over the mechanism's coins,
        ``|count(lo, hi) - true count| <= error_bound(confidence)`` for every
        rectangle simultaneously: the sum of :meth:`error_terms`.  A worst
        case over every rectangle, far above a typical error: for one
        query's error bar use :meth:`count_many` with ``return_std=True`` or
        :meth:`confidence_intervals`.

        Parameters
        ----------
        confidence : float
            In ``(0, 1)``; for the multi-tree in ``(0, 1 - beta / 2)`` (``beta
            / 2`` is the partitions' failure probability, fixed at build).
        multiplicity : int
            Default 1 (``max_multiplicity=`` is its deprecated old name, kept
            until 0.3 with a DeprecationWarning).  A *public* bound on how many points share one coordinate value on
            one axis, fixed without looking at the data (the data's true
            multiplicity is private and must not be passed) (multi-tree; the
            grid's bound reads released counts and holds for any duplicates).
            The default 1 is DNRR's setting (distinct values per axis); the
            bound is invalid if the data repeat a value more often.

        Returns
        -------
        float

        Raises
        ------
        ParameterError
            ``confidence`` or ``multiplicity`` out of range.

        Notes
        -----
        O(c) plus a short numeric minimisation (multi-tree), O(cells) (grid).
        """
        mu = renamed_keyword("RectangleSynopsis.error_bound", "max_multiplicity=", "multiplicity=",
                             max_multiplicity, multiplicity, 1)
        terms = self.error_terms(confidence, multiplicity=mu)
        return terms.noise + terms.bias + terms.pruning

    # ----------------------------------------------------------- persistence
    def save(self, path, *, mode=None):
        """Write to ``path``: atomic, checksummed, released numbers only; O(size).  New files
        get ``0o666`` less the umask unless ``mode`` is given.  See :func:`pydp_synopsis.load`."""
        persist.write_record(path, *self._to_record()[:3], mode=mode)

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :mod:`pydp_synopsis.persist`."""
        axes_meta, arrays = self._axes.record()
        meta, structure_arrays = self._mechanism.record()
        fmt = (_FORMAT_QUADTREE if self.structure == "quadtree"
               else _FORMAT_SEALS if "seals" in structure_arrays else _FORMAT)
        meta.update(axes_meta, format=fmt,
                    beta=self.beta, config=self.config,
                    threshold_factor=self.threshold_factor,
                    delta=list(self.delta.as_integer_ratio()),
                    pure_epsilon=list(self.pure_epsilon.as_integer_ratio()))
        arrays.update(structure_arrays)
        if self._columns is not None:
            meta["columns"] = columns_to_record(self._columns)
        if self.clipped:        # absent: refused out-of-domain points (every older file)
            meta["clipped"] = True
        if self.workload is not None:     # absent: built without workload= (every older file)
            meta["workload"] = self.workload.to_meta()
        return _KIND, meta, arrays, None

    @classmethod
    def _from_record(cls, meta, arrays):
        """Rebuild a saved synopsis from its released numbers (no data, no code)."""
        try:
            if meta.get("format") not in (_FORMAT, _FORMAT_SEALS, _FORMAT_QUADTREE):
                raise FormatError(f"unknown rectangle-synopsis format {meta.get('format')!r}")
            if (meta["format"] == _FORMAT_QUADTREE) != (meta.get("structure") == "quadtree"):
                raise FormatError("rectangle synopsis record: the structure does not match "
                                  "its format")
            if (meta["format"] == _FORMAT_SEALS) != ("seals" in arrays):
                raise FormatError("rectangle synopsis record: seal counts do not match its format")
            beta, config = float(meta["beta"]), meta["config"]
            if not 0 < beta < 1 or config not in CONFIGS:
                raise FormatError("rectangle synopsis record has an invalid beta or config")
            axes = Axes.from_record(meta, arrays, beta, float(meta.get("threshold_factor", 3.0)))
            mechanism = MECHANISMS[meta.get("structure", "multitree")]
            delta = state_delta(meta)      # absent (release 0.1): 0
            if delta and mechanism is not MultiTree:
                raise FormatError("rectangle synopsis record: delta > 0 without a multi-tree")
            extra = {"delta": delta} if delta else {}
            syn = cls._from_parts(axes, mechanism.from_record(meta, arrays, axes, **extra), config)
            check_pure_epsilon(meta, syn.pure_epsilon, delta)
            return syn._described(columns_from_record(
                meta, [p.domain for p in axes.partitions]), clipped_from_record(meta),
                choice_from_record(meta, syn._mechanism))
        except FormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
            raise FormatError(f"invalid rectangle synopsis record: {exc}") from exc


persist.register(_KIND)(RectangleSynopsis._from_record)
