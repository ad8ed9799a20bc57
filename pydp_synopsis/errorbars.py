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

__all__ = ["ErrorBars", "CalibratedErrorBars", "METHODS", "noise_std", "assemble",
           "assemble_interval"]

#: What ``confidence_intervals(..., method=)`` accepts: a guarantee, or a checked model.
METHODS = ("rigorous", "calibrated")


class ErrorBars(namedtuple("ErrorBars", ["answer", "low", "high", "std", "noise", "bias"])):
    """Per-query error bars: each answer with an interval for its true count.

    Returned by ``confidence_intervals`` of both synopses (``ps.ErrorBars``).
    All fields are float64 arrays of the queries' shape: the ``answer``; the
    interval ``[low, high]``; the exact noise standard deviation ``std``; and
    the interval's half-width ``(high - low) / 2 = noise + bias`` in two
    parts, ``noise`` (what the released noise needs) and ``bias`` (what the
    boundary segments or cells the query cuts add).  The interval need not
    be centred on the answer (the rigorous one of an interval synopsis runs
    from the whole segments inside the query to the whole segments it
    touches); ``nonnegative=True`` clips the answer and ``low`` at 0.  A
    named tuple: ``answer, low, high, std, noise, bias = bars`` unpacks it.

    ``method`` says what the interval means: ``"rigorous"`` (this class) --
    ``low <= true count <= high`` with probability at least the confidence
    asked, for each query, a theorem; ``"calibrated"``
    (:class:`CalibratedErrorBars`) -- a model whose coverage was measured,
    not proven.  See docs/guide/error-bars.md.
    """

    __slots__ = ()
    method = "rigorous"


class CalibratedErrorBars(ErrorBars):
    """:class:`ErrorBars` of ``method="calibrated"``: a model of the boundary bias, not a
    guarantee (its coverage is measured, docs/guide/error-bars.md)."""

    __slots__ = ()
    method = "calibrated"


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
    return assemble_interval(answer, std, noise, answer - noise - bias, answer + noise + bias,
                             shape, nonnegative, bias=bias)


def assemble_interval(answer, std, noise, low, high, shape, nonnegative, calibrated=False,
                      bias=None):
    """The :class:`ErrorBars` of flat per-query arrays and any interval ``[low, high]``.

    ``bias`` (when not given) is what the half-width holds beyond ``noise``:
    ``(high - low) / 2 - noise``.  ``nonnegative`` as :func:`assemble`;
    ``calibrated`` returns :class:`CalibratedErrorBars`.
    """
    if bias is None:
        bias = np.maximum((high - low) / 2 - noise, 0.0)
    cls = CalibratedErrorBars if calibrated else ErrorBars
    if nonnegative:
        answer, low, high = (np.maximum(x, 0.0) for x in (answer, low, high))
    return cls(*(np.asarray(x, dtype=np.float64).reshape(shape)
                 for x in (answer, low, high, std, noise, bias)))
