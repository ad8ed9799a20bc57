"""Is a checkpoint's stored noise what the counter itself would have drawn?

A counter checkpoint holds noise terms: the ones in use (the slots) and the
pre-drawn pool.  They are i.i.d. discrete Laplace draws of the counter's
scale, drawn independently of the data, and the releases are the true
prefix sums plus sums of them.  A checkpoint whose terms were zeroed (or set
to any small or constant values) would release the data almost exactly, and
the file's SHA-256 does not stop it: the checksum is unkeyed, anyone can
recompute it.  :func:`check_discrete_laplace_terms` refuses terms that are
implausible as such draws:

* a magnitude that the distribution reaches with probability below the
  threshold (a union bound over the terms);
* the empirical distribution of ``|z|`` at the thresholds ``0, 1, 2, 4,
  ...``: too many (zeroed, shrunk) or too few (inflated) terms at or below
  each, by a two-sided Chernoff bound on the binomial count;
* the signs of the non-zero terms (a constant sign), by the same bound.

A genuine checkpoint is refused with probability below ``2**-40`` per check
(the sum of the tests' levels), so the test never disturbs a real stream.
What it cannot see: terms the editor drew from the right distribution
themselves (they then know the noise).  The journal of the command line
(:mod:`pydp_synopsis.checkpoint`) is what detects an edited state there;
the documentation (``docs/security-checkpoints.md``) says what a person with
write access can still do.

Floating point decides only whether a file is refused, never a release.

References
----------
.. [CKS20] C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020: the discrete Laplace distribution,
   ``P(Z = z) = (1 - q) / (1 + q) * q**|z|`` with ``q = exp(-1/scale)``.
.. [Hoe63] W. Hoeffding, "Probability Inequalities for Sums of Bounded
   Random Variables", JASA 58 (1963), Theorem 1: the binomial tail
   ``P(X >= n a) <= exp(-n KL(a || p))`` for ``a > p``.
"""
import math
from fractions import Fraction

import numpy as np

from .errors import FormatError

__all__ = ["REFUSAL_LEVEL", "check_discrete_laplace_terms"]

#: Probability that a genuine set of terms is refused (sum over all tests).
REFUSAL_LEVEL = 2.0 ** -40


def _kl(a, p):
    """Kullback-Leibler divergence of Bernoulli(a) from Bernoulli(p), 0 log 0 = 0."""
    out = 0.0
    if a > 0:
        out += a * (math.log(a) - math.log(p)) if p > 0 else math.inf
    if a < 1:
        out += (1 - a) * (math.log1p(-a) - math.log1p(-p)) if p < 1 else math.inf
    return out


def _binomial_outlier(count, n, p, level):
    """True when ``count`` successes in ``n`` trials of probability ``p`` are in a
    tail (either side) of probability below ``level`` by the Chernoff bound."""
    if n == 0:
        return False
    a = count / n
    if a == p:
        return False
    return -n * _kl(a, p) < math.log(level)


def check_discrete_laplace_terms(terms, scale, name="noise"):
    """Refuse stored noise terms implausible as discrete Laplace draws of ``scale``.

    Parameters
    ----------
    terms : numpy.ndarray of int64
        Terms that the counter drew (one-dimensional, any length).
    scale : Fraction
        The counter's noise scale b: ``P(Z = z)`` proportional to ``exp(-|z|/b)``.
    name : str
        What the terms are, for the message.

    Raises
    ------
    FormatError
        One line naming ``name``, never a term's value.

    Notes
    -----
    O(len(terms) log(max |z|)) vectorised.  A genuine draw is refused with
    probability below :data:`REFUSAL_LEVEL`.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np, pydp_synopsis as ps
    >>> z = ps.discrete_laplace(Fraction(3), size=300, rng=ps.Rng(1))
    >>> check_discrete_laplace_terms(z, Fraction(3))
    >>> check_discrete_laplace_terms(np.zeros(300, dtype=np.int64), Fraction(3))
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.FormatError: state noise is not what the counter draws (zeroed, shrunk or edited noise terms)
    """
    terms = np.asarray(terms, dtype=np.int64)
    n = len(terms)
    if n == 0:
        return
    inv = float(1 / Fraction(scale))          # 1/b; q = exp(-1/b)
    log_q = -inv
    q = math.exp(log_q)
    mags = np.abs(terms)                       # |int64 min| stays negative: refused below
    top = int(terms.max()) if int(terms.max()) >= -int(terms.min()) else -int(terms.min())
    # P(|Z| >= m) = 2 q^m / (1 + q) for m >= 1; the largest m allowed keeps
    # n * P(|Z| >= m + 1) below a quarter of the level
    budget = math.log(REFUSAL_LEVEL / 4 / n) + math.log1p(q) - math.log(2)
    limit = math.floor(budget / log_q) if log_q < 0 else math.inf
    if top > limit or np.any(mags < 0):
        raise FormatError(f"state {name} is not what the counter draws (a term out of the "
                          f"distribution's range)")
    thresholds = [0]
    while thresholds[-1] < min(top, limit):
        thresholds.append(max(1, 2 * thresholds[-1]))
    level = REFUSAL_LEVEL / 2 / (len(thresholds) + 1)
    for m in thresholds:
        # P(|Z| > m) = 2 q^(m+1) / (1 + q)
        above = math.exp((m + 1) * log_q + math.log(2) - math.log1p(q))
        if _binomial_outlier(int(np.count_nonzero(mags > m)), n, min(1.0, above), level):
            raise FormatError(f"state {name} is not what the counter draws (zeroed, shrunk or "
                              f"edited noise terms)")
    nonzero = int(np.count_nonzero(terms))
    if _binomial_outlier(int(np.count_nonzero(terms > 0)), nonzero, 0.5, level):
        raise FormatError(f"state {name} is not what the counter draws (noise terms of one sign)")
