r"""Continual counting with the square-root factorization and discrete Gaussian noise.

The prefix-sum matrix :math:`A` (lower-triangular, all ones) is the square
of the lower-triangular Toeplitz matrix :math:`L` with
:math:`L_{ij} = c_{i-j}`, :math:`c_j = \binom{2j}{j}/4^j` (the coefficients of
:math:`(1-x)^{-1/2}`; Henzinger, Upadhyay, Upadhyay, SODA 2023).  The
factorization mechanism releases :math:`A x + L z = L(Lx + z)`, Gaussian
noise :math:`z` calibrated to the l2 sensitivity of :math:`L` (its largest
column norm, :math:`\sqrt{\sum_{j<T} c_j^2} \approx \sqrt{\ln(T)/\pi}`), with mean
squared error :math:`\approx (\ln T/\pi)^2 \sigma^2`: the (epsilon, delta)
baseline of Andersson, Pagh, Torkamani §5.1.

The release, and why it is DP
-----------------------------
Integer noise cannot be added to :math:`Lx` directly: :math:`Lx` is not an
integer vector, and :math:`Lx + z` with integer :math:`z` would reveal
:math:`Lx \bmod 1`, hence :math:`x` (infinite privacy loss), and so would
:math:`Ax + Lz` computed exactly.  This counter uses an integer
factorization instead:

1. :math:`R` is the lower-triangular Toeplitz matrix of the integers
   :math:`r_j = \lfloor 2^k c_j + 1/2 \rceil` (:math:`k` =
   :attr:`~SqrtFactorizationCounter.precision_bits`, at most 24, public and
   fixed by ``horizon``, ``epsilon`` and ``delta``; :math:`r_0 = 2^k`).
2. The private vector is :math:`w = R x + z \in \mathbb{Z}^T` with
   :math:`z_t \sim \mathcal{N}_\mathbb{Z}(0, \sigma^2)` independent, drawn in C
   from the CSPRNG; :math:`Rx` is computed exactly (integer dot products, or
   an exact number-theoretic transform in C).
3. The release is :math:`y = B w` with :math:`B = A R^{-1}` (lower-triangular
   Toeplitz: the coefficients :math:`b_j` of :math:`1/((1-x) R(x))`), so
   :math:`y = Ax + Bz` and :math:`B \approx 2^{-k} L`: unbiased, with the error
   of the square-root factorization up to the rounding of :math:`c_j`.

*Privacy.*  Neighbouring streams differ at one time :math:`i` by one unit
(as for the other counters).  Then :math:`w` shifts by the integer vector
:math:`\pm R e_i = \pm(0, \dots, 0, r_0, \dots, r_{T-1-i})`, of squared l2 norm
at most :math:`S = \sum_{j<T} r_j^2` (an exact integer).  Independent discrete
Gaussian noise on an integer vector shifted by an integer vector of squared
norm :math:`\le S` is :math:`\rho`-zCDP with :math:`\rho = S/(2\sigma^2)`
(:mod:`pydp_synopsis.gaussian`), and :math:`\sigma^2` is chosen, rounded up,
so that :math:`\rho`-zCDP implies ``(epsilon, delta)``-DP
(:func:`~pydp_synopsis.accounting.zcdp_rho`).  Every release
:math:`y_1, \dots, y_t` is a function of :math:`w` alone, computed in
float64 -- post-processing, whatever the rounding -- and the randomness is
only :math:`z`.  The guarantee covers the whole sequence of releases up to
the horizon, for streams fixed in advance.

Exact :math:`Rx` needs ``max(R) * sum(x) < 2**62``: the items' total is at
most :attr:`~SqrtFactorizationCounter.max_total` :math:`= 2^{62-k} - 1`
(``2**38 - 1`` at 24 bits).

Budget: a :class:`~pydp_synopsis.Budget` with a ``total_delta`` is charged
``(epsilon, delta)`` when the counter is created (after every check, before
any noise is drawn); a pure budget (``total_delta=0``) refuses it.

References
----------
.. [HUU23] M. Henzinger, J. Upadhyay, S. Upadhyay. "Almost Tight Error
   Bounds on Differentially Private Continual Counting." SODA 2023
   (the square-root factorization and its error).
.. [APT] J. D. Andersson, R. Pagh, S. Torkamani. "Count on Your Elders:
   Laplace vs Gaussian Noise." §5.1: Lemma 5.1, Theorems 1.2 and 5.3.
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020, Algorithm 3, §2.2-2.3.
"""
import functools
import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from . import persist
from ._core import check, ffi, lib
from .accounting import check_delta, zcdp_rho
from .budget import charge, describe
from .errors import DomainError, FormatError, HorizonError, ParameterError
from .gaussian import MAX_SIGMA2, discrete_gaussian_variance, exact_sigma2, gaussian_fill
from .params import as_index, check_int, dtype_name, exact_epsilon
from .persist import int64_array, state_fraction
from .rng import Rng, resolve_rng  # noqa: F401  (Rng: doctests)

__all__ = ["SqrtFactorizationCounter", "sqrt_factor_coefficients", "MAX_HORIZON", "RECORD_KIND",
           "RECORD_VERSION"]

#: The persist record of a counter (:meth:`SqrtFactorizationCounter._to_record`).
RECORD_KIND = "sqrt-factorization-counter"
RECORD_VERSION = 1

#: Largest horizon (memory O(T): a few arrays of T words).
MAX_HORIZON = 1 << 22
_MAX_PRECISION = 24
_MIN_PRECISION = 8
#: sigma^2 of the integer noise stays below this when choosing precision_bits.
_SIGMA2_TARGET = 1 << 60
#: update_many batches longer than this use the O(t log t) transforms.
_DIRECT_BATCH = 8
#: update(x) converts ``x + _ITEM_BIAS``: a one-digit uncached int for 0 and 1 alike.
_ITEM_BIAS = lib.PDS_COUNTER_ITEM_BIAS


def sqrt_factor_coefficients(n):
    r"""The first ``n`` coefficients :math:`c_j = \binom{2j}{j}/4^j` of :math:`(1-x)^{-1/2}` (float64).

    The lower-triangular Toeplitz matrix :math:`L` of ``c`` squares to the
    all-ones lower-triangular :math:`A` (:math:`\sum_{i=0}^{m} c_i c_{m-i} = 1`).

    Parameters
    ----------
    n : int
        ``0 <= n <= 2**22``.

    Returns
    -------
    numpy.ndarray of float64
        Computed by the recurrence :math:`c_j = c_{j-1}(2j-1)/(2j)`
        (relative error below ``n * 1.2e-16``).

    Notes
    -----
    O(n).

    Examples
    --------
    >>> sqrt_factor_coefficients(4).tolist()
    [1.0, 0.5, 0.375, 0.3125]
    """
    n = check_int(n, "n", 0, MAX_HORIZON)
    j = np.arange(1, max(n, 1), dtype=np.float64)
    return np.concatenate(([1.0], np.cumprod((2 * j - 1) / (2 * j))))[:n]


def _convolve(a, b, n):
    """First n terms of the product of two float64 series (FFT)."""
    size = 1 << max(1, (len(a) + len(b) - 2).bit_length())
    return np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]


def _series_inverse(f, n):
    """First n coefficients of 1/f(x) (f[0] != 0), Newton's iteration g <- g + g (1 - f g)."""
    g = np.array([1.0 / f[0]])
    m = 1
    while m < n:
        m = min(2 * m, n)
        e = -_convolve(f[:m], g, m)
        e[0] += 1.0
        g = np.concatenate((g, np.zeros(m - len(g)))) + _convolve(g, e, m)
    return g[:n]


class _Plan(NamedTuple):
    rho: Fraction
    precision: int
    coef: np.ndarray      # r_j, int64
    sens2: int            # S = sum r_j^2
    sigma2: Fraction      # variance parameter of z
    noise_var: float      # Var(z_t)
    b: np.ndarray         # coefficients of B = A R^{-1}, float64
    mse_cum: np.ndarray   # mse_cum[t-1] = sum_{s<=t} sum_{j<s} b_j^2


@functools.lru_cache(maxsize=4)
def _plan(horizon, eps, delta):
    """Everything fixed by (horizon, epsilon, delta): public, no randomness."""
    c = sqrt_factor_coefficients(horizon)
    rho = zcdp_rho(eps, delta)
    # Largest k with 2^{2k} sum(c^2) / (2 rho) <= 2^60 (the rounding of r_j
    # adds < 1e-6 relative to S), capped at 24 bits.
    room = _SIGMA2_TARGET * 2 * float(rho) / (float(np.dot(c, c)) * 1.001)
    precision = min(_MAX_PRECISION, math.floor(math.log2(room) / 2))
    if precision < _MIN_PRECISION:
        raise ParameterError(
            f"epsilon={eps} and delta={delta} need more noise than the sampler takes for horizon "
            f"{horizon} (use a larger epsilon or delta)")
    coef = np.floor(c * 2.0**precision + 0.5).astype(np.int64)
    sens2 = int(np.dot(coef, coef))          # < 2^53: exact in int64
    sigma2 = exact_sigma2(Fraction(sens2) / (2 * rho), "sigma2")
    assert sigma2 <= MAX_SIGMA2
    b = np.cumsum(_series_inverse(coef / 2.0**precision, horizon)) / 2.0**precision
    mse_cum = np.cumsum(np.cumsum(b * b))
    for arr in (coef, b, mse_cum):
        arr.setflags(write=False)
    return _Plan(rho, precision, coef, sens2, sigma2, discrete_gaussian_variance(sigma2), b, mse_cum)


class SqrtFactorizationCounter:
    r"""Square-root factorization counter with discrete Gaussian noise, ``(epsilon, delta)``-DP.

    Releases an unbiased float estimate of every prefix sum, online: the
    release at time t is :math:`(Bw)_t` with :math:`w = Rx + z` (module
    docstring: the construction and its privacy proof).  Its error has
    variance :math:`\mathrm{Var}(z_t) \sum_{j<t} b_j^2`, close to
    :math:`\sigma_0^2 \sum_{j<t} c_j^2` where :math:`\sigma_0^2` is the noise
    variance the continuous square-root mechanism would need at this
    (epsilon, delta) under zCDP accounting.

    Parameters
    ----------
    horizon : int
        Maximum number of updates T, ``1 <= T <= 2**22``.
    epsilon : float or Fraction
        > 0 (the exact rational used is :attr:`epsilon`, rounded down).
    delta : float or Fraction
        In (0, 1).
    rng : Rng, optional
        Randomness; default a fresh OS-seeded Rng.  Seeds are for tests and
        benchmarks only.
    budget : Budget, optional
        Charged ``(epsilon, delta)`` after every check, before any noise is
        drawn (:class:`~pydp_synopsis.Budget` with a ``total_delta``).

    Raises
    ------
    TypeError, ParameterError
        For a bad argument (named), before any noise is drawn.

    Notes
    -----
    Memory O(T).  :meth:`update` costs O(t) at time t (two dot products);
    :meth:`update_many` with more than 8 items costs O(t log t) (an exact
    number-theoretic transform for :math:`Rx` and an FFT for :math:`Bw`).
    The first counter for a given (horizon, epsilon, delta) computes the
    plan (:math:`R`, :math:`B`, :math:`\sigma^2`) in O(T log T); the last
    four plans are cached.

    Saves and loads like the tree counters (:func:`pydp_synopsis.save`, a
    ``sqrt-factorization-counter`` record, mode 0600): the record holds the
    items and the noisy ``w`` so far, which are secret (store it like a
    private key); a loaded counter continues the same release (a seeded
    generator's position is saved, an OS-seeded one never: it draws fresh
    noise).

    References
    ----------
    .. [HUU23] Henzinger, Upadhyay, Upadhyay, SODA 2023.
    .. [APT] Andersson, Pagh, Torkamani, "Count on Your Elders", §5.1.
    .. [CKS20] Canonne, Kamath, Steinke 2020.

    Examples
    --------
    >>> c = SqrtFactorizationCounter(horizon=1000, epsilon=1, delta=1e-6, rng=Rng(7))
    >>> out = c.update_many([1, 0, 1, 1])
    >>> out.dtype, c.time, c.precision_bits
    (dtype('float64'), 4, 24)
    >>> round(c.mean_squared_error(), 1)   # mean variance of the 1000 releases (no randomness)
    197.6
    """

    def __init__(self, *, horizon, epsilon, delta, rng=None, budget=None):
        horizon = check_int(horizon, "horizon", 1, MAX_HORIZON)
        eps = exact_epsilon(epsilon, "epsilon")
        dlt = check_delta(delta, "delta")
        rng = resolve_rng(rng, "rng")
        self._plan = _plan(horizon, eps, dlt)
        charge(budget, eps, describe("SqrtFactorizationCounter", horizon=horizon, epsilon=eps,
                                     delta=dlt), dlt)
        self._horizon = horizon
        self._epsilon = eps
        self._delta = dlt
        self._rng = rng
        self._x = np.zeros(horizon, dtype=np.int64)
        self._w = np.zeros(horizon, dtype=np.int64)
        self._time = 0
        self._total = np.int64(0)   # a numpy scalar: compared without Python int branches

    # ------------------------------------------------------------ properties
    @property
    def horizon(self):
        """Number of updates the counter accepts (T)."""
        return self._horizon

    @property
    def time(self):
        """Number of updates done so far."""
        return self._time

    @property
    def epsilon(self):
        """The exact epsilon guaranteed (Fraction)."""
        return self._epsilon

    @property
    def delta(self):
        """The exact delta guaranteed (Fraction)."""
        return self._delta

    @property
    def rho(self):
        """zCDP parameter of the release (Fraction): ``sensitivity_squared / (2 sigma2)`` or less."""
        return self._plan.rho

    @property
    def precision_bits(self):
        """k: the integer factor is ``R = round(2**k L)``."""
        return self._plan.precision

    @property
    def sensitivity_squared(self):
        """S = sum of r_j^2: the squared l2 sensitivity of ``R x`` (int)."""
        return self._plan.sens2

    @property
    def sigma2(self):
        """Variance parameter of the integer noise z (Fraction, in units of ``R x``)."""
        return self._plan.sigma2

    @property
    def max_total(self):
        """Largest sum of all items, ``2**(62 - k) - 1`` (exact ``R x`` below 2**62)."""
        return (1 << (62 - self._plan.precision)) - 1

    # --------------------------------------------------------------- updates
    def update(self, x):
        """Feed one item; return the estimate of the prefix sum including it (a float).

        Parameters
        ----------
        x : int
            Non-negative integer item (the total stays at most :attr:`max_total`).

        Raises
        ------
        TypeError
            ``x`` is not an integer (bools are refused).
        DomainError
            ``x`` outside ``[0, max_total]``, or the total would exceed
            :attr:`max_total` (the message gives the range, never the value).

        Notes
        -----
        O(t) at time t.  The item is touched once, as ``x + 1024`` (the tree
        counters' offset), and checked as a numpy scalar, so 0 and 1 take
        the same interpreter paths (``docs/security-timing.md``).
        """
        if type(x) is not int:
            x = as_index(x, "x")
        try:
            xs = np.array([x + _ITEM_BIAS], dtype=np.int64) - _ITEM_BIAS
        except OverflowError:
            xs = None
        if xs is None or bool((xs.min() < 0) | (xs.max() > self.max_total)):
            raise DomainError(f"x must be an integer in [0, {self.max_total}] (max_total, public)")
        return self.update_many(xs).item()

    def update_many(self, xs):
        """Feed a batch of items; return the estimates after each one (float64 array).

        Raises
        ------
        HorizonError
            The batch would go past the horizon (nothing is consumed).
        DomainError
            A negative item, or the items' total above :attr:`max_total`
            (nothing is consumed).

        Notes
        -----
        O(len(xs) * t) for at most 8 items, else O(t log t) at time t.
        """
        xs = np.asarray(xs)
        if xs.size == 0 and xs.ndim == 1:
            xs = xs.astype(np.int64)
        if xs.dtype.kind not in "biu":
            raise TypeError(f"xs must hold integers, got dtype {dtype_name(xs.dtype)}")
        if xs.ndim != 1:
            raise DomainError(f"xs must be one-dimensional, got shape {xs.shape}")
        n = xs.shape[0]
        if n > self._horizon - self._time:
            raise HorizonError(f"xs has {n} items but only {self._horizon - self._time} remain "
                               f"before the horizon {self._horizon}")
        batch = 0
        if n:
            # numpy scalar comparisons: a Python int comparison branches on 0
            # having no digit (docs/security-timing.md)
            if xs.dtype.kind != "b" and bool(xs.min() < 0):
                raise DomainError("xs must be non-negative integers")
            if bool(xs.max() > self.max_total):
                raise DomainError(f"xs must be at most max_total = 2**{62 - self.precision_bits} - 1")
            batch = xs.sum(dtype=np.int64)  # at most 2^22 items below 2^38 each
        total = self._total + batch      # an int64 scalar
        if bool(total > self.max_total):
            raise DomainError(f"xs would make the total exceed max_total = 2**{62 - self.precision_bits} - 1")
        xs = xs.astype(np.int64)
        if n == 0:
            return np.empty(0, dtype=np.float64)
        z = gaussian_fill(self._plan.sigma2, n, self._rng)
        t0, t1 = self._time, self._time + n
        plan = self._plan
        self._x[t0:t1] = xs
        if n <= _DIRECT_BATCH:
            out = np.empty(n, dtype=np.float64)
            for i in range(n):
                t = t0 + i
                self._w[t] = int(np.dot(plan.coef[t::-1], self._x[:t + 1])) + int(z[i])
                out[i] = float(np.dot(plan.b[t::-1], self._w[:t + 1].astype(np.float64)))
        else:
            rx = np.empty(t1, dtype=np.int64)
            check(lib.pds_lower_toeplitz_apply(ffi.from_buffer("int64_t[]", plan.coef),
                                               ffi.from_buffer("int64_t[]", self._x), t1,
                                               ffi.from_buffer("int64_t[]", rx)),
                  "R x")
            self._w[t0:t1] = rx[t0:t1] + z
            out = _convolve(plan.b[:t1], self._w[:t1].astype(np.float64), t1)[t0:t1]
        self._time = t1
        self._total = total
        return out

    @classmethod
    def release_all(cls, xs, *, epsilon, delta, rng=None, budget=None):
        """Offline: all prefix-sum estimates of a whole stream at once (horizon = len(xs)).

        The same release as a counter of that horizon fed ``xs`` in one
        batch (same privacy), computed in O(T log T).

        Parameters
        ----------
        xs : array_like of int
            One-dimensional, non-negative, 1 to 2**22 items.
        epsilon, delta, rng, budget
            As for the constructor.

        Returns
        -------
        numpy.ndarray of float64

        Examples
        --------
        >>> y = SqrtFactorizationCounter.release_all([1] * 100, epsilon=1, delta=1e-6, rng=Rng(3))
        >>> y.shape
        (100,)
        """
        arr = np.asarray(xs)
        if arr.ndim != 1:
            raise DomainError(f"xs must be one-dimensional, got shape {arr.shape}")
        if not 1 <= len(arr) <= MAX_HORIZON:
            raise DomainError(f"xs must hold 1 to 2**22 items, got {len(arr)}")
        if arr.dtype.kind not in "biu":
            raise TypeError(f"xs must hold integers, got dtype {arr.dtype}")
        return cls(horizon=len(arr), epsilon=epsilon, delta=delta, rng=rng,
                   budget=budget).update_many(arr)

    # ------------------------------------------------------------- analysis
    def mean_squared_error(self, steps=None):
        r"""Exact expected MSE (mean variance) of the releases 1..steps.

        :math:`\mathrm{Var}(z_t) \cdot \frac{1}{\mathrm{steps}} \sum_{t=1}^{\mathrm{steps}} \sum_{j<t} b_j^2`
        with the discrete Gaussian's exact variance and this counter's
        :math:`B = A R^{-1}` (float64).

        Parameters
        ----------
        steps : int, optional
            Number of releases averaged; default the horizon.

        Returns
        -------
        float

        Notes
        -----
        O(1) (the partial sums are part of the plan).
        """
        steps = self._horizon if steps is None else check_int(steps, "steps", 1, self._horizon)
        return self._plan.noise_var * float(self._plan.mse_cum[steps - 1]) / steps

    # ----------------------------------------------------------- persistence
    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`~pydp_synopsis.persist.save`; mode
        0o600: the items and ``w`` so far are secret."""
        t = self._time
        meta = {
            "kind": "SqrtFactorizationCounter",
            "version": RECORD_VERSION,
            "horizon": self._horizon,
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "delta": [self._delta.numerator, self._delta.denominator],
            "time": t,
            "rng": self._rng._to_state(),
        }
        return RECORD_KIND, meta, {"items": self._x[:t].copy(), "w": self._w[:t].copy()}, 0o600

    def _check(self):
        """Assert the invariants: w - R x is the noise drawn so far (an integer vector)."""
        t = self._time
        assert self._total == int(self._x[:t].sum())
        assert not self._x[t:].any() and not self._w[t:].any()

    def __repr__(self):
        return (f"SqrtFactorizationCounter(horizon={self._horizon}, epsilon={self._epsilon}, "
                f"delta={float(self._delta):.3g}, time={self._time})")


@persist.register(RECORD_KIND)
def _load(meta, arrays):
    """Rebuild a saved counter (every field checked; no noise is redrawn)."""
    try:
        if meta.get("kind") != "SqrtFactorizationCounter" or meta.get("version") != RECORD_VERSION:
            raise FormatError(f"not a version {RECORD_VERSION} SqrtFactorizationCounter record")
        horizon = check_int(meta["horizon"], "horizon", 1, MAX_HORIZON)
        eps = state_fraction(meta["epsilon"], "epsilon")
        dlt = state_fraction(meta["delta"], "delta")
        if exact_epsilon(eps, "epsilon") != eps or check_delta(dlt, "delta") != dlt:
            raise FormatError("record epsilon or delta is not one the counter produces")
        t = check_int(meta["time"], "time", 0, horizon)
        items = int64_array(arrays["items"], "items", t)
        w = int64_array(arrays["w"], "w", t)
        saved = meta.get("rng")
        rng = Rng() if saved is None else Rng._from_state(saved)
        obj = SqrtFactorizationCounter(horizon=horizon, epsilon=eps, delta=dlt, rng=rng)
        if t and (int(items.min()) < 0 or int(items.max()) > obj.max_total
                  or int(items.sum()) > obj.max_total):
            raise FormatError("record items must be non-negative with a total of at most "
                              "max_total")
        obj._x[:t], obj._w[:t] = items, w
        obj._time, obj._total = t, np.int64(items.sum()) if t else np.int64(0)
    except (KeyError, TypeError, ValueError, ParameterError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid SqrtFactorizationCounter record: {exc}") from exc
    return obj
