"""The DNRR private partition, online and offline.

A partition of the integer domain ``[lo, hi]`` into contiguous segments such
that, with probability at least ``1 - beta``, there are at most ``n + 1``
segments for ``n`` items and each holds at most ``5 (ln D + ln(1/beta)) /
epsilon`` of them (``D = hi - lo + 1``).  The partition itself is
``epsilon``-differentially private: it may be released, and synopses are
built on top of it.

The mechanism is Fig. 1 of Dwork, Naor, Reingold and Rothblum with discrete
Laplace noise of scale ``1/epsilon``.  The C kernel (``csrc/partition.c``)
processes runs of positions whose running count is constant with an exact
skip (Remark 2.2), and while the count is far below the noisy threshold
samples many consecutive runs as one batch, thinning its candidates (exact
too; issue #17), so the offline partition costs a sort, one pass over the
sorted items and draws for a small fraction of them (those near a seal),
whatever ``D`` is (up to ``2**64``), and an online stream of zeros is
skipped in ``O(#seals + 1)`` steps.  The rare comparisons the kernel cannot decide in double precision
are decided exactly by :mod:`pydp_synopsis._exact`.

The threshold.  ``T = 3 (ln D + ln(1/beta)) / epsilon`` is irrational; we use
the integer ``ceil(T * (1 + 1e-12))`` computed in double precision (the
factor covers the rounding of ``log``), so the integer used is at least the
exact ``T``.  The privacy proof (Theorem 2.1) holds for any public threshold:
its value only affects accuracy, and rounding it up by less than one changes
the weight bound by less than one item.

Public: :class:`Partition`, :class:`OnlinePartition`,
:func:`private_partition`.  For the package's synopses, which check their
arguments and sort the data themselves (not in ``__all__``):
:func:`partition_of_sorted` is the one internal entry -- checked parameters
and sorted offsets in, a :class:`Partition` of the caller's domain out,
nothing checked twice -- and :func:`fig1_threshold` the threshold check a
builder runs before charging its budget.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: section 2, Fig. 1 (the online partition), Theorem 2.1
   (privacy and accuracy), Remark 2.2 (the offline implementation).
"""
import math
from fractions import Fraction

import numpy as np

from . import _exact
from ._core import LIMITS, check, ffi, lib
from .aggregates import SegmentIndex, aggregate, check_counts
from .errors import DomainError, FormatError, HorizonError, ParameterError
from .params import (as_offsets, check_beta, check_bool, check_domain, check_positions,
                     check_threshold_factor, dtype_name, exact_epsilon, is_int, scale_parts)
from .rng import resolve_rng
from ._threads import sort_u64

__all__ = ["Partition", "OnlinePartition", "private_partition"]

_U64 = 1 << 64
_I64_MAX = (1 << 63) - 1
_THRESHOLD_MAX = LIMITS.max_threshold   # 2**53
#: The kernel's open-segment count saturates here (csrc/partition.c): larger
#: per-position counts are passed as this value, so no count is ever refused.
_COUNT_CAP = LIMITS.max_count            # 2**62
_EPRECISION = lib.PDS_EPRECISION
_STATE_VERSION = 1
_DNRR_FACTOR = 3.0


# --------------------------------------------------------------------------
# Driving the C kernel.

def fig1_threshold(size, epsilon, beta, threshold_factor):
    """The integer threshold ``T``: ``c (ln D + ln(1/beta)) / epsilon`` rounded up (module doc).

    Public, like its inputs (``D = size``, exact ``epsilon``, checked
    ``beta``, ``c = threshold_factor``).  Synopses call it before charging a
    budget: it is the one check that depends on several parameters.

    Raises
    ------
    ParameterError
        ``T > 2**53``: epsilon is too small for the kernel.
    """
    t = threshold_factor * (math.log(size) - math.log(beta)) * float(1 / epsilon) * (1.0 + 1e-12)
    if not t <= _THRESHOLD_MAX:
        raise ParameterError(
            f"epsilon is too small: the threshold {threshold_factor:g}(ln D + ln(1/beta))/epsilon "
            f"= {t:.3g} must be at most 2**53")
    return max(1, math.ceil(t))


def _kernel_params(size, epsilon, beta, factor):
    """``(t, s, T)``: the noise scale ``1/epsilon = t/s`` and the integer threshold."""
    t, s = scale_parts(1 / epsilon)
    return t, s, fig1_threshold(size, epsilon, beta, factor)


def _start(rng, size, epsilon, beta, factor, threshold_size=None):
    """A kernel state for positions ``0 .. size-1``; draws the first noisy threshold.

    ``threshold_size`` is the D of the threshold (default ``size``): a shard
    of a larger domain keeps the whole domain's threshold."""
    params = _kernel_params(threshold_size or size, epsilon, beta, factor)
    state = ffi.new("pds_partition *")
    with rng.native() as p:
        check(lib.pds_partition_init(state, p, size - 1, *params))
    _exact.apply_test_hooks(state)
    return state


_NO_POSITIONS = np.empty(0, dtype=np.uint64)
_NO_COUNTS = np.empty(0, dtype=np.int64)


def _run(state, rng, pos, cnt, end, more=False):
    """Feed sorted positions ``pos`` (uint64, non-decreasing) with counts ``cnt``
    (int64, or None for one item each) and process every position up to
    ``end``; returns the sealed positions (uint64).

    ``more=True``: entries after ``pos`` (at positions ``> end``) will
    follow.  The kernel then stops before a batch that could reach them
    (``more_items``, csrc/partition.c), so the draws are those of one call
    over the whole stream; returns ``(seals, consumed)``, the entries not
    consumed to be passed again at the head of the next call."""
    n = len(pos)
    pos_p = ffi.cast("uint64_t *", ffi.from_buffer(pos)) if n else ffi.NULL
    cnt_p = ffi.cast("int64_t *", ffi.from_buffer(cnt)) if cnt is not None and n else ffi.NULL
    # Typically fewer seals than items; the buffer grows if not.
    cap = max(64, min(n // 4 + 64, 1 << 22))
    chunks = []
    done = 0
    consumed = ffi.new("size_t *")
    nseals = ffi.new("size_t *")
    state.more_items = int(more)
    with rng.native() as p:
        while True:
            buf = np.empty(cap, dtype=np.uint64)
            st = lib.pds_partition_feed(
                state, p,
                pos_p + done if n else ffi.NULL,
                cnt_p + done if cnt_p != ffi.NULL else ffi.NULL,
                n - done, end, consumed, ffi.cast("uint64_t *", ffi.from_buffer(buf)),
                cap, nseals)
            done += consumed[0]
            if nseals[0]:
                chunks.append(buf[:nseals[0]])
            if st == lib.PDS_EPRECISION:
                _exact.settle(state, p)
                continue
            check(st)
            if state.finished or state.position > end or (more and nseals[0] < cap):
                break
            cap = min(cap * 2, 1 << 24)
    if not chunks:
        seals = np.empty(0, dtype=np.uint64)
    else:
        seals = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
    return (seals, done) if more else seals


# --------------------------------------------------------------------------
# What both partitions share: public parameters and the bounds they give.

class _Fig1:
    """Parameters of a Fig. 1 partition of ``size`` positions (all public)."""

    def _set_parameters(self, size, epsilon, beta, factor):
        self._size, self._epsilon, self._beta, self._factor = size, epsilon, beta, factor

    @property
    def epsilon(self):
        """The exact privacy parameter used (Fraction)."""
        return self._epsilon

    @property
    def beta(self):
        """The failure probability the threshold was set for."""
        return self._beta

    @property
    def threshold(self):
        """The integer threshold ``T`` the kernel uses (public: D, beta, epsilon, factor).  O(1)."""
        return fig1_threshold(self._size, self._epsilon, self._beta, self._factor)

    def interior_weight_bound(self):
        """``W``: with probability ``>= 1 - beta`` no segment holds more than
        ``W`` items *before its seal position* (its last value).

        From the proof of Theorem 2.1: a position that did not seal had
        ``count + nu <= T + Z`` (Fig. 1), ``T`` = :attr:`threshold`.  With
        ``P(Z >= j) = a^j / (1 + a)``, ``a = exp(-epsilon)``, for the discrete
        Laplace of scale ``1/epsilon``, let ``k`` be the least integer with
        ``D a^k / (1 + a) <= beta / 2``; then all ``<= D`` threshold noises
        are ``< k`` and all ``<= D`` position noises are ``> -k`` except with
        probability ``beta``, so ``W = T + 2 (k - 1)``.  Valid for any
        threshold factor and any duplicates; the seal position itself may
        hold any number of equal items (a heavy value always ends its
        segment), so a segment weighs at most ``W`` plus the multiplicity of
        its last value.  Unlike :meth:`Partition.max_weight_bound`
        (Theorem 2.1's constant, for distinct values) this is rigorous for
        multisets.  The same bound holds online: the count includes the
        position's own items, so a heavy item either seals or is within
        ``W``.  O(1).

        Returns
        -------
        float

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> Partition([9], domain=(0, 9), epsilon=1, beta=0.05).interior_weight_bound()
        26.0
        >>> OnlinePartition(size=10, epsilon=1.0, rng=ps.Rng(seed=1)).interior_weight_bound()
        26.0
        """
        e = float(self._epsilon)
        # D a^k / (1 + a) <= beta/2 for each of the two unions (total beta)
        # log(2) - log(beta), not log(2 / beta): a subnormal beta would overflow
        x = (math.log(self._size) + math.log(2.0) - math.log(self._beta)
             - math.log1p(math.exp(-e))) / e
        k = math.ceil(x * (1 + 1e-12))
        return float(self.threshold + 2 * (k - 1))


# --------------------------------------------------------------------------
# The offline partition.

def checked_ends(end_offsets, domain, epsilon, beta):
    """A partition's public parts checked (one rule for every partition class):
    ``(offsets, lo, hi, epsilon, beta)`` with the ends as uint64 offsets, strictly
    increasing and ending at ``hi - lo``."""
    lo, hi = check_domain(domain)
    eps = exact_epsilon(epsilon)
    beta = check_beta(beta)
    offs = np.asarray(end_offsets)
    if offs.dtype.kind not in "iu" or offs.ndim != 1:
        raise TypeError("end_offsets must be a 1-D integer array")
    offs = as_offsets(offs, (0, hi - lo), name="end_offsets")
    if offs.size == 0 or int(offs[-1]) != hi - lo or np.any(offs[1:] <= offs[:-1]):
        raise DomainError("end_offsets must be strictly increasing and end at hi - lo")
    return offs, lo, hi, eps, beta


class Partition(_Fig1):
    """A partition of the domain ``[lo, hi]`` into contiguous segments.

    Produced by :func:`private_partition`; the constructor only validates
    and stores a partition (e.g. one read back from disk).

    Parameters
    ----------
    end_offsets : array_like of uint64
        Right ends of the segments as offsets from ``lo``, strictly
        increasing, the last equal to ``hi - lo``.
    domain : pair of int
        Inclusive ``(lo, hi)``, see :func:`~pydp_synopsis.params.check_domain`.
    epsilon : Fraction
        The privacy parameter the partition was built with.
    beta : float
        The failure probability the threshold was set for.
    threshold_factor : float
        The threshold's constant ``c`` (3 in Fig. 1), see :func:`private_partition`.

    Notes
    -----
    ``ends`` are int64 when the domain lies in the int64 range, else uint64
    (domains must lie within int64 or within uint64).

    References
    ----------
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, section 2, Fig. 1,
       Theorem 2.1.
    """

    __hash__ = None

    def __init__(self, end_offsets, *, domain, epsilon, beta, threshold_factor=3):
        offs, lo, hi, eps, beta = checked_ends(end_offsets, domain, epsilon, beta)
        self._store(offs, lo, hi, eps, beta, check_threshold_factor(threshold_factor))

    @classmethod
    def _checked(cls, end_offsets, lo, hi, epsilon, beta, factor):
        """A partition of values the package has already checked (no re-validation)."""
        self = cls.__new__(cls)
        self._store(end_offsets, lo, hi, epsilon, beta, factor)
        return self

    def _store(self, end_offsets, lo, hi, epsilon, beta, factor):
        self._offsets = np.array(end_offsets, dtype=np.uint64)
        self._offsets.flags.writeable = False
        self._lo, self._hi = lo, hi
        self._set_parameters(hi - lo + 1, epsilon, beta, factor)

    @property
    def end_offsets(self):
        """Right ends of the segments minus ``lo`` (uint64, read-only)."""
        return self._offsets

    @property
    def ends(self):
        """Right ends of the segments in domain coordinates; the last is ``hi``.

        int64 if the domain lies in the int64 range, else uint64.
        """
        out = self._offsets + np.uint64(self._lo % _U64)  # exact mod 2**64
        if self._hi <= _I64_MAX:
            out = out.view(np.int64)
        return out

    @property
    def domain(self):
        """Inclusive ``(lo, hi)`` as Python ints."""
        return (self._lo, self._hi)

    @property
    def threshold_factor(self):
        """The constant ``c`` of the threshold ``c (ln D + ln(1/beta)) / epsilon`` (3: DNRR)."""
        return self._factor

    def __len__(self):
        return len(self._offsets)

    def segment_of(self, values):
        """Index of the segment holding each value.

        Parameters
        ----------
        values : array_like of int
            Inside the domain (validated, see :func:`as_offsets`).

        Returns
        -------
        numpy.ndarray of int64
            Same shape as ``values``.

        Notes
        -----
        O(n log(S / buckets)) for n values and S segments: one C pass
        through :attr:`lookup`.

        Examples
        --------
        >>> p = Partition([3, 9], domain=(0, 9), epsilon=1, beta=0.05)
        >>> p.segment_of([0, 3, 4, 9]).tolist()
        [0, 0, 1, 1]
        """
        offs = as_offsets(values, self.domain)
        return self.lookup.of(offs.ravel()).reshape(offs.shape).astype(np.int64)

    @property
    def lookup(self):
        """The segment lookup of this partition (:class:`~pydp_synopsis.aggregates.SegmentIndex`).

        Built on first use (O(S)) and kept: a table on the offsets' top bits
        narrows each search to one bucket of segment ends, searched
        branch-free in C, several values in lock step (``pds_segment_index``);
        ``lookup.of(offsets)`` equals ``np.searchsorted(end_offsets, offsets,
        "left")`` for offsets inside the domain, about 10x faster for many
        segments.
        """
        index = getattr(self, "_lookup", None)
        if index is None:
            index = self._lookup = SegmentIndex(self._offsets)
        return index

    def weights(self, values):
        """True number of values in each segment (int64).

        NOT private: this reads the data without noise.  For tests and
        diagnostics only -- never release it.

        Notes
        -----
        O(n log S).

        Examples
        --------
        >>> p = Partition([3, 9], domain=(0, 9), epsilon=1, beta=0.05)
        >>> p.weights([0, 1, 5]).tolist()
        [2, 1]
        """
        seg = self.segment_of(values).ravel()
        return np.bincount(seg, minlength=len(self)).astype(np.int64)

    def max_weight_bound(self):
        """Theorem 2.1's segment weight bound ``5 (ln D + ln(1/beta)) / epsilon``.

        With probability at least ``1 - beta`` no segment is heavier (for
        distinct values; with a threshold factor ``c`` other than DNRR's 3 the
        same proof gives ``(c + 2) (ln D + ln(1/beta)) / epsilon``).  O(1).

        Examples
        --------
        >>> p = Partition([9], domain=(0, 9), epsilon=1, beta=0.05)
        >>> round(p.max_weight_bound(), 3)
        26.492
        """
        return ((self._factor + 2.0) * (math.log(self._size) - math.log(self._beta))
                / float(self._epsilon))

    def _key(self):
        """The public parameters two equal partitions share (besides their ends)."""
        return (self.domain, self._epsilon, self._beta, self._factor)

    def __eq__(self, other):
        if not isinstance(other, Partition):
            return NotImplemented
        return (type(self) is type(other) and self._key() == other._key()
                and np.array_equal(self._offsets, other._offsets))

    def __repr__(self):
        return (f"{type(self).__name__}(segments={len(self)}, domain={self.domain}, "
                f"epsilon={self._epsilon}, beta={self._beta})")


def private_partition(values, *, domain, epsilon, beta=0.05, rng=None, threshold_factor=3,
                      presorted=False, counts=None, clip=False):
    """An epsilon-DP partition of ``domain`` for the multiset ``values`` (offline).

    Parameters
    ----------
    values : array_like of int
        Items, any order, duplicates allowed, each inside ``domain``.
    domain : pair of int
        Inclusive ``(lo, hi)``; ``hi - lo + 1 <= 2**64``; inside the int64
        or the uint64 range.
    epsilon : float or Fraction
        Privacy parameter (> 0); a float is rounded down to an exact rational.
    beta : float
        Failure probability of the accuracy guarantee, in (0, 1).
    rng : Rng, optional
        Randomness source; None draws fresh OS entropy.  Seeded Rngs are for
        tests and benchmarks only.
    threshold_factor : float
        The constant ``c`` of ``T = c (ln D + ln(1/beta)) / epsilon``; 3 is
        Fig. 1's (the one Theorem 2.1 is stated for).  Privacy holds for any
        public threshold; a smaller ``c`` gives more, lighter segments and
        the weight bound ``(c + 2) (ln D + ln(1/beta)) / epsilon``.
    presorted : bool
        ``values`` are already in non-decreasing order (checked, O(n)): the
        sort is skipped, for callers that sort the data themselves (one sort,
        not two).  DomainError if they are not.
    counts : array_like of int, optional
        Multiplicities: ``values[i]`` occurs ``counts[i] >= 0`` times (same
        shape as ``values``; duplicates in ``values`` add up; the counts
        total at most ``2**62``).  With the same seeded ``rng`` the result is
        exactly that of ``np.repeat(values, counts)``, at a cost in the
        number of distinct values, not in their total (checked before any
        randomness is drawn: :func:`~pydp_synopsis.aggregates.check_counts`).
    clip : bool
        Clip instead of refusing: a value below ``lo`` counts as ``lo``, one
        above ``hi`` as ``hi`` (exactly, a Python int beyond int64 too).
        Default False: an out-of-domain value is refused before any
        budget is charged.  Clipping maps each row on its own, so two
        neighbouring inputs (one row added or removed) stay neighbours
        after it: every count keeps sensitivity 1 and the release stays
        epsilon-DP for the same epsilon [OpenDP]_ [diffprivlib]_.  The
        release equals that of the clipped data under the same seed.

    Returns
    -------
    Partition
        Same distribution as feeding the whole stream of per-position counts
        to :class:`OnlinePartition`.  Empty ``values`` give a valid partition
        (the domain end always seals).

    Notes
    -----
    O(n log n) for the sort plus O(n + #segments) kernel steps, independent
    of the domain size (Remark 2.2 with the exact skip of csrc/partition.c).

    References
    ----------
    .. [DNRR15] Dwork, Naor, Reingold, Rothblum, Fig. 1, Theorem 2.1,
       Remark 2.2.
    .. [OpenDP] The OpenDP Library, ``make_clamp`` (clamping to declared bounds).
    .. [diffprivlib] N. Holohan et al., "Diffprivlib: The IBM Differential
       Privacy Library", 2019 (``bounds=``: data clipped to the bounds).

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> part = private_partition([5, 7, 7, 100], domain=(0, 2**64 - 1),
    ...                          epsilon=1.0, rng=ps.Rng(seed=1))
    >>> int(part.ends[-1]) == 2**64 - 1
    True
    """
    domain = check_domain(domain)
    eps = exact_epsilon(epsilon)
    beta = check_beta(beta)
    factor = check_threshold_factor(threshold_factor)
    clip = check_bool(clip, "clip")
    offsets = as_offsets(values, domain, clip=clip)
    weights = check_counts(counts, offsets.shape)
    offsets = offsets.ravel()
    if presorted and np.any(offsets[1:] < offsets[:-1]):
        raise DomainError("values must be in non-decreasing order when presorted=True")
    rng = resolve_rng(rng)
    if weights is not None:
        weights = weights.ravel()
        if not presorted:
            offsets, weights = aggregate(offsets, weights)
        return partition_of_sorted(offsets, domain, eps, beta, factor, rng, counts=weights)
    # The sort (of a copy, in threads) is the floor of the whole computation; duplicates
    # are counted by the kernel on the sorted array.
    return partition_of_sorted(offsets if presorted else sort_u64(offsets), domain, eps, beta,
                               factor, rng)


def partition_of_sorted(sorted_offsets, domain, epsilon, beta, threshold_factor, rng,
                        counts=None):
    """The package's one entry to the offline partition: checked inputs, no re-validation.

    For synopses that check their arguments at their own public entry and
    need the sorted data themselves (one check, one sort, one partition).

    Parameters
    ----------
    sorted_offsets : numpy.ndarray of uint64
        1-D, non-decreasing offsets ``value - lo`` (as from
        :func:`~pydp_synopsis.params.as_offsets`, then sorted).
    domain : (int, int)
        Inclusive ``(lo, hi)`` as returned by
        :func:`~pydp_synopsis.params.check_domain`; the partition is returned
        in this domain.
    epsilon : Fraction
        As returned by :func:`~pydp_synopsis.params.exact_epsilon`.
    beta : float
        As returned by :func:`~pydp_synopsis.params.check_beta`.
    threshold_factor : float or "privtree"
        As returned by :func:`~pydp_synopsis.params.check_threshold_factor`;
        or ``"privtree"`` for the PrivTree partition
        (:func:`~pydp_synopsis.privtree.privtree_of_sorted`).
    rng : Rng
        A resolved generator; the kernel draws from it in the order of Fig. 1.
    counts : numpy.ndarray of int64, optional
        Checked multiplicities of ``sorted_offsets`` (None: one each).
        Zero counts are dropped here: a position the data do not occupy
        must not start a run of its own, or the draws would differ from
        those of the repeated values.

    Returns
    -------
    Partition
        The same law, and under a seed the same ends, as :func:`private_partition`.

    Notes
    -----
    O(n + #segments) kernel steps, independent of the domain size.
    """
    if threshold_factor == "privtree":
        from .privtree import privtree_of_sorted   # privtree imports this module

        return privtree_of_sorted(sorted_offsets, domain, epsilon, beta, rng, counts)
    lo, hi = domain
    size = hi - lo + 1
    if counts is not None:
        keep = counts > 0
        sorted_offsets = np.ascontiguousarray(sorted_offsets[keep], dtype=np.uint64)
        counts = np.ascontiguousarray(counts[keep], dtype=np.int64)
    state = _start(rng, size, epsilon, beta, threshold_factor)
    seals = _run(state, rng, sorted_offsets, counts, size - 1)
    return Partition._checked(seals, lo, hi, epsilon, beta, threshold_factor)


def partition_of_chunks(chunks, domain, epsilon, beta, threshold_factor, rng,
                        threshold_size=None):
    """The offline partition of a stream of sorted aggregates, and its segment weights.

    The streaming form of :func:`partition_of_sorted`: memory O(chunk +
    2**18 + #segments) (the kernel's batches look at most 2**16 entries
    ahead), whatever the number of items.

    Parameters
    ----------
    chunks : iterable of (numpy.ndarray of uint64, numpy.ndarray of int64)
        Offsets from ``lo`` with their counts: offsets non-decreasing within
        and across chunks, counts >= 0 (checked by the caller; a total of at
        most ``2**62``).
    domain, epsilon, beta, threshold_factor, rng
        As for :func:`partition_of_sorted`.
    threshold_size : int, optional
        The D of the threshold, when ``domain`` is one shard of a domain of
        D values (:mod:`pydp_synopsis.shards`); default the domain's size.

    Returns
    -------
    (Partition, numpy.ndarray of int64)
        The partition -- under a seed exactly that of
        :func:`partition_of_sorted` of the concatenated chunks -- and the true
        number of items in each segment (not private: the caller adds noise).

    Notes
    -----
    Exactness across chunk boundaries: the kernel draws once per *batch* of
    runs (a run: a non-empty position and the gap behind it, up to the next
    non-empty position), so each call stops just before the last position
    of what it is given, and the kernel (told that more entries follow)
    stops before any batch that could reach the entries not given yet; what
    it did not consume is passed again with the next chunks: no run or
    batch is ever cut.  O(n + #segments) kernel steps, O(n) numpy work.  ``threshold_factor =
    "privtree"``: :func:`~pydp_synopsis.privtree.privtree_of_chunks`.
    """
    if threshold_factor == "privtree":
        from .privtree import privtree_of_chunks

        return privtree_of_chunks(chunks, domain, epsilon, beta, rng, threshold_size)
    lo, hi = domain
    last = hi - lo
    state = _start(rng, last + 1, epsilon, beta, threshold_factor, threshold_size)
    ends, weights = [], []
    open_weight = 0
    # Entries not fed yet, in order.  The kernel keeps back the entries a batch
    # could reach (up to batch_cap of them; csrc/partition.c, more_items), so
    # they are fed in pieces of at least 4 batch_cap entries: each is copied
    # O(1) times.
    wait_pos, wait_cnt, waiting = [], [], 0
    least = 4 * int(state.batch_cap) + 1

    def feed(pos, cnt, end, more):
        """Feed, account the consumed entries' weights; returns how many were consumed."""
        nonlocal open_weight
        if more:
            seals, done = _run(state, rng, pos, cnt, end, more=True)
            pos, cnt = pos[:done], cnt[:done]
        else:
            seals, done = _run(state, rng, pos, cnt, end), len(pos)
        # Every position consumed is <= state.position and later seals are at
        # or after it: a position belongs to the first seal at or after it,
        # else to the open segment.
        cum = np.concatenate(([0], np.cumsum(cnt)))    # cum[j]: the first j positions' items
        total = int(cum[-1])
        if seals.size:
            at = cum[np.searchsorted(pos, seals, side="right")]   # items up to each seal
            seg = np.diff(at, prepend=0)
            seg[0] += open_weight
            ends.append(seals)
            weights.append(seg)
            open_weight = total - int(at[-1])
        else:
            open_weight += total
        return done

    def joined():
        if len(wait_pos) == 1:
            return wait_pos[0], wait_cnt[0]
        return np.concatenate(wait_pos), np.concatenate(wait_cnt)

    for pos, cnt in chunks:
        pos = np.asarray(pos, dtype=np.uint64)
        cnt = np.asarray(cnt, dtype=np.int64)
        if cnt.size and int(cnt.min()) <= 0:
            keep = cnt > 0
            pos, cnt = pos[keep], cnt[keep]
        if not pos.size:
            continue
        wait_pos.append(pos)
        wait_cnt.append(cnt)
        waiting += pos.size
        if waiting < least:
            continue
        pos, cnt = joined()
        # the last position (all its entries) waits: its run is not complete
        cut = int(np.searchsorted(pos, pos[-1], side="left"))
        done = feed(pos[:cut], cnt[:cut], int(pos[-1]) - 1, True) if cut else 0
        wait_pos, wait_cnt, waiting = [pos[done:]], [cnt[done:]], pos.size - done
    if wait_pos:
        pos, cnt = joined()
    else:
        pos, cnt = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    feed(pos, cnt, last, False)
    seals = np.concatenate(ends) if len(ends) > 1 else ends[0]
    part = Partition._checked(seals, lo, hi, epsilon, beta, threshold_factor)
    return part, np.concatenate(weights) if len(weights) > 1 else weights[0]


def assemble_partition(end_offsets, lo, hi, epsilon, beta, threshold_factor, shards=1):
    """The partition whose shards (in order) ended at ``end_offsets`` (no re-validation
    for DNRR; PrivTree's leaf depths are recomputed, which checks them)."""
    if threshold_factor == "privtree":
        from .privtree import TreePartition

        return TreePartition._checked(end_offsets, lo, hi, epsilon, beta, shards)
    return Partition._checked(end_offsets, lo, hi, epsilon, beta, threshold_factor)


# --------------------------------------------------------------------------
# The online partition.

class OnlinePartition(_Fig1):
    """Fig. 1's online partition of the positions ``0 .. size-1`` of a stream.

    Parameters
    ----------
    size : int
        Number of positions D, in [1, 2**64].
    epsilon : float or Fraction
        Privacy parameter (> 0), made exact as for :func:`private_partition`.
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
        self._attach(size, eps, beta, rng, _start(rng, size, eps, beta, _DNRR_FACTOR), [])

    def _attach(self, size, epsilon, beta, rng, state, ends):
        self._set_parameters(size, epsilon, beta, _DNRR_FACTOR)
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
        if cnt.size and int(cnt.max()) > _COUNT_CAP:   # only (u)int64 can: the cap fits
            cnt = np.minimum(cnt, cnt.dtype.type(_COUNT_CAP))
        return cnt.astype(np.int64)

    def _advance(self, pos, cnt, n):
        """Process the next ``n >= 1`` positions, the non-zero counts ``cnt`` at ``pos``."""
        seals = _run(self._state, self._rng, pos, cnt, self.position + n - 1)
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
            cnt[0] = x if x < _COUNT_CAP else _COUNT_CAP
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
        t, s, expected = _kernel_params(size, eps, beta, _DNRR_FACTOR)
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

    def __repr__(self):
        return (f"OnlinePartition(size={self._size}, epsilon={self._epsilon}, "
                f"beta={self._beta}, position={self.position}, "
                f"segments={sum(len(e) for e in self._ends)})")
