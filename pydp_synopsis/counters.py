"""Private counters under continual observation: the tree counters.

A counter reads a stream ``x_1, x_2, ...`` of non-negative integers one item
at a time and after each item releases a noisy prefix sum ``x_1 + ... + x_t``.
All noise is discrete Laplace drawn lazily from the C CSPRNG; releases are
integers.  This module holds the binary and k-ary tree counters and
:class:`ContinualCounter`, the base every counter (also
:class:`~pydp_synopsis.SparseStreamCounter`) shares: item checks and the one
checkpoint format.

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

Checkpoints
-----------
A counter has one state format: its *record* ``(meta, arrays)``, exactly
what :func:`pydp_synopsis.save` writes (:func:`~pydp_synopsis.persist.write_record`).
``meta`` holds JSON values (a composite counter nests its parts' records as
dicts), ``arrays`` one-dimensional int64 arrays.  ``to_state()`` is a view
of the record: the same dict with every array put back, as a list of ints,
into the dict that owns it (``_array_places``); ``from_state()`` takes them
out again and calls the one validating decoder, the one
:func:`pydp_synopsis.load` calls.  Version 1 is release 0.1's format, so its
files and JSON states still load.  A tree counter's record:

=========== ==============================================================
``kind``    ``"BinaryTreeCounter"`` or ``"KaryTreeCounter"``
``version`` 1
``horizon`` T
``k``       fanout (2 for the binary tree)
``epsilon`` ``[numerator, denominator]`` of the exact epsilon
``time``    updates done
``prefix``  true prefix sum (secret)
``noise``   sum of the noise terms in use (secret); release = prefix + noise
``rng``     a seeded generator's position (tests only), None for OS seeds
``peak``    ``max(0, every release so far)``: the ``monotone=True`` count
            (public; absent in release 0.1 files: ``max(0, release)``)
``digits``  array: the h digits of ``time``, level 1 first
``slots``   array: the noise terms, level by level (secret)
=========== ==============================================================

See the README sections "Continual counters" and "Saving and loading".

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

import numpy as np

from . import persist
from ._core import LIMITS, check, ffi, lib
from .errors import DomainError, FormatError, HorizonError, ParameterError
from .budget import charge
from .noise import discrete_laplace_variance
from .params import check_beta, check_bool, check_int, exact_epsilon, scale_parts
from .rng import Rng, resolve_rng
from .tails import laplace_sum_tail

__all__ = ["ContinualCounter", "BinaryTreeCounter", "KaryTreeCounter"]

# Limits of the C core (read from C, see _core.LIMITS).
#: Largest horizon T.
MAX_HORIZON = LIMITS.max_horizon          # 2**63 - 1
#: Largest item; keeps every prefix sum inside int64.
MAX_ITEM = LIMITS.max_count                # 2**62
#: Largest fanout k of :class:`KaryTreeCounter`.
MAX_FANOUT = LIMITS.max_counter_fanout     # 65535
#: Largest noise scale h/epsilon: above it a sum of noise terms could approach
#: int64's range with non-negligible probability (such an epsilon is useless anyway).
MAX_NOISE_SCALE = 2**40
#: Version of the checkpoint format (release 0.1's).
STATE_VERSION = 1

_INT64 = np.iinfo(np.int64)


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


class ContinualCounter(abc.ABC):
    """Base of every counter: item checks and the one checkpoint format.

    A subclass names its state (``_kind``) and persist record
    (``_record_kind``), says where each array of its record sits in
    :meth:`to_state` (``_array_places``: array name -> key path of the dict
    holding it), and defines the one encoder :meth:`_encode` and the one
    decoder :meth:`_decode`.  Everything else -- :meth:`to_state`,
    :meth:`from_state`, :func:`pydp_synopsis.save` and :func:`pydp_synopsis.load`
    -- goes through those two.

    References
    ----------
    .. [APT] Andersson, Pagh, Torkamani, section 3.1 and Algorithm 2 (the
       tree counters).
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, section 3.1, Theorem 3.1
       (:class:`~pydp_synopsis.SparseStreamCounter`).
    """

    _kind = ""
    _record_kind = ""
    _array_places = {}

    @property
    @abc.abstractmethod
    def horizon(self):
        """Number of updates the counter accepts."""

    @property
    @abc.abstractmethod
    def time(self):
        """Number of updates done so far (the index of the last release)."""

    @abc.abstractmethod
    def update_many(self, xs):
        """Feed a batch of items; return the release after each one."""

    def update(self, x):
        """Feed one item and return the release after it.

        Parameters
        ----------
        x : int
            Non-negative integer item (a bit, or a count of items) at most 2**62.

        Returns
        -------
        int
            The release at the new time t (for a tree counter the noisy
            ``x_1 + ... + x_t``).

        Notes
        -----
        One call of :meth:`update_many`: O(1) amortised noise draws.

        Examples
        --------
        >>> from pydp_synopsis.noise import Rng
        >>> c = KaryTreeCounter(horizon=10, epsilon=1e9, k=3, rng=Rng(1))
        >>> c.update(1), c.update(0), c.update(1)
        (1, 1, 2)
        """
        x = check_int(x, "x", 0, MAX_ITEM, DomainError)
        return int(self.update_many(np.array([x], dtype=np.int64))[0])

    def _items(self, xs, name, room=True):
        """``xs`` as a contiguous int64 array, checked before anything is consumed.

        One-dimensional integers (bool accepted) in ``[0, 2**62]``; with
        ``room``, no more than the updates left before the horizon.
        """
        xs = np.asarray(xs)
        if xs.size == 0 and xs.ndim == 1:
            xs = xs.astype(np.int64)  # [] is float64 to numpy
        if xs.dtype.kind not in "biu":
            raise TypeError(f"{name} must hold integers, got dtype {xs.dtype}")
        if xs.ndim != 1:
            raise DomainError(f"{name} must be one-dimensional, got shape {xs.shape}")
        left = self.horizon - self.time
        if room and len(xs) > left:
            raise HorizonError(f"{name} has {len(xs)} items but only {left} remain before the "
                               f"horizon {self.horizon}")
        if len(xs) and xs.dtype.kind != "b" and (xs.min() < 0 or xs.max() > MAX_ITEM):
            raise DomainError(f"{name} must be integers in [0, 2**62], got values in "
                              f"[{xs.min()}, {xs.max()}]")
        return np.ascontiguousarray(xs, dtype=np.int64)

    # ----------------------------------------------------------- checkpoints
    @abc.abstractmethod
    def _encode(self):
        """The record ``(meta, arrays)``: the one encoder of the state."""

    @classmethod
    @abc.abstractmethod
    def _decode(cls, meta, arrays, rng):
        """The counter of a record whose kind and version were checked; ``rng``
        draws its future noise.  Raises FormatError (or KeyError, TypeError,
        ValueError, which :meth:`_from_record` turns into FormatError)."""

    def to_state(self):
        """Checkpoint: every number needed to continue the same release.

        A view of the counter's record (what :func:`~pydp_synopsis.save`
        writes): the fields listed in the module docstring, arrays as lists.
        The state holds the noise terms currently in use, which are secret:
        store it like a private key.  Restoring with :meth:`from_state` never
        redraws them.

        Returns
        -------
        dict
            JSON-able ints, lists and dicts.

        Notes
        -----
        O(size of the state): O(k log_k T) for a tree counter (Lemma 4.12).
        """
        meta, arrays = self._encode()
        return state_view(meta, arrays, self._array_places)

    @classmethod
    def from_state(cls, state, *, rng=None):
        """Restore a counter from :meth:`to_state` without redrawing any noise.

        Parameters
        ----------
        state : dict
            As returned by :meth:`to_state` (also after a JSON round trip).
        rng : Rng, optional
            Source for FUTURE noise draws only; default the seeded generator
            saved in the state (tests), else a fresh OS-seeded Rng.

        Raises
        ------
        FormatError
            If the state is not a consistent state of this class.

        Notes
        -----
        O(size of the state); the same validating decoder as
        :func:`pydp_synopsis.load`.
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict, got {type(state).__name__}")
        try:
            meta, arrays = record_view(state, cls._array_places)
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"state is not a {cls._kind} state (no {exc})") from None
        return cls._from_record(meta, arrays, rng=rng)

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`~pydp_synopsis.persist.save`;
        mode 0o600 (the state holds secret noise)."""
        meta, arrays = self._encode()
        return self._record_kind, meta, arrays, 0o600

    @classmethod
    def _from_record(cls, meta, arrays, *, rng=None):
        """The one validating decoder: :func:`~pydp_synopsis.persist.load`'s
        loader, :meth:`from_state`, and a composite counter's parts."""
        if rng is not None:
            rng = resolve_rng(rng, "rng")
        if not isinstance(meta, dict) or meta.get("kind") != cls._kind or meta.get("version") != STATE_VERSION:
            got = (meta.get("kind"), meta.get("version")) if isinstance(meta, dict) else type(meta).__name__
            raise FormatError(f"state is not a version {STATE_VERSION} {cls._kind} state (got {got!r})")
        try:
            if rng is None:
                # A seeded generator's position (tests only): a resumed seeded
                # run equals an uninterrupted one.  OS keys are never saved.
                saved = meta.get("rng")
                rng = Rng() if saved is None else Rng._from_state(saved)
            return cls._decode(meta, arrays, rng)
        except FormatError:
            raise
        except (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
            raise FormatError(f"state is not a consistent {cls._kind} state: {exc!r}") from None


def state_view(meta, arrays, places):
    """The JSON view of a record: ``meta`` with every array, as a list of
    ints, put into the dict at its place (``places[name]``: key path, ``()``
    for the top).  Inverse of :func:`record_view`.  O(size)."""
    state = _copy_along(meta, places)
    for name, path in places.items():
        _dict_at(state, path)[name] = arrays[name].tolist()
    return state


def record_view(state, places):
    """The record ``(meta, arrays)`` of a state: each array taken out of its
    place, as it is (the decoder checks it with :func:`int64_array`).  Raises
    KeyError or TypeError for a state without them."""
    meta = _copy_along(state, places)
    arrays = {name: _dict_at(meta, path).pop(name) for name, path in places.items()}
    return meta, arrays


def _copy_along(tree, places):
    """A copy of the dict ``tree`` whose sub-dicts on the places' paths are copies too."""
    top = dict(tree)
    for path in places.values():
        node = top
        for key in path:
            node[key] = dict(node[key])
            node = node[key]
    return top


def _dict_at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def int64_array(value, name, length=None):
    """A record's array (or a state's list) as a one-dimensional int64 array.

    Integers only (no bool, no float); FormatError otherwise, or for a
    length other than ``length``.
    """
    arr = np.asarray(value)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise FormatError(f"state field {name!r} must be a list of integers")
    if arr.size and arr.dtype.kind == "u" and int(arr.max()) > _INT64.max:
        raise FormatError(f"state field {name!r} is out of the int64 range")
    if length is not None and len(arr) != length:
        raise FormatError(f"state field {name!r} must have {length} entries, got {len(arr)}")
    return arr.astype(np.int64)


def state_fraction(pair, name):
    """An exact rational saved as ``[numerator, denominator]`` (both positive ints)."""
    num, den = pair
    return Fraction(check_int(num, name, 1, math.inf), check_int(den, name, 1, math.inf))


class _TreeCounter(ContinualCounter):
    """The C state machine of the tree counters, batching and their records."""

    _array_places = {"digits": (), "slots": ()}

    def __init__(self, *, horizon, epsilon, k, rng=None, budget=None):
        # Everything is validated before the C state exists or rng is touched.
        horizon, eps, k, height, capacity = self._parameters(horizon, epsilon, k)
        rng = resolve_rng(rng, "rng")
        charge(budget, eps, f"{type(self).__name__}(horizon={horizon})")  # before any noise
        self._init(horizon, eps, k, height, capacity, rng)

    @classmethod
    def _parameters(cls, horizon, epsilon, k):
        """Checked ``(horizon, epsilon, k, height, capacity)``; no side effect."""
        horizon = check_int(horizon, "horizon", 1, MAX_HORIZON)
        eps = exact_epsilon(epsilon, "epsilon")
        k = cls._check_fanout(k)
        height = ffi.new("int32_t *")
        capacity = ffi.new("int32_t *")
        check(lib.pds_counter_shape(k, horizon, height, capacity))
        if Fraction(height[0]) / eps > MAX_NOISE_SCALE:
            raise ParameterError(
                f"epsilon must be at least {Fraction(height[0], MAX_NOISE_SCALE)} for this horizon "
                f"(noise scale height/epsilon at most 2**40), got {epsilon!r}"
            )
        return horizon, eps, k, height[0], capacity[0]

    @classmethod
    @abc.abstractmethod
    def _check_fanout(cls, k):
        """``k`` checked for this class (TypeError or ParameterError)."""

    def _init(self, horizon, eps, k, height, capacity, rng):
        """The one constructor (``__init__`` and the decoder): checked
        parameters in, a counter at time 0 out."""
        self._epsilon = eps
        self._scale = Fraction(height) / eps
        self._rng = rng
        self._peak = 0       # max(0, every release so far): the monotone release
        self._state = ffi.new("pds_counter *")
        self._digits = ffi.new("int32_t[]", height)
        self._slots = ffi.new("int64_t[]", capacity)
        scale_t, scale_s = scale_parts(self._scale)
        check(lib.pds_counter_init(self._state, k, horizon, scale_t, scale_s,
                                   self._digits, self._slots, height, capacity))

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

    @property
    def release(self):
        """The value currently released: the noisy prefix sum at :attr:`time` (0 before any update)."""
        return int(self._state.prefix + self._state.noise)

    @property
    def true_prefix_sum(self):
        """The exact ``x_1 + ... + x_t`` of the items fed so far, without noise.

        This is the data, not a release: never publish it (checkpoints hold
        it too).  The sparse counter derives its sealed total from it.
        """
        return int(self._state.prefix)

    # --------------------------------------------------------------- updates
    def update(self, x, *, monotone=False):
        """Feed one item and return the release after it (see :meth:`update_many`).

        Examples
        --------
        >>> from pydp_synopsis.noise import Rng
        >>> c = KaryTreeCounter(horizon=10, epsilon=1e9, k=3, rng=Rng(1))
        >>> c.update(1), c.update(0), c.update(1, monotone=True)
        (1, 1, 2)
        """
        monotone = check_bool(monotone, "monotone")
        x = check_int(x, "x", 0, MAX_ITEM, DomainError)
        return int(self.update_many(np.array([x], dtype=np.int64), monotone=monotone)[0])

    def update_many(self, xs, *, monotone=False):
        """Feed a batch of items in one C call; return the releases.

        Parameters
        ----------
        xs : array_like of int
            One-dimensional non-negative integers (bool accepted), each at most 2**62.
        monotone : bool
            Return the running count made consistent online: at each t,
            ``max(0, release_1, ..., release_t)`` over every release since
            the start (:attr:`monotone_release`), so the counts shown never
            decrease and are never negative, and a count once shown never
            changes.  Post-processing of the releases: free in privacy.  It
            is biased upward (the running maximum of noisy values exceeds
            the true count by about the noise's expected maximum over a
            stretch of constant count), and its error is measured in
            README.md, "Consistent releases"; the raw releases are unbiased.

        Returns
        -------
        numpy.ndarray of int64
            The noisy prefix sums after each item (or their running maximum).

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
        monotone = check_bool(monotone, "monotone")
        xs = self._items(xs, "xs")
        n = len(xs)
        out = np.empty(n, dtype=np.int64)
        with self._rng.native() as p:
            st = lib.pds_counter_update_many(self._state, p, ffi.from_buffer("int64_t[]", xs),
                                             ffi.from_buffer("int64_t[]", out), n)
        if st == lib.PDS_ERANGE and not self._state.failed:
            raise DomainError("xs would make the prefix sum exceed 2**62")
        check(st)
        peaks = np.maximum.accumulate(np.maximum(out, self._peak))
        if n:
            self._peak = int(peaks[-1])
        return peaks if monotone else out

    @property
    def monotone_release(self):
        """``max(0, every release so far)``: the running count of ``monotone=True``.

        Released numbers only (public).  A checkpoint of release 0.1, which
        does not hold it, restarts it at ``max(0, release)``.
        """
        return self._peak

    def std(self, times=None):
        """Exact standard deviation of the noise of the release at ``times``.

        The release at t is the true prefix sum plus one independent noise
        term of scale h/epsilon per node on t's path (one per unit of its
        offset digits, APT Algorithm 2; one per 1-bit for the binary tree),
        so its variance is the path length times
        :func:`~pydp_synopsis.noise.discrete_laplace_variance`.  Unlike
        :meth:`mean_squared_error` (the mean over t) this is per release.

        Parameters
        ----------
        times : int or array_like of int, optional
            Times in ``[0, horizon]`` (0: the empty prefix, exact); default
            the current time.

        Returns
        -------
        float or numpy.ndarray of float64

        Notes
        -----
        O(h) per time.

        Examples
        --------
        >>> from pydp_synopsis.noise import Rng, discrete_laplace_variance
        >>> c = KaryTreeCounter(horizon=100, epsilon=1.0, k=3, rng=Rng(2))
        >>> out = c.update_many([1] * 5)     # 5 = -1 - 1*3 + 1*9: three noise terms
        >>> round(c.std() ** 2 / discrete_laplace_variance(c.noise_scale), 9)
        3.0
        """
        var = discrete_laplace_variance(self._scale)
        if times is None:
            used = sum(abs(int(self._digits[i])) for i in range(self.height))
            return math.sqrt(used * var)
        t = np.asarray(times)
        if t.dtype.kind not in "iu":
            raise TypeError(f"times must be integers, got dtype {t.dtype}")
        if t.size and (t.min() < 0 or t.max() > self.horizon):
            raise DomainError(f"times must be in [0, {self.horizon}], got values in "
                              f"[{t.min()}, {t.max()}]")
        x, used = t.astype(np.int64), np.zeros(t.shape, dtype=np.int64)
        half = 0 if self.k == 2 else (self.k - 1) // 2
        for _ in range(self.height):
            d = (x + half) % self.k - half
            used += np.abs(d)
            x = (x - d) // self.k
        return np.sqrt(used * var)

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
    def _encode(self):
        s = self._state
        meta = {
            "kind": self._kind,
            "version": STATE_VERSION,
            "horizon": self.horizon,
            "k": self.k,
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "time": self.time,
            "prefix": int(s.prefix),
            "noise": int(s.noise),
            "rng": self._rng._to_state(),
            "peak": self._peak,
        }
        arrays = {
            "digits": np.frombuffer(ffi.buffer(self._digits), dtype=np.int32, count=s.height).astype(np.int64),
            "slots": np.frombuffer(ffi.buffer(self._slots), dtype=np.int64, count=s.capacity).copy(),
        }
        return meta, arrays

    @classmethod
    def _decode(cls, meta, arrays, rng):
        saved_eps = state_fraction(meta["epsilon"], "epsilon")
        horizon, eps, k, height, capacity = cls._parameters(meta["horizon"], saved_eps, meta["k"])
        if eps != saved_eps:
            raise FormatError(f"state epsilon {saved_eps} is not one this class produces")
        obj = cls.__new__(cls)
        obj._init(horizon, eps, k, height, capacity, rng)
        s = obj._state
        digits = int64_array(arrays["digits"], "digits", s.height)
        slots = int64_array(arrays["slots"], "slots", s.capacity)
        narrow = digits.astype(np.int32)
        if np.any(narrow != digits):
            raise FormatError("state digits are out of range")
        ffi.memmove(obj._digits, narrow, narrow.nbytes)
        ffi.memmove(obj._slots, slots, slots.nbytes)
        s.time = check_int(meta["time"], "time", 0, horizon)
        s.prefix = check_int(meta["prefix"], "prefix", 0, MAX_ITEM)
        s.noise = check_int(meta["noise"], "noise", _INT64.min, _INT64.max)
        if lib.pds_counter_check(s) != lib.PDS_OK:
            raise FormatError("state is inconsistent (digits, time, noise terms or prefix)")
        floor = max(0, obj.release)
        peak = meta.get("peak")
        obj._peak = floor if peak is None else check_int(peak, "peak", floor, _INT64.max)
        return obj

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

    _kind = "BinaryTreeCounter"
    _record_kind = "binary_tree_counter"

    def __init__(self, *, horizon, epsilon, rng=None, budget=None):
        super().__init__(horizon=horizon, epsilon=epsilon, k=2, rng=rng, budget=budget)

    @classmethod
    def _check_fanout(cls, k):
        return check_int(k, "k", 2, 2)

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
        super().__init__(horizon=horizon, epsilon=epsilon, k=k, rng=rng, budget=budget)

    @classmethod
    def _check_fanout(cls, k):
        k = check_int(k, "k", 2, MAX_FANOUT)  # 2 is then refused as even
        if k % 2 == 0:
            raise ParameterError(
                f"k must be odd (offset digits need a symmetric range; even k, Appendix A.3, "
                f"is not implemented), got {k}"
            )
        return k

    def _path_weight_sum(self, steps):
        return _offset_weight_sum(steps, self.k)


for _cls in (BinaryTreeCounter, KaryTreeCounter):
    persist.register(_cls._record_kind)(_cls._from_record)
del _cls
