"""Counter for sparse streams: an online partition feeding a tree counter.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: section 3.1, Theorem 3.1; Fig. 1 and Theorem 2.1.
"""
from fractions import Fraction
import math
import operator

import numpy as np

from . import persist
from .budget import charge
from .counters import BinaryTreeCounter, KaryTreeCounter, MAX_HORIZON, MAX_ITEM, STATE_VERSION
from .errors import DomainError, FormatError, HorizonError, ParameterError
from .params import check_beta, check_int, check_share, exact_epsilon, split_epsilon
from .rng import Rng, resolve_rng

__all__ = ["SparseStreamCounter"]

_COUNTERS = {"kary": KaryTreeCounter, "binary": BinaryTreeCounter}
# The online partition keeps segment counts below 2**61.
_SPARSE_MAX_TOTAL = 2**61 - 1


class SparseStreamCounter:
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

    References
    ----------
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, section 3.1, Theorem 3.1;
       Fig. 1 and Theorem 2.1 (the online partition).

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

    def __init__(self, *, horizon, epsilon, beta=0.05, counter="kary", partition_share=0.5, rng=None,
                 budget=None):
        from .partition import OnlinePartition

        horizon, eps, beta, counter, share, eps_p, eps_c = self._parameters(
            horizon, epsilon, beta, counter, partition_share)
        rng = resolve_rng(rng, "rng")
        charge(budget, eps, f"SparseStreamCounter(horizon={horizon})")  # before any noise
        # Build both before keeping either: no half-built object on error.
        inner = _COUNTERS[counter](horizon=horizon, epsilon=eps_c, rng=rng)
        partition = OnlinePartition(size=horizon, epsilon=eps_p, beta=beta / 2, rng=rng)
        self._init(horizon, eps, beta, counter, share, eps_p, eps_c, rng, inner, partition)

    @staticmethod
    def _parameters(horizon, epsilon, beta, counter, partition_share):
        horizon = check_int(horizon, "horizon", 1, MAX_HORIZON)
        eps = exact_epsilon(epsilon, "epsilon")
        beta = check_beta(beta, "beta")
        if not isinstance(counter, str) or counter not in _COUNTERS:
            raise ParameterError(f"counter must be one of {sorted(_COUNTERS)}, got {counter!r}")
        share = check_share(partition_share, "partition_share")
        # Each part is rounded down to a bounded rational: they sum to <= eps.
        eps_p, eps_c = split_epsilon(eps, share, ("epsilon * partition_share",
                                                  "epsilon * (1 - partition_share)"))
        return horizon, eps, beta, counter, share, eps_p, eps_c

    def _init(self, horizon, eps, beta, counter, share, eps_p, eps_c, rng, inner, partition):
        self._horizon = horizon
        self._epsilon = eps
        self._beta = beta
        self._counter_name = counter
        self._share = share
        self._eps_p = eps_p
        self._eps_c = eps_c
        self._rng = rng
        self._inner = inner
        self._partition = partition
        self._total = 0          # true prefix sum so far
        self._sealed_total = 0   # true prefix sum at the last seal
        self._release = 0        # current released value

    # ------------------------------------------------------------ properties
    @property
    def horizon(self):
        """Stream length D."""
        return self._horizon

    @property
    def time(self):
        """Number of items processed so far."""
        return self._partition.position

    @property
    def epsilon(self):
        """Total exact privacy parameter (Fraction)."""
        return self._epsilon

    @property
    def epsilon_partition(self):
        """Budget of the online partition (Fraction)."""
        return self._eps_p

    @property
    def epsilon_counter(self):
        """Budget of the inner counter (Fraction); the two sum to at most epsilon."""
        return self._eps_c

    @property
    def beta(self):
        """Failure probability of :meth:`error_bound`."""
        return self._beta

    @property
    def release(self):
        """The value currently released (the last seal's noisy prefix sum, 0 before any)."""
        return self._release

    @property
    def segments(self):
        """Number of sealed segments (items fed to the inner counter)."""
        return self._inner.time

    # --------------------------------------------------------------- updates
    def _seal(self, seal_times, item_times, item_cum):
        """Feed the sealed segments' true counts to the inner counter.

        ``item_cum[i]`` is the true prefix sum after the item at
        ``item_times[i]`` (both increasing, covering the batch), so the
        prefix at a seal is the last entry at or before it.
        """
        idx = np.searchsorted(item_times, seal_times, side="right") - 1
        prefix_at = np.where(idx >= 0, item_cum[np.maximum(idx, 0)], self._total)
        counts = np.diff(prefix_at, prepend=self._sealed_total)
        releases = self._inner.update_many(counts)
        if len(seal_times):
            self._sealed_total = int(prefix_at[-1])
            self._release = int(releases[-1])
        return releases

    def _check_items(self, xs, name):
        if xs.dtype.kind not in "biu":
            raise TypeError(f"{name} must hold integers, got dtype {xs.dtype}")
        if xs.ndim != 1:
            raise DomainError(f"{name} must be one-dimensional, got shape {xs.shape}")
        if xs.size and xs.dtype.kind != "b" and (xs.min() < 0 or xs.max() > MAX_ITEM):
            raise DomainError(f"{name} must be integers in [0, 2**62], got values in [{xs.min()}, {xs.max()}]")
        xs = xs.astype(np.int64)
        self._check_total(xs, name)
        return xs

    def _check_total(self, xs, name):
        # The partition keeps a segment's count below 2**61; the whole prefix
        # staying below it keeps every segment below it.  The float sum is a
        # fast filter; near the limit the sum is redone exactly.
        if xs.size and float(xs.sum(dtype=np.float64)) + self._total > _SPARSE_MAX_TOTAL * 0.999:
            if sum(int(v) for v in xs) + self._total > _SPARSE_MAX_TOTAL:
                raise DomainError(f"{name} would make the prefix sum exceed 2**61 - 1")

    def update(self, x):
        """Feed one item; return the release (changes only when a segment seals).

        Notes
        -----
        O(1) amortised.
        """
        x = check_int(x, "x", 0, MAX_ITEM, DomainError)
        return int(self.update_many(np.array([x], dtype=np.int64))[0])

    def update_many(self, xs):
        """Feed a dense batch of items; return the release after each one.

        Parameters
        ----------
        xs : array_like of int
            One-dimensional non-negative integers (bool accepted).

        Returns
        -------
        numpy.ndarray of int64

        Notes
        -----
        O(len(xs)) numpy work, one partition call and one counter call.
        """
        xs = np.asarray(xs)
        if xs.size == 0 and xs.ndim == 1:
            xs = xs.astype(np.int64)
        if xs.ndim == 1 and len(xs) > self._horizon - self.time:
            raise HorizonError(f"xs has {len(xs)} items but only {self._horizon - self.time} remain "
                               f"before the horizon {self._horizon}")
        xs = self._check_items(xs, "xs")
        start = self.time
        before = self._release
        seals = self._partition.feed(xs).astype(np.int64) + 1  # 1-based times
        times = np.arange(start + 1, start + len(xs) + 1, dtype=np.int64)
        cum = self._total + np.cumsum(xs)
        releases = self._seal(seals, times, cum)
        if len(xs):
            self._total = int(cum[-1])
        idx = np.searchsorted(seals, times, side="right") - 1
        return np.where(idx >= 0, releases[np.maximum(idx, 0)] if len(seals) else before, before)

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
            w = np.asarray(weights)
            if w.size == 0 and w.ndim == 1:
                w = w.astype(np.int64)
            w = self._check_items(w, "weights")
            if w.shape != pos.shape:
                raise DomainError(f"weights must have the shape of positions {pos.shape}, got {w.shape}")
        start = self.time
        if pos.size:
            if int(pos.min()) <= start or int(pos.max()) > self._horizon:
                raise DomainError(f"positions must be in [{start + 1}, {self._horizon}] (after time "
                                  f"{start}, within the horizon), got [{pos.min()}, {pos.max()}]")
            pos = pos.astype(np.int64)
            if np.any(pos[1:] < pos[:-1]):
                raise DomainError("positions must be non-decreasing")
        last = int(pos[-1]) if pos.size else start
        if until is None:
            until = last
        else:
            until = check_int(until, "until", 0, MAX_HORIZON, DomainError)
            if until > self._horizon:
                raise HorizonError(f"until must be at most the horizon {self._horizon}, got {until}")
            if until < last:
                raise DomainError(f"until must be at least the last position {last} (and the time "
                                  f"{start}), got {until}")
        if weights is None:
            self._check_total(w, "weights")
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
            An upper bound n on the number of non-zero positions (the total
            weight is one).  A seal at a position whose segment is still
            empty needs ``nu - Z >= T + 1``; with probability at least
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
        releases, beta_inner = self._horizon, self._beta / 2
        if weight is not None:
            n = check_int(weight, "weight", 0, MAX_HORIZON)
            delta0 = self._empty_seal_probability()
            if n + 1 < self._horizon and delta0 < self._beta / 4:
                releases, beta_inner = n + 1, self._beta / 2 - delta0
        open_weight = math.floor(self._partition.interior_weight_bound())
        return open_weight + self._inner.error_bound(beta_inner, releases)

    def _empty_seal_probability(self):
        """Upper bound on P(some position before the last seals an empty segment).

        An empty segment seals at a position iff ``nu > T + Z`` (Fig. 1).
        If every position noise is ``<= u - 1`` and every threshold noise
        ``>= -(T - u + 1)`` that cannot happen; the union over the <= D of
        each, with ``P(X >= j) = a^j / (1 + a)`` (``j >= 0``,
        ``a = e^{-epsilon_partition}``), bounds the rest.  Floats: this
        describes accuracy and decides nothing released.
        """
        t = self._partition.threshold
        a = math.exp(-float(self._eps_p))
        d = float(self._horizon)

        def tail(j):
            return math.exp(-float(self._eps_p) * j) / (1 + a)

        return min(d * (tail(u) + tail(t - u + 2)) for u in (t // 2 + 1, (t + 1) // 2 + 1))

    # ----------------------------------------------------------- checkpoints
    def to_state(self):
        """Checkpoint with the partition's and inner counter's states (secret noise).

        Returns
        -------
        dict
            JSON-able.  O(#segments + k log D).
        """
        part = self._partition.to_state()
        part["ends"] = [int(v) for v in part["ends"]]
        return {
            "kind": self._kind,
            "version": STATE_VERSION,
            "horizon": self._horizon,
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "beta": self._beta,
            "counter": self._counter_name,
            "partition_share": [self._share.numerator, self._share.denominator],
            "total": self._total,
            "sealed_total": self._sealed_total,
            "release": self._release,
            "partition": part,
            "inner": self._inner.to_state(),
            "rng": self._rng._to_state(),
        }

    @classmethod
    def from_state(cls, state, *, rng=None):
        """Restore from :meth:`to_state`; no noise is redrawn, rng is for future draws.

        Raises
        ------
        FormatError
            If the state is not a consistent state of this class.

        Notes
        -----
        O(#segments + k log D).
        """
        from .partition import OnlinePartition

        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict, got {type(state).__name__}")
        if state.get("kind") != cls._kind or state.get("version") != STATE_VERSION:
            raise FormatError(f"state is not a version {STATE_VERSION} {cls._kind} state")
        try:
            eps = Fraction(*(operator.index(v) for v in state["epsilon"]))
            share = Fraction(*(operator.index(v) for v in state["partition_share"]))
            horizon, eps2, beta, counter, share2, eps_p, eps_c = cls._parameters(
                state["horizon"], eps, state["beta"], state["counter"], share)
            if rng is None and state.get("rng") is not None:
                rng = Rng._from_state(state["rng"])
            rng = resolve_rng(rng, "rng")
            total, sealed, release = (operator.index(state[k]) for k in ("total", "sealed_total", "release"))
            part_state = dict(state["partition"])
            inner = _COUNTERS[counter].from_state(state["inner"], rng=rng)
            partition = OnlinePartition.from_state(part_state, rng=rng)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise FormatError(f"state has bad fields: {exc}") from None
        if (eps2 != eps or share2 != share or inner.horizon != horizon
                or inner.epsilon != eps_c or partition.size != horizon
                or partition.epsilon != eps_p or partition.beta != beta / 2
                or len(partition.segments) != inner.time or inner.time > partition.position
                or not 0 <= sealed <= total <= _SPARSE_MAX_TOTAL or sealed != inner.to_state()["prefix"]
                or release != (inner.to_state()["prefix"] + inner.to_state()["noise"] if inner.time else 0)):
            raise FormatError("state is inconsistent (budgets, partition, inner counter or totals)")
        obj = cls.__new__(cls)
        obj._init(horizon, eps, beta, counter, share, eps_p, eps_c, rng, inner, partition)
        obj._total, obj._sealed_total, obj._release = total, sealed, release
        return obj

    def _to_record(self):
        """(kind, meta, arrays, mode) for persist.save; mode 0o600 (secret noise)."""
        state = self.to_state()
        arrays = {"ends": np.array(state["partition"].pop("ends"), dtype=np.int64),
                  "digits": np.array(state["inner"].pop("digits"), dtype=np.int64),
                  "slots": np.array(state["inner"].pop("slots"), dtype=np.int64)}
        return self._record_kind, state, arrays, 0o600

    @classmethod
    def _from_record(cls, meta, arrays):
        state = _state_copy(meta)
        state["partition"]["ends"] = [int(v) for v in arrays["ends"]]
        state["inner"]["digits"] = [int(v) for v in arrays["digits"]]
        state["inner"]["slots"] = [int(v) for v in arrays["slots"]]
        return cls.from_state(state)

    def __repr__(self):
        return (f"SparseStreamCounter(horizon={self._horizon}, epsilon={self._epsilon}, "
                f"counter={self._counter_name!r}, time={self.time}, segments={self.segments})")


def _state_copy(meta):
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in meta.items()}


persist.register(SparseStreamCounter._record_kind)(SparseStreamCounter._from_record)
