"""Counter for sparse streams: an online partition feeding a tree counter.

:class:`SparseStreamCounter` (DNRR section 3.1, Theorem 3.1) answers like
the tree counters of :mod:`pydp_synopsis.counters` but its error grows with
the number of non-zero items rather than with the stream length, and
:meth:`~SparseStreamCounter.update_sparse` costs O(#items + #seals) whatever
the horizon.  See the README section "Continual counters".

Checkpoint record
-----------------
The one state format of :mod:`pydp_synopsis.counters` (``to_state()`` is its
JSON view, ``ps.save`` writes it), release 0.1's version 1:

==================== ==========================================================
``kind``             ``"SparseStreamCounter"``
``version``          1
``epsilon``          ``[numerator, denominator]`` of the exact total epsilon
``partition_share``  ``[numerator, denominator]``
``total``            true prefix sum of the items fed (secret)
``partition``        :meth:`OnlinePartition.to_state` without ``ends`` (secret)
``inner``            the inner counter's record without its arrays (secret)
``horizon``          derived: the inner counter's horizon
``beta``             derived: twice the partition's beta
``counter``          derived: ``"kary"`` or ``"binary"``, the inner counter's class
``sealed_total``     derived: the inner counter's true prefix sum
``release``          derived: the inner counter's release
``rng``              derived: the generator both parts share (seeded: its position)
``ends``             array: the partition's segment ends
``digits``           array: the inner counter's digits
``slots``            array: the inner counter's noise terms (secret)
==================== ==========================================================

The derived fields are written so that release 0.1 reads the files too, and
checked against the parts when a record is read.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: section 3.1, Theorem 3.1; Fig. 1 and Theorem 2.1.
"""
import math

import numpy as np

from . import persist
from .budget import charge
from .counters import (MAX_HORIZON, STATE_VERSION, BinaryTreeCounter, ContinualCounter, KaryTreeCounter,
                       int64_array, state_fraction)
from .errors import DomainError, FormatError, HorizonError
from .params import check_beta, check_choice, check_int, check_share, exact_epsilon, split_epsilon
from .partition import OnlinePartition
from .rng import resolve_rng

__all__ = ["SparseStreamCounter"]

#: Largest true prefix sum: the online partition keeps a segment's count
#: below 2**61 (a limit of the C core, retyped here).
MAX_TOTAL = 2**61 - 1

_COUNTERS = {"kary": KaryTreeCounter, "binary": BinaryTreeCounter}
_COUNTER_NAMES = {cls: name for name, cls in _COUNTERS.items()}


class SparseStreamCounter(ContinualCounter):
    """Counter for sparse streams: an online partition feeding a tree counter.

    The online partition (DNRR Fig. 1, budget ``epsilon * partition_share``,
    failure probability ``beta/2``) decides after each item whether to seal
    the current segment; each sealed segment's true count is fed to an inner
    tree counter (the rest of the budget) as one item.  The release between
    two seals is the inner counter's last release (0 before the first
    seal).  The error is at most the weight of the open segment plus the
    inner counter's error, so it grows like ``log D + polylog(n)`` for a
    stream of weight n rather than ``polylog(D)``.

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
    counter : {"kary", "binary"}
        Inner counter: KaryTreeCounter (k = 19) or BinaryTreeCounter.
    partition_share : float or Fraction
        Fraction of epsilon given to the partition, in (0, 1); default 1/2
        as in the proof of Theorem 3.1.
    rng : Rng, optional
        Randomness (default a fresh OS-seeded Rng); seeds for tests only.
    budget : Budget, optional
        Charged ``epsilon`` after the arguments are validated and before any
        noise is drawn (sequential composition, see :class:`~pydp_synopsis.Budget`).

    Notes
    -----
    Neighbouring streams differ by one unit at one position.  The
    partition is epsilon_partition-DP (Theorem 2.1); given the partition,
    one unit changes one segment count by one, so the inner counter is
    epsilon_counter-DP; by composition the releases are epsilon-DP.  The
    inner counter's horizon is D (a segment can end at every position).

    What the counter keeps: the inner counter, the online partition, the
    exact ``epsilon`` and ``partition_share`` (the parts' budgets are
    rounded down, so neither can be recovered from them) and the true
    prefix sum of the items fed.  That sum is the inner counter's prefix
    plus the open segment's count, which the partition exposes only inside
    :meth:`~pydp_synopsis.OnlinePartition.to_state` (a copy of every
    segment end, O(#segments) per read); keeping it makes every update O(1)
    amortised, and a restored checkpoint must agree with both parts.
    Everything else is read from the parts: the horizon and
    :attr:`epsilon_counter` from the inner counter, :attr:`time`,
    :attr:`beta` (twice the partition's) and :attr:`epsilon_partition` from
    the partition, :attr:`release` (the inner counter's last release),
    :attr:`segments` and the sealed total (the inner counter's time and
    true prefix sum), :attr:`counter` (the inner counter's class).

    References
    ----------
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, section 3.1, Theorem 3.1;
       Fig. 1 and Theorem 2.1 (the online partition).
    .. [APT] Andersson, Pagh, Torkamani, Algorithm 2 and section 3.1 (the
       inner counters, :mod:`pydp_synopsis.counters`).

    Examples
    --------
    >>> from pydp_synopsis.noise import Rng
    >>> c = SparseStreamCounter(horizon=2**62, epsilon=1.0, rng=Rng(3))
    >>> times, values = c.update_sparse([10, 2**40, 2**61], until=2**62)
    >>> c.time == 2**62 and int(times[-1]) == 2**62
    True
    """

    _kind = "SparseStreamCounter"
    _record_kind = "sparse_stream_counter"
    _array_places = {"ends": ("partition",), "digits": ("inner",), "slots": ("inner",)}

    def __init__(self, *, horizon, epsilon, beta=0.05, counter="kary", partition_share=0.5, rng=None,
                 budget=None):
        horizon, eps, beta, counter, share, eps_p, eps_c = self._parameters(
            horizon, epsilon, beta, counter, partition_share)
        rng = resolve_rng(rng, "rng")
        charge(budget, eps, f"SparseStreamCounter(horizon={horizon})")  # before any noise
        # Build both before keeping either: no half-built object on error.
        inner = _COUNTERS[counter](horizon=horizon, epsilon=eps_c, rng=rng)
        partition = OnlinePartition(size=horizon, epsilon=eps_p, beta=beta / 2, rng=rng)
        self._init(eps, share, inner, partition, 0)

    @staticmethod
    def _parameters(horizon, epsilon, beta, counter, partition_share):
        """Checked ``(horizon, epsilon, beta, counter, share, eps_p, eps_c)``; no side effect."""
        horizon = check_int(horizon, "horizon", 1, MAX_HORIZON)
        eps = exact_epsilon(epsilon, "epsilon")
        beta = check_beta(beta, "beta")
        counter = check_choice(counter, "counter", _COUNTERS)
        share = check_share(partition_share, "partition_share")
        # Each part is rounded down to a bounded rational: they sum to <= eps.
        eps_p, eps_c = split_epsilon(eps, share, ("epsilon * partition_share",
                                                  "epsilon * (1 - partition_share)"))
        return horizon, eps, beta, counter, share, eps_p, eps_c

    def _init(self, eps, share, inner, partition, total):
        """The one constructor (``__init__`` and the decoder); see the class
        Notes for why these and only these are kept."""
        self._epsilon = eps
        self._share = share
        self._inner = inner
        self._partition = partition
        self._total = total

    # ------------------------------------------------------------ properties
    @property
    def horizon(self):
        """Stream length D (the inner counter's horizon)."""
        return self._inner.horizon

    @property
    def time(self):
        """Number of items processed so far (the partition's position)."""
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
    def counter(self):
        """The inner counter: ``"kary"`` (KaryTreeCounter, k = 19) or ``"binary"``."""
        return _COUNTER_NAMES[type(self._inner)]

    @property
    def release(self):
        """The value currently released (the last seal's noisy prefix sum, 0 before any)."""
        return self._inner.release

    @property
    def segments(self):
        """Number of sealed segments (items fed to the inner counter)."""
        return self._inner.time

    @property
    def seal_times(self):
        """Times (1-based) at which segments sealed, increasing (int64 array).

        The release changes only at these times; they are released (the
        ``times`` of :meth:`update_sparse`).  O(#segments).
        """
        return self._partition.segments.astype(np.int64) + 1

    @property
    def threshold(self):
        """The partition's integer threshold T (Fig. 1; public: D, beta, epsilon_partition)."""
        return self._partition.threshold

    # --------------------------------------------------------------- updates
    def _seal(self, seal_times, item_times, item_cum):
        """Feed the sealed segments' true counts to the inner counter.

        ``item_cum[i]`` is the true prefix sum after the item at
        ``item_times[i]`` (both increasing, covering the batch), so the
        prefix at a seal is the last entry at or before it (the total before
        the batch for a seal before its first item).
        """
        idx = np.searchsorted(item_times, seal_times, side="right")
        prefix_at = np.concatenate([[self._total], item_cum]).astype(np.int64)[idx]
        counts = np.diff(prefix_at, prepend=self._inner.true_prefix_sum)
        return self._inner.update_many(counts)

    def _check_total(self, xs, name):
        # The partition keeps a segment's count below 2**61; the whole prefix
        # staying below it keeps every segment below it.  The float sum is a
        # fast filter; near the limit the sum is redone exactly.
        if xs.size and float(xs.sum(dtype=np.float64)) + self._total > MAX_TOTAL * 0.999:
            if sum(int(v) for v in xs) + self._total > MAX_TOTAL:
                raise DomainError(f"{name} would make the prefix sum exceed 2**61 - 1")

    def update_many(self, xs):
        """Feed a dense batch of items; return the release after each one.

        Parameters
        ----------
        xs : array_like of int
            One-dimensional non-negative integers (bool accepted).

        Returns
        -------
        numpy.ndarray of int64
            The release after each item; it changes only when a segment seals.

        Raises
        ------
        HorizonError
            If the batch would go past the horizon (nothing is consumed).
        DomainError
            For a negative item or a prefix sum above 2**61 - 1 (nothing is consumed).

        Notes
        -----
        O(len(xs)) numpy work, one partition call and one counter call.
        """
        xs = self._items(xs, "xs")
        self._check_total(xs, "xs")
        start, before = self.time, self.release
        seals = self._partition.feed(xs).astype(np.int64) + 1  # 1-based times
        times = np.arange(start + 1, start + len(xs) + 1, dtype=np.int64)
        cum = self._total + np.cumsum(xs)
        releases = self._seal(seals, times, cum)
        if len(xs):
            self._total = int(cum[-1])
        idx = np.searchsorted(seals, times, side="right")
        return np.concatenate([[before], releases]).astype(np.int64)[idx]

    def update_sparse(self, positions, weights=None, until=None):
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

        Returns
        -------
        times, values : numpy.ndarray of int64
            The seal times in ``(old time, until]`` and the releases made
            there; between them the release stays constant (:attr:`release`
            before the first).

        Notes
        -----
        O(#items + #seals), independent of the horizon: one partition call
        (:meth:`~pydp_synopsis.OnlinePartition.feed_sparse`, which skips the
        gaps between items exactly) and one inner counter call.
        """
        pos = np.asarray(positions)
        if pos.size == 0 and pos.ndim == 1:
            pos = pos.astype(np.int64)
        if pos.dtype.kind not in "iu":
            raise TypeError(f"positions must hold integers, got dtype {pos.dtype}")
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
                raise DomainError(f"positions must be in [{start + 1}, {horizon}] (after time "
                                  f"{start}, within the horizon), got [{pos.min()}, {pos.max()}]")
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
                raise DomainError(f"until must be at least the last position {last} (and the time "
                                  f"{start}), got {until}")
        cum = self._total + np.cumsum(w)
        # One kernel call for the whole batch: it adds the counts at each
        # item's position and skips the gaps between items exactly.
        seal_times = self._partition.feed_sparse(pos - 1, w, until - start).astype(np.int64) + 1
        releases = self._seal(seal_times, pos, cum)
        if pos.size:
            self._total = int(cum[-1])
        return seal_times, releases

    # ------------------------------------------------------------- analysis
    def error_bound(self, weight=None):
        """Bound on the error of every release, holding with probability >= 1 - beta.

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
        releases are within its :meth:`~KaryTreeCounter.error_bound`.
        Theorem 2.1's constant ``5 (ln D + ln(2/beta)) / epsilon_partition``
        is about ``2 ln 2 / epsilon_partition`` short of W (the union over
        the two noise families) and is proved for distinct items only.

        Parameters
        ----------
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
            D at failure probability ``beta/2 - delta0``.  If ``delta0`` is
            not below ``beta/4`` the weight is not used.

        Returns
        -------
        int
            ``a`` with ``P(max_t |release_t - prefix_t| > a) <= beta``.

        Notes
        -----
        O(log of the bound).
        """
        releases, beta_inner = self.horizon, self.beta / 2
        if weight is not None:
            n = check_int(weight, "weight", 0, MAX_HORIZON)
            delta0 = self.empty_seal_probability()
            if n + 1 < self.horizon and delta0 < self.beta / 4:
                releases, beta_inner = n + 1, self.beta / 2 - delta0
        open_weight = math.floor(self.interior_weight_bound())
        return open_weight + self._inner.error_bound(beta_inner, releases)

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
    def _encode(self):
        part = self._partition.to_state()
        ends = np.asarray(part.pop("ends")).astype(np.int64)  # < 2**63: the horizon is
        inner_meta, inner_arrays = self._inner._encode()
        meta = {
            "kind": self._kind,
            "version": STATE_VERSION,
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "partition_share": [self._share.numerator, self._share.denominator],
            "total": self._total,
            "partition": part,
            "inner": inner_meta,
            # derived from the parts (see the module docstring)
            "horizon": self.horizon,
            "beta": self.beta,
            "counter": self.counter,
            "sealed_total": self._inner.true_prefix_sum,
            "release": self.release,
            "rng": inner_meta["rng"],
        }
        return meta, {"ends": ends, **inner_arrays}

    @classmethod
    def _decode(cls, meta, arrays, rng):
        eps = state_fraction(meta["epsilon"], "epsilon")
        share = state_fraction(meta["partition_share"], "partition_share")
        horizon, eps2, beta, counter, share2, eps_p, eps_c = cls._parameters(
            meta["horizon"], eps, meta["beta"], meta["counter"], share)
        inner = _COUNTERS[counter]._from_record(
            meta["inner"], {"digits": arrays["digits"], "slots": arrays["slots"]}, rng=rng)
        partition = OnlinePartition.from_state(dict(meta["partition"], ends=int64_array(arrays["ends"], "ends")),
                                               rng=rng)
        total = check_int(meta["total"], "total", 0, MAX_TOTAL)
        sealed = check_int(meta["sealed_total"], "sealed_total", 0, MAX_TOTAL)
        release = check_int(meta["release"], "release", -math.inf, math.inf)
        obj = cls.__new__(cls)
        obj._init(eps, share, inner, partition, total)
        if (eps2 != eps or share2 != share or obj.horizon != horizon or partition.size != horizon
                or obj.epsilon_counter != eps_c or obj.epsilon_partition != eps_p
                or partition.beta != beta / 2 or len(partition.segments) != obj.segments
                or sealed != inner.true_prefix_sum or release != obj.release
                or total != sealed + partition.to_state()["count"]):
            raise FormatError("state is inconsistent (budgets, partition, inner counter or totals)")
        return obj

    def __repr__(self):
        return (f"SparseStreamCounter(horizon={self.horizon}, epsilon={self._epsilon}, "
                f"counter={self.counter!r}, time={self.time}, segments={self.segments})")


persist.register(SparseStreamCounter._record_kind)(SparseStreamCounter._from_record)
