"""Exact privacy oracles (issue #12): where a closed form exists, compute the loss.

* Fig. 1 on small domains: the exact law of the segment ends (dynamic
  programming over segments with the exact discrete Laplace) gives the
  exhaustive privacy loss ``max_out |ln P(out|x) / P(out|x')|`` of every
  pair of a search over tiny domains -- it must be at most epsilon, and the
  search must find pairs within 1e-5 of it (the oracle can see a violation);
  the implementation (offline, online, sparse path, exact fallback) must
  follow that law (chi-square, alpha = 1e-6).
* The discrete Laplace: exact loss of a unit shift, and the sampler's fit.
* The tree counters: the term model's loss is exactly epsilon, and the
  releases' noise covariance matches the model's (z-tests, Bonferroni,
  alpha = 1e-6).
"""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import pydp_synopsis as ps
from pydp_synopsis import _exact
from pydp_synopsis.partition import OnlinePartition, fig1_threshold, private_partition

from privacy.oracles import (counter_max_loss, counter_noise_covariance, counter_terms,
                             discrete_laplace_log_pmf, discrete_laplace_max_loss, fig1_law,
                             fig1_max_loss)
from stattests import ALPHA, assert_gof


# ------------------------------------------------------------------ Fig. 1
def _tiny_pairs(seed, count):
    """Random neighbours over 2-6 positions: counts in [0, T + 1], one item more."""
    gen = np.random.default_rng(seed)
    for _ in range(count):
        d = int(gen.integers(2, 7))
        eps = Fraction(int(gen.choice([1, 2, 3, 4])), int(gen.choice([1, 2])))
        beta = float(gen.choice([0.05, 0.5]))
        factor = float(gen.choice([0.7, 1.0, 3.0]))
        t = fig1_threshold(d, eps, beta, factor)
        x = gen.integers(0, t + 2, d)
        if gen.random() < 0.5:
            x[gen.random(d) < 0.5] = 0
        y = x.copy()
        y[gen.integers(0, d)] += 1
        yield x.tolist(), y.tolist(), eps, t


@pytest.mark.slow
def test_fig1_exact_loss_never_exceeds_epsilon_and_is_attained():
    """Exhaustive over outputs, random over tiny domains (and every single item
    added to every position of D = 3 streams with counts <= T + 1)."""
    worst = 0.0
    for x, y, eps, t in _tiny_pairs(1, 120):
        loss, _ = fig1_max_loss(x, y, eps, t)
        assert loss <= float(eps) * (1 + 1e-9), (x, y, eps, t, loss)
        worst = max(worst, loss / float(eps))
    eps, t = Fraction(2), fig1_threshold(3, Fraction(2), 0.5, 3.0)
    for x in itertools.product(range(t + 2), repeat=3):
        for p in range(3):
            y = list(x)
            y[p] += 1
            loss, _ = fig1_max_loss(x, y, eps, t)
            assert loss <= float(eps) * (1 + 1e-9), (x, y, loss)
            worst = max(worst, loss / float(eps))
    assert worst > 1 - 1e-5          # Fig. 1 is tight: the oracle sees losses at epsilon


def test_fig1_exact_oracle_sees_a_broken_law():
    """The same check on the law of a broken partition (noise for 1.5 epsilon, or a
    threshold without noise) reports a loss above epsilon."""
    x, y, eps, t = [3, 0, 0, 0, 0, 0], [4, 0, 0, 0, 0, 0], 3.0, 3
    assert fig1_max_loss(x, y, 1.5 * eps, t)[0] > 1.3 * eps
    # items counted twice (sensitivity 2 under noise for 1)
    assert fig1_max_loss([6, 0, 0, 0], [8, 0, 0, 0], eps, t)[0] > 1.3 * eps


def test_fig1_law_is_a_distribution_and_matches_brute_force():
    """Sum to one; for D = 3 the DP equals a direct sum over the noises."""
    eps, t, x = 1.0, 2, [1, 0, 2]
    masks, logp = fig1_law(x, eps, t)
    assert math.isclose(float(np.exp(logp).sum()), 1.0, rel_tol=1e-12)
    z = np.arange(-60, 61)
    pz = np.exp(discrete_laplace_log_pmf(z, eps))
    direct = np.zeros(4)
    # segment noise Z1 at the start; nu_0, nu_1 per position; on a seal a fresh Z
    tail = lambda m: float(pz[z >= m].sum())            # P(nu >= m)  # noqa: E731
    for i0, z1 in enumerate(z):
        seal0 = tail(t + z1 - x[0] + 1)
        # no seal at 0, then at 1 with the same threshold
        seal1 = tail(t + z1 - x[0] - x[1] + 1)
        direct[0] += pz[i0] * (1 - seal0) * (1 - seal1)          # no seal
        direct[2] += pz[i0] * (1 - seal0) * seal1                # seal at 1 only
        for i1, z2 in enumerate(z):                              # seal at 0, new Z2
            s1 = tail(t + z2 - x[1] + 1)
            direct[1] += pz[i0] * seal0 * pz[i1] * (1 - s1)
            direct[3] += pz[i0] * seal0 * pz[i1] * s1
    np.testing.assert_allclose(np.exp(logp), direct, rtol=1e-9)


def _counts_of(ends_list, d):
    masks = [sum(1 << int(e) for e in ends[:-1]) for ends in ends_list]
    return np.bincount(masks, minlength=1 << (d - 1))


LAW_CASES = [([3, 0, 0, 0, 0, 0], 3, 0.5), ([0, 2, 0, 1, 0, 1], 2, 0.5)]


@pytest.mark.parametrize("counts,eps,beta", LAW_CASES)
@pytest.mark.parametrize("path", ["offline", "online", "sparse", "exact fallback"])
@pytest.mark.slow
def test_partition_follows_the_exact_law(counts, eps, beta, path):
    d, runs = len(counts), 6000
    t = fig1_threshold(d, Fraction(eps), beta, 3.0)
    masks, logp = fig1_law(counts, eps, t)
    rng = ps.Rng(seed=f"law|{counts}|{path}".encode())
    values = np.repeat(np.arange(d), counts)
    ends = []
    if path == "exact fallback":
        runs = 2000                              # the decimal path is slow
        with _exact.forcing_exact():
            for _ in range(runs):
                ends.append(private_partition(values, domain=(0, d - 1), epsilon=eps, beta=beta,
                                              rng=rng).end_offsets.tolist())
    for _ in range(runs if path != "exact fallback" else 0):
        if path == "offline":
            part = private_partition(values, domain=(0, d - 1), epsilon=eps, beta=beta, rng=rng)
            assert part.threshold == t
            ends.append(part.end_offsets.tolist())
        else:
            op = OnlinePartition(size=d, epsilon=eps, beta=beta, rng=rng)
            if path == "online":
                op.feed(counts)
            else:
                nz = np.flatnonzero(counts)
                op.feed_sparse(nz, np.asarray(counts)[nz], d)
            ends.append(op.segments.tolist())
    assert_gof(_counts_of(ends, d), np.exp(logp))


# -------------------------------------------------------- discrete Laplace
@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(7, 3), 1])
def test_discrete_laplace_exact_loss_and_fit(scale):
    assert math.isclose(discrete_laplace_max_loss(scale), float(1 / Fraction(scale)),
                        rel_tol=1e-12)
    eps = float(1 / ps.exact_scale(scale))
    z = ps.discrete_laplace(scale, size=200_000, rng=ps.Rng(seed=9))
    support = np.arange(-40, 41)
    counts = np.array([(z == v).sum() for v in support] + [(np.abs(z) > 40).sum()])
    assert_gof(counts, np.exp(discrete_laplace_log_pmf(support, eps)))


# ------------------------------------------------------------------ counters
COUNTERS = [("binary", 2, 7), ("binary", 2, 10), ("kary", 3, 13), ("kary", 5, 12), ("kary", 3, 4)]


@pytest.mark.parametrize("kind,k,horizon", COUNTERS)
def test_counter_term_model_loss_is_epsilon(kind, k, horizon):
    """One item moves at most h terms: the loss of the term model is exactly epsilon."""
    eps = Fraction(3, 2)
    c = (ps.BinaryTreeCounter(horizon=horizon, epsilon=eps) if kind == "binary"
         else ps.KaryTreeCounter(horizon=horizon, epsilon=eps, k=k))
    assert math.isclose(counter_max_loss(k, horizon, c.noise_scale), float(eps), rel_tol=1e-12)
    used, _ = counter_terms(k, horizon)
    assert max(len(u) for u in used) <= c.height * (1 if k == 2 else (k - 1) // 2)


@pytest.mark.parametrize("kind,k,horizon", COUNTERS[:3])
@pytest.mark.slow
def test_counter_noise_covariance_matches_the_model(kind, k, horizon):
    """Sample covariance of the releases on a zero stream vs the exact model: every
    entry z-tested (variance of the product estimated), Bonferroni over entries."""
    runs, eps = 20000, Fraction(1)
    rng = ps.Rng(seed=f"cov|{kind}|{horizon}".encode())
    zero = np.zeros(horizon, dtype=np.int64)
    make = (lambda: ps.BinaryTreeCounter(horizon=horizon, epsilon=eps, rng=rng)) if kind == "binary" \
        else (lambda: ps.KaryTreeCounter(horizon=horizon, epsilon=eps, k=k, rng=rng))
    first = make()
    out = np.vstack([first.update_many(zero)] + [make().update_many(zero) for _ in range(runs - 1)])
    model = counter_noise_covariance(k, horizon, ps.discrete_laplace_variance(first.noise_scale))
    prods = out[:, :, None].astype(float) * out[:, None, :]
    est = prods.mean(axis=0)
    se = prods.std(axis=0, ddof=1) / math.sqrt(runs)
    iu = np.triu_indices(horizon)
    z = (est - model)[iu] / se[iu]
    crit = stats.norm.isf(ALPHA / (2 * iu[0].size))
    assert np.all(np.abs(z) < crit), np.abs(z).max()
    # the model is not trivially satisfied: independent releases would be far off
    off = model - np.diag(np.diag(model))
    assert np.abs(off).max() > 0
    assert np.abs((est - np.diag(np.diag(model)))[iu] / se[iu]).max() > crit
