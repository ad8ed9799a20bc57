"""Per-query error bars: the exact noise of each answer, a bound on its bias, and intervals.

Every synopsis answer is ``estimator(true counts) + linear noise``: a
weighted sum ``sum_v w_v Z_v`` of the released counts' independent discrete
Laplace noises, with weights the C kernels compute exactly per query
(``pds_interval_var_*``, ``pds_multitree_noise``, ``pds_grid_noise``).  So

* ``std = sqrt(sum_v w_v^2 Var(Z_v))`` is the *exact* standard deviation of
  the answer's noise (:func:`~pydp_synopsis.noise.discrete_laplace_variance`),
  not a bound, given the released structure;
* ``noise`` is a rigorous per-query tail: ``P(|noise| > noise) <= delta`` by
  the Chernoff bound with the exact MGF on that weighted sum
  (:func:`~pydp_synopsis.tails.laplace_weighted_tail`);
* ``bias`` bounds what the estimator gets wrong *inside* the boundary
  segments or cells a query cuts (per estimator and per boundary: the
  per-boundary terms of the synopsis's ``error_bound``; 0 for a query made
  of whole segments);
* ``[answer - noise - bias, answer + noise + bias]`` holds the true count
  with probability at least the confidence asked, for each query on its
  own (not simultaneously: that is ``error_bound``).

References
----------
.. [HRMS10] Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency", VLDB 2010,
   section 4 (the consistent estimator whose weights are computed).
.. [DNRR] Dwork, Naor, Reingold, Rothblum, ASIACRYPT 2015, sections 3.2 and
   3.3 (the covers and the boundary segments).
.. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace and its MGF).
"""
from collections import namedtuple

import numpy as np

from .noise import discrete_laplace_variance

__all__ = ["ErrorBars", "noise_std", "assemble"]

class ErrorBars(namedtuple("ErrorBars", ["answer", "low", "high", "std", "noise", "bias"])):
    """Per-query error bars: each answer with an interval holding its true count.

    Returned by ``confidence_intervals`` of both synopses (``ps.ErrorBars``).
    All fields are float64 arrays of the queries' shape: the ``answer``; the
    interval ``[low, high]``; the exact noise standard deviation ``std``; the
    noise half-width ``noise`` (a rigorous tail at the confidence asked) and
    the bias bound ``bias``, with ``low = answer - noise - bias`` and ``high =
    answer + noise + bias`` (clipped at 0 from below with
    ``nonnegative=True``).  A named tuple: ``answer, low, high, std, noise,
    bias = bars`` unpacks it.  See docs/guide/error-bars.md.
    """

    __slots__ = ()


def noise_std(sumsq, scales):
    """``sqrt(sum_g sumsq[:, g] Var(scale_g))``: the noise standard deviation per query.

    ``sumsq`` is (q, G), ``scales`` the G groups' discrete Laplace scales.

    Examples
    --------
    >>> from fractions import Fraction
    >>> std = noise_std(np.array([[2.0, 1.0]]), [Fraction(1), Fraction(2)])
    >>> round(float(std[0] ** 2), 6)      # 2 Var(scale 1) + Var(scale 2)
    11.518091
    """
    var = np.zeros(sumsq.shape[0])
    for g, b in enumerate(scales):
        var += sumsq[:, g] * discrete_laplace_variance(b)
    return np.sqrt(var)


def assemble(answer, std, noise, bias, shape, nonnegative):
    """The :class:`ErrorBars` of flat per-query arrays, reshaped to ``shape``.

    ``nonnegative`` clips the answer and ``low`` at 0 (and ``high`` at 0 from
    below): true counts are never negative, so this only moves an answer
    toward its true count and the interval keeps it whenever it did.
    """
    low, high = answer - noise - bias, answer + noise + bias
    if nonnegative:
        answer, low, high = (np.maximum(x, 0.0) for x in (answer, low, high))
    return ErrorBars(*(np.asarray(x, dtype=np.float64).reshape(shape)
                       for x in (answer, low, high, std, noise, bias)))
