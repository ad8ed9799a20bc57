"""Private counters under continual observation: the tree counters.

A counter reads a stream ``x_1, x_2, ...`` of non-negative integers one item
at a time and after each item releases a noisy prefix sum ``x_1 + ... + x_t``.
All noise is discrete Laplace from the C CSPRNG; releases are integers.
This module holds :class:`ContinualCounter`, the base every counter (also
:class:`~pydp_synopsis.SparseStreamCounter`) shares -- item checks, locking
and the one checkpoint format (its record helpers) -- and the binary and
k-ary tree counters' C state machine, updates and records; their noise
(digit sets, calibration, the pre-drawn pool, exact errors) is
:mod:`pydp_synopsis.tree_noise`.

The neighbouring relation, the (epsilon, delta) calibration, when an update
raises, timing, threads and copies, and the fields of a checkpoint are in
docs/guide/counters.md ("How the tree counters work"); saving in
docs/guide/saving.md.

References
----------
.. [APT] J. D. Andersson, R. Pagh, S. Torkamani, "Improved Counting under
   Continual Observation with Pure Differential Privacy":
   section 3.1 (binary tree mechanism), Algorithm 1 and Lemma 3.5 (k-ary
   tree), Algorithm 2 and Lemma 4.7 (k-ary tree with subtraction),
   Appendix A.3, Claim 1 and Corollary A.7 (even k), Lemmas 4.12 and 4.14
   (space and time).
"""

from fractions import Fraction
import abc

import numpy as np

from . import persist
from .persist import check_pure_epsilon, int64_array, state_delta, state_fraction
from ._core import check, ffi, lib
from .errors import DomainError, FormatError, HorizonError
from .budget import charge
from .noise_terms import check_discrete_laplace_terms
from .params import as_index, check_bool, check_int, dtype_name
from .rng import Rng, resolve_rng
from .tree_noise import MAX_FANOUT, MAX_ITEM, TreeNoise

__all__ = ["ContinualCounter", "BinaryTreeCounter", "KaryTreeCounter"]

#: Version of the checkpoint format (release 0.1's).
STATE_VERSION = 1

_INT64 = np.iinfo(np.int64)
# Statuses with which the C core refuses an update before changing anything
# (PDS_EINVAL: from update(x)'s one-item entry, an item outside [0, max_item]).
_EHORIZON, _ESTATE, _EINVAL = lib.PDS_EHORIZON, lib.PDS_ESTATE, lib.PDS_EINVAL
#: update(x) passes ``x + _ITEM_BIAS`` to C: every item below 2**30 - 1024 is
#: then a one-digit int outside CPython's cache, 0 and 1 alike (module
#: docstring, "Timing").
_ITEM_BIAS = lib.PDS_COUNTER_ITEM_BIAS


class ContinualCounter(abc.ABC):
    """Base of every counter: item checks, the lock and the one checkpoint format.

    A subclass names its state (``_kind``) and persist record
    (``_record_kind``), says where each array of its record sits in
    :meth:`to_state` (``_array_places``: array name -> key path of the dict
    holding it; ``_optional_arrays`` may be absent from a state), creates
    ``self._lock`` (a ``threading.RLock``) in its constructor, and defines
    the one encoder :meth:`_encode` and the one decoder :meth:`_decode`.
    Everything else -- :meth:`to_state`, :meth:`from_state`,
    :func:`pydp_synopsis.save` and :func:`pydp_synopsis.load` -- goes
    through those two.

    References
    ----------
    .. [APT] Andersson, Pagh, Torkamani, section 3.1, Algorithms 1 and 2 (the
       tree counters).
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, section 3.1, Theorem 3.1
       (:class:`~pydp_synopsis.SparseStreamCounter`).
    """

    _kind = ""
    _record_kind = ""
    _array_places = {}
    _optional_arrays = frozenset()

    @property
    @abc.abstractmethod
    def horizon(self):
        """Number of updates the counter accepts."""

    @property
    @abc.abstractmethod
    def time(self):
        """Number of updates done so far (the index of the last release)."""

    @property
    @abc.abstractmethod
    def max_item(self):
        """Public bound on every item: items are integers in ``[0, max_item]``."""

    @abc.abstractmethod
    def update_many(self, xs):
        """Feed a batch of items; return the release after each one."""

    def update(self, x):
        """Feed one item and return the release after it.

        Parameters
        ----------
        x : int
            Integer item (a bit, or a count of items) in ``[0, max_item]``.

        Returns
        -------
        int
            The release at the new time t (for a tree counter the noisy
            ``x_1 + ... + x_t``).

        Raises
        ------
        TypeError
            ``x`` is not an integer.
        DomainError
            ``x`` is outside ``[0, max_item]`` (nothing is consumed).

        Notes
        -----
        One call of :meth:`update_many`: O(1) amortised noise terms, taken
        from the pre-drawn pool (docs/guide/counters.md, "Timing").

        Examples
        --------
        >>> from pydp_synopsis.noise import Rng
        >>> c = KaryTreeCounter(horizon=10, epsilon=1e9, k=3, rng=Rng(1))
        >>> c.update(1), c.update(0), c.update(1)
        (1, 1, 2)
        """
        x = as_index(x, "x")
        if not 0 <= x <= self.max_item:
            raise DomainError(f"x must be an integer in [0, {self.max_item}] (max_item, public)")
        return int(self.update_many(np.array([x], dtype=np.int64))[0])

    def _items(self, xs, name, room=True):
        """``xs`` as a contiguous int64 array, checked before anything is consumed.

        One-dimensional integers (bool accepted) in ``[0, max_item]``; with
        ``room``, no more than the updates left before the horizon.  The
        messages name the argument and its public range, never a value.
        """
        xs = np.asarray(xs)
        if xs.size == 0 and xs.ndim == 1:
            xs = xs.astype(np.int64)  # [] is float64 to numpy
        if xs.dtype.kind not in "biu":
            raise TypeError(f"{name} must hold integers, got dtype {dtype_name(xs.dtype)}")
        if xs.ndim != 1:
            raise DomainError(f"{name} must be one-dimensional, got shape {xs.shape}")
        left = self.horizon - self.time
        if room and len(xs) > left:
            raise HorizonError(f"{name} has {len(xs)} items but only {left} remain before the "
                               f"horizon {self.horizon}")
        # numpy scalar comparisons: no branch on the values (a Python int
        # comparison branches on 0 having no digit: docs/guide/counters.md, "Timing")
        if len(xs) and xs.dtype.kind != "b" and bool((xs.min() < 0) | (xs.max() > self.max_item)):
            raise DomainError(f"{name} must hold integers in [0, {self.max_item}] (max_item, public)")
        return np.ascontiguousarray(xs, dtype=np.int64)

    # ------------------------------------------------------- copies refused
    def __copy__(self):
        raise TypeError(f"a {type(self).__name__} cannot be copied: the copy would share its "
                        f"secret noise (use to_state() for a checkpoint)")

    def __deepcopy__(self, memo):
        raise TypeError(f"a {type(self).__name__} cannot be copied: the copy would replay its "
                        f"secret noise (use to_state() for a checkpoint)")

    def __reduce_ex__(self, protocol):
        raise TypeError(f"a {type(self).__name__} cannot be pickled: a copy would replay its "
                        f"secret noise (use to_state() or pydp_synopsis.save)")

    # ----------------------------------------------------------- checkpoints
    @abc.abstractmethod
    def _encode(self):
        """The record ``(meta, arrays)``: the one encoder of the state (lock held)."""

    @classmethod
    @abc.abstractmethod
    def _decode(cls, meta, arrays, rng, **options):
        """The counter of a record whose kind and version were checked; ``rng``
        draws its future noise.  Raises FormatError (or KeyError, TypeError,
        ValueError, which :meth:`_from_record` turns into FormatError)."""

    def to_state(self):
        """Checkpoint: every number needed to continue the same release.

        A view of the counter's record (what :func:`~pydp_synopsis.save`
        writes): the fields listed in docs/guide/counters.md, arrays as lists.
        The state holds the noise terms currently in use and the pre-drawn
        ones, which are secret: store it like a private key.  Restoring with
        :meth:`from_state` never redraws them.

        Returns
        -------
        dict
            JSON-able ints, lists and dicts.

        Notes
        -----
        O(size of the state): O(k log_k T) for a tree counter (Lemma 4.12).
        Holds the counter's lock.
        """
        with self._lock:
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
            meta, arrays = record_view(state, cls._array_places, cls._optional_arrays)
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"state is not a {cls._kind} state (no {exc})") from None
        return cls._from_record(meta, arrays, rng=rng)

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`~pydp_synopsis.persist.save`;
        mode 0o600 (the state holds secret noise)."""
        with self._lock:
            meta, arrays = self._encode()
        return self._record_kind, meta, arrays, 0o600

    @classmethod
    def _from_record(cls, meta, arrays, *, rng=None, **options):
        """The one validating decoder: :func:`~pydp_synopsis.persist.load`'s
        loader, :meth:`from_state`, and a composite counter's parts (which
        pass ``options`` to :meth:`_decode`)."""
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
            return cls._decode(meta, arrays, rng, **options)
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
        if name in arrays:
            _dict_at(state, path)[name] = arrays[name].tolist()
    return state


def record_view(state, places, optional=frozenset()):
    """The record ``(meta, arrays)`` of a state: each array taken out of its
    place, as it is (the decoder checks it with :func:`int64_array`).  Raises
    KeyError or TypeError for a state without them; the ``optional`` ones
    may be missing (release 0.1 states)."""
    meta = _copy_along(state, places)
    arrays = {}
    for name, path in places.items():
        holder = _dict_at(meta, path)
        if name in optional and name not in holder:
            continue
        arrays[name] = holder.pop(name)
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


class _TreeCounter(TreeNoise, ContinualCounter):
    """The C state machine of the tree counters, batching and their records."""

    _array_places = {"digits": (), "slots": (), "pool": ()}
    _optional_arrays = frozenset({"pool"})
    #: The digit set of a record without a "subtraction" field (release 0.1).
    _release_01_subtraction = True

    def __init__(self, *, horizon, epsilon, k, subtraction, max_item, rng=None, budget=None, delta=0):
        # Everything is validated before the C state exists, budget is
        # charged or rng is touched.
        params = self._parameters(horizon, epsilon, k, subtraction, max_item, delta=delta)
        rng = resolve_rng(rng, "rng")
        what = f"{type(self).__name__}(horizon={params[0]}" + (f", delta={params[6]})" if params[6] else ")")
        charge(budget, params[1], what, params[6])  # before any noise
        self._init(params, rng)
        self._fill_pool()

    @classmethod
    @abc.abstractmethod
    def _check_fanout(cls, k, subtraction):
        """``(k, subtraction)`` checked for this class (TypeError or ParameterError)."""

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
    def max_item(self):
        """Public bound on every item (``horizon * max_item <= 2**62``)."""
        return self._max_item

    @property
    def release(self):
        """The value currently released: the noisy prefix sum at :attr:`time` (0 before any update)."""
        with self._lock:
            return int(self._state.prefix + self._state.noise)

    @property
    def true_prefix_sum(self):
        """The exact ``x_1 + ... + x_t`` of the items fed so far, without noise.

        This is the data, not a release: never publish it (checkpoints hold
        it too).  The sparse counter derives its sealed total from it.
        """
        with self._lock:
            return int(self._state.prefix)

    # --------------------------------------------------------------- updates
    def update(self, x, *, monotone=False):
        """Feed one item and return the release after it (see :meth:`update_many`).

        A Python int goes straight to the C entry
        ``pds_counter_update_item`` (``update_many``'s checks, pool and
        draws for one item: the same release, seed for seed), holding the
        counter's lock and then the generator's, as :meth:`update_many`
        does; it is passed as ``x + 1024`` and range-checked in C, so 0 and
        1 take the same interpreter paths (docs/guide/counters.md, "Timing").
        Anything else, and an update the C core refuses before changing
        anything (an item outside ``[0, max_item]``, past the horizon, a
        failed counter), takes the checked path, which raises the
        documented error.

        Examples
        --------
        >>> from pydp_synopsis.noise import Rng
        >>> c = KaryTreeCounter(horizon=10, epsilon=1e9, k=3, rng=Rng(1))
        >>> c.update(1), c.update(0), c.update(1, monotone=True)
        (1, 1, 2)
        """
        if monotone is not False and monotone is not True:
            monotone = check_bool(monotone, "monotone")
        if type(x) is int:
            acquire, release, rng_acquire, rng_release, update_item, state, rng, out, bound = self._fast
            acquire()
            try:
                rng_acquire()
                try:
                    # x is touched once, by a branch-free one-digit addition;
                    # C removes the offset and checks [0, max_item].  The
                    # entry answers a bool and the release is read as an
                    # attribute: no status int 0, no subscript [0], so the
                    # cached int 0 (an item 0 itself) is never touched here
                    released = update_item(state, rng, x + _ITEM_BIAS, bound, out)
                except OverflowError:        # beyond int64: the checked path's error
                    released = None
                finally:
                    rng_release()
                if released:
                    # the C core keeps the monotone peak: no Python work here
                    # depends on whether the release is a new maximum
                    return state.peak if monotone else out.release
                st = _EINVAL if released is None else out.status
                if st != _EHORIZON and st != _ESTATE and st != _EINVAL:
                    self._raise_status(st)
                # refused before any change: the checked path's error
            finally:
                release()
        with self._lock:
            value = super().update(x)
            return self._peak if monotone else value

    def _raise_status(self, st):
        """The exception of a refused ``pds_counter_update_many``."""
        if st == lib.PDS_ERANGE and not self._state.failed:
            # only a restored release-0.1 state whose prefix is already
            # above horizon * max_item can reach the C core's limit
            raise DomainError("xs would make the prefix sum exceed 2**62 (a restored "
                              "release 0.1 checkpoint with items above max_item)")
        check(st)

    def update_many(self, xs, *, monotone=False):
        """Feed a batch of items in one C call; return the releases.

        Parameters
        ----------
        xs : array_like of int
            One-dimensional integers (bool accepted) in ``[0, max_item]``.
        monotone : bool
            Return the running count made consistent online: at each t,
            ``max(0, release_1, ..., release_t)`` over every release since
            the start (:attr:`monotone_release`), so the counts shown never
            decrease and are never negative, and a count once shown never
            changes.  Post-processing of the releases: free in privacy.  It
            is biased upward (the running maximum of noisy values exceeds
            the true count by about the noise's expected maximum over a
            stretch of constant count); its error is measured in
            docs/guide/error-bars.md, "Consistent releases".  The raw releases are unbiased.

        Returns
        -------
        numpy.ndarray of int64
            The noisy prefix sums after each item (or their running maximum).

        Raises
        ------
        HorizonError
            If the batch would go past the horizon (nothing is consumed).
        DomainError
            For an item outside ``[0, max_item]`` (nothing is consumed).

        Notes
        -----
        O(len(xs)) time, O(1) amortised noise terms per item (Lemma 4.14),
        taken from the pre-drawn pool.  Holds the counter's lock.
        """
        monotone = check_bool(monotone, "monotone")
        with self._lock:
            xs = self._items(xs, "xs")
            n = len(xs)
            out = np.empty(n, dtype=np.int64)
            before = self._peak
            with self._rng.native() as p:
                st = lib.pds_counter_update_many(self._state, p, ffi.from_buffer("int64_t[]", xs),
                                                 ffi.from_buffer("int64_t[]", out), n)
            if st != lib.PDS_OK:
                self._raise_status(st)
            # the C core moved its peak along (pds_counter_update_many)
            return np.maximum.accumulate(np.maximum(out, before)) if monotone else out

    @property
    def _peak(self):
        """``max(0, every release so far)``: the monotone release, kept by the C core."""
        return self._state.peak

    @_peak.setter
    def _peak(self, value):
        self._state.peak = value

    @property
    def monotone_release(self):
        """``max(0, every release so far)``: the running count of ``monotone=True``.

        Released numbers only (public).  A checkpoint without it (release
        0.1) restarts it at ``max(0, release)``.
        """
        with self._lock:
            return self._peak

    # ----------------------------------------------------------- checkpoints
    def _encode(self):
        s = self._state
        meta = {
            "kind": self._kind,
            "version": STATE_VERSION,
            "horizon": self.horizon,
            "k": self.k,
            "max_item": self._max_item,
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "delta": [self._delta.numerator, self._delta.denominator],
            "pure_epsilon": [self.pure_epsilon.numerator, self.pure_epsilon.denominator],
            "time": self.time,
            "prefix": int(s.prefix),
            "noise": int(s.noise),
            "rng": self._rng._to_state(),
            "peak": self._peak,
        }
        meta.update(self._extra_meta())
        pool = np.frombuffer(ffi.buffer(self._pool), dtype=np.int64, count=s.pool_capacity)
        arrays = {
            "digits": np.frombuffer(ffi.buffer(self._digits), dtype=np.int32, count=s.height).astype(np.int64),
            "slots": np.frombuffer(ffi.buffer(self._slots), dtype=np.int64, count=s.capacity).copy(),
            "pool": pool[s.pool_next:s.pool_end].copy(),
        }
        return meta, arrays

    def _extra_meta(self):
        return {}

    @classmethod
    def _decode(cls, meta, arrays, rng, total=None):
        saved_eps = state_fraction(meta["epsilon"], "epsilon")
        subtraction = meta.get("subtraction", cls._release_01_subtraction)
        max_item = meta.get("max_item") if total is None else None
        saved_delta = state_delta(meta)
        params = cls._parameters(meta["horizon"], saved_eps, meta["k"], subtraction, max_item, total,
                                 delta=saved_delta)
        if params[1] != saved_eps:
            raise FormatError(f"state epsilon {saved_eps} is not one this class produces")
        check_pure_epsilon(meta, Fraction(params[5][0]) / params[7], saved_delta)
        obj = cls.__new__(cls)
        obj._init(params, rng)
        s = obj._state
        digits = int64_array(arrays["digits"], "digits", s.height)
        slots = int64_array(arrays["slots"], "slots", s.capacity)
        pool = int64_array(arrays.get("pool", []), "pool")
        narrow = digits.astype(np.int32)
        if np.any(narrow != digits):
            raise FormatError("state digits are out of range")
        if len(pool) > s.pool_capacity:
            raise FormatError(f"state field 'pool' must have at most {s.pool_capacity} entries")
        ffi.memmove(obj._digits, narrow, narrow.nbytes)
        ffi.memmove(obj._slots, slots, slots.nbytes)
        with rng.native() as p:
            check(lib.pds_counter_set_pool(s, p, ffi.from_buffer("int64_t[]", pool), len(pool)))
        s.time = check_int(meta["time"], "time", 0, params[0])
        s.prefix = check_int(meta["prefix"], "prefix", 0, MAX_ITEM)
        s.noise = check_int(meta["noise"], "noise", _INT64.min, _INT64.max)
        if lib.pds_counter_check(s) != lib.PDS_OK:
            raise FormatError("state is inconsistent (digits, time, noise terms or prefix)")
        # The builder's own noise: every term in use and in the pool was drawn
        # at the counter's scale (an unkeyed checksum lets anyone zero them).
        high = int(s.high)
        used = np.arange(high) < np.abs(digits)[:, None]          # level l: its first |d_l| slots
        check_discrete_laplace_terms(slots.reshape(-1, high)[used], obj._scale, "noise terms in use")
        check_discrete_laplace_terms(pool, obj._scale, "pool of pre-drawn noise")
        check_discrete_laplace_terms(np.concatenate([slots.reshape(-1, high)[used], pool]), obj._scale)
        floor = max(0, int(s.prefix + s.noise))
        peak = meta.get("peak")
        obj._peak = floor if peak is None else check_int(peak, "peak", floor, _INT64.max)
        # No fill here: a checkpoint of this release holds a pool already
        # (the counter refills after every release), and drawing now would
        # put the loader's randomness into the state; a release 0.1 state
        # (no pool) fills at its first update (counters.c, case (c)).
        return obj

    def __repr__(self):
        return (f"{type(self).__name__}(horizon={self.horizon}, epsilon={self._epsilon}"
                f"{self._delta_repr()}, k={self.k}, time={self.time})")


class BinaryTreeCounter(_TreeCounter):
    """Binary tree mechanism for continual counting (pure epsilon-DP).

    Height ``h = ceil(log2(T + 1))``; only left subtrees are used and never
    the root, so each item is in h used nodes and every node gets discrete
    Laplace noise of scale h/epsilon.  The release at t sums the noise of one
    node per 1-bit of t: its mean variance over t is ``mean popcount(t) * Var``.
    The same mechanism as ``KaryTreeCounter(k=2)``.

    Parameters
    ----------
    horizon : int
        Maximum number of updates T, 1 <= T <= 2**62 // max_item.
    epsilon : float or Fraction
        Privacy parameter (> 0); the exact rational used is
        :attr:`epsilon` (rounded down).
    max_item : int, optional
        Public bound on every item, ``1 <= max_item <= 2**62 // horizon``
        (the default): an update raises only for an item outside
        ``[0, max_item]``, never because of the data before it.
    rng : Rng, optional
        Randomness; default a fresh OS-seeded Rng.  Seeds are for tests and
        benchmarks only.
    budget : Budget, optional
        Charged ``(epsilon, delta)`` after every argument is validated and before any
        noise is drawn (sequential composition, see :class:`~pydp_synopsis.Budget`).
    delta : float or Fraction
        In ``[0, 1)``; 0 (default) is pure epsilon-DP.  With ``delta > 0``
        the node scale is ``min(h/epsilon, lambda)``, lambda calibrated to
        the l2 sensitivity ``sqrt(h)`` (docs/guide/counters.md,
        "(epsilon, delta)"); :attr:`delta` and :attr:`pure_epsilon` report both
        guarantees.

    Notes
    -----
    State O(log T); one noise term per update.  See docs/guide/counters.md
    for the neighbouring relation, when updates raise, timing and threads.

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
    _record_kind = "binary-tree-counter"
    _release_01_subtraction = False

    def __init__(self, *, horizon, epsilon, max_item=None, rng=None, budget=None, delta=0):
        super().__init__(horizon=horizon, epsilon=epsilon, k=2, subtraction=False, max_item=max_item,
                         rng=rng, budget=budget, delta=delta)

    @classmethod
    def _check_fanout(cls, k, subtraction):
        return check_int(k, "k", 2, 2), check_bool(subtraction, "subtraction")


class KaryTreeCounter(_TreeCounter):
    """k-ary tree mechanism, with subtraction (Algorithm 2 of [APT]) or without (Algorithm 1).

    The time t is written with h digits in base k, one noise term of scale
    h/epsilon per unit of digit; each term is discrete Laplace, kept only
    while in use.  Every item lies in exactly h used tree nodes (never the
    root), so the whole sequence of releases is epsilon-DP.

    ``subtraction=True`` (default): offset digits, ``[-(k-1)/2, (k-1)/2]``
    for odd k (Algorithm 2, the least error at k = 19, Corollary 4.9) or
    ``[-k/2 + 1, k/2]`` for even k (Appendix A.3, k = 20, Corollary A.7);
    ``subtraction=False``: standard digits ``[0, k-1]`` (Algorithm 1, k = 17,
    Theorem 3.7).  Heights, MSEs and constants: docs/guide/counters.md.

    :meth:`mean_squared_error` is exact for every T.

    Parameters
    ----------
    horizon : int
        Maximum number of updates T, 1 <= T <= 2**62 // max_item.
    epsilon : float or Fraction
        Privacy parameter (> 0); the exact rational used is :attr:`epsilon`.
    k : int
        Fanout, 2 <= k <= 65535 (19 minimises the error, Corollary 4.9).
    subtraction : bool
        Offset digits (Algorithm 2, Appendix A.3 for even k) or standard
        digits (Algorithm 1).
    max_item : int, optional
        Public bound on every item, ``1 <= max_item <= 2**62 // horizon``
        (the default): an update raises only for an item outside
        ``[0, max_item]``, never because of the data before it.
    rng : Rng, optional
        Randomness; default a fresh OS-seeded Rng.  Seeds are for tests and
        benchmarks only.
    budget : Budget, optional
        Charged ``(epsilon, delta)`` after every argument is validated and before any
        noise is drawn (sequential composition, see :class:`~pydp_synopsis.Budget`).
    delta : float or Fraction
        In ``[0, 1)``; 0 (default) is pure epsilon-DP.  With ``delta > 0``
        the node scale is ``min(h/epsilon, lambda)``, lambda calibrated to
        the l2 sensitivity ``sqrt(h)`` (docs/guide/counters.md,
        "(epsilon, delta)"); :attr:`delta` and :attr:`pure_epsilon` report both
        guarantees.

    Notes
    -----
    State O(k log_k T) (Lemma 4.12); O(1) amortised noise terms and time per
    update, the noise sum being updated incrementally (Lemma 4.14).  See
    docs/guide/counters.md for the neighbouring relation, when updates raise,
    timing and threads.

    References
    ----------
    .. [APT] Andersson, Pagh, Torkamani, Algorithm 1, Lemma 3.5, Theorem
       3.7; Algorithm 2, Lemmas 4.5, 4.7, 4.12, 4.14, Corollary 4.9;
       Appendix A.3, Definition A.5, Claim 1, Corollary A.7.

    Examples
    --------
    >>> from pydp_synopsis.noise import Rng
    >>> c = KaryTreeCounter(horizon=1000, epsilon=1.0, k=19, rng=Rng(7))
    >>> c.height, c.k, c.subtraction
    (3, 19, True)
    >>> KaryTreeCounter(horizon=1000, epsilon=1.0, k=20, rng=Rng(7)).height
    3
    >>> KaryTreeCounter(horizon=1000, epsilon=1.0, k=17, subtraction=False, rng=Rng(7)).height
    3
    """

    _kind = "KaryTreeCounter"
    _record_kind = "kary-tree-counter"

    def __init__(self, *, horizon, epsilon, k=19, subtraction=True, max_item=None, rng=None, budget=None,
                 delta=0):
        super().__init__(horizon=horizon, epsilon=epsilon, k=k, subtraction=subtraction,
                         max_item=max_item, rng=rng, budget=budget, delta=delta)

    @classmethod
    def _check_fanout(cls, k, subtraction):
        return check_int(k, "k", 2, MAX_FANOUT), check_bool(subtraction, "subtraction")

    def _extra_meta(self):
        return {"subtraction": self.subtraction}

    def __repr__(self):
        return (f"KaryTreeCounter(horizon={self.horizon}, epsilon={self._epsilon}"
                f"{self._delta_repr()}, k={self.k}, subtraction={self.subtraction}, time={self.time})")


for _cls in (BinaryTreeCounter, KaryTreeCounter):
    persist.register(_cls._record_kind)(_cls._from_record)
    # release 0.1 spelled the counters' kinds with underscores: they still load
    persist.register(_cls._record_kind.replace("-", "_"))(_cls._from_record)
del _cls
