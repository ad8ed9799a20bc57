"""Statistical assertions shared by the tests.

Every test uses the fixed significance level ALPHA = 1e-6, so a correct
implementation fails a given check with probability at most 1e-6: the
suite never flakes in practice, while a wrong distribution (a halved scale,
a biased coin) fails with near certainty at the sample sizes used.
"""
import math

import numpy as np
from scipy import stats

__all__ = ["ALPHA", "assert_gof", "clopper_pearson", "assert_dp_ratio", "dp_ratio_lower_bound",
           "assert_mean_var", "assert_binomial_at_most"]

ALPHA = 1e-6


def assert_gof(counts, probs, alpha=ALPHA, min_expected=5.0):
    """Chi-square goodness of fit of observed counts to exact probabilities.

    ``counts[i]`` observations of outcome i with probability ``probs[i]``;
    the mass ``1 - sum(probs)`` is a tail bin that must hold the remaining
    observations (``counts`` may have one extra entry for it).  Adjacent
    bins are pooled until each expects at least ``min_expected``.
    """
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    total = counts.sum()
    tail_p = max(0.0, 1.0 - probs.sum())
    if len(counts) == len(probs) + 1:
        tail_c = counts[-1]
        counts = counts[:-1]
    elif len(counts) == len(probs):
        tail_c = 0.0
    else:
        raise ValueError("counts must have len(probs) or len(probs) + 1 entries")
    obs, exp = [], []
    acc_o = acc_e = 0.0
    for o, p in zip(counts, probs):
        acc_o += o
        acc_e += p * total
        if acc_e >= min_expected:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    acc_o += tail_c
    acc_e += tail_p * total
    if acc_e > 0 or acc_o > 0:
        if acc_e < min_expected and obs:
            obs[-1] += acc_o
            exp[-1] += acc_e
        else:
            obs.append(acc_o)
            exp.append(acc_e)
    obs = np.array(obs)
    exp = np.array(exp)
    assert len(obs) >= 2, "too few bins for a goodness-of-fit test"
    assert np.all(exp > 0) or np.all(obs[exp == 0] == 0), "observed an impossible outcome"
    chi2 = float(np.sum((obs - exp) ** 2 / exp))
    pvalue = float(stats.chi2.sf(chi2, len(obs) - 1))
    assert pvalue > alpha, f"goodness of fit rejected: chi2={chi2:.2f}, df={len(obs) - 1}, p={pvalue:.3g}"
    return pvalue


def clopper_pearson(k, n, alpha=ALPHA):
    """Exact two-sided (1 - alpha) confidence interval for a binomial proportion."""
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def dp_ratio_lower_bound(k1, n1, k0, n0, alpha=ALPHA):
    """A (1 - alpha) lower confidence bound on max(p1/p0, p0/p1) (union of two CP intervals)."""
    lo1, hi1 = clopper_pearson(k1, n1, alpha / 2)
    lo0, hi0 = clopper_pearson(k0, n0, alpha / 2)
    r1 = lo1 / hi0 if hi0 > 0 else math.inf
    r0 = lo0 / hi1 if hi1 > 0 else math.inf
    return max(r1, r0)


def assert_dp_ratio(k1, n1, k0, n0, epsilon, alpha=ALPHA):
    """Fail if the data show P[M(x) in S] / P[M(x') in S] > e^epsilon (either way).

    ``k1`` of ``n1`` runs on x and ``k0`` of ``n0`` runs on x' fell in S.
    Returns the lower confidence bound of the ratio.
    """
    bound = dp_ratio_lower_bound(k1, n1, k0, n0, alpha)
    assert bound <= math.exp(float(epsilon)), (
        f"privacy violated: ratio lower bound {bound:.4f} > e^eps = {math.exp(float(epsilon)):.4f} "
        f"({k1}/{n1} vs {k0}/{n0})"
    )
    return bound


def assert_mean_var(samples, mean, var, alpha=ALPHA):
    """Two-sided tests that the sample mean is ``mean`` and the sample variance ``var``.

    The mean uses a z-test with the known variance; the variance uses the
    normal approximation of the sample variance with the empirical fourth
    moment (adequate for the large samples used here).
    """
    x = np.asarray(samples, dtype=float)
    n = x.size
    z_crit = float(stats.norm.isf(alpha / 4))
    z_mean = (x.mean() - mean) / math.sqrt(var / n)
    assert abs(z_mean) < z_crit, f"mean {x.mean():.6g} differs from {mean:.6g} (z={z_mean:.2f})"
    centred = x - mean
    m4 = float(np.mean(centred**4))
    sample_var = float(np.mean(centred**2))
    se = math.sqrt(max(m4 - var**2, 1e-300) / n)
    z_var = (sample_var - var) / se
    assert abs(z_var) < z_crit, f"variance {sample_var:.6g} differs from {var:.6g} (z={z_var:.2f})"


def assert_binomial_at_most(k, n, p, alpha=ALPHA):
    """Fail if k successes in n trials show the success probability exceeds p."""
    lo, _ = clopper_pearson(k, n, 2 * alpha)
    assert lo <= p, f"{k}/{n} successes: probability lower bound {lo:.4g} exceeds {p:.4g}"
