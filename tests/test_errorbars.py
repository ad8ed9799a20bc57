"""Per-query error bars (issue #14, parts 3 and 4): exact noise std, bias bounds, intervals.

The noise weights the C kernels compute are checked exactly (rtol 1e-12)
against explicit weight vectors built here for small trees and grids: the
estimator's leaf coefficients written out from its definition, the raw
tree's minimal cover, Hay et al.'s least squares as ``A (A^T A)^-1 c``, the
k-ary counter's noise terms by replaying Algorithm 2, and the grid's and
multi-tree's linear maps by probing their answer kernels with unit counts.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import linalg

import pydp_synopsis as ps
from pydp_synopsis import trees
from pydp_synopsis.rectangles import options
from pydp_synopsis.rectangles.axes import Axes
from pydp_synopsis.rectangles.grid import AdaptiveGrid, Layout, coarse_geometry
from pydp_synopsis.rectangles.multitree import MultiTree
from pydp_synopsis.tails import laplace_sum_tail, laplace_weighted_tail

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


@pytest.mark.parametrize("c,size,eps,n", [(2, 255, 1.0, 400), (2, 4095, 4.0, 600), (3, 63, 2.0, 300)])
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
    sumsq, maxabs, cut = grid._noise_parts(lo, hi)
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
    return MultiTree.build(axes, segs, n_hat, eps_tree, split, opts, rng)


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
