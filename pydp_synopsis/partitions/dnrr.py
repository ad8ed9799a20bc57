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

Here: the kernel's driver (:func:`start_kernel`, :func:`run_kernel`, shared
with :mod:`~pydp_synopsis.partitions.online`), the parameters both
partitions share (:class:`Fig1`), :class:`Partition`, and the offline
partition of sorted offsets (:func:`dnrr_of_sorted`) or of a stream of sorted
aggregates (:func:`dnrr_of_chunks`).  Builders reach them through the one
entry :func:`pydp_synopsis.partitions.partition_of_sorted` (``method="dnrr"``).

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: section 2, Fig. 1 (the online partition), Theorem 2.1
   (privacy and accuracy), Remark 2.2 (the offline implementation).
"""
import math

import numpy as np

from .. import _exact, persist
from .._core import LIMITS, check, ffi, lib
from ..aggregates import SegmentIndex
from ..errors import DomainError, FormatError, ParameterError
from ..params import as_offsets, check_beta, check_domain, check_threshold_factor, exact_epsilon, scale_parts

__all__ = ["PARTITION_KIND", "Partition", "Fig1", "fig1_threshold", "checked_ends", "dnrr_of_sorted", "dnrr_of_chunks",
           "start_kernel", "run_kernel"]

#: The persist record of a DNRR partition (``ps.save(partition)``) and its version.
PARTITION_KIND = "dnrr-partition"
PARTITION_VERSION = 1

_U64 = 1 << 64
_I64_MAX = (1 << 63) - 1
_THRESHOLD_MAX = LIMITS.max_threshold   # 2**53
#: The kernel's open-segment count saturates here (csrc/partition.c): larger
#: per-position counts are passed as this value, so no count is ever refused.
COUNT_CAP = LIMITS.max_count            # 2**62
_EPRECISION = lib.PDS_EPRECISION
_STATE_VERSION = 1
DNRR_FACTOR = 3.0


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


def kernel_params(size, epsilon, beta, factor):
    """``(t, s, T)``: the noise scale ``1/epsilon = t/s`` and the integer threshold."""
    t, s = scale_parts(1 / epsilon)
    return t, s, fig1_threshold(size, epsilon, beta, factor)


def start_kernel(rng, size, epsilon, beta, factor, threshold_size=None):
    """A kernel state for positions ``0 .. size-1``; draws the first noisy threshold.

    ``threshold_size`` is the D of the threshold (default ``size``): a shard
    of a larger domain keeps the whole domain's threshold."""
    params = kernel_params(threshold_size or size, epsilon, beta, factor)
    state = ffi.new("pds_partition *")
    with rng.native() as p:
        check(lib.pds_partition_init(state, p, size - 1, *params))
    _exact.apply_test_hooks(state)
    return state


def run_kernel(state, rng, pos, cnt, end, more=False):
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

class Fig1:
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
        >>> ps.OnlinePartition(size=10, epsilon=1.0, rng=ps.Rng(seed=1)).interior_weight_bound()
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


class Partition(Fig1):
    """A partition of the domain ``[lo, hi]`` into contiguous segments.

    Produced by :func:`~pydp_synopsis.partitions.private_partition`; the constructor only validates
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
        The threshold's constant ``c`` (3 in Fig. 1), see :func:`~pydp_synopsis.partitions.private_partition`.

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

    def _to_record(self):
        """``(kind, meta, arrays, mode)`` for :func:`pydp_synopsis.save`: released numbers only
        (segment ends and public parameters), so the umask's mode."""
        meta = {"version": PARTITION_VERSION, "domain": [int(self._lo), int(self._hi)],
                "epsilon": [self._epsilon.numerator, self._epsilon.denominator],
                "beta": self._beta, "threshold_factor": self._factor}
        return PARTITION_KIND, meta, {"end_offsets": self._offsets}, None

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


def dnrr_of_sorted(sorted_offsets, domain, epsilon, beta, threshold_factor, rng, counts=None):
    """Fig. 1's offline partition of sorted offsets: checked inputs, no re-validation.

    Reached through :func:`pydp_synopsis.partitions.partition_of_sorted`
    (``method="dnrr"``), the package's one entry to a partition.

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
    threshold_factor : float
        As returned by :func:`~pydp_synopsis.params.check_threshold_factor`.
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
        The same law, and under a seed the same ends, as
        :func:`~pydp_synopsis.partitions.private_partition`.

    Notes
    -----
    O(n + #segments) kernel steps, independent of the domain size.
    """
    lo, hi = domain
    size = hi - lo + 1
    if counts is not None:
        keep = counts > 0
        sorted_offsets = np.ascontiguousarray(sorted_offsets[keep], dtype=np.uint64)
        counts = np.ascontiguousarray(counts[keep], dtype=np.int64)
    state = start_kernel(rng, size, epsilon, beta, threshold_factor)
    seals = run_kernel(state, rng, sorted_offsets, counts, size - 1)
    return Partition._checked(seals, lo, hi, epsilon, beta, threshold_factor)



def dnrr_of_chunks(chunks, domain, epsilon, beta, threshold_factor, rng, threshold_size=None):
    """The offline partition of a stream of sorted aggregates, and its segment weights.

    The streaming form of :func:`dnrr_of_sorted`: memory O(chunk +
    2**18 + #segments) (the kernel's batches look at most 2**16 entries
    ahead), whatever the number of items.

    Parameters
    ----------
    chunks : iterable of (numpy.ndarray of uint64, numpy.ndarray of int64)
        Offsets from ``lo`` with their counts: offsets non-decreasing within
        and across chunks, counts >= 0 (checked by the caller; a total of at
        most ``2**62``).
    domain, epsilon, beta, threshold_factor, rng
        As for :func:`dnrr_of_sorted`.
    threshold_size : int, optional
        The D of the threshold, when ``domain`` is one shard of a domain of
        D values (:mod:`pydp_synopsis.partitions.sharded`); default the domain's size.

    Returns
    -------
    (Partition, numpy.ndarray of int64)
        The partition -- under a seed exactly that of
        :func:`dnrr_of_sorted` of the concatenated chunks -- and the true
        number of items in each segment (not private: the caller adds noise).

    Notes
    -----
    Exactness across chunk boundaries: the kernel draws once per *batch* of
    runs (a run: a non-empty position and the gap behind it, up to the next
    non-empty position), so each call stops just before the last position
    of what it is given, and the kernel (told that more entries follow)
    stops before any batch that could reach the entries not given yet; what
    it did not consume is passed again with the next chunks: no run or
    batch is ever cut.  O(n + #segments) kernel steps, O(n) numpy work.
    """
    lo, hi = domain
    last = hi - lo
    state = start_kernel(rng, last + 1, epsilon, beta, threshold_factor, threshold_size)
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
            seals, done = run_kernel(state, rng, pos, cnt, end, more=True)
            pos, cnt = pos[:done], cnt[:done]
        else:
            seals, done = run_kernel(state, rng, pos, cnt, end), len(pos)
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


@persist.register(PARTITION_KIND)
def _load_partition(meta, arrays):
    """A saved DNRR partition, checked by :class:`Partition`'s constructor."""
    try:
        if meta.get("version") != PARTITION_VERSION:
            raise FormatError(f"unknown {PARTITION_KIND} version {meta.get('version')!r}")
        eps = persist.state_fraction(meta["epsilon"], "epsilon")
        return Partition(arrays["end_offsets"], domain=tuple(meta["domain"]), epsilon=eps,
                         beta=meta["beta"], threshold_factor=meta["threshold_factor"])
    except (KeyError, TypeError, ValueError, DomainError, ParameterError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"invalid {PARTITION_KIND} record: {exc}") from exc
