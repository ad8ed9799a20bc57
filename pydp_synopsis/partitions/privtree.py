"""PrivTree: a private partition that refines where the data are, at any depth.

The interval synopsis' default partition (``partition="privtree"``).  The
domain ``[lo, hi]`` is the root of a tree of fanout ``beta`` in ``{2, 4}``
(``privtree_fanout``, default 2).  Halving a node ``[a, b]`` of width ``>= 2``
gives ``[a, m]`` and ``[m + 1, b]``, ``m = a + (b - a) // 2``; with ``beta = 2``
a node that splits is halved once, with ``beta = 4`` twice (its children are
the nodes two halvings below it; a half of width 1 is not halved again, so a
node of width 2 or 3 has 2 or 3 children).  Every leaf is therefore a node of
the one binary halving tree, a valid segment end, whatever ``beta``.
Top-down from the root, a node of depth ``d`` (root 0, one per level of the
``beta``-ary tree) holding ``c`` items is split iff

    ``max(theta - delta, c - d * delta) + Z > theta``,   ``Z ~ DLap(lambda)``,

with ``theta = 0``, ``lambda = (2 beta - 1) / ((beta - 1) epsilon)`` (``3 /
epsilon`` for ``beta = 2``, ``7 / (3 epsilon)`` for ``beta = 4``) and an
integer ``delta >= lambda ln beta`` (Zhang, Xiao, Xie, Algorithm 2 and
Corollary 1).  The leaves, in domain order, are the released segments.
A node of width 1 is a leaf without a draw.  The C kernel
(``csrc/privtree.c``) visits only the tested nodes: ``O(m log n)`` for
``m`` leaves, whatever the domain size (up to ``2**64``).

Why it is more accurate than Fig. 1 of DNRR for range counts: a segment's
items are spread uniformly over its span by the uniform estimator, and
PrivTree's leaves are small where the data are dense and stop as soon as a
region is empty -- a heavy value becomes a leaf of width 1 (no bias at all),
an empty stretch of ``10^18`` values costs a few leaves holding nothing.

Privacy (the discrete form of [ZXX16]_ Theorem 3 / Corollary 1, any
``beta``; write ``q = 1 / beta``).  Let a neighbour add one item ``x``; only
the tested nodes on ``x``'s root path in the ``beta``-ary tree change count,
by one (the intermediate halves of a 4-ary split are never tested).  Write ``b(v) = c(v) - d(v) delta`` (unfloored).  Along the
path ``b`` grows by at least ``delta`` per level upward (a parent holds at
least its child's items and is one level higher).  The discrete Laplace pmf
is ``(1 - a)/(1 + a) a^|z|``, ``a = e^{-1/lambda}``, so for integer ``k``:
``P(Z >= k) / P(Z >= k + 1) <= 1/a`` always, ``<= 1 + (1/lambda) a^{-k}``
for ``k <= 0`` (using ``P(Z >= k + 1) >= 1/2`` and ``2 (1 - a)/(1 + a) <=
1/lambda``), and ``P(Z <= k) / P(Z <= k - 1) <= 1/a``.  Hence, for a node
whose biased count moves up by one:

* split decisions: a loss of at most ``1/lambda``, and at most
  ``(1/lambda) e^{-(b - theta)/lambda}`` when ``b >= theta``;
* the leaf's "no split": more likely without ``x``, by at most ``1/lambda``
  the other way (and a loss of 0 in this direction);
* nodes whose floored count does not move (``b + 1 <= theta - delta``):
  no loss.

On the path at most one moved node has ``b`` in ``[theta - delta,
theta)``, and those with ``b >= theta`` have ``b >= theta + j delta`` for
distinct ``j >= 0``; so the loss is at most ``(1/lambda) (1 + sum_j
e^{-j delta / lambda}) <= (1/lambda) (1 + sum_j q^j) = (1/lambda) (1 + 1 /
(1 - q)) = (2 beta - 1) / ((beta - 1) lambda) = epsilon`` because
``e^{-delta/lambda} <= q = 1/beta`` (``delta >= lambda ln beta``).  With
``beta = 2`` the sum is ``1 + 2 = 3``, with ``beta = 4`` it is ``1 + 4/3 =
7/3``: the 4-ary tree needs less noise (``lambda = 7/(3 epsilon)``) and a
larger bias per level (``delta = lambda ln 4``), and it tests about half as
many levels.  The other direction (removing ``x``) is bounded by the same
sum over the same nodes.  Everything is integer: ``delta`` is ``ceil(lambda
ln beta (1 + 1e-12))`` (the factor covers the rounding of the double
product, so ``delta >= lambda ln beta`` exactly), ``lambda`` is an exact
rational, the noise is exact (:mod:`pydp_synopsis.noise`), and a larger
``delta`` only lowers the loss.  The fanout is public (an argument, saved
with the partition).

Weight bound (for error bars).  A leaf of width ``>= 2`` at depth ``d``
was tested and not split, so its count is ``c <= theta + d delta - Z``.
Union-bounding ``Z > -k_d`` over every node the tree could test at depth
``d`` (at most ``N_d = min(shards beta^d, D)``) and over the ``L`` depths at
which nodes of width ``>= 2`` exist: with ``k_d`` the least integer with
``N_d a^k / (1 + a) <= beta / L``, every leaf of width ``>= 2`` holds at
most ``W_d = theta + d delta + k_d - 1`` items, with probability ``>= 1 -
beta``, whatever the duplicates.  A leaf of width 1 is never cut by an
interval: its bias is 0.

Public: :class:`TreePartition` (also exported by :mod:`pydp_synopsis`);
internal: :func:`privtree_of_sorted`, :func:`privtree_of_chunks`.

References
----------
.. [ZXX16] J. Zhang, X. Xiao, X. Xie, "PrivTree: A Differentially Private
   Algorithm for Hierarchical Decompositions", SIGMOD 2016: Algorithm 2,
   Theorem 3, Corollary 1.
.. [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020 (exact discrete Laplace sampling).
"""
import math
import os
import shutil
from fractions import Fraction

import numpy as np

from .. import persist
from .._core import LIMITS, check, ffi, lib
from ..errors import DomainError, FormatError, ParameterError
from ..spill import SpillError, create, private_directory, write_array
from .dnrr import Partition, checked_ends
from .sharded import check_shards, shard_domains

__all__ = ["TREE_PARTITION_KIND", "TreePartition", "PRIVTREE", "PRIVTREE_FANOUTS",
           "check_privtree_fanout", "privtree_epsilon", "privtree_parameters", "root_depth",
           "privtree_of_sorted",
           "privtree_of_chunks", "privtree_kernel", "privtree_kernel_files"]

#: The persist record of a PrivTree partition (``ps.save(partition)``) and its version.
TREE_PARTITION_KIND = "privtree-partition"
TREE_PARTITION_VERSION = 1         # fanout 2 (every file before the 4-ary tree)
TREE_PARTITION_VERSION_FANOUT = 2  # records its fanout (written for fanout 4 only)
#: The fanouts ``privtree_fanout=`` takes.
PRIVTREE_FANOUTS = (2, 4)

#: The name of the method, stored with a synopsis and accepted by ``partition=``.
PRIVTREE = "privtree"
_THETA = 0
_MAX_SCALE = 1 << 48               # lambda: the exact sampler's admitted scales
_MAX_DELTA = 1 << 53
_MAX_LEAVES = 1 << 32
#: Above this many distinct values a streamed build spills them to disk.
_SPILL_ENTRIES = 1 << 22
#: Entries of the spilled keys and totals the walk holds at once (16 bytes each).
_WINDOW_ENTRIES = 1 << 20
_MAX_WINDOW_ENTRIES = 1 << 27      # PDS_PRIVTREE_MAX_WINDOW
_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NO_KEYS = np.empty(0, dtype=np.uint64)
_NO_COUNTS = np.empty(0, dtype=np.int64)


def check_privtree_fanout(fanout):
    """``fanout`` checked: 2 or 4 (an int), else one line naming ``privtree_fanout``.

    Examples
    --------
    >>> check_privtree_fanout(4)
    4
    """
    if isinstance(fanout, bool) or not isinstance(fanout, (int, np.integer)) \
            or int(fanout) not in PRIVTREE_FANOUTS:
        raise ParameterError(f"privtree_fanout must be 2 or 4, got {fanout!r}")
    return int(fanout)


def _lambda_fits(epsilon):
    """Whether ``lambda`` of either fanout (``3 / epsilon``, ``7 / (3 epsilon)``) is a
    rational the samplers take (numerator and denominator below ``2**62``)."""
    limit = LIMITS.param_limit
    return all((lam.numerator < limit and lam.denominator < limit)
               for lam in (Fraction(3) / epsilon, Fraction(7, 3) / epsilon))


def _floor_fraction(x, max_den):
    """The largest fraction ``<= x`` with a denominator ``<= max_den``: of the two
    neighbours of ``x`` in the Farey sequence of order ``max_den`` (the bounds
    :meth:`fractions.Fraction.limit_denominator` compares), the one below."""
    if x.denominator <= max_den:
        return x
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = x.numerator, x.denominator
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_den:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_den - q0) // q1
    below = Fraction(p0 + k * p1, q0 + k * q1)
    return below if below <= x else Fraction(p1, q1)


def privtree_epsilon(epsilon, whole=None):
    """``epsilon`` (a checked positive Fraction) unchanged when PrivTree's scale
    ``lambda`` of either fanout is an exact rational the samplers take, else
    rounded **down** to a nearby rational whose ``lambda`` is.

    A budget split (``epsilon * share`` of a float epsilon) can leave a
    denominator near ``2**62``, whose ``lambda = 7 / (3 epsilon)`` has a numerator
    beyond the samplers' range although epsilon is perfectly usable.  Rounding
    down (to denominators below ``2**62 / 7``, and below ``2**62 / (3 epsilon)``
    for a large epsilon: a change below ``2**-58 max(1, epsilon)``) spends
    less than the share, never more, and an epsilon that fits is returned as it
    is, so no release that was possible before changes.  With ``whole``, the
    budget ``epsilon`` was split from, the denominator is a multiple of
    ``whole``'s where that is small enough, so ``whole - epsilon`` stays exact
    and the parts still add up to ``whole``.  An epsilon too small to round
    stays as it is: :func:`privtree_parameters` refuses it.

    Examples
    --------
    >>> privtree_epsilon(Fraction(3, 10))
    Fraction(3, 10)
    >>> whole = Fraction(0.3) * Fraction(3, 4)                  # a float's share
    >>> e = whole * Fraction(5, 16)                             # and a share of that
    >>> r = privtree_epsilon(e, whole)
    >>> r < e and float(e - r) < 2.0**-58 and (whole - r).denominator < 2**62
    True
    """
    if _lambda_fits(epsilon):
        return epsilon
    limit = LIMITS.param_limit
    max_den = min((limit - 1) // 7, math.floor(Fraction(limit - 1, 3) / epsilon) - 1)
    if max_den < 1:
        return epsilon
    if whole is not None and whole.denominator <= max_den:
        den = whole.denominator * (max_den // whole.denominator)
        cand = Fraction(math.floor(epsilon * den), den)
        if cand > 0 and _lambda_fits(cand):
            return cand
    cand = _floor_fraction(epsilon, max_den)
    return cand if cand > 0 and _lambda_fits(cand) else epsilon


def privtree_parameters(epsilon, fanout=2):
    """``(lambda, delta)`` for ``epsilon`` (a checked Fraction) and the tree's fanout
    ``beta`` in {2, 4}: ``lambda = (2 beta - 1) / ((beta - 1) epsilon)`` exactly
    (``3 / epsilon``, ``7 / (3 epsilon)``), ``delta`` the least integer that is surely
    ``>= lambda ln beta`` ([ZXX16]_ Corollary 1).

    Raises
    ------
    ParameterError
        ``epsilon`` so small that ``lambda > 2**48`` or ``delta > 2**53``.
    """
    fanout = check_privtree_fanout(fanout)
    lam = Fraction(2 * fanout - 1, fanout - 1) / epsilon
    if lam > _MAX_SCALE or lam.numerator >= LIMITS.param_limit \
            or lam.denominator >= LIMITS.param_limit:
        raise ParameterError(f"epsilon of the PrivTree partition must be >= 3 / 2**48 with a "
                             f"numerator below 2**62 / 3, got {epsilon}")
    delta = math.ceil(float(lam) * math.log(float(fanout)) * (1 + 1e-12))
    if delta > _MAX_DELTA:
        raise ParameterError(f"epsilon of the PrivTree partition is too small, got {epsilon}")
    return lam, delta


def _shard_bounds(lo, hi, shards):
    """The public shard domains as offsets ``[(first, last), ...]``; ``shards`` checked
    in ``[1, min(MAX_SHARDS, hi - lo + 1)]`` first (an empty shard has no tree)."""
    check_shards(shards, [(lo, hi)])
    return [(a - lo, b - lo) for a, b in shard_domains((lo, hi), shards)]


def root_depth(size, width, fanout=2):
    """The depth a shard of ``width`` values starts at in the tree of a domain of
    ``size`` values: the least ``d`` with ``ceil(size / 2^d) <= width`` (0 for the
    whole domain).  Public (sizes only); with equal power-of-two shards the shard
    roots are exactly the whole tree's nodes of that depth, so a sharded tree is
    the unsharded one with its top levels split.

    At most ``size.bit_length() + 1`` steps: ``d = size.bit_length()`` always
    gives ``ceil(size / 2^d) = 1 <= width``.

    Raises
    ------
    ParameterError
        ``width`` outside ``[1, size]`` (an empty shard: more shards than values).

    Examples
    --------
    With ``fanout=4`` the depth counts 4-ary levels: half the binary depth,
    rounded up (a public number: any public root depth keeps the proof).

    >>> root_depth(16, 4), root_depth(10, 10), root_depth(2**64, 1), root_depth(16, 8, 4)
    (2, 0, 64, 1)
    """
    if not 1 <= width <= size:
        raise ParameterError(f"shard width must be in [1, {size}] (at most as many shards as "
                             f"values), got {width}")
    d = next(d for d in range(size.bit_length() + 1) if -(-size // (1 << d)) <= width)
    return d if fanout == 2 else (d + 1) // 2


class TreePartition(Partition):
    """A PrivTree partition of ``[lo, hi]``: the leaves of a binary halving tree.

    Produced by :meth:`IntervalSynopsis.build
    <pydp_synopsis.IntervalSynopsis.build>` with ``partition="privtree"``
    (the default); the constructor validates and stores one (e.g. read back
    from disk): the ends must be the leaves, in order, of the halving tree of
    each shard (:mod:`pydp_synopsis.partitions.sharded`), else DomainError.

    Parameters
    ----------
    end_offsets : array_like of uint64
        Right ends of the leaves as offsets from ``lo``.
    domain : pair of int
        Inclusive ``(lo, hi)``.
    epsilon : Fraction
        The privacy parameter the partition was built with.
    beta : float
        The failure probability of its weight bound.
    shards : int
        The number of public shards it was built in (1: one tree).
    fanout : {2, 4}
        The tree's fanout ``beta`` (``privtree_fanout``; 4: two halvings per
        level, so the leaves are still nodes of the binary halving tree).

    Attributes
    ----------
    depths : numpy.ndarray of uint8
        Each leaf's depth in its shard's tree (the root is 0), in levels of
        the ``fanout``-ary tree.
    scale : Fraction
        The split noise's scale ``lambda = (2 beta - 1) / ((beta - 1) epsilon)``.
    bias : int
        The per-depth bias ``delta >= lambda ln beta``.

    References
    ----------
    .. [ZXX16] Zhang, Xiao, Xie, SIGMOD 2016, Algorithm 2, Corollary 1.
    """

    def __init__(self, end_offsets, *, domain, epsilon, beta, shards=1, fanout=2):
        if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
            raise ParameterError(f"shards must be an int >= 1, got {shards!r}")
        fanout = check_privtree_fanout(fanout)
        offs, lo, hi, eps, beta = checked_ends(end_offsets, domain, epsilon, beta)
        self._store_tree(offs, lo, hi, eps, beta, shards, fanout)

    @classmethod
    def _checked(cls, end_offsets, lo, hi, epsilon, beta, shards=1, fanout=2):
        """A partition the package has just drawn (depths recomputed, never trusted)."""
        self = cls.__new__(cls)
        self._store_tree(end_offsets, lo, hi, epsilon, beta, shards, fanout)
        return self

    def _store_tree(self, end_offsets, lo, hi, epsilon, beta, shards, fanout=2):
        self.scale, self.bias = privtree_parameters(epsilon, fanout)
        self._fanout = fanout
        self._store(end_offsets, lo, hi, epsilon, beta, PRIVTREE)
        self._shards = shards
        self._leaf_bounds = None
        ends = self._offsets
        depths = np.empty(ends.size, dtype=np.uint8)
        start = 0
        self._roots = []
        for first, last in _shard_bounds(lo, hi, shards):
            d0 = root_depth(hi - lo + 1, last - first + 1, fanout)
            self._roots.append((d0, last - first + 1))
            stop = int(np.searchsorted(ends, np.uint64(last), side="right"))
            if stop <= start or int(ends[stop - 1]) != last:
                raise DomainError("end_offsets are not the leaves of PrivTree's halving tree")
            piece = np.ascontiguousarray(ends[start:stop])
            out = depths[start:stop]
            st = lib.pds_privtree_depths_k(ffi.from_buffer("uint64_t[]", piece), piece.size,
                                           first, last, d0, fanout,
                                           ffi.from_buffer("uint8_t[]", out))
            if st == lib.PDS_ESTATE:
                raise DomainError("end_offsets are not the leaves of PrivTree's halving tree")
            check(st, "privtree depths")
            start = stop
        depths.flags.writeable = False
        self.depths = depths

    @property
    def shards(self):
        """The number of public shards the tree was grown in."""
        return self._shards

    @property
    def fanout(self):
        """The tree's fanout ``beta`` (2 or 4)."""
        return self._fanout

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`pydp_synopsis.save` (released numbers).
        Fanout 2 writes version 1 as before; fanout 4 writes version 2 with its fanout
        (an older reader refuses it rather than read it as a binary tree)."""
        meta = {"version": TREE_PARTITION_VERSION, "domain": [int(self._lo), int(self._hi)],
                "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
                "beta": self._beta, "shards": self._shards}
        if self._fanout != 2:
            meta["version"] = TREE_PARTITION_VERSION_FANOUT
            meta["fanout"] = self._fanout
        return TREE_PARTITION_KIND, meta, {"end_offsets": self._offsets}, None

    @property
    def threshold_factor(self):
        """``"privtree"``: the partition method (DNRR partitions give their factor)."""
        return PRIVTREE

    @property
    def threshold(self):
        """The per-depth bias ``delta`` (PrivTree has no threshold; theta = 0)."""
        return self.bias

    def depth_weight_bounds(self):
        """``W_d`` for ``d = 0 .. 128``: the most items a tested leaf at depth ``d`` holds
        (module doc), all at once with probability ``>= 1 - beta``.  O(1)."""
        lam = float(self.scale)
        a = math.exp(-1.0 / lam)
        # depths at which some shard has nodes of width >= 2 (a 4-ary level: two halvings)
        per = 1 if self._fanout == 2 else 2
        levels = len({d0 + j for d0, w in self._roots
                      for j in range(-(-(w - 1).bit_length() // per))}) or 1
        d = np.arange(129)
        # nodes a depth can hold: sum over shards of beta^(d - d0), at most D
        nodes = [min(self._size, sum(1 << (per * (int(x) - d0)) for d0, _ in self._roots
                                     if x >= d0))
                 for x in d]
        log_nodes = np.log(np.maximum(np.array(nodes, dtype=np.float64), 1.0))
        x = (log_nodes - math.log1p(a) + math.log(levels) - math.log(self._beta)) * lam
        k = np.maximum(np.ceil(x * (1 + 1e-12)), 0.0)
        return _THETA + d * float(self.bias) + np.maximum(k - 1, 0.0)

    def leaf_weight_bounds(self):
        """Per segment, the most items it can hold (module doc): ``W_d`` for a leaf of
        width ``>= 2``, 0 for a leaf of width 1 (an interval never cuts it).

        All hold at once with probability ``>= 1 - beta``.  O(m) on the first
        call; the partition is immutable, so the array is kept (read-only).

        Returns
        -------
        numpy.ndarray of float64
        """
        if self._leaf_bounds is None:
            starts = np.concatenate(([np.uint64(0)], self._offsets[:-1] + np.uint64(1)))
            w = np.where(self._offsets > starts, self.depth_weight_bounds()[self.depths], 0.0)
            w.flags.writeable = False
            self._leaf_bounds = w
        return self._leaf_bounds

    def interior_weight_bound(self):
        """The largest :meth:`leaf_weight_bounds`: every cut segment holds at most this
        many items, with probability ``>= 1 - beta``.  O(m) (the bounds are kept)."""
        return float(self.leaf_weight_bounds().max())

    def max_weight_bound(self):
        """Same as :meth:`interior_weight_bound` (PrivTree's bound covers duplicates)."""
        return self.interior_weight_bound()

    def _key(self):
        return (self.domain, self._epsilon, self._beta, self._shards, self._fanout)


# --------------------------------------------------------------------------
# Driving the kernel.

def _grow(keys, cum, first, last, epsilon, rng, depth0=0, release=False, *, fanout=2):
    """The leaves' end offsets of one tree over ``[first, last]`` and their true
    counts (not private): :func:`privtree_kernel` at the release's parameters of
    ``epsilon`` and ``fanout`` (:func:`privtree_parameters`, theta 0)."""
    lam, delta = privtree_parameters(epsilon, fanout)
    return privtree_kernel(keys, cum, first, last, rng, scale=lam, bias=delta, depth0=depth0,
                           release=release, fanout=fanout)


def privtree_kernel(keys, cum, first, last, rng, *, scale, bias, theta=_THETA, depth0=0,
                    release=False, fanout=2):
    """One PrivTree over ``[first, last]`` by the C kernel, at explicit parameters.

    The mechanism's parameters are given as they are, not derived from an
    epsilon: ``scale`` (lambda, a Fraction), ``bias`` (delta, an int), the
    threshold ``theta`` and the fanout (2 or 4).  The synopses never call it
    directly: their partitions go through :func:`privtree_parameters` (the
    parameters that make it ``epsilon``-DP).  The exact-law tests and
    ``research/explore_privtree.py`` call it at other parameters.

    ``keys``: sorted offsets (``cum`` None: one item each) or distinct sorted
    keys with running totals ``cum``; ``release``: the two are read-only
    memory maps whose pages the kernel drops behind its walk.  Returns the
    leaves' end offsets and their true counts (not private).
    """
    lam = Fraction(scale)
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    if cum is not None:
        cum = np.ascontiguousarray(cum, dtype=np.int64)
    out = ffi.new("pds_privtree *")
    try:
        with rng.native() as state:
            st = lib.pds_privtree_build_k(state, ffi.from_buffer("uint64_t[]", keys),
                                          ffi.NULL if cum is None
                                          else ffi.from_buffer("int64_t[]", cum),
                                          keys.size, first, last, depth0, lam.numerator,
                                          lam.denominator, bias, theta, _MAX_LEAVES,
                                          int(release), fanout, out)
        check(st, "privtree partition")
        ends = np.frombuffer(ffi.buffer(out.ends, 8 * out.m), dtype=np.uint64).copy()
        counts = np.frombuffer(ffi.buffer(out.counts, 8 * out.m), dtype=np.int64).copy()
    finally:
        lib.pds_privtree_free(out)
    return ends, counts


def _runs_of_sorted(sorted_offsets, counts):
    """Distinct sorted keys and running totals of sorted offsets with their counts."""
    s = np.asarray(sorted_offsets, dtype=np.uint64)
    c = np.asarray(counts, dtype=np.int64)
    keep = c > 0
    s, c = s[keep], c[keep]
    total = np.cumsum(c)
    if s.size == 0:
        return s, total
    last = np.append(np.flatnonzero(s[1:] != s[:-1]), s.size - 1)
    return s[last], total[last]


def privtree_of_sorted(sorted_offsets, domain, epsilon, beta, rng, counts=None,
                       leaf_counts=False, fanout=2):
    """The PrivTree partition of sorted offsets (checked inputs, no re-validation).

    The counterpart of :func:`~pydp_synopsis.partitions.dnrr.dnrr_of_sorted`:
    same arguments less the threshold factor.  Without ``counts`` the kernel
    reads the sorted column itself; with them, O(n) numpy work finds the
    distinct values.  O(m log n) kernel steps.  With ``leaf_counts`` also
    the true count of every leaf, as the kernel found them (not private).
    ``fanout``: the tree's, 2 or 4 (checked).
    """
    lo, hi = domain
    if counts is None:    # the sorted column itself: the kernel counts its entries
        keys, cum = sorted_offsets, None
    else:
        keys, cum = _runs_of_sorted(sorted_offsets, counts)
    ends, true_counts = _grow(keys, cum, 0, hi - lo, epsilon, rng, fanout=fanout)
    part = TreePartition._checked(ends, lo, hi, epsilon, beta, fanout=fanout)
    return (part, true_counts) if leaf_counts else part


def _slices(chunks, size=1 << 20):
    """The chunks in pieces of at most ``size`` entries (a shard's whole aggregate
    arrives as one chunk on a worker: its temporaries stay piece-sized)."""
    for pos, cnt in chunks:
        pos = np.asarray(pos, dtype=np.uint64)
        cnt = np.asarray(cnt, dtype=np.int64)
        for i in range(0, max(pos.size, 1), size):
            yield pos[i:i + size], cnt[i:i + size]


class _Runs:
    """Sorted ``(key, count)`` chunks gathered as distinct keys and running totals
    (one C pass per chunk, ``pds_runs_cum``): in memory, or in two spilled files
    once they pass ``_SPILL_ENTRIES`` entries (memory then O(chunk)).  The walk
    reads spilled runs through a bounded window (:func:`privtree_kernel_files`),
    never a memory map, so its resident memory does not grow with them."""

    def __init__(self, chunks, directory=None):
        self._dir = None
        self.keys = self.cum = None
        self.entries = 0
        keys, cums = [], []
        files = None
        state = ffi.new("pds_cum_state *")
        n_out = ffi.new("uint64_t *")

        def put(k, cum):
            """Keep a piece of keys and totals: in memory, or in the spill files once
            ``_SPILL_ENTRIES`` are passed (then the kept pieces move there first)."""
            nonlocal files, keys, cums
            self.entries += k.size
            if files is None and self.entries > _SPILL_ENTRIES:
                # secret (the distinct values): 0600 files in a private 0700 directory
                self._dir = private_directory("pydp-privtree-", directory)
                files = [create(os.path.join(self._dir, name)) for name in ("k", "c")]
                keys, cums = keys + [k], cums + [cum]
                for a, b in zip(keys, cums):
                    write_array(files[0], a, os.path.join(self._dir, "k"))
                    write_array(files[1], b, os.path.join(self._dir, "c"))
                keys, cums = [], []
            elif files is None:
                keys.append(k.copy() if k.base is not None and 2 * k.size < k.base.size else k)
                cums.append(cum.copy() if cum.base is not None and 2 * cum.size < cum.base.size
                            else cum)
            else:
                write_array(files[0], k, os.path.join(self._dir, "k"))
                write_array(files[1], cum, os.path.join(self._dir, "c"))

        spare = [None]          # once spilled, one pair of output buffers serves every chunk

        def step(pos, cnt, final):
            if files is not None and spare[0] is not None and spare[0][0].size > pos.size:
                out_k, out_c = spare[0]
            else:
                out_k = np.empty(pos.size + 1, dtype=np.uint64)
                out_c = np.empty(pos.size + 1, dtype=np.int64)
                if files is not None:
                    spare[0] = (out_k, out_c)
            check(lib.pds_runs_cum(ffi.from_buffer("uint64_t[]", pos),
                                   ffi.from_buffer("int64_t[]", cnt), pos.size, final, state,
                                   ffi.from_buffer("uint64_t[]", out_k),
                                   ffi.from_buffer("int64_t[]", out_c), out_k.size, n_out),
                  "gathering the sorted runs")
            m = int(n_out[0])
            if m:
                put(out_k[:m], out_c[:m])
        try:
            for pos, cnt in _slices(chunks):
                step(np.ascontiguousarray(pos), np.ascontiguousarray(cnt), 0)
            step(_NO_KEYS, _NO_COUNTS, 1)
            if files is None:
                self.keys = np.concatenate(keys) if keys else _NO_KEYS
                self.cum = np.concatenate(cums) if cums else _NO_COUNTS
            else:
                for fh in files:
                    fh.close()
        except BaseException:
            for fh in files or ():
                fh.close()
            self.close()                 # nothing half-written stays behind
            raise

    @property
    def spilled(self):
        """Whether the runs are in files."""
        return self._dir is not None

    def grow(self, first, last, epsilon, rng, depth0, fanout, window=None):
        """:func:`_grow` over the runs: the arrays, or the files through a window."""
        if not self.spilled:
            return _grow(self.keys, self.cum, first, last, epsilon, rng, depth0, fanout=fanout)
        lam, delta = privtree_parameters(epsilon, fanout)
        return privtree_kernel_files(os.path.join(self._dir, "k"), os.path.join(self._dir, "c"),
                                     self.entries, first, last, rng, scale=lam, bias=delta,
                                     depth0=depth0, fanout=fanout, window=window)

    def close(self):
        if self._dir is not None:
            self.keys = self.cum = None
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def privtree_kernel_files(keys_path, cum_path, entries, first, last, rng, *, scale, bias,
                          theta=_THETA, depth0=0, fanout=2, window=None):
    """:func:`privtree_kernel` over distinct keys and running totals in two spill files
    (native uint64 and int64, ``entries`` each), read through a window of ``window``
    entries (default ``_WINDOW_ENTRIES``; 16 bytes each, the walk's whole resident
    memory for them).  Under a seed the same leaves as the kernel over the arrays.

    Raises
    ------
    ParameterError
        ``window`` outside ``[2, 2**27]``.
    SpillError
        A file could not be opened or read (the operating system's reason only).
    """
    window = _WINDOW_ENTRIES if window is None else window
    if isinstance(window, bool) or not isinstance(window, int) \
            or not 2 <= window <= _MAX_WINDOW_ENTRIES:
        raise ParameterError(f"window must be an int in [2, {_MAX_WINDOW_ENTRIES}] entries, "
                             f"got {window!r}")
    lam = Fraction(scale)
    fds = []
    out = ffi.new("pds_privtree *")
    err = ffi.new("int32_t *")
    try:
        for path in (keys_path, cum_path):
            try:
                fds.append(os.open(path, _READ))
            except OSError as exc:
                raise SpillError(f"could not open the temporary file {path}: "
                                 f"{os.strerror(exc.errno or 5)}") from None
        with rng.native() as state:
            st = lib.pds_privtree_build_fd(state, fds[0], fds[1], entries, window, first, last,
                                           depth0, lam.numerator, lam.denominator, bias, theta,
                                           _MAX_LEAVES, fanout, err, out)
        if st == lib.PDS_ESTATE and err[0]:
            raise SpillError(f"could not read the temporary files in "
                             f"{os.path.dirname(keys_path)}: {os.strerror(err[0])}")
        check(st, "privtree partition")
        ends = np.frombuffer(ffi.buffer(out.ends, 8 * out.m), dtype=np.uint64).copy()
        counts = np.frombuffer(ffi.buffer(out.counts, 8 * out.m), dtype=np.int64).copy()
    finally:
        lib.pds_privtree_free(out)
        for fd in fds:
            os.close(fd)
    return ends, counts


def privtree_of_chunks(chunks, domain, epsilon, beta, rng, size=None, fanout=2):
    """The PrivTree partition of a stream of sorted aggregates, and its segment weights.

    The counterpart of :func:`~pydp_synopsis.partitions.dnrr.dnrr_of_chunks`
    (same chunks; under a seed exactly :func:`privtree_of_sorted` of their
    concatenation).  Memory O(chunk + m) plus, past ``2**22`` distinct
    values, two temporary files of 16 bytes per distinct value, read through
    a window of ``_WINDOW_ENTRIES`` entries (16 MiB).  ``size``: the whole
    domain's size when ``domain`` is one of its shards (the tree then starts
    at :func:`root_depth`).  ``fanout``: 2 or 4.
    """
    fanout = check_privtree_fanout(fanout)
    lo, hi = domain
    depth0 = 0 if size is None else root_depth(size, hi - lo + 1, fanout)
    runs = _Runs(chunks)
    try:
        ends, weights = runs.grow(0, hi - lo, epsilon, rng, depth0, fanout)
    finally:
        runs.close()
    return TreePartition._checked(ends, lo, hi, epsilon, beta, fanout=fanout), weights


@persist.register(TREE_PARTITION_KIND)
def _load_tree_partition(meta, arrays):
    """A saved PrivTree partition, checked by :class:`TreePartition`'s constructor (its leaves
    must be those of the halving tree)."""
    try:
        version = meta.get("version")
        if version not in (TREE_PARTITION_VERSION, TREE_PARTITION_VERSION_FANOUT):
            raise FormatError(f"unknown {TREE_PARTITION_KIND} version {version!r}")
        fanout = 2 if version == TREE_PARTITION_VERSION else meta["fanout"]
        eps = persist.state_fraction(meta["epsilon"], "epsilon")
        shards = check_shards(meta["shards"], [tuple(meta["domain"])])
        return TreePartition(arrays["end_offsets"], domain=tuple(meta["domain"]), epsilon=eps,
                             beta=meta["beta"], shards=shards, fanout=fanout)
    except (KeyError, TypeError, ValueError, DomainError, ParameterError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid {TREE_PARTITION_KIND} record: {exc}") from exc
