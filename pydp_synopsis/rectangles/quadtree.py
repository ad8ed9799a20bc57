"""The quadtree over partition cells: PrivTree's 2-D decomposition of the grid of
the two private partitions, with flat noisy leaf counts.

For small boxes on clustered points (ZIP codes, a city's events) most cells
of the product of the two partitions are empty: the adaptive grid and the
multi-tree pay noise on each of them.  This structure spends its budget
where the points are, as PrivTree does in the plane, but over *partition
segments* instead of raw coordinates, so a heavy value still ends a segment
and a box edge on it is not cut (the flights' routes).

The release (``epsilon_tree = epsilon_split + epsilon_leaf``):

1. **Splits** (``epsilon_split = split_share * epsilon_tree``).  The root is
   the whole grid of segment indices ``[0, m_0 - 1] x [0, m_1 - 1]``.  A node
   ``[s, e]`` splits, on every axis where it holds at least two segments,
   after the segment whose end is nearest the midpoint of the node's span in
   domain coordinates (a public function of the released ends), into up to
   four children.  Top-down, a node of depth ``d`` holding ``c`` points
   (a node of one segment on both axes is a leaf without a draw) splits iff

       ``max(theta - delta, c - d delta) + Z > theta``,  ``Z ~ DLap(lambda)``

   with ``lambda = 7 / (3 epsilon_split)``, the integer ``delta >= lambda
   ln 4`` (:func:`~pydp_synopsis.partitions.privtree.privtree_parameters`
   with fanout 4) and the public threshold ``theta = -split_levels delta``.
2. **Leaves** (``epsilon_leaf``).  Every leaf's count plus discrete Laplace
   of scale ``1 / epsilon_leaf``.

Privacy.  The two partitions are released first (``epsilon_axis`` each,
:mod:`.axes`); given them a point's partition cell is a public function of
the point.  (a) The splits are ``epsilon_split``-DP: [ZXX16]_'s Theorem 3
with Corollary 1 for fanout ``beta = 4``, in the discrete form written out in
:mod:`pydp_synopsis.partitions.privtree`: adding one point changes by one the
counts of the nodes on one root path only, and their biased counts fall by at
least ``delta`` per level downward, so the loss is at most ``(1 / lambda)(1 +
sum_j 4^-j) = 7 / (3 lambda)``; it holds for any public ``theta`` and for
children of any public shape, fewer than four included.  (b) Given the
leaves, one point is in one leaf: the noisy counts are ``epsilon_leaf``-DP
(parallel composition).  (c) Sequential composition of the partitions, (a)
and (b) gives ``epsilon``.  Answers are post-processing.

Answers.  A box ``[lo, hi]`` is first snapped, per axis, to whole partition
segments as the seal model reads them (a segment's points sit at its end):
segments ``i .. j`` with ``i`` the segment holding ``lo`` and ``j`` the last
one ending at or before ``hi``.  A leaf then counts by the share of its
segment cells inside ``[i, j]`` (uniform over segment indices, not
coordinates: a dense run of short segments holds many points).  A box's
answer descends the tree depth first (C, ``csrc/quadtree.c``): a node
inside the box in domain coordinates adds its subtree's sum, a node outside
is skipped, only the nodes the box's boundary crosses are opened, so a box
reads O(its perimeter in leaves) nodes.

Error bars (rigorous, released numbers only): the noise is ``sum_l w_l z_l``
with weights in ``[0, 1]`` (Chernoff, :func:`~pydp_synopsis.tails.laplace_weighted_tail`);
an item is miscounted, by at most one, only in a leaf the box cuts in domain
coordinates (neither inside nor outside), whose true count is at most its
noisy count plus a lower-tail bound of the noise.

References
----------
.. [ZXX16] J. Zhang, X. Xiao, X. Xie, "PrivTree: A Differentially Private
   Algorithm for Hierarchical Decompositions", SIGMOD 2016: Algorithm 2,
   Theorem 3, Corollary 1.
.. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
   Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 2
   (Fig. 1: a heavy value ends its segment), section 3.3.
.. [DR14] Dwork, Roth, "The Algorithmic Foundations of Differential Privacy",
   2014, Theorem 3.16 (sequential composition), Proposition 2.1.
"""
import math
from fractions import Fraction

import numpy as np

from ..aggregates import aggregate, merge
from ..errorbars import noise_std
from ..errors import FormatError, ParameterError
from ..noise import discrete_laplace
from ..params import exact_scale, split_epsilon
from ..partitions.privtree import privtree_epsilon, privtree_parameters
from ..tails import laplace_sum_tail, laplace_weighted_tail
from . import kernels
from .grid import band_bias
from .options import MAX_SPLIT_LEVELS

__all__ = ["QuadTree", "Shape", "MAX_NODES"]

#: Child k of a split node lies in the upper half on axis a iff ``_CORNERS[k, a]``.
_CORNERS = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=bool)
#: A file's tree may hold at most this many nodes (checked before anything is allocated).
MAX_NODES = 1 << 31


def _ends_pair(axes):
    """Per axis, the segments' first and last offsets (uint64)."""
    starts, ends = [], []
    for e in axes.ends:
        e = np.asarray(e, dtype=np.uint64)
        starts.append(np.concatenate([np.zeros(1, dtype=np.uint64), e[:-1] + np.uint64(1)]))
        ends.append(e)
    return starts, ends


def _midpoints(starts, ends, s, e):
    """Per axis, the last segment of the lower child of nodes ``[s, e]`` ((k, 2) int64):
    the segment in ``[s, e - 1]`` whose end is nearest the midpoint of the node's
    span in domain coordinates (``e`` where the node holds one segment)."""
    out = e.copy()
    for a in range(2):
        st, en = starts[a], ends[a]
        sa, ea = s[:, a], e[:, a]
        lo, hi = st[sa], en[ea]
        cm = lo + (hi - lo) // np.uint64(2)
        k = np.searchsorted(en, cm, side="left")            # first end >= cm (k <= ea)
        nearer = (en[k] - cm) <= (cm - st[k])               # its end, or the one before
        k = np.where(nearer, k, k - 1).astype(np.int64)
        wide = ea > sa
        out[:, a] = np.where(wide, np.clip(k, sa, np.maximum(ea - 1, sa)), ea)
    return out


def _children(first, last, split, starts, ends):
    """The children of the nodes ``split`` (indices) of a level, in order: ``(first,
    last, owner, corner, mid)`` with ``owner`` the index into ``split`` of each child."""
    s, e = first[split], last[split]
    wide = e > s
    mid = _midpoints(starts, ends, s, e)
    valid = ~(_CORNERS[None, :, :] & ~wide[:, None, :]).any(axis=2)      # (k, 4)
    owner, corner = np.nonzero(valid)
    up = _CORNERS[corner]
    cf = np.where(up, mid[owner] + 1, s[owner])
    cl = np.where(up, e[owner], mid[owner])
    return cf, cl, owner, corner, mid


def grow(cells, weights, sizes, starts, ends, lam, delta, theta, rng):
    """The split flags and the leaves' true counts of the quadtree (module doc, step 1).

    Parameters
    ----------
    cells : array_like of int, shape (n, 2)
        Each row's partition cell (segment indices, below 2**32).
    weights : array_like of int, shape (n,)
        The number of points each row stands for.
    sizes : (int, int)
        Segments per axis.
    starts, ends : lists of numpy.ndarray of uint64
        The segments' first and last offsets per axis.
    lam, delta, theta : Fraction, int, int
        The split test's noise scale, decay and threshold.
    rng : Rng

    Returns
    -------
    flags : numpy.ndarray of bool
        One per node in breadth-first order: whether it split.
    counts : numpy.ndarray of int64
        The leaves' true counts in the same order.

    Notes
    -----
    Level by level: a level's tests are one draw of
    :func:`~pydp_synopsis.noise.discrete_laplace` over its nodes that can
    split (breadth-first order); one C pass (:func:`.kernels.quad_level`)
    then moves the rows of the nodes that split to their children, counts
    the next level and drops the rest.  O(n depth) time, no memory beyond
    the rows and the nodes.
    """
    cells = np.array(cells, dtype=np.uint32).reshape(-1, 2)        # copies: moved in place
    weights = np.array(weights, dtype=np.int64)
    first = np.zeros((1, 2), dtype=np.int64)
    last = np.array([[sizes[0] - 1, sizes[1] - 1]], dtype=np.int64)
    node = np.zeros(cells.shape[0], dtype=np.int64)
    count = np.array([int(weights.sum())], dtype=np.int64)
    live = cells.shape[0]
    flags, leaf_counts, d = [], [], 0
    while first.shape[0]:
        k = first.shape[0]
        split = np.zeros(k, dtype=bool)
        can = np.flatnonzero((last > first).any(axis=1))
        if can.size:
            biased = np.maximum(theta - delta, count[can] - d * delta)
            split[can] = biased + discrete_laplace(lam, size=can.size, rng=rng) > theta
        flags.append(split)
        leaf_counts.append(count[~split])
        si = np.flatnonzero(split)
        cf, cl, owner, corner, mid = _children(first, last, si, starts, ends)
        child = np.full((si.size, 4), -1, dtype=np.int64)
        child[owner, corner] = np.arange(owner.size)
        slot = np.full(k, -1, dtype=np.int64)
        slot[si] = np.arange(si.size)
        count = np.zeros(cf.shape[0], dtype=np.int64)
        live = kernels.quad_level(cells, weights, node, live, slot,
                                  np.ascontiguousarray(mid), child, count)
        first, last, d = cf, cl, d + 1
    return np.concatenate(flags), np.concatenate(leaf_counts)


class Shape:
    """The tree's nodes rebuilt from its split flags (build and load share it).

    Parameters
    ----------
    flags : numpy.ndarray of bool
        One per node, breadth-first.
    sizes : (int, int)
    starts, ends : lists of numpy.ndarray of uint64

    Attributes
    ----------
    first, last : numpy.ndarray of int64, shape (N, 2)
        Each node's segment-index box (inclusive).
    child : numpy.ndarray of int64, shape (N,)
        The index of its first child (-1 for a leaf); children are consecutive.
    nchild : numpy.ndarray of int64, shape (N,)
    parent, depth : numpy.ndarray of int64, shape (N,)
    leaf : numpy.ndarray of int64, shape (N,)
        Its index among the leaves (breadth-first), -1 for a split node.

    Raises
    ------
    FormatError
        Flags that split a node of one cell, or that end before (or after)
        the tree does.
    """

    __slots__ = ("first", "last", "child", "nchild", "parent", "depth", "leaf")

    def __init__(self, flags, sizes, starts, ends):
        flags = np.asarray(flags, dtype=bool)
        n = flags.size
        first = np.zeros((1, 2), dtype=np.int64)
        last = np.array([[sizes[0] - 1, sizes[1] - 1]], dtype=np.int64)
        parts = {k: [] for k in ("first", "last", "parent", "depth", "nchild")}
        parent = np.full(1, -1, dtype=np.int64)
        done, d = 0, 0
        while first.shape[0]:
            k = first.shape[0]
            if done + k > n:
                raise FormatError("quadtree record: the split flags end before the tree")
            split = flags[done:done + k]
            if (split & ~(last > first).any(axis=1)).any():
                raise FormatError("quadtree record: a node of one cell splits")
            si = np.flatnonzero(split)
            cf, cl, owner, _, _ = _children(first, last, si, starts, ends)
            nchild = np.zeros(k, dtype=np.int64)
            nchild[si] = np.bincount(owner, minlength=si.size)
            for key, v in (("first", first), ("last", last), ("parent", parent),
                           ("depth", np.full(k, d, dtype=np.int64)), ("nchild", nchild)):
                parts[key].append(v)
            parent = done + si[owner]
            done += k
            first, last, d = cf, cl, d + 1
        if done != n:
            raise FormatError("quadtree record: split flags beyond the tree")
        for key, v in parts.items():
            setattr(self, key, np.concatenate(v))
        # breadth-first, the nodes after the root are the children of the nodes in order
        starts_of = np.cumsum(self.nchild) - self.nchild + 1      # the root is node 0
        self.child = np.where(self.nchild > 0, starts_of, -1).astype(np.int64)
        self.leaf = np.full(n, -1, dtype=np.int64)
        self.leaf[~flags] = np.arange(int((~flags).sum()))

    def subtree_sums(self, leaf_values):
        """Per node, the sum of ``leaf_values`` (float64) over its leaves."""
        out = np.zeros(self.leaf.size)
        is_leaf = self.leaf >= 0
        out[is_leaf] = leaf_values[self.leaf[is_leaf]]
        for d in range(int(self.depth.max()), 0, -1):
            at = np.flatnonzero(self.depth == d)
            np.add.at(out, self.parent[at], out[at])
        return out


class QuadTree:
    """The released quadtree over the cells of :class:`~.axes.Axes` (two axes).

    Parameters
    ----------
    axes : Axes
    flags : numpy.ndarray of bool
        The released split decisions, breadth-first.
    counts : numpy.ndarray of int64
        The leaves' noisy counts, breadth-first.
    epsilon_split, epsilon_leaf : Fraction
    split_share : Fraction
    split_levels : int

    Notes
    -----
    The module doc gives the release, its privacy and the answers.
    """

    __slots__ = ("axes", "flags", "counts", "epsilon_split", "epsilon_leaf", "split_share",
                 "split_levels", "shape", "scales", "_starts", "_ends", "_tree")

    structure = "quadtree"
    #: A box is snapped to whole segments (the seal model), then a cut leaf counts
    #: by its share of segment cells.
    estimator = "index-uniform"
    #: One point lies in one leaf (and on one root path of split tests).
    sensitivity = (1, 1)

    def __init__(self, axes, flags, counts, epsilon_split, epsilon_leaf, split_share,
                 split_levels):
        self.axes = axes
        self.flags = np.ascontiguousarray(flags, dtype=bool)
        self.counts = np.ascontiguousarray(counts, dtype=np.int64)
        self.epsilon_split, self.epsilon_leaf = epsilon_split, epsilon_leaf
        self.split_share, self.split_levels = split_share, split_levels
        self.scales = (privtree_parameters(epsilon_split, 4)[0], Fraction(1) / epsilon_leaf)
        self._starts, self._ends = _ends_pair(axes)
        self.shape = Shape(self.flags, axes.sizes, self._starts, self._ends)
        if self.counts.shape != (int((~self.flags).sum()),):
            raise FormatError("quadtree record: leaf counts do not match the split flags")
        sh = self.shape
        sums = sh.subtree_sums(self.counts.astype(np.float64))
        ones = sh.subtree_sums(np.ones(self.counts.size))
        cfirst = np.column_stack([self._starts[a][sh.first[:, a]] for a in range(2)])
        clast = np.column_stack([self._ends[a][sh.last[:, a]] for a in range(2)])
        self._tree = {"cfirst": np.ascontiguousarray(cfirst, dtype=np.uint64),
                      "clast": np.ascontiguousarray(clast, dtype=np.uint64),
                      "first": np.ascontiguousarray(sh.first, dtype=np.int64),
                      "last": np.ascontiguousarray(sh.last, dtype=np.int64),
                      "child": np.ascontiguousarray(sh.child, dtype=np.int64),
                      "nchild": np.ascontiguousarray(sh.nchild, dtype=np.int64),
                      "leaf": np.ascontiguousarray(sh.leaf, dtype=np.int64),
                      "sums": np.ascontiguousarray(np.column_stack([sums, ones])),
                      "counts": self.counts, "stack": 3 * int(sh.depth.max()) + 4}

    # ------------------------------------------------------------------ build
    @staticmethod
    def split_budget(eps_tree, options, dims):
        """``(epsilon_split, epsilon_leaf)``, each rounded down, checked before any draw."""
        if dims != 2:
            raise ParameterError(f"structure='quadtree' takes 2 axes, got {dims}")
        return split_epsilon(eps_tree, options.split_share,
                             ("epsilon_tree * split_share", "epsilon_tree * (1 - split_share)"),
                             round_first=privtree_epsilon)

    @staticmethod
    def check_noise(eps_tree, split):
        """Refuse, before any charge, budgets whose scales the samplers cannot take."""
        privtree_parameters(split[0], 4)
        exact_scale(1 / split[1], "1 / (epsilon_tree * (1 - split_share))")

    @classmethod
    def build(cls, axes, cells, n_hat, eps_tree, split, options, rng):
        """Release the splits, then the leaf counts (in that order).

        ``cells`` yields ``(segments, weights)`` chunks (the partition cell of
        every row); their distinct cells are merged as they come (sorted in
        C), so the build holds O(occupied cells + chunk): 16 bytes a cell (24
        with its node) while the tree grows.  ``n_hat`` is unused.
        """
        eps_split, eps_leaf = split
        m0, m1 = axes.sizes
        parts, pending = [], 0
        for seg, weights in cells:
            seg = np.asarray(seg, dtype=np.uint64).reshape(-1, 2)
            parts.append(aggregate(seg[:, 0] * np.uint64(m1) + seg[:, 1],
                                   None if weights is None
                                   else np.asarray(weights, dtype=np.int64)))
            pending += parts[-1][0].size if len(parts) > 1 else 0
            # merged once the parts after the first outgrow it: O(cells + chunk) held
            if len(parts) > 64 or pending > max(parts[0][0].size, 1 << 20):
                parts, pending = [merge(parts)], 0
        uk, w = merge(parts)
        pts = np.column_stack([uk // np.uint64(m1), uk % np.uint64(m1)])
        lam, delta = privtree_parameters(eps_split, 4)
        theta = -int(options.split_levels) * delta
        starts, ends = _ends_pair(axes)
        flags, true = grow(pts, w, (m0, m1), starts, ends, lam, delta, theta, rng)
        noisy = true + discrete_laplace(Fraction(1) / eps_leaf, size=true.size, rng=rng)
        return cls(axes, flags, noisy, eps_split, eps_leaf, options.split_share,
                   int(options.split_levels))

    # ---------------------------------------------------------------- reading
    @property
    def epsilon_levels(self):
        """``(epsilon_split, epsilon_leaf)``."""
        return self.epsilon_split, self.epsilon_leaf

    @property
    def merge(self):
        """Partition segments per cell side: 1 (the tree splits single segments)."""
        return (1, 1)

    @property
    def segments(self):
        """Partition segments per axis."""
        return tuple(self.axes.sizes)

    @property
    def num_nodes(self):
        """Nodes of the tree, split and leaves."""
        return int(self.flags.size)

    def leaves(self):
        """The released leaves as a structured array: ``count`` (noisy), ``start`` and
        ``end`` (segment indices, inclusive, per axis), ``first`` and ``last`` (their
        domain offsets from each axis's ``lo``) and ``depth``."""
        at = np.flatnonzero(self.shape.leaf >= 0)
        out = np.empty(at.size, dtype=[("count", np.int64), ("start", np.int64, (2,)),
                                       ("end", np.int64, (2,)), ("first", np.uint64, (2,)),
                                       ("last", np.uint64, (2,)), ("depth", np.int64)])
        out["count"] = self.counts
        out["start"], out["end"] = self.shape.first[at], self.shape.last[at]
        out["first"], out["last"] = self._tree["cfirst"][at], self._tree["clast"][at]
        out["depth"] = self.shape.depth[at]
        return out

    # ---------------------------------------------------------------- answers
    def _index_box(self, lo, hi):
        """The boxes snapped to whole segments: ``(i, j)`` (q, 2) int64 (module doc)."""
        i = np.empty(lo.shape, dtype=np.int64)
        j = np.empty(lo.shape, dtype=np.int64)
        for a in range(2):
            en = self._ends[a]
            i[:, a] = np.searchsorted(en, lo[:, a], side="left")
            j[:, a] = np.searchsorted(en, hi[:, a], side="right") - 1
        return i, j

    def parts(self, lo, hi):
        """Per box ((q, 2) uint64 offsets, checked): ``(answer, sumsq, maxabs, cut)``.

        ``sumsq`` and ``maxabs`` ((q, 1)) are the sum of squares and the largest of
        the answer's weights on the leaf counts, ``cut`` (q, 2) the noisy counts
        summed over the leaves the box cuts in domain coordinates and their
        number.  One C call (:func:`.kernels.quad_answer`): depth first per box,
        a node inside the box adds its subtree's sum, a node outside is
        skipped, only the nodes the box's boundary crosses are opened.
        """
        lo = np.ascontiguousarray(lo, dtype=np.uint64)
        hi = np.ascontiguousarray(hi, dtype=np.uint64)
        i, j = self._index_box(lo, hi)
        answer, sumsq, maxabs, cut = kernels.quad_answer(self._tree, lo, hi, i, j)
        return answer, sumsq[:, None], maxabs[:, None], cut

    def answer(self, lo, hi):
        """Noisy counts of the boxes ``[lo, hi]`` ((q, 2) uint64 offsets, checked)."""
        return self.parts(lo, hi)[0]

    def noise(self, lo, hi):
        """The answers' noise weights: ``(sumsq, maxabs, scales)`` with one group, the
        leaf counts (the split tests add no noise to an answer)."""
        _, sumsq, maxabs, _ = self.parts(lo, hi)
        return sumsq, maxabs, self.scales[1:]

    def _bias_of_cut(self, cut, delta):
        """A bound on the true count of the cut leaves: their noisy count plus a
        lower-tail bound of the sum of their noises (probability ``delta``)."""
        z = laplace_weighted_tail(cut[:, 1:], np.ones((cut.shape[0], 1)), self.scales[1:],
                                  math.log(1.0 / delta))
        return np.maximum(cut[:, 0] + z, 0.0)

    def query_bias(self, lo, hi, delta):
        """Per box, a bound on what the snapping and the uniform share can miscount
        (module doc): the cut leaves' true count, bounded with probability ``1 - delta``."""
        return self._bias_of_cut(self.parts(lo, hi)[3], delta)

    def error_bars(self, lo, hi, confidence, max_multiplicity, parts=None):
        """``(std, noise, bias)`` per box; ``1 - confidence`` split in halves between
        the noise's two-sided tail and the cut leaves' lower tail.  Released counts
        only: ``max_multiplicity`` is accepted and unused.  ``parts``: the boxes'
        ``(sumsq, maxabs, cut)`` of :meth:`parts` when already computed."""
        delta = 1.0 - confidence
        sumsq, maxabs, cut = self.parts(lo, hi)[1:] if parts is None else parts
        noise = laplace_weighted_tail(sumsq, maxabs, self.scales[1:], math.log(4.0 / delta))
        return noise_std(sumsq, self.scales[1:]), noise, self._bias_of_cut(cut, delta / 2)

    def error_terms(self, confidence, max_multiplicity):
        """``(noise, bias, 0.0)``: their sum bounds every answer's error at once.

        * noise: every answer is ``sum_l w_l z_l`` over the leaves with ``w_l``
          in ``[0, 1]``, so its tail is at most that of ``L`` terms of weight
          one (``laplace_sum_tail``), union over the boxes of segment indices
          (delta / 2);
        * bias: a leaf a box cuts contains, on some axis, the segment of one of
          the box's two edges there; per axis the leaves whose index range
          holds a given segment (a band) have a true count at most their noisy
          count plus a lower-tail bound (union over all bands, delta / 2); a
          box has two edges per axis.
        """
        delta = 1.0 - confidence
        b = float(self.scales[1])
        log_combos = sum(math.log(m * (m + 1) / 2 + 1) for m in self.axes.sizes)
        noise = laplace_sum_tail(float(self.counts.size), b, log_combos + math.log(4.0 / delta))
        at = np.flatnonzero(self.shape.leaf >= 0)
        bias = band_bias(self.shape.first[at], self.shape.last[at] + 1, self.counts,
                         self.axes.sizes, b, delta)
        return noise, bias, 0.0

    # ----------------------------------------------------------------- record
    def record(self):
        """``(meta, arrays)``: this structure's part of the file record."""
        meta = {"structure": "quadtree",
                "epsilon_split": list(self.epsilon_split.as_integer_ratio()),
                "epsilon_leaf": list(self.epsilon_leaf.as_integer_ratio()),
                "split_share": list(Fraction(self.split_share).as_integer_ratio()),
                "split_levels": int(self.split_levels)}
        return meta, {"splits": self.flags.astype(np.uint8), "leaves": self.counts}

    @classmethod
    def from_record(cls, meta, arrays, axes):
        """The quadtree of a file record, checked against the partitions.

        Raises
        ------
        FormatError
            Not two axes, a non-positive epsilon, or split flags and leaf
            counts that do not make a tree over the partitions' cells.
        """
        if axes.dims != 2:
            raise FormatError("rectangle synopsis record: a quadtree needs 2 axes")
        try:
            eps1, eps2 = Fraction(*meta["epsilon_split"]), Fraction(*meta["epsilon_leaf"])
            share = Fraction(*meta["split_share"])
            levels = meta["split_levels"]
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            raise FormatError("rectangle synopsis record: invalid quadtree fields") from None
        if eps1 <= 0 or eps2 <= 0 or not 0 < share < 1 or type(levels) is not int \
                or not 0 <= levels <= MAX_SPLIT_LEVELS:
            raise FormatError("rectangle synopsis record: invalid quadtree epsilon or options")
        flags = np.asarray(arrays["splits"])
        if flags.ndim != 1 or flags.dtype != np.uint8 or flags.size > MAX_NODES \
                or (flags > 1).any():
            raise FormatError("rectangle synopsis record: invalid quadtree split flags")
        counts = np.asarray(arrays["leaves"])
        if counts.dtype != np.int64 or counts.ndim != 1:
            raise FormatError("rectangle synopsis record: invalid quadtree leaf counts")
        try:
            privtree_parameters(eps1, 4)
        except ParameterError:
            raise FormatError("rectangle synopsis record: invalid quadtree epsilon") from None
        return cls(axes, flags.astype(bool), counts, eps1, eps2, share, levels)
