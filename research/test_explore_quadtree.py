"""Short tier of research/explore_quadtree.py.

The quadtree's leaves must be nodes of the midpoint-halving tree that tile the
domain, with their true counts; with a huge epsilon the noise vanishes, the
split rule becomes ``c > d delta + theta`` and boxes made of whole leaves are
answered exactly; the split decisions along a small tree must follow the exact
discrete-Laplace law (chi-square at alpha = 1e-6); the answer spreads a
leaf's value uniformly; the leaf counts' noise has the variance of
discrete Laplace of scale ``1 / eps_t``; the ``--edges`` diagnostics agree with a hand
computation and a direct search of the segments; the table prints finite ratios; bad
arguments exit 2.
"""
import math
import os
import sys
from fractions import Fraction

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "benchmarks"))
sys.path.insert(2, os.path.join(os.path.dirname(HERE), "tests"))

import explore_quadtree as ex  # noqa: E402
import bench_accuracy  # noqa: E402
import workloads  # noqa: E402
import pydp_synopsis as ps  # noqa: E402
from stattests import assert_gof, assert_mean_var  # noqa: E402


def _zip_points(n):
    """The ZIP codes' ``(offsets, sizes)`` of ``bench_accuracy.datasets(2, n)``."""
    _, values, domain = bench_accuracy.datasets(2, n)[0]
    base = np.array([d[0] for d in domain], dtype=np.int64)
    return values - base, [d[1] - d[0] + 1 for d in domain]


def _brute_counts(pts, first, last):
    """Points inside each box ``[first[i], last[i]]``, one box at a time."""
    return np.array([int(np.all((pts >= a) & (pts <= b), axis=1).sum())
                     for a, b in zip(first, last)])


def _halving_node(first, depth, sizes):
    """The node of ``depth`` of the midpoint-halving quadtree holding the cell ``first``."""
    s, e = np.zeros(2, dtype=np.int64), np.array(sizes, dtype=np.int64) - 1
    for _ in range(depth):
        if (e == s).all():
            return None                  # no node of this depth holds the cell
        for k in range(2):
            if e[k] > s[k]:
                m = s[k] + (e[k] - s[k]) // 2
                s[k], e[k] = (m + 1, e[k]) if first[k] > m else (s[k], m)
    return s, e


@pytest.mark.parametrize("sizes, tk, seed", [((37, 53), 0, 1), ((37, 53), 2, 2), ((1, 64), 1, 3),
                                             ((64, 2), 3, 4)])
def test_leaves_tile_a_small_domain(sizes, tk, seed):
    rng = np.random.default_rng(seed)
    pts = np.stack([rng.integers(0, s, 400) for s in sizes], 1)
    pts[:200] = pts[:200] // 4                          # a dense corner
    lam, delta, theta = ex.quadtree_parameters(Fraction(1, 2), tk)
    first, last, count, depth = ex.grow(pts, sizes, lam, delta, theta, ps.Rng(seed=seed))
    cover = np.zeros(sizes, dtype=np.int64)
    for a, b in zip(first, last):
        cover[a[0]:b[0] + 1, a[1]:b[1] + 1] += 1
    assert (cover == 1).all()                           # disjoint and covering
    np.testing.assert_array_equal(count, _brute_counts(pts, first, last))
    for a, b, d in zip(first, last, depth):            # every leaf is a node of its depth
        s, e = _halving_node(a, int(d), sizes)
        np.testing.assert_array_equal(np.stack([s, e]), np.stack([a, b]))


def test_leaves_tile_the_zip_domain():
    pts, sizes = _zip_points(3000)
    first, last, count, noisy = ex.build(pts, sizes, 1.0, 5, share=0.5, tk=4)
    area = sum(int(x) * int(y) for x, y in (last - first + 1).tolist())
    assert area == sizes[0] * sizes[1]
    lo = np.maximum(first[:, None, :], first[None, :, :])
    hi = np.minimum(last[:, None, :], last[None, :, :])
    overlap = (hi >= lo).all(axis=2)
    assert overlap.sum() == first.shape[0]              # each leaf meets itself only
    assert int(count.sum()) == pts.shape[0]
    np.testing.assert_array_equal(count, _brute_counts(pts, first, last))
    assert noisy.dtype == np.int64 and (noisy != count).any()


def test_huge_epsilon_is_exact():
    pts, sizes = _zip_points(2000)
    tk = 2
    first, last, count, noisy = ex.build(pts, sizes, 1e6, 9, share=0.5, tk=tk)
    lam, delta, theta = ex.quadtree_parameters(Fraction(10**6) / 2, tk)
    assert delta == 1 and theta == -tk
    np.testing.assert_array_equal(noisy, count)
    np.testing.assert_array_equal(count, _brute_counts(pts, first, last))
    # no noise: the same leaves from any seed, and a leaf that could split holds at
    # most d delta + theta points
    again, _, _, depth = ex.grow(pts, sizes, lam, delta, theta, ps.Rng(seed=1))
    np.testing.assert_array_equal(again, first)
    wide = (last > first).any(axis=1)
    assert (count[wide] <= depth[wide] + theta).all() and count.max() >= 2
    # boxes made of whole leaves: every leaf, the domain, the nodes of depths 1-3 that
    # are unions of leaves
    boxes = [(a, b) for a, b in zip(first, last)] + [(np.zeros(2, np.int64), np.array(sizes) - 1)]
    cells = np.random.default_rng(0).integers(0, sizes, (200, 2))
    for d in (1, 2, 3):
        for cell in cells:
            node = _halving_node(cell, d, sizes)
            lo = np.maximum(first, node[0])
            hi = np.minimum(last, node[1])
            inside = np.prod(np.maximum(hi - lo + 1, 0), axis=1)
            if ((inside == 0) | (inside == np.prod(last - first + 1, axis=1))).all():
                boxes.append(node)
    assert len(boxes) > first.shape[0] + 20
    blo, bhi = np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes])
    got = ex.answer(first, last, noisy, blo, bhi)
    np.testing.assert_array_equal(got, _brute_counts(pts, blo, bhi).astype(np.float64))


def _split_probability(biased, theta, lam):
    """``P(biased + Z > theta)``, ``Z ~ DLap(lam)``: ``P(Z >= k) = a^k / (1 + a)`` for
    ``k >= 1`` and ``1 - a^(1 - k) / (1 + a)`` for ``k <= 0``, ``a = e^(-1/lam)``."""
    a = math.exp(-1 / float(lam))
    k = theta - biased + 1
    return a ** k / (1 + a) if k >= 1 else 1 - a ** (1 - k) / (1 + a)


def test_split_decisions_follow_the_discrete_laplace_law():
    # domain 1 x 4, 3 points in the first cell: the root (depth 0) splits into [0, 1] and
    # [2, 3] (depth 1, 3 and 0 points), whose children are single cells (no draw)
    lam, delta, theta = ex.quadtree_parameters(Fraction(1), tk=1)
    assert (lam, delta, theta) == (Fraction(7, 3), 4, -4)
    pts = np.zeros((3, 2), dtype=np.int64)
    p_root = _split_probability(max(theta - delta, 3), theta, lam)
    p_a = _split_probability(max(theta - delta, 3 - delta), theta, lam)
    p_b = _split_probability(max(theta - delta, 0 - delta), theta, lam)
    outcomes = {(): 1 - p_root}
    for sa in (False, True):
        for sb in (False, True):
            outcomes[(sa, sb)] = p_root * (p_a if sa else 1 - p_a) * (p_b if sb else 1 - p_b)
    seen = dict.fromkeys(outcomes, 0)
    rng = ps.Rng(seed=17)
    for _ in range(4000):
        first, last, count, depth = ex.grow(pts, [1, 4], lam, delta, theta, rng)
        if first.shape[0] == 1:
            seen[()] += 1
            continue
        a_split = depth[first[:, 1] == 0][0] == 2     # [0, 1] or its first cell
        b_split = depth[first[:, 1] == 2][0] == 2
        seen[(bool(a_split), bool(b_split))] += 1
        assert int(count.sum()) == 3
    keys = list(outcomes)
    assert_gof([seen[k] for k in keys], [outcomes[k] for k in keys])


@pytest.mark.parametrize("count, depth, tk", [(0, 3, 1), (0, 1, 0), (9, 2, 0), (22, 5, 1),
                                              (0, 0, 3)])
def test_split_decisions_of_many_nodes_follow_the_law(count, depth, tk):
    # the floor theta - delta is active at (0, 3, 1): b = max(-8, -12)
    lam, delta, theta = ex.quadtree_parameters(Fraction(1), tk)
    split = ex.split_decisions(np.full(4000, count, dtype=np.int64), depth, lam, delta, theta,
                               ps.Rng(seed=count + depth + tk))
    p = _split_probability(max(theta - delta, count - depth * delta), theta, lam)
    assert_gof([split.sum(), (~split).sum()], [p, 1 - p])


def test_release_noise_is_discrete_laplace_of_scale_one_over_eps_t():
    count = np.arange(20000, dtype=np.int64) % 7
    noisy = ex.release(count, Fraction(1, 2), ps.Rng(seed=23))
    assert noisy.dtype == np.int64
    assert_mean_var(noisy - count, 0.0, ps.discrete_laplace_variance(2))


def test_answer_spreads_a_leaf_uniformly():
    first = np.array([[0, 0], [2, 0]])
    last = np.array([[1, 3], [3, 3]])
    got = ex.answer(first, last, np.array([8.0, 4.0]), np.array([[1, 0], [0, 0], [3, 3]]),
                    np.array([[2, 1], [3, 3], [3, 3]]))
    np.testing.assert_allclose(got, [8 * 0.5 * 0.5 + 4 * 0.5 * 0.5, 12.0, 4 / 8], rtol=1e-15)


def test_edge_lines_by_hand():
    # a line of 4 points at x = 1 inside the leaf [0, 1] x [0, 3]; the box [1, 3] x [0, 3]
    # has its lower x edge on the line and takes half the leaf's count there
    pts = np.array([[1, 0], [1, 1], [1, 2], [1, 3]])
    first, last = np.array([[0, 0], [2, 0]]), np.array([[1, 3], [3, 3]])
    count = np.array([4, 0])
    counter = workloads.RectangleCounter(pts)
    (e0, w0), (e1, w1) = ex.edge_lines(first, last, count, counter, np.array([[1, 0]]),
                                       np.array([[3, 3]]), np.zeros(2, dtype=np.int64))
    assert (e0, w0) == (2.0, 2.0)           # x = 1: 2 of 4 answered; x = 3: exact
    assert e1 == 1.0 and np.isnan(w1)       # y = 0, 3: 0.5 of 1 each; no leaf reaches out in y


def test_segment_widths_are_the_edges_segments():
    _, values, domain = bench_accuracy.datasets(2, 3000)[1]
    syn = bench_accuracy.build_ours(2, values, domain, 1.0, 4, {}, "short")
    lo, hi = values[:50], values[50:100] + 3
    got = ex.segment_widths(syn, lo, hi)
    for k, part in enumerate(syn.partitions):
        ends = [int(e) for e in part.end_offsets]
        starts = [0] + [e + 1 for e in ends[:-1]]
        widths = [next(e - a + 1 for a, e in zip(starts, ends) if a <= x - domain[k][0] <= e)
                  for x in np.concatenate([lo[:, k], hi[:, k]]).tolist()]
        assert got[k] == np.median(widths)


def test_table_prints_finite_ratios(capsys):
    rows = ex.main(["share=0.5,tk=4", "share=0.55,theta=-3", "--subsample", "3000", "--reps", "2",
                    "--queries", "40", "--edges"])
    out = capsys.readouterr().out
    assert len(rows) == 4
    for name, eps, cells in rows:
        assert set(cells) == {"today", "share=0.5,tk=4", "share=0.55,theta=-3"}
        for rmse, ratio, low, high in cells.values():
            assert np.isfinite([rmse, ratio, low, high]).all() and 0 < low <= ratio <= high
    lines = [x for x in out.splitlines() if x.startswith("| ") and "|---" not in x]
    assert len(lines) == 9 and lines[1].startswith("| zip (lat, lon) | 0.1 |")
    edges = [x for x in lines if " | edges | " in x]
    assert len(edges) == 4 and all(x.count("edge-line RMSE") == 2 for x in edges)


@pytest.mark.parametrize("argv", [["share=1"], ["share=0"], ["tk=-1"], ["tk=1.5"], ["foo=1"],
                                  ["share"], ["share=0.5", "--reps", "0"],
                                  ["share=0.5", "--eps", "0"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        ex.main(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err
