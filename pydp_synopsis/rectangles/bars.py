"""The rectangle synopsis' per-query intervals: rigorous and calibrated.

Called by :meth:`RectangleSynopsis.confidence_intervals
<pydp_synopsis.rectangles.synopsis.RectangleSynopsis.confidence_intervals>`;
the arguments are in :mod:`pydp_synopsis.bias_bounds`.

* Multi-tree.  Rigorous: the true count of a box lies between those of the
  boxes of whole tree segments inside it and around it (snapped outward
  and inward on every axis), answered without bias; one-sided Chernoff
  tails of their exact noise give ``[I - t_I, O + t_O]``
  (:func:`~pydp_synopsis.bias_bounds.snapped_interval`).  A pruned tree's
  whole-segment answers miss what its pruned nodes hide, so there the
  interval is :meth:`MultiTree.error_bars
  <pydp_synopsis.rectangles.multitree.MultiTree.error_bars>`'s (the
  partitions' weight bounds and the pruning bound).  Calibrated: the
  answer's noise quantile widened by the model's variance of each *slab*
  the box cuts -- per axis and side, the cut tree segment times the outer
  box on the other axes, its released count and the fraction of the tree
  segment's extent inside the box (slabs overlap at the corners: counted
  in each).  The model is the ``"uniform"`` estimator's, on unpruned
  trees: otherwise ``"calibrated"`` returns the rigorous interval, and its
  ``method`` says so.
* Adaptive grid (the default on 2 to 8 axes).  Rigorous: ``answer -+
  (noise + bias)`` of :meth:`AdaptiveGrid.error_bars
  <pydp_synopsis.rectangles.grid.AdaptiveGrid.error_bars>`: the bias is
  the released count of exactly the fine cells the box cuts plus a
  lower-tail bound of their noise (released numbers only; ``1 -
  confidence`` split in halves between the answer's noise and that tail,
  union bound).  Calibrated: the cut cells' released count ``U`` over ``n``
  cut cells, raised by one standard deviation of its noise, stands for
  ``n`` cells of ``U / n`` items each, every one of whose content may fall
  in or out of the box: variance ``U (U / n + nu) / (1 + nu)`` (``nu`` =
  :data:`CELL_CONCENTRATION`)
  (:func:`~pydp_synopsis.bias_bounds.cut_variance` at ``f (1 - f)`` = 1,
  four times its worst fraction: the fine cells' fractions are not
  reported by the kernel), times ``1 + rho (n / (2c) - 1)``: the errors
  of the cells along one of the box's ``2c`` faces equicorrelated with
  ``rho`` = :data:`CELL_CORRELATION` (fitted, like ``nu``, on the real data
  the repository ships).  Each side is clipped at the noise quantile plus
  ``U``.
* Quadtree over partition cells.  Rigorous: ``answer -+ (noise + bias)`` of
  :meth:`QuadTree.error_bars
  <pydp_synopsis.rectangles.quadtree.QuadTree.error_bars>` (the leaves the
  box cuts in the data's coordinates play the grid's cut fine cells).
  Calibrated: the grid's model on those leaves (its two constants were
  fitted on the grid; measured on the quadtree, docs/guide/error-bars.md:
  coverage 0.98-1.0, about twice the grid's width on short boxes).  A
  model reading each cut leaf's share of its span was tried and covered
  as little as 14% of short boxes: points on lines defeat it.

``low`` is clipped at 0 in both (true counts are never negative: the
coverage is unchanged).
"""
import numpy as np

from ..bias_bounds import (calibrated_interval, cut_variance, noise_quantile,
                           snapped_interval, split_delta)
from ..errorbars import assemble_interval, noise_std
from ..noise import discrete_laplace_variance
from ..tails import laplace_weighted_tail
from .grid import AdaptiveGrid
from .quadtree import QuadTree

__all__ = ["CELL_CONCENTRATION", "CELL_CORRELATION", "rectangle_bars", "tree_snaps"]

#: The grid's calibrated model: the beta-binomial concentration ``nu`` of a cut cell's
#: content (its fraction inside the box is not known to it).
CELL_CONCENTRATION = 1.0
#: The grid's calibrated model: the correlation of the cut cells' errors along one face
#: of a box (docs/guide/error-bars.md, "Calibrated").
CELL_CORRELATION = 0.05


def _first(ends, j):
    """First offsets of partition segments ``j`` (uint64)."""
    return np.where(j == 0, np.uint64(0), ends[np.maximum(j, 1) - 1] + np.uint64(1))


def tree_snaps(axes, merge, lo, hi):
    """The boxes of whole tree segments inside and around each box, and its cut slabs.

    A tree segment of axis ``a`` is a run of ``merge[a]`` partition
    segments.  Returns ``(has_inner, inner_lo, inner_hi, outer_lo, outer_hi,
    slabs)``: (q, c) uint64 corners (the inner box arbitrary where
    ``has_inner`` is False) and, per axis and side, ``(cut, lo_a, hi_a,
    fraction)``: whether the box cuts a tree segment there, that segment's
    extent on axis ``a`` and the fraction of it inside the box.
    """
    q, c = lo.shape
    has_inner = np.ones(q, dtype=bool)
    inner_lo, inner_hi = lo.copy(), hi.copy()
    outer_lo, outer_hi = lo.copy(), hi.copy()
    slabs = []
    for a in range(c):
        ends, g = axes.ends[a], merge[a]
        m = ends.size
        co = axes.corners(a, lo[:, a], hi[:, a])
        kk, rr = co.k // g, co.r // g                        # tree segments
        o_lo = _first(ends, kk * g)
        k_end = ends[np.minimum((kk + 1) * g, m) - 1]
        r_first = _first(ends, rr * g)
        o_hi = ends[np.minimum((rr + 1) * g, m) - 1]
        whole_l, whole_r = lo[:, a] == o_lo, hi[:, a] == o_hi
        first = np.where(whole_l, kk, kk + 1)
        last = np.where(whole_r, rr, rr - 1)
        has_inner &= first <= last
        n_tree = -(-m // g)
        first_c, last_c = np.minimum(first, n_tree - 1), np.maximum(last, 0)
        inner_lo[:, a] = _first(ends, first_c * g)
        inner_hi[:, a] = ends[np.minimum((last_c + 1) * g, m) - 1]
        outer_lo[:, a], outer_hi[:, a] = o_lo, o_hi
        single = kk == rr
        cut_l = ~(whole_l & (whole_r | ~single))
        cut_r = ~single & ~whole_r
        kept_l = np.where(single, hi[:, a] - lo[:, a], k_end - lo[:, a]).astype(np.float64) + 1
        f_l = kept_l / ((k_end - o_lo).astype(np.float64) + 1)
        f_r = ((hi[:, a] - r_first).astype(np.float64) + 1) / ((o_hi - r_first).astype(
            np.float64) + 1)
        slabs.append((a, cut_l, o_lo, np.where(single, o_hi, k_end), f_l))
        slabs.append((a, cut_r, r_first, o_hi, f_r))
    return has_inner, inner_lo, inner_hi, outer_lo, outer_hi, slabs


def _whole_boxes(mechanism, lo, hi, log_inv):
    """Answers of boxes of whole tree segments and their one-sided noise tails."""
    sumsq, maxabs, scales = mechanism.noise(lo, hi)
    return mechanism.answer(lo, hi), laplace_weighted_tail(sumsq, maxabs, scales, log_inv)


def _multitree_bars(mt, lo, hi, answer, confidence, method, nonnegative):
    sumsq, maxabs, scales = mt.noise(lo, hi)
    std = noise_std(sumsq, scales)
    has_inner, in_lo, in_hi, out_lo, out_hi, slabs = tree_snaps(mt.axes, mt.merge, lo, hi)
    if method == "calibrated":
        noise = noise_quantile(std, sumsq, maxabs, scales, confidence)
        var, below, above = (np.zeros_like(answer) for _ in range(3))
        for a, cut, s_lo, s_hi, frac in slabs:
            idx = np.flatnonzero(cut)
            if idx.size:
                box_lo, box_hi = out_lo[idx].copy(), out_hi[idx].copy()
                box_lo[:, a], box_hi[:, a] = s_lo[idx], s_hi[idx]
                count = np.maximum(mt.answer(box_lo, box_hi), 0.0)
                var[idx] += cut_variance(frac[idx], count)
                below[idx] += frac[idx] * count
                above[idx] += (1 - frac[idx]) * count
        low, high = calibrated_interval(answer, noise, var, confidence, below, above)
        return assemble_interval(answer, std, noise, low, high, answer.shape, nonnegative,
                                 calibrated=True)
    log_in, log_out = split_delta(has_inner, 1.0 - confidence)
    outer, t_out = _whole_boxes(mt, out_lo, out_hi, log_out)
    inner, t_in = np.zeros_like(answer), np.zeros_like(answer)
    idx = np.flatnonzero(has_inner)
    if idx.size:
        inner[idx], t_in[idx] = _whole_boxes(mt, in_lo[idx], in_hi[idx], log_in[idx])
    low, high, noise, bias = snapped_interval(answer, inner, t_in, outer, t_out)
    return assemble_interval(answer, std, noise, low, high, answer.shape, nonnegative,
                             bias=bias)


def _cut_calibrated(parts, scales, lo, answer, confidence, nonnegative):
    """The calibrated interval from ``(sumsq, maxabs, cut)`` (the grid's fine cells or
    the quadtree's leaves, the box cuts ``cut[:, 1]`` of them, holding ``cut[:, 0]``)."""
    sumsq, maxabs, cut = parts
    std = noise_std(sumsq, scales)
    noise = noise_quantile(std, sumsq, maxabs, scales, confidence)
    cells = cut[:, 1]
    # the cut cells' released count, raised by one std of its noise (a count near 0 is
    # as likely a few items as none)
    spread = np.sqrt(cells * discrete_laplace_variance(scales[-1]))
    total = np.maximum(cut[:, 0], 0.0) + spread
    per_cell = total / np.maximum(cells, 1.0)
    # equicorrelated along each of the 2c faces of the box: n / (2c) cells a face
    faces = 1.0 + CELL_CORRELATION * np.maximum(cells / (2 * lo.shape[1]) - 1.0, 0.0)
    var = faces * total * (per_cell + CELL_CONCENTRATION) / (1.0 + CELL_CONCENTRATION)
    low, high = calibrated_interval(answer, noise, var, confidence, total, total)
    return assemble_interval(answer, std, noise, low, high, answer.shape, nonnegative,
                             calibrated=True)


def rectangle_bars(mechanism, lo, hi, confidence, multiplicity, method, nonnegative):
    """The :class:`~pydp_synopsis.errorbars.ErrorBars` of ``method`` for checked (q, c)
    offsets and arguments (``multiplicity`` only for a pruned multi-tree's rigorous
    interval)."""
    if isinstance(mechanism, QuadTree):       # one descent for the answer and its parts
        answer, *parts = mechanism.parts(lo, hi)
        if method == "calibrated":
            return _cut_calibrated(parts, mechanism.scales[1:], lo, answer, confidence,
                                   nonnegative)
        std, noise, bias = mechanism.error_bars(lo, hi, confidence, multiplicity, parts)
    else:
        answer = mechanism.answer(lo, hi)
        if isinstance(mechanism, AdaptiveGrid):
            if method == "calibrated":
                return _cut_calibrated(mechanism.noise_parts(lo, hi), mechanism.scales, lo,
                                       answer, confidence, nonnegative)
        elif getattr(mechanism, "prune", False) is None:      # an unpruned multi-tree
            if mechanism.estimator != "uniform":
                method = "rigorous"          # the model is the uniform estimator's
            return _multitree_bars(mechanism, lo, hi, answer, confidence, method, nonnegative)
        std, noise, bias = mechanism.error_bars(lo, hi, confidence, multiplicity)
    low = np.maximum(answer - noise - bias, 0.0)
    return assemble_interval(answer, std, noise, low, answer + noise + bias, answer.shape,
                             nonnegative)
