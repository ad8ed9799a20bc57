"""The interval synopsis' per-query intervals: rigorous (snapped to whole segments) and calibrated.

Mixed into :class:`~pydp_synopsis.intervals.IntervalSynopsis` (through
:class:`~pydp_synopsis.interval_answers.IntervalAnswers`), whose
:meth:`confidence_intervals` calls :meth:`IntervalBars._error_bars`.  The
arguments of both intervals are in :mod:`pydp_synopsis.bias_bounds`.

References
----------
.. [DNRR] Dwork, Naor, Reingold, Rothblum, ASIACRYPT 2015, section 3.2.
.. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace MGF).
"""
import numpy as np

from .bias_bounds import (calibrated_interval, cut_variance, noise_quantile, snapped_interval,
                          split_delta)
from .errorbars import assemble_interval, noise_std
from .errors import ParameterError
from .params import check_beta, check_int
from .tails import laplace_weighted_tail

__all__ = ["IntervalBars", "segment_snaps"]


def segment_snaps(ends, k, r, lo_o, hi_o):
    """Per query, the whole-segment ranges inside and around ``[lo_o, hi_o]``.

    ``ends`` are the segments' last offsets, ``k``/``r`` the segments of
    ``lo_o``/``hi_o``.  Returns ``(has_inner, inner_lo, inner_hi, outer_lo,
    outer_hi, left_cut, right_cut, left_frac, right_frac)``: the inner range
    (segments wholly inside; arbitrary where ``has_inner`` is False), the
    outer range (segments ``k..r``), whether the left (or only) and the
    right boundary segment is cut, and the fraction of each cut segment's
    extent inside the query (the uniform estimator's; 0 where not cut).

    Examples
    --------
    >>> ends = np.array([9, 19, 29], dtype=np.uint64)
    >>> s = segment_snaps(ends, np.array([0]), np.array([2]),
    ...                   np.array([5], dtype=np.uint64), np.array([29], dtype=np.uint64))
    >>> bool(s[0][0]), int(s[1][0]), int(s[2][0]), int(s[3][0]), int(s[4][0]), float(s[7][0])
    (True, 10, 29, 0, 29, 0.5)
    """
    one = np.uint64(1)
    first_k = np.where(k == 0, np.uint64(0), ends[np.maximum(k, 1) - 1] + one)
    first_r = np.where(r == 0, np.uint64(0), ends[np.maximum(r, 1) - 1] + one)
    whole_l, whole_r = lo_o == first_k, hi_o == ends[r]
    a = np.where(whole_l, k, k + 1)                 # first segment inside
    b = np.where(whole_r, r, r - 1)                 # last segment inside
    has_inner = a <= b
    a_c, b_c = np.minimum(a, len(ends) - 1), np.maximum(b, 0)
    inner_lo = np.where(a_c == 0, np.uint64(0), ends[np.maximum(a_c, 1) - 1] + one)
    inner_hi = ends[b_c]
    single = k == r
    left_cut = ~(whole_l & (whole_r | ~single))
    right_cut = ~single & ~whole_r
    width_k = (ends[k] - first_k).astype(np.float64) + 1.0
    width_r = (ends[r] - first_r).astype(np.float64) + 1.0
    kept_l = np.where(single, hi_o - lo_o, ends[k] - lo_o).astype(np.float64) + 1.0
    kept_r = (hi_o - first_r).astype(np.float64) + 1.0
    left_frac = np.where(left_cut, kept_l / width_k, 0.0)
    right_frac = np.where(right_cut, kept_r / width_r, 0.0)
    return (has_inner, inner_lo, inner_hi, first_k, ends[r], left_cut, right_cut,
            left_frac, right_frac)


class IntervalBars:
    """The per-query intervals of an interval synopsis (a mixin: no state of its own)."""

    __slots__ = ()

    def _tail_weights(self, lo_o, hi_o):
        """``(sumsq, tail_sumsq, maxabs)``, (q, 1) each, of the answers' noise weights."""
        sumsq, maxabs = self._noise_weights(lo_o, hi_o, corners=False)
        # unequal levels: the tail at the largest scale, sum of squares <= kappa sumsq
        tail_sq = sumsq if self._weights is None else sumsq * self._weights.kappa
        return sumsq[:, 3:], tail_sq[:, 3:], maxabs[:, 3:]

    def _range_noise(self, lo_o, hi_o):
        """``(answers, tail_sumsq, maxabs)`` of ranges of whole segments (no bias)."""
        return (self._answers(lo_o, hi_o), *self._tail_weights(lo_o, hi_o)[1:])

    def _error_bars(self, lo_o, hi_o, shape, confidence, method, nonnegative):
        """The :class:`~pydp_synopsis.errorbars.ErrorBars` of ``method`` (checked arguments).

        Rigorous: ``[I - t_I, O + t_O]`` of the inner and outer whole-segment
        ranges (:mod:`~pydp_synopsis.bias_bounds`); calibrated: the answer
        -+ its noise quantile widened by the cut segments' model variance.  The
        model is the uniform estimator's: with another estimator the result
        is the rigorous interval (and says so in its ``method``).
        """
        b = self._noise_scale()
        lookup = self.partition.lookup
        k, r = lookup.of(lo_o).astype(np.intp), lookup.of(hi_o).astype(np.intp)
        snaps = segment_snaps(self._ends, k, r, lo_o, hi_o)
        has_inner, in_lo, in_hi, out_lo, out_hi, cut_l, cut_r, f_l, f_r = snaps
        answer = self._answers(lo_o, hi_o)
        sumsq, a_sq, a_max = self._tail_weights(lo_o, hi_o)
        std = noise_std(sumsq, [b])
        if method == "rigorous" or self.estimator != "uniform":
            log_in, log_out = split_delta(has_inner, 1.0 - confidence)
            outer, o_sq, o_max = self._range_noise(out_lo, out_hi)
            t_out = laplace_weighted_tail(o_sq, o_max, [b], log_out)
            inner = np.zeros_like(answer)
            t_in = np.zeros_like(answer)
            q = np.flatnonzero(has_inner)
            if q.size:
                inner[q], i_sq, i_max = self._range_noise(in_lo[q], in_hi[q])
                t_in[q] = laplace_weighted_tail(i_sq, i_max, [b], log_in[q])
            low, high, noise, bias = snapped_interval(answer, inner, t_in, outer, t_out)
            return assemble_interval(answer, std, noise, low, high, shape, nonnegative, bias=bias)
        # calibrated: the answer's noise quantile, widened by the model's bias variance
        noise = noise_quantile(std, a_sq, a_max, [b], confidence)
        ends = self._ends
        first_r = np.where(r == 0, np.uint64(0), ends[np.maximum(r, 1) - 1] + np.uint64(1))
        leaf_k = self._answers(out_lo, ends[k])
        leaf_r = np.where(cut_r, self._answers(first_r, out_hi), 0.0)
        c_l, c_r = np.maximum(np.where(cut_l, leaf_k, 0.0), 0.0), np.maximum(leaf_r, 0.0)
        var = cut_variance(f_l, c_l) + cut_variance(f_r, c_r)
        low, high = calibrated_interval(answer, noise, var, confidence, f_l * c_l + f_r * c_r,
                                        (1 - f_l) * c_l + (1 - f_r) * c_r)
        return assemble_interval(answer, std, noise, low, high, shape, nonnegative,
                                 calibrated=True)

    def error_bound(self, confidence=0.95, *, multiplicity=1):
        """The simultaneous bound: the error of *all* interval answers at once (DNRR Theorem 3.2).

        With probability at least ``confidence`` over the mechanism's coins,
        ``|count(lo, hi) - true count| <= error_bound(confidence)`` for every
        interval simultaneously.  A worst case over every interval, 10-100
        times a typical error: for one query's error bar use
        :meth:`count_many` with ``return_std=True`` (the exact noise std) or
        :meth:`confidence_intervals` (a per-query guarantee).

        The failure probability ``1 - confidence`` is split: ``beta / 2`` (fixed
        at build) for the partition's interior weight bound ``W``
        (:meth:`interior_weight_bound`), the rest for the noise.  The bound is
        ``noise_bound(1 - confidence - beta / 2) + bias`` with bias ``W``
        ("seal"), ``W + T`` ("seal_uniform"), ``2 W + multiplicity``
        ("cover") or ``2 (W + multiplicity)`` ("uniform") -- see the class
        doc; over a PrivTree partition ``2 W`` (its ``W`` bounds whole leaves,
        so ``multiplicity`` plays no part).  The noise bound is a Chernoff bound on sums of discrete Laplace
        terms (the exact MGF), union-bounded over every distinct combination
        of released noise an answer can use.

        Parameters
        ----------
        confidence : float
            In ``(0, 1 - beta / 2)``.
        multiplicity : int
            Only for "cover" and "uniform": a *public* upper bound on how
            often one value occurs (1 = distinct values), fixed without
            looking at the data -- the data's true multiplicity is private
            and must not be passed.  The bound is invalid if the data repeat
            a value more often; "seal" and "seal_uniform" need no such
            assumption.  ``confidence`` is public too.

        Returns
        -------
        float

        Notes
        -----
        O(1) (a short numeric minimisation) for raw trees and kary; the first
        call on a consistent tree also computes
        :func:`~pydp_synopsis.trees.coefficient_bound` (capped, then O(1)).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = ps.IntervalSynopsis.build(list(range(0, 4000, 3)), domain=(0, 3999),
        ...                               epsilon=1.0, rng=ps.Rng(seed=4))   # seed: tests only
        >>> abs(s.count(100, 2000) - 633) <= s.error_bound(0.9)
        True
        """
        conf = check_beta(confidence, "confidence")
        multiplicity = check_int(multiplicity, "multiplicity", 1, 1 << 62)
        delta = 1.0 - conf
        part_fail = self.beta / 2
        if delta <= part_fail:
            raise ParameterError(
                f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the partition's "
                f"failure probability fixed at build), got {confidence!r}")
        return self._noise_bound(delta - part_fail) + self._bias_bound(multiplicity)
