"""Exact noise: the discrete Laplace distribution from the CSPRNG.

Noise is the discrete Laplace distribution with pmf proportional to
``exp(-|z| / b)`` for an exact rational scale ``b``; scales are made exact
by :func:`~pydp_synopsis.params.exact_scale` (rounded up).

The sampler (csrc/noise.c, ``pds_dlap_*``) inverts the distribution of the
magnitude: with ``q = e^{-1/b}``, ``P(|Z| >= k) = 2 q^k / (1 + q)`` for
``k >= 1``, so ``|Z| = floor(b (-ln U + ln(2 / (1 + q))))`` for one uniform
``U``, and the sign is a fair bit.  One 64-bit ChaCha20 word gives the sign
and the first 63 bits of ``U``; the floor is taken in double precision only
when rigorous error bounds (glibc's documented few-ulp errors, allowed
``1e-12`` relative per function) show it is the same for every ``U`` those
bits allow.  Otherwise -- about ``1e-11 b`` of the draws, and never an
outcome a float merely rounded to -- the fill stops and
:func:`pydp_synopsis._exact.dlap_magnitude` decides the floor with
correctly rounded :mod:`decimal` interval arithmetic, drawing further words
of the same stream until ``U`` is narrow enough.  Floating point only
chooses between "decided" and "decide exactly", so the output law is
exactly the discrete Laplace, while almost every draw costs one keystream
word and one ``log`` (the integer-only sampler of Canonne, Kamath & Steinke
2020, Algorithm 2, spends several words and a loop of Bernoulli trials per
draw).  Scales above ``2**30`` -- where pending draws would become common --
keep that integer-only sampler, which the C kernels (trees, counters,
partitions) use for their single draws.

Large fills (:data:`SPLIT` draws or more) run on :func:`~pydp_synopsis.get_threads`
threads: two words of the generator key a fill stream (a ChaCha20 nonce
whose second word is 2 mod 4, which neither the generator's own blocks (0)
nor :meth:`~pydp_synopsis.Rng.derive`'s children (1) use; 94 random nonce
bits, so two fills never share a key in practice), and chunk ``c`` of
``2**16`` draws reads that stream from block ``c * 2**32`` on.  Each thread
takes whole chunks, so a seeded fill is the same for any thread count.

References
----------
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020, section 5 (Algorithms 1 and 2).
.. [DEV86] L. Devroye. "Non-Uniform Random Variate Generation." Springer,
   1986, section X.5 (the geometric distribution by inversion, and the
   two-sided ("discrete Laplace") variant).
.. [RFC8439] Y. Nir, A. Langley. "ChaCha20 and Poly1305 for IETF Protocols."
   RFC 8439, 2018 (the stream; seeking by block counter).
"""
import math
from fractions import Fraction

import numpy as np

from . import _exact
from ._core import LIMITS, check, ffi, i64, lib
from ._threads import get_threads, run_parts
from .params import check_sample_shape, exact_scale, scale_parts
from .rng import Rng, resolve_rng  # noqa: F401  (Rng: doctests)

__all__ = ["discrete_laplace", "discrete_laplace_variance"]

#: Fills of at least this many draws are chunked (and threaded); smaller
#: ones draw from the generator's own stream on the calling thread.
SPLIT = 1 << 17


def _new_fill(t, s):
    """A ``pds_dlap`` fill state of scale ``t/s`` at index 0."""
    state = ffi.new("pds_dlap *")
    check(lib.pds_dlap_init(state, t, s), "discrete_laplace")
    forced = _exact.forced_slack()
    if forced is not None:
        check(lib.pds_dlap_set_slack(state, *forced), "discrete_laplace")
    return state


def _run(state, gen, out, end, key=None):
    """Continue a fill up to ``end``, settling each pending draw exactly.

    ``gen`` is the generator (``key`` None) or the chunk generator of the
    fill key ``key``; the caller holds whatever lock guards it.
    """
    while True:
        if key is None:
            status = lib.pds_dlap_fill(state, gen, out, end)
        else:
            status = lib.pds_dlap_fill_chunks(state, gen, key, out, end)
        if status != lib.PDS_EPRECISION:
            check(status, "discrete_laplace")
            return
        check(lib.pds_dlap_resolve(state, out, _exact.dlap_magnitude(state, gen)),
              "discrete_laplace")


def _fill_chunked(rng, t, s, out, count):
    """``count`` draws in chunks of ``LIMITS.dlap_chunk`` from a fill stream of
    ``rng`` (two words of it drawn), spread over :func:`get_threads` threads."""
    key = ffi.new("uint8_t[32]")
    with rng.native() as p:
        check(lib.pds_rng_split(p, key), "discrete_laplace")
    chunk = LIMITS.dlap_chunk
    chunks = -(-count // chunk)
    k = min(get_threads(), chunks)
    cuts = [min(count, chunks * i // k * chunk) for i in range(k + 1)]

    def part(lo, hi):
        state = _new_fill(t, s)
        state.next = lo
        _run(state, ffi.new("pds_rng *"), out, hi, key)

    try:
        run_parts(part, [(cuts[i], cuts[i + 1]) for i in range(k)])
    finally:
        ffi.memmove(key, bytes(32), 32)


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
    The law is exactly the discrete Laplace
    ``P(z) = (1 - q) / (1 + q) q^|z|``, ``q = exp(-1/scale)``: the sampler
    inverts ``|z|`` from one uniform and decides in double precision only
    when rigorous bounds prove the result, else exactly with decimals (see
    the module docstring).  O(size) expected time, all in C: about one
    ChaCha20 word and one ``log`` per draw for ``scale <= 2**30`` (CKS
    Algorithm 2 above).  Fills of at least :data:`SPLIT` draws use
    :func:`~pydp_synopsis.get_threads` threads, each chunk of ``2**16``
    draws from its own position of a stream keyed by two words of ``rng``:
    the same seeded ``rng`` gives the same draws for any thread count.
    Variance: :func:`discrete_laplace_variance`.

    References
    ----------
    .. [CKS20] Canonne, Kamath, Steinke 2020, section 5 (the law; the
       sampler above ``2**30``).
    .. [DEV86] Devroye 1986, section X.5 (inversion of the geometric).

    Examples
    --------
    >>> z = discrete_laplace(10, size=1000, rng=Rng(seed=0))
    >>> z.dtype, z.shape
    (dtype('int64'), (1000,))
    """
    frac = exact_scale(scale)
    shape, count = check_sample_shape(size)
    rng = resolve_rng(rng)
    t, s = scale_parts(frac)
    out = np.empty(count, dtype=np.int64)
    ptr = i64(out)
    if count < SPLIT:
        state = _new_fill(t, s)
        with rng.native() as p:
            _run(state, p, ptr, count)
    else:
        _fill_chunked(rng, t, s, ptr, count)
    return int(out[0]) if shape is None else out.reshape(shape)


def _discrete_laplace_cks(scale, size, rng):
    """Discrete Laplace draws of CKS Algorithm 2 from ``rng``'s own stream (no threads).

    The same law as :func:`discrete_laplace` drawn the way release 0.1 drew
    it, and the way the C kernels draw their single terms
    (``pds_discrete_laplace_one``): tests use it as the reference sequence
    of the kernels' draws.  ``size`` is an int; returns an int64 array.
    """
    t, s = scale_parts(exact_scale(scale))
    _, count = check_sample_shape(size)
    out = np.empty(count, dtype=np.int64)
    with resolve_rng(rng).native() as p:
        check(lib.pds_discrete_laplace_fill(p, t, s, i64(out), count), "discrete_laplace")
    return out


def discrete_laplace_variance(scale):
    """Variance ``2 q / (1 - q)**2`` with ``q = exp(-1/scale)`` (a float, for error bars).

    ``scale`` is checked like :func:`discrete_laplace`'s (``0 < scale <= 2**48``).

    Examples
    --------
    >>> round(discrete_laplace_variance(1), 6)
    1.841347
    """
    x = float(1 / Fraction(scale) if isinstance(scale, Fraction) and 0 < scale else 1 / exact_scale(scale))
    return 2 * math.exp(-x) / math.expm1(-x) ** 2
