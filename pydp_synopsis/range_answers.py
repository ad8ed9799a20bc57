"""Range sums and means answered from an interval synopsis's two trees (counts and block sums).

Mixed into :class:`~pydp_synopsis.IntervalSynopsis` (:class:`RangeSumQueries`);
the release is :mod:`pydp_synopsis.range_sums`.  Everything here is
post-processing of released numbers.

The estimator.  The sum tree's leaves are blocks of consecutive segments.  A
range ``[lo, hi]`` covers the blocks ``kl .. kh`` that hold ``lo`` and ``hi``;
with ``A``, ``M``, ``B`` the released (consistent) shifted sums of block
``kl``, of the blocks strictly between, and of block ``kh``, its shifted sum is
estimated as ``(1 - f_lo) A + M + f_hi B`` (``(f_hi - f_lo) A`` when
``kl == kh``), where ``f_lo`` is the share of block ``kl``'s *count* that lies
before ``lo`` and ``f_hi`` the share of block ``kh``'s count up to ``hi``, both
read from the count release (the widths' shares where a block's noisy count
is ``<= 0``).  The apportioning is exact when the values are spread like the
rows inside a block (the same mean), and never moves a whole-block range.

The noise.  Given the counts (an independent release), the answer's noise is
a linear combination of the sum tree's noise terms; its variance is read
from six whole-block ranges (``A``, ``M``, ``B``, ``A+M``, ``M+B``,
``A+M+B``, each from :func:`~pydp_synopsis.trees.interval_noise`) by the
polarisation identity ``2 Cov(X, Y) = Var(X + Y) - Var(X) - Var(Y)``, which
holds because the consistent tree's whole-block answers are additive
(prefix differences); on a raw tree ``A`` and ``B`` are leaves that ``M``'s
cover does not hold, so the three are independent.  Exact, not an
approximation.

The intervals.  The whole blocks inside the range (``M'``) are answered
with a Chernoff tail on their noise; each cut block's part lies in
``[0, U * (rows in that part)]``, bounded with the count release's own
interval of that part.  The noise budget ``1 - confidence - beta / 2`` is
split by a union bound: half to the sum tree, the rest evenly over the count
intervals used.
"""
import math

import numpy as np

from .errorbars import ErrorBars, noise_std
from .errors import ParameterError
from .params import check_bool
from .queryclip import clips_queries
from .tails import laplace_weighted_tail

__all__ = ["RangeSumQueries", "noise_tails"]


def noise_tails(obj, lo_o, hi_o, delta):
    """``(std, noise)`` of an interval synopsis's count answers: the exact noise std and the
    Chernoff tail at ``delta`` (the computation of ``IntervalSynopsis.confidence_intervals``)."""
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


def _tail(sums, sumsq, maxabs, delta):
    """The sum tree's Chernoff tail of noises with these weights (0 where none)."""
    tail_sq = sumsq if sums._weights is None else sumsq * sums._weights.kappa
    out = laplace_weighted_tail(tail_sq[:, None], np.maximum(maxabs, 1e-300)[:, None],
                                [sums._scale], math.log(2.0 / delta))
    return np.where(sumsq > 0, out, 0.0)


class RangeSumQueries:
    """Range sums and means, mixed into :class:`~pydp_synopsis.IntervalSynopsis` (no state)."""

    __slots__ = ()

    def _sums_or_raise(self):
        if getattr(self, "sums", None) is None:
            raise ParameterError("this synopsis holds no range sums: build it with sum_of= and "
                                 "sum_bounds=")
        return self.sums

    def _count_between(self, lo_o, hi_o, keep):
        """Count answers of ``[lo_o, hi_o]`` where ``keep`` (0 elsewhere; no range is read
        there)."""
        lo = np.where(keep, lo_o, 0).astype(np.uint64)
        return np.where(keep, self._answers(lo, np.where(keep, hi_o, lo).astype(np.uint64)), 0.0)

    def _end_blocks(self, lo_o, hi_o):
        """Per query: the blocks ``kl``, ``kh`` holding its ends, the blocks' ``starts`` and
        ``ends``, and whether the query cuts its first block (``lo_o`` past its start) and
        its last block (``hi_o`` before its end)."""
        sums = self.sums
        kl = sums._lookup.of(lo_o).astype(np.intp)
        kh = sums._lookup.of(hi_o).astype(np.intp)
        starts, ends = sums._starts, sums._ends
        return kl, kh, starts, ends, lo_o > starts[kl], hi_o < ends[kh]

    def _apportion(self, lo_o, hi_o):
        """The end blocks ``kl``, ``kh`` and the count shares ``f_lo``, ``f_hi`` (module doc)."""
        kl, kh, starts, ends, before, upto = self._end_blocks(lo_o, hi_o)
        c_l = self._answers(starts[kl], ends[kl])
        c_h = c_l if np.array_equal(kl, kh) else self._answers(starts[kh], ends[kh])
        c_before = self._count_between(starts[kl], np.where(before, lo_o, 1) - np.uint64(1),
                                       before)
        c_upto = self._count_between(starts[kh], hi_o, upto)
        width_l = ends[kl].astype(np.float64) - starts[kl].astype(np.float64) + 1.0
        width_h = ends[kh].astype(np.float64) - starts[kh].astype(np.float64) + 1.0
        share_l = np.where(c_l > 0, c_before / np.where(c_l > 0, c_l, 1.0),
                           (lo_o.astype(np.float64) - starts[kl].astype(np.float64)) / width_l)
        share_h = np.where(c_h > 0, c_upto / np.where(c_h > 0, c_h, 1.0),
                           (hi_o.astype(np.float64) - starts[kh].astype(np.float64) + 1.0)
                           / width_h)
        f_lo = np.where(before, np.clip(share_l, 0.0, 1.0), 0.0)
        f_hi = np.where(upto, np.clip(share_h, 0.0, 1.0), 1.0)
        return kl, kh, f_lo, f_hi

    def _shifted(self, lo_o, hi_o, want_std):
        """The shifted sums' estimates (integer units) and, with ``want_std``, their exact
        noise ``sumsq`` (module doc: six whole-block ranges, polarisation)."""
        sums = self.sums
        kl, kh, f_lo, f_hi = self._apportion(lo_o, hi_o)
        same = kl == kh
        gap = kh - kl >= 2
        a, b = np.where(same, np.maximum(f_hi - f_lo, 0.0), 1.0 - f_lo), f_hi
        whole_a = sums.whole(kl, kl)
        whole_m = np.where(gap, sums.whole(np.where(gap, kl + 1, kl), np.where(gap, kh - 1, kl)),
                           0.0)
        answer = a * whole_a + np.where(same, 0.0, whole_m + b * sums.whole(kh, kh))
        if not want_std:
            return answer, None, None
        va, ma = sums.whole_noise(kl, kl)
        vb, mb = sums.whole_noise(kh, kh)
        vm, mm = sums.whole_noise(kl + 1, kh - 1)
        if sums._prefix is None:
            # raw tree: A and B are leaves, M's cover holds neither; its nodes are independent
            cam = cmb = cab = 0.0
        else:
            # consistent tree: whole-block answers are prefix differences, so additive
            vam = np.where(same, 0.0, sums.whole_noise(kl, kh - 1)[0])
            vmb = np.where(same, 0.0, sums.whole_noise(kl + 1, kh)[0])
            vamb = sums.whole_noise(kl, kh)[0]
            cam, cmb = (vam - va - vm) / 2, (vmb - vm - vb) / 2
            cab = (vamb - vam - vmb + vm) / 2
        var = a * a * va + vm + b * b * vb + 2 * a * cam + 2 * b * cmb + 2 * a * b * cab
        sumsq = np.maximum(np.where(same, a * a * va, var), 0.0)
        maxabs = np.where(same, a * ma, a * ma + mm + b * mb)
        return answer, sumsq, maxabs

    def _shifted_bounds(self, lo_o, hi_o, delta_tree, delta_count, multiplicity):
        """``(low, high, noise, bias)`` of the true shifted sums (module doc, "The
        intervals"): the inner whole blocks' tail at ``delta_tree``, each cut block's part
        in ``[0, U * count]`` with the count's upper end at ``delta_count``."""
        sums = self.sums
        kl, kh, starts, ends, cut_l, cut_h = self._end_blocks(lo_o, hi_o)
        first = np.where(cut_l, kl + 1, kl)
        last = np.where(cut_h, kh - 1, kh)
        inner = first <= last
        m_ans = np.where(inner, sums.whole(np.where(inner, first, 0), np.where(inner, last, 0)),
                         0.0)
        sumsq, maxabs = sums.whole_noise(np.where(inner, first, 1), np.where(inner, last, 0))
        noise = _tail(sums, sumsq, maxabs, delta_tree)
        # the cut parts: [lo, end of block kl] (or [lo, hi] inside one block), [start of kh, hi]
        left_hi = np.where(kl == kh, hi_o, ends[kl])
        right = cut_h & ((kh > kl) | ~cut_l)
        right_lo = np.where(kh > kl, starts[kh], lo_o)
        parts = 0.0
        for keep, a, b in ((cut_l, lo_o, left_hi), (right, right_lo, hi_o)):
            if keep.any():
                lo_k = np.where(keep, a, 0).astype(np.uint64)
                hi_k = np.where(keep, b, 0).astype(np.uint64)
                _, c_noise = noise_tails(self, lo_k, hi_k, delta_count)
                high = (self._answers(lo_k, hi_k) + c_noise
                        + self._query_bias(lo_k, hi_k, multiplicity))
                parts = parts + np.where(keep, np.maximum(high, 0.0), 0.0)
        bias = sums.width * parts
        return np.maximum(m_ans - noise, 0.0), m_ans + noise + bias, noise, bias

    @clips_queries
    def sum_many(self, lo, hi, *, return_std=False):
        """Noisy sums of the value column over the inclusive ranges ``[lo[q], hi[q]]`` of x.

        ``sum = (shifted sum) + lo_bound * count``: the block sums'
        apportioned estimate (:mod:`pydp_synopsis.range_answers`) plus the
        bound times the count's answer (post-processing), in the value
        column's user units.  Values were clipped to ``sum_bounds`` at build.
        ``std`` (``return_std=True``) is the exact standard deviation of the
        answer's noise given the released counts (both trees' when
        ``lo_bound != 0``); it leaves out the apportioning's bias
        (:meth:`sum_intervals` bounds both).

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
        O(q log m): a few C calls per batch (segment search, count answers,
        sum tree answers; with ``return_std`` six noise-weight calls).

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
        ans, sumsq, _ = self._shifted(lo_o, hi_o, return_std)
        if low:
            ans = ans + low * self._answers(lo_o, hi_o)
        ans = (ans / sums.unit).reshape(shape)
        if not return_std:
            return ans
        var = noise_std(sumsq[:, None], [sums._scale]) ** 2
        if low:
            c_sumsq, _ = self._noise_weights(lo_o, hi_o, corners=False)
            var = var + (low * noise_std(c_sumsq[:, 3:], [self._noise_scale()])) ** 2
        return ans, (np.sqrt(var) / sums.unit).reshape(shape)

    def sum(self, lo, hi):
        """Noisy sum of the value column over the inclusive range ``[lo, hi]`` of x (a float).

        As :meth:`sum_many` for one range.
        """
        return float(self.sum_many([lo], [hi])[0])

    def _parts(self, lo, hi, confidence, multiplicity, counts):
        """Checked offsets, the shifted sums' estimate, std and bounds, and (``counts``) the
        range count's ``(answer, std, noise, bias)``, the noise split by a union bound."""
        sums = self._sums_or_raise()
        delta = self._noise_delta(confidence)
        lo_o, hi_o, shape = self._offsets(lo, hi)
        est, sumsq, _ = self._shifted(lo_o, hi_o, True)
        n_counts = 3 if counts else 2
        bounds = self._shifted_bounds(lo_o, hi_o, delta / 2, delta / (2 * n_counts),
                                      multiplicity)
        s_std = noise_std(sumsq[:, None], [sums._scale])
        c = None
        if counts:
            c_std, c_noise = noise_tails(self, lo_o, hi_o, delta / (2 * n_counts))
            c = (self._answers(lo_o, hi_o), c_std, c_noise,
                 self._query_bias(lo_o, hi_o, multiplicity))
        return sums, shape, est, s_std, bounds, c

    @clips_queries
    def sum_intervals(self, lo, hi, confidence=0.95, *, multiplicity=1):
        """Per-query intervals holding each true (clipped) sum with probability >= ``confidence``.

        The shifted sum of the whole blocks inside ``[lo, hi]`` within its
        Chernoff tail (``noise``), plus each cut block's part, which lies in
        ``[0, U * rows]`` with the rows bounded by the count release's own
        interval of that part (``bias``: ``U`` times those upper ends); when
        ``lo_bound != 0``, plus ``lo_bound`` times the count's interval.
        The noise budget ``1 - confidence - beta / 2`` is split by a union
        bound (half to the sum tree, the rest evenly over the count
        intervals; ``beta / 2`` is the partition's weight bound's).  Values
        outside ``sum_bounds`` were clipped: the interval is about the
        clipped sum.  ``low`` and ``high`` are these bounds, not ``answer -+
        (noise + bias)``; ``std`` is :meth:`sum_many`'s.

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
        low = sums.bounds[0]
        _, shape, est, std, (s_lo, s_hi, noise, bias), c = self._parts(
            lo, hi, confidence, multiplicity, counts=low != 0)
        answer, low_end, high_end = est, s_lo, s_hi
        if low:
            c_lo, c_hi = c[0] - c[2] - c[3], c[0] + c[2] + c[3]
            answer = answer + low * c[0]
            low_end = low_end + np.minimum(low * c_lo, low * c_hi)
            high_end = high_end + np.maximum(low * c_lo, low * c_hi)
            std = np.sqrt(std ** 2 + (low * c[1]) ** 2)
            noise, bias = noise + abs(low) * c[2], bias + abs(low) * c[3]
        return ErrorBars(*(np.asarray(x / sums.unit, dtype=np.float64).reshape(shape)
                           for x in (answer, low_end, high_end, std, noise, bias)))

    @clips_queries(empty=float("nan"))
    def mean_many(self, lo, hi, *, return_std=False):
        """Noisy means of the value column over the ranges ``[lo[q], hi[q]]`` of x.

        ``mean = lo_bound + clip(shifted sum / count, 0, U)``: the ratio of
        the two released answers (post-processing), clipped to
        ``sum_bounds`` since every clipped value lies there.  NaN where the
        noisy count is ``<= 0`` (no mean can be read from it).  ``std``
        (``return_std=True``) is the first-order (delta-method) approximation
        ``sqrt(std_s**2 + r**2 std_c**2) / count`` with ``r`` the shifted
        mean: an approximation, not a bound; :meth:`mean_intervals` gives
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
        s_ans, sumsq, _ = self._shifted(lo_o, hi_o, return_std)
        c_ans = self._answers(lo_o, hi_o)
        ok = c_ans > 0
        ratio = np.where(ok, np.clip(s_ans / np.where(ok, c_ans, 1.0), 0.0, sums.width), np.nan)
        mean = ((sums.bounds[0] + ratio) / sums.unit).reshape(shape)
        if not return_std:
            return mean
        s_std = noise_std(sumsq[:, None], [sums._scale])
        c_sumsq, _ = self._noise_weights(lo_o, hi_o, corners=False)
        c_std = noise_std(c_sumsq[:, 3:], [self._noise_scale()])
        std = np.sqrt(s_std ** 2 + (ratio * c_std) ** 2) / np.where(ok, c_ans, np.nan)
        return mean, (std / sums.unit).reshape(shape)

    def mean(self, lo, hi):
        """Noisy mean of the value column over ``[lo, hi]`` of x (a float; NaN if the noisy
        count is ``<= 0``).  As :meth:`mean_many` for one range."""
        return float(self.mean_many([lo], [hi])[0])

    @clips_queries(empty=float("nan"))
    def mean_intervals(self, lo, hi, confidence=0.95, *, multiplicity=1):
        """Per-query intervals holding each true mean of the clipped values.

        From the interval of the shifted sum ``[s_lo, s_hi]`` (as
        :meth:`sum_intervals`) and the count's ``[c_lo, c_hi]`` (the noise
        budget split by a union bound): when ``c_lo > 0``, the true mean
        lies in ``lo_bound + [s_lo / c_hi, s_hi / c_lo]``, clipped to
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
        sums, shape, est, s_std, (s_lo, s_hi, _, _), c = self._parts(
            lo, hi, confidence, multiplicity, counts=True)
        width, unit, low = sums.width, sums.unit, sums.bounds[0]
        c_lo, c_hi = c[0] - c[2] - c[3], c[0] + c[2] + c[3]
        ok = c_lo > 0
        safe_lo, safe_hi = np.where(ok, c_lo, 1.0), np.where(ok, c_hi, 1.0)
        r_lo = np.where(ok, np.clip(s_lo / safe_hi, 0.0, width), np.nan)
        r_hi = np.where(ok, np.clip(s_hi / safe_lo, 0.0, width), np.nan)
        pos = c[0] > 0
        ratio = np.where(pos, np.clip(est / np.where(pos, c[0], 1.0), 0.0, width), np.nan)
        std = np.sqrt(s_std ** 2 + (ratio * c[1]) ** 2) / np.where(pos, c[0], np.nan)
        nan = np.full(ratio.shape, np.nan)
        return ErrorBars(*(np.asarray(x, dtype=np.float64).reshape(shape) for x in (
            (low + ratio) / unit, (low + r_lo) / unit, (low + r_hi) / unit, std / unit, nan,
            nan)))
