"""Tail bounds of sums of discrete Laplace noise: the one bound behind every ``error_bound``.

References
----------
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020 (the discrete Laplace and its MGF).
"""
import math
import numbers

import numpy as np

from .errors import ParameterError

__all__ = ["laplace_sum_tail"]


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
