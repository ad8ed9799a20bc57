"""The noise of the tree counters: digit sets, calibration, the pool, exact errors.

The release of a tree counter at time t is the true prefix sum plus one
discrete Laplace term of scale ``h/epsilon`` (or its l2 calibration with
``delta > 0``) per unit of each digit of t, written with h digits in base k
from a digit set ([APT] Definitions 3.2, 3.8 and A.5).  This module holds
that arithmetic (:func:`digit_low`, :func:`representation`,
:func:`weight_sum`), the parameters' checks and the node scale, the C state
with its pool of pre-drawn noise, and the exact error of a release
(:class:`TreeNoise`, mixed into the counters of :mod:`pydp_synopsis.counters`).
See docs/guide/counters.md.

References
----------
.. [APT] J. D. Andersson, R. Pagh, S. Torkamani, "Improved Counting under
   Continual Observation with Pure Differential Privacy": Algorithm 1 and
   Lemma 3.5, Algorithm 2 and Lemma 4.7, Appendix A.3 and Claim 1.
"""
import math
import threading
from fractions import Fraction

import numpy as np

from ._core import LIMITS, check, ffi, lib
from .accounting import check_delta_or_zero, unit_shift_scale
from .errors import DomainError, ParameterError
from .noise import discrete_laplace_variance
from .params import check_beta, check_int, dtype_name, exact_epsilon, renamed_keyword, scale_parts
from .tails import laplace_sum_tail

__all__ = ["TreeNoise", "digit_low", "representation", "weight_sum", "default_max_item",
           "MAX_HORIZON", "MAX_ITEM", "MAX_FANOUT", "MAX_NOISE_SCALE"]

# Limits of the C core (read from C, see _core.LIMITS).
#: Largest horizon T of the C core; a tree counter also needs
#: ``horizon * max_item <= MAX_ITEM``.
MAX_HORIZON = LIMITS.max_horizon          # 2**63 - 1
#: Largest prefix sum the C core keeps (``horizon * max_item`` is at most this).
MAX_ITEM = LIMITS.max_count                # 2**62
#: Largest fanout k of :class:`KaryTreeCounter`.
MAX_FANOUT = LIMITS.max_counter_fanout     # 65535
#: Largest noise scale h/epsilon: above it a sum of noise terms could approach
#: int64's range with non-negligible probability (such an epsilon is useless anyway).
MAX_NOISE_SCALE = 2**40


def digit_low(k, subtraction):
    """Smallest digit of the digit set of fanout ``k``; the largest is ``low + k - 1``.

    0 for standard digits (Algorithm 1), ``-(k-1)//2`` for odd ``k`` with
    subtraction (Definition 3.8), ``-(k/2 - 1)`` for even ``k``
    (Definition A.5).  Mirrors ``counter_low`` in ``csrc/counters.c``.

    Examples
    --------
    >>> digit_low(19, True), digit_low(20, True), digit_low(17, False)
    (-9, -9, 0)
    """
    if not subtraction:
        return 0
    return -((k - 1) // 2) if k % 2 else -(k // 2 - 1)


def representation(t, k, low):
    """The digits of ``t >= 0`` in base ``k`` with digits ``[low, low + k - 1]``, level 1 first.

    ``low = 0`` gives rep_k (Definition 3.2), ``low = -(k-1)/2`` rep-hat
    (Definition 3.8), ``low = -(k/2 - 1)`` rep-tilde (Definition A.5).
    O(log_k t).

    Examples
    --------
    >>> representation(7, 3, -1), representation(7, 3, 0)
    ([1, -1, 1], [1, 2])
    """
    digits = []
    while t:
        d = (t - low) % k + low
        digits.append(d)
        t = (t - d) // k
    return digits


def weight_sum(n, k, low):
    """Exact ``sum_{t=1..n} ||rep(t)||_1`` for the digit set ``[low, low + k - 1]``.

    The number of noise terms summed over releases 1..n.  Group t = kq + d
    by its last digit d: the group q = 0 holds d = 0..high, every full group
    q >= 1 holds all k digits (weight ``A = sum |d|``) plus k copies of
    ``w(q)``, and the group of n stops at n's last digit r.  So
    ``S(n) = high(high+1)/2 + (Q-1) A + k S(Q-1) + sum_{d=low..r} |d| + (r - low + 1) w(Q)``
    for ``n = kQ + r``, ``Q >= 1``, and ``n(n+1)/2`` for ``Q = 0``.
    O(log_k(n)^2) integer steps.

    Examples
    --------
    >>> weight_sum(7, 2, 0) == sum(bin(t).count("1") for t in range(1, 8))
    True
    """
    high = low + k - 1
    if n <= high:
        return n * (n + 1) // 2
    r = (n - low) % k + low
    q = (n - r) // k

    def down_to(d):  # sum_{j=low..d} |j|
        neg = -low
        if d < 0:
            return neg * (neg + 1) // 2 - (-d - 1) * (-d) // 2
        return neg * (neg + 1) // 2 + d * (d + 1) // 2

    full = down_to(high)
    w_q = sum(abs(d) for d in representation(q, k, low))
    return (high * (high + 1) // 2 + (q - 1) * full + k * weight_sum(q - 1, k, low)
            + down_to(r) + (r - low + 1) * w_q)


def default_max_item(horizon):
    """The public item bound used when none is given: ``2**62 // horizon``.

    Raises
    ------
    ParameterError
        For a horizon above ``2**62`` (no positive item bound keeps
        ``horizon * max_item <= 2**62``).
    """
    if horizon > MAX_ITEM:
        raise ParameterError(f"horizon must be in [1, 2**62] for a tree counter (horizon * max_item "
                             f"<= 2**62 keeps every prefix sum in range), got {horizon}")
    return MAX_ITEM // horizon


class TreeNoise:
    """The noise side of a tree counter (a mixin of ``_TreeCounter``): checked
    parameters and node scale, the C state and its pool, and the exact
    standard deviation, mean squared error and error bound of the releases.

    The class using it defines ``_check_fanout`` and the ``horizon`` and
    ``time`` properties.
    """

    @classmethod
    def _parameters(cls, horizon, epsilon, k, subtraction, max_item, total=None, delta=0):
        """Checked ``(horizon, epsilon, k, subtraction, max_item, layout, delta, scale)``; no side effect.

        ``total`` (internal: the sparse counter's inner counter) is a bound
        on the whole prefix sum that the caller guarantees; it replaces the
        item bound.  ``layout`` is ``(height, capacity, pool capacity)``;
        ``scale`` the node noise scale (:func:`~pydp_synopsis.accounting.unit_shift_scale`
        of the height).
        """
        horizon = check_int(horizon, "horizon", 1, MAX_HORIZON)
        eps = exact_epsilon(epsilon, "epsilon")
        delta = check_delta_or_zero(delta)
        k, subtraction = cls._check_fanout(k, subtraction)
        if total is None:
            top = default_max_item(horizon)
            max_item = top if max_item is None else check_int(max_item, "max_item", 1, top)
        else:
            max_item = check_int(total, "total", 0, MAX_ITEM)
        height, capacity, pool = (ffi.new("int32_t *") for _ in range(3))
        check(lib.pds_counter_layout(k, int(subtraction), horizon, height, capacity, pool, ffi.NULL))
        if Fraction(height[0]) / eps > MAX_NOISE_SCALE:
            raise ParameterError(
                f"epsilon must be at least {Fraction(height[0], MAX_NOISE_SCALE)} for this horizon "
                f"(noise scale height/epsilon at most 2**40), got {epsilon!r}"
            )
        scale = unit_shift_scale(height[0], eps, delta)   # <= height / eps
        return horizon, eps, k, subtraction, max_item, (height[0], capacity[0], pool[0]), delta, scale

    def _init(self, params, rng):
        """The one constructor (``__init__``, the decoder and the sparse
        counter's inner counter): checked parameters in, a counter at time 0
        with an empty pool out.  Draws nothing."""
        horizon, eps, k, subtraction, max_item, (height, capacity, pool), delta, scale = params
        self._lock = threading.RLock()
        self._epsilon = eps
        self._delta = delta
        self._max_item = max_item
        self._scale = scale
        self._rng = rng
        self._state = ffi.new("pds_counter *")
        self._digits = ffi.new("int32_t[]", height)
        self._slots = ffi.new("int64_t[]", capacity)
        self._pool = ffi.new("int64_t[]", pool)
        self._out = ffi.new("pds_counter_output *")   # update(x): its release or status
        scale_t, scale_s = scale_parts(self._scale)
        check(lib.pds_counter_init(self._state, k, int(subtraction), horizon, scale_t, scale_s,
                                   self._digits, self._slots, self._pool, height, capacity, pool))
        # update(x)'s one-item path: the bound lock methods, the C entry and
        # its arguments, looked up once (each attribute lookup costs ~20 ns
        # of a ~1.5 us update; `with` on an RLock ~0.2 us more than these).
        lock = self._lock
        self._fast = (lock.acquire, lock.release, rng._lock.acquire, rng._lock.release,
                      lib.pds_counter_update_item, self._state, rng._state, self._out, max_item)

    def _fill_pool(self):
        """Draw the pool of noise terms before the first release (counters.c, case (a))."""
        with self._lock, self._rng.native() as p:
            check(lib.pds_counter_fill_pool(self._state, p))

    @classmethod
    def _inner(cls, params, rng):
        """A counter for a composite counter: checked ``params`` (with a
        ``total``), no budget, and a pool drawn at its first step (case (c):
        the composite's seeded releases stay those of release 0.1)."""
        obj = cls.__new__(cls)
        obj._init(params, rng)
        return obj

    @property
    def delta(self):
        """The exact delta asked for (a Fraction; 0: pure epsilon-DP).

        The releases are ``(epsilon, delta)``-DP: node noise calibrated to
        the l2 sensitivity ``sqrt(h)`` ([APT2]_ section 5.2, Lemma 5.5,
        Theorem 1.3; [KOV15]_ Theorem 3.5), never more noise than the pure
        scale ``h / epsilon``.

        References
        ----------
        .. [APT2] J. D. Andersson, R. Pagh, S. Torkamani, "Count on Your
           Elders: Laplace vs Gaussian Noise", section 5.2.
        .. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem
           for Differential Privacy", ICML 2015, Theorem 3.5.
        """
        return self._delta

    @property
    def pure_epsilon(self):
        """The pure epsilon the releases also achieve: ``h / noise_scale`` (a Fraction).

        Equal to :attr:`epsilon` when ``delta == 0`` or when the pure scale
        is the smaller one; larger when the l2-calibrated scale is used
        (Theorem 1.3 of [APT2]_: the same noise is ``(epsilon, delta)``- and
        ``h / scale``-DP).

        References
        ----------
        .. [APT2] J. D. Andersson, R. Pagh, S. Torkamani, "Count on Your
           Elders", section 5.2, Theorem 1.3.
        """
        return Fraction(self.height) / self._scale

    @property
    def noise_scale(self):
        """Scale of the discrete Laplace noise of every node (a Fraction): h/epsilon, or
        its l2 calibration with ``delta > 0`` (docs/guide/counters.md)."""
        return self._scale

    def std(self, times=None):
        """Exact standard deviation of the noise of the release at ``times``.

        The release at t is the true prefix sum plus one independent noise
        term of scale h/epsilon per unit of each digit of t (APT Algorithms
        1 and 2; one per 1-bit for the binary tree), so its variance is that
        number of terms times
        :func:`~pydp_synopsis.noise.discrete_laplace_variance`.  Unlike
        :meth:`mean_squared_error` (the mean over t) this is per release;
        the mean of ``std(t)**2`` over ``t = 1..T`` is ``mean_squared_error(T)``.

        Parameters
        ----------
        times : int or array_like of int, optional
            Times in ``[0, horizon]`` (0: the empty prefix, exact); default
            the current time.

        Returns
        -------
        float or numpy.ndarray of float64

        Raises
        ------
        TypeError
            ``times`` not integers.
        DomainError
            A time outside ``[0, horizon]``.

        Notes
        -----
        O(h) per time, vectorised.

        Examples
        --------
        >>> from pydp_synopsis import KaryTreeCounter
        >>> from pydp_synopsis.noise import Rng, discrete_laplace_variance
        >>> c = KaryTreeCounter(horizon=100, epsilon=1.0, k=3, rng=Rng(2))
        >>> out = c.update_many([1] * 5)     # 5 = -1 - 1*3 + 1*9: three noise terms
        >>> round(c.std() ** 2 / discrete_laplace_variance(c.noise_scale), 9)
        3.0
        """
        var = discrete_laplace_variance(self._scale)
        scalar = times is None or np.ndim(times) == 0
        t = np.asarray(self.time if times is None else times)
        if t.dtype.kind not in "iu" or t.dtype == np.bool_:
            raise TypeError(f"times must be integers, got dtype {dtype_name(t.dtype)}")
        if t.size and (int(t.min()) < 0 or int(t.max()) > self.horizon):
            raise DomainError(f"times must be in [0, {self.horizon}] (the horizon, public)")
        k, low = self.k, int(self._state.low)
        x, used = t.astype(np.int64), np.zeros(t.shape, dtype=np.int64)
        while np.any(x):
            d = (x - low) % k + low
            used += np.abs(d)
            x = (x - d) // k
        out = np.sqrt(used * var)
        return float(out) if scalar else out

    # ------------------------------------------------------------- analysis
    def mean_squared_error(self, steps=None):
        """Exact expected MSE (mean variance) of the releases 1..steps.

        The release at t carries one noise term per unit of each digit of t
        (``||rep(t)||_1`` terms), so the MSE is the mean of that weight over
        t = 1..steps (:func:`weight_sum`, exact integers, any ``steps``)
        times the discrete Laplace variance at scale h/epsilon.  At full
        trees it is, with the paper's ``Var = 2 h^2/eps^2`` replaced by the
        discrete Laplace variance: Lemma 3.5 (Algorithm 1, ``T = k^h - 1``,
        mean weight ``h (k-1) / (2 (1 - k^-h))``), Lemma 4.7 (odd k with
        subtraction, ``T = (k^h - 1)/2``, ``h (k^2 - 1) / (4k (1 - k^-h))``)
        and Claim 1 (even k, ``T = k (k^h - 1) / (2 (k-1))``, the exact
        ``c_h / T`` of its recursion, ``~ kh / (4 (1 - k^-h))``).

        Parameters
        ----------
        steps : int, optional
            Number of releases averaged; default the horizon.

        Returns
        -------
        float

        Notes
        -----
        O(log(steps)^2) integer operations.
        """
        steps = self.horizon if steps is None else check_int(steps, "steps", 1, self.horizon)
        terms = weight_sum(steps, self.k, int(self._state.low))
        return float(Fraction(terms, steps)) * discrete_laplace_variance(self._scale)

    def error_bound(self, beta=None, releases=None, *, confidence=None):
        """An integer bound on the error of all releases, holding with probability >= ``confidence``.

        Each release's error is a sum of at most ``L = h * high``
        independent discrete Laplace terms of scale b = h/epsilon, ``high``
        the largest digit (``k - 1`` for Algorithm 1, ``(k-1)/2`` for odd k
        and ``k/2`` for even k with subtraction, 1 for the binary tree).  A
        Chernoff bound on that sum, with the exact moment generating function
        ``M(s) = (1-q)^2 / ((1-q e^s)(1-q e^-s))``, ``q = e^{-1/b}``, and a union
        bound over ``releases`` releases and both signs gives the smallest
        integer ``a`` with ``2 * releases * min_s e^{-s a} M(s)^L <= beta``
        (:func:`~pydp_synopsis.tails.laplace_sum_tail`, rounded up).

        Parameters
        ----------
        beta : float, optional
            Deprecated (kept until 0.3 with a DeprecationWarning, positional
            or keyword): the failure probability ``1 - confidence``.  In 0.3
            the first positional argument becomes ``confidence``, as in every
            other ``error_bound``.
        releases : int, optional
            Number of releases covered (default: the horizon).
        confidence : float, optional
            In ``(0, 1)``, default 0.95: the bound holds for every release at
            once with at least this probability (``beta = 1 - confidence``).

        Returns
        -------
        int
            ``a`` such that ``P(max_t |release_t - prefix_t| > a) <= 1 - confidence``.

        Notes
        -----
        O(log(a)) evaluations of a one-dimensional minimisation (floats: the
        bound describes accuracy, it decides nothing that is released).
        """
        if beta is None:                     # the new form: beta = 1 - confidence
            beta = 1.0 - check_beta(0.95 if confidence is None else confidence, "confidence")
        else:                                # the old form (0.2), the same bound as before
            renamed_keyword(f"{type(self).__name__}.error_bound", "beta", "confidence=1 - beta",
                            beta, confidence, None)
        return self._error_bound(beta, releases)

    def _error_bound(self, beta, releases=None):
        """:meth:`error_bound` at failure probability ``beta`` (checked here)."""
        beta = check_beta(beta, "beta")
        releases = self.horizon if releases is None else check_int(releases, "releases", 1, self.horizon)
        # the Chernoff t bounds P(S >= t); S is an integer, so ceil(t) is the
        # least integer a whose Chernoff bound is <= beta / (2 releases)
        t = laplace_sum_tail(self._max_path_length(), self._scale, math.log(2.0 * releases / beta))
        return max(1, math.ceil(t))

    def _max_path_length(self):
        return self.height * int(self._state.high)

    @property
    def epsilon(self):
        """The exact privacy parameter used (a Fraction, never above the one asked for)."""
        return self._epsilon

    @property
    def k(self):
        """Fanout of the tree (2 for the binary tree counter)."""
        return int(self._state.fanout)

    @property
    def subtraction(self):
        """True for offset digits (Algorithm 2, Appendix A.3), False for standard digits (Algorithm 1)."""
        return bool(self._state.subtraction)

    @property
    def height(self):
        """Tree height h; each item lies in h used nodes (the sensitivity)."""
        return int(self._state.height)

    def _delta_repr(self):
        """``", delta=..., pure_epsilon=..."`` for an (epsilon, delta) counter, else ``""``."""
        if not self._delta:
            return ""
        return f", delta={float(self._delta):.3g}, pure_epsilon={float(self.pure_epsilon):.6g}"
