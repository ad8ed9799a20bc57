"""Per-query error bars (issue #14, parts 3 and 4): exact noise std, bias bounds, intervals.

The noise weights the C kernels compute are checked exactly (rtol 1e-12)
against explicit weight vectors built here for small trees and grids: the
estimator's leaf coefficients written out from its definition, the raw
tree's minimal cover, Hay et al.'s least squares as ``A (A^T A)^-1 c``, the
k-ary counter's noise terms by replaying Algorithm 2, and the grid's and
multi-tree's linear maps by probing their answer kernels with unit counts.
"""
import math
import pathlib
from fractions import Fraction

import numpy as np
import pytest
from scipy import linalg

import pydp_synopsis as ps
from pydp_synopsis import trees
from pydp_synopsis.errorbars import noise_std
from pydp_synopsis.rectangles import options
from pydp_synopsis.rectangles.axes import Axes, Cells
from pydp_synopsis.rectangles.grid import AdaptiveGrid, Layout, coarse_geometry
from pydp_synopsis.rectangles.multitree import MultiTree
from pydp_synopsis.tails import laplace_sum_tail, laplace_weighted_tail
from stattests import ALPHA, assert_mean_var, clopper_pearson

RTOL = 1e-12
DATA = np.random.default_rng(20240614)    # test data only; releases draw from ps.Rng


# ------------------------------------------------------------ brute force
def _tree_rows(m, f):
    levels, _ = trees.tree_shape(m, f)
    return [(lv, a, min(a + f**lv, m)) for lv in range(levels) for a in range(0, m, f**lv)]


def _obs_matrix(m, f):
    rows = _tree_rows(m, f)
    a = np.zeros((len(rows), m))
    for i, (_, s, e) in enumerate(rows):
        a[i, s:e] = 1.0
    return a


class _LeastSquares:
    """``A (A^T A)^-1 c``: the least-squares estimate's weights on the observations
    (Cholesky once, one step of iterative refinement per c: exact to rounding)."""

    def __init__(self, a):
        self.a, self.ata = a, a.T @ a
        self.chol = linalg.cho_factor(self.ata)

    def weights(self, c):
        x = linalg.cho_solve(self.chol, c)
        x += linalg.cho_solve(self.chol, c - self.ata @ x)
        return self.a @ x


def _leaf_parts(ends, lo, hi, estimator, corner):
    """(whole, frac): segments counted whole and the fractional coefficients of the
    segment estimates, written out from the estimators' definitions."""
    ends = [int(e) for e in ends]
    first = [0] + [e + 1 for e in ends[:-1]]
    k, r = int(np.searchsorted(ends, lo)), int(np.searchsorted(ends, hi))
    whole, frac = np.zeros(len(ends)), np.zeros(len(ends))

    def part(p, x, y, theta):
        fs, e = first[p], ends[p]
        if x == fs and y == e:
            return 1.0, 0.0
        if estimator == "cover":
            return 1.0, 0.0
        if estimator == "uniform":
            return 0.0, (y - x + 1) / (e - fs + 1)
        if estimator == "seal":
            return (1.0 if y == e else 0.0), 0.0
        if y == e:                                   # seal_uniform
            return 1.0, -theta * (x - fs) / (e - fs)
        return 0.0, theta * (y - x + 1) / (e - fs)

    if k == r:
        whole[k], frac[k] = part(k, lo, hi, corner & 1)
        return whole, frac
    whole[k], frac[k] = part(k, lo, ends[k], corner & 1)
    whole[r], frac[r] = part(r, first[r], hi, (corner >> 1) & 1)
    whole[k + 1:r] = 1.0
    return whole, frac


def _min_cover(m, f, a, b):
    """The stored nodes inside [a, b) whose parent is not (rows of _tree_rows)."""
    rows = _tree_rows(m, f)
    top = max(r[0] for r in rows)

    def inside(lv, u):
        return u * f**lv >= a and min((u + 1) * f**lv, m) <= b

    return [i for i, (lv, s, _) in enumerate(rows)
            if inside(lv, s // f**lv) and not (lv < top and inside(lv + 1, s // f**(lv + 1)))]


def _raw_weights(ends, lo, hi, estimator, corner, f):
    m = len(ends)
    whole, frac = _leaf_parts(ends, lo, hi, estimator, corner)
    w = np.zeros(len(_tree_rows(m, f)))
    idx = np.flatnonzero(whole)
    if idx.size:
        w[_min_cover(m, f, idx[0], idx[-1] + 1)] = 1.0
    w[:m] += frac                                    # leaves are the first m rows
    return w


def _kary_incidence(m, k):
    """N[t, d] = 1 if draw d is in the noise of release t (t = 0..m): Algorithm 2 replayed."""
    half, h = (k - 1) // 2, 1
    while k**h < 2 * m:
        h += 1
    digits, slots, draws, rows = [0] * (h + 1), [[None] * half for _ in range(h + 1)], 0, [set()]
    for _ in range(m):
        lv = 0
        while digits[lv] == half:                    # carry: every term of the level redrawn
            for j in range(half):
                slots[lv][j] = draws
                draws += 1
            digits[lv] = -half
            lv += 1
        d = digits[lv]
        if d >= 0:
            slots[lv][d] = draws
            draws += 1
        else:
            slots[lv][-d - 1] = None
        digits[lv] = d + 1
        rows.append({slots[x][j] for x in range(h + 1) for j in range(abs(digits[x]))})
    out = np.zeros((m + 1, draws))
    for t, s in enumerate(rows):
        out[t, list(s)] = 1.0
    return out


def _random_segments(m, gen=DATA):
    ends = (np.cumsum(gen.integers(1, 6, m)) - 1).astype(np.uint64)
    d = int(ends[-1]) + 1
    a, b = gen.integers(0, d, 40), gen.integers(0, d, 40)
    return ends, np.minimum(a, b).astype(np.uint64), np.maximum(a, b).astype(np.uint64)


def _assert_weights(sumsq, maxabs, w):
    assert sumsq == pytest.approx(float(w @ w), rel=RTOL, abs=1e-14)
    assert maxabs == pytest.approx(float(np.abs(w).max(initial=0.0)), rel=RTOL, abs=1e-14)


# ------------------------------------------------------- interval kernels
@pytest.mark.parametrize("estimator", trees.ESTIMATORS)
@pytest.mark.parametrize("m,f", [(1, 2), (2, 2), (7, 2), (13, 3), (16, 4), (33, 2), (50, 16),
                                 (70, 5), (120, 16), (17, 64)])
def test_interval_noise_weights_raw_and_consistent_tree(m, f, estimator):
    ends, lo, hi = _random_segments(m)
    ls = _LeastSquares(_obs_matrix(m, f))            # Hay et al.: weights A (A^T A)^-1 c
    raw = trees.interval_noise(ends, lo, hi, estimator, fanout=f)
    cons = trees.interval_noise(ends, lo, hi, estimator, fanout=f, consistent=True)
    for q in range(lo.size):
        for j in range(4):
            _assert_weights(raw[0][q, j], raw[1][q, j],
                            _raw_weights(ends, int(lo[q]), int(hi[q]), estimator, j, f))
            c = np.add(*_leaf_parts(ends, int(lo[q]), int(hi[q]), estimator, j))
            _assert_weights(cons[0][q, j], cons[1][q, j], ls.weights(c))


@pytest.mark.parametrize("estimator", trees.ESTIMATORS)
@pytest.mark.parametrize("m,k", [(1, 3), (5, 3), (40, 3), (60, 5), (90, 19), (30, 7)])
def test_interval_noise_weights_kary_counter(m, k, estimator):
    ends, lo, hi = _random_segments(m)
    inc = _kary_incidence(m, k)
    sumsq, maxabs = trees.interval_noise(ends, lo, hi, estimator, kary=k)
    for q in range(lo.size):
        for j in range(4):
            c = np.add(*_leaf_parts(ends, int(lo[q]), int(hi[q]), estimator, j))
            beta = np.zeros(m + 1)                   # sum_p c_p (P(p + 1) - P(p))
            beta[1:] += c
            beta[:-1] -= c
            _assert_weights(sumsq[q, j], maxabs[q, j], beta @ inc)


@pytest.mark.slow
def test_consistent_weights_of_a_wide_fanout_tree():
    # 1024 children per node: the kernel walks runs of siblings, not every node
    m, f = 1500, 1024
    ends = np.arange(m, dtype=np.uint64) * np.uint64(7) + np.uint64(6)
    lo = np.array([0, 70, 7 * 999 + 3, 7 * 1023 + 1], dtype=np.uint64)
    hi = np.array([7 * m - 1, 7 * 1300 + 2, 7 * 1001, 7 * 1024 + 5], dtype=np.uint64)
    ls = _LeastSquares(_obs_matrix(m, f))
    sumsq, maxabs = trees.interval_noise(ends, lo, hi, "uniform", fanout=f, consistent=True)
    for q in range(lo.size):
        c = np.add(*_leaf_parts(ends, int(lo[q]), int(hi[q]), "uniform", 3))
        _assert_weights(sumsq[q, 3], maxabs[q, 3], ls.weights(c))


# ------------------------------------------------------ rectangle kernels
def _grid_of(s, v=None, u=None):
    """The released grid of a synopsis as an AdaptiveGrid, its counts replaced by v, u."""
    coarse, fine = s.grid_cells()
    axes = Axes(s.partitions, s.beta)
    width = coarse_geometry(axes.sizes, s.merge)[1]
    layout = Layout(s.merge, s.segments, width, coarse["fine_shape"])
    v = coarse["count"] if v is None else v
    u = fine["count"] if u is None else u
    return AdaptiveGrid(axes, layout, np.asarray(v, dtype=np.int64), np.asarray(u, dtype=np.int64),
                        s.epsilon_intermediate, s.epsilon_final, s.coarse_share), fine


def _segment_weights(part, lo, hi):
    """Fraction of every partition segment's span inside [lo, hi] (offsets)."""
    e = part.end_offsets.astype(np.float64)
    first = np.concatenate(([0.0], e[:-1] + 1))
    return np.clip((np.minimum(e, hi) - np.maximum(first, lo) + 1) / (e - first + 1), 0.0, 1.0)


@pytest.mark.parametrize("c,size,eps,n", [(2, 255, 1.0, 400), (2, 4095, 4.0, 600),
                                          (3, 63, 2.0, 300)])
def test_grid_noise_weights_and_cut_cells(c, size, eps, n):
    pts = DATA.integers(0, size + 1, (n, c))
    pts[: n // 3] //= 8                               # a dense corner: refined coarse cells
    s = ps.RectangleSynopsis.build(pts, domain=[(0, size)] * c, epsilon=eps, rng=ps.Rng(seed=c))
    grid, fine = _grid_of(s)
    nv, nu = grid.coarse_counts.size, grid.fine_counts.size
    assert nv + nu < 400 and fine["coarse"].max() > 0
    a, b = DATA.integers(0, size + 1, (2, 30, c))
    lo, hi = np.minimum(a, b).astype(np.uint64), np.maximum(a, b).astype(np.uint64)
    lo[0], hi[0] = 0, size                            # the whole domain: only inner cells
    sumsq, maxabs, cut = grid.noise_parts(lo, hi)
    # the linear map, probed with unit counts
    probes = [_grid_of(s, np.eye(nv, dtype=np.int64)[i], np.zeros(nu))[0].answer(lo, hi)
              for i in range(nv)]
    wv = np.array(probes).T
    probes = [_grid_of(s, np.zeros(nv), np.eye(nu, dtype=np.int64)[j])[0].answer(lo, hi)
              for j in range(nu)]
    wu = np.array(probes).T
    np.testing.assert_allclose(sumsq[:, 0], (wv**2).sum(axis=1), rtol=RTOL, atol=1e-14)
    np.testing.assert_allclose(sumsq[:, 1], (wu**2).sum(axis=1), rtol=RTOL, atol=1e-14)
    assert np.all(maxabs[:, 0] >= np.abs(wv).max(axis=1) * (1 - RTOL))
    assert np.all(maxabs[:, 1] >= np.abs(wu).max(axis=1) * (1 - RTOL))
    assert np.all(maxabs <= 1.0)
    # the cut fine cells, from the geometry: touched on every axis, not all inside
    for q in range(lo.shape[0]):
        touched = np.ones(nu, bool)
        whole = np.ones(nu, bool)
        for ax in range(c):
            w = _segment_weights(s.partitions[ax], float(lo[q, ax]), float(hi[q, ax]))
            some = np.concatenate(([0], np.cumsum(w > 0)))
            full = np.concatenate(([0], np.cumsum(w == 1)))
            start, end = fine["start"][:, ax], fine["end"][:, ax]
            touched &= some[end] > some[start]
            whole &= full[end] - full[start] == end - start
        is_cut = touched & ~whole
        assert cut[q, 1] == is_cut.sum()
        assert cut[q, 0] == pytest.approx(fine["count"][is_cut].sum(), abs=1e-9)
    assert cut[0, 1] == 0                            # the domain cuts no cell


def _multitree(pts, size, eps, **tuning):
    c = pts.shape[1]
    domain = [(0, size)] * c
    opts = options.resolve("default", "multitree", c, tuning)
    eps = Fraction(eps)
    eps_axis = eps * Fraction(opts.partition_share) / c
    eps_tree = eps - c * eps_axis
    rng = ps.Rng(seed=11)
    axes, segs, n_hat = Axes.release(pts, pts.astype(np.uint64), domain, eps_axis, 0.05,
                                     opts.threshold_factor, rng)
    split = MultiTree.split_budget(eps_tree, opts, c)
    return MultiTree.build(axes, Cells.of(segs), n_hat, eps_tree, split, opts, rng)


@pytest.mark.parametrize("c,estimator,tuning", [
    (1, "uniform", {}), (2, "uniform", {"fanout": 3}), (2, "cover", {"fanout": 2}),
    (3, "uniform", {"fanout": 2}), (2, "uniform", {"fanout": 2, "threshold": 6})])
def test_multitree_noise_weights(c, estimator, tuning):
    size = 255
    pts = DATA.integers(0, size + 1, (120 if c > 1 else 400, c))
    pts[:40] //= 16                                   # a dense corner, empty nodes elsewhere
    tree = _multitree(pts, size, 8.0, estimator=estimator, merge=1, **tuning)
    count, child, succ = tree.records
    assert count.size < 1500
    a, b = DATA.integers(0, size + 1, (2, 25, c))
    lo, hi = np.minimum(a, b).astype(np.uint64), np.maximum(a, b).astype(np.uint64)
    sumsq, maxabs, scales = tree.noise(lo, hi)
    assert scales == (tree.scales[1],)
    axis = tree.nodes()["axis"]
    noisy = (axis == c - 1) & ~((count == 0) & (tree.thresholds[1] > 0))
    if "threshold" in tuning:
        assert (~noisy & (axis == c - 1)).any()      # some final nodes were pruned
    w = np.zeros((lo.shape[0], count.size))
    for r in np.flatnonzero(noisy):
        unit = np.zeros(count.size, dtype=np.int64)
        unit[r] = 1
        probe = MultiTree(tree.axes, tree.shape, estimator=tree.estimator,
                          final_share=tree.final_share, prune=tree.prune,
                          thresholds=tree.thresholds, scales=tree.scales,
                          epsilon_levels=tree.epsilon_levels, records=(unit, child, succ))
        w[:, r] = probe.answer(lo, hi)
    np.testing.assert_allclose(sumsq[:, 0], (w**2).sum(axis=1), rtol=RTOL, atol=1e-14)
    np.testing.assert_allclose(maxabs[:, 0], np.abs(w).max(axis=1), rtol=RTOL, atol=1e-14)


def test_std_only_weights_are_the_unclipped_corner():
    ends, lo, hi = _random_segments(60)
    for kw in ({"fanout": 4}, {"fanout": 4, "consistent": True}, {"kary": 5}):
        full = trees.interval_noise(ends, lo, hi, "seal_uniform", **kw)
        std_only = trees.interval_noise(ends, lo, hi, "seal_uniform", corners=False, **kw)
        for got, want in zip(std_only, full):
            np.testing.assert_array_equal(got, np.repeat(want[:, 3:], 4, axis=1))


# ------------------------------------------------------------------- tails
def _dl_pmf(scale, width):
    z = np.arange(-width, width + 1)
    p = math.exp(-1.0 / scale)
    return z, (1 - p) / (1 + p) * p ** np.abs(z)


@pytest.mark.parametrize("weights,scales", [
    ([[1.0, 1.0, 1.0]], [2.0]), ([[1.0, 0.5, 0.5, 0.25]], [3.0]), ([[0.75]], [1.5]),
    ([[1.0, 1.0], [0.5, 0.5, 0.5]], [2.0, 6.0])])
def test_weighted_tail_bounds_the_exact_distribution(weights, scales):
    # the exact pmf of sum_g sum_i w_gi Z_gi on the lattice of quarter units
    width = 400
    pmf = np.array([1.0])
    for ws, b in zip(weights, scales):
        z, p1 = _dl_pmf(b, width)
        for w in ws:
            step = int(round(w * 4))
            spread = np.zeros(step * (z.size - 1) + 1)
            spread[::step] = p1
            pmf = np.convolve(pmf, spread)
    values = (np.arange(pmf.size) - (pmf.size - 1) // 2) / 4.0
    sumsq = [[sum(w * w for w in ws) for ws in weights]]
    maxabs = [[max(ws) for ws in weights]]
    for delta in (0.3, 0.05, 1e-3, 1e-6):
        t = laplace_weighted_tail(sumsq, maxabs, scales, math.log(1 / delta))[0]
        assert 0 < pmf[values >= t].sum() <= delta
        # and not absurdly loose: the true (1 - delta) quantile is at least t / 3
        assert delta > 0.05 or pmf[values >= t / 3].sum() > delta


def test_weighted_tail_of_unit_weights_is_laplace_sum_tail():
    for b in (0.05, 1.0, 3.0, 1e3, 2.0**40):
        for n in (1, 3, 40, 1e4):
            for log_inv in (0.5, math.log(20), 50.0):
                t = laplace_weighted_tail([[n]], [[1.0]], [b], log_inv)[0]
                assert t == pytest.approx(laplace_sum_tail(n, b, log_inv), rel=1e-7)
    assert laplace_weighted_tail([[0.0, 0.0]], [[0.0, 0.0]], [1.0, 2.0], 3.0)[0] == 0.0


@pytest.mark.parametrize("args,exc", [
    (([[1.0]], [[1.0, 1.0]], [1.0], 1.0), ps.ParameterError),
    (([[1.0]], [[1.0]], [0.0], 1.0), ps.ParameterError),
    (([[-1.0]], [[1.0]], [1.0], 1.0), ps.ParameterError),
    (([[np.nan]], [[1.0]], [1.0], 1.0), ps.ParameterError),
    (([[1.0]], [[1.0]], [1.0], 0.0), ps.ParameterError),
    (([[1.0] * 9], [[1.0] * 9], [1.0] * 9, 1.0), ps.ParameterError)])
def test_weighted_tail_rejects_bad_arguments(args, exc):
    with pytest.raises(exc):
        laplace_weighted_tail(*args)


# ----------------------------------------- the std, statistically (alpha 1e-6)
RUNS = 2000


def _assert_std(samples, expected, std, alpha=ALPHA):
    """Per query: mean of the answers = the noise-free answer, variance = std^2."""
    q = samples.shape[1]
    for j in range(q):
        assert_mean_var(samples[:, j], expected[j], std[j] ** 2, alpha / q)


@pytest.mark.slow
@pytest.mark.parametrize("tree,kw", [("raw", {"fanout": 2}), ("raw", {"fanout": 16}),
                                     ("consistent", {"fanout": 2}),
                                     ("consistent", {"fanout": 16}), ("kary", {"k": 19})])
@pytest.mark.parametrize("estimator", trees.ESTIMATORS)
def test_std_matches_the_variance_over_redraws_of_the_noise(tree, kw, estimator):
    # a fixed partition of 300 segments holding 500 items each (far from the
    # seal_uniform clip at tau = 1000), noise redrawn RUNS times
    m, eps, tau = 300, Fraction(1, 2), 1000.0
    ends = (np.cumsum(DATA.integers(1, 50, m)) - 1).astype(np.uint64)
    counts = np.full(m, 500, dtype=np.int64)
    a, b = DATA.integers(0, int(ends[-1]) + 1, (2, 6))
    lo, hi = np.minimum(a, b).astype(np.uint64), np.maximum(a, b).astype(np.uint64)
    exact = np.concatenate(([0.0], np.cumsum(counts, dtype=np.float64)))
    expected = trees.interval_answers(ends, lo, hi, estimator, tau, prefix=exact)
    rng = ps.Rng(seed=7)
    samples = np.empty((RUNS, lo.size))
    if tree == "kary":
        k = kw["k"]
        sumsq, _ = trees.interval_noise(ends, lo, hi, estimator, kary=k)
        for i in range(RUNS):
            counter = ps.KaryTreeCounter(horizon=m, epsilon=eps, k=k, rng=rng)
            prefix = np.concatenate(([0.0], counter.update_many(counts)))
            samples[i] = trees.interval_answers(ends, lo, hi, estimator, tau, prefix=prefix)
        scale = counter.noise_scale
    else:
        f = kw["fanout"]
        sumsq, _ = trees.interval_noise(ends, lo, hi, estimator, fanout=f,
                                        consistent=tree == "consistent")
        scale = trees.noise_scale(trees.tree_shape(m, f)[0], eps)
        for i in range(RUNS):
            nodes = trees.noisy_tree(counts, f, eps, rng)
            if tree == "raw":
                samples[i] = trees.interval_answers(ends, lo, hi, estimator, tau, nodes=nodes,
                                                    fanout=f)
            else:
                leaf = trees.consistent_leaves(nodes, m, f)
                prefix = np.concatenate(([0.0], np.cumsum(leaf)))
                samples[i] = trees.interval_answers(ends, lo, hi, estimator, tau, prefix=prefix)
    std = np.sqrt(sumsq[:, 3] * ps.discrete_laplace_variance(scale))
    _assert_std(samples, expected, std)


@pytest.mark.slow
@pytest.mark.parametrize("c,size,eps", [(2, 4095, 1.0), (3, 255, 2.0)])
def test_grid_std_matches_the_variance_over_redraws_of_the_noise(c, size, eps):
    # the released layout kept, its coarse and fine counts redrawn RUNS times
    pts = DATA.integers(0, size + 1, (3000, c))
    pts[:1500] //= 4
    s = ps.RectangleSynopsis.build(pts, domain=[(0, size)] * c, epsilon=eps, rng=ps.Rng(seed=3))
    grid, _ = _grid_of(s)
    layout = grid.layout
    seg = np.stack([np.searchsorted(p.end_offsets, pts[:, a].astype(np.uint64))
                    for a, p in enumerate(s.partitions)], axis=1)
    coarse = np.ravel_multi_index([seg[:, a] // g for a, g in enumerate(layout.merge)],
                                  layout.shape)
    v0 = np.bincount(coarse, minlength=grid.coarse_counts.size)
    u0 = np.bincount(layout.fine_index(seg, coarse), minlength=grid.fine_counts.size)
    a, b = DATA.integers(0, size + 1, (2, 5, c))
    lo, hi = np.minimum(a, b).astype(np.uint64), np.maximum(a, b).astype(np.uint64)
    expected = _grid_of(s, v0, u0)[0].answer(lo, hi)
    b1, b2 = grid.scales
    rng = ps.Rng(seed=8)
    samples = np.empty((RUNS, lo.shape[0]))
    for i in range(RUNS):
        v = v0 + ps.discrete_laplace(b1, v0.size, rng=rng)
        u = u0 + ps.discrete_laplace(b2, u0.size, rng=rng)
        samples[i] = _grid_of(s, v, u)[0].answer(lo, hi)
    sumsq, _, scales = grid.noise(lo, hi)
    _assert_std(samples, expected, noise_std(sumsq, scales))


@pytest.mark.slow
@pytest.mark.parametrize("c,estimator", [(1, "uniform"), (2, "uniform"), (2, "cover")])
def test_multitree_std_matches_the_variance_over_redraws_of_the_noise(c, estimator):
    size, eps = 1023, Fraction(2)
    pts = DATA.integers(0, size + 1, (400, c))
    opts = options.resolve("default", "multitree", c, {"estimator": estimator, "merge": 1,
                                                       "fanout": 4})
    rng = ps.Rng(seed=9)
    axes, segs, n_hat = Axes.release(pts, pts.astype(np.uint64), [(0, size)] * c, eps / 4,
                                     0.05, opts.threshold_factor, rng)

    def build(eps_tree):
        return MultiTree.build(axes, Cells.of(segs.copy()), n_hat, eps_tree,
                               MultiTree.split_budget(eps_tree, opts, c), opts, rng)

    a, b = DATA.integers(0, size + 1, (2, 5, c))
    lo, hi = np.minimum(a, b).astype(np.uint64), np.maximum(a, b).astype(np.uint64)
    expected = build(Fraction(10**9)).answer(lo, hi)      # noise of scale ~1e-9: none
    samples = np.array([build(eps).answer(lo, hi) for _ in range(RUNS)])
    tree = build(eps)
    assert tree.prune is None
    sumsq, _, scales = tree.noise(lo, hi)
    _assert_std(samples, expected, noise_std(sumsq, scales))


# ------------------------------------------------ coverage of the intervals
def _flights():
    """The 30,000-row sample of the 2001 flights in tests/data (its README says how it was drawn)."""
    return np.load(pathlib.Path(__file__).parent / "data" / "flights-2001h1.npz")


def _assert_coverage(hits, runs, confidence):
    """Per-query intervals hold at their nominal rate: the Clopper-Pearson interval of
    the hit rate (alpha 1e-6) must reach ``confidence``.  One query per build, so the
    hits are independent."""
    _, upper = clopper_pearson(hits, runs, ALPHA)
    assert upper >= confidence, f"coverage {hits}/{runs} is below {confidence}"


def _interval_coverage(values, domain, runs, confidence, seed, **kw):
    srt = np.sort(values)
    gen = np.random.default_rng(seed)             # the queries only
    rng = ps.Rng(seed=seed)
    hits, narrow, widths = 0, 0, []
    for i in range(runs):
        s = ps.IntervalSynopsis.build(values, domain=domain, epsilon=1.0, rng=rng, **kw)
        if i % 2:
            a, b = gen.integers(domain[0], domain[1] + 1, 2)
        else:
            a, b = gen.choice(values, 2)           # endpoints on data values
        lo, hi = min(a, b), max(a, b)
        true = np.searchsorted(srt, hi, side="right") - np.searchsorted(srt, lo, side="left")
        bars = s.confidence_intervals([lo], [hi], confidence)
        hits += bool(bars.low[0] <= true <= bars.high[0])
        narrow += bool(abs(bars.answer[0] - true) <= bars.std[0])
        widths.append(float(bars.high[0] - bars.low[0]) / 2)
    _assert_coverage(hits, runs, confidence)
    # the same check flags one-sigma bars (a test that can fail)
    assert clopper_pearson(narrow, runs, ALPHA)[1] < confidence
    return np.median(widths) / s.error_bound(confidence)


@pytest.mark.slow
def test_interval_coverage_on_flights():
    values = _flights()["minute"].astype(np.int64)
    ratio = _interval_coverage(values, (0, 260640), 300, 0.95, seed=21)
    assert ratio < 0.8                            # per-query bars are narrower than the bound


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{}, {"structure": "kary"}, {"consistency": False, "fanout": 4},
                                {"estimator": "seal", "structure": "binary"},
                                {"estimator": "cover", "consistency": False}])
def test_interval_coverage_on_synthetic_data_with_duplicates(kw):
    gen = np.random.default_rng(2)
    values = np.concatenate([gen.integers(0, 10**6, 1500), np.full(300, 123_456),
                             gen.zipf(1.5, 500) % 10**6])
    confidence = 0.9 if kw.get("estimator") == "cover" else 0.95
    kw = dict(kw, multiplicity=301) if kw.get("estimator") == "cover" else kw
    mult = kw.pop("multiplicity", 1)
    srt = np.sort(values)
    qgen, rng, hits, runs = np.random.default_rng(3), ps.Rng(seed=22), 0, 400
    for i in range(runs):
        s = ps.IntervalSynopsis.build(values, domain=(0, 10**6 - 1), epsilon=0.5, rng=rng, **kw)
        a, b = qgen.integers(0, 10**6, 2) if i % 2 else qgen.choice(values, 2)
        lo, hi = min(a, b), max(a, b)
        true = np.searchsorted(srt, hi, side="right") - np.searchsorted(srt, lo, side="left")
        bars = s.confidence_intervals([lo], [hi], confidence, multiplicity=mult)
        hits += bool(bars.low[0] <= true <= bars.high[0])
    _assert_coverage(hits, runs, confidence)


def _rectangle_coverage(pts, domain, runs, confidence, seed, **kw):
    gen, rng, hits = np.random.default_rng(seed), ps.Rng(seed=seed), 0
    c = pts.shape[1]
    for i in range(runs):
        s = ps.RectangleSynopsis.build(pts, domain=domain, epsilon=1.0, rng=rng, **kw)
        if i % 2:
            a = np.array([gen.integers(lo, hi + 1, 2) for lo, hi in domain]).T
        else:
            a = pts[gen.integers(0, len(pts), 2)]
        lo, hi = a.min(axis=0), a.max(axis=0)
        true = int(np.all((pts >= lo) & (pts <= hi), axis=1).sum())
        bars = s.confidence_intervals(lo[None, :], hi[None, :], confidence)
        hits += bool(bars.low[0] <= true <= bars.high[0])
    _assert_coverage(hits, runs, confidence)
    assert c == len(domain)


@pytest.mark.slow
def test_rectangle_coverage_on_flights_minute_by_distance():
    d = _flights()
    pts = np.column_stack([d["minute"], d["distance"]]).astype(np.int64)
    _rectangle_coverage(pts, [(0, 260640), (0, 5000)], 250, 0.95, seed=23)


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{}, {"structure": "multitree"}])
def test_rectangle_coverage_on_synthetic_clusters(kw):
    gen = np.random.default_rng(5)
    centres = gen.integers(0, 2**20, (5, 2))
    pts = (centres[gen.integers(0, 5, 3000)] + gen.normal(0, 2**14, (3000, 2))).astype(np.int64)
    pts = np.clip(pts, 0, 2**20 - 1)
    _rectangle_coverage(pts, [(0, 2**20 - 1)] * 2, 300, 0.95, seed=24, **kw)


# --------------------------------------------------------------- the API
@pytest.fixture(scope="module")
def interval_synopsis():
    values = np.random.default_rng(6).integers(0, 10**6, 5000)
    return values, ps.IntervalSynopsis.build(values, domain=(0, 10**6 - 1), epsilon=1.0,
                                             rng=ps.Rng(seed=30))


@pytest.fixture(scope="module")
def rectangle_synopses():
    pts = np.random.default_rng(7).integers(0, 2**16, (4000, 2))
    return pts, [ps.RectangleSynopsis.build(pts, domain=[(0, 2**16 - 1)] * 2, epsilon=1.0,
                                            rng=ps.Rng(seed=31), **kw)
                 for kw in ({}, {"structure": "multitree"})]


def test_interval_error_bars_shapes_and_consistency(interval_synopsis):
    values, s = interval_synopsis
    lo = np.array([[0, 10], [500, 7000]])
    hi = np.array([[999_999, 20], [600_000, 7000]])
    ans, std = s.count_many(lo, hi, return_std=True)
    assert ans.shape == std.shape == (2, 2) and np.all(std > 0)
    np.testing.assert_array_equal(ans, s.count_many(lo, hi))
    bars = s.confidence_intervals(lo, hi, 0.9)
    assert all(x.shape == (2, 2) for x in bars) and bars.method == "rigorous"
    np.testing.assert_array_equal(bars.answer, ans)
    np.testing.assert_array_equal(bars.std, std)
    np.testing.assert_allclose(bars.high - bars.low, 2 * (bars.noise + bars.bias))
    assert np.all((bars.low <= bars.answer) & (bars.answer <= bars.high))
    assert np.all(bars.noise > std)                # a 90% tail is more than one sigma
    # per query, never wider than the simultaneous bound
    assert np.all(bars.noise + bars.bias <= s.error_bound(0.9))
    # a higher confidence widens the interval
    wider = s.confidence_intervals(lo, hi, 0.97)
    assert np.all(wider.noise > bars.noise)
    assert np.all((wider.low <= bars.low) & (bars.high <= wider.high))
    assert float(s.count(0, 999_999)) == ans[0, 0]


def test_interval_bias_is_half_the_released_cut_segments(interval_synopsis):
    # every estimator: the interval runs from the whole segments inside the query to
    # the whole segments it touches, so its bias part is half their difference, the
    # released count of the cut segments (0 for whole segments)
    values, _ = interval_synopsis
    for estimator in trees.ESTIMATORS:
        s = ps.IntervalSynopsis.build(values, domain=(0, 10**6 - 1), epsilon=1.0,
                                      estimator=estimator, rng=ps.Rng(seed=32),
                                      partition="dnrr")
        e = s.partition.end_offsets.astype(np.int64)
        assert e[4] - e[3] > 1 and e[10] - e[9] > 1
        # whole segments; the left end cut; both ends cut
        lo = np.array([e[3] + 1, e[3] + 2, e[3] + 2])
        hi = np.array([e[9], e[9], e[10] - 1])
        inner = s.count_many([e[3] + 1, e[4] + 1, e[4] + 1], [e[9], e[9], e[9]])
        outer = s.count_many([e[3] + 1] * 3, [e[9], e[9], e[10]])
        bars = s.confidence_intervals(lo, hi, multiplicity=3)
        assert np.all(bars.low > 0)
        inside = (bars.answer >= np.minimum(inner, outer) - bars.noise) & (
            bars.answer <= np.maximum(inner, outer) + bars.noise)
        assert inside.all()
        np.testing.assert_allclose(bars.bias, np.abs(outer - inner) / 2, atol=1e-9)
        assert bars.bias[0] == pytest.approx(0.0, abs=1e-9)


def test_nonnegative_answers_move_toward_the_truth(rectangle_synopses):
    # every value below 10^4: the last segment, up to 10^6, holds fewer than T
    # items, so its estimate (spread uniformly) may be negative
    gen = np.random.default_rng(8)
    values = gen.integers(0, 10**4, 3000)
    s = ps.IntervalSynopsis.build(values, domain=(0, 10**6 - 1), epsilon=0.5,
                                  estimator="uniform", rng=ps.Rng(seed=33))
    a, b = gen.integers(0, 10**6, (2, 3000))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    raw = s.count_many(lo, hi)
    clipped = s.count_many(lo, hi, nonnegative=True)
    assert (raw < 0).any()
    np.testing.assert_array_equal(clipped, np.maximum(raw, 0.0))
    srt = np.sort(values)
    true = np.searchsorted(srt, hi, side="right") - np.searchsorted(srt, lo, side="left")
    assert np.all(np.abs(clipped - true) <= np.abs(raw - true))
    bars = s.confidence_intervals(lo, hi, nonnegative=True)
    assert np.all(bars.low >= 0) and np.all(bars.answer >= 0)
    assert np.all((bars.low <= bars.answer) & (bars.answer <= bars.high))
    pts, rects = rectangle_synopses
    for r in rects:
        lo2 = gen.integers(0, 2**16 - 300, (500, 2))
        raw = r.count_many(lo2, lo2 + 200)
        np.testing.assert_array_equal(r.count_many(lo2, lo2 + 200, nonnegative=True),
                                      np.maximum(raw, 0.0))


def test_rectangle_error_bars_shapes_and_consistency(rectangle_synopses):
    pts, rects = rectangle_synopses
    lo = np.array([[0, 0], [100, 2000], [7, 7]])
    hi = np.array([[2**16 - 1, 2**16 - 1], [30_000, 2100], [7, 7]])
    for s in rects:
        ans, std = s.count_many(lo, hi, return_std=True)
        assert ans.shape == std.shape == (3,) and np.all(std > 0)
        np.testing.assert_array_equal(ans, s.count_many(lo, hi))
        bars = s.confidence_intervals(lo, hi, 0.9)
        np.testing.assert_array_equal(bars.answer, ans)
        np.testing.assert_array_equal(bars.std, std)
        np.testing.assert_allclose(bars.high - bars.low, 2 * (bars.noise + bars.bias))
        assert np.all(bars.noise > std)
        assert bars.bias[0] == pytest.approx(0.0, abs=1e-9)    # the whole domain cuts nothing
        assert np.all(bars.noise + bars.bias <= s.error_bound(0.9))
    # a pruned multi-tree (DNRR's configuration): absent nodes carry no noise, and the
    # bias holds the whole-tree pruning term of error_terms
    dnrr = ps.RectangleSynopsis.build(pts, domain=[(0, 2**16 - 1)] * 2, epsilon=1.0,
                                      config="dnrr", rng=ps.Rng(seed=35))
    assert dnrr.prune == "dnrr"
    bars = dnrr.confidence_intervals(lo, hi, 0.9)
    pruning = dnrr.error_terms(0.9).pruning
    assert pruning > 0 and np.all(bars.high - bars.answer >= bars.noise + pruning)
    assert np.all(bars.noise + bars.bias <= dnrr.error_bound(0.9))


@pytest.mark.parametrize("call,exc,word", [
    (lambda s: s.count_many([1], [2], return_std=1), TypeError, "return_std"),
    (lambda s: s.count_many([1], [2], return_std="yes"), TypeError, "return_std"),
    (lambda s: s.count_many([1], [2], nonnegative=None), TypeError, "nonnegative"),
    (lambda s: s.confidence_intervals([1], [2], 1.0), ps.ParameterError, "confidence"),
    (lambda s: s.confidence_intervals([1], [2], 0.0), ps.ParameterError, "confidence"),
    (lambda s: s.confidence_intervals([1], [2], -0.5), ps.ParameterError, "confidence"),
    (lambda s: s.confidence_intervals([1], [2], float("nan")), ps.ParameterError, "confidence"),
    (lambda s: s.confidence_intervals([1], [2], "0.9"), TypeError, "confidence"),
    (lambda s: s.confidence_intervals([1], [2], method="exact"), ps.ParameterError, "method"),
    (lambda s: s.confidence_intervals([1], [2], method=None), TypeError, "method"),
    (lambda s: s.confidence_intervals([1], [2], multiplicity=0), ps.ParameterError,
     "multiplicity"),
    (lambda s: s.confidence_intervals([1], [2], nonnegative=1), TypeError, "nonnegative"),
    (lambda s: s.confidence_intervals([3], [2]), ps.DomainError, "lo must be <= hi"),
    (lambda s: s.count_many([1], [2, 3], return_std=True), ps.DomainError, "same shape"),
])
def test_interval_error_bars_reject_bad_arguments(interval_synopsis, call, exc, word):
    _, s = interval_synopsis
    with pytest.raises(exc, match=word):
        call(s)


@pytest.mark.parametrize("call,exc,word", [
    (lambda s: s.count_many([[1, 1]], [[2, 2]], return_std=0), TypeError, "return_std"),
    (lambda s: s.count_many([[1, 1]], [[2, 2]], nonnegative="no"), TypeError, "nonnegative"),
    (lambda s: s.confidence_intervals([[1, 1]], [[2, 2]], 1.5), ps.ParameterError, "confidence"),
    (lambda s: s.confidence_intervals([[1, 1]], [[2, 2]], None), TypeError, "confidence"),
    (lambda s: s.confidence_intervals([[1, 1]], [[2, 2]], multiplicity=0),
     ps.ParameterError, "multiplicity"),
    (lambda s: s.confidence_intervals([[1, 1]], [[2, 2]], nonnegative=2), TypeError,
     "nonnegative"),
    (lambda s: s.confidence_intervals([[3, 1]], [[2, 2]]), ps.DomainError, "lo must be <= hi"),
    (lambda s: s.count_many([[1, 1, 1]], [[2, 2, 2]], return_std=True), ps.ParameterError,
     "array"),
])
def test_rectangle_error_bars_reject_bad_arguments(rectangle_synopses, call, exc, word):
    for s in rectangle_synopses[1]:
        with pytest.raises(exc, match=word):
            call(s)
    # the unpruned multi-tree's intervals read released counts (no share of beta); a
    # pruned one's hold with the partitions' weight bounds, so confidence < 1 - beta/2
    multitree = rectangle_synopses[1][1]
    assert multitree.prune is None
    assert multitree.confidence_intervals([[1, 1]], [[2, 2]], 0.99).method == "rigorous"
    pruned = ps.RectangleSynopsis.build(rectangle_synopses[0], domain=[(0, 2**16 - 1)] * 2,
                                        epsilon=1.0, config="dnrr", rng=ps.Rng(seed=36))
    with pytest.raises(ps.ParameterError, match="beta/2"):
        pruned.confidence_intervals([[1, 1]], [[2, 2]], 0.99)


@pytest.mark.parametrize("estimator", ["uniform", "cover"])
def test_pruned_multitree_bias_is_per_cut_side(estimator):
    # a pruned tree's whole-segment answers miss what the pruned nodes hide, so its
    # per-query bias is the partitions' weight bounds per cut side plus the pruning term
    pts = DATA.integers(0, 2**12, (3000, 2))
    s = ps.RectangleSynopsis.build(pts, domain=[(0, 2**12 - 1)] * 2, epsilon=2.0,
                                   estimator=estimator, merge=1, prune=1.0, rng=ps.Rng(seed=34))
    assert s.prune is not None
    e = [p.end_offsets.astype(np.int64) for p in s.partitions]
    w = [p.interior_weight_bound() for p in s.partitions]
    mu = 2
    heavy = [wa + mu for wa in w]
    # whole segments on both axes; lo cut on axis 0; hi cut on axis 1; all four cut
    lo = np.array([[e[0][2] + 1, e[1][4] + 1], [e[0][2] + 2, e[1][4] + 1],
                   [e[0][2] + 1, e[1][4] + 1], [e[0][2] + 2, e[1][4] + 2]])
    hi = np.array([[e[0][7], e[1][9]], [e[0][7], e[1][9]], [e[0][7], e[1][9] - 1],
                   [e[0][7] - 1, e[1][9] - 1]])
    lo_side = heavy if estimator == "uniform" else w       # cover: the seal point is inside
    want = [0, lo_side[0], heavy[1], lo_side[0] + heavy[0] + lo_side[1] + heavy[1]]
    bars = s.confidence_intervals(lo, hi, 0.9, multiplicity=mu)
    pruning = s.error_terms(0.9).pruning
    np.testing.assert_allclose(bars.high - bars.answer - bars.noise, np.array(want) + pruning)


# ---------------------------------------------------------------- counters
@pytest.mark.parametrize("cls,k", [(ps.BinaryTreeCounter, 2), (ps.KaryTreeCounter, 3),
                                   (ps.KaryTreeCounter, 19)])
def test_counter_std_is_the_exact_path_noise(cls, k):
    horizon = 300
    kw = {} if k == 2 else {"k": k}
    c = cls(horizon=horizon, epsilon=1.0, rng=ps.Rng(seed=40), **kw)
    var = ps.discrete_laplace_variance(c.noise_scale)
    if k == 2:
        terms = np.array([bin(t).count("1") for t in range(horizon + 1)])
    else:
        terms = _kary_incidence(horizon, k).sum(axis=1)
    np.testing.assert_allclose(c.std(np.arange(horizon + 1)) ** 2, terms * var, rtol=RTOL)
    assert c.std() == 0.0
    for t in (1, 7, 150):
        c.update_many(np.ones(t - c.time, dtype=np.int64))
        assert c.std() ** 2 == pytest.approx(terms[t] * var, rel=RTOL)
    # the mean over t is mean_squared_error
    assert np.mean(c.std(np.arange(1, horizon + 1)) ** 2) == pytest.approx(
        c.mean_squared_error(), rel=1e-12)
    with pytest.raises(ps.DomainError, match="times"):
        c.std([horizon + 1])
    with pytest.raises(TypeError, match="times"):
        c.std([1.5])


@pytest.mark.slow
def test_counter_std_matches_the_variance_over_runs():
    t, runs, rng = 37, 20000, ps.Rng(seed=41)
    out = np.array([ps.KaryTreeCounter(horizon=100, epsilon=1.0, k=5, rng=rng)
                    .update_many(np.ones(t, dtype=np.int64))[-1] for _ in range(runs)])
    std = ps.KaryTreeCounter(horizon=100, epsilon=1.0, k=5).std(t)
    assert_mean_var(out, t, float(std) ** 2)


def test_monotone_counter_is_the_running_maximum(tmp_path):
    xs = np.random.default_rng(9).integers(0, 2, 500)
    c = ps.KaryTreeCounter(horizon=1000, epsilon=0.5, rng=ps.Rng(seed=42))
    d = ps.KaryTreeCounter(horizon=1000, epsilon=0.5, rng=ps.Rng(seed=42))
    raw = c.update_many(xs[:200])
    mono = d.update_many(xs[:200], monotone=True)
    np.testing.assert_array_equal(mono, np.maximum.accumulate(np.maximum(raw, 0)))
    assert (raw < 0).any() and np.all(np.diff(mono) >= 0) and mono[0] >= 0
    # the floor carries across batches, single updates and checkpoints
    ps.save(d, tmp_path / "d.ckpt")
    d2 = ps.load(tmp_path / "d.ckpt")
    assert d2.monotone_release == d.monotone_release == mono[-1]
    rest = [d2.update(int(x), monotone=True) for x in xs[200:260]]
    raw2 = c.update_many(xs[200:260])
    np.testing.assert_array_equal(rest, np.maximum.accumulate(np.maximum(raw2, mono[-1])))
    state = d2.to_state()
    del state["peak"]                                  # a release 0.1 checkpoint
    assert ps.KaryTreeCounter.from_state(state).monotone_release == max(0, d2.release)
    state["peak"] = d2.release - 1 if d2.release > 0 else -1
    with pytest.raises(ps.FormatError):
        ps.KaryTreeCounter.from_state(state)
    with pytest.raises(TypeError, match="monotone"):
        d2.update_many([1], monotone=1)
    with pytest.raises(TypeError, match="monotone"):
        d2.update(1, monotone="yes")
    assert d2.time == 260                              # nothing consumed by the bad calls


# ------------------------------------------------- kernels refuse bad input
def test_noise_kernels_refuse_bad_arguments():
    from pydp_synopsis._core import f64, ffi, lib, u64
    ends = np.array([3, 7, 12], dtype=np.uint64)
    lo, hi = np.array([1], dtype=np.uint64), np.array([9], dtype=np.uint64)
    k_seg, r_seg = np.array([0], dtype=np.uint64), np.array([2], dtype=np.uint64)
    out, mx = np.zeros(4), np.zeros(4)

    def var_tree(consistent=1, estimator=3, corners=1, m=3, seg_lo=k_seg, f=2):
        return lib.pds_interval_var_tree(m, f, consistent, u64(ends), u64(lo), u64(hi),
                                         u64(seg_lo), u64(r_seg), 1, estimator, corners,
                                         f64(out), f64(mx))

    assert var_tree() == lib.PDS_OK
    for kw in ({"consistent": 2}, {"estimator": 4}, {"estimator": -1}, {"corners": 2},
               {"m": 0}, {"seg_lo": np.array([1], dtype=np.uint64)}, {"f": 1}):
        assert var_tree(**kw) == lib.PDS_EINVAL, kw
    for k in (2, 4, 1, 65537):
        assert lib.pds_interval_var_kary(3, k, u64(ends), u64(lo), u64(hi), u64(k_seg),
                                         u64(r_seg), 1, 3, 1, f64(out), f64(mx)) == lib.PDS_EINVAL
    assert lib.pds_interval_var_kary(3, 3, u64(ends), u64(lo), u64(hi), u64(k_seg), u64(r_seg),
                                     1, 3, 1, ffi.NULL, f64(mx)) == lib.PDS_EINVAL
    # tails: groups in [1, 8], finite positive scales, finite non-negative weights
    one, two = np.ones(1), np.ones(2)
    t = np.zeros(1)
    assert lib.pds_laplace_weighted_tail(1, 1, f64(one), f64(one), f64(one), f64(one),
                                         f64(t)) == lib.PDS_OK
    for groups, scale, v, s, li in ((0, one, one, one, one), (9, np.ones(9), np.ones(9),
                                                              np.ones(9), one),
                                    (1, -one, one, one, one), (1, one * np.inf, one, one, one),
                                    (1, one, -one, one, one), (1, one, one * np.nan, one, one),
                                    (1, one, one, -one, one), (1, one, one, one, 0 * one)):
        assert lib.pds_laplace_weighted_tail(1, groups, f64(scale), f64(v), f64(s), f64(li),
                                             f64(t)) == lib.PDS_EINVAL
    assert two.size == 2


def test_grid_and_multitree_noise_kernels_check_their_arrays():
    from pydp_synopsis._core import f64, ffi, i64, lib, u64
    from pydp_synopsis.rectangles import kernels
    pts = DATA.integers(0, 256, (500, 2))
    s = ps.RectangleSynopsis.build(pts, domain=[(0, 255)] * 2, epsilon=2.0, rng=ps.Rng(seed=50))
    grid, fine = _grid_of(s)
    layout, sizes = grid.layout, np.array(grid.axes.sizes, dtype=np.uint64)
    lam = np.full(grid.coarse_counts.size, 0.5)
    v1, v2 = np.zeros(lam.size), np.zeros(lam.size)
    ufine = fine["count"].astype(np.float64)
    kernels.grid_fine_prefix(layout.fine_shape, layout.base, ufine)
    # the whole domain: the query reaches the last coarse cell, whose grid must lie
    # inside ufine[0 .. n_fine)
    k = np.zeros((1, 2), dtype=np.uint64)
    r = (sizes - 1)[None, :]
    fk = fr = np.ones((1, 2))
    sumsq, maxabs, cut = np.zeros(2), np.zeros(2), np.zeros(2)

    def noise(lam_=lam, n_cells=lam.size, n_fine=ufine.size, ufine_=ufine):
        return lib.pds_grid_noise(2, u64(sizes), u64(np.array(layout.merge, dtype=np.uint64)),
                                  f64(lam_), f64(v1), f64(v2), n_cells, i64(layout.fine_shape),
                                  i64(layout.base), ufine_, n_fine, 1, u64(k), u64(r), f64(fk),
                                  f64(fr), f64(sumsq), f64(maxabs), f64(cut))

    assert noise(ufine_=f64(ufine)) == lib.PDS_OK
    assert noise(ufine_=ffi.NULL) == lib.PDS_EINVAL
    assert noise(ufine_=f64(ufine), n_cells=lam.size + 1) == lib.PDS_EINVAL
    assert noise(ufine_=f64(ufine), n_fine=int(layout.base[-1])) == lib.PDS_EINVAL
    bad = lam.copy()
    bad[0] = 1.5
    assert noise(lam_=bad, ufine_=f64(ufine)) == lib.PDS_EINVAL
    # multi-tree: successor trees starting past the end are refused, not read
    tree = _multitree(pts, 255, 2.0, fanout=2, merge=1)
    count, child, succ = tree.records
    present = np.arange(count.size + 1, dtype=np.uint64)
    wa, wb = np.zeros((1, 2), dtype=np.uint64), np.array([tree.segments], dtype=np.uint64)
    zero_u, zero_f = np.zeros((1, 2), dtype=np.uint64), np.zeros((1, 2))
    for succ_ in (succ, np.where(succ >= 0, count.size, succ)):
        out, mx = np.zeros(1), np.zeros(1)
        st = lib.pds_multitree_noise(
            i64(child), i64(succ_), u64(present), count.size, 2,
            u64(np.array(tree.segments, dtype=np.uint64)),
            ffi.from_buffer("uint32_t[]", np.array(tree.fanout, dtype=np.uint32)), u64(wa),
            u64(wb), u64(zero_u), f64(zero_f), u64(zero_u), f64(zero_f), 1, f64(out), f64(mx))
        assert st == (lib.PDS_OK if succ_ is succ else lib.PDS_ESTATE)


@pytest.mark.parametrize("kw", [{}, {"consistency": False}, {"structure": "binary"},
                                {"structure": "kary", "k": 7}])
def test_synopsis_std_uses_the_release_noise_scale(kw, interval_synopsis):
    values, _ = interval_synopsis
    s = ps.IntervalSynopsis.build(values, domain=(0, 10**6 - 1), epsilon=1.0,
                                  rng=ps.Rng(seed=36), **kw)
    lo, hi = np.array([10, 5000, 0]), np.array([70_000, 900_000, 10**6 - 1])
    ends = s.partition.end_offsets
    if s.tree == "kary":
        sumsq, _ = trees.interval_noise(ends, lo.astype(np.uint64), hi.astype(np.uint64),
                                        s.estimator, kary=s.k)
        scale = ps.KaryTreeCounter(horizon=len(s), epsilon=s.epsilon_tree, k=s.k).noise_scale
    else:
        levels = trees.tree_shape(len(s), s.fanout)[0]
        if s.tree == "hierarchical":
            # the default level_ratio 7/4: level l's scale b_l, the variance in units of
            # the largest scale's (trees.LevelWeights)
            assert s.level_ratio == Fraction(7, 4)
            scales = trees.level_scales(levels, s.epsilon_tree, Fraction(7, 4))
            weights, scale = trees.LevelWeights(scales), max(scales)
            np.testing.assert_allclose(
                weights.rho, [ps.discrete_laplace_variance(b) / ps.discrete_laplace_variance(scale)
                              for b in scales], rtol=1e-12)
        else:
            weights, scale = None, trees.noise_scale(levels, s.epsilon_tree)
        sumsq, _ = trees.interval_noise(ends, lo.astype(np.uint64), hi.astype(np.uint64),
                                        s.estimator, fanout=s.fanout, consistent=s.consistency,
                                        weights=weights)
    want = np.sqrt(sumsq[:, 3] * ps.discrete_laplace_variance(scale))
    np.testing.assert_allclose(s.count_many(lo, hi, return_std=True)[1], want, rtol=RTOL)


@pytest.mark.parametrize("k,subtraction", [(20, True), (4, True), (17, False), (3, False)])
def test_counter_std_counts_the_digit_units_of_every_digit_set(k, subtraction):
    from pydp_synopsis.tree_noise import digit_low, representation

    c = ps.KaryTreeCounter(horizon=500, epsilon=0.5, k=k, subtraction=subtraction, rng=ps.Rng(seed=43))
    low = digit_low(k, subtraction)
    terms = np.array([sum(abs(d) for d in representation(t, k, low)) for t in range(501)])
    var = ps.discrete_laplace_variance(c.noise_scale)
    np.testing.assert_allclose(c.std(np.arange(501)) ** 2, terms * var, rtol=RTOL)
    assert isinstance(c.std(7), float) and c.std(np.int64(7)) == c.std(7)
    assert np.mean(c.std(np.arange(1, 501)) ** 2) == pytest.approx(c.mean_squared_error(), rel=1e-12)


def test_monotone_sparse_counter_is_the_running_maximum(tmp_path):
    xs = np.zeros(3000, dtype=np.int64)
    xs[np.random.default_rng(3).choice(3000, 120, replace=False)] = 1
    a = ps.SparseStreamCounter(horizon=2**20, epsilon=0.3, rng=ps.Rng(seed=44))
    b = ps.SparseStreamCounter(horizon=2**20, epsilon=0.3, rng=ps.Rng(seed=44))
    raw = a.update_many(xs[:2000])
    mono = b.update_many(xs[:2000], monotone=True)
    np.testing.assert_array_equal(mono, np.maximum.accumulate(np.maximum(raw, 0)))
    assert b.monotone_release == mono[-1] and np.all(np.diff(mono) >= 0)
    ps.save(b, tmp_path / "b.ckpt")
    c = ps.load(tmp_path / "b.ckpt")
    assert c.monotone_release == b.monotone_release
    pos = 2000 + np.flatnonzero(xs[2000:]) + 1
    t_raw, v_raw = a.update_sparse(pos, until=3000)
    t_mono, v_mono = c.update_sparse(pos, until=3000, monotone=True)
    np.testing.assert_array_equal(t_raw, t_mono)
    np.testing.assert_array_equal(v_mono, np.maximum.accumulate(np.maximum(v_raw, mono[-1])))
    assert c.update(0, monotone=True) == c.monotone_release
    with pytest.raises(TypeError, match="monotone"):
        c.update_many([0], monotone=None)
