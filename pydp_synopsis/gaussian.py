r"""Exact discrete Gaussian noise and its (epsilon, delta) calibration.

The discrete Gaussian :math:`\mathcal{N}_\mathbb{Z}(0, \sigma^2)` has pmf
:math:`\propto e^{-z^2/(2\sigma^2)}` on the integers.  It is sampled in C
with integer arithmetic only (Canonne, Kamath & Steinke 2020, Algorithm 3:
discrete Laplace proposals accepted by exact Bernoulli(exp(-.)) coins), from
the ChaCha20 CSPRNG; :math:`\sigma^2` is an exact rational.

Privacy
-------
*Scalar queries* (an integer query whose neighbours differ by at most an
integer :math:`\Delta`): CKS Theorem 7 gives the exact
:math:`\delta(\varepsilon) = P[X \ge \varepsilon\sigma^2/\Delta - \Delta/2]
- e^\varepsilon P[X \ge \varepsilon\sigma^2/\Delta + \Delta/2]`,
:math:`X \sim \mathcal{N}_\mathbb{Z}(0, \sigma^2)`, computed here by summation
over the support (``scalar=True``).

*Vector queries* (integer vectors whose neighbours differ by at most
:math:`\Delta` in l2 norm, noise on every coordinate): the exact
:math:`\delta` depends on the whole shift vector, so the guarantee goes
through concentrated DP.  For an integer shift :math:`d` and real
:math:`\alpha > 1`, completing the square gives
:math:`\sum_z p(z-d)^\alpha p(z)^{1-\alpha}
= e^{\alpha(\alpha-1)d^2/(2\sigma^2)} \sum_z e^{-(z-\alpha d)^2/(2\sigma^2)} / \sum_z e^{-z^2/(2\sigma^2)}`,
and the last ratio is at most 1 (a theta function is largest at integer
shifts), so the Rényi divergence of each coordinate is at most
:math:`\alpha d_i^2/(2\sigma^2)`; adding over coordinates, the release is
:math:`\rho`-zCDP with :math:`\rho = \Delta^2/(2\sigma^2)`, exactly as for the
continuous Gaussian (CKS §2.3).  :func:`~pydp_synopsis.accounting.zcdp_delta`
converts that to :math:`(\varepsilon, \delta)` (CKS §2.2).  This is the
default (``scalar=False``); it is valid for scalars too, a little weaker.

References
----------
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020: Algorithm 3 (sampler), Theorem 7
   (exact scalar delta), §2.2 (zCDP to approximate DP), §2.3 (multivariate).
"""
import math
import numbers
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ._core import check, ffi, lib
from .accounting import check_delta, check_sensitivity, real_fraction, zcdp_delta, zcdp_rho
from .errors import ParameterError
from .params import check_sample_shape, exact_epsilon
from .rng import Rng, resolve_rng  # noqa: F401  (Rng: doctests)

__all__ = [
    "MAX_SIGMA2",
    "exact_sigma2",
    "discrete_gaussian",
    "discrete_gaussian_variance",
    "discrete_gaussian_delta",
    "discrete_gaussian_sigma2",
]

#: Largest admitted variance parameter sigma^2 (samples stay far inside int64).
MAX_SIGMA2 = 1 << 62
#: Numerator and denominator handed to C stay below this.
_PART_LIMIT = 1 << 63
#: The exact scalar delta sums over about 40 sigma terms: up to this sigma^2.
_MAX_SCALAR_SIGMA2 = 1 << 32



def _query_sensitivity(l2_sensitivity, scalar):
    """The checked l2 sensitivity; an integer for a scalar (integer-valued) query."""
    if scalar:
        if isinstance(l2_sensitivity, (bool, np.bool_)) or not isinstance(l2_sensitivity, (numbers.Integral, np.integer)):
            raise TypeError(f"l2_sensitivity must be an integer when scalar=True, "
                            f"not {type(l2_sensitivity).__name__}")
        return check_sensitivity(int(l2_sensitivity), "l2_sensitivity")
    return check_sensitivity(l2_sensitivity, "l2_sensitivity")

def _admitted(frac):
    return (frac.numerator < _PART_LIMIT and frac.denominator < _PART_LIMIT
            and lib.pds_discrete_gaussian_check(frac.numerator, frac.denominator) == lib.PDS_OK)


def _admit(frac, name):
    """``frac`` itself if the C sampler admits it, else the next rational above with a binary denominator."""
    if _admitted(frac):
        return frac
    for bits in range(62, -1, -1):
        den = 1 << bits
        cand = Fraction(-(-frac.numerator * den // frac.denominator), den)
        if _admitted(cand):
            return cand
    raise ParameterError(f"{name} cannot be represented for the sampler")  # pragma: no cover


def exact_sigma2(sigma2, name="sigma2"):
    """The exact rational variance parameter used for ``sigma2`` (rounded **up**).

    Parameters
    ----------
    sigma2 : int, float, Fraction or Decimal
        ``0 < sigma2 <= 2**62``.  A float stands for its shortest decimal
        form when that is not smaller, else for its exact binary value
        (``0.1`` is its binary value, slightly above 1/10).  A rational the C sampler cannot take (parts too
        large for its 128-bit arithmetic, see ``csrc/pydp_synopsis.h``) is
        rounded up to the next one with a binary denominator it can.
    name : str
        Argument name used in error messages.

    Returns
    -------
    Fraction

    Raises
    ------
    TypeError
        Not a real number.
    ParameterError
        Not finite or outside ``(0, 2**62]``.

    Examples
    --------
    >>> exact_sigma2(2.5)
    Fraction(5, 2)
    >>> exact_sigma2(Fraction(11 * 2**60 + 1, 11))   # parts too large for the sampler
    Fraction(4611686018427387905, 4)
    """
    exact = real_fraction(sigma2, name)
    if not 0 < exact <= MAX_SIGMA2:
        raise ParameterError(f"{name} must be in (0, 2**62], got {sigma2!r}")
    if isinstance(sigma2, (float, np.floating)):
        short = Fraction(repr(float(sigma2)))
        if short >= exact:
            exact = short
    return _admit(exact, name)


def discrete_gaussian(sigma2, size=None, *, rng=None):
    r"""Exact discrete Gaussian samples: P(z) proportional to ``exp(-z**2 / (2 sigma2))``.

    Parameters
    ----------
    sigma2 : int, float or Fraction
        The variance parameter :math:`\sigma^2`, ``0 < sigma2 <= 2**62``,
        made exact by :func:`exact_sigma2` (rounded up).  The variance of
        the samples is slightly below it (:func:`discrete_gaussian_variance`).
    size : None, int or tuple of int, optional
        ``None`` returns one Python ``int``; otherwise an ``int64`` array of
        that shape.
    rng : Rng, optional
        Source of randomness; a fresh OS-seeded generator by default.

    Returns
    -------
    int or numpy.ndarray of int64

    Notes
    -----
    O(size) expected time, one C call: every proposal is accepted with
    probability about 0.6 or more, and each costs a discrete Laplace draw and a
    few coins.  Calibration: :func:`discrete_gaussian_sigma2`.

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke 2020, Algorithm 3.

    Examples
    --------
    >>> z = discrete_gaussian(4, size=1000, rng=Rng(seed=0))
    >>> z.dtype, z.shape
    (dtype('int64'), (1000,))
    """
    frac = exact_sigma2(sigma2)
    shape, count = check_sample_shape(size)
    rng = resolve_rng(rng)
    out = gaussian_fill(frac, count, rng)
    return int(out[0]) if shape is None else out.reshape(shape)


def gaussian_fill(frac, count, rng):
    """``count`` samples for an admitted sigma^2 (callers validated)."""
    out = np.empty(count, dtype=np.int64)
    with rng.native() as p:
        check(lib.pds_discrete_gaussian_fill(p, frac.numerator, frac.denominator,
                                             ffi.from_buffer("int64_t[]", out), count),
              "discrete_gaussian")
    return out


def _support(sigma2):
    """Integers 0..m covering all but e^-800 of the mass on each side."""
    return np.arange(0, int(40 * math.sqrt(sigma2)) + 41, dtype=np.float64)


def _log_normaliser(sigma2):
    """ln sum_z exp(-z^2/(2 sigma^2)) (float)."""
    if sigma2 >= 64:
        # Poisson summation: sqrt(2 pi s) (1 + 2 sum_k exp(-2 pi^2 s k^2));
        # the k >= 1 terms are below e^-1263 here.
        return 0.5 * math.log(2 * math.pi * sigma2)
    z = _support(sigma2)
    w = np.exp(-z * z / (2 * sigma2))
    return math.log(2 * float(np.sum(w)) - 1)


def discrete_gaussian_variance(sigma2):
    r"""Variance of :math:`\mathcal{N}_\mathbb{Z}(0, \sigma^2)`: :math:`\sum_z z^2 p(z)` (a float).

    Slightly below ``sigma2`` (by about ``2e-3`` relative at ``sigma2 = 0.5``,
    about ``2e-7`` at ``sigma2 = 1``, nothing a float shows from ``sigma2 = 3``).

    Examples
    --------
    >>> round(discrete_gaussian_variance(0.5), 6)
    0.498979
    >>> discrete_gaussian_variance(100) == 100.0
    True
    """
    s = float(exact_sigma2(sigma2))
    if s >= 64:
        # Poisson summation: the deficit is below 4 pi^2 s^2 e^{-2 pi^2 s} < 1e-500.
        return s
    z = _support(s)
    w = np.exp(-z * z / (2 * s))
    return float(2 * np.sum(z * z * w) / (2 * np.sum(w) - 1))


def _scalar_delta(sigma2, sens, eps):
    """CKS Theorem 7, summed in float64 and rounded up by a margin far above its error."""
    s = float(sigma2)
    lo = math.floor(float(eps * sigma2 / sens - Fraction(sens, 2))) + 1
    hi = math.floor(float(eps * sigma2 / sens + Fraction(sens, 2))) + 1
    log_norm = _log_normaliser(s)

    def mass(a, b):
        """P(a <= X < b) by summation over |z| (b may be None: the tail)."""
        if b is None:
            b = max(a, 0) + int(40 * math.sqrt(s)) + 41
        if a >= b:
            return 0.0
        z = np.arange(a, b, dtype=np.float64)
        return float(np.sum(np.exp(-z * z / (2 * s) - log_norm)))

    between = mass(lo, hi)
    tail = mass(hi, None)  # truncation drops < e^-800: makes delta larger, never smaller
    grow = math.expm1(float(eps))
    delta = between - grow * tail
    # Each float term has relative error below ~1e-13 (the exponent's
    # argument is below 800); 1e-10 of the gross terms covers the sums.
    return max(0.0, delta) + 1e-10 * (between + grow * tail) + 1e-300


def discrete_gaussian_delta(sigma2, l2_sensitivity, epsilon, *, scalar=False):
    r"""delta at which discrete Gaussian noise of ``sigma2`` gives ``(epsilon, delta)``-DP.

    Parameters
    ----------
    sigma2 : int, float or Fraction
        Variance parameter of the noise on every coordinate (via :func:`exact_sigma2`).
    l2_sensitivity : int, float or Fraction
        :math:`\Delta`: neighbours' query values differ by at most this in
        l2 norm (for ``scalar=True``: an integer, the largest difference of
        a scalar integer query).
    epsilon : int, float or Fraction
        ``epsilon >= 0``.
    scalar : bool
        ``True``: the query is one integer; CKS Theorem 7, exact (summed
        over the support; for ``sigma2 > 2**32`` the zCDP bound is used).
        ``False`` (default): integer vectors; the zCDP bound with
        :math:`\rho = \Delta^2 / (2\sigma^2)` (module docstring).

    Returns
    -------
    float
        delta, rounded **up** (never smaller than the bound proved).

    Examples
    --------
    >>> d_vec = discrete_gaussian_delta(20, 1, 1)
    >>> d_one = discrete_gaussian_delta(20, 1, 1, scalar=True)
    >>> d_one < d_vec < 2e-6
    True
    """
    s2 = exact_sigma2(sigma2)
    sens = _query_sensitivity(l2_sensitivity, scalar)
    eps = real_fraction(epsilon, "epsilon")
    if not 0 <= eps <= 2**40:
        raise ParameterError(f"epsilon must be in [0, 2**40], got {epsilon!r}")
    if scalar and s2 <= _MAX_SCALAR_SIGMA2:
        return min(1.0, _scalar_delta(s2, int(sens), eps))
    rho = sens * sens / (2 * s2)
    return 1.0 if rho > 2**40 else zcdp_delta(rho, eps)


def discrete_gaussian_sigma2(l2_sensitivity, epsilon, delta, *, scalar=False):
    r"""The smallest sigma^2 (rounded up) giving ``(epsilon, delta)``-DP with discrete Gaussian noise.

    Parameters
    ----------
    l2_sensitivity : int, float or Fraction
        As in :func:`discrete_gaussian_delta`.
    epsilon : int, float or Fraction
        > 0 (via :func:`~pydp_synopsis.exact_epsilon`, rounded down).
    delta : float or Fraction
        In (0, 1).
    scalar : bool
        As in :func:`discrete_gaussian_delta`.

    Returns
    -------
    Fraction
        ``scalar=False``: :math:`\Delta^2/(2\rho)` with :math:`\rho` from
        :func:`~pydp_synopsis.accounting.zcdp_rho` (rounded down), then
        :func:`exact_sigma2`.  ``scalar=True``: a bisection on Theorem 7 to
        relative resolution 1e-9, the result checked with
        :func:`discrete_gaussian_delta`.

    Raises
    ------
    ParameterError
        The variance needed exceeds ``2**62``.

    Examples
    --------
    >>> s2 = discrete_gaussian_sigma2(1, 1, Fraction(1, 10**6))
    >>> round(float(s2), 3), discrete_gaussian_delta(s2, 1, 1) <= 1e-6
    (20.529, True)
    """
    eps = exact_epsilon(epsilon, "epsilon")
    dlt = check_delta(delta, "delta")
    sens = _query_sensitivity(l2_sensitivity, scalar)
    rho = zcdp_rho(eps, dlt)
    bound = sens * sens / (2 * rho)  # the zCDP answer: valid in both cases
    if bound > MAX_SIGMA2:
        raise ParameterError(f"epsilon={epsilon!r} and delta={delta!r} need sigma2 above 2**62 "
                             f"for l2_sensitivity={l2_sensitivity!r}")
    if not scalar or bound > _MAX_SCALAR_SIGMA2:
        return exact_sigma2(bound)
    target = float(dlt)
    lo, hi = 0.0, float(bound)
    for _ in range(80):  # Theorem 7's delta falls as sigma^2 grows
        mid = (lo + hi) / 2
        if mid > 0 and _scalar_delta(Fraction(mid), int(sens), eps) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-9 * hi:
            break
    cand = exact_sigma2(Fraction(Decimal(repr(hi))))
    while discrete_gaussian_delta(cand, int(sens), eps, scalar=True) > dlt:
        cand = exact_sigma2(cand * (1 + Fraction(1, 10**6)))  # pragma: no cover - float margin
    return min(cand, exact_sigma2(bound))
