"""Short tier of research/explore_hquadtree.py.

Its answer path is the release's: fed the release's leaf counts it must give
``count_many``; its consistency passes must be the weighted least-squares
solution (checked against a dense solve) and exact on exact counts; every
path's budgets must add up to the release's leaf budget.
"""
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "benchmarks"))

import explore_hquadtree as eh  # noqa: E402


def _build(n=4000, eps=1.0, seed=3):
    import bench_accuracy
    import pydp_synopsis as ps
    from pydp_synopsis.rectangles import RectangleSynopsis

    name, pts, dom = bench_accuracy.datasets(2, n)[0]
    syn = RectangleSynopsis.build(pts, domain=dom, epsilon=eps, rng=ps.Rng(seed=seed),
                                  structure="quadtree")
    off = np.column_stack([(pts[:, a] - dom[a][0]).astype(np.uint64) for a in range(2)])
    return syn, eh.quadtree_of(syn), pts, dom, off


def _offsets(x, dom):
    return np.column_stack([(x[:, a] - dom[a][0]) for a in range(2)]).astype(np.uint64)


def test_answers_are_the_release_and_points_find_their_leaves():
    import bench_accuracy

    syn, qt, pts, dom, off = _build()
    wl = bench_accuracy.make_workloads(2, pts, dom, 60, seed=7)
    for kind, (lo, hi, _) in wl.items():
        mine = eh.answers(qt, qt.counts, _offsets(lo, dom), _offsets(hi, dom))
        np.testing.assert_allclose(mine, syn.count_many(lo, hi), rtol=0, atol=1e-6, err_msg=kind)
    node = eh.point_leaves(qt, off)
    sh = qt.shape
    assert np.all(sh.leaf[node] >= 0)
    cell = np.column_stack([np.searchsorted(np.asarray(qt.axes.ends[a], np.uint64), off[:, a])
                            for a in range(2)])
    assert np.all((cell >= sh.first[node]) & (cell <= sh.last[node]))


def test_consistency_is_weighted_least_squares():
    _, qt, _, _, _ = _build(n=1500, eps=0.5)
    sh = qt.shape
    n_nodes, n_leaves = sh.depth.size, qt.counts.size
    assert 8 < n_leaves < 400
    rng = np.random.default_rng(11)
    var = rng.uniform(0.5, 4.0, n_nodes)
    var[rng.random(n_nodes) < 0.2] = np.inf          # some nodes without a count
    var[sh.leaf >= 0] = rng.uniform(0.5, 4.0, n_leaves)
    y = rng.normal(0, 3, n_nodes) + 10
    x = eh.consistent(sh, np.where(np.isfinite(var), y, 0.0), var)
    # dense: node values = A @ leaf values; minimise sum over counted nodes of (y - A x)^2 / var
    a = np.zeros((n_nodes, n_leaves))
    for k in range(n_leaves):
        e = np.zeros(n_leaves)
        e[k] = 1.0
        a[:, k] = sh.subtree_sums(e)
    own = np.isfinite(var)
    w = 1 / np.sqrt(var[own])
    leaves, *_ = np.linalg.lstsq(a[own] * w[:, None], y[own] * w, rcond=None)
    np.testing.assert_allclose(x, a @ leaves, rtol=1e-9, atol=1e-8)
    exact = sh.subtree_sums(rng.integers(0, 50, n_leaves).astype(float))
    np.testing.assert_allclose(eh.consistent(sh, exact, np.where(own, var, np.inf)), exact,
                               atol=1e-9)


@pytest.mark.parametrize("share,decay", [(0.0, 1.0), (0.5, 1.0), (0.6, 1.4), (0.3, 0.7)])
def test_every_path_spends_the_leaf_budget(share, decay):
    _, qt, _, _, _ = _build()
    sh = qt.shape
    e = eh.node_budgets(qt, share, decay)
    assert np.all(e >= 0)
    leaves = np.flatnonzero(sh.leaf >= 0)
    spent = e[leaves].copy()
    node = leaves.copy()
    while np.any(sh.parent[node] >= 0):
        up = sh.parent[node] >= 0
        node = np.where(up, sh.parent[node], node)
        spent += np.where(up, e[node], 0.0)
    np.testing.assert_allclose(spent, float(qt.epsilon_leaf), rtol=1e-12)
    assert np.all(e[leaves] >= (1 - share) * float(qt.epsilon_leaf) * (1 - 1e-12))


def test_the_table_prints(capsys):
    rows = eh.main(["share=0.5", "--subsample", "3000", "--reps", "1", "--queries", "40",
                    "--eps", "1"])
    out = capsys.readouterr().out
    assert len(rows) == 6
    for name, eps, kind, rmse, best in rows:
        assert best is None and all(np.isfinite(v) and v >= 0 for v in rmse.values()), name
    assert sum(line.startswith("| ") for line in out.splitlines()) == len(rows) + 1


def test_bad_variant_is_refused():
    with pytest.raises(SystemExit, match="share"):
        eh.parse_variant("share=1.5")
    with pytest.raises(SystemExit, match="share=S"):
        eh.parse_variant("depth=3")
