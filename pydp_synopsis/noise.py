"""Exact noise: the discrete Laplace distribution from the CSPRNG.

Noise is the discrete Laplace distribution with pmf proportional to
``exp(-|z| / b)`` for an exact rational scale ``b``, sampled with integer
arithmetic only (Canonne, Kamath & Steinke 2020), so no floating-point
rounding can leak information.  Scales are made exact by
:func:`~pydp_synopsis.params.exact_scale` (rounded up).

References
----------
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for
   Differential Privacy." NeurIPS 2020, section 5 (Algorithms 1 and 2).
"""
import math
from fractions import Fraction

import numpy as np

from . import _exact
from ._core import check, ffi, lib
from .params import check_sample_shape, exact_scale, scale_parts
from .rng import Rng, resolve_rng  # noqa: F401  (Rng: doctests)

__all__ = ["discrete_laplace", "discrete_laplace_variance"]


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
    O(size), one C call: scales up to ``2**24`` invert one ChaCha20 word
    per sample (sign from its top bit, the magnitude from the other 63
    bits read as a uniform ``U``: ``M = max(0, ceil(b (ln c - ln U)) - 1)``,
    decided in double under rigorous error bounds, the rare undecided
    sample -- about ``2**-42 (b + abs(z))`` of them -- decided exactly in
    :mod:`pydp_synopsis._exact` with further words of ``U``; the proof is in
    ``csrc/noise.c``).  Larger scales use the integer sampler of [CKS20]_.
    Both laws are exact.  Variance: :func:`discrete_laplace_variance`.

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
    shape, count = check_sample_shape(size)
    rng = resolve_rng(rng)
    t, s = scale_parts(frac)
    out = np.empty(count, dtype=np.int64)
    base = ffi.cast("int64_t *", ffi.from_buffer("int64_t[]", out)) if count else ffi.NULL
    done, pending = ffi.new("size_t *"), ffi.new("uint64_t *")
    slack = _exact.current_slack()
    filled = 0
    with rng.native() as p:
        while True:
            st = lib.pds_discrete_laplace_invert(p, t, s, slack, base + filled if count else base,
                                                 count - filled, done, pending)
            filled += done[0]
            if st != lib.PDS_EPRECISION:
                break
            # a sample C could not decide in double: decided exactly, same stream
            out[filled] = _exact.resolve_laplace(t, s, pending[0], p)
            filled += 1
    check(st, "discrete_laplace")
    return int(out[0]) if shape is None else out.reshape(shape)


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
