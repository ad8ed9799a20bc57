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
skip (Remark 2.2), so the offline partition costs a sort plus
``O(#items + #segments)`` kernel steps, whatever ``D`` is (up to ``2**64``),
and an online stream of zeros is skipped in ``O(#seals + 1)`` steps.

The threshold.  ``T = 3 (ln D + ln(1/beta)) / epsilon`` is irrational; we use
the integer ``ceil(T * (1 + 1e-12))`` computed in double precision (the
factor covers the rounding of ``log``), so the integer used is at least the
exact ``T``.  The privacy proof (Theorem 2.1) holds for any public threshold:
its value only affects accuracy, and rounding it up by less than one changes
the weight bound by less than one item.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: section 2, Fig. 1 (the online partition), Theorem 2.1
   (privacy and accuracy), Remark 2.2 (the offline implementation).
"""
import decimal
import math
from fractions import Fraction

import numpy as np

from ._core import LIMITS, ffi, lib, check
from .errors import DomainError, FormatError, HorizonError, NativeError, ParameterError
from .params import (as_offsets, check_beta, check_domain, check_positions, check_threshold_factor,
                     exact_epsilon, is_int, scale_parts)
from .rng import resolve_rng

__all__ = ["Partition", "OnlinePartition", "private_partition"]

_U64 = 1 << 64
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_THRESHOLD_MAX = LIMITS.max_threshold   # 2**53
_COUNT_GUARD = float(1 << 61)
_STATE_VERSION = 1


# --------------------------------------------------------------------------
# Parameters.

def _threshold(size, beta, scale, factor=3):
    """Integer threshold ``ceil(factor (ln D + ln(1/beta)) / epsilon)`` (rounded up, see module doc)."""
    t = float(factor) * (math.log(size) - math.log(beta)) * float(scale) * (1.0 + 1e-12)
    if not t <= _THRESHOLD_MAX:
        raise ParameterError(
            f"epsilon is too small: the threshold {factor}(ln D + ln(1/beta))/epsilon = {t:.3g} "
            f"must be at most 2**53")
    return max(1, math.ceil(t))


def _interior_weight_bound(size, beta, epsilon, threshold):
    """``W = T + 2 (k - 1)`` of :meth:`Partition.interior_weight_bound`
    (shared by the offline and online partitions)."""
    e = float(epsilon)
    # D a^k / (1 + a) <= beta/2 for each of the two unions (total beta)
    x = (math.log(size) + math.log(2.0 / beta) - math.log1p(math.exp(-e))) / e
    k = math.ceil(x * (1 + 1e-12))
    return float(threshold + 2 * (k - 1))


# --------------------------------------------------------------------------
# Exact decision of a run the double path could not decide (PDS_EPRECISION).

_UNDECIDED = None


def _contexts(digits):
    kw = dict(prec=digits, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX, traps=[])
    return (decimal.Context(rounding=decimal.ROUND_FLOOR, **kw),
            decimal.Context(rounding=decimal.ROUND_CEILING, **kw))


def _compare_exact(kind, m, t, s, mult, words, digits):
    """Decide the kernel's comparison ``U < pi`` with correctly rounded decimals.

    ``U`` lies in ``[N 2^-K, (N+1) 2^-K)`` where ``N`` is the words read so
    far (most significant first) and ``K = 64 len(words)``; ``pi`` is
    ``1 - e^{-y}`` (kind 1) or ``1 / (1 + e^{y})`` (kind 2) with
    ``y = mult * lambda``, ``lambda = -ln(1 - p)``, ``p = P(nu >= m)`` for the
    discrete Laplace of scale ``t/s`` (derivations in csrc/partition.c).
    ``ln`` and ``exp`` of :mod:`decimal` are correctly rounded (half-even),
    so one step outward (``next_minus``/``next_plus``) gives rigorous bounds;
    + - * / round toward the bound's side (ROUND_FLOOR/ROUND_CEILING
    contexts).  Where cancellation (``1 - p`` with tiny ``p``, ``1 - e^{-y}``
    with tiny ``y``) would lose relative accuracy, elementary inequalities
    take over: ``p <= -ln(1-p) <= p/(1-p)``, ``y - y^2/2 <= 1 - e^{-y} <= y``,
    ``1/(1+e^y) <= e^{-y}``.

    Returns 1 (U < pi), 0 (U >= pi), or ``_UNDECIDED`` (U still straddles the
    bounds of pi: more bits of U and more digits are needed).
    """
    dn, up = _contexts(digits)
    dec = decimal.Decimal
    zero = dec(0)

    def ln_lo(x):
        return dn.ln(x).next_minus(dn)

    def ln_hi(x):
        return up.ln(x).next_plus(up)

    def exp_lo(x):
        return max(dn.exp(x).next_minus(dn), zero)

    def exp_hi(x):
        return up.exp(x).next_plus(up)

    # a = e^{-1/b} with 1/b = s/t, and ln(1 + a).
    q_dn, q_up = dn.divide(dec(s), dec(t)), up.divide(dec(s), dec(t))
    a_lo, a_hi = exp_lo(q_up.copy_negate()), exp_hi(q_dn.copy_negate())
    l1a_lo, l1a_hi = ln_lo(dn.add(1, a_lo)), ln_hi(up.add(1, a_hi))
    if m >= 1:
        # p = e^{-x}, x = m/b + ln(1 + a).
        x_lo = dn.add(dn.divide(dec(m * s), dec(t)), l1a_lo)
        x_hi = up.add(up.divide(dec(m * s), dec(t)), l1a_hi)
        p_lo = exp_lo(x_hi.copy_negate())
        p_hi = min(exp_hi(x_lo.copy_negate()), dec("0.5"))  # p < 1/2 when m >= 1
        lam_lo = max(p_lo, ln_hi(up.subtract(1, p_lo)).copy_negate())
        lam_hi = min(up.divide(p_hi, dn.subtract(1, p_hi)),
                     ln_lo(dn.subtract(1, p_hi)).copy_negate())
    else:
        # lambda = (1 - m)/b + ln(1 + a).
        lam_lo = dn.add(dn.divide(dec((1 - m) * s), dec(t)), l1a_lo)
        lam_hi = up.add(up.divide(dec((1 - m) * s), dec(t)), l1a_hi)
    y_lo = dn.multiply(dec(mult), lam_lo)
    y_hi = up.multiply(dec(mult), lam_hi)
    if kind == 1:
        pi_lo = max(dn.subtract(1, exp_hi(y_lo.copy_negate())),
                    dn.subtract(y_lo, up.divide(up.multiply(y_lo, y_lo), 2)))
        pi_hi = min(up.subtract(1, exp_lo(y_hi.copy_negate())), y_hi)
    else:
        pi_lo = dn.divide(1, up.add(1, exp_hi(y_hi)))
        pi_hi = exp_hi(y_lo.copy_negate())
        e = exp_lo(y_lo)
        if e.is_finite():
            pi_hi = min(pi_hi, up.divide(1, dn.add(1, e)))
    k = 64 * len(words)
    n = 0
    for w in words:
        n = (n << 64) | int(w)
    two_k = dec(1 << k)
    if up.divide(dec(n + 1), two_k) <= pi_lo:
        return 1
    if dn.divide(dec(n), two_k) >= pi_hi:
        return 0
    return _UNDECIDED


def _resolve_pending(state, rng_ptr):
    """Decide the kernel's pending comparison exactly, drawing more bits of U
    from the same CSPRNG stream as needed; returns the outcome (0 or 1)."""
    words = [int(state.pending_word)]
    digits = 40
    buf = ffi.new("uint64_t[1]")
    # Each round adds 64 bits of U: the chance that U still straddles the
    # bounds drops by ~2^-64 per round.
    for _ in range(256):
        res = _compare_exact(int(state.pending_kind), int(state.run_m), int(state.t),
                             int(state.s), int(state.pending_mult), words, digits)
        if res is not _UNDECIDED:
            return res
        check(lib.pds_rng_fill_u64(rng_ptr, buf, 1))
        words.append(int(buf[0]))
        digits += 40
    raise NativeError("the exact partition skip did not converge (probability < 2^-10000)")


# --------------------------------------------------------------------------
# Driving the C kernel.

def _new_state():
    return ffi.new("pds_partition *")


def _run(state, rng, pos, cnt, end):
    """Feed sorted positions ``pos`` (uint64, non-decreasing) with counts ``cnt``
    (int64, or None for one item each) and process every position up to
    ``end``; returns the sealed positions (uint64)."""
    n = len(pos)
    pos_p = ffi.cast("uint64_t *", ffi.from_buffer(pos)) if n else ffi.NULL
    cnt_p = ffi.cast("int64_t *", ffi.from_buffer(cnt)) if cnt is not None and n else ffi.NULL
    # Typically fewer seals than items; the buffer grows if not.
    cap = max(64, min(n // 4 + 64, 1 << 22))
    chunks = []
    done = 0
    consumed = ffi.new("size_t *")
    nseals = ffi.new("size_t *")
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
                check(lib.pds_partition_resolve(state, _resolve_pending(state, p)))
                continue
            check(st)
            if state.finished or state.position > end:
                break
            cap = min(cap * 2, 1 << 24)
    if not chunks:
        return np.empty(0, dtype=np.uint64)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


# --------------------------------------------------------------------------
# The offline partition.

class Partition:
    """A partition of the domain ``[lo, hi]`` into contiguous segments.

    Produced by :func:`private_partition`; the constructor only validates
    and stores a partition (e.g. one read back from disk).

    Parameters
    ----------
    end_offsets : array_like of uint64
        Right ends of the segments as offsets from ``lo``, strictly
        increasing, the last equal to ``hi - lo``.
    domain : pair of int
        Inclusive ``(lo, hi)``, see :func:`check_domain`.
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
        lo, hi = check_domain(domain)
        eps = exact_epsilon(epsilon)
        beta = check_beta(beta)
        self._factor = check_threshold_factor(threshold_factor)
        offs = np.asarray(end_offsets)
        if offs.dtype.kind not in "iu" or offs.ndim != 1:
            raise TypeError("end_offsets must be a 1-D integer array")
        offs = as_offsets(offs, (0, hi - lo), name="end_offsets")
        if offs.size == 0 or int(offs[-1]) != hi - lo or np.any(offs[1:] <= offs[:-1]):
            raise DomainError("end_offsets must be strictly increasing and end at hi - lo")
        self._offsets = np.array(offs, dtype=np.uint64)
        self._offsets.flags.writeable = False
        self._lo, self._hi = lo, hi
        self._epsilon = eps
        self._beta = beta

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
    def epsilon(self):
        """The exact privacy parameter used (Fraction)."""
        return self._epsilon

    @property
    def beta(self):
        """The failure probability the threshold was set for."""
        return self._beta

    @property
    def threshold_factor(self):
        """The constant ``c`` of the threshold ``c (ln D + ln(1/beta)) / epsilon`` (3: DNRR)."""
        return self._factor

    @property
    def threshold(self):
        """The integer threshold ``T`` the kernel used (public: D, beta, epsilon, factor). O(1)."""
        return _threshold(self._hi - self._lo + 1, self._beta, Fraction(1) / self._epsilon,
                          self._factor)

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
        O(n log S) for n values and S segments (``np.searchsorted``).

        Examples
        --------
        >>> p = Partition([3, 9], domain=(0, 9), epsilon=1, beta=0.05)
        >>> p.segment_of([0, 3, 4, 9]).tolist()
        [0, 0, 1, 1]
        """
        offs = as_offsets(values, self.domain)
        return np.searchsorted(self._offsets, offs, side="left").astype(np.int64)

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
        d = self._hi - self._lo + 1
        return (self._factor + 2.0) * (math.log(d) - math.log(self._beta)) / float(self._epsilon)

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
        its last value.  Unlike :meth:`max_weight_bound` (Theorem 2.1's
        constant, for distinct values) this is rigorous for multisets.  O(1).

        Returns
        -------
        float

        Examples
        --------
        >>> p = Partition([9], domain=(0, 9), epsilon=1, beta=0.05)
        >>> p.interior_weight_bound()
        26.0
        """
        return _interior_weight_bound(self._hi - self._lo + 1, self._beta, self._epsilon,
                                      self.threshold)

    def __eq__(self, other):
        if not isinstance(other, Partition):
            return NotImplemented
        return (self.domain == other.domain and self._epsilon == other._epsilon
                and self._beta == other._beta and self._factor == other._factor
                and np.array_equal(self._offsets, other._offsets))

    def __repr__(self):
        return (f"Partition(segments={len(self)}, domain={self.domain}, "
                f"epsilon={self._epsilon}, beta={self._beta})")


def private_partition(values, *, domain, epsilon, beta=0.05, rng=None, threshold_factor=3,
                      presorted=False):
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

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> part = private_partition([5, 7, 7, 100], domain=(0, 2**64 - 1),
    ...                          epsilon=1.0, rng=ps.Rng(seed=1))
    >>> int(part.ends[-1]) == 2**64 - 1
    True
    """
    lo, hi = check_domain(domain)
    eps = exact_epsilon(epsilon)
    beta = check_beta(beta)
    factor = check_threshold_factor(threshold_factor)
    offsets = as_offsets(values, (lo, hi)).ravel()
    if presorted and np.any(offsets[1:] < offsets[:-1]):
        raise DomainError("values must be in non-decreasing order when presorted=True")
    rng = resolve_rng(rng)
    # Sort a copy (the floor of the whole computation); duplicates are
    # counted by the kernel on the sorted array.
    srt = offsets if presorted else np.sort(offsets)
    return _partition_of_sorted(srt, (lo, hi), eps, beta, rng, factor)


def _partition_of_sorted(sorted_offsets, domain, eps, beta, rng, factor=3):
    """:func:`private_partition` of already validated, sorted uint64 offsets
    (for synopses that need the sorted array themselves: one sort, not two)."""
    lo, hi = domain
    size = hi - lo + 1
    scale = Fraction(1) / eps
    t, s = scale_parts(scale)
    threshold = _threshold(size, beta, scale, factor)
    seals = _partition_sorted(sorted_offsets, size, t, s, threshold, rng)
    return Partition(seals, domain=(lo, hi), epsilon=eps, beta=beta, threshold_factor=factor)


def _partition_sorted(pos, size, t, s, threshold, rng, slack=None):
    """Seal positions of the partition of ``0 .. size-1`` for sorted offsets
    ``pos``.  ``slack`` (tests only) overrides the kernel's error allowance
    of the double path, to force the exact decimal fallback."""
    state = _new_state()
    with rng.native() as p:
        check(lib.pds_partition_init(state, p, size - 1, t, s, threshold))
    if slack is not None:
        state.slack = slack
    return _run(state, rng, pos, None, size - 1)


# --------------------------------------------------------------------------
# The online partition.

class OnlinePartition:
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
    count (a multiset; sensitivity 1 per item).  The last position always
    seals.  :meth:`feed` costs one C call per batch; runs of zeros (inside a
    batch or via :meth:`skip`) cost O(#seals + 1), not O(length).

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
        scale = Fraction(1) / eps
        t, s = scale_parts(scale)
        threshold = _threshold(size, beta, scale)
        self._rng = resolve_rng(rng)
        self._size, self._epsilon, self._beta = size, eps, beta
        self._state = _new_state()
        with self._rng.native() as p:
            check(lib.pds_partition_init(self._state, p, size - 1, t, s, threshold))
        self._ends = []

    # -- properties
    @property
    def size(self):
        """Number of positions D."""
        return self._size

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
        """The integer threshold ``T`` of Fig. 1 (public: size, beta, epsilon).  O(1)."""
        return int(self._state.threshold)

    def interior_weight_bound(self):
        """``W``: with probability ``>= 1 - beta`` no position that did not seal
        closes its segment's prefix above ``W`` items.

        The same bound and proof as :meth:`Partition.interior_weight_bound`
        (``W = T + 2 (k - 1)``): a position that does not seal has
        ``count + nu <= T + Z``, and except with probability ``beta`` all
        threshold noises are ``< k`` and all position noises ``> -k``.  The
        count includes the position's own items, so a heavy item never
        raises the bound: it either seals (its segment is closed) or it is
        within ``W``.  O(1).

        Returns
        -------
        float

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> OnlinePartition(size=10, epsilon=1.0, rng=ps.Rng(seed=1)).interior_weight_bound()
        26.0
        """
        return _interior_weight_bound(self._size, self._beta, self._epsilon, self.threshold)

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

    def _check_room(self, n, what):
        left = self._size - self.position
        if n > left:
            raise HorizonError(
                f"{what} would go past the end of the partition: {n} positions given, "
                f"{left} left of size {self._size}")

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
            raise TypeError(f"counts must be an array of integers, got dtype {arr.dtype}")
        self._check_room(len(arr), "feed")
        if len(arr) == 0:
            return np.empty(0, dtype=np.uint64)
        nz = np.flatnonzero(arr)
        cnt = arr[nz]
        if cnt.size and int(cnt.min()) < 0:
            raise DomainError(f"counts must be >= 0, found {int(cnt.min())}")
        if cnt.size and (int(cnt.max()) >= 1 << 61
                         or float(cnt.sum(dtype=np.float64)) + float(self._state.count)
                         >= _COUNT_GUARD):
            raise DomainError("counts must sum to less than 2**61 within a segment")
        start = self.position
        pos = nz.astype(np.uint64) + np.uint64(start)
        seals = _run(self._state, self._rng, pos, cnt.astype(np.int64), start + len(arr) - 1)
        if seals.size:
            self._ends.append(seals)
        return seals

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
        if not is_int(n):
            raise TypeError(f"n must be an integer, got {type(n).__name__}")
        n = int(n)
        if n < 0:
            raise DomainError(f"n must be >= 0, got {n}")
        self._check_room(n, "skip")
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        start = self.position
        seals = _run(self._state, self._rng, np.empty(0, dtype=np.uint64), None, start + n - 1)
        if seals.size:
            self._ends.append(seals)
        return seals

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
        if not is_int(n):
            raise TypeError(f"n must be an integer, got {type(n).__name__}")
        n = int(n)
        if n < 0:
            raise DomainError(f"n must be >= 0, got {n}")
        self._check_room(n, "feed_sparse")
        pos, cnt = np.asarray(positions), np.asarray(counts)
        if pos.ndim == 1 and pos.size == 0:
            pos = pos.astype(np.uint64)
        if cnt.ndim == 1 and cnt.size == 0:
            cnt = cnt.astype(np.int64)
        for arr, name in ((pos, "positions"), (cnt, "counts")):
            if arr.ndim != 1 or arr.dtype.kind not in "iu":
                raise TypeError(f"{name} must be a 1-D array of integers, got dtype {arr.dtype}, "
                                f"{arr.ndim} dimensions")
        if pos.shape != cnt.shape:
            raise DomainError(f"counts must have the shape of positions {pos.shape}, got {cnt.shape}")
        start = self.position
        if pos.size:
            # compare as Python ints: no uint64/int64 mixing
            if int(pos.min()) < start or int(pos.max()) >= start + n:
                raise DomainError(f"positions must be in [{start}, {start + n - 1}], got "
                                  f"[{int(pos.min())}, {int(pos.max())}]")
            pos = pos.astype(np.uint64)
            if np.any(pos[1:] < pos[:-1]):
                raise DomainError("positions must be non-decreasing")
            if int(cnt.min()) < 0:
                raise DomainError(f"counts must be >= 0, found {int(cnt.min())}")
            if (int(cnt.max()) >= 1 << 61
                    or float(cnt.sum(dtype=np.float64)) + float(self._state.count) >= _COUNT_GUARD):
                raise DomainError("counts must sum to less than 2**61 within a segment")
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        seals = _run(self._state, self._rng, pos, cnt.astype(np.int64), start + n - 1)
        if seals.size:
            self._ends.append(seals)
        return seals

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
        scale = Fraction(1) / eps
        t, s = scale_parts(scale)
        if threshold != _threshold(size, beta, scale):
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
        if not (0 <= position < size and 0 <= count and -(1 << 63) <= noisy < 1 << 63):
            raise FormatError("state: position, count or noisy threshold out of range")
        obj = cls.__new__(cls)
        obj._rng = resolve_rng(rng)
        obj._size, obj._epsilon, obj._beta = size, eps, beta
        obj._state = _new_state()
        if count >= 1 << 63:
            raise FormatError("state: count out of range")
        st = lib.pds_partition_restore(obj._state, size - 1, t, s, threshold, noisy,
                                       count, position, int(finished))
        if st != 0:
            raise FormatError("state: inconsistent partition checkpoint")
        obj._ends = [ends] if ends.size else []
        return obj

    def __repr__(self):
        return (f"OnlinePartition(size={self._size}, epsilon={self._epsilon}, "
                f"beta={self._beta}, position={self.position}, "
                f"segments={sum(len(e) for e in self._ends)})")
