"""Counts over a set of levels of a rectangle synopsis's category axis: post-processing.

A rectangle synopsis with a category axis (:meth:`pydp_synopsis.columns.Column.category`,
e.g. carrier x date) answers a box per run of consecutive level codes: the set
``{AA, UA, WN}`` of levels coded 0, 2, 3 is the boxes ``[0, 0]`` and ``[2, 3]``
on that axis (a range on every other axis), and the count of the set is the sum
of their answers.  Released numbers and public arguments only: no privacy cost.

The noise std of a sum of boxes: exact for one run (the box's own, computed
by the structure in C); for several runs, the sum of the runs' stds, an upper
bound by the triangle inequality (the boxes may share noisy nodes or cells, so
their noise is not independent), as the 1-D tree over the codes reports
(:class:`~pydp_synopsis.level_queries.LevelQueries`).
"""
import numpy as np

from ..errors import ParameterError
from ..level_queries import level_runs
from .marginals import axis_index

__all__ = ["RectangleLevels"]


class RectangleLevels:
    """``count_levels`` and ``counts_by_level`` of a rectangle synopsis (a mixin of
    :class:`~pydp_synopsis.RectangleSynopsis`, no state of its own)."""

    __slots__ = ()

    def _category_axis(self, axis):
        """The index of the category axis: ``axis`` checked, or the only category axis."""
        cats = [a for a, col in enumerate(self.columns) if col.kind == "category"]
        if axis is None:
            if len(cats) != 1:
                raise ParameterError(f"count_levels needs a category axis; this synopsis has "
                                     f"{len(cats) or 'no'} category axes"
                                     f"{': give axis=' if cats else ''}")
            return cats[0]
        a = axis_index(self.columns, axis)
        if a not in cats:
            raise ParameterError(f"axis {axis!r} is not a category axis (it is "
                                 f"{self.columns[a].describe()})")
        return a

    def _other_bounds(self, a, values, name, which):
        """The bounds of the axes other than ``a`` in user units (their whole domain for
        None), checked for length."""
        others = [b for b in range(self.dims) if b != a]
        if values is None:
            return [self.user_domain[b][which] for b in others]
        if isinstance(values, (str, bytes)) or np.ndim(values) != 1 or \
                len(values) != len(others):
            raise ParameterError(f"{name} must give one value per axis other than the category "
                                 f"axis ({len(others)}), got {values!r}")
        return list(values)

    def _level_boxes(self, a, run_lo, run_hi, lo, hi):
        """Boxes in user units: ``[run_lo[i], run_hi[i]]`` on the category axis ``a``,
        ``[lo, hi]`` on the others."""
        col = self.columns[a]
        box_lo, box_hi = (np.empty((run_lo.size, self.dims), dtype=object) for _ in range(2))
        others = [b for b in range(self.dims) if b != a]
        box_lo[:, others] = self._other_bounds(a, lo, "lo", 0)
        box_hi[:, others] = self._other_bounds(a, hi, "hi", 1)
        box_lo[:, a], box_hi[:, a] = col.values(run_lo), col.values(run_hi)
        return box_lo, box_hi

    def counts_by_level(self, lo=None, hi=None, *, axis=None, confidence=0.95,
                        nonnegative=False):
        """Every level's noisy count (the other axes within ``[lo, hi]``) with its error bars.

        Parameters
        ----------
        lo, hi, axis
            As :meth:`count_levels`.
        confidence : float
            Of each level's interval (:meth:`confidence_intervals` of its box).
        nonnegative : bool
            Clip counts and ``low`` at 0 (post-processing).

        Returns
        -------
        (levels, counts, bars)
            The levels in code order, their counts (float64) and
            :class:`~pydp_synopsis.errorbars.ErrorBars`.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> cols = [ps.Column.category(["AA", "DL", "UA"], name="carrier"),
        ...         ps.Column.integer("hour")]
        >>> pts = [["AA", 3], ["UA", 5], ["UA", 9], ["DL", 5]]
        >>> s = ps.RectangleSynopsis.build(pts, domain=[("AA", "UA"), (0, 23)], columns=cols,
        ...                                epsilon=1e6, threshold=0, structure="multitree",
        ...                                rng=ps.Rng(seed=1))   # seed: tests only
        >>> levels, counts, bars = s.counts_by_level()
        >>> levels, [round(c) for c in counts]
        (('AA', 'DL', 'UA'), [1, 1, 2])
        """
        a = self._category_axis(axis)
        col = self.columns[a]
        codes = np.arange(len(col.all_levels), dtype=np.int64)
        box_lo, box_hi = self._level_boxes(a, codes, codes, lo, hi)
        bars = self.confidence_intervals(box_lo, box_hi, confidence, nonnegative=nonnegative)
        return col.all_levels, bars.answer, bars

    def count_levels(self, levels, lo=None, hi=None, *, axis=None, return_std=False):
        """Noisy count of the rows whose category is one of ``levels`` and whose other
        coordinates lie in ``[lo, hi]`` (a float).

        Parameters
        ----------
        levels : str, int or sequence of them
            Distinct levels of the category axis (``other`` included when the
            column has one); any order.
        lo, hi : sequence, optional
            Inclusive bounds on the other axes, in axis order without the
            category axis, in their units (dates, decimals, ISO strings);
            None: the whole domain of every other axis.
        axis : int or str, optional
            The category axis (index or column name); needed only when the
            synopsis has more than one.
        return_std : bool
            Also return the noise std: exact when the levels are consecutive
            codes (one box), else an upper bound (the sum of the boxes' stds).

        Returns
        -------
        float, or (float, float) with ``return_std``

        Raises
        ------
        ParameterError, TypeError, DomainError
            No category axis, a bad ``axis``, a name that is no level, bounds
            of the wrong length, type or order (before anything is computed).

        Notes
        -----
        One box per run of consecutive codes, answered as :meth:`count_many`.
        Post-processing of the release: no privacy cost.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> cols = [ps.Column.category(["AA", "DL", "UA"], name="carrier"),
        ...         ps.Column.integer("hour")]
        >>> pts = [["AA", 3], ["UA", 5], ["UA", 9], ["DL", 5]]
        >>> s = ps.RectangleSynopsis.build(pts, domain=[("AA", "UA"), (0, 23)], columns=cols,
        ...                                epsilon=1e6, threshold=0, structure="multitree",
        ...                                rng=ps.Rng(seed=1))   # seed: tests only
        >>> round(s.count_levels(["UA", "AA"])), round(s.count_levels(["UA", "AA"], [4], [23]))
        (3, 2)
        """
        if not isinstance(return_std, (bool, np.bool_)):
            raise TypeError(f"return_std must be a bool, not {type(return_std).__name__}")
        a = self._category_axis(axis)
        run_lo, run_hi = level_runs(self.columns[a], levels)
        box_lo, box_hi = self._level_boxes(a, run_lo, run_hi, lo, hi)
        answers, std = self.count_many(box_lo, box_hi, return_std=True)
        total = float(answers.sum())
        return (total, float(std.sum())) if return_std else total
