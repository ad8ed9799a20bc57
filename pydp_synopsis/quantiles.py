"""Quantiles, the CDF and histograms of an interval synopsis: post-processing of one release.

An :class:`~pydp_synopsis.IntervalSynopsis` already answers every range
count, so it holds a private cumulative distribution: ``cdf``, ``quantile``
and ``histogram`` read it and draw nothing, so they cost no privacy
(post-processing of released numbers and public arguments), however many
quantiles are asked.

The monotone distribution
-------------------------
1. The synopsis's answers for the prefixes ``[lo, end_i]`` of the domain, one
   per segment end ``end_i`` of the released partition (the consistent
   tree's prefix sums, or the raw tree's or k-ary counter's prefix answers).
2. Their least-squares non-decreasing fit (isotonic regression by pool
   adjacent violators, [BBBB72]_, ``csrc/isotonic.c``), clipped at 0 from
   below: ``0 <= C_1 <= ... <= C_m``.  Each segment's count ``C_i -
   C_{i-1}`` is then non-negative and ``N = C_m`` is the private total.
3. Inside a segment its count is spread uniformly over the segment's points
   of the column's grid (the integers, or the dates, times or decimals they
   stand for, which are equally spaced in user units): the CDF is linear
   between consecutive segment ends.

``cdf(x)`` is that distribution's ``F(x) / N`` (the fraction of rows ``<=
x``); ``quantile(q)`` its generalised inverse on the grid, the smallest grid
point ``x`` with ``F(x) >= q N`` (``q = 0``: the smallest with ``F(x) >
0``), numpy's ``"inverted_cdf"`` rule; both are non-decreasing.
``histogram`` returns the synopsis's own answers for the bins (those of
``count_many(..., nonnegative=True)``) with their per-bin error bars.

Error: ``F(x)`` differs from the true count of ``[lo, x]`` by the noise of
that prefix answer (its std: ``count_many(lo, x, return_std=True)``) plus,
inside a segment, what the uniform spread misplaces; the rank error of a
quantile is at most the CDF's error there (docs/guide/quantiles.md).

References
----------
.. [BBBB72] R. E. Barlow, D. J. Bartholomew, J. M. Bremner, H. D. Brunk,
   "Statistical Inference under Order Restrictions", Wiley 1972, section 1.2
   (pool adjacent violators).
.. [HRMS10] Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", VLDB 2010
   (consistency of a released tree as post-processing).
"""
import numbers

import numpy as np

from ._core import check, f64, lib
from .errors import DomainError, ParameterError
from .params import as_offsets, check_int

__all__ = ["MAX_BINS", "IntervalQuantiles", "isotonic", "check_fractions", "user_values"]

#: Most bins of one :meth:`IntervalQuantiles.histogram` call.
MAX_BINS = 1 << 20

_LAST_BELOW_2_64 = float(np.nextafter(2.0 ** 64, 0))


def isotonic(y):
    """The least-squares non-decreasing fit of the finite float sequence ``y``.

    Pool adjacent violators in C, O(n).  Float arithmetic: it post-processes
    released numbers and decides nothing released.

    >>> isotonic([1.0, 3.0, 2.0, 5.0, 0.0]).tolist()
    [1.0, 2.5, 2.5, 2.5, 2.5]
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    out = np.empty_like(y)
    check(lib.pds_isotonic(y.size, f64(y), f64(out)), "isotonic")
    return out


def check_fractions(q, name="q"):
    """``q`` (a real or an array of reals) as a float64 array in ``[0, 1]``.

    TypeError for non-real input (bools, strings, dates); ParameterError
    naming ``name`` and the first value outside ``[0, 1]`` (NaN included).

    >>> check_fractions([0.5, 1]).tolist()
    [0.5, 1.0]
    """
    if isinstance(q, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number in [0, 1], not bool")
    arr = np.asarray(q) if not isinstance(q, numbers.Real) else np.asarray(float(q))
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers in [0, 1], not {arr.dtype}")
    arr = arr.astype(np.float64)
    bad = ~((arr >= 0.0) & (arr <= 1.0))           # NaN is bad too
    if bad.any():
        v = arr.reshape(-1)[int(np.argmax(bad.reshape(-1)))]
        raise ParameterError(f"{name} must be in [0, 1], got {float(v)!r}")
    return arr


def user_values(offsets, domain, column):
    """uint64 offsets of the integer ``domain`` -> values in ``column``'s units: ints
    (int64, uint64 past int64), dates and times (``datetime64``, UTC for a zoned
    column), decimals (float64; with a resolution, the bin's lower end).

    >>> from pydp_synopsis.columns import Column
    >>> user_values(np.array([0, 5], dtype=np.uint64), (10, 20), Column.integer()).tolist()
    [10, 15]
    """
    lo, hi = domain
    col = column
    if hi <= np.iinfo(np.int64).max:
        # two's complement: the true value fits int64, so the wrapped sum is it
        ints = offsets.view(np.int64) + np.int64(lo)
    else:
        ints = offsets + np.uint64(lo)
    if col.is_plain:
        return ints
    if col.kind == "decimal":
        if col.resolution is None:
            return ints.astype(np.float64) / col.scale
        p, _, q = col.resolution.partition("/")
        r = float(p) / (float(q) if q else 1.0)
        return ints.astype(np.float64) * r
    return col.values(ints)


class IntervalQuantiles:
    """``cdf``, ``quantile`` and ``histogram`` of an interval synopsis (a mixin of
    :class:`~pydp_synopsis.IntervalSynopsis`, no state of its own)."""

    __slots__ = ()

    # ------------------------------------------------------------ the release
    def _cumulative(self):
        """``(starts, widths, C)``: segment starts (uint64 offsets), widths (float)
        and the monotone cumulative counts ``C`` (length m + 1, ``C[0] = 0``)."""
        ends = self._ends
        starts = np.concatenate(([np.uint64(0)], ends[:-1] + np.uint64(1)))
        prefix = self._answers(np.zeros(ends.size, dtype=np.uint64), ends)
        cum = np.maximum(isotonic(prefix), 0.0)
        widths = (ends - starts).astype(np.float64) + 1.0
        return starts, widths, np.concatenate(([0.0], cum))

    def _total(self, cum):
        if not cum[-1] > 0:
            raise DomainError("the synopsis's private total is not positive: it holds no "
                              "distribution to take a CDF or quantiles of")
        return cum[-1]

    def _grid(self, x, name):
        """User values (one per query) -> checked uint64 offsets of the domain."""
        col = self.column
        ints = x if col.is_plain else col.to_int(x, name, "hi")
        return np.ascontiguousarray(as_offsets(ints, self.domain, name), dtype=np.uint64)

    def _user_values(self, offsets):
        """uint64 offsets -> user values (:func:`user_values` in the synopsis's units)."""
        return user_values(offsets, self.domain, self.column)

    # -------------------------------------------------------------- queries
    def cdf(self, x, *, counts=False):
        """The private fraction of rows ``<= x`` (or their count), non-decreasing in ``x``.

        Post-processing of the release (no privacy cost, any number of
        points): the monotone cumulative counts at the segment ends
        (isotonic regression of the prefix answers, clipped at 0), linear
        inside each segment (its count spread uniformly over the segment's
        grid points); see :mod:`pydp_synopsis.quantiles`.

        Parameters
        ----------
        x : scalar or array_like
            Points of the domain in the synopsis's units (as ``count``'s
            ``hi``: integers, or dates, times, decimals, ISO strings for a
            synopsis built in user units).
        counts : bool
            Return ``F(x)``, the private count of rows ``<= x``, instead of
            ``F(x) / N`` (``N`` the private total).

        Returns
        -------
        numpy.ndarray of float64
            Same shape as ``x`` (a 0-d input gives a float64 scalar); the
            fraction is 1 at the domain's ``hi``.

        Raises
        ------
        DomainError
            A point outside the domain, or a private total that is not
            positive (no distribution).
        TypeError
            Points of the wrong type for the column (a float for an integer
            synopsis, a number for a date synopsis).

        Notes
        -----
        O(m + q log m): one C call for the m prefix answers, the isotonic fit
        in C, a vectorised search per point.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = ps.IntervalSynopsis.build(list(range(1000)), domain=(0, 999), epsilon=1e6,
        ...                               rng=ps.Rng(seed=1))   # seed: tests only
        >>> [round(float(v), 2) for v in s.cdf([249, 999])]
        [0.25, 1.0]
        """
        if not isinstance(counts, (bool, np.bool_)):
            raise TypeError(f"counts must be a bool, not {type(counts).__name__}")
        off = self._grid(x, "x")
        shape = np.shape(x)              # a scalar (a str, a date) gives a scalar
        off = off.reshape(-1)
        starts, widths, cum = self._cumulative()
        i = self.partition.lookup.of(off).astype(np.intp)
        frac = (off - starts[i]).astype(np.float64) + 1.0
        f = np.minimum(cum[i] + (cum[i + 1] - cum[i]) * (frac / widths[i]), cum[i + 1])
        if not counts:
            f = f / self._total(cum)
        f = f.reshape(shape)
        return f[()] if f.ndim == 0 else f

    def quantile(self, q):
        """The private ``q``-quantiles of the column, in its units; non-decreasing in ``q``.

        The smallest grid point ``x`` of the domain with ``F(x) >= q N``
        (``q = 0``: the smallest with ``F(x) > 0``), for the monotone private
        CDF of :meth:`cdf` (numpy's ``"inverted_cdf"`` rule on the
        distribution whose segments spread their counts uniformly over
        their grid points).  Post-processing: free in privacy, whatever the
        number of quantiles (where a quantile mechanism spends budget per
        quantile).

        Parameters
        ----------
        q : float or array_like of float
            In ``[0, 1]``.

        Returns
        -------
        numpy.ndarray
            Same shape as ``q`` (a scalar for a scalar): int64 (uint64 for a
            domain beyond int64) for an integer synopsis, ``datetime64`` for
            dates and times (UTC for a column with a time zone), float64 for
            decimals (the grid point's value; with a resolution, its bin's
            lower end).

        Raises
        ------
        ParameterError
            ``q`` outside ``[0, 1]`` or NaN (before anything is computed).
        TypeError
            ``q`` not real.
        DomainError
            The private total is not positive.

        Notes
        -----
        O(m + q log m).  The rank error (``|rank(answer) - q n| / n``) is at
        most the CDF's error at the answer, divided by ``n``:
        docs/guide/quantiles.md.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = ps.IntervalSynopsis.build(list(range(1000)), domain=(0, 999), epsilon=1e6,
        ...                               rng=ps.Rng(seed=1))   # seed: tests only
        >>> [abs(int(v) - t) <= 2 for v, t in zip(s.quantile([0.1, 0.5, 0.9]), (99, 499, 899))]
        [True, True, True]
        """
        qs = check_fractions(q)
        shape = qs.shape
        qs = qs.reshape(-1)
        starts, widths, cum = self._cumulative()
        total = self._total(cum)
        t = qs * total
        m = widths.size
        # the first segment whose cumulative count reaches t (q = 0: exceeds 0)
        seg = np.where(qs > 0, np.searchsorted(cum[1:], t, side="left"),
                       np.searchsorted(cum[1:], 0.0, side="right"))
        seg = np.minimum(seg, m - 1)                  # t == total rounding: the last one
        mass = cum[seg + 1] - cum[seg]
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.ceil((t - cum[seg]) / mass * widths[seg]) - 1.0
        k = np.where((qs > 0) & (mass > 0), k, 0.0)
        k = np.clip(np.nan_to_num(k, nan=0.0), 0.0, _LAST_BELOW_2_64).astype(np.uint64)
        k = np.minimum(k, self._ends[seg] - starts[seg])     # exact: the segment's last point
        out = self._user_values(starts[seg] + k).reshape(shape)
        return out[()] if out.ndim == 0 else out

    def histogram(self, bins, *, confidence=None):
        """Private counts per bin, like :func:`numpy.histogram`: ``(counts, edges)``.

        Parameters
        ----------
        bins : int or array_like
            An int in ``[1, min(2**20, domain width)]``: that many equal-width
            bins over the domain's grid (widths differ by at most one grid
            point); or the edges in the synopsis's units, strictly increasing
            on its grid, inside the domain.  Bins are half-open ``[e_j,
            e_{j+1})``, the last closed ``[e_{B-1}, e_B]`` (numpy's rule).
        confidence : float, optional
            Also return each bin's error bars at this confidence
            (:meth:`confidence_intervals` of the bins, ``nonnegative=True``:
            per bin, not simultaneous).

        Returns
        -------
        counts : numpy.ndarray of float64
            One per bin: the synopsis's answers for the bins, clipped at 0
            (those of ``count_many(..., nonnegative=True)``).
        edges : numpy.ndarray
            ``B + 1`` edges in the synopsis's units (as :meth:`quantile`
            returns values).
        bars : ErrorBars
            With ``confidence``: ``(counts, edges, bars)``, ``bars.answer ==
            counts``.

        Raises
        ------
        ParameterError
            ``bins`` out of range, edges not strictly increasing.
        DomainError
            An edge outside the domain.

        Notes
        -----
        O(B log m) for the answers; with ``confidence``, one more pass of
        :meth:`confidence_intervals` (the bins' user-unit corners formatted
        one by one for a column in user units).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = ps.IntervalSynopsis.build(list(range(1000)), domain=(0, 999), epsilon=1e6,
        ...                               rng=ps.Rng(seed=1))   # seed: tests only
        >>> counts, edges = s.histogram(4)
        >>> [round(float(c)) for c in counts], edges.tolist()
        ([250, 250, 250, 250], [0, 250, 500, 750, 999])
        """
        lo, hi = self.domain
        width = hi - lo + 1
        if isinstance(bins, numbers.Integral) and not isinstance(bins, (bool, np.bool_)):
            b = check_int(bins, "bins", 1, min(MAX_BINS, width))
            cuts = np.array([(width * j) // b for j in range(b)] + [width - 1], dtype=object)
            edges = np.array([int(c) for c in cuts.tolist()], dtype=np.uint64)
        else:
            edges = self._edges(bins)
        starts = edges[:-1]
        stops = np.concatenate((edges[1:-1] - np.uint64(1), edges[-1:]))
        user_edges = self._user_values(edges)
        if confidence is None:
            counts = np.maximum(self._answers(starts, stops), 0.0)
            return counts, user_edges
        bars = self.confidence_intervals(self._corners(starts), self._corners(stops),
                                         confidence, nonnegative=True)
        return bars.answer, user_edges, bars

    def _edges(self, bins):
        """User edges -> checked, strictly increasing uint64 offsets."""
        if np.ndim(bins) != 1 or not 2 <= np.size(bins) <= MAX_BINS + 1:
            raise ParameterError(f"bins must be an int or a 1-D array of 2 to {MAX_BINS + 1} "
                                 f"edges, got shape {np.shape(bins)}")
        col = self.column
        ints = bins if col.is_plain else col.to_int(bins, "bins", "lo")
        off = np.ascontiguousarray(as_offsets(ints, self.domain, "bins"), dtype=np.uint64)
        if not (off[1:] > off[:-1]).all():
            raise ParameterError("bins: the edges must be strictly increasing on the "
                                 "column's grid")
        return off

    def _corners(self, offsets):
        """uint64 offsets -> query bounds as the synopsis takes them (user units)."""
        lo, hi = self.domain
        col = self.column
        if col.is_plain:
            if hi <= np.iinfo(np.int64).max:
                return offsets.view(np.int64) + np.int64(lo)
            return offsets + np.uint64(lo)
        ints = offsets.view(np.int64) + np.int64(lo)
        return np.array([col.format(v) for v in ints.tolist()], dtype=object)
