"""The C kernels' exact fallback: decisions made with correctly rounded decimals.

Two kernels decide in double precision only when rigorous error bounds
settle a decision, and otherwise stop with ``PDS_EPRECISION`` and hand it
here, where :mod:`decimal` interval arithmetic decides it, extending the
CSPRNG uniform ``U`` with further words of the same stream until it does:

* the partition (``csrc/partition.c``) samples each seal of DNRR's
  partition by comparisons ``U < pi`` with an irrational ``pi``; a pending
  one (probability about ``1e-12``) is decided by :func:`settle`, so every
  decision is exactly Bernoulli(``pi``) and the partition keeps the exact
  law of Fig. 1;
* the discrete Laplace fill (``csrc/noise.c``, ``pds_dlap_*``) takes the
  magnitude ``floor(y(U))``, ``y(U) = (t/s) (-ln U + ln(2 / (1 + e^{-s/t})))``;
  a pending one (``y`` within about ``1e-11 y`` of an integer) is decided by
  :func:`dlap_magnitude`, so every draw has exactly the discrete Laplace law.

Package-internal: :mod:`pydp_synopsis.partition` calls :func:`settle` and
:func:`apply_test_hooks`, :mod:`pydp_synopsis.noise` calls
:func:`dlap_magnitude` and :func:`forced_slack`; tests call
:func:`compare_exact`, :func:`dlap_floor_exact`, :func:`resolve_pending`,
:func:`forcing_exact` and :func:`forcing_policy`.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: Fig. 1 and Remark 2.2 (the skip whose comparisons these are).
.. [DEC] Python's :mod:`decimal`: ``ln`` and ``exp`` are correctly rounded.
"""
import contextlib
import decimal
import functools

from ._core import check, ffi, lib
from .errors import NativeError

__all__ = ["UNDECIDED", "compare_exact", "resolve_pending", "settle", "forcing_exact",
           "forcing_policy", "apply_test_hooks", "forced_slack", "dlap_floor_exact",
           "dlap_magnitude"]

#: What :func:`compare_exact` returns when ``U`` still straddles the bounds of ``pi``.
UNDECIDED = None

# The kernels' error allowances (double, long double) for new states while
# :func:`forcing_exact` is active.
_forced_slack = None
# The kernel's batch policy for new states while :func:`forcing_policy` is active.
_forced_policy = {}


def _contexts(digits):
    kw = dict(prec=digits, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX, traps=[])
    return (decimal.Context(rounding=decimal.ROUND_FLOOR, **kw),
            decimal.Context(rounding=decimal.ROUND_CEILING, **kw))


def compare_exact(kind, m, t, s, mult, words, digits):
    """Decide the kernel's comparison ``U < pi`` with correctly rounded decimals.

    Parameters
    ----------
    kind : {1, 2}
        ``pi = 1 - e^{-y}`` (1: does the run seal at all) or
        ``pi = 1 / (1 + e^{y})`` (2: one bit of the seal's offset), with
        ``y = mult * lambda``, ``lambda = -ln(1 - p)`` and ``p = P(nu >= m)``
        for the discrete Laplace of scale ``t/s`` (derivations in
        csrc/partition.c).
    m, t, s, mult : int
        As in the kernel state (``run_m``, ``t``, ``s``, ``pending_mult``).
    words : list of int
        The 64-bit words of ``U`` read so far, most significant first:
        ``U`` lies in ``[N 2^-K, (N+1) 2^-K)``, ``N`` their concatenation,
        ``K = 64 len(words)``.
    digits : int
        Decimal precision of the bounds.

    Returns
    -------
    int or None
        1 (``U < pi``), 0 (``U >= pi``) or :data:`UNDECIDED` (``U`` still
        straddles the bounds of ``pi``: more bits and digits are needed).

    Notes
    -----
    ``ln`` and ``exp`` are correctly rounded (half-even), so one step
    outward (``next_minus``/``next_plus``) gives rigorous bounds; ``+ - * /``
    round toward the bound's side (ROUND_FLOOR/ROUND_CEILING contexts).
    Where cancellation (``1 - p`` with tiny ``p``, ``1 - e^{-y}`` with tiny
    ``y``) would lose relative accuracy, elementary inequalities take over:
    ``p <= -ln(1-p) <= p/(1-p)``, ``y - y^2/2 <= 1 - e^{-y} <= y``,
    ``1/(1+e^y) <= e^{-y}``.
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
    return UNDECIDED


def resolve_pending(state, rng_ptr):
    """Decide the pending comparison of a kernel state exactly.

    Parameters
    ----------
    state : cdata ``pds_partition *``
        A state whose last feed returned ``PDS_EPRECISION``.
    rng_ptr : cdata ``pds_rng *``
        The generator the state draws from (held by the caller); further
        words of ``U`` come from this same stream.

    Returns
    -------
    int
        The outcome, 0 or 1.

    Raises
    ------
    NativeError
        Still undecided after 256 extra words (probability < 2^-10000).
    """
    words = [int(state.pending_word)]
    digits = 40
    buf = ffi.new("uint64_t[1]")
    # Each round adds 64 bits of U: the chance that U still straddles the
    # bounds drops by ~2^-64 per round.
    for _ in range(256):
        res = compare_exact(int(state.pending_kind), int(state.run_m), int(state.t),
                            int(state.s), int(state.pending_mult), words, digits)
        if res is not UNDECIDED:
            return res
        check(lib.pds_rng_fill_u64(rng_ptr, buf, 1))
        words.append(int(buf[0]))
        digits += 40
    raise NativeError("the exact partition skip did not converge (probability < 2^-10000)")


_MASK63 = (1 << 63) - 1


@functools.lru_cache(maxsize=64)
def _dlap_constants(t, s, digits):
    """Bounds of ``ln 2`` and of ``C = ln(2 / (1 + e^{-s/t}))`` at ``digits`` digits."""
    dn, up = _contexts(digits)
    dec = decimal.Decimal
    ln2_lo, ln2_hi = dn.ln(2).next_minus(dn), up.ln(2).next_plus(up)
    # q = e^{-s/t} from outward bounds of s/t.
    q_lo = max(dn.exp(up.divide(dec(s), dec(t)).copy_negate()).next_minus(dn), dec(0))
    q_hi = up.exp(dn.divide(dec(s), dec(t)).copy_negate()).next_plus(up)
    c_lo = dn.subtract(ln2_lo, up.ln(up.add(1, q_hi)).next_plus(up))
    c_hi = up.subtract(ln2_hi, dn.ln(dn.add(1, q_lo)).next_minus(dn))
    return ln2_lo, ln2_hi, c_lo, c_hi


def dlap_floor_exact(t, s, words, digits):
    """Decide the discrete Laplace fill's magnitude ``floor(y(U))`` with correctly rounded decimals.

    Parameters
    ----------
    t, s : int
        The scale ``t/s`` (as in the kernel state).
    words : list of int
        The keystream words of the draw, first the one the kernel left
        pending (its top bit is the sign, not part of ``U``), then any
        further 64-bit words: ``U`` lies in ``[N 2^-K, (N+1) 2^-K)`` with
        ``N`` the low 63 bits of the first word followed by the others and
        ``K = 63 + 64 (len(words) - 1)``.
    digits : int
        Decimal precision of the bounds.

    Returns
    -------
    int or None
        ``floor(y)`` when it is the same for every ``U`` of the interval,
        where ``y(U) = (t/s) (-ln U + C)`` and ``C = ln(2 / (1 + e^{-s/t}))``
        (the magnitude of a discrete Laplace draw, derivation in
        csrc/noise.c); :data:`UNDECIDED` otherwise (more bits or digits are
        needed; always when ``N = 0``).

    Notes
    -----
    ``ln`` and ``exp`` are correctly rounded, so one step outward gives
    rigorous bounds; every other operation rounds toward the bound's side.
    ``y`` is decreasing in ``U``: the lower end of ``U`` bounds ``y`` from
    above and the upper end from below.
    """
    n = int(words[0]) & _MASK63
    for w in words[1:]:
        n = (n << 64) | int(w)
    if n == 0:
        return UNDECIDED
    k = 63 + 64 * (len(words) - 1)
    dn, up = _contexts(digits)
    dec = decimal.Decimal
    ln2_lo, ln2_hi, c_lo, c_hi = _dlap_constants(int(t), int(s), digits)
    # -ln U = K ln 2 - ln N at the lower end of U, K ln 2 - ln(N + 1) at the
    # upper, with ln N < ln(N + 1) <= ln N + 1/N (one ln, correctly rounded
    # half-even whatever the context's rounding: one step out bounds it).
    ln_n = dn.ln(dec(n))
    ln_n1_hi = up.add(ln_n.next_plus(up), up.divide(1, dec(n)))
    x_hi = up.add(up.subtract(up.multiply(k, ln2_hi), ln_n.next_minus(dn)), c_hi)
    x_lo = dn.add(dn.subtract(dn.multiply(k, ln2_lo), ln_n1_hi), c_lo)
    y_hi = up.divide(up.multiply(x_hi, dec(int(t))), dec(int(s)))
    y_lo = dn.divide(dn.multiply(x_lo, dec(int(t))), dec(int(s)))
    if y_lo < 0:
        return UNDECIDED
    f_lo = int(y_lo.to_integral_value(rounding=decimal.ROUND_FLOOR))
    f_hi = int(y_hi.to_integral_value(rounding=decimal.ROUND_FLOOR))
    return f_lo if f_lo == f_hi else UNDECIDED


def dlap_magnitude(state, rng_ptr):
    """Decide the pending draw of a discrete Laplace fill exactly.

    Parameters
    ----------
    state : cdata ``pds_dlap *``
        A fill state whose last call returned ``PDS_EPRECISION``.
    rng_ptr : cdata ``pds_rng *``
        The generator the pending draw came from (held by the caller; for a
        chunked fill, the chunk's generator); further words of ``U`` come
        from this same stream, so the fill stays a function of the stream.

    Returns
    -------
    int
        The magnitude ``floor(y(U))`` (:func:`dlap_floor_exact`), for
        ``pds_dlap_resolve``.

    Raises
    ------
    NativeError
        Still undecided after 256 extra words (probability < 2^-10000).
    """
    words = [int(state.pending_word)]
    digits = 30   # y < 2^37 in the kernel's inversion range: 19 digits to spare
    buf = ffi.new("uint64_t[1]")
    t, s = int(state.t), int(state.s)
    for _ in range(256):
        res = dlap_floor_exact(t, s, words, digits)
        if res is not UNDECIDED:
            return res
        check(lib.pds_rng_fill_u64(rng_ptr, buf, 1))
        words.append(int(buf[0]))
        digits += 40
    raise NativeError("the exact discrete Laplace fallback did not converge "
                      "(probability < 2^-10000)")


def settle(state, rng_ptr):
    """Answer a ``PDS_EPRECISION`` of ``pds_partition_feed``: decide the
    pending comparison (:func:`resolve_pending`) and pass it to the kernel,
    which then continues where it stopped."""
    check(lib.pds_partition_resolve(state, resolve_pending(state, rng_ptr)))


@contextlib.contextmanager
def forcing_exact(slack=1e300, slack_ld=None):
    """Test hook: every partition kernel state and discrete Laplace fill started inside uses error allowance ``slack``.

    The kernels allow a relative error of ``1e-12`` per elementary function
    before they hand a decision to this module; a huge ``slack`` makes the
    double path give up on every comparison the partition's fast path does
    not settle and on every discrete Laplace draw, so the output law can be
    tested with the decimal path deciding them.  The discrete Laplace fill
    has a second, long double tier for the draws double leaves open; its
    allowance is ``slack_ld`` (``None``: the same as ``slack``; ``0``: its
    default).  Above ``2**-10`` a tier decides nothing; a moderate
    allowance (``1e-5`` .. ``2**-10``) sends a fraction of the draws on.
    Not thread-safe; for tests only.

    Examples
    --------
    >>> import pydp_synopsis as ps
    >>> with forcing_exact():
    ...     part = ps.private_partition([3, 3, 9], domain=(0, 15), epsilon=1, rng=ps.Rng(seed=1))
    >>> int(part.ends[-1])
    15
    """
    global _forced_slack
    pair = (float(slack), float(slack if slack_ld is None else slack_ld))
    before, _forced_slack = _forced_slack, pair
    try:
        yield
    finally:
        _forced_slack = before


def forced_slack():
    """``(slack, slack_ld)`` of an active :func:`forcing_exact`, else None."""
    return _forced_slack


@contextlib.contextmanager
def forcing_policy(*, batch_cap=None, batch_limit=None, block_limit=None):
    """Test hook: every partition kernel state started inside uses this batch policy.

    The kernel samples several consecutive runs as one batch at the rate of
    the last and thins the candidates (csrc/partition.c); the policy only
    chooses how far a batch reaches, never the law.  Tests force it to
    extremes to check that.  None keeps the kernel's default.

    Parameters
    ----------
    batch_cap : int, optional
        At most this many entries of the sorted positions after a batch's
        first run (0: every batch is a single run, the plain skip).
    batch_limit : float, optional
        A batch of ``N < 2**(h+1)`` positions grows while ``2**(h+1) p(m)``
        stays at most this (``inf``: as long as the count stays below the
        noisy threshold, so candidates are often dropped).
    block_limit : float, optional
        The seal offset's low bits drawn as one block while ``2**k lambda``
        stays at most this (0: every bit alone; ``inf``: all bits in one
        block).

    Not thread-safe; for tests only.
    """
    global _forced_policy
    given = {k: v for k, v in (("batch_cap", batch_cap), ("batch_limit", batch_limit),
                               ("block_limit", block_limit)) if v is not None}
    before, _forced_policy = _forced_policy, dict(_forced_policy, **given)
    try:
        yield
    finally:
        _forced_policy = before


def apply_test_hooks(state):
    """Give a freshly started kernel state the slack of :func:`forcing_exact` and the
    batch policy of :func:`forcing_policy`, if active."""
    if _forced_slack is not None:
        state.slack = _forced_slack[0]
    for key, value in _forced_policy.items():
        setattr(state, key, value)
