"""Range sums and means of a bounded column over the ranges of another, with epsilon-DP.

``IntervalSynopsis.build(x, ..., sum_of=v, sum_bounds=(lo, hi))`` releases,
beside the counts of ``x``, the sums of ``v`` over blocks of the same
partition: total fare by date range, total delay by hour of departure.  A sum
is a weighted count (each row weighs its clipped value), so it goes through
the same machinery as the counts: the released partition of ``x`` (no extra
budget: it is already public), the same tree code, with node noise of scale
``(hi - lo)`` times the count's at the sums' budget.  The sum tree's leaves
are blocks of :data:`SUM_BLOCK` consecutive segments (a sum needs more rows
per leaf than a count: its noise is ``U`` times larger); a range that cuts a
block gets the block's sum apportioned by the released *counts* of the
segments it covers (:mod:`pydp_synopsis.range_answers`).

Privacy argument
----------------
* Each value is clipped to the public bounds ``[lo, hi]`` (a per-row map, so
  neighbouring inputs stay neighbours) and shifted: the tree holds
  ``v - lo``, an integer in ``[0, U]`` with ``U = hi - lo`` in the column's
  integer units (``v * 10**k`` for ``sum_scale=10**k``).
* Adding or removing one row changes one block's shifted sum by at most
  ``U`` (the blocks are a public grouping of the released segments), hence
  one node per level by at most ``U``: the l1 sensitivity of the
  released node vector is ``U L`` (``L`` levels), or ``U`` per level.  Node
  noise of scale ``U / epsilon_l`` per level with ``sum_l epsilon_l =
  epsilon_sum`` (``U L / epsilon_sum`` for equal levels) makes the sum tree
  ``epsilon_sum``-DP: the discrete Laplace ratio over an integer shift of at
  most ``U`` is at most ``exp(U / b)`` (DNRR section 3.2 with weight ``U``
  instead of 1).
* The partition of ``x`` (``epsilon_partition``), the count tree
  (``epsilon_tree``) and the sum tree (``epsilon_sum``) compose
  sequentially: the synopsis is ``epsilon_partition + epsilon_tree +
  epsilon_sum``-DP, which is its :attr:`epsilon` and what a ``budget=`` is
  charged.  The partition and the segment ids are public once released, so
  the sum tree reads them for free.
* The apportioning of a cut block by the counts, ``sum = shifted sum + lo *
  count`` and ``mean = sum / count`` (clipped to ``[lo, hi]``) are
  post-processing of the two released trees: free.

How many values were clipped is never computed nor released.

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
   Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.2.
.. [DR14] Dwork, Roth, "The Algorithmic Foundations of Differential
   Privacy", 2014, Theorem 3.16 (sequential composition), Proposition 2.1
   (post-processing).
.. [OpenDP] The OpenDP Library, ``make_clamp`` then ``make_sum`` (clipped
   sums with sensitivity the bound's width).
"""
import math
from collections import namedtuple
from fractions import Fraction

import numpy as np

from . import trees
from ._core import LIMITS
from .aggregates import SegmentIndex, histogram
from .columns import Column, missing_mask
from .errors import FormatError, InputError, ParameterError
from .interval_options import tree_scales
from .params import MAX_SCALE, check_share, exact_epsilon, is_int, split_epsilon
from .range_answers import RangeSumQueries  # re-exported: IntervalSynopsis mixes it in
from .sources import is_source

__all__ = ["DEFAULT_SUM_SHARE", "MAX_SUM_BOUND", "SUM_BLOCK", "SumSpec", "check_sum_options",
           "RangeSums", "RangeSumQueries", "block_index", "release_sums", "attach_sums", "sums_to_record",
           "sums_from_record"]

#: The share of the trees' budget ``epsilon * (1 - partition_share)`` spent on the sums.
DEFAULT_SUM_SHARE = Fraction(1, 2)
#: Segments per leaf of the sum tree: its leaves are blocks of this many consecutive segments
#: of the released partition (docs/guide/sums.md, "Accuracy": 16 against 1, 4 and 64).
SUM_BLOCK = 16
#: Largest ``|lo|``, ``|hi|`` of ``sum_bounds`` in the column's integer units (``2**40``).
MAX_SUM_BOUND = 1 << 40


class SumSpec(namedtuple("SumSpec", ["column", "lo", "hi", "share", "fanout", "ratio",
                                     "epsilon"])):
    """The checked sum options: the value column, its integer bounds, the budget share, the
    tree's fanout and level ratio (the count tree's) and ``epsilon_sum``."""

    __slots__ = ()

    @property
    def width(self):
        """``U = hi - lo``: what one row can add to a segment's shifted sum."""
        return self.hi - self.lo

    @staticmethod
    def split(eps_trees, share):
        """``(epsilon_tree, epsilon_sum)`` of the trees' budget (each rounded down)."""
        eps_s, eps_t = split_epsilon(eps_trees, share, ("epsilon_trees * sum_share",
                                                        "epsilon_trees * (1 - sum_share)"))
        return eps_t, eps_s

    def ledger(self, eps_s):
        """Public facts for the ledger's description."""
        named = {"sum_of": self.column.name} if self.column.name else {}
        return {**named, "sum_bounds": self.user_bounds(), "epsilon_sum": eps_s}

    def user_bounds(self):
        """The bounds in user units (ints, or Decimals for a scaled column)."""
        return tuple(self.column.values(np.array([self.lo, self.hi], dtype=np.int64)).tolist())

    def check_scale(self, domain):
        """Refuse (before anything is spent) bounds whose node scale could pass the sampler's
        ``2**48`` on this domain: the levels are known after the partition, so the most a
        partition of the domain can have is checked (as ``level_ratio`` is)."""
        most = min(domain[1] - domain[0] + 1, (1 << 62) - 1)
        levels = trees.tree_shape(most, self.fanout)[0]
        scales = _sum_scales(levels, self.epsilon, self.ratio, self.width) or [
            trees.noise_scale(levels, self.epsilon / self.width)]
        if max(scales) > MAX_SCALE:
            raise ParameterError("sum_bounds are too wide for this domain and epsilon: the sums' "
                                 "noise scale (hi - lo) * levels / epsilon_sum could pass 2**48; "
                                 "use tighter bounds, a larger epsilon or sum_share")

    def shifted_values(self, sum_of, size, domain):
        """``clip(v, lo, hi) - lo`` as int64 in integer units, one per row (checked: numeric,
        no missing value, the rows' shape; and :meth:`check_scale` on the integer
        ``domain``).  Draws nothing."""
        self.check_scale(domain)
        arr = np.asarray(sum_of)
        if arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
            raise TypeError(f"sum_of must be numeric (integers or floats), got dtype {arr.dtype}")
        if arr.size != size:
            raise ParameterError("sum_of must have one value per row of values (the same length)")
        arr = arr.ravel()
        if arr.dtype.kind == "f" and missing_mask(arr).any():
            raise InputError("sum_of: a value is missing (NaN); drop or fill the rows first")
        if size and size > LIMITS.max_count // max(abs(self.lo), abs(self.hi), self.width, 1):
            raise ParameterError("sum_of: too many rows for these sum_bounds (rows * max(|lo|, "
                                 "|hi|) must stay below 2**62 in the column's integer units)")
        ints = self.column.to_int(arr, "sum_of", clip=(self.lo, self.hi))
        return np.asarray(ints, dtype=np.int64) - np.int64(self.lo)


def _bound_int(column, bound, name):
    """One bound of ``sum_bounds`` on the column's integer grid (exact, refused if not on it)."""
    if isinstance(bound, (bool, np.bool_)) or not isinstance(bound, (int, float, np.integer,
                                                                     np.floating, str)):
        raise TypeError(f"{name} must be a number, not {type(bound).__name__}")
    if isinstance(bound, (float, np.floating)) and not math.isfinite(bound):
        raise ParameterError(f"{name} must be finite, got {bound!r}")
    try:
        value = int(column.to_int(np.array([bound]), name)[0])
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name}: {exc}") from None
    if abs(value) > MAX_SUM_BOUND:
        raise ParameterError(f"{name} must be within +-2**40 in the column's integer units "
                             f"(value * sum_scale), got {bound!r}")
    return value


def check_sum_options(sum_of, sum_bounds, sum_share, sum_scale, eps_trees, values, counts, dropna,
                      tree, fanout, ratio, delta):
    """The sum options checked before any data is read, budget charged or noise drawn.

    Returns
    -------
    (SumSpec or None, epsilon_tree, epsilon_sum)
        The spec (None when ``sum_of`` is None: then no other sum option may
        be given, and ``eps_trees`` all goes to the counts) and the split of
        the trees' budget ``eps_trees`` (:meth:`SumSpec.split`).
    """
    if sum_of is None:
        if sum_bounds is not None or sum_share is not None or sum_scale is not None:
            raise ParameterError("sum_bounds, sum_share and sum_scale need sum_of (the column "
                                 "to sum)")
        return None, eps_trees, 0
    if sum_bounds is None:
        raise ParameterError("sum_of needs sum_bounds=(lo, hi), public bounds of its values "
                             "(lo < hi)")
    if tree == "kary":
        raise ParameterError("sum_of needs structure='hierarchical' or 'binary', not 'kary'")
    if delta:
        raise ParameterError("sum_of needs delta=0 (range sums are pure epsilon-DP)")
    if counts is not None:
        raise ParameterError("sum_of takes one value per row: give the rows, not counts=")
    if is_source(values):
        raise ParameterError("sum_of needs the values in memory (arrays, lists, Series), not a "
                             "Source")
    if dropna:
        raise ParameterError("sum_of needs dropna=False: drop the rows missing either column "
                             "first, so both columns keep the same rows")
    share = DEFAULT_SUM_SHARE if sum_share is None else check_share(sum_share, "sum_share")
    name = getattr(sum_of, "name", None)
    name = name if isinstance(name, str) else None
    try:
        column = (Column.integer(name) if sum_scale is None
                  else Column.decimal(name, scale=sum_scale))
    except ParameterError as exc:
        raise ParameterError(f"sum_scale: {exc}") from None
    if isinstance(sum_bounds, (str, bytes)) or not hasattr(sum_bounds, "__len__") \
            or len(sum_bounds) != 2:
        raise ParameterError("sum_bounds must be a pair (lo, hi) with lo < hi")
    lo = _bound_int(column, sum_bounds[0], "sum_bounds[0]")
    hi = _bound_int(column, sum_bounds[1], "sum_bounds[1]")
    if lo >= hi:
        raise ParameterError(f"sum_bounds must be (lo, hi) with lo < hi, got {tuple(sum_bounds)!r}")
    eps_t, eps_s = SumSpec.split(eps_trees, share)
    return SumSpec(column, lo, hi, share, 2 if tree == "binary" else fanout, ratio, eps_s), \
        eps_t, eps_s


class RangeSums:
    """The released sum tree of a clipped, shifted column over an interval synopsis's partition.

    Held by an :class:`~pydp_synopsis.IntervalSynopsis` built with
    ``sum_of=`` (its :attr:`sums`); users query the synopsis
    (``sum_many``, ``mean_many``, ...).  Only released numbers: the noisy
    tree of the shifted sums ``v - lo`` of the *blocks*, runs of
    :data:`SUM_BLOCK` consecutive segments of the released partition (a
    public grouping; the last block may hold fewer).

    Attributes
    ----------
    partition : Partition
        The synopsis' released partition (shared).
    epsilon : Fraction
        ``epsilon_sum``, the sum tree's budget.
    column : Column
        The value column (integer, or decimal with a power-of-ten scale).
    bounds : tuple
        ``(lo, hi)`` in the column's integer units.
    block : int
        Segments per block (the sum tree's leaves).
    """

    __slots__ = ("partition", "epsilon", "column", "bounds", "block", "fanout", "consistency",
                 "level_ratio", "_released", "_prefix", "_levels", "_index", "_starts", "_ends",
                 "_lookup", "_scale", "_scales", "_weights")

    def __init__(self):
        raise TypeError("range sums are built by IntervalSynopsis.build(..., sum_of=...)")

    @classmethod
    def _from_release(cls, syn, released, *, epsilon, column, bounds, block):
        """The one constructor (build and load): the synopsis' options, the released sum tree."""
        self = cls.__new__(cls)
        self.partition, self.epsilon, self.column = syn.partition, epsilon, column
        self.bounds, self.block = (int(bounds[0]), int(bounds[1])), int(block)
        self.fanout, self.consistency = syn.fanout, syn.consistency
        self.level_ratio = syn.level_ratio
        self._index = block_index(len(self.partition), self.block)
        ends = np.ascontiguousarray(self.partition.end_offsets, dtype=np.uint64)
        self._ends = np.ascontiguousarray(ends[self._index])
        self._starts = np.concatenate((np.zeros(1, np.uint64), self._ends[:-1] + np.uint64(1)))
        self._lookup = SegmentIndex(self._ends)
        self._released = released
        nb = self._ends.size
        self._levels = trees.tree_shape(nb, self.fanout)[0]
        self._scales, self._weights = _sum_scales(self._levels, epsilon, self.level_ratio,
                                                  self.width), None
        if self._scales is not None:
            self._weights = trees.LevelWeights(self._scales)
            self._scale = self._weights.scale
        else:
            self._scale = trees.noise_scale(self._levels, epsilon / self.width)
        self._prefix = None
        if self.consistency:
            leaf = trees.consistent_leaves(released, nb, self.fanout, self._weights)
            self._prefix = np.concatenate(([0.0], np.cumsum(leaf)))
        return self

    @property
    def width(self):
        """``U = hi - lo`` in integer units: the most one row moves a block's sum."""
        return self.bounds[1] - self.bounds[0]

    @property
    def noise_scale(self):
        """The largest discrete Laplace scale of a released sum node (a Fraction, integer
        units): ``L U / epsilon`` for equal levels."""
        return self._scale

    @property
    def noise_scales(self):
        """The discrete Laplace scale of each released level of the sum tree, leaves first (a
        tuple of Fractions, integer units): ``U`` times the count tree's at ``epsilon_sum``."""
        return tuple(self._scales) if self._scales is not None else (self._scale,) * self._levels

    @property
    def user_bounds(self):
        """``(lo, hi)`` in user units."""
        return tuple(self.column.values(np.array(self.bounds, dtype=np.int64)).tolist())

    @property
    def unit(self):
        """Integer units per user unit (``10**k`` for ``sum_scale=10**k``, else 1)."""
        return self.column.scale

    @property
    def block_ends(self):
        """The blocks' last values, in the domain's integers (ends of the partition's segments
        ``block - 1, 2 block - 1, ...`` and the last one): a range from just after one block
        end to another has no apportioning error."""
        return np.asarray(self.partition.ends)[self._index]

    def __len__(self):
        """Number of blocks (the sum tree's leaves)."""
        return int(self._ends.size)

    def whole(self, kl, kh):
        """Released estimates of the shifted sums of whole blocks ``kl .. kh`` (index arrays,
        ``kl <= kh``); O(1) per range from the consistent prefix sums, else one C call."""
        if self._prefix is not None:
            return self._prefix[kh + 1] - self._prefix[kl]
        return trees.interval_answers(self._ends, self._starts[kl], self._ends[kh], "cover", 0.0,
                                      nodes=self._released, fanout=self.fanout,
                                      lookup=self._lookup)

    def whole_noise(self, kl, kh):
        """``(sumsq, maxabs)`` of the noise weights of :meth:`whole` (the count tree's
        conventions: :func:`~pydp_synopsis.trees.interval_noise`); 0 where ``kl > kh``."""
        empty = kl > kh
        a, b = np.where(empty, 0, kl), np.where(empty, 0, kh)
        sumsq, maxabs = trees.interval_noise(self._ends, self._starts[a], self._ends[b], "cover",
                                             fanout=self.fanout, consistent=self.consistency,
                                             corners=False, lookup=self._lookup,
                                             weights=self._weights)
        return np.where(empty, 0.0, sumsq[:, 3]), np.where(empty, 0.0, maxabs[:, 3])

    def _check(self):
        """Invariants of the release (tests call it)."""
        assert self.width >= 1 and self._released.dtype == np.int64
        assert self._released.size == trees.tree_shape(len(self), self.fanout)[1]
        assert self._ends[-1] == self.partition.end_offsets[-1]


def block_index(m, block):
    """Indices of the segments that end the blocks of ``block`` consecutive segments of
    ``m`` (the last block may hold fewer).

    Examples
    --------
    >>> block_index(5, 2).tolist()
    [1, 3, 4]
    """
    index = np.arange(block - 1, m, block, dtype=np.intp)
    if index.size == 0 or index[-1] != m - 1:
        index = np.append(index, m - 1)
    return index


def _sum_scales(levels, epsilon, ratio, width):
    """Per-level node scales of the sum tree (``width`` times the count tree's at
    ``epsilon``), or None for equal levels."""
    scales = tree_scales(levels, epsilon, ratio)
    if scales is None:
        return None
    return [Fraction(*trees.scale_parts(b * width)) for b in scales]


def release_sums(spec, syn, offsets, shifted, eps_s, rng):
    """Release the sum tree over ``syn``'s partition: true shifted block sums plus noise.

    ``offsets`` are the rows' checked offsets of ``x`` and ``shifted`` their
    ``clip(v) - lo`` (:meth:`SumSpec.shifted_values`).  Draws one discrete
    Laplace per node from ``rng`` (after the count tree's) and attaches the
    result to ``syn`` (:func:`attach_sums`); nothing when ``spec`` is None.  O(n + m).
    """
    if spec is None:
        return None
    part = syn.partition
    m = len(part)
    seg = part.lookup.of(offsets)
    index = block_index(m, SUM_BLOCK)
    sums = np.add.reduceat(histogram(seg.astype(np.intp), shifted, m),
                           np.concatenate(([0], index[:-1] + 1)))
    levels = trees.tree_shape(index.size, syn.fanout)[0]
    scales = _sum_scales(levels, eps_s, syn.level_ratio, spec.width)
    if scales is None:
        released = trees.noisy_tree(sums, syn.fanout, eps_s / spec.width, rng)
    else:
        released = trees.noisy_tree(sums, syn.fanout, None, rng, scales=scales)
    result = RangeSums._from_release(syn, released, epsilon=eps_s, column=spec.column,
                                     bounds=(spec.lo, spec.hi), block=SUM_BLOCK)
    attach_sums(syn, result)
    return result


def attach_sums(syn, sums):
    """Give ``syn`` its sum tree; its epsilon becomes the composed total."""
    syn.sums = sums
    syn.epsilon = syn.epsilon + sums.epsilon
    syn.pure_epsilon = syn.pure_epsilon + sums.epsilon


def sums_to_record(sums):
    """``(meta, array)`` of the sum tree for the synopsis's record (public facts only)."""
    return ({"column": sums.column.to_record(), "bounds": list(sums.bounds),
             "epsilon": [sums.epsilon.numerator, sums.epsilon.denominator],
             "block": sums.block}, sums._released)


def sums_from_record(meta, released, syn):
    """The sum tree of a saved synopsis, checked with build's rules (FormatError otherwise)."""
    try:
        column = Column.from_record(meta["column"])
        if column.kind not in ("integer", "decimal") or column.resolution is not None:
            raise FormatError("range sums record: the column is an integer or a scaled decimal")
        lo, hi = meta["bounds"]
        if not (is_int(lo) and is_int(hi) and -MAX_SUM_BOUND <= lo < hi <= MAX_SUM_BOUND):
            raise FormatError("range sums record: bounds must be integers lo < hi within 2**40")
        block = meta["block"]
        if not (is_int(block) and 1 <= block <= 1 << 20):
            raise FormatError("range sums record: block must be an integer in [1, 2**20]")
        if syn.tree == "kary" or syn.delta:
            raise FormatError("range sums record: sums need a binary or hierarchical pure tree")
        eps = exact_epsilon(Fraction(*meta["epsilon"]), "epsilon_sum")
        released = np.ascontiguousarray(released, dtype=np.int64)
        nb = block_index(len(syn.partition), block).size
        if released.shape != (trees.tree_shape(nb, syn.fanout)[1],):
            raise FormatError("range sums record: the sum tree has the wrong length")
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid range sums record: {exc}") from exc
    return RangeSums._from_release(syn, released, epsilon=eps, column=column, bounds=(lo, hi),
                                   block=block)
