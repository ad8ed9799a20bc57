"""Tail bounds of sums of discrete Laplace noise: the one bound behind every ``error_bound``.

References
----------
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020 (the discrete Laplace and its MGF).
"""
import math
import numbers

import numpy as np

from ._core import check, f64, lib
from .errors import ParameterError

__all__ = ["laplace_sum_tail", "laplace_weighted_tail"]


def _log_mgf(lam, scale):
    """``log E[exp(lam Z)]`` for Z discrete Laplace of ``scale`` b, ``0 <= lam < 1/b``.

    ``E[e^{lam Z}] = (1-p)^2 / ((1 - p e^lam)(1 - p e^-lam))`` with ``p = e^{-1/b}``;
    written with expm1 so that large scales keep their precision.
    """
    g = 1.0 / scale
    return (2.0 * math.log(-math.expm1(-g))
            - math.log(-math.expm1(lam - g))
            - math.log(-math.expm1(-lam - g)))


def laplace_sum_tail(terms, scale, log_inv_delta):
    """A ``t`` with ``P(Z_1 + ... + Z_terms >= t) <= delta`` for i.i.d. discrete Laplace noise.

    The Chernoff bound with the exact moment generating function: for every
    ``lam`` in ``(0, 1/b)``, ``P(S >= t) <= exp(terms log M(lam) - lam t)``,
    so ``t(lam) = (terms log M(lam) + log(1/delta)) / lam`` is a valid bound
    for *any* such ``lam``; the smallest over a grid refined by
    golden-section search is returned, enlarged by a relative ``1e-9`` for
    the float evaluation (the search only tightens, it never decides
    validity).  The shared bound of every synopsis's ``error_bound``.

    Also valid for sums of *fewer* terms and for weighted sums
    ``sum_i w_i Z_i`` with ``|w_i| <= 1`` (``log M`` is even, convex and
    ``>= 0``, so ``log M(w lam) <= log M(lam)``), and -- by symmetry -- for
    the lower tail.  ``terms`` may be fractional: the formula is then used as
    written (e.g. a weighted sum with ``sum w_i^2 <= V`` and ``|w_i| <= s``
    has tail at most ``s * laplace_sum_tail(V / s**2, b, .)``, since
    ``log M(x) / x^2`` grows with ``|x|``).

    Parameters
    ----------
    terms : float
        Number of terms (>= 0; 0 gives 0: the sum is 0).
    scale : float or Fraction
        The noise scale ``b`` (pmf proportional to ``exp(-|z| / b)``), > 0.
    log_inv_delta : float
        ``ln(1 / delta)`` > 0, in the log domain so that union bounds over
        astronomically many events (``delta = 2^-500``) stay representable.

    Returns
    -------
    float

    Notes
    -----
    O(1): about 600 evaluations of ``log M``.

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace and its MGF).
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, Theorem 3.2 (the tail of the
       cover's noise terms in the interval error bound).

    Examples
    --------
    >>> t = laplace_sum_tail(1, 3.0, math.log(1e6))
    >>> p = math.exp(-1 / 3.0)
    >>> p ** math.ceil(t) / (1 + p) <= 1e-6      # the exact one-term tail
    True
    """
    for name, v in (("terms", terms), ("scale", scale), ("log_inv_delta", log_inv_delta)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must be a real number, not {type(v).__name__}")
    terms, b, log_inv = float(terms), float(scale), float(log_inv_delta)
    if not (math.isfinite(terms) and terms >= 0):
        raise ParameterError(f"terms must be a finite number >= 0, got {terms!r}")
    if not (math.isfinite(b) and b > 0):
        raise ParameterError(f"scale must be a finite number > 0, got {scale!r}")
    if not (math.isfinite(log_inv) and log_inv > 0):
        raise ParameterError(f"log_inv_delta must be a finite number > 0, got {log_inv_delta!r}")
    if terms == 0:
        return 0.0
    g = 1.0 / b

    def t_of(x):
        lam = x * g
        return (terms * _log_mgf(lam, b) + log_inv) / lam

    grid = [i / 512 for i in range(1, 512)]
    best = min(grid, key=t_of)
    lo, hi = max(best - 1 / 512, 1e-9), min(best + 1 / 512, 1 - 1e-9)
    phi = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        a = hi - phi * (hi - lo)
        c = lo + phi * (hi - lo)
        if t_of(a) < t_of(c):
            hi = c
        else:
            lo = a
    # absorb float rounding in the evaluation (relative error far below 1e-9)
    return min(t_of(best), t_of((lo + hi) / 2)) * (1 + 1e-9)


def laplace_weighted_tail(sumsq, maxabs, scales, log_inv_delta):
    """Per query, a ``t`` with ``P(S >= t) <= delta`` for a weighted sum of discrete Laplace noise.

    ``S = sum_g sum_i w_gi Z_gi`` with independent ``Z_gi`` discrete Laplace
    of scale ``scales[g]``, known only through ``sum_i w_gi^2 <= sumsq[q, g]``
    and ``|w_gi| <= maxabs[q, g]``.  The Chernoff bound with the exact
    moment generating function: ``log M(x) / x^2`` grows with ``|x|``, so
    ``sum_i log M(lam w_i) <= (V / s^2) log M(lam s)`` for ``V = sum w_i^2``,
    ``s >= max |w_i|``, and ``t(lam) = (sum_g (V_g / s_g^2) log M_g(lam s_g)
    + log(1/delta)) / lam`` is a valid bound for every ``lam`` in ``(0,
    min_g 1 / (b_g s_g))``.  ``t(lam)`` is unimodal (its numerator is convex
    and 0 at 0), so a golden-section search finds its minimum; any ``lam``
    would be valid, and the result is enlarged by a relative ``1e-9`` for
    the float evaluation.  The lower tail is the same by symmetry.  One C
    call for all queries (``csrc/tails.c``).

    The per-query version of :func:`laplace_sum_tail` (which is the case of
    ``terms`` equal weights ``<= 1``): the tails of the per-query error bars.

    Parameters
    ----------
    sumsq, maxabs : array_like of float, shape (q, G)
        Per query and noise group, ``sum w^2`` and a bound on ``max |w|``
        (>= 0; a group with ``sumsq == 0`` adds nothing).
    scales : sequence of G floats or Fractions
        The groups' noise scales (> 0), ``1 <= G <= 8``.
    log_inv_delta : float or array_like of float, shape (q,)
        ``ln(1 / delta)`` > 0.

    Returns
    -------
    numpy.ndarray of float64, shape (q,)
        0 where every ``sumsq`` is 0.

    Notes
    -----
    O(q G): a 48-step golden-section search per query, in C.

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace and its MGF).

    Examples
    --------
    >>> b, L = 3.0, math.log(1e6)
    >>> t = float(laplace_weighted_tail([[4.0]], [[1.0]], [b], L)[0])
    >>> abs(t / laplace_sum_tail(4, b, L) - 1) < 1e-6      # 4 unit weights
    True
    """
    v = np.atleast_2d(np.asarray(sumsq, dtype=np.float64))
    s = np.atleast_2d(np.asarray(maxabs, dtype=np.float64))
    b = np.array([float(x) for x in scales], dtype=np.float64)
    log_inv = np.broadcast_to(np.asarray(log_inv_delta, dtype=np.float64), v.shape[:1])
    if v.shape != s.shape or v.ndim != 2 or not 1 <= b.size <= 8 or v.shape[1] != b.size:
        raise ParameterError(f"sumsq and maxabs must be (q, {b.size}) arrays, got {v.shape} "
                             f"and {s.shape}")
    if not (np.all(np.isfinite(b)) and np.all(b > 0)):
        raise ParameterError("scales must be finite and > 0")
    if not (np.all(np.isfinite(v)) and np.all(v >= 0) and np.all(np.isfinite(s))
            and np.all(s >= 0)):
        raise ParameterError("sumsq and maxabs must be finite and >= 0")
    if not (np.all(np.isfinite(log_inv)) and np.all(log_inv > 0)):
        raise ParameterError("log_inv_delta must be finite and > 0")
    out = np.empty(v.shape[0])
    check(lib.pds_laplace_weighted_tail(v.shape[0], b.size, f64(b), f64(np.ascontiguousarray(v)),
                                        f64(np.ascontiguousarray(s)),
                                        f64(np.ascontiguousarray(log_inv)), f64(out)),
          "laplace_weighted_tail")
    return out
