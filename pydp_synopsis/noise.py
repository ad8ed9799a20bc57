"""Randomness and exact noise: the CSPRNG, discrete Laplace, exact privacy parameters.

Every random draw in the package comes from :class:`Rng`, a ChaCha20
keystream (RFC 8439) computed in C and seeded from the operating system.
Noise is the discrete Laplace distribution with pmf proportional to
``exp(-|z| / b)`` for an exact rational scale ``b``, sampled with integer
arithmetic only (Canonne, Kamath & Steinke 2020), so no floating-point
rounding can leak information.

Privacy parameters are exact rationals.  A float is converted so that the
real privacy loss never exceeds what was asked for: ``epsilon`` is rounded
*down* and a noise ``scale`` is rounded *up* (see :func:`exact_epsilon`).

References
----------
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020, section 5 (Algorithms 1 and 2).
.. [RFC8439] Y. Nir, A. Langley. "ChaCha20 and Poly1305 for IETF Protocols."
   RFC 8439, 2018, section 2.3.
"""
import contextlib
import decimal
import hashlib
import math
import numbers
import threading
from fractions import Fraction

import numpy as np

from ._core import LIMITS, check, ffi, lib
from .errors import ParameterError

__all__ = [
    "Rng",
    "discrete_laplace",
    "discrete_laplace_variance",
    "laplace_sum_tail",
    "exact_epsilon",
    "exact_scale",
    "scale_parts",
    "check_beta",
    "resolve_rng",
]

#: Numerators and denominators handed to C stay below this bound.
_PARAM_LIMIT = LIMITS.param_limit   # 2**62
#: Largest admitted noise scale; keeps every sample far inside int64.
MAX_SCALE = 1 << 48
#: Largest admitted epsilon.
MAX_EPSILON = 1 << 40


class Rng:
    """A cryptographically secure random generator (ChaCha20, computed in C).

    Parameters
    ----------
    seed : None, int or bytes, optional
        ``None`` (the default and the only choice for real releases) seeds
        from the operating system's ``getrandom()``.  An ``int`` or ``bytes``
        seed gives a reproducible stream **for tests and benchmarks only**:
        anyone who knows the seed can subtract the noise from a release.
        The seed is hashed with SHA-256 into the 256-bit ChaCha20 key.

    Notes
    -----
    *Fork safety*: the generator remembers the process that seeded it; in a
    child created by ``fork()`` the first draw reseeds from the operating
    system, so parent and child never share a stream (a seeded generator
    stops being reproducible in the child).

    *Threads*: the C code runs without the GIL; every call that draws from a
    generator holds its lock, so one ``Rng`` may be shared by threads without
    corrupting its state.  Draws from concurrent threads interleave in an
    unspecified order; use one generator per thread for reproducible runs.

    Pickling is refused: a copied generator would replay the same noise.

    Examples
    --------
    >>> rng = Rng(seed=1)          # tests only
    >>> int(discrete_laplace(2, rng=rng)) == int(discrete_laplace(2, rng=Rng(seed=1)))
    True
    """

    __slots__ = ("_state", "_lock", "_seeded", "__weakref__")

    def __init__(self, seed=None):
        state = ffi.new("pds_rng *")
        if seed is None:
            check(lib.pds_rng_init_os(state), "seeding from the operating system")
        else:
            key = _seed_key(seed)
            check(lib.pds_rng_init_key(state, key), "seeding")
        self._state = state
        self._lock = threading.Lock()
        self._seeded = seed is not None

    @property
    def seeded(self):
        """True when built from an explicit seed (reproducible; tests only)."""
        return self._seeded

    @contextlib.contextmanager
    def _locked(self):
        """Hold the generator's lock; yields the C ``pds_rng *``."""
        with self._lock:
            yield self._state

    def random_uint64(self, size=None):
        """Raw keystream words: an ``int`` or a ``uint64`` array of shape ``size``.

        O(size); 8 bytes of ChaCha20 output per word.
        """
        shape, count = _check_size(size)
        out = np.empty(count, dtype=np.uint64)
        with self._locked() as p:
            check(lib.pds_rng_fill_u64(p, ffi.from_buffer("uint64_t[]", out), count))
        return int(out[0]) if shape is None else out.reshape(shape)

    def integers(self, low, high, size=None):
        """Uniform integers in ``[low, high)`` without modulo bias (``high - low <= 2**64``).

        Returns an ``int`` or an ``int64``/``uint64`` array of shape ``size``.
        O(size).

        Examples
        --------
        >>> x = Rng(seed=0).integers(-5, 5, size=1000)
        >>> int(x.min()) >= -5 and int(x.max()) < 5
        True
        """
        low, high = int(low), int(high)
        span = high - low
        if not 0 < span <= 1 << 64:
            raise ValueError(f"need low < high and high - low <= 2**64, got [{low}, {high})")
        shape, count = _check_size(size)
        out = np.empty(count, dtype=np.uint64)
        if span == 1 << 64:
            with self._locked() as p:
                check(lib.pds_rng_fill_u64(p, ffi.from_buffer("uint64_t[]", out), count))
        else:
            with self._locked() as p:
                check(lib.pds_uniform_fill(p, span, ffi.from_buffer("uint64_t[]", out), count))
        if shape is None:
            return low + int(out[0])
        if low >= 0 and high - 1 > np.iinfo(np.int64).max:
            return (out + np.uint64(low)).reshape(shape)
        if not (np.iinfo(np.int64).min <= low and high - 1 <= np.iinfo(np.int64).max):
            raise ValueError("the range must fit int64 or uint64 for array output")
        return (out.astype(np.int64) + np.int64(low) if span <= 1 << 63 else
                (out + np.uint64(low % (1 << 64))).view(np.int64)).reshape(shape)

    def _to_state(self):
        """The exact generator position of a *seeded* Rng (tests/benchmarks only).

        Counter checkpoints store it so a resumed seeded run reproduces an
        uninterrupted one.  An OS-seeded generator's key is never exported:
        returns None, and a restored counter draws its future noise from
        fresh OS entropy.
        """
        if not self._seeded:
            return None
        with self._locked() as p:
            return {
                "key": [int(w) for w in p.key],
                "block": int(p.block),
                "buf": [str(int(w)) for w in p.buf],
                "pos": int(p.pos),
                "half": int(p.half),
                "nhalf": int(p.nhalf),
                "bits": str(int(p.bits)),
                "nbits": int(p.nbits),
            }

    @classmethod
    def _from_state(cls, state):
        """Rebuild a seeded Rng saved by :meth:`_to_state` (validated)."""
        try:
            key = [int(w) for w in state["key"]]
            buf = [int(w) for w in state["buf"]]
            fields = {k: int(state[k]) for k in ("block", "pos", "half", "nhalf", "bits", "nbits")}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad generator state ({exc})") from None
        if (len(key) != 8 or len(buf) != 64 or any(not 0 <= w < 2**32 for w in key)
                or any(not 0 <= w < 2**64 for w in buf) or not 0 <= fields["pos"] <= 64
                or fields["nhalf"] not in (0, 1) or not 0 <= fields["nbits"] <= 64
                or not 0 <= fields["half"] < 2**32 or not 0 <= fields["bits"] < 2**64
                or not 0 <= fields["block"] < 2**64):
            raise ValueError("bad generator state (field out of range)")
        rng = cls(seed=0)
        with rng._locked() as p:
            for i, w in enumerate(key):
                p.key[i] = w
            for i, w in enumerate(buf):
                p.buf[i] = w
            for name, value in fields.items():
                setattr(p, name, value)
        return rng

    def __reduce__(self):
        raise TypeError("an Rng cannot be pickled or copied: the copy would replay the same noise")

    def __repr__(self):
        return "Rng(<seeded: tests only>)" if self._seeded else "Rng(<OS entropy>)"


def _seed_key(seed):
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("seed must be None, an int or bytes, not bool")
    if isinstance(seed, numbers.Integral):
        seed = int(seed)
        data = b"int:" + seed.to_bytes((seed.bit_length() + 8) // 8 + 1, "little", signed=True)
    elif isinstance(seed, (bytes, bytearray, memoryview)):
        data = b"bytes:" + bytes(seed)
    else:
        raise TypeError(f"seed must be None, an int or bytes, not {type(seed).__name__}")
    return hashlib.sha256(b"pydp_synopsis.Rng v1\0" + data).digest()


def resolve_rng(rng, name="rng"):
    """``rng`` itself if it is an :class:`Rng`, a fresh OS-seeded one for ``None``."""
    if rng is None:
        return Rng()
    if isinstance(rng, Rng):
        return rng
    raise TypeError(f"{name} must be a pydp_synopsis.Rng or None, not {type(rng).__name__}")


def _check_size(size):
    """Validate ``size``; returns (shape or None, element count)."""
    if size is None:
        return None, 1
    if isinstance(size, (bool, np.bool_)):
        raise TypeError("size must be None, a non-negative int or a tuple of them, not bool")
    if isinstance(size, numbers.Integral):
        shape = (int(size),)
    elif isinstance(size, tuple) and all(
        isinstance(d, numbers.Integral) and not isinstance(d, (bool, np.bool_)) for d in size
    ):
        shape = tuple(int(d) for d in size)
    else:
        raise TypeError(f"size must be None, a non-negative int or a tuple of them, not {size!r}")
    if any(d < 0 for d in shape):
        raise ValueError(f"size must be non-negative, got {size!r}")
    count = math.prod(shape)
    if count > (1 << 40):
        raise ValueError(f"size must describe at most 2**40 samples, got {count}")
    return shape, count


def _as_fraction(value, name):
    """An exact Fraction for a finite real number; TypeError/ParameterError otherwise."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, not bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ParameterError(f"{name} must be finite, got {value}")
        return Fraction(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ParameterError(f"{name} must be finite, got {value}")
        return Fraction(value)
    raise TypeError(f"{name} must be a real number (int, float or Fraction), not {type(value).__name__}")


def _fits(frac):
    return frac.numerator < _PARAM_LIMIT and frac.denominator < _PARAM_LIMIT


def _round_rational(value, exact, up, name):
    """A rational with numerator, denominator < 2**62, >= exact if up else <= exact.

    A float's shortest decimal form (``repr``) is preferred when it lies on
    the safe side: ``0.1`` becomes exactly 1/10 (the float 0.1 is slightly
    larger, so 1/10 is a smaller epsilon, or a larger scale for ``up``).
    Otherwise the exact binary value is used when small enough, else it is
    rounded in the safe direction to a denominator 10**k (largest k that fits).
    """
    if isinstance(value, float) or isinstance(value, np.floating):
        short = Fraction(repr(float(value)))
        if _fits(short) and (short >= exact if up else short <= exact):
            return short
    if _fits(exact):
        return exact
    for k in range(18, -1, -1):
        den = 10**k
        scaled = exact * den
        num = math.ceil(scaled) if up else math.floor(scaled)
        cand = Fraction(num, den)
        if num > 0 and _fits(cand):
            return cand
    raise ParameterError(f"{name}={value!r} cannot be represented as a rational with parts below 2**62")


def exact_epsilon(epsilon, name="epsilon"):
    """The exact rational privacy parameter used for ``epsilon``.

    Parameters
    ----------
    epsilon : int, float, Fraction or Decimal
        Must satisfy ``0 < epsilon <= 2**40``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    Fraction
        ``epsilon`` itself when it is already a small rational; a float is
        rounded **down** (never a larger privacy loss than asked): its
        shortest decimal form when that is not larger than the float
        (``0.1 -> 1/10``), else its exact binary value, else a decimal
        rounding down with denominator ``10**k``.  Numerator and
        denominator are below ``2**62``.

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number.
    ParameterError
        ``epsilon`` is not finite or outside ``(0, 2**40]``.

    Examples
    --------
    >>> exact_epsilon(0.1)
    Fraction(1, 10)
    >>> exact_epsilon(Fraction(1, 3))
    Fraction(1, 3)
    """
    exact = _as_fraction(epsilon, name)
    if not 0 < exact <= MAX_EPSILON:
        raise ParameterError(f"{name} must be in (0, 2**40], got {epsilon!r}")
    result = _round_rational(epsilon, exact, up=False, name=name)
    if result <= 0:
        raise ParameterError(f"{name}={epsilon!r} is too small to represent (use at least 1e-17)")
    return result


def exact_scale(scale, name="scale"):
    """The exact rational noise scale used for ``scale`` (rounded **up**).

    ``scale`` must satisfy ``0 < scale <= 2**48``.  Floats are converted as
    in :func:`exact_epsilon` but rounding up, so the noise is never smaller
    than asked.

    Examples
    --------
    >>> exact_scale(2.5)
    Fraction(5, 2)
    """
    exact = _as_fraction(scale, name)
    if not 0 < exact <= MAX_SCALE:
        raise ParameterError(f"{name} must be in (0, 2**48], got {scale!r}")
    return _round_rational(scale, exact, up=True, name=name)


def scale_parts(scale):
    """``(t, s)`` with ``scale == t / s`` as the C samplers take them.

    ``scale`` is a Fraction; one whose parts reach ``2**62`` is rounded up
    first (more noise, never less).
    """
    scale = Fraction(scale)
    if not _fits(scale):
        scale = _round_rational(scale, scale, up=True, name="scale")
    return scale.numerator, scale.denominator


def check_beta(beta, name="beta"):
    """Validate a failure probability: a real number in the open interval (0, 1).

    Returns it as a float (beta only tunes accuracy, never privacy).
    """
    exact = _as_fraction(beta, name)
    if not 0 < exact < 1:
        raise ParameterError(f"{name} must be in the open interval (0, 1), got {beta!r}")
    return float(exact)


def discrete_laplace(scale, size=None, *, rng=None):
    """Exact discrete Laplace samples: P(z) proportional to ``exp(-|z| / scale)``.

    Parameters
    ----------
    scale : int, float or Fraction
        ``0 < scale <= 2**48``.  Floats are rounded up to an exact rational
        (:func:`exact_scale`); adding this noise to an integer of
        sensitivity 1 gives ``(1/scale)``-differential privacy.
    size : None, int or tuple of int, optional
        ``None`` returns one Python ``int``; otherwise an ``int64`` array of
        that shape.
    rng : Rng, optional
        Source of randomness; a fresh OS-seeded generator by default.

    Returns
    -------
    int or numpy.ndarray of int64

    Notes
    -----
    O(size) expected time, a few ChaCha20 words per sample, all in one C
    call.  Variance: :func:`discrete_laplace_variance`.

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke 2020, Algorithm 2.

    Examples
    --------
    >>> z = discrete_laplace(10, size=1000, rng=Rng(seed=0))
    >>> z.dtype, z.shape
    (dtype('int64'), (1000,))
    """
    frac = exact_scale(scale)
    shape, count = _check_size(size)
    rng = resolve_rng(rng)
    t, s = scale_parts(frac)
    out = np.empty(count, dtype=np.int64)
    with rng._locked() as p:
        check(lib.pds_discrete_laplace_fill(p, t, s, ffi.from_buffer("int64_t[]", out), count),
              "discrete_laplace")
    return int(out[0]) if shape is None else out.reshape(shape)


def discrete_laplace_variance(scale):
    """Variance ``2 q / (1 - q)**2`` with ``q = exp(-1/scale)`` (a float, for error bars).

    Examples
    --------
    >>> round(discrete_laplace_variance(1), 6)
    1.841347
    """
    x = float(1 / Fraction(scale))
    return 2 * math.exp(-x) / math.expm1(-x) ** 2


def _log_mgf(lam, scale):
    """``log E[exp(lam Z)]`` for Z discrete Laplace of ``scale`` b, ``0 <= lam < 1/b``.

    ``E[e^{lam Z}] = (1-p)^2 / ((1 - p e^lam)(1 - p e^-lam))`` with ``p = e^{-1/b}``;
    written with expm1 so that large scales keep their precision.
    """
    g = 1.0 / scale
    return (2.0 * math.log(-math.expm1(-g))
            - math.log(-math.expm1(lam - g))
            - math.log(-math.expm1(-lam - g)))


def laplace_sum_tail(terms, scale, log_inv_delta):
    """A ``t`` with ``P(Z_1 + ... + Z_terms >= t) <= delta`` for i.i.d. discrete Laplace noise.

    The Chernoff bound with the exact moment generating function: for every
    ``lam`` in ``(0, 1/b)``, ``P(S >= t) <= exp(terms log M(lam) - lam t)``,
    so ``t(lam) = (terms log M(lam) + log(1/delta)) / lam`` is a valid bound
    for *any* such ``lam``; the smallest over a grid refined by
    golden-section search is returned, enlarged by a relative ``1e-9`` for
    the float evaluation (the search only tightens, it never decides
    validity).  The shared bound of every synopsis's ``error_bound``.

    Also valid for sums of *fewer* terms and for weighted sums
    ``sum_i w_i Z_i`` with ``|w_i| <= 1`` (``log M`` is even, convex and
    ``>= 0``, so ``log M(w lam) <= log M(lam)``), and -- by symmetry -- for
    the lower tail.  ``terms`` may be fractional: the formula is then used as
    written (e.g. a weighted sum with ``sum w_i^2 <= V`` and ``|w_i| <= s``
    has tail at most ``s * laplace_sum_tail(V / s**2, b, .)``, since
    ``log M(x) / x^2`` grows with ``|x|``).

    Parameters
    ----------
    terms : float
        Number of terms (>= 0; 0 gives 0: the sum is 0).
    scale : float or Fraction
        The noise scale ``b`` (pmf proportional to ``exp(-|z| / b)``), > 0.
    log_inv_delta : float
        ``ln(1 / delta)`` > 0, in the log domain so that union bounds over
        astronomically many events (``delta = 2^-500``) stay representable.

    Returns
    -------
    float

    Notes
    -----
    O(1): about 600 evaluations of ``log M``.

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke 2020 (the discrete Laplace and its MGF).
    .. [DNRR] Dwork, Naor, Reingold, Rothblum, Theorem 3.2 (the tail of the
       cover's noise terms in the interval error bound).

    Examples
    --------
    >>> t = laplace_sum_tail(1, 3.0, math.log(1e6))
    >>> p = math.exp(-1 / 3.0)
    >>> p ** math.ceil(t) / (1 + p) <= 1e-6      # the exact one-term tail
    True
    """
    for name, v in (("terms", terms), ("scale", scale), ("log_inv_delta", log_inv_delta)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must be a real number, not {type(v).__name__}")
    terms, b, log_inv = float(terms), float(scale), float(log_inv_delta)
    if not (math.isfinite(terms) and terms >= 0):
        raise ParameterError(f"terms must be a finite number >= 0, got {terms!r}")
    if not (math.isfinite(b) and b > 0):
        raise ParameterError(f"scale must be a finite number > 0, got {scale!r}")
    if not (math.isfinite(log_inv) and log_inv > 0):
        raise ParameterError(f"log_inv_delta must be a finite number > 0, got {log_inv_delta!r}")
    if terms == 0:
        return 0.0
    g = 1.0 / b

    def t_of(x):
        lam = x * g
        return (terms * _log_mgf(lam, b) + log_inv) / lam

    grid = [i / 512 for i in range(1, 512)]
    best = min(grid, key=t_of)
    lo, hi = max(best - 1 / 512, 1e-9), min(best + 1 / 512, 1 - 1e-9)
    phi = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        a = hi - phi * (hi - lo)
        c = lo + phi * (hi - lo)
        if t_of(a) < t_of(c):
            hi = c
        else:
            lo = a
    # absorb float rounding in the evaluation (relative error far below 1e-9)
    return min(t_of(best), t_of((lo + hi) / 2)) * (1 + 1e-9)
