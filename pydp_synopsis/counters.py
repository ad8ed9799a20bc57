"""Private counters under continual observation: the tree counters.

A counter reads a stream ``x_1, x_2, ...`` of non-negative integers one item
at a time and after each item releases a noisy prefix sum ``x_1 + ... + x_t``.
All noise is discrete Laplace from the C CSPRNG; releases are integers.
This module holds the binary and k-ary tree counters and
:class:`ContinualCounter`, the base every counter (also
:class:`~pydp_synopsis.SparseStreamCounter`) shares: item checks, locking
and the one checkpoint format.

Neighbouring streams
--------------------
Two streams are neighbours when they differ in one position by one unit
(one item added or removed there: a bit flipped, or a count changed by 1),
both within the counter's public bounds.  Each item lies in exactly ``h``
tree nodes that the counter uses, so the sensitivity of the noisy node sums
is ``h`` and noise of scale ``h/epsilon`` per node gives ``epsilon``-DP for
the whole sequence of releases, whatever the stream length up to the
horizon.  A stream whose items differ by more than one unit at one position
(for example a count changed by 5) is protected with ``5*epsilon``.

(epsilon, delta)
----------------
With ``delta > 0`` the node scale is calibrated to the l2 sensitivity
``sqrt(h)`` of the node vector (each item moves h nodes by one):
``min(h/epsilon, lambda)`` with lambda from
:func:`~pydp_synopsis.accounting.l2_laplace_scale` (Andersson, Pagh,
Torkamani, "Count on Your Elders", section 5.2, Lemma 5.5 and Theorem 1.3;
Kairouz, Oh, Viswanath, Theorem 3.5).  The releases are then
``(epsilon, delta)``-DP and also ``pure_epsilon = h / scale``-DP.  Items
differing by c units are protected with ``(c^2/2 + c sqrt(2 ln(1/delta)))``
times the same x, i.e. group privacy in the l2 sense; the counters never
scale the noise with ``max_item``.  The l2 scale is below the pure one only
when ``h > 2 ln(1/delta)`` roughly (never for ``h <= 15`` at delta = 1e-6):
then the pure scale is used and ``pure_epsilon == epsilon``.

When an update raises
---------------------
Whether an update raises or releases depends only on public parameters and
on each item against its own public range, never on the data accumulated
so far: items must be integers in ``[0, max_item]``, where ``max_item`` is
a public bound (default ``2**62 // horizon``) with
``horizon * max_item <= 2**62``, so no prefix sum can leave the range the C
core keeps (releases stay inside int64).  Error messages name the argument
and its allowed range, never a data value.  Checks run before any
randomness is used: a refused batch changes nothing.

Timing
------
An update never samples noise: new noise terms come from a pool drawn
ahead, refilled after a release, so the duration of the update releasing
``t`` does not depend on the noise it releases (``csrc/counters.c`` has the
argument; ``benchmarks/bench_timing.py`` the measurement).  The Python
around the C call of a tree counter's ``update(x)`` does the same work for
every release: the monotone peak is kept in the C state (a select), so no
Python object is stored only when a release is a new maximum -- with the
one-item path at ~1 us that 30 ns branch was measurable.  What remains is
CPython's cache of the ints -5..256 (a release in that range allocates no
object): a function of the released value, which the observer has.

Nor does the duration depend on the item beyond what the release shows
(issue #30; ``docs/security-timing.md``).  CPython stores 0 with no digit
and 1 with one, and its int comparisons and conversions branch on that, so
``update(x)`` touches a Python int item only once, in ``x + 1024`` (a
one-digit addition without a branch on the value, giving an uncached
one-digit int for every item below ``2**30 - 1024``), and the C entry
removes the offset and checks ``[0, max_item]``; the C work is the same for
every admissible item.  The entry answers a bool and the release is read
as an attribute, so the update touches no cached int 0 (a status 0, a
subscript ``[0]``): reference counts written to the same object as the
caller's item made an item 0 measurably slower.
:meth:`~ContinualCounter.update_many` compares its batch's minimum and
maximum as numpy scalars for the same reason.  Items of other types (numpy
integers) take the checked path, which is not held to this.

Threads and copies
------------------
Every state-changing method and every read of the state holds the
counter's lock, so a counter shared by threads stays consistent (updates
from several threads interleave in an unspecified order).  A counter cannot
be copied (``copy.copy``, ``copy.deepcopy``) or pickled: a copy would share
or replay its secret noise.  Use :meth:`~ContinualCounter.to_state` to
checkpoint it.

Checkpoints
-----------
A counter has one state format: its *record* ``(meta, arrays)``, exactly
what :func:`pydp_synopsis.save` writes (:func:`~pydp_synopsis.persist.write_record`).
``meta`` holds JSON values (a composite counter nests its parts' records as
dicts), ``arrays`` one-dimensional int64 arrays.  ``to_state()`` is a view
of the record: the same dict with every array put back, as a list of ints,
into the dict that owns it (``_array_places``); ``from_state()`` takes them
out again and calls the one validating decoder, the one
:func:`pydp_synopsis.load` calls.  Version 1 is release 0.1's format; the
fields added since are optional, their absence meaning what release 0.1
did, so its files and JSON states still load.  A tree counter's record:

=============== ==========================================================
``kind``        ``"BinaryTreeCounter"`` or ``"KaryTreeCounter"``
``version``     1
``horizon``     T
``k``           fanout (2 for the binary tree)
``subtraction`` (KaryTreeCounter) offset digits (Algorithm 2) or standard
                digits (Algorithm 1); absent: true (release 0.1: odd k)
``max_item``    public bound on every item; absent: ``2**62 // horizon``
``epsilon``     ``[numerator, denominator]`` of the exact epsilon
``delta``       ``[numerator, denominator]`` of the exact delta; absent: 0
``pure_epsilon`` ``[numerator, denominator]``: h / noise scale, checked
                against the other fields; absent: ``epsilon``
``time``        updates done
``prefix``      true prefix sum (secret)
``noise``       sum of the noise terms in use (secret); release = prefix + noise
``rng``         a seeded generator's position (tests only), None for OS seeds
``peak``        ``max(0, every release so far)``: the ``monotone=True``
                count (derived from releases: public); absent:
                ``max(0, release)``
``digits``      array: the h digits of ``time``, level 1 first
``slots``       array: the noise terms, level by level (secret)
``pool``        array: pre-drawn noise terms, next first (secret); absent: none
=============== ==========================================================

A decoded state must also be the builder's own: its noise terms in use
and its pool are checked as discrete Laplace draws of the counter's scale
(:func:`~pydp_synopsis.noise_terms.check_discrete_laplace_terms`), so a
file whose noise was zeroed and whose checksum was recomputed is refused.
Neither ``to_state``/``from_state`` nor ``save``/``load`` can know whether
a state was already resumed: the command line's journal
(:mod:`pydp_synopsis.checkpoint`, docs/security-checkpoints.md) can.

See docs/guide/counters.md and docs/guide/saving.md.

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
import math
import operator
import threading

import numpy as np

from . import persist
from .persist import check_pure_epsilon, int64_array, state_delta, state_fraction
from ._core import LIMITS, check, ffi, lib
from .errors import DomainError, FormatError, HorizonError, ParameterError
from .budget import charge
from .noise import discrete_laplace_variance
from .noise_terms import check_discrete_laplace_terms
from .accounting import check_delta_or_zero, unit_shift_scale
from .params import check_beta, check_bool, check_int, dtype_name, exact_epsilon, scale_parts
from .rng import Rng, resolve_rng
from .tails import laplace_sum_tail

__all__ = ["ContinualCounter", "BinaryTreeCounter", "KaryTreeCounter"]

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
        from the pre-drawn pool (module docstring, "Timing").

        Examples
        --------
        >>> from pydp_synopsis.noise import Rng
        >>> c = KaryTreeCounter(horizon=10, epsilon=1e9, k=3, rng=Rng(1))
        >>> c.update(1), c.update(0), c.update(1)
        (1, 1, 2)
        """
        if isinstance(x, (bool, np.bool_)):
            raise TypeError("x must be an integer, got bool")
        try:
            x = operator.index(x)
        except TypeError:
            raise TypeError(f"x must be an integer, got {type(x).__name__}") from None
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
        # comparison branches on 0 having no digit: module docstring, "Timing")
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
        writes): the fields listed in the module docstring, arrays as lists.
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


class _TreeCounter(ContinualCounter):
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

    @classmethod
    @abc.abstractmethod
    def _check_fanout(cls, k, subtraction):
        """``(k, subtraction)`` checked for this class (TypeError or ParameterError)."""

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
    def k(self):
        """Fanout of the tree (2 for the binary tree counter)."""
        return int(self._state.fanout)

    @property
    def subtraction(self):
        """True for offset digits (Algorithm 2, Appendix A.3), False for standard digits (Algorithm 1)."""
        return bool(self._state.subtraction)

    @property
    def max_item(self):
        """Public bound on every item (``horizon * max_item <= 2**62``)."""
        return self._max_item

    @property
    def height(self):
        """Tree height h; each item lies in h used nodes (the sensitivity)."""
        return int(self._state.height)

    @property
    def noise_scale(self):
        """Scale of the discrete Laplace noise of every node (a Fraction): h/epsilon, or
        its l2 calibration with ``delta > 0`` (module docstring)."""
        return self._scale

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
        1 take the same interpreter paths (module docstring, "Timing").
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

    def error_bound(self, beta, releases=None):
        """An integer bound on the error of all releases, holding with probability >= 1 - beta.

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
        return self.height * int(self._state.high)

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

    def _delta_repr(self):
        """``", delta=..., pure_epsilon=..."`` for an (epsilon, delta) counter, else ``""``."""
        if not self._delta:
            return ""
        return f", delta={float(self._delta):.3g}, pure_epsilon={float(self.pure_epsilon):.6g}"

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
        the l2 sensitivity ``sqrt(h)`` (module docstring, "(epsilon,
        delta)"); :attr:`delta` and :attr:`pure_epsilon` report both
        guarantees.

    Notes
    -----
    State O(log T); one noise term per update.  See the module docstring
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

    * ``subtraction=True`` (default), odd k: offset digits in
      ``[-(k-1)/2, (k-1)/2]`` on ``h = ceil(log_k(2T))`` levels; at
      ``T = (k^h - 1)/2`` the MSE is ``a_T * Var`` with
      ``a_T = h (k^2 - 1) / (4k (1 - k^-h))`` (Lemma 4.7); the leading
      constant ``k (1 - 1/k^2) / (2 log2(k)^3)`` is smallest at k = 19,
      0.1236 (Corollary 4.9).
    * ``subtraction=True``, even k: digits ``[-k/2 + 1, k/2]``; the least h
      with ``T <= k (k^h - 1) / (2 (k-1))`` (Definition A.5); the MSE at that
      ``T`` is Claim 1's ``c_h / T * Var``, ``~ k h^3 / (2 eps^2)``; the
      constant ``k / (2 log2(k)^3)`` is smallest at k = 20, 0.1238
      (Corollary A.7).  k = 2 gives digits {0, 1}: the binary tree.
    * ``subtraction=False``: standard digits ``[0, k-1]`` on
      ``h = ceil(log_k(T + 1))`` levels (Algorithm 1); at ``T = k^h - 1`` the
      MSE is ``(k-1) h^3 / (eps^2 (1 - k^-h))`` with the paper's Laplace
      variance (Lemma 3.5), ``h (k-1) / (2 (1 - k^-h)) * Var`` here; the
      constant ``(k-1) / log2(k)^3`` is smallest at k = 17, 0.234
      (Theorem 3.7).

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
        the l2 sensitivity ``sqrt(h)`` (module docstring, "(epsilon,
        delta)"); :attr:`delta` and :attr:`pure_epsilon` report both
        guarantees.

    Notes
    -----
    State O(k log_k T) (Lemma 4.12); O(1) amortised noise terms and time per
    update, the noise sum being updated incrementally (Lemma 4.14).  See
    the module docstring for the neighbouring relation, when updates raise,
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
