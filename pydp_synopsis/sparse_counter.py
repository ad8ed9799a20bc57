"""Counter for sparse streams: an online partition feeding a tree counter.

:class:`SparseStreamCounter` (DNRR section 3.1, Theorem 3.1) answers like
the tree counters of :mod:`pydp_synopsis.counters`; with ``max_items`` (a
public bound n on the stream's total weight) its inner counter runs over at
most n + 1 segments, so its error grows with log D (the open segment) plus
polylog n, whatever the horizon D.
:meth:`~SparseStreamCounter.update_sparse` costs O(#items + #seals)
whatever the horizon.  See docs/guide/counters.md.

Its checkpoint record (the one state format of :mod:`pydp_synopsis.counters`)
is listed in docs/guide/counters.md ("The sparse counter").

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: section 3.1, Theorem 3.1; Fig. 1 and Theorem 2.1.
"""
import math
import threading

import numpy as np

from . import persist
from .budget import charge
from .counters import STATE_VERSION, BinaryTreeCounter, ContinualCounter, KaryTreeCounter
from .persist import check_pure_epsilon, int64_array, state_delta, state_fraction
from .errors import DomainError, FormatError, HorizonError, ParameterError
from .params import (check_beta, check_bool, check_choice, check_int, check_share, dtype_name,
                     exact_epsilon, is_int, renamed_keyword, split_epsilon)
from .partitions import OnlinePartition, fig1_threshold
from .rng import resolve_rng
from .tree_noise import MAX_HORIZON

__all__ = ["SparseStreamCounter"]

#: Largest total weight of a stream (the bound when ``max_items`` is None).
#: The online partition refuses a segment whose float64 count estimate
#: reaches 2**61; totals of at most 2**60 keep every such estimate (rounding
#: included) far below it, so only this exact integer bound decides.
MAX_TOTAL = 2**60

#: Fig. 1's threshold factor (the one OnlinePartition uses).
_FIG1_FACTOR = 3.0
#: The inner counters: (class, k, subtraction).
_COUNTERS = {"kary": (KaryTreeCounter, 19, True), "binary": (BinaryTreeCounter, 2, False)}
_COUNTER_NAMES = {spec[0]: name for name, spec in _COUNTERS.items()}
#: Exact sums below: split int64 items into 31-bit halves, sum at most 2**31 at a time.
_HALF = 31
_CHUNK = 1 << 31


def _exact_sum(w):
    """Exact sum (a Python int) of non-negative int64 values, vectorised.

    Each half of a value is below 2**32, so a chunk of at most 2**31 halves
    sums below 2**63 in int64: no overflow, no rounding.
    """
    total = 0
    for start in range(0, len(w), _CHUNK):
        part = w[start:start + _CHUNK]
        total += (int((part >> _HALF).sum()) << _HALF) + int((part & ((1 << _HALF) - 1)).sum())
    return total


class SparseStreamCounter(ContinualCounter):
    """Counter for sparse streams: an online partition feeding a tree counter.

    The online partition (DNRR Fig. 1, budget ``epsilon * partition_share``,
    failure probability ``beta/2``) decides after each item whether to seal
    the current segment; each sealed segment's true count is fed to an inner
    tree counter (the rest of the budget) as one item.  The release between
    two seals is the inner counter's last release (0 before the first
    seal).

    Error, privacy, when an update raises, the bound on the seals and what
    the counter keeps: docs/guide/counters.md ("The sparse counter").

    Parameters
    ----------
    horizon : int
        Stream length D, 1 <= D < 2**63.
    epsilon : float or Fraction
        Total privacy parameter; partition and counter budgets are exact
        rationals summing to at most epsilon (:attr:`epsilon_partition`,
        :attr:`epsilon_counter`).
    beta : float
        Failure probability of :meth:`error_bound`, in (0, 1).
    structure : {"kary", "binary"}
        Inner counter: KaryTreeCounter (k = 19, the default) or
        BinaryTreeCounter.  ``counter=`` is its deprecated old name, kept
        until 0.3.
    partition_share : float or Fraction
        Fraction of epsilon given to the partition, in (0, 1); default 1/2
        as in the proof of Theorem 3.1.
    max_items : int, optional
        Public bound n on the stream's total weight (the number of items),
        1 <= n <= 2**60.  The inner counter then runs over at most n + 1
        segments instead of D.  None (the default): the bound is 2**60
        (:data:`MAX_TOTAL`) and the inner counter's horizon is D, as in
        release 0.1 (same seeded releases).
    rng : Rng, optional
        Randomness (default a fresh OS-seeded Rng); seeds for tests only.
    budget : Budget, optional
        Charged ``(epsilon, delta)`` after every argument is validated (the noise
        scale limits of both parts included) and before any noise is drawn
        (sequential composition, see :class:`~pydp_synopsis.Budget`).
    delta : float or Fraction
        In ``[0, 1)``; 0 (default) is pure epsilon-DP.  With ``delta > 0``
        the inner counter's node noise is calibrated to its l2 sensitivity
        ``sqrt(h)`` (:class:`~pydp_synopsis.KaryTreeCounter`, ``delta=``);
        the partition stays pure.  The releases are ``(epsilon, delta)``-DP
        and :attr:`pure_epsilon`-DP.

    Raises
    ------
    HorizonError
        From :meth:`update_many` / :meth:`update_sparse` when more segments
        seal than the inner counter's horizon ``n + 1`` allows (only with
        ``max_items``).  For a stream within its bound this has probability
        at most ``beta sqrt(beta / 2D) <= beta/2`` (docs/guide/counters.md).  Nothing of that
        update is released and the counter is spent: every later update and
        :meth:`to_state` raise.  Retrying with fresh noise would condition
        the partition on not failing, so the counter never retries.

    References
    ----------
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, section 3.1, Theorem 3.1;
       Fig. 1 and Theorem 2.1 (the online partition).
    .. [APT] Andersson, Pagh, Torkamani, Algorithm 2 and section 3.1 (the
       inner counters, :mod:`pydp_synopsis.counters`).

    Examples
    --------
    >>> from pydp_synopsis.noise import Rng
    >>> c = SparseStreamCounter(horizon=2**62, epsilon=1.0, max_items=3, rng=Rng(3))
    >>> times, values = c.update_sparse([10, 2**40, 2**61], until=2**62)
    >>> c.time == 2**62 and int(times[-1]) == 2**62
    True
    """

    _kind = "SparseStreamCounter"
    _record_kind = "sparse-stream-counter"
    _array_places = {"ends": ("partition",), "digits": ("inner",), "slots": ("inner",),
                     "pool": ("inner",)}
    _optional_arrays = frozenset({"pool"})

    def __init__(self, *, horizon, epsilon, beta=0.05, structure=None, partition_share=0.5,
                 max_items=None, rng=None, budget=None, delta=0, counter=None):
        counter = renamed_keyword("SparseStreamCounter", "counter=", "structure=", counter, structure,
                                  "kary")
        horizon, eps, beta, counter, share, max_items, eps_p, inner_params = self._parameters(
            horizon, epsilon, beta, counter, partition_share, max_items, delta)
        rng = resolve_rng(rng, "rng")
        dlt = inner_params[6]
        charge(budget, eps, f"SparseStreamCounter(horizon={horizon}" + (f", delta={dlt})" if dlt else ")"),
               dlt)  # before any noise
        # Build both before keeping either: no half-built object on error.
        inner = _COUNTERS[counter][0]._inner(inner_params, rng)
        partition = OnlinePartition(size=horizon, epsilon=eps_p, beta=beta / 2, rng=rng)
        self._init(eps, share, max_items, inner, partition, 0)

    @staticmethod
    def _parameters(horizon, epsilon, beta, counter, partition_share, max_items, delta=0):
        """Every check, the parts' included; no side effect.

        Returns ``(horizon, epsilon, beta, counter, share, max_items,
        eps_p, inner_params)``, ``inner_params`` the inner counter's checked
        parameters (its horizon, ``eps_c``, and the total bound it relies on).
        """
        horizon = check_int(horizon, "horizon", 1, MAX_HORIZON)
        eps = exact_epsilon(epsilon)
        beta = check_beta(beta)
        counter = check_choice(counter, "structure", _COUNTERS)
        share = check_share(partition_share, "partition_share")
        if max_items is not None:
            max_items = check_int(max_items, "max_items", 1, MAX_TOTAL)
        # Each part is rounded down to a bounded rational: they sum to <= eps.
        eps_p, eps_c = split_epsilon(eps, share, ("epsilon * partition_share",
                                                  "epsilon * (1 - partition_share)"))
        fig1_threshold(horizon, eps_p, beta / 2, _FIG1_FACTOR)  # the partition's threshold fits
        cls, k, subtraction = _COUNTERS[counter]
        inner_horizon = horizon if max_items is None else min(horizon, max_items + 1)
        bound = MAX_TOTAL if max_items is None else max_items
        inner_params = cls._parameters(inner_horizon, eps_c, k, subtraction, None, total=bound, delta=delta)
        return horizon, eps, beta, counter, share, max_items, eps_p, inner_params

    def _init(self, eps, share, max_items, inner, partition, total):
        """The one constructor (``__init__`` and the decoder); see the class
        Notes for why these and only these are kept."""
        self._lock = threading.RLock()
        self._epsilon = eps
        self._share = share
        self._max_items = max_items
        self._inner = inner
        self._partition = partition
        self._total = total
        self._spent = False
        # update(x)'s one-item path, bound once: the lock's methods and the
        # kernel states read there.
        self._fast = (self._lock.acquire, self._lock.release, partition._state, inner._state,
                      self.max_item)

    # ------------------------------------------------------------ properties
    @property
    def horizon(self):
        """Stream length D (the partition's size)."""
        return self._partition.size

    @property
    def time(self):
        """Number of items processed so far (the partition's position)."""
        with self._lock:
            return self._partition.position

    @property
    def epsilon(self):
        """Total exact privacy parameter (Fraction)."""
        return self._epsilon

    @property
    def partition_share(self):
        """The exact share of :attr:`epsilon` asked for the partition (Fraction)."""
        return self._share

    @property
    def max_items(self):
        """The public bound on the total weight given, or None (then 2**60, inner horizon D)."""
        return self._max_items

    @property
    def max_item(self):
        """Public bound on every item: the total weight bound (``max_items``, default 2**60)."""
        return MAX_TOTAL if self._max_items is None else self._max_items

    @property
    def delta(self):
        """The exact delta asked for (Fraction; 0: pure epsilon-DP), spent by the inner counter.

        References
        ----------
        .. [APT2] Andersson, Pagh, Torkamani, "Count on Your Elders", section 5.2,
           Lemma 5.5, Theorem 1.3.
        .. [KOV15] Kairouz, Oh, Viswanath, ICML 2015, Theorem 3.5.
        """
        return self._inner.delta

    @property
    def pure_epsilon(self):
        """The pure epsilon achieved: :attr:`epsilon_partition` plus the inner counter's
        :attr:`~pydp_synopsis.KaryTreeCounter.pure_epsilon` (Fraction; :attr:`epsilon` when
        ``delta == 0``)."""
        return self._partition.epsilon + self._inner.pure_epsilon

    @property
    def epsilon_partition(self):
        """Budget of the online partition (Fraction)."""
        return self._partition.epsilon

    @property
    def epsilon_counter(self):
        """Budget of the inner counter (Fraction); the two sum to at most epsilon."""
        return self._inner.epsilon

    @property
    def beta(self):
        """Failure probability of :meth:`error_bound` (the partition runs at beta/2)."""
        return 2 * self._partition.beta

    @property
    def structure(self):
        """The inner counter: ``"kary"`` (KaryTreeCounter, k = 19) or ``"binary"``."""
        return _COUNTER_NAMES[type(self._inner)]

    @property
    def counter(self):
        """The inner counter, as :attr:`structure` (its name before 0.2)."""
        return self.structure

    @property
    def inner_horizon(self):
        """Horizon of the inner counter: ``min(D, max_items + 1)``, or D without ``max_items``."""
        return self._inner.horizon

    @property
    def release(self):
        """The value currently released (the last seal's noisy prefix sum, 0 before any)."""
        with self._lock:
            return self._inner.release

    @property
    def segments(self):
        """Number of sealed segments (items fed to the inner counter)."""
        with self._lock:
            return self._inner.time

    @property
    def seal_times(self):
        """Times (1-based) at which segments sealed, increasing (int64 array).

        The release changes only at these times; they are released (the
        ``times`` of :meth:`update_sparse`).  O(#segments).
        """
        with self._lock:
            return self._partition.segments.astype(np.int64) + 1

    @property
    def threshold(self):
        """The partition's integer threshold T (Fig. 1; public: D, beta, epsilon_partition)."""
        return self._partition.threshold

    # --------------------------------------------------------------- updates
    def _check_live(self):
        if self._spent:
            raise HorizonError(f"this counter is spent: more segments sealed than its inner horizon "
                               f"max_items + 1 = {self._inner.horizon} allows; it makes no further "
                               f"release (start a new counter with a new budget)")

    def _check_total(self, w, name):
        """The stream's total weight stays within its public bound (exact integers)."""
        if w.size and self._total + _exact_sum(w) > self.max_item:
            which = "max_items" if self._max_items is not None else "2**60 (the bound without max_items)"
            raise DomainError(f"{name} would make the stream's total weight exceed its public bound "
                              f"{self.max_item} ({which})")

    def _seal(self, seal_times, item_times, item_cum):
        """Feed the sealed segments' true counts to the inner counter.

        ``item_cum[i]`` is the true prefix sum after the item at
        ``item_times[i]`` (both increasing, covering the batch), so the
        prefix at a seal is the last entry at or before it (the total before
        the batch for a seal before its first item).  If the seals do not
        fit the inner horizon the counter is spent and nothing is released.
        """
        if len(seal_times) > self._inner.horizon - self._inner.time:
            self._spent = True
            self._check_live()
        idx = np.searchsorted(item_times, seal_times, side="right")
        prefix_at = np.concatenate([[self._total], item_cum]).astype(np.int64)[idx]
        counts = np.diff(prefix_at, prepend=self._inner.true_prefix_sum)
        return self._inner.update_many(counts)

    def update(self, x, *, monotone=False):
        """Feed one item and return the release after it (see :meth:`update_many`).

        A Python int that passes every check of :meth:`update_many` takes the
        same steps without arrays: one partition kernel call for the position
        (:meth:`~pydp_synopsis.OnlinePartition.feed_one`'s step, arguments
        allocated once) and, if it seals, one inner counter update with the
        segment's count (the same draws and releases); anything else takes
        the checked path, which raises the documented error.
        """
        if monotone is not False and monotone is not True:
            monotone = check_bool(monotone, "monotone")
        acquire, release, part_state, inner_state, bound = self._fast
        acquire()
        try:
            # (an unfinished partition is one whose position is below its size)
            if (type(x) is int and 0 <= x and not self._spent and not part_state.finished
                    and self._total + x <= bound):
                if self._partition.feed_one(x):
                    inner = self._inner
                    if inner.time >= inner.horizon:       # as _seal: spent, nothing released
                        self._spent = True
                        self._check_live()
                    inner.update(self._total + x - inner.true_prefix_sum)
                self._total += x
                if monotone:
                    return self._inner.monotone_release
                # the inner counter's release, read from its C state (the
                # inner counter is private: it changes only under this lock)
                return inner_state.prefix + inner_state.noise
            value = super().update(x)
            return self.monotone_release if monotone else value
        finally:
            release()

    @property
    def monotone_release(self):
        """``max(0, every release so far)``: the running count of ``monotone=True``.

        Released numbers only (the inner counter's releases at the seals);
        kept in the inner counter's part of the checkpoint.
        """
        with self._lock:
            return self._inner.monotone_release

    def update_many(self, xs, *, monotone=False):
        """Feed a dense batch of items; return the release after each one.

        Parameters
        ----------
        xs : array_like of int
            One-dimensional non-negative integers (bool accepted).
        monotone : bool
            Return ``max(0, every release so far)`` instead
            (:attr:`monotone_release`): never decreasing, never negative;
            post-processing, biased upward (docs/guide/error-bars.md, "Consistent releases").

        Returns
        -------
        numpy.ndarray of int64
            The release after each item; it changes only when a segment seals.

        Raises
        ------
        HorizonError
            If the batch would go past the horizon (nothing is consumed), or
            the counter is spent (class docstring: nothing is released).
        DomainError
            For a negative item or a total weight above the public bound
            (nothing is consumed).

        Notes
        -----
        O(len(xs)) numpy work, one partition call and one counter call.
        Holds the counter's lock.
        """
        monotone = check_bool(monotone, "monotone")
        with self._lock:
            self._check_live()
            xs = self._items(xs, "xs")
            self._check_total(xs, "xs")
            start, before = self.time, self.release
            floor = self._inner.monotone_release
            seals = self._partition.feed(xs).astype(np.int64) + 1  # 1-based times
            times = np.arange(start + 1, start + len(xs) + 1, dtype=np.int64)
            cum = self._total + np.cumsum(xs)
            releases = self._seal(seals, times, cum)
            if len(xs):
                self._total = int(cum[-1])
            idx = np.searchsorted(seals, times, side="right")
            out = np.concatenate([[before], releases]).astype(np.int64)[idx]
            return np.maximum.accumulate(np.maximum(out, floor)) if monotone else out

    def update_sparse(self, positions, weights=None, until=None, *, monotone=False):
        """Feed a stream given by its non-zero items; return the release as a step function.

        Parameters
        ----------
        positions : array_like of int
            Times (1-based) of the non-zero items, non-decreasing, all after
            :attr:`time` and at most ``until``.
        weights : array_like of int, optional
            Item counts (default 1 each), non-negative.
        until : int, optional
            Advance the stream to this time (default: the last position, or
            no advance when there are no positions), at most the horizon.
        monotone : bool
            Return the running maximum of every release so far, floored at
            0, as :meth:`update_many` does.

        Returns
        -------
        times, values : numpy.ndarray of int64
            The seal times in ``(old time, until]`` and the releases made
            there; between them the release stays constant (:attr:`release`
            before the first).

        Raises
        ------
        TypeError, DomainError
            Bad positions, weights or ``until`` (nothing is consumed); the
            messages give the allowed ranges, never the values.
        HorizonError
            ``until`` past the horizon (nothing is consumed), or the counter
            is spent (class docstring: nothing is released).

        Notes
        -----
        O(#items + #seals), independent of the horizon: one partition call
        (:meth:`~pydp_synopsis.OnlinePartition.feed_sparse`, which skips the
        gaps between items exactly) and one inner counter call.  Holds the
        counter's lock.
        """
        monotone = check_bool(monotone, "monotone")
        with self._lock:
            self._check_live()
            floor = self._inner.monotone_release
            pos = np.asarray(positions)
            if pos.size == 0 and pos.ndim == 1:
                pos = pos.astype(np.int64)
            if pos.dtype.kind not in "iu":
                raise TypeError(f"positions must hold integers, got dtype {dtype_name(pos.dtype)}")
            if pos.ndim != 1:
                raise DomainError(f"positions must be one-dimensional, got shape {pos.shape}")
            if weights is None:
                w = np.ones(len(pos), dtype=np.int64)
            else:
                w = self._items(weights, "weights", room=False)
                if w.shape != pos.shape:
                    raise DomainError(f"weights must have the shape of positions {pos.shape}, got {w.shape}")
            self._check_total(w, "weights")
            start, horizon = self.time, self.horizon
            if pos.size:
                if int(pos.min()) <= start or int(pos.max()) > horizon:
                    raise DomainError(f"positions must be in [{start + 1}, {horizon}] (after the time "
                                      f"{start}, within the horizon)")
                pos = pos.astype(np.int64)
                if np.any(pos[1:] < pos[:-1]):
                    raise DomainError("positions must be non-decreasing")
            last = int(pos[-1]) if pos.size else start
            if until is None:
                until = last
            else:
                until = check_int(until, "until", 0, MAX_HORIZON, DomainError)
                if until > horizon:
                    raise HorizonError(f"until must be at most the horizon {horizon}, got {until}")
                if until < last:
                    raise DomainError(f"until must be at least the last position given (and the "
                                      f"time {start})")
            cum = self._total + np.cumsum(w)
            # One kernel call for the whole batch: it adds the counts at each
            # item's position and skips the gaps between items exactly.
            seal_times = self._partition.feed_sparse(pos - 1, w, until - start).astype(np.int64) + 1
            releases = self._seal(seal_times, pos, cum)
            if pos.size:
                self._total = int(cum[-1])
            if monotone:
                releases = np.maximum.accumulate(np.maximum(releases, floor)).astype(np.int64)
            return seal_times, releases

    # ------------------------------------------------------------- analysis
    def error_bound(self, confidence=None, *, weight=None):
        """Bound on the error of every release, holding with probability >= ``confidence``.

        Theorem 3.1 made rigorous for this counter's inputs.  The release at
        time t is the inner counter's release at the last seal <= t, so its
        error is the inner counter's error plus the weight of the open
        segment: the items after the last seal up to t.  None of those
        positions sealed, and a position that does not seal has
        ``count + nu <= T + Z`` with its own items already in ``count``
        (Fig. 1), so the open weight is at most the partition's
        :meth:`~pydp_synopsis.OnlinePartition.interior_weight_bound`
        ``W = T + 2 (k - 1)`` (probability >= 1 - beta/2; the partition runs
        at beta/2).  This holds for items of any size: a heavy item either
        seals its segment (and is then counted exactly by the inner
        counter's input) or lies within W, so no bound on the largest item
        is needed.  With probability >= 1 - beta/2 the inner counter's
        releases, at most its horizon (``max_items + 1`` with
        ``max_items``), are within its :meth:`~KaryTreeCounter.error_bound`
        (a spent counter makes no more releases, so the failure of the class
        docstring costs nothing here).
        Theorem 2.1's constant ``5 (ln D + ln(2/beta)) / epsilon_partition``
        is about ``2 ln 2 / epsilon_partition`` short of W (the union over
        the two noise families) and is proved for distinct items only.

        Parameters
        ----------
        confidence : float, optional
            In ``(0, 1 - beta / 2)``; default ``1 - beta`` (``beta`` fixed at
            construction, as before).  The partition keeps its ``beta / 2``;
            the inner counter gets ``1 - confidence - beta / 2``.  An int
            passed here is read as ``weight`` (release 0.2's positional
            ``error_bound(weight)``), with a DeprecationWarning.
        weight : int, optional
            A *public* upper bound n on the number of non-zero positions
            (the total weight is one), fixed without looking at the stream
            (the true number is private: never pass it); the bound is
            invalid if the stream has more.  A seal at a position whose
            segment is still empty needs ``nu - Z >= T + 1``; with probability at least
            ``1 - delta0`` (``delta0`` from a union bound over the <= D
            position and threshold noises, typically far below beta) no
            such seal happens, so at most n + 1 segments are sealed and the
            inner counter's union bound runs over n + 1 releases instead of
            its horizon at failure probability ``beta/2 - delta0``.  If ``delta0`` is
            not below ``beta/4`` the weight is not used.

        Returns
        -------
        int
            ``a`` with ``P(max_t |release_t - prefix_t| > a) <= 1 - confidence``.

        Notes
        -----
        O(log of the bound).
        """
        if is_int(confidence):       # release 0.2: error_bound(weight), positional
            weight = renamed_keyword("SparseStreamCounter.error_bound", "weight (positional)",
                                     "weight=", confidence, weight, None)
            confidence = None
        releases, beta_inner = self._inner.horizon, self.beta / 2
        if confidence is not None:
            fail, part_fail = 1.0 - check_beta(confidence, "confidence"), self.beta / 2
            if fail <= part_fail:
                raise ParameterError(
                    f"confidence must be < 1 - beta/2 = {1 - part_fail!r} (beta/2 is the "
                    f"partition's failure probability fixed at construction), got {confidence!r}")
            beta_inner = fail - part_fail
        if weight is not None:
            n = check_int(weight, "weight", 0, MAX_HORIZON)
            delta0 = self.empty_seal_probability()
            if n + 1 < releases and delta0 < beta_inner / 2:
                releases, beta_inner = n + 1, beta_inner - delta0
        open_weight = math.floor(self.interior_weight_bound())
        return open_weight + self._inner._error_bound(beta_inner, releases)

    def interior_weight_bound(self):
        """``W``: with probability >= 1 - beta/2 the open segment never holds more than ``W`` items.

        The partition's :meth:`~pydp_synopsis.OnlinePartition.interior_weight_bound`
        (``W = T + 2 (k - 1)``, the partition running at beta/2); the first
        term of :meth:`error_bound`.  O(1).

        Returns
        -------
        float
        """
        return self._partition.interior_weight_bound()

    def empty_seal_probability(self):
        """Upper bound on P(some position before the last seals an empty segment).

        An empty segment seals at a position iff ``nu > T + Z`` (Fig. 1).
        It also bounds the probability that a counter with ``max_items``
        is spent (class docstring).
        If every position noise is ``<= u - 1`` and every threshold noise
        ``>= -(T - u + 1)`` that cannot happen; the union over the <= D of
        each, with ``P(X >= j) = a^j / (1 + a)`` (``j >= 0``,
        ``a = e^{-epsilon_partition}``), bounds the rest.

        Returns
        -------
        float
            ``delta0`` of :meth:`error_bound` (a weight bound is used only
            when it is below beta/4; it is at most ``beta sqrt(beta / 2D)``).

        Notes
        -----
        O(1).  Floats: this describes accuracy and decides nothing released.
        """
        t = self.threshold
        eps_p = float(self.epsilon_partition)
        a = math.exp(-eps_p)
        d = float(self.horizon)

        def tail(j):
            return math.exp(-eps_p * j) / (1 + a)

        return min(d * (tail(u) + tail(t - u + 2)) for u in (t // 2 + 1, (t + 1) // 2 + 1))

    # ----------------------------------------------------------- checkpoints

    # ----------------------------------------------------------- checkpoints
    def _encode(self):
        self._check_live()
        part = self._partition.to_state()
        ends = np.asarray(part.pop("ends")).astype(np.int64)  # < 2**63: the horizon is
        inner_meta, inner_arrays = self._inner._encode()
        meta = {
            "kind": self._kind,
            "version": STATE_VERSION,
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "partition_share": [self._share.numerator, self._share.denominator],
            "delta": [self.delta.numerator, self.delta.denominator],
            "pure_epsilon": [self.pure_epsilon.numerator, self.pure_epsilon.denominator],
            "total": self._total,
            "partition": part,
            "inner": inner_meta,
            # derived from the parts (docs/guide/counters.md, "Its checkpoint record")
            "horizon": self.horizon,
            "beta": self.beta,
            "counter": self.counter,
            "sealed_total": self._inner.true_prefix_sum,
            "release": self.release,
            "rng": inner_meta["rng"],
        }
        if self._max_items is not None:
            meta["max_items"] = self._max_items
        return meta, {"ends": ends, **inner_arrays}

    @classmethod
    def _decode(cls, meta, arrays, rng):
        eps = state_fraction(meta["epsilon"], "epsilon")
        share = state_fraction(meta["partition_share"], "partition_share")
        delta = state_delta(meta)
        horizon, eps2, beta, counter, share2, max_items, eps_p, inner_params = cls._parameters(
            meta["horizon"], eps, meta["beta"], meta["counter"], share, meta.get("max_items"), delta)
        inner_horizon, eps_c, total = inner_params[0], inner_params[1], inner_params[4]
        inner_arrays = {name: arrays[name] for name in ("digits", "slots", "pool") if name in arrays}
        inner = _COUNTERS[counter][0]._from_record(meta["inner"], inner_arrays, rng=rng, total=total)
        partition = OnlinePartition.from_state(dict(meta["partition"], ends=int64_array(arrays["ends"], "ends")),
                                               rng=rng)
        bound = total
        total = check_int(meta["total"], "total", 0, bound)
        sealed = check_int(meta["sealed_total"], "sealed_total", 0, bound)
        release = check_int(meta["release"], "release", -math.inf, math.inf)
        obj = cls.__new__(cls)
        obj._init(eps, share, max_items, inner, partition, total)
        if (eps2 != eps or share2 != share or obj.horizon != horizon or partition.size != horizon
                or inner.horizon != inner_horizon
                or obj.epsilon_counter != eps_c or obj.epsilon_partition != eps_p
                or partition.beta != beta / 2 or len(partition.segments) != obj.segments
                or inner.delta != delta or inner.noise_scale != inner_params[7]
                or sealed != inner.true_prefix_sum or release != obj.release
                or total != sealed + partition.to_state()["count"]):
            raise FormatError("state is inconsistent (budgets, partition, inner counter or totals)")
        check_pure_epsilon(meta, obj.pure_epsilon, delta)
        return obj

    def __repr__(self):
        dlt = (f", delta={float(self.delta):.3g}, pure_epsilon={float(self.pure_epsilon):.6g}"
               if self.delta else "")
        return (f"SparseStreamCounter(horizon={self.horizon}, epsilon={self._epsilon}{dlt}, "
                f"structure={self.structure!r}, max_items={self._max_items}, time={self.time}, "
                f"segments={self.segments})")


persist.register(SparseStreamCounter._record_kind)(SparseStreamCounter._from_record)
# release 0.1 spelled the kind "sparse_stream_counter": its checkpoints still load
persist.register("sparse_stream_counter")(SparseStreamCounter._from_record)
