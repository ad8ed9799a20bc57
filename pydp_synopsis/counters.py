"""Private counters under continual observation: the tree counters.

A counter reads a stream ``x_1, x_2, ...`` of non-negative integers one item
at a time and after each item releases a noisy prefix sum ``x_1 + ... + x_t``.
All noise is discrete Laplace drawn lazily from the C CSPRNG; releases are
integers.

Neighbouring streams
--------------------
Two streams are neighbours when they differ in one position by one unit
(one item added or removed there: a bit flipped, or a count changed by 1).
Each item lies in exactly ``h`` tree nodes that the counter uses, so the
sensitivity of the noisy node sums is ``h`` and noise of scale ``h/epsilon``
per node gives ``epsilon``-DP for the whole sequence of releases, whatever
the stream length up to the horizon.  Items may be any integers in
``[0, 2**62]`` (a count of items per time step); the bound only keeps the
prefix sums inside int64.  A stream whose items differ by more than one
unit at one position (for example a count changed by 5) is protected with
``5*epsilon``, not ``epsilon``.

References
----------
.. [APT] J. D. Andersson, R. Pagh, S. Torkamani, "Improved Counting under
   Continual Observation with Pure Differential Privacy":
   section 3.1 (binary tree mechanism), Algorithm 2 (k-ary tree with
   subtraction), Lemma 4.7 (its mean squared error), Lemmas 4.12 and 4.14
   (space and time).
"""

from fractions import Fraction
import abc
import math
import operator

import numpy as np

from . import persist
from ._core import check, ffi, lib
from .errors import DomainError, FormatError, HorizonError, ParameterError
from .budget import charge
from .noise import discrete_laplace_variance
from .params import check_beta, check_int, exact_epsilon, scale_parts
from .rng import Rng, resolve_rng
from .tails import laplace_sum_tail

__all__ = ["BinaryTreeCounter", "KaryTreeCounter"]

_MAX_HORIZON = 2**63 - 1
_MAX_ITEM = 2**62
_MAX_FANOUT = 65535
# A noise scale above 2^40 would let a sum of noise terms approach int64's
# range with non-negligible probability; such an epsilon is useless anyway.
_MAX_SCALE = 2**40
_STATE_VERSION = 1


def _offset_digits(t, k):
    """Offset base-k digits of ``t`` (level 1 first), digits in [-(k-1)/2, (k-1)/2]."""
    m = (k - 1) // 2
    digits = []
    while t:
        d = (t + m) % k - m
        digits.append(d)
        t = (t - d) // k
    return digits


def _offset_weight_sum(n, k):
    """Exact ``sum_{t=1..n} ||rep^_k(t)||_1`` in O(log_k(n)^2) integer steps.

    Group t by q = round(t / k): each full group has low digits -m..m
    (weight m(m+1)) and k copies of the weight of q.
    """
    m = (k - 1) // 2
    if n <= m:
        return n * (n + 1) // 2
    q = (n + m) // k
    r = n - k * q
    tri = m * (m + 1) // 2
    last = tri + (r * (r + 1) // 2 if r >= 0 else -((-r - 1) * -r // 2))
    weight_q = sum(abs(d) for d in _offset_digits(q, k))
    return tri + (q - 1) * m * (m + 1) + k * _offset_weight_sum(q - 1, k) + last + (r + m + 1) * weight_q


def _binary_weight_sum(n):
    """Exact ``sum_{t=1..n} popcount(t)`` in O(log n) integer steps."""
    if n <= 0:
        return 0
    q, r = divmod(n, 2)
    return 2 * _binary_weight_sum(q - 1) + q + (r + 1) * q.bit_count() + r


class _TreeCounter(abc.ABC):
    """Shared machinery: the C state machine, batching, checkpoints."""

    _fanout = 0
    _kind = ""

    def _setup(self, horizon, epsilon, fanout, rng, budget=None):
        # Everything is validated before the C state exists or rng is touched.
        horizon = check_int(horizon, "horizon", 1, _MAX_HORIZON)
        eps = exact_epsilon(epsilon, "epsilon")
        height = ffi.new("int32_t *")
        capacity = ffi.new("int32_t *")
        check(lib.pds_counter_shape(fanout, horizon, height, capacity))
        scale = Fraction(height[0]) / eps
        if scale > _MAX_SCALE:
            raise ParameterError(
                f"epsilon must be at least {Fraction(height[0], _MAX_SCALE)} for this horizon "
                f"(noise scale height/epsilon at most 2**40), got {epsilon!r}"
            )
        scale_t, scale_s = scale_parts(scale)
        rng = resolve_rng(rng, "rng")
        charge(budget, eps, f"{type(self).__name__}(horizon={horizon})")  # before any noise
        self._epsilon = eps
        self._scale = scale
        self._rng = rng
        self._state = ffi.new("pds_counter *")
        self._digits = ffi.new("int32_t[]", max(height[0], 1))
        self._slots = ffi.new("int64_t[]", max(capacity[0], 1))
        check(lib.pds_counter_init(self._state, fanout, horizon, scale_t, scale_s,
                                   self._digits, self._slots, height[0], capacity[0]))

    # ------------------------------------------------------------ properties
    @property
    def horizon(self):
        """Number of updates the counter accepts (T)."""
        return int(self._state.horizon)

    @property
    def time(self):
        """Number of updates done so far (the index of the last release)."""
        return int(self._state.time)

    @property
    def epsilon(self):
        """The exact privacy parameter used (a Fraction, never above the one asked for)."""
        return self._epsilon

    @property
    def k(self):
        """Fanout of the tree (2 for the binary tree counter)."""
        return int(self._state.fanout)

    @property
    def height(self):
        """Tree height h; each item lies in h used nodes (the sensitivity)."""
        return int(self._state.height)

    @property
    def noise_scale(self):
        """Scale h/epsilon of the discrete Laplace noise of every node (a Fraction)."""
        return self._scale

    # --------------------------------------------------------------- updates
    def update(self, x):
        """Feed one item and return the noisy prefix sum including it.

        Parameters
        ----------
        x : int
            Non-negative integer item (a bit, or a count of items) at most 2**62.

        Returns
        -------
        int
            Noisy ``x_1 + ... + x_t`` at the new time t.

        Notes
        -----
        O(1) amortised noise draws and O(k) worst case per level touched.

        Examples
        --------
        >>> from pydp_synopsis.noise import Rng
        >>> c = KaryTreeCounter(horizon=10, epsilon=1e9, k=3, rng=Rng(1))
        >>> c.update(1), c.update(0), c.update(1)
        (1, 1, 2)
        """
        x = check_int(x, "x", 0, _MAX_ITEM, DomainError)
        return int(self.update_many(np.array([x], dtype=np.int64))[0])

    def update_many(self, xs):
        """Feed a batch of items in one C call; return the releases.

        Parameters
        ----------
        xs : array_like of int
            One-dimensional non-negative integers (bool accepted), each at most 2**62.

        Returns
        -------
        numpy.ndarray of int64
            The noisy prefix sums after each item.

        Raises
        ------
        HorizonError
            If the batch would go past the horizon (nothing is consumed).
        DomainError
            For a negative item or a prefix sum above 2**62 (nothing is consumed).

        Notes
        -----
        O(len(xs)) time, O(1) amortised noise draws per item (Lemma 4.14).
        """
        xs = np.asarray(xs)
        if xs.size == 0 and xs.ndim == 1:
            xs = xs.astype(np.int64)  # [] is float64 to numpy
        if xs.dtype.kind not in "biu":
            raise TypeError(f"xs must hold integers, got dtype {xs.dtype}")
        if xs.ndim != 1:
            raise DomainError(f"xs must be one-dimensional, got shape {xs.shape}")
        n = xs.shape[0]
        if n > self.horizon - self.time:
            raise HorizonError(
                f"xs has {n} items but only {self.horizon - self.time} remain before the "
                f"horizon {self.horizon}"
            )
        if n and xs.dtype.kind != "b" and (xs.min() < 0 or xs.max() > _MAX_ITEM):
            raise DomainError(f"xs must be integers in [0, 2**62], got values in [{xs.min()}, {xs.max()}]")
        xs = np.ascontiguousarray(xs, dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        with self._rng.native() as p:
            st = lib.pds_counter_update_many(self._state, p, ffi.from_buffer("int64_t[]", xs),
                                             ffi.from_buffer("int64_t[]", out), n)
        if st == lib.PDS_ERANGE and not self._state.failed:
            raise DomainError("xs would make the prefix sum exceed 2**62")
        check(st)
        return out

    # ------------------------------------------------------------- analysis
    def mean_squared_error(self, steps=None):
        """Exact expected MSE (mean variance) of the releases 1..steps.

        The release at t carries one noise term per node on t's path, so the
        MSE is the mean path length times the discrete Laplace variance at
        scale h/epsilon.  For the k-ary counter and ``steps = (k**h - 1)/2``
        this is Lemma 4.7 with ``Var = 2 h^2/eps^2`` replaced by the discrete
        Laplace variance.

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
        return float(Fraction(self._path_weight_sum(steps), steps)) * discrete_laplace_variance(self._scale)

    def error_bound(self, beta, releases=None):
        """An integer bound on the error of all releases, holding with probability >= 1 - beta.

        Each release's error is a sum of at most ``L`` independent discrete
        Laplace terms of scale b = h/epsilon (``L = h`` for the binary tree,
        ``h (k-1)/2`` for Algorithm 2).  A Chernoff bound on that sum, with
        the exact moment generating function
        ``M(s) = (1-q)^2 / ((1-q e^s)(1-q e^-s))``, ``q = e^{-1/b}``, and a union
        bound over ``releases`` releases and both signs gives the smallest
        integer ``a`` with ``2 * releases * min_s e^{-s a} M(s)^L <= beta``
        (:func:`~pydp_synopsis.tails.laplace_sum_tail`, rounded up).

        Parameters
        ----------
        beta : float
            Failure probability, 0 < beta < 1.
        releases : int, optional
            Number of releases covered (default: the horizon).

        Returns
        -------
        int
            ``a`` such that ``P(max_t |release_t - prefix_t| > a) <= beta``.

        Notes
        -----
        O(log(a)) evaluations of a one-dimensional minimisation (floats: the
        bound describes accuracy, it decides nothing that is released).
        """
        beta = check_beta(beta, "beta")
        releases = self.horizon if releases is None else check_int(releases, "releases", 1, self.horizon)
        # the Chernoff t bounds P(S >= t); S is an integer, so ceil(t) is the
        # least integer a whose Chernoff bound is <= beta / (2 releases)
        t = laplace_sum_tail(self._max_path_length(), self._scale, math.log(2.0 * releases / beta))
        return max(1, math.ceil(t))

    def _max_path_length(self):
        m = 1 if self.k == 2 else (self.k - 1) // 2
        return self.height * m

    @abc.abstractmethod
    def _path_weight_sum(self, steps):
        """Sum over t = 1..steps of the number of noise terms in release t (exact int)."""

    # ----------------------------------------------------------- checkpoints
    def _check(self):
        """Assert the C invariants (digits represent time, noise sum matches)."""
        check(lib.pds_counter_check(self._state))

    def to_state(self):
        """Checkpoint: every number needed to continue the same release.

        The state holds the noise terms currently in use, which are secret:
        store it like a private key.  Restoring with :meth:`from_state` never
        redraws them.

        Returns
        -------
        dict
            JSON-able ints and lists.

        Notes
        -----
        O(k log_k T) (the size of the state, Lemma 4.12).
        """
        s = self._state
        return {
            "kind": self._kind,
            "version": _STATE_VERSION,
            "horizon": int(s.horizon),
            "k": int(s.fanout),
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "time": int(s.time),
            "prefix": int(s.prefix),
            "noise": int(s.noise),
            "digits": [int(self._digits[i]) for i in range(s.height)],
            "slots": [int(self._slots[i]) for i in range(s.capacity)],
            # A seeded generator's position (tests only), so a resumed seeded
            # run equals an uninterrupted one; None for OS-seeded generators.
            "rng": self._rng._to_state(),
        }

    @classmethod
    def from_state(cls, state, *, rng=None):
        """Restore a counter from :meth:`to_state` without redrawing any noise.

        Parameters
        ----------
        state : dict
            As returned by :meth:`to_state`.
        rng : Rng, optional
            Source for FUTURE noise draws only; default a fresh OS-seeded Rng.

        Raises
        ------
        FormatError
            If the state is not a consistent state of this class.

        Notes
        -----
        O(k log_k T).
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict, got {type(state).__name__}")
        if state.get("kind") != cls._kind or state.get("version") != _STATE_VERSION:
            raise FormatError(
                f"state is not a version {_STATE_VERSION} {cls._kind} state "
                f"(kind={state.get('kind')!r}, version={state.get('version')!r})"
            )
        try:
            eps = Fraction(*(operator.index(v) for v in state["epsilon"]))
            if rng is None and state.get("rng") is not None:
                rng = Rng._from_state(state["rng"])
            kwargs = {"horizon": state["horizon"], "epsilon": eps, "rng": rng}
            if cls._fanout == 0:
                kwargs["k"] = state["k"]
            obj = cls(**kwargs)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise FormatError(f"state has bad parameters: {exc}") from None
        if obj._epsilon != eps or obj.k != state["k"]:
            raise FormatError("state epsilon or k is not one this class produces")
        s = obj._state
        try:
            digits = [operator.index(v) for v in state["digits"]]
            slots = [operator.index(v) for v in state["slots"]]
            if len(digits) != s.height or len(slots) != s.capacity:
                raise ValueError("digits/slots have the wrong length")
            for i, d in enumerate(digits):
                obj._digits[i] = d
            for i, z in enumerate(slots):
                obj._slots[i] = z
            s.time = operator.index(state["time"])
            s.prefix = operator.index(state["prefix"])
            s.noise = operator.index(state["noise"])
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise FormatError(f"state has bad fields: {exc}") from None
        if lib.pds_counter_check(s) != lib.PDS_OK:
            raise FormatError("state is inconsistent (digits, time, noise terms or prefix)")
        return obj

    def _to_record(self):
        """(kind, meta, arrays, mode) for persist.save; mode 0o600 (secret noise)."""
        state = self.to_state()
        arrays = {"digits": np.array(state.pop("digits"), dtype=np.int64),
                  "slots": np.array(state.pop("slots"), dtype=np.int64)}
        return self._record_kind, state, arrays, 0o600

    @classmethod
    def _from_record(cls, meta, arrays):
        state = dict(meta)
        state["digits"] = [int(v) for v in arrays["digits"]]
        state["slots"] = [int(v) for v in arrays["slots"]]
        return cls.from_state(state)

    def __repr__(self):
        return (f"{type(self).__name__}(horizon={self.horizon}, epsilon={self._epsilon}, "
                f"k={self.k}, time={self.time})")


class BinaryTreeCounter(_TreeCounter):
    """Binary tree mechanism for continual counting (pure epsilon-DP).

    Height ``h = ceil(log2(T + 1))``; only left subtrees are used and never
    the root, so each item is in h used nodes and every node gets discrete
    Laplace noise of scale h/epsilon.  The release at t sums the noise of one
    node per 1-bit of t: its mean variance over t is ``mean popcount(t) * Var``.

    Parameters
    ----------
    horizon : int
        Maximum number of updates T, 1 <= T < 2**63.
    epsilon : float or Fraction
        Privacy parameter (> 0); the exact rational used is
        :attr:`epsilon` (rounded down).
    rng : Rng, optional
        Randomness; default a fresh OS-seeded Rng.  Seeds are for tests and
        benchmarks only.
    budget : Budget, optional
        Charged ``epsilon`` after the arguments are validated and before any
        noise is drawn (sequential composition, see :class:`~pydp_synopsis.Budget`).

    Notes
    -----
    State O(log T); one noise draw per update.  See the module docstring for
    the neighbouring relation.

    References
    ----------
    .. [APT] Andersson, Pagh, Torkamani, section 3.1 (Algorithm 1 with k = 2).

    Examples
    --------
    >>> from pydp_synopsis.noise import Rng
    >>> c = BinaryTreeCounter(horizon=1000, epsilon=1.0, rng=Rng(7))
    >>> out = c.update_many([1, 0, 1, 1])
    >>> c.time, c.height
    (4, 10)
    """

    _fanout = 2
    _kind = "BinaryTreeCounter"
    _record_kind = "binary_tree_counter"

    def __init__(self, *, horizon, epsilon, rng=None, budget=None):
        self._setup(horizon, epsilon, 2, rng, budget)

    def _path_weight_sum(self, steps):
        return _binary_weight_sum(steps)


class KaryTreeCounter(_TreeCounter):
    """k-ary tree mechanism with subtraction (Algorithm 2 of [APT]), pure epsilon-DP.

    The time t is written with offset base-k digits in [-(k-1)/2, (k-1)/2]
    on ``h = ceil(log_k(2T))`` levels; the release at t is the true prefix
    sum plus one noise term per unit of digit (Algorithm 2 lines 8-13), each
    discrete Laplace of scale h/epsilon, drawn lazily and kept only while in
    use.  For T = (k^h - 1)/2 the mean variance is
    ``a_T * Var`` with ``a_T = h (k^2 - 1) / (4k (1 - k^-h))`` (Lemma 4.7).

    Parameters
    ----------
    horizon : int
        Maximum number of updates T, 1 <= T < 2**63.
    epsilon : float or Fraction
        Privacy parameter (> 0); the exact rational used is :attr:`epsilon`.
    k : int
        Odd fanout, 3 <= k <= 65535 (19 minimises the asymptotic error,
        Corollary 4.9).  Even k (Appendix A.3) is not implemented.
    rng : Rng, optional
        Randomness; default a fresh OS-seeded Rng.  Seeds are for tests and
        benchmarks only.
    budget : Budget, optional
        Charged ``epsilon`` after the arguments are validated and before any
        noise is drawn (sequential composition, see :class:`~pydp_synopsis.Budget`).

    Notes
    -----
    State O(k log_k T) (Lemma 4.12); O(1) amortised noise draws and time per
    update, the noise sum being updated incrementally (Lemma 4.14).

    References
    ----------
    .. [APT] Andersson, Pagh, Torkamani, Algorithm 2, Lemmas 4.5, 4.7, 4.12, 4.14.

    Examples
    --------
    >>> from pydp_synopsis.noise import Rng
    >>> c = KaryTreeCounter(horizon=1000, epsilon=1.0, k=19, rng=Rng(7))
    >>> c.height, c.k
    (3, 19)
    """

    _kind = "KaryTreeCounter"
    _record_kind = "kary_tree_counter"

    def __init__(self, *, horizon, epsilon, k=19, rng=None, budget=None):
        if isinstance(k, bool):
            raise TypeError("k must be an integer, got bool")
        try:
            k = operator.index(k)
        except TypeError:
            raise TypeError(f"k must be an integer, got {type(k).__name__}") from None
        if k % 2 == 0:
            raise ParameterError(
                f"k must be odd (offset digits need a symmetric range; even k, Appendix A.3, "
                f"is not implemented), got {k}"
            )
        check_int(k, "k", 3, _MAX_FANOUT)
        self._setup(horizon, epsilon, k, rng, budget)

    def _path_weight_sum(self, steps):
        return _offset_weight_sum(steps, self.k)


persist.register(BinaryTreeCounter._record_kind)(BinaryTreeCounter._from_record)
persist.register(KaryTreeCounter._record_kind)(KaryTreeCounter._from_record)
