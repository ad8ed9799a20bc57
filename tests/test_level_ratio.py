"""Unequal level budgets of the interval tree (``level_ratio``, issue #15).

* exact: the scales spend exactly ``epsilon_tree``; the C kernels (weighted
  least squares, the answers' noise weights, the largest coefficient) equal
  a dense weighted least-squares solve on random small trees; unit weights
  give the equal-split kernels' results bit for bit;
* statistical (alpha = 1e-6): each level's node noise is the discrete
  Laplace of its scale; the answers' standardised noise has mean 0 and
  variance 1 (the std is exact), and the per-query intervals cover;
* privacy: the exact loss of neighbouring trees is ``epsilon_tree`` and is
  attained;
* bad input, defaults, save/load and crafted records.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist, trees
from pydp_synopsis.errors import FormatError, ParameterError
from pydp_synopsis.intervals import DEFAULT_LEVEL_RATIO
from pydp_synopsis.partition import Partition

from privacy.oracles import discrete_laplace_log_pmf
from stattests import ALPHA, assert_binomial_at_most, assert_mean_var


class _Weights:
    """Arbitrary per-level factors for the kernels (trees.LevelWeights takes scales)."""

    def __init__(self, rho, fac):
        self.rho = np.asarray(rho, dtype=np.float64)
        self.fac = np.asarray(fac, dtype=np.float64)
        self.kappa = float(np.max(self.fac ** 2 / self.rho))


def _dense(m, f):
    """The tree's node-by-leaf incidence and each node's level (tree.c's layout)."""
    levels = trees.tree_shape(m, f)[0]
    rows, lev, span = [], [], 1
    for l in range(levels):
        for u in range(-(-m // span)):
            r = np.zeros(m)
            r[u * span:min((u + 1) * span, m)] = 1.0
            rows.append(r)
            lev.append(l)
        span *= f
    return np.array(rows), np.array(lev)


def _gls(a, lev, rho):
    """Leaf estimates as a linear map of the nodes: (A' W A)^-1 A' W, W = 1/rho."""
    w = np.diag(1.0 / rho[lev])
    return np.linalg.solve(a.T @ w @ a, a.T @ w)


def _leaf_coefficients(m, width, lo, hi):
    """Per segment (all of ``width`` values), the fraction of it inside [lo, hi]."""
    a = np.arange(m) * width
    b = a + width - 1
    return np.clip(np.minimum(b, hi) - np.maximum(a, lo) + 1, 0, None) / width


def _raw_weights(a, lev, c):
    """The raw tree's answer weights: the minimal cover of whole leaves, plus fractions."""
    w = np.zeros(a.shape[0])
    whole = np.flatnonzero(c == 1)
    if whole.size:
        inside = np.zeros(a.shape[1])
        inside[whole[0]:whole[-1] + 1] = 1
        ok = [v for v in range(a.shape[0]) if np.all(inside[a[v] > 0] == 1)]
        for v in ok:
            parent = [p for p in ok if lev[p] == lev[v] + 1 and np.all(a[p][a[v] > 0] == 1)]
            w[v] += 0 if parent else 1
    for s in np.flatnonzero((c > 0) & (c < 1)):
        w[np.flatnonzero((lev == 0) & (a[:, s] == 1))[0]] += c[s]
    return w


# ------------------------------------------------------------------ exact
@pytest.mark.parametrize("levels,ratio", [(1, 3), (3, 2), (5, Fraction(7, 4)), (12, 1),
                                          (16, Fraction(3, 2))])
def test_level_scales_spend_exactly_epsilon(levels, ratio):
    eps = Fraction(3, 7)
    scales = trees.level_scales(levels, eps, Fraction(ratio))
    assert sum(1 / b for b in scales) == eps
    assert all(b == scales[-1] for b in scales[1:])       # the upper levels share equally
    assert scales[-1] / scales[0] == (ratio if levels > 1 else 1)   # leaves: ratio times that
    if ratio == 1:
        assert scales == [trees.noise_scale(levels, eps)] * levels


def test_kernels_equal_a_dense_weighted_least_squares():
    gen = np.random.default_rng(1)
    for _ in range(60):
        m, f = int(gen.integers(1, 50)), int(gen.integers(2, 6))
        a, lev = _dense(m, f)
        w = _Weights(gen.uniform(0.2, 3.0, lev.max() + 1), gen.uniform(0.2, 1.0, lev.max() + 1))
        k = _gls(a, lev, w.rho)
        y = gen.integers(-50, 200, a.shape[0]).astype(np.int64)
        np.testing.assert_allclose(trees.consistent_leaves(y, m, f, w), k @ y,
                                   rtol=1e-9, atol=1e-9)
        # the largest |coefficient| * fac over nodes and segment ranges
        g = np.vstack([np.zeros(a.shape[0]), np.cumsum(k, 0)])
        want = np.max((g.max(0) - g.min(0)) * w.fac[lev])
        got = trees.coefficient_bound(m, f, weights=w)
        assert want <= got <= want * (1 + 1e-8) + 1e-12 or got == pytest.approx(
            math.sqrt(w.kappa * trees.cover_terms(lev.max() + 1, f, w.rho)))
        # the noise weights of "uniform" answers over segments of 3 values
        ends = (np.arange(m, dtype=np.uint64) + 1) * 3 - 1
        q = gen.integers(0, 3 * m, (2, 12))
        lo, hi = q.min(0).astype(np.uint64), q.max(0).astype(np.uint64)
        for consistent in (True, False):
            sumsq, maxabs = trees.interval_noise(ends, lo, hi, "uniform", fanout=f,
                                                 consistent=consistent, weights=w)
            for i in range(lo.size):
                c = _leaf_coefficients(m, 3, int(lo[i]), int(hi[i]))
                wt = c @ k if consistent else _raw_weights(a, lev, c)
                assert sumsq[i, 3] == pytest.approx(np.sum(wt ** 2 * w.rho[lev]), rel=1e-9,
                                                    abs=1e-12)
                assert maxabs[i, 3] == pytest.approx(np.max(np.abs(wt) * w.fac[lev]),
                                                     rel=1e-9, abs=1e-12)


def test_unit_weights_give_the_equal_split_kernels_bit_for_bit():
    gen = np.random.default_rng(2)
    for m, f in [(1, 2), (7, 2), (100, 3), (4097, 16)]:
        levels = trees.tree_shape(m, f)[0]
        one = _Weights(np.ones(levels), np.ones(levels))
        nodes = gen.integers(-100, 1000, trees.tree_shape(m, f)[1]).astype(np.int64)
        assert np.array_equal(trees.consistent_leaves(nodes, m, f, one),
                              trees.consistent_leaves(nodes, m, f))
        ends = np.cumsum(gen.integers(1, 5, m)).astype(np.uint64) - np.uint64(1)
        q = gen.integers(0, int(ends[-1]) + 1, (2, 200))
        lo, hi = q.min(0).astype(np.uint64), q.max(0).astype(np.uint64)
        for est in trees.ESTIMATORS:
            for consistent in (True, False):
                a = trees.interval_noise(ends, lo, hi, est, fanout=f, consistent=consistent)
                b = trees.interval_noise(ends, lo, hi, est, fanout=f, consistent=consistent,
                                         weights=one)
                assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        if m > 1:
            assert trees.coefficient_bound(m, f, weights=one) == trees.coefficient_bound(m, f)


def test_synopsis_uses_the_level_scales():
    v = np.random.default_rng(3).integers(0, 10**6, 20_000)
    s = ps.IntervalSynopsis.build(v, domain=(0, 10**6), epsilon=1.0, rng=ps.Rng(seed=1),
                                  fanout=4)
    assert s.level_ratio == DEFAULT_LEVEL_RATIO == Fraction(7, 4)
    levels = trees.tree_shape(len(s), 4)[0]
    assert levels >= 3
    assert s._scales == trees.level_scales(levels, s.epsilon_tree, Fraction(7, 4))
    assert s.pure_epsilon == s.epsilon == s.epsilon_partition + s.epsilon_tree
    assert s.noise_scale == max(s._scales)
    # ratio 1 is release 0.1's equal split, draw for draw
    a = ps.IntervalSynopsis.build(v, domain=(0, 10**6), epsilon=1.0, rng=ps.Rng(seed=1),
                                  level_ratio=1)
    assert a.level_ratio == 1 and a._scales is None
    assert a.noise_scale == trees.noise_scale(trees.tree_shape(len(a), 16)[0], a.epsilon_tree)
    # binary, kary and delta > 0 default to the equal split
    for kw in ({"structure": "binary"}, {"structure": "kary"}, {"delta": 1e-6}):
        assert ps.IntervalSynopsis.build(v[:100], domain=(0, 10**6), epsilon=1.0,
                                         **kw).level_ratio == 1


# ------------------------------------------------------------------ statistical
def test_each_level_gets_the_discrete_laplace_of_its_scale():
    """Node noise of 40 trees over 16^3 leaves, per level: mean 0, variance Var(b_l)."""
    eps, ratio, m, f = Fraction(1, 2), Fraction(3), 16 ** 3, 16
    scales = trees.level_scales(3, eps, ratio)
    counts = np.random.default_rng(4).integers(0, 50, m)
    levels = [counts]
    for _ in range(2):
        levels.append(levels[-1].reshape(-1, f).sum(1))
    want = np.concatenate(levels)
    rng = ps.Rng(seed=5)
    noise = np.stack([trees.noisy_tree(counts, f, eps, rng, scales=scales) - want
                      for _ in range(40)])
    start = 0
    for l, b in enumerate(scales):
        part = noise[:, start:start + levels[l].size].ravel()
        start += levels[l].size
        assert_mean_var(part, 0.0, ps.discrete_laplace_variance(b), alpha=ALPHA / 3)


@pytest.mark.slow
def test_answer_noise_has_the_reported_std_and_the_intervals_cover():
    """A fixed partition, 1500 trees, one query each (answers of one tree share its
    noise): (answer - noiseless answer) / std is mean 0, variance 1, and the 90%
    intervals miss at most 10% (binomial test)."""
    m, width = 300, 10
    part = Partition(np.arange(1, m + 1, dtype=np.uint64) * width - 1, domain=(0, m * width - 1),
                     epsilon=Fraction(1), beta=0.025, threshold_factor=1)
    counts = np.random.default_rng(6).integers(0, 40, m).astype(np.int64)
    q = np.random.default_rng(7).integers(0, m * width, (2, 50))
    lo, hi = q.min(0), q.max(0)
    exact = np.concatenate(([0.0], np.cumsum(counts, dtype=np.float64)))
    noiseless = trees.interval_answers(part.end_offsets.astype(np.uint64), lo.astype(np.uint64),
                                       hi.astype(np.uint64), "uniform", 0.0, prefix=exact)
    rng = ps.Rng(seed=8)
    z, miss = [], 0
    for i in range(1500):
        s = ps.IntervalSynopsis._release_tree(part, counts, Fraction(1, 2), rng, beta=0.05,
                                              tree="hierarchical", fanout=4, consistency=True,
                                              estimator="uniform", k=19, dlt=0,
                                              ratio=Fraction(2))
        j = i % lo.size
        bars = s.confidence_intervals(lo[j:j + 1], hi[j:j + 1], 0.9)
        err = bars.answer[0] - noiseless[j]
        z.append(err / bars.std[0])
        miss += int(abs(err) > bars.noise[0])
    assert_mean_var(np.array(z), 0.0, 1.0)
    assert_binomial_at_most(miss, len(z), 0.1)


# ------------------------------------------------------------------ privacy
def test_neighbouring_trees_lose_exactly_epsilon_tree():
    """Exact: one item more moves one node per level by one; the log-likelihood
    ratio of any release is sum_l +-(1/b_l) terms, at most epsilon_tree, attained."""
    eps, m, f = Fraction(2, 3), 20, 3
    scales = trees.level_scales(trees.tree_shape(m, f)[0], eps, Fraction(5, 2))
    a, lev = _dense(m, f)
    x = np.random.default_rng(9).integers(0, 5, m)
    x2 = x.copy()
    x2[7] += 1
    y = np.rint(a @ x).astype(np.int64)
    y2 = np.rint(a @ x2).astype(np.int64)
    out = trees.noisy_tree(x, f, eps, ps.Rng(seed=10), scales=scales)
    for shift in (0, 1, -1, 5):
        o = out + shift * (y2 - y)          # outputs on either side of both means
        loss = sum(discrete_laplace_log_pmf(int(o[v] - y[v]), 1 / float(scales[lev[v]]))
                   - discrete_laplace_log_pmf(int(o[v] - y2[v]), 1 / float(scales[lev[v]]))
                   for v in range(out.size))
        assert abs(loss) <= float(eps) + 1e-9
    o = np.maximum(y, y2) + 3               # every moved node above both means
    loss = sum(discrete_laplace_log_pmf(int(o[v] - y[v]), 1 / float(scales[lev[v]]))
               - discrete_laplace_log_pmf(int(o[v] - y2[v]), 1 / float(scales[lev[v]]))
               for v in range(out.size))
    assert loss == pytest.approx(-float(eps), abs=1e-9)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kw,exc,word", [
    ({"level_ratio": 0.5}, ParameterError, r"level_ratio must be in \[1, 64\]"),
    ({"level_ratio": 65}, ParameterError, "level_ratio"),
    ({"level_ratio": float("nan")}, ParameterError, "level_ratio"),
    ({"level_ratio": 1.0001}, ParameterError, "3 places"),
    ({"level_ratio": "2"}, TypeError, "level_ratio must be a real number"),
    ({"level_ratio": True}, TypeError, "level_ratio"),
    ({"level_ratio": 2, "structure": "kary"}, ParameterError, "kary"),
    ({"level_ratio": 2, "delta": 1e-6}, ParameterError, "delta"),
    ({"level_ratio": 64, "structure": "binary", "domain": (0, 2**64 - 1), "epsilon": 1e-13,
      "partition_share": 0.5}, ParameterError, "too large for this domain"),
])
def test_bad_level_ratio_is_refused_before_anything_is_spent(kw, exc, word):
    budget = ps.Budget(10)
    args = {"domain": (0, 1000), "epsilon": 1.0}
    args.update(kw)
    with pytest.raises(exc, match=word):
        ps.IntervalSynopsis.build([1, 2, 3], budget=budget, **args)
    assert budget.spent == 0


# ------------------------------------------------------------------ save / load
def test_save_load_and_crafted_records(tmp_path):
    v = np.random.default_rng(11).integers(0, 10**6, 5000)
    for kw in ({}, {"partition": "dnrr"}, {"level_ratio": 3, "consistency": False}):
        s = ps.IntervalSynopsis.build(v, domain=(0, 10**6), epsilon=1.0, rng=ps.Rng(seed=12),
                                      fanout=4, **kw)
        s.save(tmp_path / "s.pds")
        back = ps.load(tmp_path / "s.pds")
        q = np.random.default_rng(13).integers(0, 10**6, (2, 50))
        lo, hi = q.min(0), q.max(0)
        assert back.level_ratio == s.level_ratio != 1
        assert np.array_equal(back.count_many(lo, hi), s.count_many(lo, hi))
        assert np.array_equal(back.count_many(lo, hi, return_std=True)[1],
                              s.count_many(lo, hi, return_std=True)[1])
        assert back.error_bound(0.9) == s.error_bound(0.9)
    kind, meta, arrays = s._to_record()[:3]
    assert meta["format"] == 4 and meta["level_ratio"] == [3, 1]
    for bad, word in [({"level_ratio": [1, 1]}, "level_ratio != 1"),
                      ({"level_ratio": [1, 2]}, "level_ratio"),
                      ({"level_ratio": ["3", 1]}, "two integers"),
                      ({"level_ratio": [3]}, "invalid"),
                      ({"partition": "other"}, "names its partition"),
                      ({"tree": "kary", "fanout": 16}, "kary"),
                      ({"pure_epsilon": [1, 2]}, "pure_epsilon")]:
        persist.write_record(tmp_path / "bad.pds", kind, dict(meta, **bad), arrays)
        with pytest.raises(FormatError, match=word):
            ps.load(tmp_path / "bad.pds")
    bare = {k: v for k, v in meta.items() if k != "level_ratio"}
    persist.write_record(tmp_path / "bad.pds", kind, bare, arrays)
    with pytest.raises(FormatError, match="level_ratio"):
        ps.load(tmp_path / "bad.pds")


def test_noise_scales_are_public_and_spend_the_tree_budget():
    v = np.random.default_rng(14).integers(0, 10**6, 5000)
    for kw in ({}, {"level_ratio": 1}, {"structure": "kary"}, {"structure": "binary"}):
        s = ps.IntervalSynopsis.build(v, domain=(0, 10**6), epsilon=0.8, rng=ps.Rng(seed=15),
                                      **kw)
        b = s.noise_scales
        assert max(b) == s.noise_scale
        if s.tree == "kary":
            assert len(b) == 1
        else:
            assert len(b) == trees.tree_shape(len(s), s.fanout)[0]
            assert s.epsilon_partition + sum(1 / x for x in b) == s.pure_epsilon == s.epsilon


def test_level_kernels_refuse_bad_arguments():
    from pydp_synopsis._core import f64, ffi, i64, lib, u64

    m, f = 40, 4
    levels, n = trees.tree_shape(m, f)
    counts = np.ones(m, dtype=np.int64)
    nodes = np.zeros(n, dtype=np.int64)
    ok_t = ffi.new("uint64_t[]", [1] * levels)
    ok_s = ffi.new("uint64_t[]", [2] * levels)
    rng = ps.Rng(seed=16)
    with rng.native() as p:
        assert lib.pds_tree_build_levels(p, i64(counts), m, f, ok_t, ok_s, levels, i64(nodes),
                                         n) == lib.PDS_OK
        for t, s, nl, nn in [(ffi.NULL, ok_s, levels, n), (ok_t, ffi.NULL, levels, n),
                             (ok_t, ok_s, levels - 1, n), (ok_t, ok_s, levels, n - 1),
                             (ffi.new("uint64_t[]", [0] * levels), ok_s, levels, n),
                             (ffi.new("uint64_t[]", [1 << 62] * levels), ok_s, levels, n)]:
            assert lib.pds_tree_build_levels(p, i64(counts), m, f, t, s, nl, i64(nodes),
                                             nn) == lib.PDS_EINVAL
        bad = counts.copy()
        bad[3] = -1
        assert lib.pds_tree_build_levels(p, i64(bad), m, f, ok_t, ok_s, levels, i64(nodes),
                                         n) == lib.PDS_EINVAL
    leaf = np.zeros(m)
    out = ffi.new("double *")
    ends = (np.arange(m, dtype=np.uint64) + 1) * 3 - 1
    lo = hi = np.zeros(1, dtype=np.uint64)
    sumsq, maxabs = np.zeros(4), np.zeros(4)
    good = np.ones(levels)
    for rho, nl in [(np.zeros(levels), levels), (np.full(levels, np.nan), levels),
                    (np.full(levels, -1.0), levels), (good, levels + 1), (np.full(levels, np.inf), levels)]:
        assert lib.pds_tree_consistent_leaves_levels(i64(nodes), m, f, f64(rho), nl,
                                                     f64(leaf)) == lib.PDS_EINVAL
        assert lib.pds_tree_consistent_max_coef_levels(m, f, f64(rho), f64(good), nl, 10**8,
                                                       out) == lib.PDS_EINVAL
        assert lib.pds_tree_consistent_max_coef_levels(m, f, f64(good), f64(rho), nl, 10**8,
                                                       out) == lib.PDS_EINVAL
        for consistent in (0, 1):
            assert lib.pds_interval_var_tree_levels(
                m, f, consistent, f64(rho), f64(good), nl, u64(ends), u64(lo), u64(hi), u64(lo),
                u64(lo), 1, 0, 0, f64(sumsq), f64(maxabs)) == lib.PDS_EINVAL
    assert lib.pds_tree_consistent_leaves_levels(i64(nodes), m, f, ffi.NULL, levels,
                                                 f64(leaf)) == lib.PDS_EINVAL
    assert lib.pds_tree_consistent_max_coef_levels(m, f, ffi.NULL, f64(good), levels, 10**8,
                                                   out) == lib.PDS_EINVAL
    assert lib.pds_interval_var_tree_levels(m, f, 2, f64(good), f64(good), levels, u64(ends),
                                            u64(lo), u64(hi), u64(lo), u64(lo), 1, 0, 0,
                                            f64(sumsq), f64(maxabs)) == lib.PDS_EINVAL
    assert lib.pds_interval_var_tree_levels(m, f, 1, f64(good), f64(good), levels, u64(ends),
                                            u64(lo), u64(hi), u64(lo), u64(lo), 1, 0, 0,
                                            f64(sumsq), f64(maxabs)) == lib.PDS_OK
