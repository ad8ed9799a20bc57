"""Tests of the benchmark peers and workloads: python -m pytest -m bench benchmarks/peers -q"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # workloads

from peers_dawa import (Dawa, WindowDeviations, _Workload, brute_force_costs,  # noqa: E402
                        l1_partition)
from peers_intervals import (HierarchicalHistogram, cover_sizes, expected_squared_error,  # noqa: E402
                             opendp_interval_answers, simulate_errors, tree_levels)
from peers_privtree import PrivTree, privtree_parameters  # noqa: E402
from peers_rectangles import (AdaptiveGrid, EqualWidthAxis, FlatHistogram, UniformGrid,  # noqa: E402
                              _split_bound, _split_index, ug_cells_per_axis)
from workloads import (interval_counts, random_intervals, random_rectangles,  # noqa: E402
                       rectangle_counts)

TWO64 = 1 << 64


def _brute_cover(l, r, b, h):
    """Greedy top-down minimal b-ary cover size of inclusive [l, r] (Python ints)."""
    def rec(l, r, lev):
        if l > r:
            return 0
        span = b ** lev
        s, e = -(-l // span), (r + 1) // span
        if s < e:
            return (e - s) + rec(l, s * span - 1, lev - 1) + rec(e * span, r, lev - 1)
        return rec(l, r, lev - 1)
    return rec(l, r, h - 1)


def _brute_rect(pts, lo, hi):
    return np.array([np.all((pts >= a) & (pts <= b), axis=1).sum() for a, b in zip(lo, hi)])


# ---------------------------------------------------------------- intervals

@pytest.mark.parametrize("b", [2, 3, 16])
def test_cover_sizes_match_brute_force(b):
    rng = np.random.default_rng(b)
    dom = (-500, 1500)
    lo, hi = random_intervals(400, dom, seed=b)
    h = tree_levels(2001, b)
    want = [_brute_cover(int(x) + 500, int(y) + 500, b, h) for x, y in zip(lo, hi)]
    assert np.array_equal(cover_sizes(lo, hi, dom, b), want)
    assert rng is not None


@pytest.mark.parametrize("b", [2, 16])
def test_cover_sizes_full_64_bit_domain(b):
    dom = (0, TWO64 - 1)
    lo, hi = random_intervals(200, dom, seed=7)
    lo = np.concatenate([lo, np.array([0, 1, TWO64 - 1, 2**63], dtype=np.uint64)])
    hi = np.concatenate([hi, np.array([TWO64 - 1, TWO64 - 2, TWO64 - 1, 2**63 + 17],
                                      dtype=np.uint64)])
    h = tree_levels(TWO64, b)
    assert h == {2: 64, 16: 16}[b]
    want = [_brute_cover(int(x), int(y), b, h) for x, y in zip(lo, hi)]
    assert np.array_equal(cover_sizes(lo, hi, dom, b), want)


@pytest.mark.parametrize("b", [2, 16])
def test_materialised_exact_with_huge_epsilon(b):
    rng = np.random.default_rng(1)
    dom = (-300, 4000)
    vals = rng.integers(-300, 4001, 5000)
    lo, hi = random_intervals(500, dom, kind="data", values=vals, seed=2)
    hh = HierarchicalHistogram(vals, dom, 1e9, b, seed=3)
    assert np.abs(hh.answer(lo, hi) - interval_counts(vals, lo, hi)).max() < 1e-3


@pytest.mark.parametrize("b", [2, 4])
def test_analytic_variance_matches_materialised(b):
    # 1500 independent releases; the sample variance of a sum of Laplace terms
    # has relative sd <= sqrt((kurtosis - 1) / R) = sqrt(5/1500) ~ 0.058, so
    # [0.7, 1.3] is a > 5 sigma band for each of the 12 queries.
    dom = (0, 99)
    vals = np.random.default_rng(5).integers(0, 100, 300)
    lo, hi = random_intervals(12, dom, seed=6)
    true = interval_counts(vals, lo, hi)
    errs = np.array([HierarchicalHistogram(vals, dom, 0.5, b, seed=s).answer(lo, hi) - true
                     for s in range(1500)])
    ratio = errs.var(axis=0) / expected_squared_error(lo, hi, dom, b, 0.5)
    assert np.all((ratio > 0.7) & (ratio < 1.3)), ratio
    assert np.all(np.abs(errs.mean(axis=0)) < 6 * np.sqrt(errs.var(axis=0) / 1500))


def test_simulated_errors_match_analytic_and_share_nodes():
    dom = (0, TWO64 - 1)
    lo = np.array([0, 5, 2**63, 2**63], dtype=np.uint64)
    hi = np.array([TWO64 - 1, TWO64 - 1, 2**63 + 17, 2**63 + 17], dtype=np.uint64)
    e = simulate_errors(lo, hi, dom, 16, 1.0, reps=20000, seed=0)
    ratio = e.var(axis=0) / expected_squared_error(lo, hi, dom, 16, 1.0)
    assert np.all((ratio > 0.85) & (ratio < 1.15)), ratio
    # identical queries use the same nodes, hence identical errors
    assert np.array_equal(e[:, 2], e[:, 3])


def test_opendp_exact_when_buckets_are_single_values():
    pytest.importorskip("opendp")
    rng = np.random.default_rng(8)
    dom = (1000, 1000 + 4095)
    vals = rng.integers(1000, 1000 + 4096, 3000)
    lo, hi = random_intervals(300, dom, seed=9)
    got = opendp_interval_answers(vals, dom, 1e8, lo, hi, buckets=4096, branching=4)
    assert np.abs(got - interval_counts(vals, lo, hi)).max() < 1e-3


def test_opendp_uniform_within_bucket():
    pytest.importorskip("opendp")
    dom = (0, 2**40 - 1)                       # 2^24 values per bucket with 2^16 buckets
    vals = np.full(100, 5 * 2**24 + 3, dtype=np.uint64)
    lo = np.array([5 * 2**24, 5 * 2**24, 0], dtype=np.uint64)
    hi = np.array([5 * 2**24 + 2**23 - 1, 6 * 2**24 - 1, 2**40 - 1], dtype=np.uint64)
    got = opendp_interval_answers(vals, dom, 1e8, lo, hi)
    assert np.allclose(got, [50.0, 100.0, 100.0], atol=1e-3)


# ---------------------------------------------------------------- grids

def test_equal_width_axis_exact_near_two_to_the_64():
    ax = EqualWidthAxis(0, TWO64 - 1, 10)
    bounds = [j * TWO64 // 10 for j in range(1, 10)]
    off = np.array([0, TWO64 - 1] + bounds + [b - 1 for b in bounds], dtype=np.uint64)
    want = [0, 9] + list(range(1, 10)) + list(range(0, 9))
    assert np.array_equal(ax.cell(off), want)
    assert ax.widths.sum() == float(TWO64)


def test_split_index_exact():
    rng = np.random.default_rng(3)
    w = rng.integers(1, 2**63, 5000, dtype=np.uint64) * np.uint64(2) - np.uint64(1)
    m = rng.integers(1, 300, 5000)
    m = np.minimum(m, w.astype(np.float64)).astype(np.int64)
    off = (rng.random(5000) * w.astype(np.float64)).astype(np.uint64) % w
    j = _split_index(off, w, m)
    for t in range(0, 5000, 7):
        ww, mm, oo, jj = int(w[t]), int(m[t]), int(off[t]), int(j[t])
        assert jj * ww // mm <= oo < (jj + 1) * ww // mm
    assert np.array_equal(_split_bound(m, w, m), w)


@pytest.mark.parametrize("c", [1, 2, 3])
def test_flat_histogram_exact_with_unit_cells(c):
    rng = np.random.default_rng(c)
    dom = [(-20, 19)] * c
    pts = rng.integers(-20, 20, (4000, c))
    lo, hi = random_rectangles(300, dom, seed=c)
    fh = FlatHistogram(pts, dom, 1e9, 40, seed=1)
    assert np.abs(fh.answer(lo, hi) - _brute_rect(pts, lo, hi)).max() < 1e-3


def test_uniformity_within_a_cell_and_aligned_queries_exact():
    # 30 points at 2^64 - 1 (last of 4 cells on axis 0), 10 at 0
    pts_u = np.array([[TWO64 - 1, 0]] * 30 + [[0, 0]] * 10, dtype=np.uint64)
    dom = [(0, TWO64 - 1)]
    fh = FlatHistogram(pts_u, [dom[0], (0, 1)], 1e9, [4, 1], seed=0)
    last = TWO64 // 4 * 3
    lo = np.array([[last, 0], [0, 0], [last + TWO64 // 8, 0]], dtype=np.uint64)
    hi = np.array([[TWO64 - 1, 1], [TWO64 - 1, 1], [TWO64 - 1, 1]], dtype=np.uint64)
    assert np.allclose(fh.answer(lo, hi), [30, 40, 15], atol=1e-3)


def test_ug_grid_size_and_noise_variance():
    assert ug_cells_per_axis(10**6, 1.0, 2) == 317        # ceil(sqrt(10^5))
    assert ug_cells_per_axis(10**4, 0.1, 2) == 10
    rng = np.random.default_rng(4)
    pts = rng.integers(0, 1000, (20000, 2))
    dom = [(0, 999), (0, 999)]
    ug = UniformGrid(pts, dom, 1.0, n_share=0.0, seed=0)
    assert ug.m == 45
    # a query covering exactly 3x2 whole cells: error = sum of 6 Lap(1/eps)
    s, e = ug.axes[0].starts, ug.axes[0].ends
    lo = np.array([[int(s[2]), int(s[5])]])
    hi = np.array([[int(e[4]), int(e[6])]])
    true = _brute_rect(pts, lo, hi)
    errs = np.array([UniformGrid(pts, dom, 1.0, n_share=0.0, seed=k).answer(lo, hi)[0]
                     for k in range(2000)]) - true[0]
    assert 0.8 < errs.var() / 12.0 < 1.2


def test_adaptive_grid_exact_with_huge_epsilon_and_consistent():
    rng = np.random.default_rng(5)
    dom = [(0, 59), (100, 159)]
    pts = np.stack([rng.integers(0, 60, 3000), rng.integers(100, 160, 3000)], 1)
    lo, hi = random_rectangles(200, dom, kind="data", points=pts, seed=5)
    ag = AdaptiveGrid(pts, dom, 1e9, seed=0)
    assert np.abs(ag.answer(lo, hi) - _brute_rect(pts, lo, hi)).max() < 1e-3
    ag = AdaptiveGrid(pts, dom, 0.5, seed=1)
    # after constrained inference every level-1 cell equals the sum of its sub-cells
    whole = ag.answer(np.array([[0, 100]]), np.array([[59, 159]]))[0]
    assert np.isclose(whole, ag.level1.sum())
    # and a query inside one level-1 cell is answered from its sub-cells, not uniformly
    assert ag.m1 == 10 and ag.m2.max() > 1


def test_adaptive_grid_3d_runs_and_beats_noise_free_bias_bound():
    rng = np.random.default_rng(6)
    dom = [(0, 2**20), (0, 2**20), (0, 2**20)]
    pts = rng.integers(0, 2**20, (20000, 3))
    lo, hi = random_rectangles(300, dom, seed=6)
    true = rectangle_counts(pts, lo, hi)
    for mech in (UniformGrid(pts, dom, 1.0, seed=0), AdaptiveGrid(pts, dom, 1.0, seed=0)):
        rmse = np.sqrt(np.mean((mech.answer(lo, hi) - true) ** 2))
        assert rmse < 0.05 * len(pts), type(mech).__name__


# ---------------------------------------------------------------- workloads

@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_rectangle_counts_match_brute_force(c):
    rng = np.random.default_rng(c)
    pts = rng.integers(-50, 50, (3000, c))
    dom = [(-50, 49)] * c
    for kind in ("uniform", "data"):
        lo, hi = random_rectangles(200, dom, kind=kind, points=pts, seed=c)
        assert np.array_equal(rectangle_counts(pts, lo, hi), _brute_rect(pts, lo, hi))


def test_interval_counts_near_two_to_the_64():
    rng = np.random.default_rng(2)
    v = np.concatenate([rng.integers(0, TWO64, 1000, dtype=np.uint64),
                        np.array([0, TWO64 - 1, TWO64 - 1], dtype=np.uint64)])
    lo, hi = random_intervals(200, (0, TWO64 - 1), kind="data", values=v, seed=0)
    assert lo.dtype == np.uint64
    want = [int(((v >= a) & (v <= b)).sum()) for a, b in zip(lo, hi)]
    assert np.array_equal(interval_counts(v, lo, hi), want)


def test_adaptive_grid_level2_uniformity_against_python_oracle():
    # eps huge so noise ~1e-9; c_const chosen so m1 = 10 and m2 in 3..5: answers
    # must equal sum over sub-cells of true count x covered fraction (uniformity).
    rng = np.random.default_rng(11)
    dom = [(0, 999), (-500, 499)]
    pts = np.stack([rng.integers(0, 1000, 3000), rng.integers(-500, 500, 3000)], 1)
    ag = AdaptiveGrid(pts, dom, 1e9, c_const=3e9, n_share=0.0, seed=0)
    assert ag.m1 == 10 and ag.m2.min() >= 2 and ag.m2.max() <= 6
    lo, hi = random_rectangles(60, dom, seed=12)
    want = np.zeros(60)
    for g in range(100):
        i, j = divmod(g, 10)
        m2 = int(ag.m2[g])
        cell = []
        for k, idx in ((0, i), (1, j)):
            s0 = dom[k][0] + idx * 1000 // 10
            w = (idx + 1) * 1000 // 10 - idx * 1000 // 10
            cell.append([(s0 + t * w // m2, s0 + (t + 1) * w // m2 - 1) for t in range(m2)])
        for (a0, a1) in cell[0]:
            for (b0, b1) in cell[1]:
                n_sub = np.sum((pts[:, 0] >= a0) & (pts[:, 0] <= a1)
                               & (pts[:, 1] >= b0) & (pts[:, 1] <= b1))
                fx = np.clip(np.minimum(hi[:, 0].astype(np.int64), a1)
                             - np.maximum(lo[:, 0].astype(np.int64), a0) + 1, 0, None) / (a1 - a0 + 1)
                fy = np.clip(np.minimum(hi[:, 1].astype(np.int64), b1)
                             - np.maximum(lo[:, 1].astype(np.int64), b0) + 1, 0, None) / (b1 - b0 + 1)
                want += n_sub * fx * fy
    assert np.abs(ag.answer(lo, hi) - want).max() < 1e-4


# ---------------------------------------------------------------- PrivTree


def _leaf_cover_counts(tree, dom):
    """How many leaves cover each integer point of a small domain (must be all 1)."""
    grids = np.meshgrid(*[np.arange(lo, hi + 1) for lo, hi in dom], indexing="ij")
    pts = np.stack([g.ravel() for g in grids], 1)
    off = pts - np.array([lo for lo, _ in dom])[None, :]
    s, e = tree.starts.astype(np.int64), tree.ends.astype(np.int64)
    inside = np.all((off[:, None, :] >= s[None]) & (off[:, None, :] <= e[None]), axis=2)
    return inside.sum(axis=1)


def test_privtree_parameters_corollary_1():
    lam, delta = privtree_parameters(0.5, 2)
    assert np.isclose(lam, 3 / 0.5) and np.isclose(delta, lam * np.log(2))
    lam, delta = privtree_parameters(1.0, 8)
    assert np.isclose(lam, 15 / 7) and np.isclose(delta, lam * np.log(8))


def test_privtree_1d_exact_with_huge_epsilon_and_partition():
    rng = np.random.default_rng(1)
    dom = (-300, 4000)
    vals = rng.integers(-300, 4001, 5000)
    t = PrivTree(vals, dom, 1e9, seed=2)
    lo, hi = random_intervals(400, dom, kind="data", values=vals, seed=3)
    assert np.abs(t.answer(lo, hi) - interval_counts(vals, lo, hi)).max() < 1e-3
    lo, hi = random_intervals(400, dom, seed=4)
    assert np.abs(t.answer(lo, hi) - interval_counts(vals, lo, hi)).max() < 1e-3
    s, e = t.starts[:, 0], t.ends[:, 0]
    assert s[0] == 0 and e[-1] == 4300 and np.all(s[1:] == e[:-1] + np.uint64(1))
    # every non-empty leaf is a single value (huge eps: a node splits iff it holds a point)
    assert np.all((t.counts == 0) | (s == e))


def test_privtree_leaves_grow_with_n_and_stop_at_width_one():
    dom = (0, 2**40 - 1)
    rng = np.random.default_rng(5)
    sizes = [t.num_leaves for t in (PrivTree(rng.integers(0, 2**40, n), dom, 1.0, seed=6)
                                    for n in (1_000, 10_000, 100_000))]
    assert sizes[0] < sizes[1] < sizes[2], sizes
    # a 64-value domain with 10^5 points: every leaf ends at width 1, 64 of them
    vals = rng.integers(0, 64, 100_000)
    t = PrivTree(vals, (0, 63), 1.0, seed=7)
    assert t.num_leaves == 64 and np.all(t.starts == t.ends) and t.depths.max() == 6
    assert np.array_equal(t.counts, np.bincount(vals, minlength=64))


@pytest.mark.parametrize("dom", [(0, TWO64 - 1), (-2**63, 2**63 - 1), (5, TWO64 - 2)])
def test_privtree_domains_near_two_to_the_64(dom):
    lo_, hi_ = dom
    dt = np.uint64 if lo_ >= 0 else np.int64
    rng = np.random.default_rng(8)
    base = rng.integers(0, 2**62, 2000, dtype=np.uint64)
    vals = np.concatenate([np.array([lo_, lo_, hi_, hi_, hi_ - 1], dtype=object),
                           (base + np.uint64(lo_ % TWO64)).astype(dt).astype(object)]).astype(dt)
    t = PrivTree(vals, dom, 1e9, seed=9)
    s, e = t.starts[:, 0], t.ends[:, 0]
    assert int(s[0]) == 0 and int(e[-1]) == hi_ - lo_ and np.all(s[1:] == e[:-1] + np.uint64(1))
    assert t.depths.max() <= 64
    lo, hi = random_intervals(200, dom, kind="data", values=vals, seed=10)
    lo = np.concatenate([lo, np.array([lo_, hi_], dtype=dt)])
    hi = np.concatenate([hi, np.array([hi_, hi_], dtype=dt)])
    assert np.abs(t.answer(lo, hi) - interval_counts(vals, lo, hi)).max() < 1e-3
    # at a real epsilon the whole-domain answer is the sum of the noisy leaves
    t = PrivTree(vals, dom, 1.0, seed=11)
    assert np.isclose(t.answer(np.array([lo_], dtype=dt), np.array([hi_], dtype=dt))[0], t.noisy.sum())


@pytest.mark.parametrize("c", [2, 3])
def test_privtree_cd_exact_partition_and_uniformity(c):
    rng = np.random.default_rng(c)
    dom = [(-8, 7), (100, 111), (0, 4)][:c]
    pts = np.stack([rng.integers(lo, hi + 1, 3000) for lo, hi in dom], 1)
    # skew: a dense corner so that the tree is unbalanced
    pts[:1500] = np.array([lo for lo, _ in dom])[None, :] + rng.integers(0, 2, (1500, c))
    t = PrivTree(pts, dom, 1e9, seed=1)
    assert t.beta == 2 ** c
    assert np.all(_leaf_cover_counts(t, dom) == 1)
    lo, hi = random_rectangles(300, dom, seed=2)
    assert np.abs(t.answer(lo, hi) - _brute_rect(pts, lo, hi)).max() < 1e-3
    # a real epsilon: partition, counts, and answers = uniformity oracle over the leaves
    t = PrivTree(pts, dom, 0.5, seed=3)
    assert np.all(_leaf_cover_counts(t, dom) == 1)
    off = pts - np.array([lo_ for lo_, _ in dom])[None, :]
    s, e = t.starts.astype(np.int64), t.ends.astype(np.int64)
    inside = np.all((off[:, None, :] >= s[None]) & (off[:, None, :] <= e[None]), axis=2)
    assert np.array_equal(inside.sum(axis=0), t.counts)
    ql = lo - np.array([lo_ for lo_, _ in dom])[None, :]
    qh = hi - np.array([lo_ for lo_, _ in dom])[None, :]
    ov = np.clip(np.minimum(qh[:, None, :], e[None]) - np.maximum(ql[:, None, :], s[None]) + 1, 0, None)
    want = (np.prod(ov / (e - s + 1)[None], axis=2) * t.noisy[None, :]).sum(axis=1)
    assert np.allclose(t.answer(lo, hi), want)


def test_privtree_cd_wide_axes_and_width_one_axis():
    # axis 1 has a single value: children split only axis 0 (fanout 2 < beta = 4)
    pts = np.stack([np.random.default_rng(4).integers(0, 2**64 - 1, 500, dtype=np.uint64,
                                                      endpoint=True),
                    np.full(500, 7, dtype=np.uint64)], 1)
    dom = [(0, TWO64 - 1), (7, 7)]
    t = PrivTree(pts, dom, 1e9, seed=5)
    assert np.all(t.starts[:, 1] == 0) and np.all(t.ends[:, 1] == 0)
    lo, hi = random_rectangles(100, dom, kind="data", points=pts, seed=6)
    assert np.abs(t.answer(lo, hi) - _brute_rect(pts.astype(object), lo.astype(object),
                                                 hi.astype(object))).max() < 1e-3


# ---------------------------------------------------------------- DAWA

def test_dawa_window_deviations_match_brute_force():
    rng = np.random.default_rng(12)
    for n in (1, 2, 5, 8, 13, 64, 100):
        x = rng.integers(0, 6, n) * rng.integers(0, 2, n) * 1000
        dev = WindowDeviations(x)
        for (s, L), want in brute_force_costs(x).items():
            assert abs(dev.dev[L.bit_length() - 1][s] - want) < 1e-6 * max(1.0, want)


def _brute_partition(x, inv2):
    """Least total (L1 deviation + inv2) over partitions into power-of-two-length intervals."""
    costs = brute_force_costs(x)
    n = len(x)
    best = [0.0] + [np.inf] * n
    for i in range(1, n + 1):
        L = 1
        while L <= i:
            best[i] = min(best[i], best[i - L] + costs[(i - L, L)] + inv2)
            L *= 2
    return best[n]


def test_dawa_l1_partition_is_least_cost_without_noise():
    rng = np.random.default_rng(13)
    for n in (1, 3, 7, 12, 30):
        for inv2 in (0.5, 3.0, 20.0):
            x = rng.integers(0, 8, n) * rng.integers(0, 2, n)
            bounds, total = l1_partition(WindowDeviations(x), 1.0, 1.0 / inv2, None, noise=False)
            assert np.isclose(total, _brute_partition(x, inv2))
            assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 1)
            L = np.diff(bounds)
            assert np.all(L & (L - 1) == 0)                      # power-of-two lengths
            recomputed = sum(brute_force_costs(x)[(int(s), int(l))] + inv2
                             for s, l in zip(bounds[:-1], L))
            assert np.isclose(recomputed, total)


def _dense_greedy_h(R, branch=2, granu=100):
    """Dense GreedyH (explicit inverses) on workload matrix R; {(lo, hi): weight}."""
    from scipy.linalg import block_diag

    def rec(n, off, depth):
        if n == 1:
            return np.linalg.norm(R[:, off]) ** 2, np.array([[1.0]]), [((off, off + 1), 1.0)]
        S = R[:, off:off + n]
        if np.all(S.min(axis=1) == S.max(axis=1)):
            return np.linalg.norm(S[:, 0]) ** 2, np.full((n, n), 1.0 / n**2), [((off, off + n), 1.0)]
        if n <= branch:
            sep = list(range(n + 1))
        else:
            rem = n % branch
            step = (n - rem) // branch
            swi = (branch - rem) * step
            sep = list(range(0, swi, step)) + list(range(swi, n, step + 1)) + [n]
        parts = [rec(b - a, off + a, depth + 1) for a, b in zip(sep[:-1], sep[1:])]
        us = [p[1].sum(axis=0) for p in parts]
        u = np.concatenate(us)
        k = u.sum()
        m1 = sum(np.linalg.norm(S[:, a:b] @ v) ** 2 for a, b, v in zip(sep[:-1], sep[1:], us))
        m = np.linalg.norm(S @ u) ** 2
        sumerr = sum(p[0] for p in parts)
        decay = 1.0 / branch ** (depth / 2.0)
        err1 = np.arange(granu, 0, -1.0) ** 2
        err2 = np.arange(granu, dtype=float) ** 2 * decay
        tot = 1.0 / err1 * (sumerr - ((m - m1) * decay + m1) * err2 / (err1 + err2 * k))
        perc = 1 - np.argmin(tot) / granu
        inv = (1 / perc) ** 2 * (block_diag(*[p[1] for p in parts])
                                 - (1 - perc) ** 2 / (perc**2 + k * (1 - perc) ** 2) * np.outer(u, u))
        dist = [((off, off + n), 1 - perc)] + [(r, perc * w) for p in parts for r, w in p[2]]
        return tot.min() * granu**2, inv, dist

    return dict(rec(R.shape[1], 0, 0)[2])


@pytest.mark.parametrize("form", ["q", "qtq"])
def test_dawa_greedy_h_matches_dense_reference(form):
    rng = np.random.default_rng(14)
    m, q = 37, 60
    a = rng.integers(0, m, q)
    b = np.minimum(a + rng.integers(0, 15, q), m - 1)
    b[20:] = rng.integers(30, m, q - 20)                  # long queries: inner nodes get weight
    a[20:] = rng.integers(0, 6, q - 20)
    fa, fb = rng.uniform(0.2, 1, q), rng.uniform(0.2, 1, q)
    a[:3], b[:3], fa[:3] = 10, 10, 1.0                    # identical point queries: a uniform node
    W = _Workload(a, b, fa, np.where(a == b, 0.0, fb))
    Q = np.array([[W.value(np.full(q, c))[i] for c in range(m)] for i in range(q)])
    ref = _dense_greedy_h(Q if form == "q" else Q.T @ Q)
    d = Dawa.__new__(Dawa)
    y = rng.integers(0, 50, m).astype(float)
    est = d._greedy_h(W, y, m, 1.0, 2, 100, form, np.random.default_rng(0))
    got = {(int(lo), int(hi)): float(w) for lev in d.levels
           for lo, hi, w in zip(lev["lo"], lev["hi"], lev["w"])}
    assert got.keys() == ref.keys()
    assert np.allclose([got[k] for k in ref], [ref[k] for k in ref])
    assert any(0 < w < 1 for w in ref.values())          # the weight search did something
    # the estimate is the least-squares (min-norm) solution of the weighted queries
    rows, obs = [], []
    for lev in d.levels:
        for lo, hi, w, o in zip(lev["lo"], lev["hi"], lev["w"], lev["obs"]):
            if w > 0:
                r = np.zeros(m)
                r[lo:hi] = w
                rows.append(r)
                obs.append(o)
    assert np.allclose(est, np.linalg.pinv(np.array(rows)) @ np.array(obs), atol=1e-6)


def test_dawa_exact_with_huge_epsilon_and_uniform_in_cells():
    rng = np.random.default_rng(15)
    dom = (-200, 3000)
    vals = rng.integers(-200, 3001, 8000)
    lo, hi = random_intervals(300, dom, kind="data", values=vals, seed=16)
    d = Dawa(vals, dom, 1e9, lo, hi, seed=17)
    assert d.axis.m == 3201
    assert np.abs(d.answer(lo, hi) - interval_counts(vals, lo, hi)).max() < 1e-3
    # 2^16 cells over a 2^64 domain: the answer inside a cell is uniform
    big = np.full(100, 5 * 2**48 + 3, dtype=np.uint64)
    lo2 = np.array([5 * 2**48, 0], dtype=np.uint64)
    hi2 = np.array([5 * 2**48 + 2**47 - 1, TWO64 - 1], dtype=np.uint64)
    d = Dawa(big, (0, TWO64 - 1), 1e9, lo2, hi2, seed=18)
    assert np.allclose(d.answer(lo2, hi2), [50.0, 100.0], atol=1e-3)
    assert d.num_buckets <= 40                       # the empty runs are merged
