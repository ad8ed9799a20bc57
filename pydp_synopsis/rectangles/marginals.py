"""The marginal CDF and quantiles of one axis of a rectangle synopsis: post-processing.

A :class:`~pydp_synopsis.RectangleSynopsis` answers every box, so it holds a
private distribution of each column on its own: the boxes that span the whole
domain of every other axis and a prefix ``[lo, x]`` of axis ``a``.  The
marginal of axis ``a`` is read exactly as an interval synopsis reads its CDF
(:mod:`pydp_synopsis.quantiles`, whose code this module reuses through a view
of the axis, :class:`AxisMarginal`):

1. the synopsis's answers for the prefix boxes ending at each released
   segment end of axis ``a``'s private partition (the cut points every
   structure keeps: the adaptive grid's cells and the multi-tree's nodes are
   unions of these segments), full extent on the other axes;
2. their non-decreasing least-squares fit (pool adjacent violators in C),
   clipped at 0;
3. each segment's count spread uniformly over its grid points (integers,
   dates, times, decimals, or the codes of a category axis).

Nothing is drawn and no data is read: released numbers and public
arguments only, so any number of CDF points and quantiles of any axis cost
no privacy.

References
----------
.. [BBBB72] R. E. Barlow, D. J. Bartholomew, J. M. Bremner, H. D. Brunk,
   "Statistical Inference under Order Restrictions", Wiley 1972, section 1.2.
.. [DNRR] Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for
   Rectangle Queries via Private Partitions", ASIACRYPT 2015, section 3.3.
"""
import numbers

import numpy as np

from ..errors import ParameterError
from ..quantiles import IntervalQuantiles

__all__ = ["AxisMarginal", "RectangleMarginals", "axis_index"]


def axis_index(columns, axis):
    """The index of ``axis`` (an int in ``[0, c)`` or the name of one of ``columns``).

    >>> from pydp_synopsis.columns import Column
    >>> axis_index((Column.integer("x"), Column.date("day")), "day")
    1
    """
    c = len(columns)
    names = [col.name for col in columns]
    if isinstance(axis, str):
        if axis in names and names.count(axis) == 1:
            return names.index(axis)
        shown = ", ".join(repr(n) for n in names if n is not None)
        raise ParameterError(f"axis must be an int in [0, {c - 1}] or a column name"
                             f"{' (' + shown + ')' if shown else ' (the columns have no names)'}"
                             f", got {axis!r}")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an int or a column name, not {type(axis).__name__}")
    if not 0 <= int(axis) < c:
        raise ParameterError(f"axis must be an int in [0, {c - 1}] or a column name, "
                             f"got {int(axis)}")
    return int(axis)


class AxisMarginal(IntervalQuantiles):
    """Axis ``a`` of a rectangle synopsis seen as an interval synopsis of its column:
    what :class:`~pydp_synopsis.quantiles.IntervalQuantiles` reads (the axis's
    partition, column and domain, and the prefix answers)."""

    __slots__ = ("partition", "column", "domain", "_ends", "_synopsis", "_axis")

    def __init__(self, synopsis, a):
        self._synopsis, self._axis = synopsis, a
        self.partition = synopsis.partitions[a]
        self.column = synopsis.columns[a]
        self.domain = tuple(synopsis.domain[a])
        self._ends = np.ascontiguousarray(self.partition.end_offsets, dtype=np.uint64)

    def _answers(self, starts, ends):
        """The answers of the boxes ``[starts, ends]`` on this axis (offsets) spanning
        every other axis's domain."""
        syn = self._synopsis
        q = ends.size
        lo = np.zeros((q, syn.dims), dtype=np.uint64)
        hi = np.empty((q, syn.dims), dtype=np.uint64)
        for b, (d_lo, d_hi) in enumerate(syn.domain):
            hi[:, b] = np.uint64(d_hi - d_lo)
        lo[:, self._axis] = starts
        hi[:, self._axis] = ends
        return syn._mechanism.answer(lo, hi)

    def confidence_intervals(self, lo, hi, confidence=0.95, *, nonnegative=False):
        """The synopsis's per-box intervals of ``[lo, hi]`` on this axis (its units), the
        other axes whole (what ``histogram(bins, confidence=)`` reads)."""
        syn, a = self._synopsis, self._axis
        lo, hi = np.ravel(np.asarray(lo, dtype=object)), np.ravel(np.asarray(hi, dtype=object))
        box_lo = np.empty((lo.size, syn.dims), dtype=object)
        box_hi = np.empty((lo.size, syn.dims), dtype=object)
        for b, (d_lo, d_hi) in enumerate(syn.user_domain):
            box_lo[:, b], box_hi[:, b] = (lo, hi) if b == a else (d_lo, d_hi)
        return syn.confidence_intervals(box_lo, box_hi, confidence, nonnegative=nonnegative)


class RectangleMarginals:
    """``cdf``, ``quantile`` and ``histogram`` of one axis (a mixin of
    :class:`~pydp_synopsis.RectangleSynopsis`, no state of its own)."""

    __slots__ = ()

    def marginal(self, axis):
        """The :class:`AxisMarginal` of ``axis`` (an int or a column name)."""
        return AxisMarginal(self, axis_index(self.columns, axis))

    def cdf(self, x, *, axis, counts=False):
        """The private fraction of rows whose column ``axis`` is ``<= x`` (or their count).

        The marginal of one axis (every other axis over its whole domain):
        the prefix boxes' answers at the axis's released segment ends, made
        non-decreasing (isotonic fit, clipped at 0), linear inside a segment;
        as :meth:`IntervalSynopsis.cdf <pydp_synopsis.IntervalSynopsis.cdf>`
        (:mod:`pydp_synopsis.rectangles.marginals`).  Post-processing: no
        privacy cost, any number of points and axes.

        Parameters
        ----------
        x : scalar or array_like
            Points of that axis's domain in its units (integers, dates,
            times, decimals, ISO strings, or levels of a category axis).
        axis : int or str
            The axis: its index, or the name of its column (:attr:`columns`).
        counts : bool
            Return the private count of rows ``<= x`` instead of the fraction.

        Returns
        -------
        numpy.ndarray of float64
            Same shape as ``x``; the fraction is 1 at the axis's ``hi``.

        Raises
        ------
        ParameterError, TypeError
            A bad ``axis`` (before anything is computed); points of the wrong
            type for the column.
        DomainError
            A point outside the axis's domain, or a private total that is not
            positive.

        Notes
        -----
        O(m + q log m) for an axis of m segments: m box answers (one C call),
        the isotonic fit in C, a search per point.

        Examples
        --------
        >>> import numpy as np, pydp_synopsis as ps
        >>> pts = np.stack([np.arange(1000), np.arange(1000) % 7], axis=1)
        >>> s = ps.RectangleSynopsis.build(pts, domain=[(0, 999), (0, 6)], epsilon=1e6,
        ...                                rng=ps.Rng(seed=1))   # seed: tests only
        >>> [round(float(v), 2) for v in s.cdf([249, 999], axis=0)]
        [0.25, 1.0]
        """
        return self.marginal(axis).cdf(x, counts=counts)

    def quantile(self, q, *, axis):
        """The private ``q``-quantiles of column ``axis``, in its units; non-decreasing in ``q``.

        The smallest grid point ``x`` of the axis with ``F(x) >= q N`` for the
        marginal CDF of :meth:`cdf` (numpy's ``"inverted_cdf"`` rule), as
        :meth:`IntervalSynopsis.quantile <pydp_synopsis.IntervalSynopsis.quantile>`.
        Post-processing: free in privacy whatever the number of quantiles.

        Parameters
        ----------
        q : float or array_like of float
            In ``[0, 1]``.
        axis : int or str
            The axis: its index, or the name of its column.

        Returns
        -------
        numpy.ndarray
            Same shape as ``q``: int64 (uint64 past int64) for an integer
            axis, ``datetime64`` for dates and times, float64 for decimals,
            levels for a category axis.

        Raises
        ------
        ParameterError, TypeError
            A bad ``axis`` or ``q`` (outside ``[0, 1]``, NaN, not real),
            before anything is computed.
        DomainError
            The private total is not positive.

        Examples
        --------
        >>> import numpy as np, pydp_synopsis as ps
        >>> pts = np.stack([np.arange(1000), np.arange(1000) % 7], axis=1)
        >>> s = ps.RectangleSynopsis.build(pts, domain=[(0, 999), (0, 6)], epsilon=1e6,
        ...                                rng=ps.Rng(seed=1))   # seed: tests only
        >>> [abs(int(v) - t) <= 2 for v, t in zip(s.quantile([0.1, 0.5], axis=0), (99, 499))]
        [True, True]
        """
        return self.marginal(axis).quantile(q)

    def histogram(self, bins, *, axis, confidence=None):
        """Private counts per bin of column ``axis`` (the other axes whole), like
        :meth:`IntervalSynopsis.histogram <pydp_synopsis.IntervalSynopsis.histogram>`:
        ``(counts, edges)``, or ``(counts, edges, bars)`` with ``confidence``.

        Each bin's count is the synopsis's answer for its box, clipped at 0; the
        bars are :meth:`confidence_intervals` of the boxes (per bin).  Post-processing.

        Examples
        --------
        >>> import numpy as np, pydp_synopsis as ps
        >>> pts = np.stack([np.arange(1000), np.arange(1000) % 7], axis=1)
        >>> s = ps.RectangleSynopsis.build(pts, domain=[(0, 999), (0, 6)], epsilon=1e6,
        ...                                rng=ps.Rng(seed=1))   # seed: tests only
        >>> counts, edges = s.histogram(4, axis=0)
        >>> [round(float(c)) for c in counts], edges.tolist()
        ([250, 250, 250, 250], [0, 250, 500, 750, 999])
        """
        return self.marginal(axis).histogram(bins, confidence=confidence)
