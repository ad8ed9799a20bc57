"""Range sums and means of a bounded column over the ranges of another, with epsilon-DP.

``IntervalSynopsis.build(x, ..., sum_of=v, sum_bounds=(lo, hi))`` releases,
beside the counts of ``x``, the sums of ``v`` over the same partition's
segments: total fare by date range, total delay by hour of departure.  A sum
is a weighted count (each row weighs its clipped value), so it goes through
the same machinery as the counts: the released partition of ``x`` (no
extra budget: it is already public), the same tree over its segments, the
same boundary estimator and the same per-query error bars, with node noise
of scale ``(hi - lo)`` times the count's at the sums' budget.

Privacy argument
----------------
* Each value is clipped to the public bounds ``[lo, hi]`` (a per-row map, so
  neighbouring inputs stay neighbours) and shifted: the tree holds
  ``v - lo``, an integer in ``[0, U]`` with ``U = hi - lo`` in the column's
  integer units (``v * 10**k`` for ``sum_scale=10**k``).
* Adding or removing one row changes one segment's shifted sum by at most
  ``U``, hence one node per level by at most ``U``: the l1 sensitivity of the
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
* ``sum = shifted sum + lo * count`` and ``mean = sum / count`` (clipped to
  ``[lo, hi]``) are post-processing of the two released trees: free.

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
from .aggregates import histogram
from .columns import Column, missing_mask
from .errorbars import ErrorBars, noise_std
from .errors import FormatError, InputError, ParameterError
from .interval_answers import IntervalAnswers
from .interval_options import tree_scales
from .params import MAX_SCALE, check_bool, check_share, exact_epsilon, is_int, split_epsilon
from .sources import is_source
from .tails import laplace_weighted_tail

__all__ = ["DEFAULT_SUM_SHARE", "MAX_SUM_BOUND", "SumSpec", "check_sum_options", "RangeSums",
           "RangeSumQueries", "release_sums", "attach_sums", "sums_to_record",
           "sums_from_record"]

#: The share of the trees' budget ``epsilon * (1 - partition_share)`` spent on the sums.
DEFAULT_SUM_SHARE = Fraction(1, 2)
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
        raise ParameterError("sum_of needs tree='hierarchical' or 'binary', not 'kary'")
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


class RangeSums(IntervalAnswers):
    """The released sum tree of a clipped, shifted column over an interval synopsis's partition.

    Held by an :class:`~pydp_synopsis.IntervalSynopsis` built with
    ``sum_of=`` (its :attr:`sums`); users query the synopsis
    (``sum_many``, ``mean_many``, ...).  Only released numbers: the
    partition's ends and the noisy tree of the shifted sums ``v - lo``.

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
    """

    __slots__ = ("partition", "epsilon", "column", "bounds", "beta", "tree", "fanout",
                 "consistency", "estimator", "k", "level_ratio", "_released", "_prefix",
                 "_levels", "_ends", "_tau", "_coef", "_columns", "_scale", "_scales",
                 "_weights")

    def __init__(self):
        raise TypeError("range sums are built by IntervalSynopsis.build(..., sum_of=...)")

    @classmethod
    def _from_release(cls, syn, released, *, epsilon, column, bounds):
        """The one constructor (build and load): the synopsis' options, the released sum tree."""
        self = cls.__new__(cls)
        self.partition, self.epsilon, self.column = syn.partition, epsilon, column
        self.bounds = (int(bounds[0]), int(bounds[1]))
        self.beta, self.tree, self.fanout = syn.beta, syn.tree, syn.fanout
        self.consistency, self.estimator, self.k = syn.consistency, syn.estimator, syn.k
        self.level_ratio = syn.level_ratio
        self._columns = syn._columns
        self._released = released
        self._ends = np.ascontiguousarray(self.partition.end_offsets, dtype=np.uint64)
        self._tau = float(self.partition.threshold)      # in items (the bias is times U)
        self._coef = None
        m = len(self.partition)
        self._levels = trees.tree_shape(m, self.fanout)[0]
        self._scales, self._weights = _sum_scales(self._levels, epsilon, self.level_ratio,
                                                  self.width), None
        if self._scales is not None:
            self._weights = trees.LevelWeights(self._scales)
            self._scale = self._weights.scale
        else:
            self._scale = trees.noise_scale(self._levels, epsilon / self.width)
        self._prefix = None
        if self.consistency:
            leaf = trees.consistent_leaves(released, m, self.fanout, self._weights)
            self._prefix = np.concatenate(([0.0], np.cumsum(leaf)))
        return self

    @property
    def width(self):
        """``U = hi - lo`` in integer units: the most one row moves a segment's sum."""
        return self.bounds[1] - self.bounds[0]

    @property
    def domain(self):
        return self.partition.domain

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

    def __len__(self):
        return len(self.partition)

    def interior_weight_bound(self):
        return self.partition.interior_weight_bound()

    def _answers(self, lo_o, hi_o):
        # seal_uniform caps a boundary segment's interior at T items, i.e. T * U here
        tau = self._tau * self.width
        if self._prefix is None:
            return trees.interval_answers(self._ends, lo_o, hi_o, self.estimator, tau,
                                          nodes=self._released, fanout=self.fanout,
                                          lookup=self.partition.lookup)
        return trees.interval_answers(self._ends, lo_o, hi_o, self.estimator, tau,
                                      prefix=self._prefix, lookup=self.partition.lookup)

    def shifted_std(self, lo_o, hi_o):
        """The exact noise std of the shifted sums' answers (integer units)."""
        sumsq, _ = self._noise_weights(lo_o, hi_o, corners=False)
        return noise_std(sumsq[:, 3:], [self._scale])

    def shifted_bars(self, lo_o, hi_o, delta, multiplicity):
        """``(answer, std, noise, bias)`` of the shifted sums (integer units), the noise
        tail failing with probability ``<= delta`` per query."""
        answer = self._answers(lo_o, hi_o)
        std, noise = noise_tails(self, lo_o, hi_o, delta)
        bias = self.width * self._query_bias(lo_o, hi_o, multiplicity)
        return answer, std, noise, bias

    def _check(self):
        """Invariants of the release (tests call it)."""
        assert self.width >= 1 and self._released.dtype == np.int64
        assert self._released.size == trees.tree_shape(len(self), self.fanout)[1]


def noise_tails(obj, lo_o, hi_o, delta):
    """``(std, noise)`` of an interval structure's answers: the exact noise std and the
    Chernoff tail at ``delta`` (the computation of ``IntervalSynopsis.confidence_intervals``,
    for any :class:`IntervalAnswers` with a tree)."""
    sumsq, maxabs = obj._noise_weights(lo_o, hi_o)
    b = obj._noise_scale()
    tail_sq = sumsq if obj._weights is None else sumsq * obj._weights.kappa
    if obj.estimator == "seal_uniform":
        left, right = obj._boundaries(lo_o, hi_o)[:2]
        log_inv = np.log(2.0 * 2.0 ** (left.astype(np.float64) + right) / delta)
        noise = np.max([laplace_weighted_tail(tail_sq[:, j:j + 1], maxabs[:, j:j + 1], [b],
                                              log_inv) for j in range(4)], axis=0)
    else:
        noise = laplace_weighted_tail(tail_sq[:, 3:], maxabs[:, 3:], [b], math.log(2.0 / delta))
    return noise_std(sumsq[:, 3:], [b]), noise


def _sum_scales(levels, epsilon, ratio, width):
    """Per-level node scales of the sum tree (``width`` times the count tree's at
    ``epsilon``), or None for equal levels."""
    scales = tree_scales(levels, epsilon, ratio)
    if scales is None:
        return None
    return [Fraction(*trees.scale_parts(b * width)) for b in scales]


def release_sums(spec, syn, offsets, shifted, eps_s, rng):
    """Release the sum tree over ``syn``'s partition: true shifted segment sums plus noise.

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
    sums = histogram(seg.astype(np.intp), shifted, m)
    levels = trees.tree_shape(m, syn.fanout)[0]
    scales = _sum_scales(levels, eps_s, syn.level_ratio, spec.width)
    if scales is None:
        released = trees.noisy_tree(sums, syn.fanout, eps_s / spec.width, rng)
    else:
        released = trees.noisy_tree(sums, syn.fanout, None, rng, scales=scales)
    sums = RangeSums._from_release(syn, released, epsilon=eps_s, column=spec.column,
                                   bounds=(spec.lo, spec.hi))
    attach_sums(syn, sums)
    return sums


def attach_sums(syn, sums):
    """Give ``syn`` its sum tree; its epsilon becomes the composed total."""
    syn.sums = sums
    syn.epsilon = syn.epsilon + sums.epsilon
    syn.pure_epsilon = syn.pure_epsilon + sums.epsilon


def sums_to_record(sums):
    """``(meta, array)`` of the sum tree for the synopsis's record (public facts only)."""
    return ({"column": sums.column.to_record(), "bounds": list(sums.bounds),
             "epsilon": [sums.epsilon.numerator, sums.epsilon.denominator]}, sums._released)


def sums_from_record(meta, released, syn):
    """The sum tree of a saved synopsis, checked with build's rules (FormatError otherwise)."""
    try:
        column = Column.from_record(meta["column"])
        if column.kind not in ("integer", "decimal") or column.resolution is not None:
            raise FormatError("range sums record: the column is an integer or a scaled decimal")
        lo, hi = meta["bounds"]
        if not (is_int(lo) and is_int(hi) and -MAX_SUM_BOUND <= lo < hi <= MAX_SUM_BOUND):
            raise FormatError("range sums record: bounds must be integers lo < hi within 2**40")
        if syn.tree == "kary" or syn.delta:
            raise FormatError("range sums record: sums need a binary or hierarchical pure tree")
        eps = exact_epsilon(Fraction(*meta["epsilon"]), "epsilon_sum")
        released = np.ascontiguousarray(released, dtype=np.int64)
        if released.shape != (trees.tree_shape(len(syn.partition), syn.fanout)[1],):
            raise FormatError("range sums record: the sum tree has the wrong length")
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid range sums record: {exc}") from exc
    return RangeSums._from_release(syn, released, epsilon=eps, column=column, bounds=(lo, hi))


def _no_sums():
    return ParameterError("this synopsis holds no range sums: build it with sum_of= and "
                          "sum_bounds=")


class RangeSumQueries:
    """Range sums and means, mixed into :class:`~pydp_synopsis.IntervalSynopsis` (no state)."""

    __slots__ = ()

    def _sums_or_raise(self):
        if getattr(self, "sums", None) is None:
            raise _no_sums()
        return self.sums

    def sum_many(self, lo, hi, *, return_std=False):
        """Noisy sums of the value column over the inclusive ranges ``[lo[q], hi[q]]`` of x.

        ``sum = (shifted sum) + lo_bound * count``: the released sum tree's
        answer plus the bound times the count's (post-processing), in the
        value column's user units.  Values were clipped to ``sum_bounds``
        at build.  ``std`` (``return_std=True``) is exact:
        ``sqrt(std_shifted**2 + lo_bound**2 std_count**2)``; it leaves out
        the boundary segments' bias (:meth:`sum_intervals` bounds both).

        Parameters
        ----------
        lo, hi : array_like
            Ranges of x, as :meth:`count_many` (user units of x).
        return_std : bool

        Returns
        -------
        numpy.ndarray of float64, or (answers, std)

        Notes
        -----
        O(q log m) and one or two C calls per tree, as :meth:`count_many`.

        Examples
        --------
        >>> import numpy as np, pydp_synopsis as ps
        >>> x, v = np.arange(1000) % 100, np.full(1000, 7)
        >>> s = ps.IntervalSynopsis.build(x, domain=(0, 99), epsilon=1e4, sum_of=v,
        ...                               sum_bounds=(0, 10), rng=ps.Rng(seed=1))  # seed: tests
        >>> round(s.sum(0, 99) / 100)        # 7000, up to noise and boundary bias
        70
        """
        sums = self._sums_or_raise()
        return_std = check_bool(return_std, "return_std")
        lo_o, hi_o, shape = self._offsets(lo, hi)
        low = sums.bounds[0]
        ans = sums._answers(lo_o, hi_o)
        if low:
            ans = ans + low * self._answers(lo_o, hi_o)
        ans = (ans / sums.unit).reshape(shape)
        if not return_std:
            return ans
        var = sums.shifted_std(lo_o, hi_o) ** 2
        if low:
            sumsq, _ = self._noise_weights(lo_o, hi_o, corners=False)
            var = var + (low * noise_std(sumsq[:, 3:], [self._noise_scale()])) ** 2
        return ans, (np.sqrt(var) / sums.unit).reshape(shape)

    def sum(self, lo, hi):
        """Noisy sum of the value column over the inclusive range ``[lo, hi]`` of x (a float).

        As :meth:`sum_many` for one range.
        """
        return float(self.sum_many([lo], [hi])[0])

    def _sum_parts(self, lo, hi, confidence, multiplicity, counts=True):
        """The shifted sums' and the counts' bars: each tree's noise fails with probability
        half of ``1 - confidence - beta / 2`` (a union bound), or the sums' all of it when
        the counts are not needed (``counts=False``: ``c`` is None)."""
        sums = self._sums_or_raise()
        delta = self._noise_delta(confidence) / (2 if counts else 1)
        lo_o, hi_o, shape = self._offsets(lo, hi)
        s = sums.shifted_bars(lo_o, hi_o, delta, multiplicity)
        if not counts:
            return sums, s, None, shape
        c_ans = self._answers(lo_o, hi_o)
        c_std, c_noise = noise_tails(self, lo_o, hi_o, delta)
        c = (c_ans, c_std, c_noise, self._query_bias(lo_o, hi_o, multiplicity))
        return sums, s, c, shape

    def sum_intervals(self, lo, hi, confidence=0.95, *, multiplicity=1):
        """Per-query intervals holding each true (clipped) sum with probability >= ``confidence``.

        The true sum of the clipped values over ``[lo, hi]`` lies in
        ``answer -+ (noise + bias)``: the shifted sum's Chernoff tail and
        its boundary bias (``U`` times the count's: each cut segment holds
        at most ``W`` rows, each adding at most ``U = hi_bound - lo_bound``),
        plus, when ``lo_bound != 0``, ``|lo_bound|`` times the count's noise
        and bias; the noise of the two trees then gets ``(1 - confidence -
        beta / 2) / 2`` each (a union bound), else the sum tree all of it
        (``beta / 2`` is the partition's weight bound's).  Values outside
        ``sum_bounds`` were clipped: the interval is about the clipped sum.

        Parameters
        ----------
        lo, hi, confidence, multiplicity
            As :meth:`confidence_intervals`.

        Returns
        -------
        ErrorBars
            In the value column's user units.
        """
        sums = self._sums_or_raise()
        low, unit = sums.bounds[0], sums.unit
        sums, s, c, shape = self._sum_parts(lo, hi, confidence, multiplicity, counts=low != 0)
        answer, std, noise, bias = s
        if low:
            answer = answer + low * c[0]
            std = np.sqrt(std ** 2 + (low * c[1]) ** 2)
            noise, bias = noise + abs(low) * c[2], bias + abs(low) * c[3]
        low_end, high_end = answer - noise - bias, answer + noise + bias
        return ErrorBars(*(np.asarray(x / unit, dtype=np.float64).reshape(shape)
                           for x in (answer, low_end, high_end, std, noise, bias)))

    def mean_many(self, lo, hi, *, return_std=False):
        """Noisy means of the value column over the ranges ``[lo[q], hi[q]]`` of x.

        ``mean = lo_bound + clip(shifted sum / count, 0, U)``: the ratio of
        the two released answers (post-processing), clipped to
        ``sum_bounds`` since every clipped value lies there.  NaN where the
        noisy count is ``<= 0`` (no mean can be read from it).  ``std``
        (``return_std=True``) is the first-order (delta-method) approximation
        ``sqrt(std_s**2 + r**2 std_c**2) / count`` with ``r = shifted
        mean``: an approximation, not a bound; :meth:`mean_intervals` gives
        rigorous intervals.

        Examples
        --------
        >>> import numpy as np, pydp_synopsis as ps
        >>> x, v = np.arange(1000) % 100, np.full(1000, 7)
        >>> s = ps.IntervalSynopsis.build(x, domain=(0, 99), epsilon=1e4, sum_of=v,
        ...                               sum_bounds=(0, 10), rng=ps.Rng(seed=1))  # seed: tests
        >>> round(s.mean(0, 99))
        7
        """
        sums = self._sums_or_raise()
        return_std = check_bool(return_std, "return_std")
        lo_o, hi_o, shape = self._offsets(lo, hi)
        s_ans, c_ans = sums._answers(lo_o, hi_o), self._answers(lo_o, hi_o)
        ok = c_ans > 0
        ratio = np.where(ok, np.clip(s_ans / np.where(ok, c_ans, 1.0), 0.0, sums.width), np.nan)
        mean = ((sums.bounds[0] + ratio) / sums.unit).reshape(shape)
        if not return_std:
            return mean
        s_std = sums.shifted_std(lo_o, hi_o)
        sumsq, _ = self._noise_weights(lo_o, hi_o, corners=False)
        c_std = noise_std(sumsq[:, 3:], [self._noise_scale()])
        std = np.sqrt(s_std ** 2 + (ratio * c_std) ** 2) / np.where(ok, c_ans, np.nan)
        return mean, (std / sums.unit).reshape(shape)

    def mean(self, lo, hi):
        """Noisy mean of the value column over ``[lo, hi]`` of x (a float; NaN if the noisy
        count is ``<= 0``).  As :meth:`mean_many` for one range."""
        return float(self.mean_many([lo], [hi])[0])

    def mean_intervals(self, lo, hi, confidence=0.95, *, multiplicity=1):
        """Per-query intervals holding each true mean of the clipped values.

        From the intervals of the shifted sum ``[s_lo, s_hi]`` and of the
        count ``[c_lo, c_hi]`` (each noise at half the noise budget, as
        :meth:`sum_intervals`): when ``c_lo > 0``, the true mean lies in
        ``lo_bound + [max(s_lo, 0) / c_hi, s_hi / c_lo]``, clipped to
        ``sum_bounds`` (a ratio of values in two boxes takes its extremes at
        corners).  When ``c_lo <= 0`` the range may hold no row and no
        interval is given: ``low`` and ``high`` are NaN (and so is the
        answer when the noisy count is ``<= 0``).  ``std`` is
        :meth:`mean_many`'s approximation; ``noise`` and ``bias`` are NaN (a
        ratio interval has no such split).

        Returns
        -------
        ErrorBars
            In the value column's user units.
        """
        sums, s, c, shape = self._sum_parts(lo, hi, confidence, multiplicity)
        width, unit, low = sums.width, sums.unit, sums.bounds[0]
        s_lo = np.maximum(s[0] - s[2] - s[3], 0.0)
        s_hi = s[0] + s[2] + s[3]
        c_lo, c_hi = c[0] - c[2] - c[3], c[0] + c[2] + c[3]
        ok = c_lo > 0
        safe_lo, safe_hi = np.where(ok, c_lo, 1.0), np.where(ok, c_hi, 1.0)
        r_lo = np.where(ok, np.clip(s_lo / safe_hi, 0.0, width), np.nan)
        r_hi = np.where(ok, np.clip(s_hi / safe_lo, 0.0, width), np.nan)
        pos = c[0] > 0
        ratio = np.where(pos, np.clip(s[0] / np.where(pos, c[0], 1.0), 0.0, width), np.nan)
        std = np.sqrt(s[1] ** 2 + (ratio * c[1]) ** 2) / np.where(pos, c[0], np.nan)
        nan = np.full(ratio.shape, np.nan)
        return ErrorBars(*(np.asarray(x, dtype=np.float64).reshape(shape) for x in (
            (low + ratio) / unit, (low + r_lo) / unit, (low + r_hi) / unit, std / unit, nan,
            nan)))
