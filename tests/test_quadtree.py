"""structure="quadtree" (issue 33, item 4): PrivTree's quadtree over the cells of the two
private partitions with flat noisy leaves (pydp_synopsis/rectangles/quadtree.py).

Exact: the tree rebuilt from its flags, the split draws against a pure-Python reference of
the documented rule, the answers with the noise removed against a direct formula of the
documented estimator, the error bars; statistical (alpha = 1e-6): the leaf noise and the
split test's law; the workload rule; bad input; files; the CLI."""
import math
import sqlite3
import time
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.bias_bounds import calibrated_interval, noise_quantile
from pydp_synopsis.errorbars import noise_std
from pydp_synopsis.rectangles.bars import CELL_CONCENTRATION, CELL_CORRELATION
from pydp_synopsis import cli, sources
from pydp_synopsis.errors import FormatError, ParameterError
from pydp_synopsis.noise import discrete_laplace, discrete_laplace_variance
from pydp_synopsis.partitions.privtree import privtree_parameters
from pydp_synopsis.rectangles.axes import axis_streams
from pydp_synopsis.rectangles.options import QUADTREE
from pydp_synopsis.rectangles.quadtree import MAX_NODES, QuadTree, Shape, grow
from pydp_synopsis.rectangles.workload import QUADTREE_MIN_EPSILON, BoxChoice
from pydp_synopsis.tails import laplace_sum_tail, laplace_weighted_tail
from clirun import one_line_error, run
from dnrr_law import dlap_pmf
from stattests import ALPHA, assert_gof, clopper_pearson
from two_columns import release

DOMAIN = [(0, 999), (0, 999)]
#: The corner pattern of a split node's children: child k is upper on axis a iff CORNERS[k][a].
CORNERS = ((0, 0), (1, 0), (0, 1), (1, 1))


@pytest.fixture(scope="module")
def points():
    """Clustered points (a city's events): two dense blobs, a heavy value, a thin spread."""
    g = np.random.default_rng(33)
    a = np.column_stack([g.normal(300, 25, 9000), g.normal(650, 30, 9000)])
    b = np.column_stack([g.normal(720, 60, 6000), g.normal(250, 15, 6000)])
    c = g.uniform(0, 999, (3000, 2))
    pts = np.clip(np.rint(np.concatenate([a, b, c])), 0, 999).astype(np.int64)
    pts[:800, 0] = 555                                      # a heavy value on axis 0
    return pts


@pytest.fixture(scope="module")
def syn(points):
    return ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=1, structure="quadtree",
                                      rng=ps.Rng(seed=4))


# --------------------------------------------------------------- references
def ends_of(syn):
    """Per axis, the partition segments' first and last offsets (uint64)."""
    starts, ends = [], []
    for e in syn._axes.ends:
        e = np.asarray(e, dtype=np.uint64)
        starts.append(np.concatenate([[np.uint64(0)], e[:-1] + np.uint64(1)]).astype(np.uint64))
        ends.append(e)
    return starts, ends


def ref_mid(st, en, s, e):
    """The documented midpoint rule on one axis: the segment in [s, e - 1] whose end is
    nearest the (floored) midpoint of the node's span in domain coordinates, ties to the
    lower one."""
    lo, hi = int(st[s]), int(en[e])
    cm = lo + (hi - lo) // 2
    return min(range(s, e), key=lambda t: (abs(int(en[t]) - cm), t))


def ref_children(node, starts, ends):
    """The children of a node ((s0, s1), (e0, e1)) in the documented order."""
    (s0, s1), (e0, e1) = node
    mids = [ref_mid(starts[a], ends[a], (s0, s1)[a], (e0, e1)[a])
            if (e0, e1)[a] > (s0, s1)[a] else None for a in range(2)]
    out = []
    for corner in CORNERS:
        if any(corner[a] and mids[a] is None for a in range(2)):
            continue
        f = tuple((mids[a] + 1 if corner[a] else (s0, s1)[a]) for a in range(2))
        l = tuple(((e0, e1)[a] if corner[a] or mids[a] is None else mids[a]) for a in range(2))
        out.append((f, l))
    return out


def ref_shape(flags, sizes, starts, ends):
    """Breadth-first nodes (first, last, parent, depth) of a flags vector, in pure Python."""
    level = [(((0, 0), (sizes[0] - 1, sizes[1] - 1)), -1)]
    nodes, at, d = [], 0, 0
    while level:
        nxt = []
        for node, parent in level:
            idx = len(nodes)
            nodes.append((node[0], node[1], parent, d))
            if flags[at]:
                nxt += [(c, idx) for c in ref_children(node, starts, ends)]
            at += 1
        level, d = nxt, d + 1
    return nodes


def ref_grow(cells, weights, sizes, starts, ends, lam, delta, theta, rng):
    """PrivTree's split rule as documented, breadth-first in pure Python: one draw of
    ``discrete_laplace(lam, size=k)`` per level over the k nodes that can split."""
    pts = [(tuple(int(v) for v in c), int(w)) for c, w in zip(cells, weights)]
    level, d = [((0, 0), (sizes[0] - 1, sizes[1] - 1))], 0
    flags, leaf_counts = [], []
    while level:
        counts = [sum(w for c, w in pts if all(f[a] <= c[a] <= l[a] for a in range(2)))
                  for f, l in level]
        wide = [i for i, (f, l) in enumerate(level) if f != l]
        z = discrete_laplace(lam, size=len(wide), rng=rng) if wide else []
        split = [False] * len(level)
        for i, zi in zip(wide, z):
            split[i] = max(theta - delta, counts[i] - d * delta) + int(zi) > theta
        flags += split
        leaf_counts += [c for c, s in zip(counts, split) if not s]
        level = [ch for node, s in zip(level, split) if s
                 for ch in ref_children(node, starts, ends)]
        d += 1
    return np.array(flags, dtype=bool), np.array(leaf_counts, dtype=np.int64)


def segments_of(syn, pts):
    """Each point's partition segment per axis."""
    return np.column_stack([np.searchsorted(np.asarray(syn._axes.ends[a]),
                                            pts[:, a].astype(np.uint64), side="left")
                            for a in range(2)])


def leaf_map(leaves, sizes):
    """The (m0, m1) grid of segment cells holding each cell's leaf index (-1: none)."""
    grid = np.full(sizes, -1, dtype=np.int64)
    for k, (s, e) in enumerate(zip(leaves["start"], leaves["end"])):
        grid[s[0]:e[0] + 1, s[1]:e[1] + 1] = k
    return grid


def true_leaf_counts(syn, pts):
    seg = segments_of(syn, pts)
    grid = leaf_map(syn.quadtree_leaves(), syn.segments)
    return np.bincount(grid[seg[:, 0], seg[:, 1]], minlength=grid.max() + 1)


def noiseless(syn, pts):
    """The same tree with every leaf's true count: a synopsis answering without noise."""
    m = syn._mechanism
    qt = QuadTree(m.axes, m.flags, true_leaf_counts(syn, pts), m.epsilon_split,
                  m.epsilon_leaf, m.split_share, m.split_levels)
    return ps.RectangleSynopsis._from_parts(m.axes, qt, "default")


def shares(syn, lo, hi):
    """The documented estimator's weights (q, L): each box snapped per axis to segments
    i..j (i holds lo, j the last ending at or before hi), each leaf weighted by its share
    of segment cells inside [i, j]."""
    leaves = syn.quadtree_leaves()
    w = np.ones((lo.shape[0], leaves.size))
    for a in range(2):
        en = np.asarray(syn._axes.ends[a])
        i = np.searchsorted(en, lo[:, a].astype(np.uint64), side="left")[:, None]
        j = np.searchsorted(en, hi[:, a].astype(np.uint64), side="right")[:, None] - 1
        s, e = leaves["start"][None, :, a], leaves["end"][None, :, a]
        w *= np.maximum(np.minimum(e, j) - np.maximum(s, i) + 1, 0) / (e - s + 1)
    return w


def truth(pts, lo, hi):
    """The true counts of boxes [lo, hi] (q, 2) over the points of DOMAIN (prefix sums)."""
    key = id(pts)
    if key not in _PREFIX:
        h = np.zeros((1001, 1001), dtype=np.int64)
        np.add.at(h, (pts[:, 0] + 1, pts[:, 1] + 1), 1)
        _PREFIX.clear()
        _PREFIX[key] = (pts, h.cumsum(axis=0).cumsum(axis=1))
    p = _PREFIX[key][1]
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64) + 1
    return p[hi[:, 0], hi[:, 1]] - p[lo[:, 0], hi[:, 1]] - p[hi[:, 0], lo[:, 1]] \
        + p[lo[:, 0], lo[:, 1]]


_PREFIX = {}


def test_truth_is_the_brute_force_count(points):
    lo, hi = random_boxes(0, q=50)
    inside = (points[None, :, :] >= lo[:, None, :]) & (points[None, :, :] <= hi[:, None, :])
    assert np.array_equal(truth(points, lo, hi), inside.all(axis=2).sum(axis=1))


def random_boxes(seed, q=300, small=False):
    g = np.random.default_rng(seed)
    lo = g.integers(0, 1000, (q, 2))
    width = g.integers(0, 60 if small else 1000, (q, 2))
    return lo, np.minimum(lo + width, 999)


# --------------------------------------------------------------- Shape
# axis 0: four segments of ten; axis 1: [0, 4] and [5, 99]
STARTS = [np.array([0, 10, 20, 30], dtype=np.uint64), np.array([0, 5], dtype=np.uint64)]
ENDS = [np.array([9, 19, 29, 39], dtype=np.uint64), np.array([4, 99], dtype=np.uint64)]


def test_shape_of_hand_made_flags():
    # root [0,3]x[0,1]: axis 0 cut after segment 1 (end 19 is the midpoint 19), axis 1
    # after segment 0 (end 4 is 45 from the midpoint 49, end 99 is 50 from it); then
    # child 0 = [0,1]x[0,0] and child 3 = [2,3]x[1,1] split on axis 0 only
    flags = np.array([1, 1, 0, 0, 1, 0, 0, 0, 0], dtype=bool)
    sh = Shape(flags, (4, 2), STARTS, ENDS)
    assert sh.first.tolist() == [[0, 0], [0, 0], [2, 0], [0, 1], [2, 1],
                                 [0, 0], [1, 0], [2, 1], [3, 1]]
    assert sh.last.tolist() == [[3, 1], [1, 0], [3, 0], [1, 1], [3, 1],
                                [0, 0], [1, 0], [2, 1], [3, 1]]
    assert sh.parent.tolist() == [-1, 0, 0, 0, 0, 1, 1, 4, 4]
    assert sh.depth.tolist() == [0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert sh.nchild.tolist() == [4, 2, 0, 0, 2, 0, 0, 0, 0]
    assert sh.child.tolist() == [1, 5, -1, -1, 7, -1, -1, -1, -1]
    assert sh.leaf.tolist() == [-1, -1, 0, 1, -1, 2, 3, 4, 5]
    sums = sh.subtree_sums(np.arange(1.0, 7.0))
    assert sums.tolist() == [21, 3 + 4, 1, 2, 5 + 6, 3, 4, 5, 6]
    # a lone root, not split: one leaf
    one = Shape(np.zeros(1, dtype=bool), (4, 2), STARTS, ENDS)
    assert one.leaf.tolist() == [0] and one.child.tolist() == [-1]


@pytest.mark.parametrize("flags, words", [
    ([], "end before the tree"),
    ([1, 1, 0, 0], "end before the tree"),
    ([1, 1, 0, 0, 1, 0, 0, 0], "end before the tree"),
    ([1, 1, 0, 0, 1, 0, 0, 0, 0, 0], "beyond the tree"),
    ([0, 0], "beyond the tree"),
    ([1, 1, 0, 0, 1, 1, 0, 0, 0], "a node of one cell splits"),
    ([1, 0, 1, 0, 0, 1, 0], "a node of one cell splits"),     # [2,2]x[0,0] splits
])
def test_shape_refuses_flags_that_are_not_a_tree(flags, words):
    with pytest.raises(FormatError, match=words):
        Shape(np.array(flags, dtype=bool), (4, 2), STARTS, ENDS)


def test_a_one_cell_root_cannot_split():
    one = [np.zeros(1, dtype=np.uint64), np.full(1, 9, dtype=np.uint64)]
    assert Shape(np.zeros(1, dtype=bool), (1, 1), one[:1] * 2, one[1:] * 2).leaf.tolist() == [0]
    with pytest.raises(FormatError, match="a node of one cell splits"):
        Shape(np.ones(1, dtype=bool), (1, 1), one[:1] * 2, one[1:] * 2)


def test_shape_matches_a_reference_and_its_leaves_tile_the_grid():
    g = np.random.default_rng(5)
    for trial in range(20):
        sizes = (int(g.integers(1, 12)), int(g.integers(1, 12)))
        starts, ends = [], []
        for m in sizes:         # uneven segments, some of one value, some huge
            widths = g.choice([1, 1, 2, 7, 50, 1000], m)
            e = np.cumsum(widths).astype(np.uint64) - np.uint64(1)
            ends.append(e)
            starts.append(np.concatenate([[0], e[:-1] + 1]).astype(np.uint64))
        # random valid flags grown by the reference: split a wide node with probability 0.7
        level, flags = [((0, 0), (sizes[0] - 1, sizes[1] - 1))], []
        while level:
            nxt = []
            for node in level:
                s = node[0] != node[1] and g.random() < 0.7
                flags.append(s)
                if s:
                    nxt += ref_children(node, starts, ends)
            level = nxt
        flags = np.array(flags, dtype=bool)
        sh = Shape(flags, sizes, starts, ends)
        ref = ref_shape(flags, sizes, starts, ends)
        assert sh.first.tolist() == [list(n[0]) for n in ref]
        assert sh.last.tolist() == [list(n[1]) for n in ref]
        assert sh.parent.tolist() == [n[2] for n in ref]
        assert sh.depth.tolist() == [n[3] for n in ref]
        # every node's children are consecutive, point back to it and tile it exactly
        for k in np.flatnonzero(flags):
            kids = range(sh.child[k], sh.child[k] + sh.nchild[k])
            assert all(sh.parent[c] == k for c in kids)
            area = np.prod(sh.last[list(kids)] - sh.first[list(kids)] + 1, axis=1).sum()
            assert area == np.prod(sh.last[k] - sh.first[k] + 1)
        cover = np.zeros(sizes, dtype=np.int64)
        for k in np.flatnonzero(~flags):
            cover[sh.first[k, 0]:sh.last[k, 0] + 1, sh.first[k, 1]:sh.last[k, 1] + 1] += 1
        assert (cover == 1).all(), trial
        assert sorted(sh.leaf[~flags].tolist()) == list(range(int((~flags).sum())))


def test_shape_on_the_whole_int64_plane_matches_the_reference():
    # offsets up to 2**64 - 1: the midpoints in uint64 without overflow
    g = np.random.default_rng(1)
    pts = np.concatenate([g.integers(-2**63, 2**63 - 1, (3000, 2), dtype=np.int64,
                                     endpoint=True),
                          np.array([[-2**63, -2**63], [2**63 - 1, 2**63 - 1]] * 50)])
    syn = ps.RectangleSynopsis.build(pts, domain=[(-2**63, 2**63 - 1)] * 2, epsilon=2,
                                     structure="quadtree", rng=ps.Rng(seed=3))
    m = syn._mechanism
    starts, ends = ends_of(syn)
    assert int(ends[0][-1]) == 2**64 - 1 and m.flags.size > 1000
    ref = ref_shape(m.flags, syn.segments, starts, ends)
    assert m.shape.first.tolist() == [list(n[0]) for n in ref]
    assert m.shape.last.tolist() == [list(n[1]) for n in ref]
    whole = syn.count([-2**63, -2**63], [2**63 - 1, 2**63 - 1])
    assert whole == m.counts.sum()


# --------------------------------------------------------------- grow
def test_grow_draws_as_the_reference_on_tiny_data():
    g = np.random.default_rng(8)
    for trial in range(25):
        sizes = (int(g.integers(1, 9)), int(g.integers(1, 9)))
        starts, ends = [], []
        for m in sizes:
            e = np.cumsum(g.integers(1, 30, m)).astype(np.uint64) - np.uint64(1)
            ends.append(e)
            starts.append(np.concatenate([[0], e[:-1] + 1]).astype(np.uint64))
        u = min(int(g.integers(0, 12)), sizes[0] * sizes[1])
        flat = g.choice(sizes[0] * sizes[1], size=u, replace=False)
        cells = np.column_stack([flat // sizes[1], flat % sizes[1]]).astype(np.int64)
        weights = g.integers(1, 40, u).astype(np.int64)
        eps = Fraction(int(g.integers(1, 9)), 4)
        lam, delta = privtree_parameters(eps, 4)
        theta = -int(g.integers(0, 5)) * delta
        got = grow(cells, weights, sizes, starts, ends, lam, delta, theta, ps.Rng(seed=trial))
        want = ref_grow(cells, weights, sizes, starts, ends, lam, delta, theta,
                        ps.Rng(seed=trial))
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), trial
        assert got[1].sum() == weights.sum()


@pytest.mark.parametrize("seed, eps, levels, share", [
    (6, Fraction(3, 2), 2, None), (7, Fraction(4), 0, None), (8, Fraction(8), 1, 0.5),
    (9, Fraction(1, 2), 4, None), (10, Fraction(16), 3, 0.9), (11, Fraction(6), 0, 0.7)])
def test_the_whole_release_is_the_reference_drawn_from_the_same_stream(seed, eps, levels, share):
    # partitions (32 bytes of the stream), then the splits level by level, then the leaves
    g = np.random.default_rng(seed)
    pts = np.column_stack([g.integers(0, 40, 300), g.integers(0, 60, 300) ** 2 // 60])
    kw = {} if share is None else {"split_share": share}
    syn = ps.RectangleSynopsis.build(pts, domain=[(0, 39), (0, 59)], epsilon=eps,
                                     structure="quadtree", split_levels=levels,
                                     rng=ps.Rng(seed=seed), **kw)
    m = syn._mechanism
    eps_axis = eps * QUADTREE.partition_share / 2
    split_share = QUADTREE.split_share if share is None else Fraction(str(share))
    assert m.epsilon_split == (eps - 2 * eps_axis) * split_share == m.split_share * (
        eps - 2 * eps_axis)
    assert m.epsilon_split + m.epsilon_leaf + 2 * eps_axis == syn.epsilon == eps
    lam, delta = privtree_parameters(m.epsilon_split, 4)
    assert m.scales == (lam, 1 / m.epsilon_leaf) and lam == Fraction(7, 3) / m.epsilon_split
    assert delta == math.ceil(float(lam) * math.log(4)) and m.split_levels == levels
    rng = ps.Rng(seed=seed)
    axis_streams(rng)
    seg = segments_of(syn, pts)
    cells, weights = np.unique(seg, axis=0, return_counts=True)
    starts, ends = ends_of(syn)
    flags, true = ref_grow(cells, weights, syn.segments, starts, ends, lam, delta,
                           -levels * delta, rng)
    noisy = true + discrete_laplace(1 / m.epsilon_leaf, size=true.size, rng=rng)
    assert np.array_equal(m.flags, flags) and flags.size > 1
    assert np.array_equal(syn.quadtree_leaves()["count"], noisy)
    assert np.array_equal(true_leaf_counts(syn, pts), true)


# --------------------------------------------------------------- leaves
def test_leaves_tile_the_segment_grid_and_carry_their_domain_boxes(syn):
    leaves = syn.quadtree_leaves()
    sizes = syn.segments
    assert leaves.size == int((~syn._mechanism.flags).sum()) and leaves.size > 100
    cover = np.zeros(sizes, dtype=np.int64)
    for s, e in zip(leaves["start"], leaves["end"]):
        cover[s[0]:e[0] + 1, s[1]:e[1] + 1] += 1
    assert (cover == 1).all()
    starts, ends = ends_of(syn)
    for a in range(2):
        assert np.array_equal(leaves["first"][:, a], starts[a][leaves["start"][:, a]])
        assert np.array_equal(leaves["last"][:, a], ends[a][leaves["end"][:, a]])
    assert leaves["depth"].min() >= 1 and (leaves["start"] <= leaves["end"]).all()
    # dense regions get small leaves, empty ones big leaves: the tree follows the points
    area = np.prod((leaves["last"] - leaves["first"]).astype(np.float64) + 1, axis=1)
    assert area.max() > 1000 * area.min()
    with pytest.raises(TypeError, match="quadtree_leaves"):
        ps.RectangleSynopsis.build([[1, 2]], domain=DOMAIN, epsilon=1,
                                   rng=ps.Rng(seed=1)).quadtree_leaves()


# --------------------------------------------------------------- answers
def test_noiseless_answers_are_exact_on_every_node_and_the_domain(syn, points):
    exact = noiseless(syn, points)
    sh = syn._mechanism.shape
    starts, ends = ends_of(syn)
    lo = np.column_stack([starts[a][sh.first[:, a]] for a in range(2)]).astype(np.int64)
    hi = np.column_stack([ends[a][sh.last[:, a]] for a in range(2)]).astype(np.int64)
    got = exact.count_many(lo, hi)
    assert np.array_equal(got, truth(points, lo, hi).astype(float))
    assert got[0] == len(points) == exact.count([0, 0], [999, 999])
    # unions of whole leaves that are no node: the lower half of every node split in four
    four = np.flatnonzero(sh.nchild == 4)
    assert four.size > 10
    c0, c1 = sh.child[four], sh.child[four] + 1             # corners (0, 0) and (1, 0)
    lo2 = np.column_stack([starts[a][sh.first[c0, a]] for a in range(2)]).astype(np.int64)
    hi2 = np.column_stack([ends[a][sh.last[c1, a]] for a in range(2)]).astype(np.int64)
    assert np.array_equal(exact.count_many(lo2, hi2), truth(points, lo2, hi2).astype(float))
    assert not np.array_equal(syn.count_many(lo2, hi2), exact.count_many(lo2, hi2))


def test_answers_are_the_documented_estimator(syn, points):
    for seed, small in ((1, False), (2, True)):
        lo, hi = random_boxes(seed, small=small)
        w = shares(syn, lo, hi)
        got = syn.count_many(lo, hi)
        want = w @ syn.quadtree_leaves()["count"].astype(np.float64)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-9)
        # std: the leaves' noise with these weights, exactly
        _, std = syn.count_many(lo, hi, return_std=True)
        var = discrete_laplace_variance(1 / syn._mechanism.epsilon_leaf)
        assert np.allclose(std, np.sqrt((w ** 2).sum(axis=1) * var), rtol=1e-12)
        # the noiseless tree: the same weights on the true counts
        exact = noiseless(syn, points)
        assert np.allclose(exact.count_many(lo, hi), w @ true_leaf_counts(syn, points),
                           rtol=1e-12, atol=1e-9)
    # a box inside one segment that holds no segment end: snapped to nothing
    en = np.asarray(syn._axes.ends[0]).astype(np.int64)
    wide = int(np.argmax(np.diff(en)))
    a, b = en[wide] + 1, en[wide + 1] - 1
    assert b > a
    assert syn.count([a, 0], [b - 1, 999]) == 0.0 != syn.count([a, 0], [b + 1, 999])


def test_answers_in_large_batches_and_clipping(syn):
    lo, hi = random_boxes(3, q=5000)
    got = syn.count_many(lo, hi)
    assert np.array_equal(got, np.concatenate([syn.count_many(lo[:7], hi[:7]),
                                               syn.count_many(lo[7:], hi[7:])]))
    assert np.array_equal(syn.count_many(lo, hi, nonnegative=True), np.maximum(got, 0))
    # corners beyond the domain are clipped to it
    with pytest.warns(ps.errors.QueryClippedWarning, match="reach outside the domain"):
        assert syn.count([-50, 100], [2000, 300]) == syn.count([0, 100], [999, 300])


# --------------------------------------------------------------- error bars
def test_rigorous_intervals_cover_and_the_bias_bounds_the_miscount(syn, points):
    exact = noiseless(syn, points)
    for seed, small in ((4, False), (5, True)):
        lo, hi = random_boxes(seed, small=small)
        t = truth(points, lo, hi)
        bars = syn.confidence_intervals(lo, hi, 0.95)
        assert bars.method == "rigorous"
        assert ((bars.low <= t) & (t <= bars.high)).all()
        answer, std = syn.count_many(lo, hi, return_std=True)
        assert np.array_equal(bars.answer, answer) and np.allclose(bars.std, std, rtol=1e-12)
        # the interval is answer -+ (noise + bias), low clipped at 0 (ErrorBars.bias is the
        # half-width beyond the noise, so the structure's own term is read here)
        lo_o, hi_o = lo.astype(np.uint64), hi.astype(np.uint64)
        _, noise, bias = syn._mechanism.error_bars(lo_o, hi_o, 0.95, 1)
        assert np.allclose(bars.noise, noise) and np.allclose(bars.high, answer + noise + bias)
        assert np.allclose(bars.low, np.maximum(answer - noise - bias, 0))
        # the documented tails: 1 - confidence split in halves, the noise's two-sided
        w = shares(syn, lo, hi)
        scale = [1 / syn._mechanism.epsilon_leaf]
        want = laplace_weighted_tail((w ** 2).sum(axis=1)[:, None], w.max(axis=1)[:, None],
                                     scale, math.log(4 / 0.05))
        assert np.allclose(noise, want, rtol=1e-9)
        leaves = syn.quadtree_leaves()
        inside = ((leaves["first"][None] >= lo[:, None]) &
                  (leaves["last"][None] <= hi[:, None])).all(axis=2)
        out = ((leaves["last"][None] < lo[:, None]) |
               (leaves["first"][None] > hi[:, None])).any(axis=2)
        cut = ~inside & ~out
        tail = laplace_weighted_tail(cut.sum(axis=1)[:, None].astype(float),
                                     np.ones((lo.shape[0], 1)), scale, math.log(2 / 0.05))
        assert np.allclose(bias, np.maximum(cut @ leaves["count"] + tail, 0), rtol=1e-9)
        miscount = np.abs(exact.count_many(lo, hi) - t)
        assert miscount.max() > 0       # the boxes do cut leaves
        # with the true leaf counts the bias term bounds the miscount surely
        _, e_noise, e_bias = exact._mechanism.error_bars(lo_o, hi_o, 0.95, 1)
        assert (e_bias >= miscount).all()
        ebars = exact.confidence_intervals(lo, hi, 0.95)
        assert ((ebars.low <= t) & (t <= ebars.high)).all()
        # with the noisy counts it does with probability 1 - (1 - confidence) / 2 per box
        assert (syn._mechanism.error_bars(lo_o, hi_o, 1 - 1e-9, 1)[2] >= miscount).all()
        assert (syn._mechanism.query_bias(lo_o, hi_o, 1e-9) >= miscount).all()
    # calibrated: the grid's cut-cell model on the cut leaves (rectangles/bars.py)
    calibrated = syn.confidence_intervals(lo, hi, 0.9, method="calibrated")
    assert calibrated.method == "calibrated"
    answer, sumsq, maxabs, cut = syn._mechanism.parts(lo.astype(np.uint64), hi.astype(np.uint64))
    scales = syn._mechanism.scales[1:]
    std = noise_std(sumsq, scales)
    noise = noise_quantile(std, sumsq, maxabs, scales, 0.9)
    total = np.maximum(cut[:, 0], 0) + np.sqrt(cut[:, 1] * discrete_laplace_variance(scales[0]))
    per_cell = total / np.maximum(cut[:, 1], 1)
    faces = 1 + CELL_CORRELATION * np.maximum(cut[:, 1] / 4 - 1, 0)
    var = faces * total * (per_cell + CELL_CONCENTRATION) / (1 + CELL_CONCENTRATION)
    low, high = calibrated_interval(answer, noise, var, 0.9, total, total)
    assert np.allclose(calibrated.low, low) and np.allclose(calibrated.high, high)
    assert np.allclose(calibrated.std, std)


def test_boxes_of_whole_leaves_have_no_bias_term(syn):
    # every node's box (a union of whole leaves, edges on segment ends) cuts no leaf
    sh = syn._mechanism.shape
    starts, ends = ends_of(syn)
    lo = np.column_stack([starts[a][sh.first[:, a]] for a in range(2)])
    hi = np.column_stack([ends[a][sh.last[:, a]] for a in range(2)])
    assert not syn._mechanism.query_bias(lo, hi, 0.05).any()
    std, noise, bias = syn._mechanism.error_bars(lo, hi, 0.95, 1)
    assert not bias.any() and (noise > 0).all()
    # one offset less on axis 0 cuts the node's last leaves there (if that segment has two)
    wide = ends[0][sh.last[:, 0]] > starts[0][sh.last[:, 0]]
    assert wide.sum() > 100
    shrunk = hi[wide].copy()
    shrunk[:, 0] -= np.uint64(1)
    assert (syn._mechanism.parts(lo[wide], shrunk)[3][:, 1] > 0).all()


def test_error_terms_are_the_documented_union_bounds(syn, points):
    conf, m = 0.9, syn._mechanism
    delta, b = 1 - conf, float(1 / m.epsilon_leaf)
    leaves = syn.quadtree_leaves()
    sizes = syn.segments
    boxes = sum(math.log(k * (k + 1) / 2 + 1) for k in sizes)      # index boxes per axis
    noise = laplace_sum_tail(float(leaves.size), b, boxes + math.log(4 / delta))
    bias = 0.0
    for a in range(2):         # the leaves holding segment s on axis a: a band
        bands = [(leaves["start"][:, a] <= s) & (leaves["end"][:, a] >= s)
                 for s in range(sizes[a])]
        top = max(float(leaves["count"][x].sum()) for x in bands)
        k = max(int(x.sum()) for x in bands)
        z = laplace_sum_tail(float(k), b, math.log(sum(sizes)) + math.log(2 / delta))
        bias += 2 * max(top + z, 0.0)      # a box has two edges per axis
    terms = syn.error_terms(conf)
    assert terms.noise == pytest.approx(noise, rel=1e-12)
    assert terms.bias == pytest.approx(bias, rel=1e-12) and terms.pruning == 0
    # with the true counts, the bias term bounds the cut leaves' true count of any box
    exact = noiseless(syn, points)
    e_bias = exact.error_terms(conf).bias
    true = true_leaf_counts(syn, points)
    for seed in (21, 22):
        lo, hi = random_boxes(seed, small=seed % 2 == 0)
        inside = ((leaves["first"][None] >= lo[:, None]) & (leaves["last"][None] <= hi[:, None])
                  ).all(axis=2)
        out = ((leaves["last"][None] < lo[:, None]) | (leaves["first"][None] > hi[:, None])
               ).any(axis=2)
        cut = (~inside & ~out) @ true
        assert cut.max() <= e_bias
        got = exact._mechanism.parts(lo.astype(np.uint64), hi.astype(np.uint64))[3][:, 0]
        assert np.array_equal(got, cut)


def test_error_bound_holds_for_every_box(syn, points):
    terms = syn.error_terms(0.95)
    assert terms.pruning == 0 and terms.noise > 0 and terms.bias > 0
    assert syn.error_bound(0.95) == terms.noise + terms.bias
    worst = 0.0
    for seed in range(6, 12):
        lo, hi = random_boxes(seed, small=seed % 2 == 0)
        worst = max(worst, float(np.abs(syn.count_many(lo, hi) - truth(points, lo, hi)).max()))
    assert 0 < worst <= syn.error_bound(0.95)
    assert syn.error_bound(0.5) < syn.error_bound(0.999)


# --------------------------------------------------------------- inputs
def test_weighted_streamed_and_sqlite_inputs_give_the_identical_release(points, tmp_path):
    kw = dict(domain=DOMAIN, epsilon=1, structure="quadtree")
    ref = ps.RectangleSynopsis.build(points, rng=ps.Rng(seed=9), **kw)
    rows, counts = np.unique(points, axis=0, return_counts=True)
    rows = np.concatenate([rows, [[1, 998], [998, 1]]])        # rows of weight 0 count nothing
    counts = np.concatenate([counts, [0, 0]])
    weighted = ps.RectangleSynopsis.build(rows, counts=counts, rng=ps.Rng(seed=9), **kw)
    repeated = ps.RectangleSynopsis.build(np.repeat(rows, counts, axis=0), rng=ps.Rng(seed=9),
                                          **kw)
    assert release(weighted) == release(repeated)
    arr = ps.RectangleSynopsis.build(sources.ArraySource([points[:, 0], points[:, 1]]),
                                     rng=ps.Rng(seed=9), **kw)
    con = sqlite3.connect(tmp_path / "p.db")
    con.execute("CREATE TABLE t (x INTEGER, y INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", points.tolist())
    con.commit()
    con.close()
    sql = ps.RectangleSynopsis.build(
        sources.SqlSource(f"sqlite:///{tmp_path / 'p.db'}", ["x", "y"], table="t",
                          chunk_rows=4000), rng=ps.Rng(seed=9), **kw)
    for other in (weighted, arr, sql):
        assert other.structure == "quadtree"
        assert release(other) == release(ref)


def test_dates_on_one_axis():
    g = np.random.default_rng(3)
    n = 4000
    days = np.datetime64("2024-01-01") + g.integers(0, 366, n).astype("timedelta64[D]")
    y = g.integers(0, 100, n)
    pts = np.empty((n, 2), dtype=object)
    pts[:, 0], pts[:, 1] = days, y
    syn = ps.RectangleSynopsis.build(pts, domain=[("2024-01-01", "2024-12-31"), (0, 99)],
                                     epsilon=4, resolution=["1d", None], structure="quadtree",
                                     rng=ps.Rng(seed=1))
    assert syn.structure == "quadtree" and syn.columns[0].kind == "date"
    lo, hi = np.datetime64("2024-03-01"), np.datetime64("2024-05-31")
    want = int(np.sum((days >= lo) & (days <= hi) & (y >= 10) & (y <= 50)))
    got = syn.count([lo, 10], [hi, 50])
    bars = syn.confidence_intervals(np.array([[lo, 10]], dtype=object),
                                    np.array([[hi, 50]], dtype=object), 0.95)
    assert bars.low[0] <= want <= bars.high[0] and bars.answer[0] == got
    assert abs(got - want) < 0.2 * want


# --------------------------------------------------------------- statistical
def test_leaf_noise_is_discrete_laplace_of_scale_one_over_epsilon_leaf(points):
    z = []
    for seed in range(5):
        s = ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=1, structure="quadtree",
                                       rng=ps.Rng(seed=100 + seed))
        z.append(s.quadtree_leaves()["count"] - true_leaf_counts(s, points))
        eps_leaf = s._mechanism.epsilon_leaf
    z = np.concatenate(z)
    assert eps_leaf == Fraction(33, 64) and z.size > 5000
    scale = float(1 / eps_leaf)
    support, probs = dlap_pmf(scale, 40)
    counts = np.array([np.sum(z == k) for k in support] + [np.sum(np.abs(z) > 40)])
    assert_gof(counts, probs)


def split_probability(scale, t):
    """P(Z > t) for Z ~ DLap(scale), from the exact pmf."""
    support, probs = dlap_pmf(scale, int(80 * scale) + 10)
    return float(probs[support > t].sum())


def test_split_tests_follow_the_exact_law():
    # a 4 x 1 grid of unit segments: the root [0,3] splits into [0,1] and [2,3] (depth 1),
    # each of which may split into two single cells (no draw)
    starts = [np.arange(4, dtype=np.uint64), np.zeros(1, dtype=np.uint64)]
    ends = [np.arange(4, dtype=np.uint64), np.zeros(1, dtype=np.uint64)]
    cells = np.array([[2, 0]], dtype=np.int64)           # c1 points in cell 2, none in [0,1]
    eps_split = Fraction(1)
    lam, delta = privtree_parameters(eps_split, 4)
    assert (lam, delta) == (Fraction(7, 3), 4)
    levels = 1
    theta = -levels * delta
    c0, c1 = 0, 3
    scale = float(lam)
    # max(theta - delta, c - d delta) + Z > theta
    p_root = split_probability(scale, theta - max(theta - delta, c0 + c1))
    p0 = split_probability(scale, theta - max(theta - delta, c0 - delta))
    p1 = split_probability(scale, theta - max(theta - delta, c1 - delta))
    assert 0.05 < p_root < 0.99 and 0.05 < p0 < 0.95 and 0.05 < p1 < 0.95
    n = 3000
    outcomes = {}
    weights = np.array([c1], dtype=np.int64)
    for seed in range(n):
        flags, _ = grow(cells, weights, (4, 1), starts, ends, lam, delta, theta,
                        ps.Rng(seed=seed))
        key = tuple(flags[:3].tolist()) if flags[0] else (False,)
        outcomes[key] = outcomes.get(key, 0) + 1
    law = {(False,): 1 - p_root}
    for a in (False, True):
        for b in (False, True):
            law[(True, a, b)] = p_root * (p0 if a else 1 - p0) * (p1 if b else 1 - p1)
    assert set(outcomes) <= set(law)
    keys = sorted(law)
    assert_gof([outcomes.get(k, 0) for k in keys], [law[k] for k in keys])
    # the root alone: a binomial test of its frequency
    k = n - outcomes.get((False,), 0)
    lo, hi = clopper_pearson(k, n, ALPHA)
    assert lo <= p_root <= hi


def test_root_split_frequency_over_seeded_builds():
    # the root holds all n points at depth 0: with split_levels = 0 (theta = 0) it splits
    # iff max(-delta, n) + Z > 0, Z ~ DLap(lambda) of epsilon_split = epsilon_tree * 5/16
    pts = np.array([[i % 4, (3 * i) % 4] for i in range(12)])
    kw = dict(domain=[(0, 3), (0, 3)], epsilon=8, structure="quadtree", split_levels=0,
              partition_share=0.9)
    wide = split = 0
    for seed in range(500):
        s = ps.RectangleSynopsis.build(pts, rng=ps.Rng(seed=seed), **kw)
        if max(s.segments) > 1:          # given the partitions, the draw is fresh
            wide += 1
            split += bool(s._mechanism.flags[0])
        else:                            # one cell: a leaf without a draw
            assert s._mechanism.flags.tolist() == [False]
    m = s._mechanism
    assert m.epsilon_split == Fraction(1, 4) and m.split_levels == 0
    lam, delta = privtree_parameters(m.epsilon_split, 4)
    p = split_probability(float(lam), -len(pts))
    assert 0.5 < p < 0.95 and wide > 450
    lo, hi = clopper_pearson(split, wide, ALPHA)
    assert lo <= p <= hi, (split, wide, p)


# --------------------------------------------------------------- the rule
def test_short_takes_the_quadtree_from_epsilon_one_half_exactly(points):
    kw = dict(domain=DOMAIN, workload="short")
    at = ps.RectangleSynopsis.build(points, epsilon=Fraction(1, 2), rng=ps.Rng(seed=3), **kw)
    assert QUADTREE_MIN_EPSILON == Fraction(1, 2) and at.structure == "quadtree"
    c = at.workload
    assert (c.workload, c.option, c.value, c.default) == ("short", "structure", "quadtree",
                                                          "adaptive")
    assert c.queries > 0 and c.candidates == 1 and not c.exact
    also = ps.RectangleSynopsis.build(points, epsilon=0.5, rng=ps.Rng(seed=3), **kw)
    assert release(also) == release(at)
    below = ps.RectangleSynopsis.build(points, epsilon=0.49, rng=ps.Rng(seed=3), **kw)
    assert below.structure == "adaptive" and below.workload.option == "coarse_share"
    # the rule's build is the explicit build: only the recorded default differs
    given = ps.RectangleSynopsis.build(points, epsilon=Fraction(1, 2), rng=ps.Rng(seed=3),
                                       structure="quadtree", **kw)
    assert given.workload.default == "quadtree" and given.workload.value == "quadtree"
    (_, m1, a1), (_, m2, a2) = release(at), release(given)
    assert a1 == a2
    assert m1.pop("workload")["default"] == "adaptive" and m2.pop("workload")["default"] == \
        "quadtree"
    assert m1 == m2
    # the rule reads public inputs only: other data, the same structure
    other = ps.RectangleSynopsis.build([[1, 2]], epsilon=1, rng=ps.Rng(seed=1), **kw)
    assert other.structure == "quadtree"
    for name in ("mixed", "long"):
        s = ps.RectangleSynopsis.build(points, epsilon=1, rng=ps.Rng(seed=3), domain=DOMAIN,
                                       workload=name)
        assert s.structure == "adaptive"
    assert ps.RectangleSynopsis.build(points, epsilon=1, domain=DOMAIN,
                                      rng=ps.Rng(seed=3)).structure == "adaptive"


@pytest.mark.parametrize("kw, structure", [
    (dict(domain=[(0, 999)] * 3), "adaptive"),
    (dict(config="dnrr"), "multitree"),
    (dict(coarse_share=0.4), "adaptive"),
    (dict(seal_share=0.1), "adaptive"),
    (dict(fanout=4), "multitree"),
    (dict(partition_share=0.3), "adaptive"),
    (dict(threshold_factor=1.0), "adaptive"),
    (dict(structure="adaptive"), "adaptive"),
    (dict(structure="multitree"), "multitree"),
])
def test_the_rule_keeps_the_old_structure(points, kw, structure):
    kw = dict(dict(domain=DOMAIN, epsilon=1, workload="short"), **kw)
    pts = points if len(kw["domain"]) == 2 else np.column_stack([points, points[:, 0]])
    s = ps.RectangleSynopsis.build(pts[:3000], rng=ps.Rng(seed=2), **kw)
    assert s.structure == structure and s.workload.option != "structure"


def test_declared_boxes_do_not_take_the_quadtree(points):
    lo, hi = random_boxes(1, q=50, small=True)
    s = ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=1, workload=(lo, hi),
                                   rng=ps.Rng(seed=2))
    assert s.structure == "adaptive" and s.workload.workload == "declared"
    q = ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=1, workload=(lo, hi),
                                   structure="quadtree", rng=ps.Rng(seed=2))
    assert q.workload == BoxChoice("declared", 50, "structure", "quadtree", "quadtree", 0.0, 0.0,
                                   False, 1)


def test_the_choice_round_trips_and_must_match_the_structure(points, tmp_path):
    syn = ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=1, workload="short",
                                     rng=ps.Rng(seed=5))
    syn.save(tmp_path / "q.pds")
    back = ps.load(tmp_path / "q.pds")
    assert back.workload == syn.workload and back.structure == "quadtree"
    # a grid's record claiming the quadtree was chosen
    grid = ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=0.4, workload="short",
                                      rng=ps.Rng(seed=5))
    kind, meta, arrays = grid._to_record()[:3]
    meta["workload"] = syn._to_record()[1]["workload"]
    ps.persist.write_record(tmp_path / "bad.pds", kind, meta, arrays)
    with pytest.raises(FormatError, match="workload"):
        ps.load(tmp_path / "bad.pds")
    # the quadtree's record claiming another structure was chosen, or an unknown one
    kind, meta, arrays = syn._to_record()[:3]
    for bad in (dict(value="adaptive"), dict(default="multitree"), dict(value=[4, 4])):
        rec = dict(meta, workload=dict(meta["workload"], **bad))
        with pytest.raises(FormatError):
            ps.RectangleSynopsis._from_record(rec, arrays)


# --------------------------------------------------------------- bad input
PTS = [[777, 313], [901, 47]]


@pytest.mark.parametrize("kw, exc, words", [
    (dict(domain=[(0, 999)] * 3), ParameterError, "takes 2 axes and config='default', got 3 axes"),
    (dict(domain=[(0, 999)]), ParameterError, "takes 2 axes and config='default', got 1 axes"),
    (dict(config="dnrr"), ParameterError, "got config='dnrr'"),
    (dict(fanout=4), ParameterError, "fanout is not an option of structure='quadtree'"),
    (dict(estimator="cover"), ParameterError, "estimator is not an option"),
    (dict(prune=2), ParameterError, "prune is not an option"),
    (dict(merge=2), ParameterError, "merge is not an option"),
    (dict(final_share=0.5), ParameterError, "final_share is not an option"),
    (dict(threshold=3), ParameterError, "threshold is not an option"),
    (dict(max_nodes=10**6), ParameterError, "max_nodes is not an option"),
    (dict(coarse_share=0.4), ParameterError, "coarse_share is not an option"),
    (dict(seal_share=0.1), ParameterError, "seal_share is not an option"),
    (dict(fine_constant=5), ParameterError, "fine_constant is not an option"),
    (dict(split_share=0), ParameterError, r"split_share must be in the open interval \(0, 1\)"),
    (dict(split_share=1), ParameterError, r"split_share must be in the open interval \(0, 1\)"),
    (dict(split_share=float("nan")), (ParameterError, TypeError), "split_share"),
    (dict(split_share="x"), (ParameterError, TypeError), "split_share"),
    (dict(split_levels=-1), ParameterError, r"split_levels must be in \[0, 10\]"),
    (dict(split_levels=11), ParameterError, r"split_levels must be in \[0, 10\]"),
    (dict(split_levels=1.5), TypeError, "split_levels"),
    (dict(split_levels=True), TypeError, "split_levels"),
    (dict(threshold_factor=0.69), ParameterError, "threshold_factor"),
    (dict(partition_share=1), ParameterError, "partition_share"),
    (dict(delta=1e-6), ParameterError, "delta must be 0 for structure='quadtree'"),
    (dict(epsilon=1e-15), ParameterError, "epsilon"),
    (dict(structure="auto", split_share=0.3), ParameterError,
     "split_share is an option of structure='quadtree' only"),
    (dict(structure="adaptive", split_levels=2), ParameterError,
     "split_levels is an option of structure='quadtree' only"),
    (dict(structure="multitree", split_share=0.3), ParameterError,
     "split_share is an option of structure='quadtree' only"),
    (dict(structure="auto", workload="short", split_levels=2), ParameterError,
     "split_levels is an option of structure='quadtree' only"),
    (dict(structure="quad"), ParameterError, "structure must be one of"),
])
def test_bad_quadtree_input_is_refused_before_any_budget_or_draw(kw, exc, words):
    budget, rng = ps.Budget(5.0), ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    kw = dict(dict(domain=DOMAIN, epsilon=1.0, structure="quadtree"), **kw)
    pts = np.array(PTS)
    pts = pts[:, :1] if len(kw["domain"]) == 1 else np.column_stack(
        [pts, pts[:, :1]])[:, :len(kw["domain"])]
    with pytest.raises(exc, match=words) as err:
        ps.RectangleSynopsis.build(pts, budget=budget, rng=rng, **kw)
    text = str(err.value)
    assert "\n" not in text and not any(str(v) in text for v in (777, 313, 901, 47))
    assert budget.spent == 0 and rng.random_uint64() == first


# --------------------------------------------------------------- files
def test_files_round_trip(syn, tmp_path):
    syn.save(tmp_path / "q.pds")
    back = ps.load(tmp_path / "q.pds")
    assert back.structure == "quadtree" and back.epsilon == syn.epsilon == 1
    assert back.pure_epsilon == syn.pure_epsilon and back.workload is None
    assert np.array_equal(back.quadtree_leaves(), syn.quadtree_leaves())
    lo, hi = random_boxes(7)
    assert np.array_equal(back.count_many(lo, hi), syn.count_many(lo, hi))
    assert np.array_equal(np.array(back.confidence_intervals(lo, hi)),
                          np.array(syn.confidence_intervals(lo, hi)))
    assert back.error_terms() == syn.error_terms()
    assert release(back) == release(syn)
    kind, meta, arrays = syn._to_record()[:3]
    assert meta["format"] == 3 and meta["structure"] == "quadtree"
    assert arrays["splits"].dtype == np.uint8 and arrays["leaves"].dtype == np.int64


def _tampered(syn):
    """Records of the synopsis, each changed one way that is not a valid release."""
    kind, meta, arrays = syn._to_record()[:3]
    splits, leaves = arrays["splits"], arrays["leaves"]
    grid = ps.RectangleSynopsis.build(np.array(PTS), domain=DOMAIN, epsilon=1,
                                      rng=ps.Rng(seed=1))
    gk, gmeta, garrays = grid._to_record()[:3]
    yield "format 3, adaptive", dict(meta, structure="adaptive"), arrays
    yield "format 1, quadtree", dict(meta, format=1), arrays
    yield "format 2, quadtree", dict(meta, format=2), arrays
    yield "a grid as format 3", dict(gmeta, format=3), garrays
    yield "a grid named quadtree", dict(gmeta, structure="quadtree"), garrays
    yield "splits too short", meta, dict(arrays, splits=splits[:-1])
    yield "splits too long", meta, dict(arrays, splits=np.append(splits, np.uint8(0)))
    two = splits.copy()
    two[0] = 2
    yield "a split flag 2", meta, dict(arrays, splits=two)
    for dt in (np.int64, np.bool_, np.int8):
        yield f"splits {dt.__name__}", meta, dict(arrays, splits=splits.astype(dt))
    yield "splits 2-D", meta, dict(arrays, splits=splits[None, :])
    yield "leaves short", meta, dict(arrays, leaves=leaves[:-1])
    yield "leaves long", meta, dict(arrays, leaves=np.append(leaves, 0))
    for dt in (np.int32, np.float64, np.uint64):
        yield f"leaves {dt.__name__}", meta, dict(arrays, leaves=leaves.astype(dt))
    yield "no leaves", meta, {k: v for k, v in arrays.items() if k != "leaves"}
    yield "no splits", meta, {k: v for k, v in arrays.items() if k != "splits"}
    for key in ("epsilon_split", "epsilon_leaf"):
        for bad in ([0, 1], [-1, 4], [1, 0], "x", None, [1]):
            yield f"{key} {bad}", dict(meta, **{key: bad}), arrays
    yield "epsilon_leaf changed", dict(meta, epsilon_leaf=[1, 2]), arrays
    for bad in ([1, 1], [0, 1], [3, 2], [-1, 2]):
        yield f"split_share {bad}", dict(meta, split_share=bad), arrays
    for bad in (11, 65, -1, True, 1.5, "4", None):
        yield f"split_levels {bad!r}", dict(meta, split_levels=bad), arrays
    yield "delta > 0", dict(meta, delta=[1, 10**6]), arrays
    yield "pure epsilon", dict(meta, pure_epsilon=[2, 1]), arrays


def test_tampered_records_are_refused(syn, tmp_path):
    for what, meta, arrays in _tampered(syn):
        with pytest.raises(FormatError):
            ps.RectangleSynopsis._from_record(meta, arrays)
            pytest.fail(what)
    # the same through a file
    kind, meta, arrays = syn._to_record()[:3]
    ps.persist.write_record(tmp_path / "bad.pds", kind, meta,
                            dict(arrays, leaves=arrays["leaves"][:-1]))
    with pytest.raises(FormatError, match="leaf counts"):
        ps.load(tmp_path / "bad.pds")


def test_a_crafted_record_of_a_million_splits_fails_fast():
    for seed in range(400):          # a build whose partitions make a 2 x 2 segment grid
        small = ps.RectangleSynopsis.build([[0, 0], [3, 3], [0, 3], [3, 0]] * 3,
                                           domain=[(0, 3), (0, 3)], epsilon=8,
                                           structure="quadtree", partition_share=0.9,
                                           rng=ps.Rng(seed=seed))
        if small.segments == (2, 2):
            break
    assert small.segments == (2, 2)
    kind, meta, arrays = small._to_record()[:3]
    for splits, leaves in ((np.ones(10**6, dtype=np.uint8), 10**6),
                           (np.zeros(10**6, dtype=np.uint8), 10**6),
                           (np.ones(5, dtype=np.uint8), 0)):
        t = time.perf_counter()
        with pytest.raises(FormatError, match="quadtree"):
            ps.RectangleSynopsis._from_record(meta, dict(arrays, splits=splits,
                                                         leaves=np.zeros(leaves, np.int64)))
        assert time.perf_counter() - t < 0.5


def test_a_record_of_more_than_max_nodes_splits_is_refused_before_reading_them(syn):
    kind, meta, arrays = syn._to_record()[:3]
    huge = np.broadcast_to(np.uint8(0), (MAX_NODES + 1,))       # a view: no memory
    t = time.perf_counter()
    with pytest.raises(FormatError, match="split flags"):
        ps.RectangleSynopsis._from_record(meta, dict(arrays, splits=huge))
    assert time.perf_counter() - t < 0.5


def test_error_messages_of_records_hold_no_counts(syn):
    kind, meta, arrays = syn._to_record()[:3]
    leaves = arrays["leaves"].copy()
    leaves[:] = 987654321
    with pytest.raises(FormatError) as err:
        ps.RectangleSynopsis._from_record(meta, dict(arrays, leaves=leaves[:-1]))
    assert "987654321" not in str(err.value) and str(leaves.size - 1) not in str(err.value)


# --------------------------------------------------------------- the CLI
def _csv(tmp_path, points):
    table = tmp_path / "t.csv"
    table.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in points[:4000]) + "\n")
    return table


def test_cli_short_workload_records_the_quadtree(tmp_path, capsys, points):
    table = _csv(tmp_path, points)
    out = tmp_path / "q.pds"
    assert cli.main(["build", "--input", str(table), "--columns", "x,y", "--domain",
                     "0:999,0:999", "--epsilon", "1", "--workload", "short", "--seed", "3",
                     "--output", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["info", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "structure quadtree (default adaptive)" in shown and "workload:       short" in shown
    s = ps.load(out)
    assert s.structure == "quadtree" and s.workload.value == "quadtree"
    assert cli.main(["query", str(out), "--lo", "200,500", "--hi", "400,800"]) == 0
    answer = float(capsys.readouterr().out.split()[0])
    assert answer == pytest.approx(s.count([200, 500], [400, 800]))
    # at epsilon 0.4 the same command keeps the adaptive grid
    assert cli.main(["build", "--input", str(table), "--columns", "x,y", "--domain",
                     "0:999,0:999", "--epsilon", "0.4", "--workload", "short", "--seed", "3",
                     "--output", str(tmp_path / "g.pds")]) == 0
    assert ps.load(tmp_path / "g.pds").structure == "adaptive"


def test_cli_structure_quadtree(tmp_path, capsys, points):
    table = _csv(tmp_path, points)
    base = ["build", "--input", str(table), "--epsilon", "0.3", "--seed", "4",
            "--structure", "quadtree"]
    out = tmp_path / "q.pds"
    assert cli.main(base + ["--columns", "x,y", "--domain", "0:999,0:999",
                            "--output", str(out)]) == 0
    s = ps.load(out)
    assert s.structure == "quadtree" and s.workload is None and s.epsilon == Fraction(0.3)
    capsys.readouterr()
    assert cli.main(["info", str(out)]) == 0
    assert "quadtree" in capsys.readouterr().out
    # a category column and one more: two axes
    cats = tmp_path / "c.csv"
    cats.write_text("k,y\n" + "\n".join(f"{'ab'[a % 2]},{b}" for a, b in points[:500]) + "\n")
    assert cli.main(["build", "--input", str(cats), "--columns", "k,y", "--categories", "a,b",
                     "--domain", "0:999", "--epsilon", "1", "--structure", "quadtree",
                     "--output", str(tmp_path / "k.pds")]) == 0
    assert ps.load(tmp_path / "k.pds").structure == "quadtree"
    capsys.readouterr()
    for extra, words in (
            (["--columns", "x", "--domain", "0:999"], "--structure quadtree applies to two "
                                                      "columns"),
            (["--columns", "x,y,x", "--domain", "0:999,0:999,0:999"], "applies to two columns"),
            (["--columns", "k", "--categories", "a,b", "--input", str(cats)],
             "applies to two columns")):
        assert cli.main(base + extra + ["--output", str(tmp_path / "bad.pds")]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "bad.pds").exists()
    # the other values of --structure still need a category column, --other too
    for flag in (["--structure", "tree"], ["--other", "quadtree"]):
        assert cli.main(["build", "--input", str(table), "--columns", "x,y", "--domain",
                         "0:999,0:999", "--epsilon", "1", *flag, "--output",
                         str(tmp_path / "bad.pds")]) == 2
        assert "needs --categories or --levels" in capsys.readouterr().err


@pytest.mark.integration
def test_cli_subprocess_build_info_and_query(tmp_path, points):
    table = _csv(tmp_path, points)
    out = tmp_path / "q.pds"
    p = run("build", "--input", table, "--columns", "x,y", "--domain", "0:999,0:999",
            "--epsilon", "1", "--workload", "short", "--seed", "3", "--output", out)
    assert p.returncode == 0, p.stderr
    p = run("build", "--input", table, "--columns", "x,y", "--domain", "0:999,0:999",
            "--epsilon", "0.3", "--structure", "quadtree", "--output", tmp_path / "e.pds")
    assert p.returncode == 0 and ps.load(tmp_path / "e.pds").structure == "quadtree", p.stderr
    p = run("build", "--input", table, "--columns", "x", "--domain", "0:999",
            "--epsilon", "1", "--structure", "quadtree", "--output", tmp_path / "bad.pds")
    one_line_error(p, "--structure quadtree applies to two columns")
    p = run("info", out)
    assert p.returncode == 0 and "structure quadtree (default adaptive)" in p.stdout
    p = run("query", out, "--lo", "200,500", "--hi", "400,800")
    assert p.returncode == 0 and " ± " in p.stdout.splitlines()[0]
    assert float(p.stdout.split()[0]) == pytest.approx(ps.load(out).count([200, 500], [400, 800]))


def test_streamed_cells_are_merged_as_they_come(syn):
    # memory O(occupied cells + chunk) whatever the number of chunks (tracemalloc sees
    # numpy's buffers): k chunks of every cell of the grid, then the same release as one
    # chunk of every cell with weight k
    m = syn._mechanism
    m0, m1 = syn.segments
    every = np.stack(np.meshgrid(np.arange(m0), np.arange(m1), indexing="ij"),
                     axis=-1).reshape(-1, 2).astype(np.uint32)
    ones = np.ones(every.shape[0], dtype=np.int64)
    args = (0.0, m.epsilon_split + m.epsilon_leaf, (m.epsilon_split, m.epsilon_leaf), QUADTREE)

    def build(k):
        tracemalloc.start()
        try:
            qt = QuadTree.build(m.axes, ((every, ones if i % 2 else None) for i in range(k)),
                                *args, ps.Rng(seed=2))
            return qt, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    few, few_peak = build(80)
    many, many_peak = build(320)
    assert many_peak < 1.5 * few_peak, (few_peak, many_peak)
    for k, qt in ((80, few), (320, many)):
        one = QuadTree.build(m.axes, [(every, k * ones)], *args, ps.Rng(seed=2))
        assert np.array_equal(qt.flags, one.flags) and np.array_equal(qt.counts, one.counts)


@pytest.mark.fuzz
def test_fuzz_answers_against_the_estimator_and_the_truth():
    g = np.random.default_rng(99)
    for trial in range(200):
        dom = [(int(lo), int(lo) + int(g.integers(0, 2 ** int(g.integers(0, 40)))))
               for lo in g.integers(-10**6, 10**6, 2)]
        n = int(g.integers(0, 3000))
        centre = [g.integers(lo, hi, endpoint=True) for lo, hi in dom]
        pts = np.column_stack([np.clip(np.rint(g.normal(c, max((hi - lo) / 50, 1), n)), lo, hi)
                               for c, (lo, hi) in zip(centre, dom)]).astype(np.int64)
        syn = ps.RectangleSynopsis.build(
            pts.reshape(-1, 2), domain=dom, epsilon=float(g.choice([0.3, 1, 4, 20])),
            structure="quadtree", split_levels=int(g.integers(0, 8)),
            split_share=float(g.choice([0.1, 5 / 16, 0.6])), rng=ps.Rng(seed=trial))
        q = 40
        lo = np.column_stack([g.integers(a, b, q, endpoint=True) for a, b in dom])
        hi = np.column_stack([np.minimum(lo[:, k] + g.integers(0, b - a + 1, q), b)
                              for k, (a, b) in enumerate(dom)])
        off_lo, off_hi = lo - [a for a, _ in dom], hi - [a for a, _ in dom]
        w = shares(syn, off_lo, off_hi)
        assert np.allclose(syn.count_many(lo, hi), w @ syn.quadtree_leaves()["count"],
                           rtol=1e-9, atol=1e-6), trial
        exact = noiseless(syn, pts - [a for a, _ in dom])
        t = ((pts[None] >= lo[:, None]) & (pts[None] <= hi[:, None])).all(axis=2).sum(axis=1)
        miscount = np.abs(exact.count_many(lo, hi) - t)
        bias = exact._mechanism.query_bias(off_lo.astype(np.uint64), off_hi.astype(np.uint64),
                                           0.05)
        assert (miscount <= bias + 1e-9).all(), trial
        assert exact.count([a for a, _ in dom], [b for _, b in dom]) == n


HOSTILE = (None, True, 0, -1, 1, 2, 65, 2**64, 0.5, float("inf"), "x", "", [], [0], [1, 0],
           [0, 1], [-1, 2], [2**70, 1], [1, 1], [3, 2], {}, "quadtree", "adaptive", [256] * 8)


def test_every_meta_field_and_array_changed_is_refused_or_answers(points):
    syn = ps.RectangleSynopsis.build(points[:2000], domain=DOMAIN, epsilon=1, workload="short",
                                     rng=ps.Rng(seed=3))
    kind, meta, arrays = syn._to_record()[:3]
    lo, hi = random_boxes(5, q=20)
    trials = [(dict(meta, **{key: v}), arrays) for key in meta for v in HOSTILE]
    trials += [(dict(meta, workload=dict(meta["workload"], **{key: v})), arrays)
               for key in meta["workload"] for v in HOSTILE]
    for name, a in arrays.items():
        for bad in (a[:0], a[:-1], np.append(a, a[-1:]), a.astype(np.float64), a[None],
                    a.astype(np.int32), np.zeros_like(a), (a - 1).astype(a.dtype),
                    np.full_like(a, np.iinfo(a.dtype).max), a[::-1].copy()):
            trials.append((meta, dict(arrays, **{name: bad})))
    refused = 0
    for m, a in trials:
        t = time.perf_counter()
        try:
            back = ps.RectangleSynopsis._from_record(m, a)
        except FormatError:
            refused += 1
            continue
        finally:
            assert time.perf_counter() - t < 2
        assert np.isfinite(back.count_many(lo, hi)).all() and back.error_bound(0.9) >= 0
    assert refused > len(trials) // 2


def test_a_structure_choice_must_name_the_quadtree(points, tmp_path):
    # option "structure" is written for the quadtree only: "adaptive" as its value is refused
    grid = ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=2))
    gkind, gmeta, garrays = grid._to_record()[:3]
    choice = {"workload": "short", "queries": 10, "option": "structure", "value": "adaptive",
              "default": "adaptive", "score": 0.0, "default_score": 0.0, "exact": False,
              "candidates": 1}
    ps.persist.write_record(tmp_path / "g.pds", gkind, dict(gmeta, workload=choice), garrays)
    with pytest.raises(FormatError, match="workload"):
        ps.load(tmp_path / "g.pds")
