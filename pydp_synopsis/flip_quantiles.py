"""A declared handful of quantiles, each released by permute-and-flip: ``private_quantiles``.

An :class:`~pydp_synopsis.IntervalSynopsis` holds a private CDF from which
every quantile is free (:mod:`pydp_synopsis.quantiles`); it spreads its budget
over every range of the domain.  When only a few quantiles will ever be
released, spending the whole budget on them is more accurate:
:func:`private_quantiles` does that.

The mechanism
-------------
**Candidates.** A finite, public list: every point of the domain's grid
(the integers, or the dates, times or decimals they stand for) when it has at
most ``candidates`` points, else ``candidates`` equal-width grid points
``lo + floor(W j / candidates)``, ``j = 0 .. candidates - 1`` (``W`` the
domain's width).

**One quantile** ``q`` (a rank-interval score).  ``q`` is read as the
fraction ``a / b`` in lowest terms nearest to it with ``b <= 10**6``
(``Fraction(q).limit_denominator(10**6)``: 0.25 is 1/4, 0.01 is 1/100).  With
``n`` rows, ``L = #{x < c}`` and ``E = #{x <= c}``, a candidate ``c`` scores
``u(c) = -max(b L - a n, a n - b E, 0)``: ``-b n`` times the distance from the
target rank ``q n`` to ``c``'s rank interval ``[L, E]``, so 0 for every
candidate whose interval holds the target -- a candidate holding many tied rows
(whole minutes) is perfect when the target falls among them.  Where no row sits
on ``c`` (``E = L``) it is Smith's score [Smi11]_ ``-|(b - a) #{x < c} - a
#{x > c}|`` (``-|b L - a n|``), which scored a tied candidate by the rows
strictly below and above it only.

*Sensitivity* ``Delta = max(a, b - a)``.  Adding one row ``x`` (removing is
the reverse) changes ``f = b L - a n`` and ``g = a n - b E`` by: ``x < c``:
``L, E, n`` all +1, ``f += b - a``, ``g -= b - a``; ``x = c``: ``E, n`` +1,
``f -= a``, ``g -= b - a``; ``x > c``: ``n`` +1, ``f -= a``, ``g += a``.  So
neither moves by more than ``max(a, b - a)``, and ``max(f, g, 0)`` moves by no
more than its arguments do (``|max(u) - max(v)| <= max |u - v|``).  The bound is
attained: at a candidate far above the target (``f`` the maximum, well above 0),
a row added above it moves the score by ``a`` and one added below by ``b - a``
(tests/test_private_quantiles.py checks the bound exhaustively on small data).
Permute-and-flip [MS20]_ visits the candidates in a uniformly random order
and stops at the first ``r`` accepted, with probability ``exp(-epsilon (u* -
u_r) / (2 Delta))`` (``u*`` the best score), in C (``csrc/flip.c``) with exact
coins: ``epsilon / (2 Delta)`` is an exact rational (rounded down when its
parts would pass ``2**62``: a smaller rate, a smaller privacy loss) and the
coin ``exp(-g epsilon / (2 Delta))`` is drawn by integer arithmetic, never a
float.  Permute-and-flip is ``epsilon``-DP [MS20]_ (Theorem 1) and never less
accurate than the exponential mechanism in expectation (Theorem 2); it is
report-noisy-max with exponential noise [DKSW21]_ (OpenDP's noisy max).

**Two quantiles.**  Each is released on all rows as above at ``epsilon / 2``
and the pair is sorted (post-processing).  The split below would leave one of
them less than ``epsilon / 2`` (its counts cost budget and a two-quantile
split narrows few candidates), so for ``k = 2`` independent releases are
used: per quantile the law of ``k`` independent releases at ``epsilon / k``
(OpenDP's ``make_private_quantile`` gives each ``epsilon / k`` too, with Smith's
score), and
sorting only lowers the summed rank error (the rank error of an answer for a
target is a Monge cost: pairing sorted answers with sorted targets is best).

**Three or more quantiles: the recursive split** [KSS22]_.  Sort the distinct
``q_1 < ... < q_k``; release the middle one ``v = q_m`` on the whole data as
above; split the rows into ``x < v`` (left) and ``x >= v`` (right) and the
candidates into those ``<= v`` and those ``>= v``; recurse on each side with
the quantiles below ``q_m`` on the left and those above on the right.  The
recursion has ``depth = ceil(log2(k + 1))`` levels and each level spends
``epsilon / depth``.  Outputs are non-decreasing in ``q`` (a left answer is
``<= v``, a right one ``>= v``).

*Which fraction of a part.*  [KSS22]_ rescale ``q_j`` to ``q_j / q_m`` on the
left (``(q_j - q_m) / (1 - q_m)`` on the right), which assumes ``v``'s rank is
exactly ``q_m n``; with ties at ``v`` (whole minutes, rounded distances) it can
be far off.  Here every level but the last gives a share ``s_k = min(2/5, 1 -
depth / k)`` (:func:`count_share`: 1/3 for ``k = 3``, 1/4 for ``k = 4``, 2/5
from ``k = 5``) of its ``epsilon / depth`` to one discrete Laplace count per
new part (its rows, scale ``1 / epsilon_count``), and the rest to its
permute-and-flip releases; the cap makes every release run at ``(1 - s_k)
epsilon / depth >= epsilon / k`` or more, never less than ``k`` independent
releases would give it.  The rule reads ``k`` alone (public).  A part
then knows its noisy size ``N`` and the noisy rows below it ``B`` (the counts
of the parts to its left), the root's two counts give the noisy total ``T``,
and a part is asked for the fraction ``(q_j T - B) / N`` of its rows (clipped
to ``[0, 1]``, read with a denominator at most ``10**6``).  A part holds the
rows ``vl <= x < vr`` between two released values; when ``q_j T`` is at or past
``B + N`` (at or before ``B``) and that end is a released value, the answer is
``vr`` (``vl``) without a release: the rows that decide it lie in the next
part, and on tied data the part's own flip would take its last value and
``vr`` alike (:func:`_at_the_edge`; 14-24 of 99 percentiles off by a whole tie
block before, 1-2 after, on 40 tied values).

Privacy
-------
*Theorem.* :func:`private_quantiles` is ``epsilon``-DP with respect to adding
or removing one row (DESIGN.md's neighbours).

*Proof.* For one or two quantiles: one or two permute-and-flip releases on
all rows at ``epsilon / k`` each (each ``epsilon / k``-DP, [MS20]_ Theorem 1),
composed sequentially; sorting is post-processing.  For ``k >= 3``: each
release is permute-and-flip with scores of sensitivity
``Delta`` computed on one part of the data, at a rate at most ``epsilon_pf /
(2 Delta)``, so it is ``epsilon_pf``-DP in that part [MS20]_ (Theorem 1); each
count is a discrete Laplace count of one part, ``epsilon_count``-DP
(sensitivity 1).  At one level the parts are disjoint intervals of the value
axis, cut at values released by the earlier levels: a row lies in exactly one
part, so adding or removing it changes the input of one release and one count
of the level; given the earlier levels' outputs the level is ``(epsilon_pf +
epsilon_count) = epsilon / depth``-DP (parallel composition, which holds with
the cuts chosen adaptively since they are earlier outputs; the last level has
``epsilon_pf = epsilon / depth``).  The ``depth`` levels compose sequentially
(adaptively) to ``epsilon``.  The candidates, the fractions asked of each part
and the choice to return a part's boundary instead of a release (functions of
the ``q``, of noisy counts and of released values) and the return in user units
are post-processing; a release not made costs nothing.  ∎

Error: a release for ``q`` on ``n`` rows is off in rank by ``O(Delta / b *
log(m) / epsilon_level)`` rows with high probability (``m`` candidates); the
recursive split pays ``log k`` in the budget instead of ``k``
(docs/guide/quantiles.md measures it against OpenDP).

References
----------
.. [MS20] R. McKenna, D. Sheldon, "Permute-and-Flip: A new mechanism for
   differentially private selection", NeurIPS 2020, Algorithm 1, Theorems 1-2.
.. [KSS22] H. Kaplan, S. Schnapp, U. Stemmer, "Differentially Private
   Approximate Quantiles", ICML 2022, Algorithm 1 (ApproximateQuantiles).
.. [DKSW21] Z. Ding, D. Kifer, S. M. Saghaian, T. Steinke et al., "The
   Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential
   Noise", arXiv:2105.07260, 2021.
.. [Smi11] A. Smith, "Privacy-preserving statistical estimation with optimal
   convergence rates", STOC 2011 (the quantile utility).
"""
from fractions import Fraction

import numpy as np

from ._core import check, ffi, i64, lib, u64
from .budget import charge, describe
from .errors import ParameterError
from .noise import discrete_laplace
from .params import as_offsets, check_domain, check_int, exact_epsilon
from .quantiles import check_fractions, user_values
from .rng import resolve_rng
from .unitmessages import in_user_units
from .units import Column, prepare_build
from ._threads import sort_u64

__all__ = ["DEFAULT_CANDIDATES", "MAX_CANDIDATES", "MAX_QUANTILES", "MAX_DENOMINATOR",
           "MIN_EPSILON", "COUNT_SHARE", "private_quantiles", "candidate_grid",
           "count_share", "quantile_fraction", "quantile_scores", "split_depth"]

#: Candidates of a release by default (equal-width grid points of a wider domain).
DEFAULT_CANDIDATES = 1 << 16
#: Most candidates.
MAX_CANDIDATES = 1 << 20
#: Most quantiles of one call (distinct values of ``q``).
MAX_QUANTILES = 1 << 16
#: Largest denominator of the fraction a ``q`` is read as.
MAX_DENOMINATOR = 10 ** 6
#: Smallest epsilon (every rate and count scale it implies is then representable).
MIN_EPSILON = Fraction(1, 10 ** 10)
#: The most of a level's epsilon spent on its parts' noisy row counts (every level but
#: the last; less for 3 or 4 quantiles: :func:`count_share`).
COUNT_SHARE = Fraction(2, 5)


def count_share(k):
    """The share of a level's epsilon spent on noisy row counts, for ``k >= 3`` quantiles:
    ``min(COUNT_SHARE, 1 - depth / k)``, so every release gets at least ``epsilon / k``.

    A public rule (of ``k`` alone): with it no quantile's permute-and-flip runs at
    less than the ``epsilon / k`` that ``k`` independent releases would give it.

    >>> [str(count_share(k)) for k in (3, 4, 5, 9, 99)]
    ['1/3', '1/4', '2/5', '2/5', '2/5']
    """
    if k < 3:
        raise ValueError("count_share is for k >= 3 quantiles")
    return min(COUNT_SHARE, 1 - Fraction(split_depth(k), k))


def quantile_fraction(q):
    """The fraction ``a / b`` a quantile ``q`` is read as: the nearest with ``b <= 10**6``.

    >>> quantile_fraction(0.25), quantile_fraction(0.01), quantile_fraction(1 / 3)
    (Fraction(1, 4), Fraction(1, 100), Fraction(1, 3))
    """
    return Fraction(q).limit_denominator(MAX_DENOMINATOR)


def split_depth(k):
    """Levels of the recursive split for ``k`` quantiles: ``ceil(log2(k + 1))``.

    >>> [split_depth(k) for k in (1, 2, 3, 4, 9, 99)]
    [1, 2, 2, 3, 4, 7]
    """
    return int(k).bit_length()


def candidate_grid(width, most):
    """The candidates' offsets from the domain's ``lo`` (uint64, increasing).

    Every offset ``0 .. width - 1`` when ``width <= most``, else ``most``
    equal-width grid points ``floor(width j / most)`` (exact for any width
    below ``2**64 + 1``).

    >>> candidate_grid(5, 8).tolist(), candidate_grid(100, 4).tolist()
    ([0, 1, 2, 3, 4], [0, 25, 50, 75])
    """
    if width <= most:
        return np.arange(width, dtype=np.uint64)
    whole, rest = divmod(int(width), int(most))
    j = np.arange(most, dtype=np.uint64)
    # width j / most = whole j + rest j / most, with rest j < 2**40
    return np.uint64(whole) * j + (np.uint64(rest) * j) // np.uint64(most)


def quantile_scores(below, above, rows, q):
    """Rank-interval scores ``-max(b L - a n, a n - b E, 0)`` for ``q = a / b`` and their
    sensitivity ``max(a, b - a)`` (the module docstring proves it).

    ``below``/``above``: per candidate, the rows strictly below (``L``) and strictly
    above it (``n - E``); ``rows``: all rows ``n``.  Equal to Smith's ``-|(b - a) below
    - a above|`` where no row sits on a candidate.

    >>> s, d = quantile_scores(np.array([0, 1, 2]), np.array([2, 1, 0]), 2, Fraction(1, 2))
    >>> s.tolist(), d
    ([-2, 0, -2], 1)
    >>> quantile_scores(np.array([0, 1, 5]), np.array([4, 0, 0]), 5, Fraction(1, 2))[0].tolist()
    [-3, 0, -5]
    """
    a, b = q.numerator, q.denominator
    below = np.asarray(below, dtype=np.int64)
    upto = np.int64(rows) - np.asarray(above, dtype=np.int64)
    target = np.int64(a) * np.int64(rows)
    gap = np.maximum(np.maximum(np.int64(b) * below - target, target - np.int64(b) * upto), 0)
    return np.ascontiguousarray(-gap, dtype=np.int64), max(a, b - a)


def _flip(p, scores, sensitivity, eps, work, out):
    """One permute-and-flip release over ``scores`` (C); the chosen index."""
    rate = exact_epsilon(eps / (2 * sensitivity), "epsilon")       # rounded down
    check(lib.pds_permute_and_flip(p, i64(scores), scores.size, rate.numerator,
                                   rate.denominator, 2 * sensitivity, u64(work), out),
          "private_quantiles")
    return int(out[0])


def _part_fraction(q, total, below, size):
    """The fraction of a part that the global quantile ``q`` asks for: ``(q total -
    below) / size`` clipped to ``[0, 1]`` (noisy counts: post-processing), read as
    :func:`quantile_fraction`; 1/2 for a part whose noisy size is not positive."""
    if size <= 0:
        return Fraction(1, 2)
    return quantile_fraction(min(max((q * total - below) / size, Fraction(0)), Fraction(1)))


def _at_the_edge(q, total, below, size, ends):
    """``"left"``/``"right"`` when the noisy counts place the global quantile ``q`` at or
    before the start / at or past the end of its part, and that end is a released value;
    else None.

    A part holds the rows ``vl <= x < vr`` between two released values (``ends`` says
    which of its ends are releases rather than the domain's ends).  A target rank
    ``q total`` at or past ``below + size`` lies among the rows ``>= vr`` (the next part),
    and one at or before ``below`` among the rows ``< vl``; by monotonicity the answer
    is then ``vr`` (``vl``).  The part's own flip cannot see those rows, and on tied data
    it would pick the part's last value or ``vr`` alike.  Reads released counts only:
    post-processing.
    """
    if total is None:
        return None
    lo_release, hi_release = ends
    target = q * total
    if size is None or size <= 0:
        edge = "right" if target > below else "left"
    elif target >= below + size:
        edge = "right"
    elif target <= below:
        edge = "left"
    else:
        return None
    return edge if (hi_release if edge == "right" else lo_release) else None


def _release(srt, grid, qs, eps, rng):
    """Grid indices of the released quantiles of the sorted offsets ``srt``, one per
    fraction of ``qs`` (distinct, increasing), by the recursive split."""
    below_all = np.searchsorted(srt, grid, side="left").astype(np.int64)
    upto_all = np.searchsorted(srt, grid, side="right").astype(np.int64)
    chosen = np.empty(len(qs), dtype=np.int64)
    work = np.empty(grid.size, dtype=np.uint64)
    out = ffi.new("uint64_t *")
    if len(qs) == 2:
        # independent flips at epsilon / 2 on all rows, sorted (post-processing)
        with rng.native() as p:
            for i, q in enumerate(qs):
                scores, sens = quantile_scores(below_all, srt.size - upto_all, srt.size, q)
                chosen[i] = _flip(p, scores, sens, eps / 2, work, out)
        return np.sort(chosen)
    depth = split_depth(len(qs))
    eps_level = eps / depth
    eps_count = eps_level * count_share(len(qs)) if depth > 1 else None   # k = 1: no counts
    # a task: (its global quantiles with their positions, candidate indices [ci, cj],
    # rows [s, e) of srt, the part's noisy size and noisy rows below it)
    total = None
    level = [([(q, i) for i, q in enumerate(qs)], 0, grid.size - 1, 0, srt.size, None, 0,
              (False, False))]
    for depth_left in range(depth, 0, -1):
        last = depth_left == 1
        splits = []
        with rng.native() as p:
            for items, ci, cj, s, e, size, below, ends in level:
                mid = len(items) // 2
                qm, pos = items[mid]
                edge = _at_the_edge(qm, total, below, size, ends)
                if edge is not None:
                    # the noisy counts put the quantile at or past the part's end: the
                    # parent's release, whose value the part cannot see (post-processing)
                    r = cj if edge == "right" else ci
                else:
                    part_q = qm if size is None else _part_fraction(qm, total, below, size)
                    scores, sens = quantile_scores(below_all[ci:cj + 1] - s,
                                                   e - np.minimum(upto_all[ci:cj + 1], e),
                                                   e - s, part_q)
                    r = ci + _flip(p, scores, sens,
                                   eps_level if last else eps_level - eps_count, work, out)
                chosen[pos] = r
                splits.append((items, mid, ci, cj, s, e, below, ends, r, int(below_all[r])))
        if last:
            break
        # each child's noisy size: disjoint parts, one count each (parallel composition)
        sizes = np.array([[cut - s, e - cut] for *_, s, e, _below, _ends, _r, cut in splits],
                         dtype=np.int64).reshape(-1)
        noisy = sizes + discrete_laplace(1 / eps_count, size=sizes.size, rng=rng)
        if total is None:
            total = int(noisy.sum())          # the root's two parts: the noisy row count
        level = []
        for (items, mid, ci, cj, s, e, below, ends, r, cut), nl, nr in zip(
                splits, noisy[0::2].tolist(), noisy[1::2].tolist()):
            if items[:mid]:
                level.append((items[:mid], ci, r, s, cut, nl, below, (ends[0], True)))
            if items[mid + 1:]:
                level.append((items[mid + 1:], r, cj, cut, e, nr, below + nl, (True, ends[1])))
    return chosen


@in_user_units
def private_quantiles(values, q, *, domain, epsilon, candidates=DEFAULT_CANDIDATES, rng=None,
                      budget=None, columns=None, scale=None, resolution=None, dropna=False):
    """Private ``q``-quantiles of ``values``, the whole ``epsilon`` spent on them.

    Each quantile is released by permute-and-flip over a public list of
    candidates with a rank-interval score (0 where a
    candidate's rank interval holds the target); two quantiles by two releases at
    ``epsilon / 2``, three or more by the recursive split of Kaplan, Schnapp and
    Stemmer (``ceil(log2(k + 1))`` levels at ``epsilon / levels`` each).
    ``epsilon``-DP with respect to adding or removing one row; see :mod:`pydp_synopsis.flip_quantiles` for the
    mechanism and its proof.  For many quantiles, or a CDF and histograms as
    well, one :class:`~pydp_synopsis.IntervalSynopsis` gives them all for one
    epsilon (``syn.quantile``): docs/guide/quantiles.md says which to use.

    Parameters
    ----------
    values : array_like or pandas.Series
        The column: integers, or dates, times, decimals with the unit options
        below (as :meth:`IntervalSynopsis.build` takes them).
    q : float or array_like of float
        Quantiles in ``[0, 1]``; each is read as the nearest fraction with a
        denominator at most ``10**6``.  Duplicates are answered alike.
    domain : (lo, hi)
        Public inclusive bounds, in the column's units.
    epsilon : float or Fraction
        Total privacy loss, in ``(0, 2**40]`` (a float is rounded down to an
        exact rational).
    candidates : int
        In ``[1, 2**20]``: the domain's grid when it has at most this many
        points, else this many equal-width grid points (default ``2**16``).
        More candidates: a finer answer, a little more noise (``log m``).
    rng : Rng, optional
        Randomness (default: a fresh OS-seeded generator; seeds are for tests).
    budget : Budget, optional
        Charged ``epsilon`` after every check and before any draw.
    columns, scale, resolution, dropna
        The column's units, as :meth:`IntervalSynopsis.build` takes them.

    Returns
    -------
    numpy.ndarray or scalar
        One value per ``q`` (the shape of ``q``; a scalar for a scalar), in
        the column's units (as :meth:`IntervalSynopsis.quantile` returns
        them: int64, ``datetime64``, float64 for decimals), each a candidate,
        non-decreasing in ``q``.

    Raises
    ------
    ParameterError
        ``q`` outside ``[0, 1]`` or empty (or over 65,536 distinct values),
        ``epsilon`` or ``candidates`` out of range -- before the data are read.
    DomainError
        A value outside ``domain``.
    TypeError
        ``q`` not real, values of a type the column does not take.

    Notes
    -----
    O(n log n + m log n + k m'): one sort of the data, one search per
    candidate, the scores of each release's candidates (``m'``, a part of the
    ``m`` candidates) in numpy and its selection in C.  Two quantiles are two
    independent releases at ``epsilon / 2``, sorted.  With ``k >= 3`` every
    level but the last also spends a share of its ``epsilon / depth`` (2/5, less
    for ``k = 3, 4`` so that no release gets under ``epsilon / k``) on noisy row
    counts of its parts, which place the next level's quantiles in them (ties
    at a released value cannot bias them).

    References
    ----------
    .. [1] R. McKenna, D. Sheldon, "Permute-and-Flip: A new mechanism for
       differentially private selection", NeurIPS 2020.
    .. [2] H. Kaplan, S. Schnapp, U. Stemmer, "Differentially Private
       Approximate Quantiles", ICML 2022.
    .. [3] A. Smith, "Privacy-preserving statistical estimation with optimal
       convergence rates", STOC 2011.

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> v = ps.private_quantiles(list(range(1000)), [0.25, 0.5, 0.75], domain=(0, 999),
    ...                          epsilon=10, rng=ps.Rng(seed=1))   # seed: tests only
    >>> [abs(int(a) - t) <= 5 for a, t in zip(v, (250, 500, 750))]
    [True, True, True]
    """
    qs = check_fractions(q)
    shape = qs.shape
    flat = qs.reshape(-1)
    if flat.size == 0:
        raise ParameterError("q must hold at least one quantile in [0, 1], got none")
    eps = exact_epsilon(epsilon)
    if eps < MIN_EPSILON:
        raise ParameterError(f"epsilon must be in [1e-10, 2**40] for private_quantiles, got "
                             f"{epsilon!r}")
    m = check_int(candidates, "candidates", 1, MAX_CANDIDATES)
    fractions = [quantile_fraction(float(x)) for x in flat]
    distinct = sorted(set(fractions))
    if len(distinct) > MAX_QUANTILES:
        raise ParameterError(f"q must hold at most {MAX_QUANTILES} distinct quantiles, "
                             f"got {len(distinct)}")
    values, (dom,), _, described = prepare_build(values, [domain], columns=columns, scale=scale,
                                                 resolution=resolution, dropna=dropna)
    dom = check_domain(dom)
    offsets = np.ascontiguousarray(as_offsets(values, dom, "values").ravel(), dtype=np.uint64)
    rng = resolve_rng(rng)
    charge(budget, eps, describe("private_quantiles", domain=dom, epsilon=eps,
                                 quantiles=len(distinct), candidates=m))
    grid = candidate_grid(dom[1] - dom[0] + 1, m)
    chosen = _release(sort_u64(offsets), grid, distinct, eps, rng)
    index = {f: i for i, f in enumerate(distinct)}
    picks = grid[chosen[[index[f] for f in fractions]]]
    col = Column.integer() if described is None else described[0]
    out = user_values(picks, dom, col).reshape(shape)
    return out[()] if out.ndim == 0 else out
