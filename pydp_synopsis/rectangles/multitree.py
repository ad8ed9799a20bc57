"""The multi-tree: DNRR section 3.3 with the pruning of Remark 3.4.

Over the per-axis segments (runs of ``merge`` consecutive partition
segments), a tree of fanout ``k_a`` per axis with ``L_a`` stored levels (the
root is never stored); every node of an axis-a tree (a < c - 1) owns a
successor tree over axis a + 1 built from the points in its rectangle.  One
point lies in exactly ``S = sum_a prod_{b<=a} L_b`` nodes (Claim 3.3): ``S_int
= S - S_fin`` intermediate ones (axes < c - 1, only used to prune) and ``S_fin
= prod_b L_b`` final ones.  ``final_share=None`` (DNRR) gives every node
discrete Laplace noise of scale ``S / epsilon_tree``; a share ``f`` gives final
nodes ``S_fin / (f epsilon_tree)`` and intermediate ones ``S_int / ((1 - f)
epsilon_tree)``; ``f = 1`` leaves intermediate nodes uncounted (sequential
composition in every case).  With ``delta > 0`` each of those scales
``S_g / e`` is replaced by :func:`~pydp_synopsis.accounting.unit_shift_scale`
``(S_g, e, delta_g)``, ``min(S_g / e, lambda)`` with lambda calibrated to the
l2 sensitivity ``sqrt(S_g)`` (Andersson, Pagh, Torkamani, "Count on Your
Elders", section 5.2, Lemma 5.5, Theorem 1.3), ``delta_g`` the group's share
of ``delta`` in proportion to its epsilon (basic composition of the two
groups).  The scales still depend on the released partitions' sizes only.  Pruning: a node whose noisy count is below
``ceil(prune * b)`` (``b`` its scale) is empty: count 0, no children, no
successor, their noise never drawn.  A query sums the final nodes of the
product of the per-axis covers (boundary segments weighted by ``estimator``).

The tuning constants below are measured; the evidence is in
docs/guide/rectangles.md and docs/benchmarks/rectangles.md.

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
   Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.3,
   Claim 3.3, Theorem 3.3, Remark 3.4.
"""
import dataclasses
import math
from fractions import Fraction

import numpy as np

from .._core import LIMITS
from .. import aggregates
from ..aggregates import histogram
from ..errors import FormatError, ParameterError
from ..accounting import unit_shift_scale
from ..params import scale_parts, split_epsilon
from ..errorbars import noise_std
from ..tails import laplace_sum_tail, laplace_weighted_tail
from ..trees import tree_shape
from . import kernels
from .options import ESTIMATORS, check_per_axis

__all__ = ["MAX_POINTS", "TreeShape", "MultiTree", "tree_merge", "node_noise"]

#: The most points a multi-tree takes (the C kernel's point ids are uint32).  A
#: declared, public limit -- part of the input space like the domain: a larger
#: input is refused before any budget is charged or noise drawn, with a message
#: naming this limit only (docs/guide/privacy.md).  The adaptive grid has
#: no limit on the number of points.
MAX_POINTS = LIMITS.multitree_point_limit - 1

#: prune="auto" builds the unpruned tree up to this many nodes (~100 MB).
_AUTO_PRUNE_NODES = 4_000_000
#: final_share="auto" when the tree is pruned (unpruned: 1).
_AUTO_FINAL_SHARE = Fraction(9, 10)
#: merge="auto": tree segments per axis ~ (n_hat epsilon_final / kappa_c)^(1/c),
#: Qardaji et al.'s grid-size rule applied to equi-depth segments.
_KAPPA = {2: 3.0}
_KAPPA_OTHER = 1.0
#: The pruning threshold that keeps every node.
_NO_PRUNING = -(1 << 63)


@dataclasses.dataclass(frozen=True)
class TreeShape:
    """The shape of the unpruned multi-tree: a function of released numbers only.

    Attributes
    ----------
    merge : tuple of int
        Partition segments per tree segment, per axis.
    fanout : tuple of int
    segments : tuple of int
        Tree segments per axis, ``m_a = ceil(partition segments / merge)``.
    levels : tuple of int
        Stored levels ``L_a`` per axis.
    nodes : tuple of int
        Stored nodes of one axis-a tree.
    """

    merge: tuple
    fanout: tuple
    segments: tuple
    levels: tuple
    nodes: tuple

    @classmethod
    def of(cls, sizes, merge, fanout):
        """The shape over ``sizes`` partition segments per axis."""
        segments = tuple(-(-m // g) for m, g in zip(sizes, merge))
        trees = [tree_shape(m, k) for m, k in zip(segments, fanout)]
        return cls(tuple(merge), tuple(fanout), segments, tuple(t[0] for t in trees),
                   tuple(t[1] for t in trees))

    @property
    def sensitivity(self):
        """``(S_int, S_fin)``: intermediate and final nodes one point lies in (Claim 3.3)."""
        s_all = sum(math.prod(self.levels[:a + 1]) for a in range(len(self.levels)))
        s_fin = math.prod(self.levels)
        return s_all - s_fin, s_fin

    @property
    def unpruned_nodes(self):
        """``N = sum_a prod_{b<=a} (nodes of an axis-b tree)``."""
        return sum(math.prod(self.nodes[:a + 1]) for a in range(len(self.nodes)))


def _auto_merge(sizes, n_hat, epsilon_final):
    """merge="auto": runs of partition segments giving ~ (n_hat eps / kappa)^(1/c) per axis
    (post-processing of the partitions)."""
    c = len(sizes)
    target = max(1.0, (n_hat * epsilon_final / _KAPPA.get(c, _KAPPA_OTHER)) ** (1.0 / c))
    return tuple(max(1, math.ceil(m / target)) for m in sizes)


class MultiTree:
    """The released multi-tree over the segments of :class:`~.axes.Axes`.

    Parameters
    ----------
    axes : Axes
    shape : TreeShape
    estimator : {"uniform", "cover"}
    final_share : float or None
        Share of ``epsilon_tree`` of the final nodes (None: one scale).
    prune : float, "dnrr", ("threshold", int) or None
        The pruning rule that produced ``thresholds``.
    thresholds : (int, int)
        Pruning thresholds of intermediate and final nodes.
    scales : (Fraction, Fraction)
        Noise scales of intermediate and final nodes (0: uncounted).
    epsilon_levels : (Fraction, Fraction)
        Privacy loss of intermediate and final nodes.
    records : (count, child, succ)
        The C core's node records (int64 arrays of equal length).
    delta : Fraction
        The delta the scales were calibrated for (0: pure).
    """

    __slots__ = ("axes", "shape", "estimator", "final_share", "prune", "thresholds", "scales",
                 "epsilon_levels", "records", "delta", "_cum", "_present")

    structure = "multitree"

    def __init__(self, axes, shape, *, estimator, final_share, prune, thresholds, scales,
                 epsilon_levels, records, delta=Fraction(0)):
        self.axes, self.shape = axes, shape
        self.estimator, self.final_share, self.prune = estimator, final_share, prune
        self.thresholds, self.scales = tuple(thresholds), tuple(scales)
        self.epsilon_levels = tuple(epsilon_levels)
        self.records = tuple(records)
        self.delta = delta
        self._cum, self._present = None, None

    # ------------------------------------------------------------------ build
    @staticmethod
    def split_budget(eps_tree, options, dims):
        """``(epsilon_final, epsilon_intermediate)`` if this build may split
        ``eps_tree`` by a share, else None; checked before any noise is drawn."""
        share = options.final_share
        if dims == 1 or share is None or share == 1:
            return None
        share = _AUTO_FINAL_SHARE if share == "auto" else share
        return split_epsilon(eps_tree, share,
                             ("epsilon_tree * final_share", "epsilon_tree * (1 - final_share)"))

    @staticmethod
    def check_noise(eps_tree, split):
        """Nothing to refuse before the charge: the multi-tree's node scales
        ``S / epsilon`` (or their l2 calibration with delta) depend on the
        released partitions' sizes (Claim 3.3), and the C kernel takes any
        scale with parts below ``2**62``."""

    @classmethod
    def build(cls, axes, cells, n_hat, eps_tree, split, options, rng, delta=Fraction(0)):
        """Release the multi-tree (one C call; noise only after the partitions').

        Parameters
        ----------
        axes : Axes
        cells : Cells
            The points' partition segments per axis, with weights (an
            in-memory chunk of uint32 segments is modified in place; several
            chunks are merged into their distinct tree cells first).
        n_hat : float
            Released estimate of n (:meth:`Axes.release`).
        eps_tree : Fraction
            The budget of the tree.
        split : (Fraction, Fraction) or None
            From :meth:`split_budget`.
        options : MultiTreeOptions
            Checked.
        rng : Rng
        delta : Fraction
            0 (pure) or in (0, 1), checked: the scales' l2 calibration.

        Notes
        -----
        O(n S + k N) in C, S from Claim 3.3 (O(n log^c n), Remark 3.4) and N
        the materialised node count.  Memory O(n + N); for streamed cells n
        is the number of distinct tree cells.
        """
        c = axes.dims
        prune, threshold = options.prune, options.threshold
        merge = tree_merge(axes.sizes, n_hat, eps_tree, split, options)
        shape = TreeShape.of(axes.sizes, merge, options.fanout)
        segs, weights = _tree_cells(cells, merge, shape.segments)
        share, (eps_int, eps_fin), scales = node_noise(shape, eps_tree, split, options, delta)
        prune, thresholds = _pruning(prune, threshold, shape, scales, axes.beta)
        records = kernels.multitree_build(
            rng, segs, shape.segments, shape.fanout,
            (0, 0) if scales[0] == 0 else scale_parts(scales[0]), thresholds[0],
            scale_parts(scales[1]), thresholds[1], options.max_nodes, weights)
        return cls(axes, shape, estimator=options.estimator,
                   final_share=None if (c == 1 or share is None) else float(share), prune=prune,
                   thresholds=thresholds, scales=scales, epsilon_levels=(eps_int, eps_fin),
                   records=records, delta=delta)

    # ---------------------------------------------------------------- reading
    @property
    def pure_epsilon(self):
        """The pure epsilon of the nodes: ``S_int / b_int + S_fin / b_fin`` (uncounted
        levels add 0); the sum of :attr:`epsilon_levels` when ``delta == 0``."""
        return sum((Fraction(n) / b for n, b in zip(self.sensitivity, self.scales) if b),
                   Fraction(0))

    @property
    def merge(self):
        """Partition segments per tree segment, per axis."""
        return self.shape.merge

    @property
    def fanout(self):
        """Tree fanout per axis."""
        return self.shape.fanout

    @property
    def segments(self):
        """Tree segments per axis."""
        return self.shape.segments

    @property
    def levels(self):
        """Stored tree levels per axis."""
        return self.shape.levels

    @property
    def unpruned_nodes(self):
        """Nodes of the unpruned multi-tree."""
        return self.shape.unpruned_nodes

    @property
    def sensitivity(self):
        """``(S_int, S_fin)`` (Claim 3.3)."""
        return self.shape.sensitivity

    @property
    def num_nodes(self):
        """Materialised nodes."""
        return int(self.records[0].size)

    def nodes(self):
        """One row per materialised node, in the records' preorder (the fields:
        :meth:`~pydp_synopsis.rectangles.synopsis.RectangleSynopsis.tree_nodes`)."""
        count, child, succ = self.records
        axis, level, index, pred = kernels.multitree_describe(child, succ, self.segments,
                                                              self.shape.fanout)
        out = np.empty(count.size, dtype=[("axis", np.uint8), ("level", np.uint8),
                                          ("index", np.uint64), ("predecessor", np.int64),
                                          ("count", np.int64)])
        out["axis"], out["level"], out["index"] = axis, level, index
        out["predecessor"], out["count"] = pred, count
        return out

    # ---------------------------------------------------------------- answers
    def answer(self, lo, hi):
        """Noisy counts of the rectangles ``[lo, hi]`` ((q, c) uint64 offsets, checked).

        Per axis, the segments strictly inside are covered by the minimal
        cover of the axis tree, boundary segments by ``estimator``
        (``"cover"``: whole, DNRR; ``"uniform"``: times the fraction of the
        segment inside, placed by partition segment); one C call sums the
        final nodes of the product of the per-axis covers (absent nodes
        count 0), reading at most ``prod_a (2 (k_a - 1) L_a + 2)`` nodes per
        rectangle.
        """
        if self._cum is None:
            # prefix sums of the records' counts, mod 2^64 (computed once): a run
            # of final-axis siblings is one difference
            cum = np.zeros(self.records[0].size + 1, dtype=np.uint64)
            np.cumsum(self.records[0].view(np.uint64), out=cum[1:])
            self._cum = cum
        covers = self._covers(lo, hi)
        return kernels.multitree_answer(self.records, self._cum, self.segments, self.shape.fanout,
                                        *covers)

    def noise(self, lo, hi):
        """The answers' noise weights: ``(sumsq, maxabs, scales)``.

        An answer is ``sum_v w_v (count of final node v)`` over the product
        of the per-axis covers, ``w_v`` the product of the per-axis weights,
        so its noise is ``sum_v w_v Z_v`` over the final nodes holding a
        noisy count (all of them unpruned).  ``sumsq`` (q, 1) is ``sum_v
        w_v^2``, ``maxabs`` (q, 1) ``max_v |w_v|``, ``scales`` the final
        nodes' scale; one C call (``pds_multitree_noise``).  Pruned trees:
        a final node stored with count 0 under a threshold > 0 was pruned
        and holds no noise; one that survived a threshold was selected by
        its noise, so there the variance is that of the linear map, not
        conditioned on the pruning.
        """
        if self._present is None:
            count, child, succ = self.records
            axis = kernels.multitree_describe(child, succ, self.segments, self.shape.fanout)[0]
            noisy = (axis == self.axes.dims - 1) & ~((count == 0) & (self.thresholds[1] > 0))
            present = np.zeros(count.size + 1, dtype=np.uint64)
            np.cumsum(noisy, out=present[1:])
            self._present = present
        sumsq, maxabs = kernels.multitree_noise(self.records, self._present, self.segments,
                                                self.shape.fanout, *self._covers(lo, hi))
        return sumsq[:, None], maxabs[:, None], (self.scales[1],)

    def query_bias(self, lo, hi, max_multiplicity):
        """Per query, the most the boundary tree segments it cuts can miscount.

        The per-side terms of :meth:`_boundary_bias`, counted only on the
        sides where the query cuts a tree segment: ``"cover"`` ``(g - 1)(W +
        mu) + W`` on the lo side and ``g (W + mu)`` on the hi side (at most
        ``g (W + mu)`` when both ends cut one tree segment), ``"uniform"``
        ``g (W + mu)`` per cut side.  Holds when the partitions' weight
        bounds do (probability >= 1 - beta / 2).
        """
        q, c = lo.shape
        mu = max_multiplicity
        bias = np.zeros(q)
        covers = self._covers(lo, hi) if self.estimator == "uniform" else None
        for a in range(c):
            g, m = self.merge[a], self.axes.sizes[a]
            heavy = g * (self.axes.partitions[a].interior_weight_bound() + mu)
            if covers is not None:
                fl, fr = covers[3][:, a], covers[5][:, a]
                bias += heavy * ((fl > 0).astype(np.float64) + (fr > 0))
                continue
            co = self.axes.corners(a, lo[:, a], hi[:, a])
            left = (co.k % g != 0) | (lo[:, a] != co.k_first)
            ends = self.axes.ends[a]
            right = (((co.r + 1) % g != 0) & (co.r + 1 != m)) | (hi[:, a] != ends[co.r])
            part = left * (heavy - mu) + right * heavy
            bias += np.where(co.k // g == co.r // g, np.minimum(part, heavy), part)
        return bias

    def _covers(self, lo, hi):
        """Per axis: whole tree segments ``[wa, wb)`` and the weighted boundary
        segments ``kl`` (weight ``fl``) and ``kr`` (``fr``); (q, c) arrays.

        With ``merge`` g > 1, ``"uniform"`` measures a corner's position
        inside a tree segment in partition segments (each about equally
        heavy: all are sealed at the same threshold), each of those by the
        fraction of its span.
        """
        q, c = lo.shape
        wa, wb, kl, kr = (np.zeros((q, c), dtype=np.uint64) for _ in range(4))
        fl, fr = np.zeros((q, c)), np.zeros((q, c))
        for a in range(c):
            g, mt, m = self.merge[a], self.segments[a], self.axes.sizes[a]
            co = self.axes.corners(a, lo[:, a], hi[:, a])
            if self.estimator == "cover":
                wa[:, a], wb[:, a] = co.k // g, co.r // g + 1
                continue
            # positions in partition segments: start of lo, end of hi (exact at ends)
            p_lo = co.k + (lo[:, a] - co.k_first).astype(np.float64) / co.k_span
            p_hi = co.r + ((hi[:, a] - co.r_first).astype(np.float64) + 1.0) / co.r_span

            pa, pb = (_tree_position(p, g, mt, m) for p in (p_lo, p_hi))
            fa, fb = np.floor(pa), np.floor(pb)
            a_int, b_int = pa == fa, pb == fb
            same = (fa == fb) & ~a_int          # lo and hi inside one partial tree segment
            first = np.where(a_int, fa, fa + 1)
            left = np.where(a_int, 0.0, np.where(same, pb - pa, np.minimum(fa + 1, pb) - pa))
            right = np.where(b_int | same, 0.0, pb - fb)
            wa[:, a] = np.where(same, 0, first).astype(np.uint64)
            wb[:, a] = np.where(same, 0, np.maximum(fb, first)).astype(np.uint64)
            kl[:, a] = np.where(a_int, 0, fa).astype(np.uint64)
            kr[:, a] = np.where(right > 0, fb, 0).astype(np.uint64)
            fl[:, a], fr[:, a] = np.clip(left, 0.0, 1.0), np.clip(right, 0.0, 1.0)
        return wa, wb, kl, fl, kr, fr

    # ------------------------------------------------------------ error bound
    def error_terms(self, confidence, max_multiplicity):
        """``(noise, bias, pruning)``: their sum bounds every answer's error at once.

        ``delta = 1 - confidence`` is split: ``beta / 2`` (fixed at build)
        for the partitions' weight bounds ``W_a``, the rest between the
        answer noise and (if pruned) the pruning loss.

        * ``bias = sum_a B_a``: every item counted wrongly lies in one of the
          2c boundary tree segments (Claim 3.3, part 2), off by at most 1;
          ``B_a = 2 g_a W_a + (2 g_a - 1) mu`` ("cover", one-sided) or ``2 g_a
          (W_a + mu)`` ("uniform"), ``W_a`` the partition's
          ``interior_weight_bound`` (items before a segment's seal position,
          any duplicates) and ``mu = max_multiplicity``;
        * ``noise``: a Chernoff bound (exact discrete Laplace MGF) on a
          weighted sum of at most ``P = prod_a (2 (k_a - 1)(L_a - 1) + k_a
          [+ 2])`` final-node noises, union-bounded over the distinct
          answers (the noise is multi-affine in the boundary fractions);
        * ``pruning`` (Remark 3.4): an absent cover node lies under a pruned
          "blocking" node whose true count is below ``thr + z`` (``z``
          bounds every node's noise, union over the N unpruned nodes); at
          most P blockers, whose absent nodes' own noise is at most ``P z``.

        Raises
        ------
        ParameterError
            ``confidence >= 1 - beta / 2``.
        """
        rest = self._check_confidence(confidence)
        pruned = self.prune is not None
        extra = 2 if self.estimator == "uniform" else 0
        terms, log_combos = 1, 0.0
        for m, k, levels in zip(self.segments, self.shape.fanout, self.shape.levels):
            terms *= 2 * (k - 1) * (levels - 1) + min(k, m) + extra
            ranges = m * (m + 1) // 2
            log_combos += math.log(4 * ranges + m if extra else ranges)
        noise = laplace_sum_tail(terms, float(self.scales[1]),
                                 log_combos + math.log(2.0 / (rest / 2 if pruned else rest)))
        bias = sum(self._boundary_bias(p, g, max_multiplicity)
                   for p, g in zip(self.axes.partitions, self.merge))
        pruning = self._pruning_bound(terms, rest / 2) if pruned else 0.0
        return noise, bias, pruning

    def _pruning_bound(self, terms, delta):
        """What absent nodes can hide from any answer reading <= ``terms`` final nodes:
        a blocking node's true count is below ``thr + z`` (``z`` bounds every node's
        noise, union over the N unpruned nodes, probability ``delta``)."""
        log_n = math.log(self.shape.unpruned_nodes) + math.log(1.0 / delta)
        worst = max(thr + 2.0 * float(b) * log_n for thr, b in zip(self.thresholds, self.scales))
        return terms * max(worst, 0.0)

    def _check_confidence(self, confidence):
        """``1 - confidence - beta / 2``: what is left after the partitions' share."""
        delta, part_fail = 1.0 - confidence, self.axes.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partitions' "
                f"failure probability fixed at build), got {confidence!r}")
        return delta - part_fail

    def error_bars(self, lo, hi, confidence, max_multiplicity):
        """``(std, noise, bias)`` per query (checked (q, c) offsets).

        ``1 - confidence`` is split as in :meth:`error_terms`: ``beta / 2``
        for the partitions' weight bounds (the bias), the rest for the
        noise's two-sided Chernoff tail (halved with the pruning term when
        the tree is pruned: then ``bias`` also holds the whole-tree pruning
        bound of :meth:`error_terms`).
        """
        rest = self._check_confidence(confidence)
        pruned = self.prune is not None
        sumsq, maxabs, scales = self.noise(lo, hi)
        noise = laplace_weighted_tail(sumsq, maxabs, scales,
                                      math.log(2.0 / (rest / 2 if pruned else rest)))
        bias = self.query_bias(lo, hi, max_multiplicity)
        if pruned:
            bias = bias + self._pruning_bound(self._max_cover_terms(), rest / 2)
        return noise_std(sumsq, scales), noise, bias

    def _max_cover_terms(self):
        """Most final nodes one answer reads: the product of the per-axis covers."""
        extra = 2 if self.estimator == "uniform" else 0
        return math.prod(2 * (k - 1) * (levels - 1) + min(k, m) + extra
                         for m, k, levels in zip(self.segments, self.shape.fanout,
                                                 self.shape.levels))

    def _boundary_bias(self, part, g, mu):
        """Most items one axis's two boundary tree segments can miscount.

        A partition segment holds at most ``W`` items before its seal
        position plus at most ``mu`` at it; a tree segment is a run of ``g``
        of them.  ``"cover"`` counts a boundary tree segment whole: the left
        one over-counts its items before ``lo`` (``<= (g - 1)(W + mu) + W``),
        the right one its items after ``hi`` (``<= g (W + mu)``).
        ``"uniform"`` weights each by a fraction in [0, 1], so each is off
        by at most its weight ``g (W + mu)``.  For g = 1 these are the
        interval synopsis's ``2 W + mu`` and ``2 (W + mu)``.
        """
        w = part.interior_weight_bound()
        if self.estimator == "cover":
            return 2 * g * w + (2 * g - 1) * mu
        return 2 * g * (w + mu)

    # ----------------------------------------------------------------- record
    def record(self):
        """``(meta, arrays)``: this structure's part of the file record."""
        meta = {"epsilon_intermediate": list(self.epsilon_levels[0].as_integer_ratio()),
                "epsilon_final": list(self.epsilon_levels[1].as_integer_ratio()),
                "scales": [list(b.as_integer_ratio()) for b in self.scales],
                "thresholds": [int(t) for t in self.thresholds],
                "fanout": list(self.shape.fanout), "estimator": self.estimator,
                "final_share": self.final_share,
                "prune": list(self.prune) if isinstance(self.prune, tuple) else self.prune,
                "merge": list(self.merge)}
        return meta, dict(zip(("count", "child", "succ"), self.records))

    @classmethod
    def from_record(cls, meta, arrays, axes, delta=Fraction(0)):
        """The multi-tree of a file record; the C core checks the node arrays.

        Raises
        ------
        FormatError
            Inconsistent parameters or node arrays that are not a
            well-formed multi-tree.
        """
        c = axes.dims
        eps_int = Fraction(*meta["epsilon_intermediate"])
        eps_fin = Fraction(*meta["epsilon_final"])
        scales = tuple(Fraction(*s) for s in meta["scales"])
        fanout = check_per_axis([int(k) for k in meta["fanout"]], "fanout", c, 2, 1 << 24)
        merge = check_per_axis([int(g) for g in meta.get("merge", [1] * c)], "merge", c, 1, 1 << 32)
        if meta["estimator"] not in ESTIMATORS:
            raise FormatError("rectangle synopsis record has an invalid estimator or config")
        if (len(scales) != 2 or eps_fin <= 0 or eps_int < 0 or scales[1] <= 0 or scales[0] < 0
                or (scales[0] == 0) != (c > 1 and eps_int == 0 and meta["final_share"] == 1.0)):
            raise FormatError("rectangle synopsis record has an invalid epsilon, scale or beta")
        records = tuple(np.ascontiguousarray(arrays[k], dtype=np.int64)
                        for k in ("count", "child", "succ"))
        if any(r.shape != (records[0].size,) for r in records):
            raise FormatError("rectangle synopsis record: node arrays differ in length")
        shape = TreeShape.of(axes.sizes, merge, fanout)
        if not kernels.multitree_check(*records, shape.segments, shape.fanout):
            raise FormatError("rectangle synopsis record: the node arrays are not a well-formed "
                              "multi-tree")
        thresholds = meta["thresholds"]
        if (not isinstance(thresholds, list) or len(thresholds) != 2
                or not all(type(t) is int and -(1 << 63) <= t < 1 << 63 for t in thresholds)):
            raise FormatError("rectangle synopsis record has invalid pruning thresholds")
        prune = meta["prune"]
        return cls(axes, shape, estimator=meta["estimator"], final_share=meta["final_share"],
                   prune=tuple(prune) if isinstance(prune, list) else prune,
                   thresholds=thresholds, scales=scales,
                   epsilon_levels=(eps_int, eps_fin), records=records, delta=delta)


def _tree_cells(cells, merge, segments):
    """``(segs, weights)`` for the C build: (n, c) uint32 tree segments and int64 weights.

    One in-memory chunk is divided by ``merge`` in place (its weights, maybe
    None, kept).  Several chunks are reduced to their distinct tree cells:
    node counts are sums of weights, so the release is the same as from the
    repeated points (the kernel draws in node order, not point order).
    Cells are keyed by their flat index when it fits int64, else by row.
    """
    if cells.single is not None:
        segs, weights = cells.single
        segs = np.ascontiguousarray(segs, dtype=np.uint32)
        for a, g in enumerate(merge):
            if g > 1:
                segs[:, a] //= g
        return segs, weights
    flat = math.prod(segments) < 1 << 63
    step = np.asarray(merge, dtype=np.int64)
    parts = []
    for seg, weights in cells:
        tree_seg = np.asarray(seg, dtype=np.int64).reshape(-1, len(segments)) // step
        if flat:
            keys = np.ravel_multi_index(tuple(tree_seg.T), segments).astype(np.uint64)
            parts.append(aggregates.aggregate(keys, weights))
        else:
            parts.append(_row_cells(tree_seg, weights))
        if len(parts) > 64:
            parts = [_merge_cells(parts, flat)]
    keys, counts = _merge_cells(parts, flat)
    if flat:
        keys = np.stack(np.unravel_index(keys.astype(np.int64), segments), axis=1)
    return np.ascontiguousarray(keys.reshape(-1, len(segments)), dtype=np.uint32), counts


def _row_cells(rows, weights):
    """Distinct rows and their summed weights."""
    uniq, inv = np.unique(rows, axis=0, return_inverse=True)
    return uniq, histogram(inv.ravel(), weights, len(uniq))


def _merge_cells(parts, flat):
    """One ``(cells, counts)`` from several (flat keys or rows)."""
    if flat:
        return aggregates.merge(parts)
    if not parts:
        return np.zeros((0, 1), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return _row_cells(np.concatenate([p[0] for p in parts]),
                      np.concatenate([p[1] for p in parts]))


def tree_merge(sizes, n_hat, eps_tree, split, options):
    """Partition segments per tree segment, per axis: ``options.merge``, or for ``"auto"``
    its rule of the released sizes and ``n_hat`` (post-processing of the partitions)."""
    share = options.final_share
    if options.merge != "auto":
        return options.merge
    return _auto_merge(sizes, n_hat,
                       float(eps_tree if split is None or share == "auto" else split[0]))


def node_noise(shape, eps_tree, split, options, delta=Fraction(0)):
    """``(share, (epsilon_intermediate, epsilon_final), (b_int, b_fin))`` of a tree of this
    shape: ``final_share="auto"`` resolved (every node's count is needed only when
    pruning; otherwise the intermediate nodes are uncounted and the final ones get it
    all), then :func:`_noise`."""
    share = options.final_share
    if share == "auto":
        prune, threshold = options.prune, options.threshold
        prunes = (threshold is not None or prune not in (None, "auto")
                  or (prune == "auto" and shape.unpruned_nodes > _AUTO_PRUNE_NODES))
        share = _AUTO_FINAL_SHARE if prunes else Fraction(1)
    return (share,) + _noise(shape, eps_tree, share, split, delta)


def _pruning(prune, threshold, shape, scales, beta):
    """``(prune, thresholds)``: the rule applied and the thresholds of intermediate
    and final nodes, from the options and the noise scales (Remark 3.4)."""
    if threshold is not None:
        return ("threshold", threshold), (threshold, threshold)
    if prune == "auto" and shape.unpruned_nodes > _AUTO_PRUNE_NODES and scales[0] > 0:
        # the full tree when it is small (pruning only adds bias), else 2 noise
        # scales (subcritical growth, small bias)
        return 2.0, tuple(math.ceil(2.0 * float(b)) for b in scales)
    if prune in (None, "auto"):
        return None, (_NO_PRUNING, _NO_PRUNING)
    tau = math.log(shape.unpruned_nodes) - math.log(beta) if prune == "dnrr" else prune
    return prune, tuple(math.ceil(tau * float(b)) for b in scales)


def _tree_position(pos, g, segments, sizes):
    """A position in partition segments as a position in tree segments of ``g`` each
    (the last one may be shorter)."""
    j = np.minimum(np.floor(pos / g), segments - 1)
    return j + (pos - j * g) / np.minimum(g, sizes - j * g)


def _noise(shape, eps_tree, share, split, delta=Fraction(0)):
    """``((epsilon_intermediate, epsilon_final), (b_int, b_fin))`` for a resolved share.

    One scale ``S / eps_tree`` for every node when ``share`` is None or c =
    1; ``share = 1``: final nodes ``S_fin / eps_tree``, intermediate ones
    uncounted; else ``split`` = (final, intermediate) budgets, scales ``S_fin /
    eps_fin`` and ``S_int / eps_int``.  With ``delta > 0`` each ``S / e`` is
    ``unit_shift_scale(S, e, delta_g)``: the whole delta for one group, else
    ``delta * eps_fin / eps_tree`` for the final nodes and the rest for the
    intermediate ones (their sum is delta: basic composition).
    """
    s_int, s_fin = shape.sensitivity
    if len(shape.levels) > 1 and share == 1:
        return (Fraction(0), eps_tree), (Fraction(0), unit_shift_scale(s_fin, eps_tree, delta))
    if len(shape.levels) == 1 or share is None:
        b = unit_shift_scale(s_int + s_fin, eps_tree, delta)
        return (Fraction(0), eps_tree), (b, b)
    eps_fin, eps_int = split
    delta_fin = delta * eps_fin / (eps_fin + eps_int)
    return (eps_int, eps_fin), (unit_shift_scale(s_int, eps_int, delta - delta_fin),
                                unit_shift_scale(s_fin, eps_fin, delta_fin))
