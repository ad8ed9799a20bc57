"""Counts per level and per set of levels, for a synopsis over a category column.

:class:`LevelQueries` is mixed into the 1-D synopses (the flat
:class:`~pydp_synopsis.level_histogram.LevelHistogram` and
:class:`~pydp_synopsis.intervals.IntervalSynopsis`): when their column is a
category column (:meth:`pydp_synopsis.columns.Column.category`), a set of
levels is answered as the sum of the answers of its runs of consecutive codes,
and every level's count comes with its error bars.  Everything here is
post-processing of the release: no privacy cost, any number of queries.
"""
import numpy as np

from .errors import ParameterError

__all__ = ["LevelQueries", "level_runs"]


def level_runs(col, levels):
    """The set ``levels`` of the category column ``col``, checked, as runs
    ``(lo_codes, hi_codes)`` of consecutive codes (int64 arrays).

    >>> from pydp_synopsis.columns import Column
    >>> [c.tolist() for c in level_runs(Column.category(list("abcde")), ["e", "a", "b", "d"])]
    [[0, 3], [1, 4]]
    """
    if isinstance(levels, (str, bytes)) or not hasattr(levels, "__len__"):
        levels = [levels]
    arr = np.asarray(list(levels), dtype=object)
    if arr.size == 0:
        raise ParameterError("levels must name at least one level, got an empty list")
    codes = np.asarray(col.to_int(arr, "levels", "lo"), dtype=np.int64).ravel()
    codes.sort()
    if (np.diff(codes) == 0).any():
        raise ParameterError("levels must be distinct: a level is named twice")
    starts = np.flatnonzero(np.diff(codes, prepend=codes[0] - 2) != 1)
    ends = np.append(starts[1:], codes.size) - 1
    return codes[starts], codes[ends]


class LevelQueries:
    """``levels``, ``count_levels`` and ``counts_by_level`` of a synopsis whose
    ``column`` is a category column (needs ``count_many`` and
    ``confidence_intervals``)."""

    __slots__ = ()

    #: True when the released counts of different levels have independent noise
    #: (the flat histogram): the std of a set's answer is then exact.
    _independent_levels = False

    def _category(self):
        col = self.column
        if col.kind != "category":
            raise TypeError(f"counts by level need a category column; this synopsis's column "
                            f"is {col.describe()}")
        return col

    @property
    def levels(self):
        """The levels in code order (``other`` last when given); None unless the
        column is a category column."""
        return self.column.all_levels

    def _runs(self, levels):
        """The checked set of levels as runs ``(lo_codes, hi_codes)`` of consecutive codes."""
        return level_runs(self._category(), levels)

    def count_levels(self, levels, *, return_std=False):
        """Noisy count of the rows whose value is one of ``levels`` (a float).

        Parameters
        ----------
        levels : str, int or sequence of them
            Distinct levels of the category column (``other`` included
            when the column has one); any order.
        return_std : bool
            Also return the noise standard deviation of the answer: exact
            for a flat histogram (independent noise per level); for a tree
            over the codes exact when the levels are consecutive (one
            range), else an upper bound (the sum of the runs' stds).

        Returns
        -------
        float, or (float, float) with ``return_std``

        Notes
        -----
        O(L) for the set, one range query per run of consecutive codes.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> h = ps.LevelHistogram.build(["a", "b", "b", "c"], levels=["a", "b", "c"],
        ...                             epsilon=1e6, rng=ps.Rng(seed=1))   # seed: tests only
        >>> h.count_levels(["c", "a"])
        2.0
        """
        lo, hi = self._runs(levels)
        col = self.column
        answers, std = self.count_many(col.values(lo), col.values(hi), return_std=True)
        total = float(answers.sum())
        if not return_std:
            return total
        spread = float(np.sqrt((std ** 2).sum())) if self._independent_levels or std.size == 1 \
            else float(std.sum())
        return total, spread

    def counts_by_level(self, confidence=0.95, *, nonnegative=False):
        """Every level's noisy count with its error bars.

        Parameters
        ----------
        confidence : float
            Of each level's interval (as ``confidence_intervals``).
        nonnegative : bool
            Clip counts and ``low`` at 0 (post-processing).

        Returns
        -------
        (levels, counts, bars)
            The levels in code order (a tuple), their noisy counts (float64)
            and the :class:`~pydp_synopsis.errorbars.ErrorBars` of each.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> h = ps.LevelHistogram.build(["a", "b", "b"], levels=["a", "b"], epsilon=1e6,
        ...                             rng=ps.Rng(seed=1))   # seed: tests only
        >>> levels, counts, bars = h.counts_by_level()
        >>> levels, counts.tolist()
        (('a', 'b'), [1.0, 2.0])
        """
        col = self._category()
        every = np.array(col.all_levels, dtype=object)
        bars = self.confidence_intervals(every, every, confidence, nonnegative=nonnegative)
        return col.all_levels, bars.answer, bars
