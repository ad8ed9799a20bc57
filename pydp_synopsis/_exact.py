"""The partition kernel's exact fallback: comparisons decided with correctly rounded decimals.

The C kernel (``csrc/partition.c``) samples each seal of DNRR's partition by
comparisons ``U < pi`` of a CSPRNG uniform ``U`` with an irrational ``pi``.
It decides one in double precision only when rigorous error bounds settle
it; otherwise (probability about ``1e-12`` per comparison) it returns
``PDS_EPRECISION`` with the comparison in the state's ``pending_*`` fields.
:func:`settle` then decides it here with :mod:`decimal` interval arithmetic,
extending ``U`` with further words of the same stream, and hands the outcome
back to the kernel, so every decision is exactly Bernoulli(``pi``): the
partition keeps the exact law of Fig. 1.

Package-internal: :mod:`pydp_synopsis.partition` calls :func:`settle` and
:func:`apply_test_hooks`; tests call :func:`compare_exact`,
:func:`resolve_pending`, :func:`forcing_exact` and :func:`forcing_policy`.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015: Fig. 1 and Remark 2.2 (the skip whose comparisons these are).
.. [DEC] Python's :mod:`decimal`: ``ln`` and ``exp`` are correctly rounded.
"""
import contextlib
import decimal

from ._core import check, ffi, lib
from .errors import NativeError

__all__ = ["UNDECIDED", "compare_exact", "resolve_pending", "settle", "forcing_exact",
           "forcing_policy", "apply_test_hooks"]

#: What :func:`compare_exact` returns when ``U`` still straddles the bounds of ``pi``.
UNDECIDED = None

# The kernel's error allowance for new states while :func:`forcing_exact` is active.
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


def settle(state, rng_ptr):
    """Answer a ``PDS_EPRECISION`` of ``pds_partition_feed``: decide the
    pending comparison (:func:`resolve_pending`) and pass it to the kernel,
    which then continues where it stopped."""
    check(lib.pds_partition_resolve(state, resolve_pending(state, rng_ptr)))


@contextlib.contextmanager
def forcing_exact(slack=1e300):
    """Test hook: every partition kernel state started inside uses error allowance ``slack``.

    The kernel allows a relative error of ``1e-12`` per elementary function
    before it hands a comparison to this module; a huge ``slack`` makes the
    double path give up on every comparison its fast path does not settle,
    so the output law can be tested with the decimal path deciding them.
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
    before, _forced_slack = _forced_slack, float(slack)
    try:
        yield
    finally:
        _forced_slack = before


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
        state.slack = _forced_slack
    for key, value in _forced_policy.items():
        setattr(state, key, value)
