"""Fig. 1's online partition of a stream's positions (DNRR section 2).

:class:`OnlinePartition` feeds the positions of a stream to the same C kernel
as the offline partition (:mod:`~pydp_synopsis.partitions.dnrr`): counts one
by one or in batches, runs of zeros skipped exactly, and a checkpoint
(:meth:`OnlinePartition.to_state`) that never redraws noise.  The sparse
stream counter (:mod:`pydp_synopsis.sparse_counter`) composes it with a tree
counter.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: section 2, Fig. 1, Theorem 2.1.
"""
from fractions import Fraction

import numpy as np

from .. import _exact, persist
from .._core import check, ffi, lib
from ..errors import DomainError, FormatError, HorizonError
from ..params import check_beta, check_positions, dtype_name, exact_epsilon, is_int
from ..rng import Rng, resolve_rng
from .dnrr import COUNT_CAP, DNRR_FACTOR, Fig1, kernel_params, run_kernel, start_kernel

__all__ = ["OnlinePartition", "ONLINE_PARTITION_KIND"]

#: The persist record of an online partition (``ps.save(op)``, mode 0600: its noisy
#: threshold is secret); its meta is :meth:`OnlinePartition.to_state` without ``ends``.
ONLINE_PARTITION_KIND = "online-partition"

_EPRECISION = lib.PDS_EPRECISION
_STATE_VERSION = 1

class OnlinePartition(Fig1):
    """Fig. 1's online partition of the positions ``0 .. size-1`` of a stream.

    Parameters
    ----------
    size : int
        Number of positions D, in [1, 2**64]: a stream's length, its
        positions ``0 .. size-1`` (not a value range, so not ``domain=(lo,
        hi)`` as the builders take; the name is the design's contract).
    epsilon : float or Fraction
        Privacy parameter (> 0), made exact as for :func:`~pydp_synopsis.partitions.private_partition`.
    beta : float
        Failure probability of the accuracy guarantee, in (0, 1).
    rng : Rng, optional
        None draws fresh OS entropy; seeds are for tests/benchmarks only.

    Notes
    -----
    Positions are 0-based.  Each position carries a non-negative integer
    count (a multiset; sensitivity 1 per item) of any size: the open
    segment's count saturates at ``2**62`` (a position whose count is that
    large seals except with probability ``exp(-2**61 epsilon)``), so no
    count makes a call raise -- raising never depends on the data.  The last
    position always seals.  :meth:`feed` costs one C call per batch; runs of zeros (inside a
    batch or via :meth:`skip`) cost O(#seals + 1), not O(length).  The
    threshold factor is Fig. 1's 3; :attr:`threshold` and
    :meth:`interior_weight_bound` are the offline partition's.

    References
    ----------
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, section 2, Fig. 1,
       Theorem 2.1.

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> op = OnlinePartition(size=2**64, epsilon=1.0, rng=ps.Rng(seed=2))
    >>> sealed = op.feed([0, 1, 0, 3])
    >>> sealed = op.skip(2**64 - 4)
    >>> op.finished, int(op.segments[-1]) == 2**64 - 1
    (True, True)
    """

    def __init__(self, *, size, epsilon, beta=0.05, rng=None):
        size = check_positions(size)
        eps = exact_epsilon(epsilon)
        beta = check_beta(beta)
        rng = resolve_rng(rng)
        self._attach(size, eps, beta, rng, start_kernel(rng, size, eps, beta, DNRR_FACTOR), [])

    def _attach(self, size, epsilon, beta, rng, state, ends):
        self._set_parameters(size, epsilon, beta, DNRR_FACTOR)
        self._rng, self._state, self._ends = rng, state, ends
        # feed_one's kernel arguments, allocated once (_step)
        self._one = (lib.pds_partition_feed, rng._state, rng._lock.acquire, rng._lock.release,
                     ffi.new("uint64_t[1]"), ffi.new("int64_t[1]"), ffi.new("uint64_t[1]"),
                     ffi.new("size_t *"), ffi.new("size_t *"))

    @property
    def size(self):
        """Number of positions D."""
        return self._size

    @property
    def finished(self):
        """True once the last position has been processed (and sealed)."""
        return bool(self._state.finished)

    @property
    def position(self):
        """Number of positions processed so far (the next position's offset)."""
        return self._size if self._state.finished else int(self._state.position)

    @property
    def segments(self):
        """Right ends of the segments sealed so far (uint64 array).  O(#segments)."""
        if not self._ends:
            return np.empty(0, dtype=np.uint64)
        if len(self._ends) > 1:
            self._ends = [np.concatenate(self._ends)]
        return self._ends[0].copy()

    # -- feeding
    def _count_of_positions(self, n, what):
        """``n`` as an int in ``[0, positions left]``."""
        if not is_int(n):
            raise TypeError(f"n must be an integer, got {type(n).__name__}")
        n = int(n)
        if n < 0:
            raise DomainError(f"n must be >= 0, got {n}")
        left = self._size - self.position
        if n > left:
            raise HorizonError(
                f"{what} would go past the end of the partition: {n} positions given, "
                f"{left} left of size {self._size}")
        return n

    @staticmethod
    def _kernel_counts(cnt):
        """Non-negative integer counts as the kernel's int64, each capped at 2**62.

        The cap and the kernel's saturating segment count (2**62) replace
        any limit on the data: ``min(c, 2**62)`` grows by at most one per
        item, so Fig. 1's proof holds, and no count -- however large, in
        any dtype -- makes a call raise (docs/guide/privacy.md).  The
        message names the rule, never a value.
        """
        if cnt.size and int(cnt.min()) < 0:
            raise DomainError("counts must be non-negative integers")
        if cnt.size and int(cnt.max()) > COUNT_CAP:   # only (u)int64 can: the cap fits
            cnt = np.minimum(cnt, cnt.dtype.type(COUNT_CAP))
        return cnt.astype(np.int64)

    def _advance(self, pos, cnt, n):
        """Process the next ``n >= 1`` positions, the non-zero counts ``cnt`` at ``pos``."""
        seals = run_kernel(self._state, self._rng, pos, cnt, self.position + n - 1)
        if seals.size:
            self._ends.append(seals)
        return seals

    def feed_one(self, x):
        """Process the next position, holding ``x`` items: ``feed([x])`` without arrays.

        Parameters
        ----------
        x : int
            A non-negative integer count.

        Returns
        -------
        bool
            True if the position sealed (the same kernel call and random draws
            as :meth:`feed`, so the same partition).

        Raises
        ------
        TypeError, DomainError, HorizonError
            As :meth:`feed`, checked before anything changes.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> op = OnlinePartition(size=3, epsilon=1.0, rng=ps.Rng(seed=3))
        >>> op.feed_one(0), op.feed_one(0), op.feed_one(0)   # the last position always seals
        (False, False, True)
        """
        if type(x) is not int:
            return bool(self.feed([x]).size)        # the array path: its checks and errors
        if x < 0:
            raise DomainError("counts must be non-negative integers")
        if self._state.finished:
            self._count_of_positions(1, "feed_one")  # raises HorizonError
        return self._step(x)

    def _step(self, x):
        """:meth:`feed_one` of an int ``x >= 0`` before the end (the caller checked both).

        The kernel call of :func:`_run` for one position, with arguments
        allocated once (:meth:`_attach`) instead of arrays per call: the
        same call sequence (an exact decision settled in between), the same
        draws, the generator's lock held throughout.  A seal is recorded
        only once every call succeeded, as :meth:`_advance` does.
        """
        feed, rng, acquire, release, pos, cnt, seal, consumed, nseals = self._one
        state = self._state
        end = state.position
        n = 0
        if x:
            pos[0] = end
            cnt[0] = x if x < COUNT_CAP else COUNT_CAP
            n = 1
        found = None
        acquire()
        try:
            while True:
                st = feed(state, rng, pos if n else ffi.NULL, cnt if n else ffi.NULL, n, end,
                          consumed, seal, 1, nseals)
                n -= consumed[0]
                if nseals[0]:
                    found = [seal[0]] if found is None else found + [seal[0]]
                if st == _EPRECISION:
                    _exact.settle(state, rng)
                    continue
                check(st)
                if state.finished or state.position > end:
                    break
        finally:
            release()
        if found is None:
            return False
        self._ends.append(np.array(found, dtype=np.uint64))
        return True

    def feed(self, counts):
        """Process the next ``len(counts)`` positions.

        Parameters
        ----------
        counts : array_like of int
            1-D, non-negative integer counts (bool accepted as 0/1).

        Returns
        -------
        numpy.ndarray of uint64
            Absolute positions sealed during this batch.

        Raises
        ------
        TypeError, DomainError
            Non-integer or negative counts (checked before anything changes).
        HorizonError
            More counts than positions left.

        Notes
        -----
        O(n) numpy work to find the non-zero counts, then one C call doing
        O(#nonzero + #seals) steps.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> op = OnlinePartition(size=4, epsilon=1.0, rng=ps.Rng(seed=3))
        >>> op.feed([0, 0, 0, 0]).tolist()[-1]
        3
        """
        arr = np.asarray(counts)
        if arr.ndim == 1 and arr.size == 0:
            return np.empty(0, dtype=np.uint64)
        if arr.ndim != 1:
            raise TypeError(f"counts must be a 1-D array, got {arr.ndim} dimensions")
        if arr.dtype.kind == "b":
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"counts must be an array of integers, got dtype {dtype_name(arr.dtype)}")
        n = self._count_of_positions(len(arr), "feed")
        nz = np.flatnonzero(arr)
        cnt = self._kernel_counts(arr[nz])
        pos = nz.astype(np.uint64) + np.uint64(self.position)
        return self._advance(pos, cnt, n)

    def skip(self, n):
        """Process ``n`` positions of count zero.

        Parameters
        ----------
        n : int
            Number of positions, 0 <= n <= size - position.

        Returns
        -------
        numpy.ndarray of uint64
            Absolute positions sealed.

        Notes
        -----
        O(#seals + 1): the exact skip, never O(n).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> op = OnlinePartition(size=10**18, epsilon=1.0, rng=ps.Rng(seed=4))
        >>> op.skip(10**18).tolist()[-1] == 10**18 - 1
        True
        """
        n = self._count_of_positions(n, "skip")
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        return self._advance(np.empty(0, dtype=np.uint64), None, n)

    def feed_sparse(self, positions, counts, n):
        """Process the next ``n`` positions, given by their non-zero counts.

        Parameters
        ----------
        positions : array_like of int
            Absolute 0-based positions of the non-zero counts, non-decreasing
            (a repeated position adds its counts), in
            ``[position, position + n)``.
        counts : array_like of int
            Non-negative counts, one per position.
        n : int
            Number of positions processed (the rest count zero).

        Returns
        -------
        numpy.ndarray of uint64
            Absolute positions sealed during this batch.

        Raises
        ------
        TypeError, DomainError
            Bad positions or counts (checked before anything changes).
        HorizonError
            ``n`` is more than the positions left.

        Notes
        -----
        O(len(positions)) numpy checks, then one C call doing
        O(len(positions) + #seals) steps: the gaps are skipped exactly,
        never O(n).  Same output law as :meth:`feed` of the dense counts.

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> op = OnlinePartition(size=2**62, epsilon=1.0, rng=ps.Rng(seed=5))
        >>> sealed = op.feed_sparse([3, 2**40, 2**40], [1, 2, 5], 2**62)
        >>> op.finished
        True
        """
        n = self._count_of_positions(n, "feed_sparse")
        pos, cnt = np.asarray(positions), np.asarray(counts)
        if pos.ndim == 1 and pos.size == 0:
            pos = pos.astype(np.uint64)
        if cnt.ndim == 1 and cnt.size == 0:
            cnt = cnt.astype(np.int64)
        for arr, name in ((pos, "positions"), (cnt, "counts")):
            if arr.ndim != 1 or arr.dtype.kind not in "iu":
                raise TypeError(f"{name} must be a 1-D array of integers, got dtype {dtype_name(arr.dtype)}, "
                                f"{arr.ndim} dimensions")
        # The messages name the rule and the public range, never a position,
        # a count or how many there are: those are data.
        if pos.shape != cnt.shape:
            raise DomainError("counts must have the same length as positions")
        start = self.position
        if pos.size:
            # compare as Python ints: no uint64/int64 mixing
            if int(pos.min()) < start or int(pos.max()) >= start + n:
                raise DomainError(f"positions must be in [{start}, {start + n - 1}]: "
                                  "some position is outside")
            pos = pos.astype(np.uint64)
            if np.any(pos[1:] < pos[:-1]):
                raise DomainError("positions must be non-decreasing")
        cnt = self._kernel_counts(cnt)
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        return self._advance(pos, cnt, n)

    # -- checkpoints
    def to_state(self):
        """A checkpoint: everything needed to continue without redrawing noise.

        Returns
        -------
        dict
            JSON-able scalars plus ``"ends"`` (uint64 array).  It holds the
            current noisy threshold: keep it as secret as the data.

        Notes
        -----
        O(#segments).
        """
        st = self._state
        return {
            "version": _STATE_VERSION,
            "size": self._size,
            "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
            "beta": self._beta,
            "threshold": int(st.threshold),
            "noisy_threshold": int(st.noisy_threshold),
            "count": int(st.count),
            "position": int(st.position),
            "finished": bool(st.finished),
            "ends": self.segments,
        }

    @classmethod
    def from_state(cls, state, *, rng=None):
        """Rebuild an online partition from :meth:`to_state` output.

        Parameters
        ----------
        state : dict
            As returned by :meth:`to_state`.
        rng : Rng, optional
            Randomness for the positions still to come.

        Raises
        ------
        FormatError
            Missing or inconsistent fields.

        Notes
        -----
        O(#segments); draws no randomness.
        """
        try:
            if state["version"] != _STATE_VERSION:
                raise FormatError(f"state: unknown version {state['version']!r}")
            size = check_positions(state["size"], "state['size']")
            num, den = state["epsilon"]
            eps = exact_epsilon(Fraction(int(num), int(den)))
            beta = check_beta(state["beta"])
            fields = [int(state[k]) for k in ("threshold", "noisy_threshold", "count", "position")]
            finished = state["finished"]
            ends = np.asarray(state["ends"])
        except FormatError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"state: missing or malformed field ({exc})") from None
        threshold, noisy, count, position = fields
        t, s, expected = kernel_params(size, eps, beta, DNRR_FACTOR)
        if threshold != expected:
            raise FormatError("state: threshold does not match size, epsilon and beta")
        if not isinstance(finished, bool) or ends.ndim != 1 or (
                ends.size and ends.dtype.kind not in "iu"):
            raise FormatError("state: malformed 'finished' or 'ends'")
        ends = ends.astype(np.uint64)
        if ends.size and (np.any(ends[1:] <= ends[:-1]) or
                          (not finished and int(ends[-1]) >= position)):
            raise FormatError("state: 'ends' must be increasing and before 'position'")
        if finished and (ends.size == 0 or int(ends[-1]) != size - 1):
            raise FormatError("state: a finished partition must end at size - 1")
        if not (0 <= position < size and 0 <= count < 1 << 63 and -(1 << 63) <= noisy < 1 << 63):
            raise FormatError("state: position, count or noisy threshold out of range")
        kernel = ffi.new("pds_partition *")
        if lib.pds_partition_restore(kernel, size - 1, t, s, threshold, noisy, count, position,
                                     int(finished)) != 0:
            raise FormatError("state: inconsistent partition checkpoint")
        _exact.apply_test_hooks(kernel)
        obj = cls.__new__(cls)
        obj._attach(size, eps, beta, resolve_rng(rng), kernel, [ends] if ends.size else [])
        return obj

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`pydp_synopsis.save`: :meth:`to_state`
        with the seeded generator's position (tests only; an OS key is never saved), mode
        0o600."""
        meta = self.to_state()
        ends = np.asarray(meta.pop("ends"), dtype=np.uint64)
        meta["rng"] = self._rng._to_state()
        return ONLINE_PARTITION_KIND, meta, {"ends": ends}, 0o600

    def __repr__(self):
        return (f"OnlinePartition(size={self._size}, epsilon={self._epsilon}, "
                f"beta={self._beta}, position={self.position}, "
                f"segments={sum(len(e) for e in self._ends)})")


@persist.register(ONLINE_PARTITION_KIND)
def _load_online(meta, arrays):
    """A saved online partition (:meth:`OnlinePartition.from_state`'s checks); it continues
    with the saved seeded generator, or fresh OS entropy."""
    try:
        saved = meta.get("rng")
        rng = Rng() if saved is None else Rng._from_state(saved)
        state = {**meta, "ends": arrays["ends"]}
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(f"invalid {ONLINE_PARTITION_KIND} record: {exc}") from exc
    return OnlinePartition.from_state(state, rng=rng)
