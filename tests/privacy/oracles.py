"""Exact laws where a closed form exists: the privacy loss computed, not sampled.

* :func:`fig1_law` -- the exact distribution of the segment ends of DNRR's
  Fig. 1 on a small stream of counts, by dynamic programming over segments
  (each segment draws its own threshold noise; given it, the positions are
  independent), with the exact discrete Laplace; :func:`fig1_max_loss` --
  the exhaustive exact privacy loss ``max_out |ln P(out|x) / P(out|x')|``.
* :func:`discrete_laplace_log_pmf` and :func:`discrete_laplace_max_loss`.
* :func:`counter_terms` -- which noise terms the tree counters add to each
  release (the term model of APT section 3.1 and Algorithm 2 as
  ``csrc/counters.c`` implements it), hence :func:`counter_noise_covariance`
  (the exact covariance of the releases) and :func:`counter_max_loss` (the
  L1 change of the node sums that one item causes, divided by the scale).

Everything is computed in log space with numpy floats (relative error about
1e-12), and every truncation of an infinite sum is bounded explicitly.

References
----------
.. [DNRR15] C. Dwork, M. Naor, O. Reingold, G. N. Rothblum, "Pure
   Differential Privacy for Rectangle Queries via Private Partitions",
   ASIACRYPT 2015, Fig. 1 and Theorem 2.1.
.. [CKS20] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020 (the discrete Laplace pmf).
.. [APT] J. D. Andersson, R. Pagh, S. Torkamani, "Improved Counting under
   Continual Observation with Pure Differential Privacy", section 3.1 and
   Algorithm 2.
"""
import math
from fractions import Fraction

import numpy as np

__all__ = ["discrete_laplace_log_pmf", "discrete_laplace_max_loss", "fig1_law", "fig1_max_loss",
           "fig1_outputs_as_features", "counter_terms", "counter_noise_covariance",
           "counter_max_loss"]


# ------------------------------------------------------------ discrete Laplace
def _log_tail_ge(m, eps):
    """log P(nu >= m) for the discrete Laplace of scale 1/eps (numpy array m)."""
    m = np.asarray(m, dtype=float)
    log1pa = math.log1p(math.exp(-eps))
    pos = -eps * m - log1pa                                  # m >= 1: a^m / (1 + a)
    neg = np.log1p(-np.exp(-eps * (1.0 - np.minimum(m, 0.0)) - log1pa))   # 1 - a^(1-m)/(1+a)
    return np.where(m >= 1, pos, neg)


def _log_cdf_le(y, eps):
    """log P(nu <= y) = log P(nu >= -y) (symmetry)."""
    return _log_tail_ge(-np.asarray(y, dtype=float), eps)


def discrete_laplace_log_pmf(z, eps):
    """log P(Z = z) for pmf (1 - a)/(1 + a) a^|z|, a = exp(-eps) (scale 1/eps).

    Examples
    --------
    >>> round(float(np.exp(discrete_laplace_log_pmf(0, 1.0))), 6)
    0.462117
    """
    a = math.exp(-eps)
    return math.log((1 - a) / (1 + a)) - eps * np.abs(np.asarray(z, dtype=float))


def discrete_laplace_max_loss(scale, shift=1, support=200):
    """Exact ``max_z |ln P(Z = z) / P(Z = z - shift)|`` for the discrete Laplace of ``scale``.

    It is ``|shift| / scale`` (attained for every z on one side), computed
    from the pmf over ``[-support, support]``, not from the formula.
    """
    eps = float(1 / Fraction(scale))
    z = np.arange(-support, support + 1)
    return float(np.max(np.abs(discrete_laplace_log_pmf(z, eps)
                               - discrete_laplace_log_pmf(z - shift, eps))))


# ----------------------------------------------------------------- Fig. 1
def _logsumexp(x, axis=None):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def _segment_factors(counts, eps, threshold):
    """``log f[s, e]``: probability that a segment opened at s seals exactly at e.

    f[s, e] = sum_z P(Z=z) prod_{j=s}^{e-1} P(nu <= T + z - C_j) P(nu >= T + z - C_e + 1)
    for e < D - 1, and for e = D - 1 (the domain end always seals) the
    product alone, C_j = counts[s] + ... + counts[j] (Fig. 1 step 2).

    The sum over z is taken over a window outside of which every term is at
    most P(Z = z); the window grows until that neglected mass is below
    e^-60 times the smallest factor (a relative error below 1e-26).
    """
    d = len(counts)
    cum = np.concatenate([[0], np.cumsum(counts)])
    width = int(threshold + cum[-1] + math.ceil(80 / eps)) + 2
    while True:
        z = np.arange(-width, width + 1, dtype=float)
        logpz = discrete_laplace_log_pmf(z, eps)
        f = np.full((d, d), -np.inf)
        for s in range(d):
            acc = logpz.copy()                      # running sum of log P(no seal before)
            for e in range(s, d):
                c_e = cum[e + 1] - cum[s]
                if e == d - 1:
                    f[s, e] = _logsumexp(acc)
                else:
                    f[s, e] = _logsumexp(acc + _log_tail_ge(threshold + z - c_e + 1, eps))
                    acc = acc + _log_cdf_le(threshold + z - c_e, eps)
        # neglected: both tails of Z beyond the window, each term <= P(Z = z)
        log_tail = math.log(2.0) + float(discrete_laplace_log_pmf(width + 1, eps)) \
            - math.log1p(-math.exp(-eps))
        if log_tail < float(np.min(f[np.isfinite(f)])) - 60:
            return f
        width *= 2


def fig1_law(counts, epsilon, threshold):
    """The exact law of Fig. 1's segment ends for a stream of counts.

    Parameters
    ----------
    counts : sequence of int
        Non-negative counts of positions ``0 .. D-1`` (D <= 16).
    epsilon : Fraction or float
        The partition's epsilon: noise of scale ``1/epsilon``.
    threshold : int
        The public integer threshold ``T`` (the object's ``threshold``).

    Returns
    -------
    masks : numpy.ndarray of int64, shape (2**(D-1),)
        Every output, as a bit mask of the positions ``0 .. D-2`` that seal
        (position ``D-1`` always does).
    logp : numpy.ndarray of float64
        ``ln P(output)``; ``logsumexp(logp) == 0`` up to rounding.
    """
    counts = [int(c) for c in counts]
    d = len(counts)
    if not 1 <= d <= 16:
        raise ValueError("the exact law is enumerated for 1 <= D <= 16 positions")
    f = _segment_factors(np.array(counts, dtype=float), float(epsilon), int(threshold))
    masks = np.arange(1 << (d - 1), dtype=np.int64)
    logp = np.empty(masks.size)
    for i, mask in enumerate(masks.tolist()):
        start, total = 0, 0.0
        for e in range(d):
            if e == d - 1 or mask >> e & 1:
                total += f[start, e]
                start = e + 1
        logp[i] = total
    return masks, logp


def fig1_max_loss(counts_x, counts_y, epsilon, threshold):
    """``max_out |ln P(out | x) / P(out | y)|`` over all outputs of Fig. 1 (exhaustive).

    Returns ``(loss, mask)``: the exact privacy loss of the pair and an
    output attaining it.
    """
    masks, lx = fig1_law(counts_x, epsilon, threshold)
    _, ly = fig1_law(counts_y, epsilon, threshold)
    diff = np.abs(lx - ly)
    i = int(np.argmax(diff))
    return float(diff[i]), int(masks[i])


def fig1_outputs_as_features(masks, d):
    """Output masks as the harness's partition features: seal indicators of positions 0..D-2."""
    return ((masks[:, None] >> np.arange(d - 1)) & 1).astype(float)


# ---------------------------------------------------------------- counters
def _offset_digits(t, k):
    m = (k - 1) // 2
    digits = []
    while t:
        d = (t + m) % k - m
        digits.append(d)
        t = (t - d) // k
    return digits


def counter_terms(k, horizon):
    """The noise terms each release of a tree counter adds, and the positions each covers.

    Parameters
    ----------
    k : int
        2 (binary tree, APT section 3.1) or odd ``k >= 3`` (Algorithm 2,
        offset digits in ``[-(k-1)/2, (k-1)/2]``).
    horizon : int
        T.

    Returns
    -------
    used : list of list of hashable
        ``used[t-1]``: the ids of the terms in the release at time t.
    nodes : dict
        Term id -> ``(sign, first, last)``: the term is the noise of the
        node holding the positions ``first .. last`` (1-based), which the
        release adds (sign +1) or subtracts (-1, Algorithm 2's subtraction).

    Notes
    -----
    Binary: bit l of t set uses the node of the 2^l positions ending at
    ``(t >> l) << l``.  Offset digits: digit ``d_l`` of t uses ``|d_l|``
    terms ``(l, R, sign, j)``, R the value of the digits above l: the blocks
    of ``k^l`` positions right after R (d > 0) or right before it (d < 0).
    ``csrc/counters.c`` keeps a term exactly while its id is unchanged
    (APT Proposition 4.10); :func:`counter_noise_covariance` is checked
    against the implementation by the privacy tests.
    """
    used, nodes = [], {}
    for t in range(1, horizon + 1):
        ids = []
        if k == 2:
            for lvl in range(t.bit_length()):
                if t >> lvl & 1:
                    end = (t >> lvl) << lvl
                    key = (lvl, end)
                    nodes[key] = (1, end - (1 << lvl) + 1, end)
                    ids.append(key)
        else:
            digits = _offset_digits(t, k)
            for lvl, d in enumerate(digits):
                above = t - sum(di * k**i for i, di in enumerate(digits[:lvl + 1]))
                sign = 1 if d > 0 else -1
                for j in range(abs(d)):
                    key = (lvl, above, sign, j)
                    size = k**lvl
                    first = above + j * size + 1 if sign > 0 else above - (j + 1) * size + 1
                    nodes[key] = (sign, first, first + size - 1)
                    ids.append(key)
        used.append(ids)
    return used, nodes


def counter_noise_covariance(k, horizon, variance):
    """Exact covariance of the releases' noise: ``variance`` times shared terms (T x T).

    Every term enters a release with coefficient +1 (the C state adds the
    terms in use; the noise is symmetric, so Algorithm 2's signs do not
    change the law).
    """
    used, _ = counter_terms(k, horizon)
    sets = [set(u) for u in used]
    cov = np.array([[len(a & b) for b in sets] for a in sets], dtype=float)
    return variance * cov


def counter_max_loss(k, horizon, scale):
    """Exact privacy loss bound of one item, from the term model.

    One item at position i moves the true sum of every node holding i by one;
    shifting those terms' noise by ``-sign`` maps the releases of one stream
    onto the other's, so the loss is at most ``(#terms whose node holds i) /
    scale``; the maximum over i is returned together with a check that the
    term model reproduces every prefix sum (``sum_terms sign * node sum ==
    prefix``) on a random stream.
    """
    used, nodes = counter_terms(k, horizon)
    rng = np.random.default_rng(0)
    xs = rng.integers(0, 3, horizon)
    cum = np.concatenate([[0], np.cumsum(xs)])
    for t, ids in enumerate(used, start=1):
        total = sum(sgn * (cum[last] - cum[first - 1]) for sgn, first, last in map(nodes.get, ids))
        if total != cum[t]:
            raise AssertionError(f"term model does not give the prefix sum at t = {t}")
    worst = max(sum(1 for sgn, first, last in nodes.values() if first <= i <= last)
                for i in range(1, horizon + 1))
    return worst / float(scale)


