"""Per-query intervals from released numbers: the rigorous snapped interval and the calibrated model.

A synopsis answers a query from the segments (or cells) it covers whole and
the boundary segments it cuts.  Whatever an estimator does inside a cut
segment, the true count of a query lies between the true count of the
*inner* range (the whole segments inside it) and that of the *outer* range
(the whole segments it touches): items are counted, never negative.  Both
are ranges of whole segments, answered without bias, so their noisy answers
and exact noise tails bound the truth from released numbers alone
(post-processing: no privacy cost, no assumption on the data, duplicates
included).

**Rigorous** (:func:`snapped_interval`).  Let ``I``, ``O`` be the released
answers of the inner and outer ranges, ``N_I``, ``N_O`` their noises
(weighted sums of the release's independent discrete Laplace noises; the
weights are computed exactly per range), and ``t_I``, ``t_O`` one-sided
Chernoff tails: ``P(N_I > t_I) <= delta_I`` and ``P(N_O < -t_O) <=
delta_O`` (:func:`~pydp_synopsis.tails.laplace_weighted_tail`).  Then

* ``true(inner) = I - N_I >= I - t_I`` except with probability ``delta_I``;
* ``true(outer) = O - N_O <= O + t_O`` except with probability ``delta_O``;
* ``true(inner) <= true(query) <= true(outer)`` always;

so by the union bound ``[I - t_I, O + t_O]`` holds the true count with
probability at least ``1 - delta_I - delta_O``.  The failure probability
``delta = 1 - confidence`` is split ``delta / 2`` each; when the inner range
is empty (a query inside one segment) its count is 0 with certainty and the
outer side gets all of ``delta``.  The split depends on the query and the
released partition only, never on the noise, so it is fixed before the
noise is drawn.  ``O - I`` is the released count of the cut segments: the
bias part of the width is half of it, the "fraction" the estimator took of
each cut segment decides only where the answer sits inside.  Taking
``min``/``max`` with the answer (and of ``I`` with ``O``) only widens the
interval.  Conditioned on the released partition, the tree's noise is
independent of it, so the statement holds given the partition and hence
unconditionally: no share of ``beta`` is needed.

**Calibrated** (:func:`calibrated_interval`): a *model*, not a guarantee.  It
treats the items of each cut segment as spread over the segment like a
beta-binomial sample: with ``C`` items and a cut keeping the fraction ``f``
of the segment's extent, the count inside has mean ``f C`` (the uniform
estimator's answer) and variance ``f (1 - f) C (C + nu) / (1 + nu)``
(:func:`cut_variance`; ``nu -> inf`` is the binomial of items placed
uniformly, ``nu = 0`` one clump), with ``nu = 8 f`` (:data:`CONCENTRATION`
``* f``): a sliver of a segment holds one clump or nothing, half of it
averages its items.  ``C`` is the
released count of the segment (clipped at 0).  The interval is ``answer -+
sqrt(q^2 + z^2 v)``: ``q`` a two-sided quantile of the answer's noise
(:func:`noise_quantile`: the normal one corrected by the noise's kurtosis),
``v`` the summed model variance of the cut segments, ``z`` the normal
quantile; ``low`` clipped at 0, and each side where the cut segments'
released counts end (``f C`` below the answer, ``(1 - f) C`` above: the
model's normal tail must not reach counts the segments cannot hold).
The factor 8 was chosen so that short windows reach 0.95 coverage, with a
little margin, on both real data sets the repository ships (flight minutes,
ZIP-code latitudes: 0.958 at 8, 0.952 at 12, 0.943 at 16; a constant ``nu
= 1`` reached it too but was 5-6x the median error on medium queries): it
was chosen on the data its coverage is reported on, so that coverage is a
fit, and other data (clumped inside segments more than these) can make it
miss (docs/guide/error-bars.md).

References
----------
.. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace and its MGF).
.. [DNRR] Dwork, Naor, Reingold, Rothblum, ASIACRYPT 2015, sections 3.2 and
   3.3 (covers and boundary segments).
"""
import math
from statistics import NormalDist

import numpy as np

from .noise import discrete_laplace_variance

__all__ = ["CONCENTRATION", "MAX_KURTOSIS", "split_delta", "snapped_interval", "cut_variance",
           "excess_kurtosis", "noise_quantile", "calibrated_interval"]

#: The calibrated model's beta-binomial concentration per unit of the fraction cut: a cut
#: keeping the fraction ``f`` of a segment has ``nu = CONCENTRATION * f``
#: (docs/guide/error-bars.md, "The calibrated interval").
CONCENTRATION = 8.0
#: The largest excess kurtosis the calibrated noise quantile uses (twice the Laplace's 3).
MAX_KURTOSIS = 6.0


def split_delta(has_inner, delta):
    """Per query, ``(log(1/delta_I), log(1/delta_O))``: ``delta / 2`` each, or all of
    ``delta`` to the outer side when the inner range is empty (its count is 0).

    Examples
    --------
    >>> li, lo = split_delta(np.array([True, False]), 0.05)
    >>> bool(np.isclose(li[0], math.log(40))), bool(np.isclose(lo[1], math.log(20)))
    (True, True)
    """
    both = math.log(2.0) - math.log(delta)
    one = -math.log(delta)
    return np.where(has_inner, both, np.inf), np.where(has_inner, both, one)


def snapped_interval(answer, inner, inner_tail, outer, outer_tail):
    """``(low, high, noise, bias)``: the rigorous interval between the snapped ranges.

    ``inner``/``outer`` are the released answers of the whole-segment
    ranges inside and around each query (``inner = 0``, ``inner_tail = 0``
    where there is none), ``*_tail`` their one-sided noise tails.  ``low``
    is clipped at 0 (true counts are never negative) and the interval
    widened to hold the answer.  ``noise = (inner_tail + outer_tail) / 2``
    and ``bias = (high - low) / 2 - noise``, computed without cancellation
    (exactly 0 for a query of whole segments).

    Examples
    --------
    >>> low, high, noise, bias = snapped_interval(
    ...     np.array([12.0]), np.array([10.0]), np.array([3.0]), np.array([15.0]), np.array([4.0]))
    >>> float(low[0]), float(high[0]), float(noise[0]), float(bias[0])
    (7.0, 19.0, 3.5, 2.5)
    """
    below = np.minimum(inner, outer) - inner_tail
    above = np.maximum(inner, outer) + outer_tail
    low = np.maximum(np.minimum(below, answer), 0.0)
    high = np.maximum(above, answer)
    bias = (np.abs(outer - inner) + (high - above) - (low - below)) / 2
    return low, high, (inner_tail + outer_tail) / 2, np.maximum(bias, 0.0)


def cut_variance(fraction, count, concentration=CONCENTRATION):
    """The calibrated model's variance of the items a cut keeps of one segment.

    ``f (1 - f) C (C + nu) / (1 + nu)`` with ``nu = concentration * f``,
    ``C = max(count, 0)`` (a released, noisy count) and ``f = fraction`` in
    [0, 1] (0 where the segment is not cut): the beta-binomial whose
    concentration grows with the fraction kept -- a sliver of a segment
    holds one clump or nothing, half a segment averages its items.

    Examples
    --------
    >>> float(cut_variance(np.array([0.5]), np.array([10.0]), concentration=8.0)[0])
    7.0
    """
    c = np.maximum(count, 0.0)
    f = np.clip(fraction, 0.0, 1.0)
    nu = concentration * f
    return f * (1.0 - f) * c * (c + nu) / (1.0 + nu)


def excess_kurtosis(scale):
    """The excess kurtosis ``E Z^4 / Var(Z)^2 - 3`` of one discrete Laplace term of ``scale``.

    With ``a = exp(-1/scale)``: ``Var = 2a / (1 - a)^2`` and ``E Z^4 = 2a (1 +
    10a + a^2) / (1 - a)^4``, so the ratio is ``(1 + 10a + a^2) / (2a) - 3``
    (3 for a wide scale, as the continuous Laplace).

    Examples
    --------
    >>> round(excess_kurtosis(1000.0), 4)
    3.0
    """
    a = math.exp(-1.0 / float(scale))
    return math.inf if a == 0.0 else (1.0 + 10.0 * a + a * a) / (2.0 * a) - 3.0


def noise_quantile(std, sumsq, maxabs, scales, confidence):
    """The calibrated model's two-sided noise quantile: Cornish-Fisher with the sum's kurtosis.

    The answer's noise ``sum_g sum_v w_gv Z_gv`` (``Z_gv`` discrete Laplace
    of scale ``scales[g]``, variance ``V_g``, excess kurtosis ``k_g``,
    :func:`excess_kurtosis`) has fourth cumulant ``sum_g k_g V_g^2 sum_v
    w_gv^4 <= sum_g k_g V_g^2 maxabs_g^2 sumsq_g``, hence excess kurtosis ``g
    <=`` that over ``std^4``; its two-sided ``confidence`` quantile is about
    ``std (z + g (z^3 - 3 z) / 24)``, ``z`` the normal quantile (the
    fourth-cumulant term of the Cornish-Fisher expansion, ``g`` at its upper
    bound, at most :data:`MAX_KURTOSIS`: a scale below 1 has a kurtosis the
    expansion cannot follow, and its mass at 0 keeps the quantile small).
    One term (``g = 3``) gives 2.17 std at 95%, the exact Laplace 2.12.  An
    approximation, used only by the calibrated interval.

    Parameters
    ----------
    std : array of shape (q,)
    sumsq, maxabs : arrays of shape (q, G)
        ``sum w^2`` and a bound on ``max |w|`` per noise group.
    scales : G floats or Fractions
    confidence : float

    Examples
    --------
    >>> std = np.sqrt([discrete_laplace_variance(1000)])     # one term of scale 1000
    >>> q = noise_quantile(std, np.ones((1, 1)), np.ones((1, 1)), [1000], 0.95)
    >>> round(float(q[0] / std[0]), 2)
    2.17
    """
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    var = [discrete_laplace_variance(b) for b in scales]
    kurt = [min(excess_kurtosis(b), MAX_KURTOSIS) for b in scales]
    k4 = sum(kurt[g] * var[g] ** 2 * maxabs[:, g] ** 2 * sumsq[:, g] for g in range(len(scales)))
    safe = np.where(std > 0, std, 1.0)
    g = np.minimum(np.where(std > 0, k4 / safe ** 4, 0.0), MAX_KURTOSIS)
    return std * (z + g * (z ** 3 - 3 * z) / 24)


def calibrated_interval(answer, noise, bias_var, confidence, below=None, above=None):
    """``(low, high)`` of the calibrated model: ``answer -+ sqrt(noise^2 + z^2 v)``.

    ``noise`` = the noise quantile (:func:`noise_quantile`), ``v`` =
    ``bias_var`` (:func:`cut_variance` summed over the cut segments), ``z``
    the normal quantile of ``confidence`` (two-sided).  ``low`` is clipped
    at 0; with ``below``/``above`` (the most the cut segments can make the
    answer too high / too low, ``sum f C`` and ``sum (1 - f) C`` of their
    released counts ``C``) each side is clipped at ``noise`` plus that: the
    model's normal tail must not reach counts the cut segments cannot hold.

    Examples
    --------
    >>> low, high = calibrated_interval(np.array([5.0]), np.array([3.0]), np.array([4.0]), 0.95)
    >>> round(float(high[0] - 5.0), 3)            # sqrt(3^2 + 1.96^2 * 4)
    4.936
    >>> calibrated_interval(np.array([5.0]), np.array([3.0]), np.array([4.0]), 0.95,
    ...                     np.array([0.5]), np.array([1.0]))[1] - 5.0
    array([4.])
    """
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    half = np.sqrt(noise ** 2 + z * z * bias_var)
    low, high = answer - half, answer + half
    if below is not None:
        low = np.maximum(low, answer - noise - below)
        high = np.minimum(high, answer + noise + above)
    return np.maximum(low, 0.0), high
