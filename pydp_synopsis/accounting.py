r"""Approximate-DP accounting: Laplace noise calibrated to l2 sensitivity, zCDP conversions.

Laplace noise scaled to the l2 sensitivity
------------------------------------------
Adding independent (discrete) Laplace noise of scale :math:`\lambda` to each
coordinate of a query with l1 sensitivity :math:`\Delta_1` is
:math:`(\Delta_1/\lambda)`-DP.  It is *also* :math:`(\varepsilon, \delta)`-DP
for an :math:`\varepsilon` that depends on the l2 sensitivity
:math:`\Delta_2` only (Andersson, Pagh, Torkamani, "Count on your elders",
§5.2, Lemma 5.5 and Theorem 1.3).

*Derivation.*  Fix neighbours whose query values differ by the vector
:math:`d`.  Coordinate :math:`i` is released with its own noise; its
privacy loss :math:`(|Z_i + d_i| - |Z_i|)/\lambda` lies in
:math:`[-\varepsilon_i, \varepsilon_i]` with :math:`\varepsilon_i = |d_i|/\lambda`,
so it is an :math:`\varepsilon_i`-DP mechanism -- for the discrete Laplace
(pmf :math:`\propto e^{-|z|/\lambda}`) exactly as for the continuous one.
The release is the composition of these :math:`\varepsilon_i`-DP mechanisms,
and the heterogeneous composition theorem of Kairouz, Oh and Viswanath
(Theorem 3.5, third term) gives :math:`(\tilde\varepsilon, \delta)`-DP with

.. math::

   \tilde\varepsilon = \sum_i \varepsilon_i \frac{e^{\varepsilon_i} - 1}{e^{\varepsilon_i} + 1}
        + \sqrt{2 \ln(1/\delta) \sum_i \varepsilon_i^2} .

(Its proof: the privacy losses are independent, bounded in
:math:`[-\varepsilon_i, \varepsilon_i]`, with means at most
:math:`\varepsilon_i \tanh(\varepsilon_i/2)`; Hoeffding's inequality bounds
:math:`P(\sum_i L_i > \tilde\varepsilon)` by :math:`\delta`.)  Lemma 5.4 of the
paper is the simplified form using :math:`\tanh(x/2) \le x/2`, so the first
sum is at most :math:`\frac12 \sum_i \varepsilon_i^2`; and
:math:`\sum_i \varepsilon_i^2 = \|d\|_2^2/\lambda^2 \le (\Delta_2/\lambda)^2`.  With
:math:`x = \Delta_2/\lambda` and :math:`L = \ln(1/\delta)`:

.. math::

   \tilde\varepsilon(x) = x^2/2 + x \sqrt{2L}.

The bound is tight in the worst case over shift patterns of a given l2
norm (many small :math:`\varepsilon_i`, where :math:`\tanh(x/2) \approx x/2`).
Solving :math:`x^2/2 + x\sqrt{2L} = \varepsilon` for the positive root:
:math:`x = \sqrt{2(\varepsilon + L)} - \sqrt{2L}`, that is

.. math::

   \lambda = \frac{\Delta_2}{\sqrt{2(\varepsilon + \ln(1/\delta))} - \sqrt{2\ln(1/\delta)}}
           = \frac{\Delta_2 \left(\sqrt{2(\varepsilon + L)} + \sqrt{2L}\right)}{2\varepsilon} .

The issue's reading of Lemma 5.5 is right.  The second form has no
cancellation and is what :func:`l2_laplace_scale` evaluates.  Theorem 1.3
adds the pure guarantee: the noise is also :math:`\Delta_1/\lambda`-DP, so
the scale needed is :math:`\min(\Delta_1/\varepsilon, \lambda)` when
``l1_sensitivity`` is given.  For small :math:`\varepsilon`,
:math:`\lambda \approx \Delta_2 \sqrt{2L}/\varepsilon`: it beats the pure scale
:math:`\Delta_1/\varepsilon` only when :math:`\Delta_1/\Delta_2 > \sqrt{2L}`, e.g.
for :math:`S` coordinates each shifted by one when :math:`S > 2\ln(1/\delta)`
(about 28 at :math:`\delta = 10^{-6}`); a tree counter with
:math:`h \le 15` levels never gains.

Exactness.  :math:`\lambda` is irrational; it is evaluated with the
``decimal`` module at 60 significant digits (``ln`` and ``sqrt`` are
correctly rounded there), inflated by a relative ``1e-45`` that covers
every rounding, and rounded **up** to a rational with 16 significant
digits.  :func:`l2_laplace_epsilon` rounds **up** the same way: no function
here claims less privacy loss than is true.

Tight check.  :func:`discrete_laplace_delta` computes the true
:math:`\delta(\varepsilon)` of discrete Laplace noise on a given integer shift
vector by convolving the per-coordinate privacy-loss distributions, which
live on the lattice :math:`\lambda^{-1}\mathbb{Z}` (tests use it to confirm the
calibration).

Concentrated DP
---------------
:func:`zcdp_delta` and :func:`zcdp_rho` convert :math:`\rho`-zCDP to
:math:`(\varepsilon, \delta)`-DP with the bound of Canonne, Kamath, Steinke
(2020, §2.2): :math:`\delta = \inf_{\alpha > 1}
\frac{e^{(\alpha-1)(\alpha\rho - \varepsilon)}}{\alpha - 1}(1 - 1/\alpha)^\alpha`; every
:math:`\alpha` gives a valid bound, so a float search for :math:`\alpha`
followed by an exact evaluation at the :math:`\alpha` found is rigorous.

References
----------
.. [APT] J. D. Andersson, R. Pagh, S. Torkamani. "Count on Your Elders:
   Laplace vs Gaussian Noise." §5.2: Lemma 5.4, Lemma 5.5, Corollary 5.7,
   Theorem 1.3.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath. "The Composition Theorem for
   Differential Privacy." ICML 2015, Theorem 3.5 (heterogeneous composition).
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020, §2.2 (concentrated DP to approximate DP).
"""
import decimal
import math
import numbers
from decimal import Decimal
from fractions import Fraction

import numpy as np

from .errors import ParameterError
from .params import MAX_SCALE, dtype_name, exact_epsilon, exact_scale

__all__ = [
    "check_delta",
    "check_delta_or_zero",
    "unit_shift_scale",
    "check_sensitivity",
    "real_fraction",
    "l2_laplace_scale",
    "l2_laplace_epsilon",
    "discrete_laplace_delta",
    "zcdp_delta",
    "zcdp_rho",
]

#: Largest admitted sensitivity (l1 or l2).
MAX_SENSITIVITY = 1 << 40
#: Working precision (significant digits) of the exact evaluations.
_PREC = 60
#: Relative inflation covering the rounding of a few correctly rounded
#: operations at _PREC digits (each at most 5e-60 relative).
_SLACK = Decimal("1e-45")
#: Significant digits of the rationals returned.
_DIGITS = 16
#: Largest total |shift| the tight accountant convolves.
_MAX_SHIFT_TOTAL = 1 << 20


# ------------------------------------------------------------------ checks

def real_fraction(value, name):
    """An exact Fraction for a finite real number (bool refused)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, not bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (numbers.Integral, np.integer)):
        return Fraction(int(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ParameterError(f"{name} must be finite, got {value}")
        return Fraction(value)
    if isinstance(value, (numbers.Real, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            raise ParameterError(f"{name} must be finite, got {value!r}")
        return Fraction(value)
    raise TypeError(f"{name} must be a real number (int, float or Fraction), not {type(value).__name__}")


def check_delta(delta, name="delta"):
    """``delta`` as an exact Fraction in the open interval (0, 1).

    A float is taken at its exact binary value (no rounding is needed: a
    smaller delta is never claimed).

    Examples
    --------
    >>> check_delta(Fraction(1, 10**6))
    Fraction(1, 1000000)
    """
    frac = real_fraction(delta, name)
    if not 0 < frac < 1:
        raise ParameterError(f"{name} must be in the open interval (0, 1), got {delta!r}")
    return frac


def check_delta_or_zero(delta, name="delta"):
    """``delta`` as an exact Fraction in the half-open interval [0, 1); 0 means pure epsilon-DP.

    The check of every ``delta=`` keyword of the synopses and counters.  A
    float is taken at its exact binary value.  Every refusal is one line
    naming ``name`` and the allowed range.

    Raises
    ------
    TypeError
        Not a real number (``bool`` included).
    ParameterError
        NaN, infinite, or outside ``[0, 1)``.

    Examples
    --------
    >>> check_delta_or_zero(0)
    Fraction(0, 1)
    >>> check_delta_or_zero(Fraction(1, 10**6))
    Fraction(1, 1000000)
    """
    rule = f"{name} must be a real number in [0, 1) (0: pure epsilon-DP)"
    if isinstance(delta, (bool, np.bool_)) or not isinstance(
            delta, (numbers.Real, np.floating, np.integer, Decimal)):
        raise TypeError(f"{rule}, not {type(delta).__name__}")
    try:
        frac = real_fraction(delta, name)
    except ParameterError:
        raise ParameterError(f"{rule}, got {delta!r}") from None
    if not 0 <= frac < 1:
        raise ParameterError(f"{rule}, got {delta!r}")
    return frac


def check_sensitivity(value, name):
    """A sensitivity as an exact Fraction in ``(0, 2**40]``."""
    frac = real_fraction(value, name)
    if not 0 < frac <= MAX_SENSITIVITY:
        raise ParameterError(f"{name} must be in (0, 2**40], got {value!r}")
    return frac


def _check_real_scale(value, name="scale"):
    frac = real_fraction(value, name)
    if not 0 < frac <= MAX_SCALE:
        raise ParameterError(f"{name} must be in (0, 2**48], got {value!r}")
    return frac


# ------------------------------------------------------- exact evaluation

def _context():
    return decimal.Context(prec=_PREC, rounding=decimal.ROUND_HALF_EVEN, Emax=10**6, Emin=-10**6)


def _dec(frac):
    return Decimal(frac.numerator) / Decimal(frac.denominator)


def _ln_inverse(delta):
    """ln(1/delta) = ln(den) - ln(num), both correctly rounded."""
    return Decimal(delta.denominator).ln() - Decimal(delta.numerator).ln()


def _decimal_grid(frac, digits):
    # 10**exp10 * frac has about `digits` digits before the point (the float
    # logarithm may be off by one near a power of ten: one digit more or less).
    exp10 = digits - 1 - math.floor(math.log10(frac.numerator) - math.log10(frac.denominator))
    return Fraction(10) ** exp10


def _ceil_fraction(frac, digits=_DIGITS):
    """The smallest rational m / 10**k (``digits`` significant digits) that is >= frac > 0."""
    grid = _decimal_grid(frac, digits)
    return Fraction(math.ceil(frac * grid)) / grid


def _floor_fraction(frac, digits=_DIGITS):
    """The largest rational m / 10**k (``digits`` significant digits) that is <= frac > 0."""
    grid = _decimal_grid(frac, digits)
    return Fraction(math.floor(frac * grid)) / grid


def _float_up(value):
    """The smallest float >= value (a Decimal or Fraction)."""
    f = float(value)
    if Fraction(f) < Fraction(value):
        f = math.nextafter(f, math.inf)
    return f


# ------------------------------------------------------- l2-Laplace

def l2_laplace_scale(l2_sensitivity, epsilon, delta, *, l1_sensitivity=None):
    r"""Laplace scale giving ``(epsilon, delta)``-DP from the l2 sensitivity ([APT]_ Lemma 5.5).

    Parameters
    ----------
    l2_sensitivity : int, float or Fraction
        :math:`\Delta_2`, the largest l2 distance between the query values of
        neighbours, ``0 < l2_sensitivity <= 2**40``.
    epsilon : int, float or Fraction
        Target epsilon (> 0), converted by :func:`~pydp_synopsis.exact_epsilon`
        (floats rounded down).
    delta : float or Fraction
        Target delta in (0, 1).
    l1_sensitivity : int, float or Fraction, optional
        :math:`\Delta_1`.  When given, the result is at most the pure scale
        :math:`\Delta_1/\varepsilon` (Theorem 1.3: the noise is also
        :math:`\Delta_1/\lambda`-DP).

    Returns
    -------
    Fraction
        :math:`\lambda = \Delta_2(\sqrt{2(\varepsilon+L)} + \sqrt{2L})/(2\varepsilon)`,
        :math:`L = \ln(1/\delta)`, rounded **up** to 16 significant digits;
        independent (discrete) Laplace noise of this scale on every
        coordinate is ``(epsilon, delta)``-DP.  See the module docstring for
        the derivation.

    Raises
    ------
    TypeError
        An argument is not a real number.
    ParameterError
        An argument is out of range, or the scale would exceed ``2**48``.

    Notes
    -----
    O(1): a few 60-digit decimal operations.

    References
    ----------
    .. [APT] Andersson, Pagh, Torkamani, "Count on Your Elders", Lemma 5.5, Theorem 1.3.
    .. [KOV15] Kairouz, Oh, Viswanath 2015, Theorem 3.5.

    Examples
    --------
    >>> lam = l2_laplace_scale(10, 1, Fraction(1, 10**6))   # 100 coordinates, each shifted by 1
    >>> float(lam) < 100                                      # the pure scale is 100/epsilon
    True
    >>> round(float(lam), 3)
    53.5
    """
    d2 = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    eps = exact_epsilon(epsilon, "epsilon")
    dlt = check_delta(delta, "delta")
    d1 = None if l1_sensitivity is None else check_sensitivity(l1_sensitivity, "l1_sensitivity")
    with decimal.localcontext(_context()):
        big_l = _ln_inverse(dlt)
        two = Decimal(2)
        lam = _dec(d2) * ((two * (_dec(eps) + big_l)).sqrt() + (two * big_l).sqrt()) / (two * _dec(eps))
        lam = lam * (1 + _SLACK)
    scale = _ceil_fraction(Fraction(lam))
    if d1 is not None:
        scale = min(scale, d1 / eps)
    if scale > MAX_SCALE:
        raise ParameterError(
            f"epsilon and delta give a Laplace scale above 2**48 for l2_sensitivity={l2_sensitivity!r}; "
            f"use a larger epsilon or delta")
    return exact_scale(scale)


def _sqrt_up(count):
    """The smallest m / 10**16 >= sqrt(count) (an exact rational upper bound)."""
    scaled = count * 10**32
    root = math.isqrt(scaled)
    if root * root != scaled:
        root += 1
    return Fraction(root, 10**16)


def unit_shift_scale(count, epsilon, delta):
    r"""The discrete Laplace scale of a release in which one item moves ``count`` noisy counts by one each.

    The tree synopses and counters release vectors of noisy counts in
    which one item changes exactly ``count`` coordinates by 1 (``L`` tree
    levels, ``S`` multi-tree nodes, ``h`` counter levels): l1 sensitivity
    ``count`` and l2 sensitivity ``sqrt(count)``.

    Parameters
    ----------
    count : int
        ``S >= 1``, the coordinates one item moves.
    epsilon : Fraction
        The exact epsilon of this part of the release (checked by the caller).
    delta : Fraction
        ``0`` for pure epsilon-DP, else in (0, 1) (checked by
        :func:`check_delta_or_zero`).

    Returns
    -------
    Fraction
        ``delta == 0``: ``S / epsilon`` exactly (the pure path, unchanged).
        ``delta > 0``: :func:`l2_laplace_scale` ``(sqrt(S), epsilon, delta,
        l1_sensitivity=S)``, with ``sqrt(S)`` rounded up to 16 decimals, so
        :math:`\min(S/\varepsilon, \lambda)`: ``(epsilon, delta)``-DP by
        Lemma 5.5 and never more noise than the pure scale (Theorem 1.3).
        The release is also ``S / scale``-DP (pure).

    References
    ----------
    .. [APT] Andersson, Pagh, Torkamani, "Count on Your Elders", section
       5.2, Lemma 5.5, Theorem 1.3.
    .. [KOV15] Kairouz, Oh, Viswanath 2015, Theorem 3.5.

    Examples
    --------
    >>> unit_shift_scale(3, Fraction(1, 2), 0)
    Fraction(6, 1)
    >>> float(unit_shift_scale(100, Fraction(1), Fraction(1, 10**6))) < 100
    True
    """
    if delta == 0:
        return Fraction(count) / epsilon
    return l2_laplace_scale(_sqrt_up(count), epsilon, delta, l1_sensitivity=count)


def l2_laplace_epsilon(l2_sensitivity, scale, delta, *, l1_sensitivity=None):
    r"""The epsilon that Laplace noise of ``scale`` guarantees at ``delta`` (inverse of :func:`l2_laplace_scale`).

    Parameters
    ----------
    l2_sensitivity : int, float or Fraction
        :math:`\Delta_2` (> 0).
    scale : int, float or Fraction
        The noise scale :math:`\lambda`, ``0 < scale <= 2**48``, taken at its
        exact value.
    delta : float or Fraction
        In (0, 1).
    l1_sensitivity : int, float or Fraction, optional
        When given, the result is at most :math:`\Delta_1/\lambda` (Theorem 1.3).

    Returns
    -------
    float
        :math:`x^2/2 + x\sqrt{2\ln(1/\delta)}` with :math:`x = \Delta_2/\lambda`
        (Lemma 5.4 and the proof of Lemma 5.5), rounded **up** to a float:
        never less than the bound proved.

    Notes
    -----
    O(1).

    Examples
    --------
    >>> lam = l2_laplace_scale(10, 1, Fraction(1, 10**6))
    >>> e = l2_laplace_epsilon(10, lam, Fraction(1, 10**6))
    >>> e <= 1.0, round(e, 9)
    (True, 1.0)
    """
    d2 = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    lam = _check_real_scale(scale, "scale")
    dlt = check_delta(delta, "delta")
    d1 = None if l1_sensitivity is None else check_sensitivity(l1_sensitivity, "l1_sensitivity")
    with decimal.localcontext(_context()):
        x = _dec(d2 / lam)
        eps = x * x / 2 + x * (2 * _ln_inverse(dlt)).sqrt()
        eps = eps * (1 + _SLACK)
    result = _float_up(eps)
    if d1 is not None:
        result = min(result, _float_up(d1 / lam))
    return result


def discrete_laplace_delta(shifts, scale, epsilon):
    r"""Exact :math:`\delta(\varepsilon)` of discrete Laplace noise on a query whose neighbours differ by ``shifts``.

    Each coordinate gets independent noise with pmf :math:`\propto e^{-|z|/b}`.
    Its privacy loss :math:`(|Z + d| - |Z|)/b` takes the values
    :math:`K/b`, :math:`K \in \{-|d|, -|d|+2, \dots, |d|\}`:
    :math:`P(K = |d|) = 1/(1+q)`, :math:`P(K = -|d|) = q^{|d|}/(1+q)` and
    :math:`P(K = |d| - 2m) = \frac{1-q}{1+q} q^m` for :math:`0 < m < |d|`
    (:math:`q = e^{-1/b}`), the same in both directions.  The total loss is
    the sum, whose distribution on the lattice :math:`b^{-1}\mathbb{Z}` is the
    convolution of the coordinates'; then
    :math:`\delta(\varepsilon) = E[(1 - e^{\varepsilon - L})_+]`, the smallest
    delta for which this pair of neighbours satisfies the definition.

    Parameters
    ----------
    shifts : array_like of int
        The integer difference vector of the two neighbours' query values
        (one entry per coordinate); ``sum(|shifts|) <= 2**20``.
    scale : int, float or Fraction
        The noise scale b (> 0).
    epsilon : int, float or Fraction
        ``epsilon >= 0``.

    Returns
    -------
    float
        delta, computed in float64 (a validation tool: it decides nothing
        that is released).

    Notes
    -----
    O(sum(|shifts|)^2) for direct (accurate) convolutions, grouped by the
    distinct values of |shift| and squared repeatedly.

    Examples
    --------
    >>> delta = discrete_laplace_delta([1] * 100, l2_laplace_scale(10, 1, 1e-6), 1)
    >>> delta <= 1e-6
    True
    """
    d = np.asarray(shifts)
    if d.dtype.kind not in "iu" and not (d.size == 0 and d.dtype.kind == "f"):
        raise TypeError(f"shifts must be integers, got dtype {dtype_name(d.dtype)}")
    if d.ndim != 1:
        raise ParameterError(f"shifts must be one-dimensional, got shape {d.shape}")
    mags = np.abs(d.astype(np.int64))
    total = int(mags.sum())
    if total > _MAX_SHIFT_TOTAL:
        raise ParameterError(f"shifts must have sum(|shifts|) <= 2**20, got {total}")
    b = float(_check_real_scale(scale, "scale"))
    eps = real_fraction(epsilon, "epsilon")
    if eps < 0:
        raise ParameterError(f"epsilon must be >= 0, got {epsilon!r}")
    q = math.exp(-1.0 / b)
    pmf = np.ones(1)
    for mag, count in zip(*np.unique(mags, return_counts=True)):
        pmf = np.convolve(pmf, _power(_coordinate_loss(int(mag), q), int(count)))
    k = np.arange(-total, total + 1, dtype=np.float64)
    x = float(eps) - k / b
    gain = np.where(x < 0, -np.expm1(np.minimum(x, 0.0)), 0.0)
    return float(np.sum(pmf * gain))


def _coordinate_loss(mag, q):
    """pmf of K (index K + mag) for one coordinate shifted by mag."""
    out = np.zeros(2 * mag + 1)
    if mag == 0:
        out[0] = 1.0
        return out
    out[2 * mag] = 1.0 / (1.0 + q)
    out[0] = q**mag / (1.0 + q)
    for m in range(1, mag):
        out[2 * mag - 2 * m] = (1.0 - q) / (1.0 + q) * q**m
    return out


def _power(pmf, count):
    result = np.ones(1)
    while count:
        if count & 1:
            result = np.convolve(result, pmf)
        count >>= 1
        if count:
            pmf = np.convolve(pmf, pmf)
    return result


# ------------------------------------------------------------------- zCDP

def _zcdp_log_delta_float(rho, eps, alpha):
    return (alpha - 1) * (alpha * rho - eps) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)


def _zcdp_best_alpha(rho, eps):
    """The alpha minimising the CKS bound (float bisection on its derivative)."""
    lo, hi = 1.0 + 1e-12, max(2.0, (eps + 1) / (2 * rho) + 2)
    for _ in range(200):
        mid = (lo + hi) / 2
        # d/dalpha of the log bound, up to the positive factor: (2a-1) rho - eps + ln(1 - 1/a)
        if (2 * mid - 1) * rho - eps + math.log1p(-1 / mid) < 0:
            lo = mid
        else:
            hi = mid
    return hi


def _zcdp_delta_exact(rho, eps, alpha):
    """An upper bound (Decimal) on the CKS bound at a rational alpha > 1."""
    with decimal.localcontext(_context()):
        a, r, e = _dec(alpha), _dec(rho), _dec(eps)
        t1 = (a - 1) * (a * r - e)
        t2 = a * (_dec((alpha - 1) / alpha)).ln()
        t3 = (a - 1).ln()
        err = (abs(t1) + abs(t2) + abs(t3) + 1) * _SLACK
        return (t1 + t2 - t3 + err).exp() * (1 + _SLACK)


def zcdp_delta(rho, epsilon):
    r"""delta such that :math:`\rho`-zCDP implies ``(epsilon, delta)``-DP ([CKS20]_ §2.2).

    Parameters
    ----------
    rho : int, float or Fraction
        ``rho > 0``.
    epsilon : int, float or Fraction
        ``epsilon >= 0``.

    Returns
    -------
    float
        :math:`\min(1, \inf_{\alpha>1} e^{(\alpha-1)(\alpha\rho-\varepsilon)}(1-1/\alpha)^\alpha/(\alpha-1))`
        evaluated at a near-optimal alpha with exact decimal arithmetic and
        rounded **up**.

    Examples
    --------
    >>> round(zcdp_delta(Fraction(1, 40), 1), 9)  # rho = 1/(2 sigma^2) for sigma^2 = 20
    1.336e-06
    """
    r = real_fraction(rho, "rho")
    if not 0 < r <= 2**40:
        raise ParameterError(f"rho must be in (0, 2**40], got {rho!r}")
    e = real_fraction(epsilon, "epsilon")
    if not 0 <= e <= 2**40:
        raise ParameterError(f"epsilon must be in [0, 2**40], got {epsilon!r}")
    alpha = Fraction(_zcdp_best_alpha(float(r), float(e)))
    return min(1.0, _float_up(_zcdp_delta_exact(r, e, alpha)))


def zcdp_rho(epsilon, delta):
    r"""The largest rho (rounded down) such that :math:`\rho`-zCDP implies ``(epsilon, delta)``-DP.

    Parameters
    ----------
    epsilon : int, float or Fraction
        > 0, via :func:`~pydp_synopsis.exact_epsilon`.
    delta : float or Fraction
        In (0, 1).

    Returns
    -------
    Fraction
        rho with 16 significant digits; :func:`zcdp_delta` of it is at most
        ``delta`` (checked exactly).

    Notes
    -----
    O(1): a float bisection, then one exact check (rarely two).

    Examples
    --------
    >>> rho = zcdp_rho(1, Fraction(1, 10**6))
    >>> zcdp_delta(rho, 1) <= 1e-6
    True
    """
    eps = exact_epsilon(epsilon, "epsilon")
    dlt = check_delta(delta, "delta")
    fe, log_target = float(eps), math.log(float(dlt))

    def ok(rho):
        return _zcdp_log_delta_float(rho, fe, _zcdp_best_alpha(rho, fe)) <= log_target

    lo, hi = 0.0, fe + 1.0
    while ok(hi):  # delta near 1 admits a large rho
        lo, hi = hi, 2 * hi
        if hi > 2**40:
            break
    for _ in range(100):
        mid = (lo + hi) / 2
        if mid > 0 and ok(mid):
            lo = mid
        else:
            hi = mid
    if lo <= 0:
        raise ParameterError(f"epsilon={epsilon!r} and delta={delta!r} are too small for zCDP accounting")
    rho = _floor_fraction(Fraction(lo))
    for _ in range(60):
        alpha = Fraction(_zcdp_best_alpha(float(rho), fe))
        if Fraction(_zcdp_delta_exact(rho, eps, alpha)) <= dlt:
            return rho
        rho = _floor_fraction(rho * Fraction(999999, 1000000))
    raise ParameterError(f"could not certify a rho for epsilon={epsilon!r}, delta={delta!r}")  # pragma: no cover
