"""Counts by category: a flat noisy histogram over a public list of levels, and the
rule that picks it or an interval synopsis over the levels' codes.

The flat histogram (:class:`LevelHistogram`) releases one count per level,
each plus independent discrete Laplace noise of scale ``1 / epsilon``.  One
row falls in exactly one level (a value outside the levels in ``other``, or
refused), so adding or removing a row changes one count by one: the vector of
counts has l1 sensitivity 1 and the release is epsilon-DP (the Laplace
mechanism, [DMNS06]_; discrete noise, [GRS09]_).  Every answer -- a level, a
set of levels, a range of consecutive levels -- is a sum of released counts:
post-processing.

:func:`category_synopsis` picks the flat histogram or an
:class:`~pydp_synopsis.intervals.IntervalSynopsis` over the codes ``0 .. L -
1`` by a public rule of the number of levels alone (:data:`FLAT_MAX_LEVELS`;
docs/guide/categories.md has the measurements).  Both noise variances scale as
``1 / epsilon**2``, so epsilon does not move the crossover: the flat
histogram's per-level error is the smallest any unbiased release of the
counts can have at sensitivity 1, and a tree pays ``log L`` levels of noise
per count to answer long ranges of consecutive levels better, which only
matters once ranges span hundreds of levels.

References
----------
.. [DMNS06] Dwork, McSherry, Nissim, Smith, "Calibrating Noise to Sensitivity
   in Private Data Analysis", TCC 2006 (the Laplace mechanism, histograms).
.. [GRS09] Ghosh, Roughgarden, Sundararajan, "Universally Utility-Maximizing
   Privacy Mechanisms", STOC 2009 (the geometric, i.e. discrete Laplace, mechanism).
"""
import math

import numpy as np

from . import persist
from .aggregates import check_counts
from .budget import charge, describe
from .columns import Column
from .errorbars import METHODS, assemble, noise_std
from .errors import DomainError, FormatError, ParameterError
from .intervals import IntervalSynopsis
from .level_queries import LevelQueries
from .noise import discrete_laplace
from .params import check_beta, check_bool, check_choice, exact_epsilon, exact_scale, is_int
from .persist import int64_array, state_fraction
from .rng import resolve_rng
from .sources import Source, as_source, is_source
from .tails import laplace_sum_tail, laplace_weighted_tail
from .units import prepare_build

__all__ = ["LevelHistogram", "category_synopsis", "category_column", "uses_flat", "check_not_dask",
           "FLAT_MAX_LEVELS", "STRUCTURES", "KIND"]

#: The public rule of :func:`category_synopsis`: a flat histogram up to this many
#: levels (``other`` included), an interval synopsis over the codes above.
FLAT_MAX_LEVELS = 1024
STRUCTURES = ("auto", "flat", "tree")
KIND = "level-histogram"
FORMAT = 1


def category_column(levels, other=None, name=None):
    """``levels`` as a category :class:`Column` (a category Column is returned
    as is; ``other``/``name`` then belong to it)."""
    if isinstance(levels, Column):
        if levels.kind != "category":
            raise ParameterError(f"levels must be a list of levels or a category Column, got a "
                                 f"{levels.describe()} column")
        if other is not None or name is not None:
            raise ParameterError("give other= and name= to Column.category, not beside it")
        return levels
    return Column.category(levels, other=other, name=name)


def uses_flat(column, structure="auto"):
    """The public rule: True when ``structure`` (checked) and the category ``column``'s
    number of levels (``other`` included) call for a flat histogram."""
    structure = check_choice(structure, "structure", STRUCTURES)
    return structure == "flat" or (structure == "auto" and
                                   len(column.all_levels) <= FLAT_MAX_LEVELS)


def check_not_dask(values):
    """ParameterError for a dask collection: its partitions are read as numbers, so a
    category column must come from a Source that maps it (``units=[column]``)."""
    if is_source(values) and not isinstance(values, Source):
        raise ParameterError("a dask collection is not read as a category column: read the "
                             "files with sources.files(..., units=[Column.category(...)]) or "
                             "compute it to pandas")


class LevelHistogram(LevelQueries):
    """Counts per level of a category column: one noisy count per public level (epsilon-DP).

    Build it with :meth:`build` (or :func:`category_synopsis`, which picks
    it for up to :data:`FLAT_MAX_LEVELS` levels).  Each released count is the
    true count plus independent discrete Laplace noise of scale ``b = 1 /
    epsilon`` (variance ``2 q / (1 - q)**2``, ``q = exp(-1/b)``), unbiased;
    a set or range of ``k`` levels sums ``k`` of them (std ``sqrt(k)`` times
    a level's).  See the module doc for the privacy argument.

    >>> import pydp_synopsis as ps
    >>> h = ps.LevelHistogram.build(["AA", "WN", "WN", "UA"], levels=["AA", "UA", "WN"],
    ...                             epsilon=1e6, rng=ps.Rng(seed=1))   # seed: tests only
    >>> h.count("UA", "WN"), h.count_levels(["AA", "WN"])
    (3.0, 3.0)

    Attributes
    ----------
    column : Column
        The category column (its levels are public and saved with the release).
    epsilon : Fraction
        The privacy loss (rounded down to an exact rational).
    noise_scale : Fraction
        ``1 / epsilon``, the discrete Laplace scale of every released count.
    released : numpy.ndarray of int64
        The noisy counts, in code order (a copy).
    """

    __slots__ = ("column", "epsilon", "noise_scale", "_released", "_prefix")
    _independent_levels = True

    def __init__(self):
        raise TypeError("use LevelHistogram.build(...), category_synopsis(...) or "
                        "pydp_synopsis.load(path)")

    @classmethod
    def _from_release(cls, column, epsilon, released):
        """The one constructor (build and load)."""
        self = cls.__new__(cls)
        self.column, self.epsilon = column, epsilon
        self.noise_scale = 1 / epsilon
        self._released = np.ascontiguousarray(released, dtype=np.int64)
        self._prefix = np.concatenate(([0], np.cumsum(self._released))).astype(np.float64)
        return self

    @classmethod
    def build(cls, values, *, levels, epsilon, other=None, name=None, rng=None, budget=None,
              counts=None, dropna=False):
        """Release the noisy count of every level of ``values`` (epsilon-DP).

        Parameters
        ----------
        values : array_like, pandas Series (object, str or categorical), or a Source
            One value per row; a :class:`~pydp_synopsis.sources.Source` must
            read the column with ``units=[Column.category(...)]`` (its codes).
        levels : sequence of str (or int), or a category Column
            The public, ordered, distinct levels.
        epsilon : float or Fraction
            Privacy loss (rounded down to an exact rational; at least 2**-48).
        other : str or int, optional
            One more level counting every value outside ``levels``; None: such
            a value is refused (InputError naming the column, never the value).
        name : str, optional
            The column's name (saved, shown by ``info``).
        rng : Rng, optional
            Randomness (OS-seeded by default; seeds are for tests only).
        budget : Budget, optional
            Charged ``epsilon`` after every check, before any noise is drawn.
        counts : array_like of int, optional
            Multiplicities, one per value (as ``IntervalSynopsis.build``).
        dropna : bool
            Drop the rows whose value is missing (None, NaN, ``pandas.NA``, empty
            or ``"NA"``-like strings) instead of refusing them: a per-row filter.

        Returns
        -------
        LevelHistogram

        Notes
        -----
        O(n log L) to map the values to codes (one vectorised search), O(L)
        noise draws.
        """
        col = category_column(levels, other, name)
        check_not_dask(values)
        eps = exact_epsilon(epsilon)
        scale = exact_scale(1 / eps, "1 / epsilon")
        eps = 1 / scale             # the scale rounded up: the loss never exceeds epsilon asked
        dropna = check_bool(dropna, "dropna")
        rng = resolve_rng(rng)
        size = len(col.all_levels)
        domain = (0, size - 1)
        what = describe("LevelHistogram", levels=size, epsilon=eps)
        source = as_source(values, counts, dropna)
        if source is not None:
            true = np.zeros(size, dtype=np.int64)
            with source.prepare([domain]) as prepared:
                for offsets, cnt in prepared.axis(0):
                    np.add.at(true, np.asarray(offsets, dtype=np.int64), cnt)
                charge(budget, eps, what)
        else:
            codes, _, counts, _ = prepare_build(values, [(col.all_levels[0], col.all_levels[-1])],
                                                counts=counts, columns=(col,), dropna=dropna)
            codes = np.asarray(codes, dtype=np.int64).ravel()
            weights = check_counts(counts, codes.shape)
            if weights is None:
                true = np.bincount(codes, minlength=size).astype(np.int64)
            else:
                true = np.zeros(size, dtype=np.int64)
                np.add.at(true, codes, weights.ravel())
            charge(budget, eps, what)
        released = true + discrete_laplace(scale, size, rng=rng)
        return cls._from_release(col, eps, released)

    # ---------------------------------------------------------------- queries
    def __repr__(self):
        return (f"LevelHistogram(levels={len(self)}, epsilon={self.epsilon}, "
                f"column={self.column.name!r})")

    def __len__(self):
        """The number of levels (``other`` included)."""
        return len(self._released)

    @property
    def domain(self):
        """The codes' inclusive ``(0, L - 1)``."""
        return (0, len(self) - 1)

    @property
    def user_domain(self):
        """The first and last level."""
        return (self.column.all_levels[0], self.column.all_levels[-1])

    @property
    def released(self):
        """The noisy counts in code order (a copy)."""
        return self._released.copy()

    def _codes(self, lo, hi):
        lo_c = np.asarray(self.column.to_int(np.asarray(lo, dtype=object), "lo", "lo"))
        hi_c = np.asarray(self.column.to_int(np.asarray(hi, dtype=object), "hi", "hi"))
        if lo_c.shape != hi_c.shape:
            raise DomainError(f"lo and hi must have the same shape, got {lo_c.shape} and "
                              f"{hi_c.shape}")
        bad = lo_c > hi_c
        if bad.any():
            raise DomainError(f"lo must come before hi in the levels' order, got lo after hi "
                              f"at index {int(np.argmax(bad.ravel()))}")
        return lo_c.astype(np.int64), hi_c.astype(np.int64)

    def count_many(self, lo, hi, *, return_std=False, nonnegative=False):
        """Noisy counts of the ranges of consecutive levels ``[lo[q], hi[q]]`` (level names).

        ``return_std``: also the exact noise std, ``sqrt(k Var(b))`` for a range of
        ``k`` levels.  ``nonnegative``: answers clipped at 0 (post-processing).
        O(q log L).
        """
        return_std = check_bool(return_std, "return_std")
        nonnegative = check_bool(nonnegative, "nonnegative")
        lo_c, hi_c = self._codes(lo, hi)
        out = self._prefix[hi_c + 1] - self._prefix[lo_c]
        if nonnegative:
            out = np.maximum(out, 0.0)
        if not return_std:
            return out
        k = (hi_c - lo_c + 1).astype(np.float64).reshape(-1, 1)
        return out, noise_std(k, [self.noise_scale]).reshape(out.shape)

    def count(self, lo, hi):
        """Noisy count of the levels ``lo`` to ``hi`` (inclusive, in the levels' order)."""
        for name, v in (("lo", lo), ("hi", hi)):
            if not isinstance(v, str) and not is_int(v):
                raise TypeError(f"{name} must be a level (str or int), not {type(v).__name__}")
        return float(self.count_many([lo], [hi])[0])

    def confidence_intervals(self, lo, hi, confidence=0.95, *, method="rigorous",
                             nonnegative=False):
        """Per-range intervals holding each true count with probability >= ``confidence``.

        No bias (every level has its own count): ``noise`` is the Chernoff
        tail of a sum of ``k`` discrete Laplace terms with the exact MGF
        (:func:`~pydp_synopsis.tails.laplace_weighted_tail`), two-sided.
        ``method`` is accepted for the synopses' convention: with no bias to
        model, ``"calibrated"`` is the rigorous interval (``bars.method`` says so).
        """
        check_choice(method, "method", METHODS)
        conf = check_beta(confidence, "confidence")
        nonnegative = check_bool(nonnegative, "nonnegative")
        lo_c, hi_c = self._codes(lo, hi)
        shape = lo_c.shape
        lo_c, hi_c = lo_c.ravel(), hi_c.ravel()
        answer = self._prefix[hi_c + 1] - self._prefix[lo_c]
        k = (hi_c - lo_c + 1).astype(np.float64).reshape(-1, 1)
        noise = laplace_weighted_tail(k, np.ones_like(k), [self.noise_scale],
                                      math.log(2.0 / (1.0 - conf)))
        return assemble(answer, noise_std(k, [self.noise_scale]), noise,
                        np.zeros_like(answer), shape, nonnegative)

    def error_bound(self, confidence=0.95):
        """One bound for every range of consecutive levels at once.

        With probability ``>= confidence`` every ``|count(lo, hi) - true|`` is
        at most this: the Chernoff tail of a sum of ``L`` terms, union-bounded
        over the ``L (L + 1) / 2`` ranges and both signs.
        """
        conf = check_beta(confidence, "confidence")
        size = len(self)
        ranges = size * (size + 1) // 2
        return laplace_sum_tail(size, self.noise_scale,
                                math.log(2.0 * ranges) - math.log(1.0 - conf))

    # ----------------------------------------------------------- persistence
    def save(self, path, *, mode=None):
        """Write the release to ``path`` (atomic, checksummed): the levels, epsilon
        and the noisy counts.  Load with :func:`pydp_synopsis.load`."""
        persist.write_record(path, *self._to_record()[:3], mode=mode)

    def _to_record(self):
        meta = {"format": FORMAT, "column": self.column.to_record(),
                "epsilon": [self.epsilon.numerator, self.epsilon.denominator]}
        return KIND, meta, {"released": self._released}, None


@persist.register(KIND)
def _load(meta, arrays):
    if meta.get("format") != FORMAT or set(meta) != {"format", "column", "epsilon"} \
            or set(arrays) != {"released"}:
        raise FormatError(f"unknown or malformed {KIND} record")
    col = Column.from_record(meta["column"])
    if col.kind != "category":
        raise FormatError(f"malformed {KIND} record: its column is not a category column")
    eps = state_fraction(meta["epsilon"], "epsilon")
    if exact_epsilon(eps) != eps or exact_scale(1 / eps) != 1 / eps:
        raise FormatError(f"malformed {KIND} record: epsilon out of range")
    released = int64_array(arrays["released"], "released", len(col.all_levels))
    return LevelHistogram._from_release(col, eps, released)


def category_synopsis(values, *, levels, epsilon, other=None, name=None, structure="auto",
                      rng=None, budget=None, counts=None, dropna=False, **options):
    """Counts by category with epsilon-DP: a flat histogram or a tree, by a public rule.

    ``structure="auto"`` (default) releases a :class:`LevelHistogram` when the
    column has at most :data:`FLAT_MAX_LEVELS` levels (``other`` included),
    else an :class:`~pydp_synopsis.intervals.IntervalSynopsis` over the codes
    (``domain`` the first to the last level); ``"flat"`` and ``"tree"`` force
    one.  The rule reads the public number of levels only.  Both answer
    ``count(lo_level, hi_level)``, ``count_levels``, ``counts_by_level``,
    ``confidence_intervals`` and ``error_bound``, and save and load.

    Parameters
    ----------
    values, levels, epsilon, other, name, rng, budget, counts, dropna
        As :meth:`LevelHistogram.build`.
    structure : {"auto", "flat", "tree"}
    **options
        ``IntervalSynopsis.build``'s options (``beta``, ``tree``, ``fanout``,
        ...), for the tree only.

    Returns
    -------
    LevelHistogram or IntervalSynopsis

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> s = ps.category_synopsis(["a", "b", "z"], levels=["a", "b"], other="other",
    ...                          epsilon=1e6, rng=ps.Rng(seed=1))   # seed: tests only
    >>> type(s).__name__, s.count_levels("other")
    ('LevelHistogram', 1.0)
    """
    col = category_column(levels, other, name)
    check_not_dask(values)
    if uses_flat(col, structure):
        if options:
            raise ParameterError(f"{', '.join(sorted(options))}: options of the tree "
                                 f"(structure='tree'), not of a flat histogram")
        return LevelHistogram.build(values, levels=col, epsilon=epsilon, rng=rng,
                                    budget=budget, counts=counts, dropna=dropna)
    every = col.all_levels
    return IntervalSynopsis.build(values, domain=(every[0], every[-1]), columns=col,
                                  epsilon=epsilon, rng=rng, budget=budget, counts=counts,
                                  dropna=dropna, **options)

