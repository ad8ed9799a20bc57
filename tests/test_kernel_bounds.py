"""C kernels called directly with arrays whose lengths are given: the adaptive grid
(csrc/grid.c) equals the estimator computed by brute force and checks every index against
the lengths it is given; multi-tree answers (csrc/multitree.c) refuse records that point
outside [0, n_records) instead of reading there; the quadtree's level pass (csrc/quadtree.c)
refuses node, slot and child indices outside its lengths."""
import itertools
import math

import numpy as np
import pytest

from pydp_synopsis._core import ffi, lib


def _u64(a):
    return ffi.from_buffer("uint64_t[]", np.ascontiguousarray(a, dtype=np.uint64))


def _i64(a):
    return ffi.from_buffer("int64_t[]", a)


def _dbl(a):
    return ffi.from_buffer("double[]", a)


def _grid(c, seed):
    """Random m, g, fine shapes q (1 <= q <= width) and fine estimates."""
    gen = np.random.default_rng(seed)
    m = gen.integers(1, 9, c)
    g = np.array([gen.integers(1, ma + 1) for ma in m])
    t1 = [-(-int(ma) // int(ga)) for ma, ga in zip(m, g)]
    cells = list(itertools.product(*[range(t) for t in t1]))
    width = np.array([[min(int(g[a]), int(m[a]) - i[a] * int(g[a])) for a in range(c)] for i in cells])
    q = np.array([[gen.integers(1, w + 1) for w in row] for row in width], dtype=np.int64)
    size = q.prod(axis=1)
    base = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
    est = gen.normal(0, 5, int(size.sum()))
    return m, g, t1, cells, width, q, base, est


def _brute(c, m, g, cells, width, q, base, est, k, r, fk, fr):
    """sum over fine cells of est times, per axis, the mean segment weight over its run."""
    total = 0.0
    for i, cell in enumerate(cells):
        for j, jj in enumerate(itertools.product(*[range(qa) for qa in q[i]])):
            w = 1.0
            for a in range(c):
                s0, wa, qa = cell[a] * int(g[a]), int(width[i][a]), int(q[i][a])
                b, e = s0 + -(-jj[a] * wa // qa), s0 + -(-(jj[a] + 1) * wa // qa)
                seg = [(fk[a] if s == k[a] else fr[a] if s == r[a] else 1.0)
                       if k[a] <= s <= r[a] else 0.0 for s in range(b, e)]
                w *= sum(seg) / (e - b)
            total += est[base[i] + j] * w
    return total


def _prefix(c, cells, q, base, est, t1):
    fine = est.copy()
    coarse = np.zeros(t1)
    for i, cell in enumerate(cells):
        n = int(np.prod(q[i]))
        coarse[cell] = fine[base[i]:base[i] + n].sum()
        fine[base[i]:base[i] + n] = _cumsum_all(fine[base[i]:base[i] + n].reshape(q[i])).ravel()
    return fine, _cumsum_all(coarse).ravel()


def _cumsum_all(a):
    for ax in range(a.ndim):
        a = np.cumsum(a, axis=ax)
    return a


@pytest.mark.parametrize("c, seed", [(1, 0), (2, 1), (2, 2), (3, 3)])
def test_grid_kernels_equal_the_brute_force_estimator(c, seed):
    m, g, t1, cells, width, q, base, est = _grid(c, seed)
    fine = np.ascontiguousarray(est.copy())
    assert lib.pds_grid_fine_prefix(c, len(cells), _i64(q), _i64(base), _dbl(fine),
                                    fine.size) == lib.PDS_OK
    want_fine, coarse = _prefix(c, cells, q, base, est, t1)
    assert np.allclose(fine, want_fine)
    gen = np.random.default_rng(seed + 100)
    n_q = 40
    k = np.array([[gen.integers(0, ma) for ma in m] for _ in range(n_q)], dtype=np.uint64)
    r = np.array([[gen.integers(ka, ma) for ka, ma in zip(row, m)] for row in k], dtype=np.uint64)
    fk, fr = gen.uniform(0, 1, (n_q, c)), gen.uniform(0, 1, (n_q, c))
    out = np.empty(n_q)
    assert lib.pds_grid_answer(c, _u64(m), _u64(g), _dbl(coarse), coarse.size, _i64(q), _i64(base),
                               _dbl(fine), fine.size, n_q, _u64(k), _u64(r), _dbl(fk), _dbl(fr),
                               _dbl(out)) == lib.PDS_OK
    for i in range(n_q):
        frs = [0.0 if k[i, a] == r[i, a] else fr[i, a] for a in range(c)]
        want = _brute(c, m, g, cells, width, q, base, est, k[i], r[i], fk[i], frs)
        assert math.isclose(out[i], want, rel_tol=1e-9, abs_tol=1e-9)


def test_grid_kernels_check_indices_against_the_lengths_given():
    c = 2
    m, g, t1, cells, width, q, base, est = _grid(c, 4)
    n_cells, n_fine = len(cells), est.size
    assert n_cells > 1 and (q > 1).any()

    def prefix(q_=q, base_=base, n=n_fine):
        fine = est.copy()
        st = lib.pds_grid_fine_prefix(c, n_cells, _i64(q_), _i64(base_), _dbl(fine), n)
        return st, fine

    assert prefix()[0] == lib.PDS_OK
    for st, fine in (prefix(n=n_fine - 1), prefix(base_=base - 1),
                     prefix(base_=np.where(base == base.max(), base + 1, base)),
                     prefix(q_=np.where(q == q.max(), 0, q)),
                     prefix(q_=np.full_like(q, 1 << 40))):          # size overflows
        assert st == lib.PDS_EINVAL
        assert np.array_equal(fine, est)                            # nothing written

    st, fine = prefix()
    _, coarse = _prefix(c, cells, q, base, est, t1)
    k = np.zeros((1, c), dtype=np.uint64)
    r = (np.asarray(m) - 1).astype(np.uint64)[None, :]
    ones = np.ones((1, c))

    def answer(n_c=n_cells, n_f=n_fine, q_=q, base_=base, fine_=fine):
        out = np.zeros(1)
        return lib.pds_grid_answer(c, _u64(m), _u64(g), _dbl(coarse), n_c, _i64(q_), _i64(base_),
                                   _dbl(fine_), n_f, 1, _u64(k), _u64(r), _dbl(ones),
                                   _dbl(ones), _dbl(out))

    assert answer() == lib.PDS_OK
    assert answer(n_c=n_cells - 1) == lib.PDS_EINVAL
    assert answer(n_c=n_cells + 1) == lib.PDS_EINVAL
    # the query touches the corner cells: their grids must lie inside fine[0 .. n_fine)
    last = base[-1] + int(np.prod(q[-1]))
    assert answer(n_f=last - 1) == lib.PDS_EINVAL
    assert answer(base_=np.where(np.arange(n_cells) == 0, -1, base)) == lib.PDS_EINVAL
    assert answer(q_=np.where(np.arange(q.size).reshape(q.shape) == 0, 0, q)) == lib.PDS_EINVAL
    wider = q.copy()
    wider[0, 0] = width[0][0] + 1                                   # an empty fine run
    padded = np.concatenate([fine, np.zeros(10**4)])                # room for the wider grid
    assert answer(q_=wider, n_f=padded.size, fine_=padded) == lib.PDS_EINVAL


def _multitree(c=2, m=9, k=3, n=200, seed=5):
    gen = np.random.default_rng(seed)
    seg = np.ascontiguousarray(gen.integers(0, m, (n, c)), dtype=np.uint32)
    m_arr, k_arr = np.full(c, m, dtype=np.uint64), np.full(c, k, dtype=np.uint32)
    tree = ffi.new("pds_multitree *")
    # no noise (t = 0), intermediate nodes uncounted, final nodes kept iff count >= 1
    assert lib.pds_multitree_build(ffi.NULL, ffi.from_buffer("uint32_t[]", seg), n, c,
                                   _u64(m_arr), ffi.from_buffer("uint32_t[]", k_arr),
                                   0, 0, 0, 0, 0, 1, 1 << 20, tree) == lib.PDS_OK
    try:
        n_rec = int(tree.n_records)
        arrays = [np.frombuffer(ffi.buffer(x, 8 * n_rec), dtype=np.int64).copy()
                  for x in (tree.count, tree.child, tree.succ)]
    finally:
        lib.pds_multitree_free(tree)
    return seg, m_arr, k_arr, arrays


def test_multitree_answer_refuses_records_outside_the_arrays():
    c, m = 2, 9
    seg, m_arr, k_arr, (count, child, succ) = _multitree(c, m)
    n_rec = count.size

    def answer(child_=child, succ_=succ):
        cum = np.concatenate([[0], np.cumsum(count)]).astype(np.uint64)
        wa = np.ones((1, c), dtype=np.uint64)          # segments [1, m): leaves are read
        wb = np.full((1, c), m, dtype=np.uint64)
        zero_u, zero_f = np.zeros((1, c), dtype=np.uint64), np.zeros((1, c))
        out = np.zeros(1)
        st = lib.pds_multitree_answer(_i64(count), _i64(child_), _i64(succ_),
                                      _u64(cum), n_rec, c, _u64(m_arr),
                                      ffi.from_buffer("uint32_t[]", k_arr), _u64(wa), _u64(wb),
                                      _u64(zero_u), _dbl(zero_f), _u64(zero_u), _dbl(zero_f),
                                      1, _dbl(out))
        return st, out[0]

    assert answer() == (lib.PDS_OK, int((seg >= 1).all(axis=1).sum()))
    # final-axis child blocks that run past the last record
    final = (child >= 0) & (succ == -1)
    assert final.any()
    bad = np.where(final, n_rec - 1, child)
    assert answer(child_=bad)[0] == lib.PDS_ESTATE
    # successor trees starting past the end
    for start in (n_rec, 2**62):
        bad = np.where(succ >= 0, start, succ)
        assert answer(succ_=bad)[0] == lib.PDS_ESTATE


def _quad(cells, weight, node, slot, mid, child, n_next):
    cells = np.ascontiguousarray(cells, dtype=np.uint32)
    weight = np.ascontiguousarray(weight, dtype=np.int64)
    node = np.ascontiguousarray(node, dtype=np.int64)
    slot, mid, child = (np.ascontiguousarray(x, dtype=np.int64) for x in (slot, mid, child))
    counts = np.zeros(n_next, dtype=np.int64)
    kept = ffi.new("uint64_t *")
    st = lib.pds_quad_level(ffi.from_buffer("uint32_t[]", cells), _i64(weight), _i64(node),
                            len(node), _i64(slot), len(slot), _i64(mid), _i64(child),
                            len(mid), _i64(counts), n_next, kept)
    return st, int(kept[0]), cells, weight, node, counts


def test_quad_level_moves_rows_to_children_and_drops_leaves():
    # level: node 0 a leaf, node 1 split at (1, 2) into children 0..3 (every corner)
    cells = [[0, 0], [1, 1], [2, 2], [1, 3], [3, 0], [3, 3]]
    st, kept, c, w, node, counts = _quad(cells, [5, 1, 2, 3, 4, 6], [0, 1, 1, 1, 1, 1],
                                         slot=[-1, 0], mid=[[1, 2]], child=[[0, 1, 2, 3]],
                                         n_next=4)
    assert st == 0 and kept == 5
    # (1,1): lower both -> 0; (2,2): x upper -> 1; (1,3): y upper -> 2; (3,0) -> 1; (3,3) -> 3
    assert node[:kept].tolist() == [0, 1, 2, 1, 3]
    assert c[:kept].tolist() == [[1, 1], [2, 2], [1, 3], [3, 0], [3, 3]]
    assert w[:kept].tolist() == [1, 2, 3, 4, 6]
    assert counts.tolist() == [1, 6, 3, 6]


@pytest.mark.parametrize("case", ["node", "slot", "child", "absent child"])
def test_quad_level_refuses_indices_outside_the_lengths(case):
    node, slot, child = [0, 1], [-1, 0], [[0, 1, 2, 3]]
    if case == "node":
        node = [0, 2]
    elif case == "slot":
        slot = [-1, 1]
    elif case == "child":
        child = [[4, 1, 2, 3]]
    else:
        child = [[-1, 1, 2, 3]]
    st, *_ = _quad([[0, 0], [0, 0]], [1, 1], node, slot, [[1, 1]], child, 4)
    assert st == lib.PDS_EINVAL


def _quad_tree_arrays():
    """A root over 2 x 2 segments split into four one-cell leaves (counts 1, 2, 3, 4)."""
    cfirst = np.array([[0, 0], [0, 0], [5, 0], [0, 5], [5, 5]], dtype=np.uint64)
    clast = np.array([[9, 9], [4, 4], [9, 4], [4, 9], [9, 9]], dtype=np.uint64)
    first = np.array([[0, 0], [0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.int64)
    last = np.array([[1, 1], [0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.int64)
    return {"cfirst": cfirst, "clast": clast, "first": first, "last": last,
            "child": np.array([1, -1, -1, -1, -1], dtype=np.int64),
            "nchild": np.array([4, 0, 0, 0, 0], dtype=np.int64),
            "leaf": np.array([-1, 0, 1, 2, 3], dtype=np.int64),
            "sums": np.array([[10, 4], [1, 1], [2, 1], [3, 1], [4, 1]], dtype=np.float64),
            "counts": np.array([1, 2, 3, 4], dtype=np.int64)}


def _quad_answer(t, lo, hi, bi, bj, stack=16):
    q = len(lo)
    out = [np.zeros(q) for _ in range(3)] + [np.zeros(2 * q)]
    work = np.zeros(stack, dtype=np.int64)
    st = lib.pds_quad_answer(len(t["leaf"]), _u64(t["cfirst"]), _u64(t["clast"]),
                             _i64(t["first"]), _i64(t["last"]), _i64(t["child"]),
                             _i64(t["nchild"]), _i64(t["leaf"]), _dbl(t["sums"]),
                             _i64(t["counts"]), len(t["counts"]), q, _u64(lo), _u64(hi),
                             _i64(np.array(bi, dtype=np.int64)), _i64(np.array(bj, dtype=np.int64)),
                             _i64(work), stack, *(_dbl(x) for x in out))
    return st, out


def test_quad_answer_reads_inside_nodes_whole_and_cut_leaves_by_their_share():
    t = _quad_tree_arrays()
    # the whole domain: the root's sum; the lower-left leaf exactly; a box over the
    # x = 0..7 strip cuts the two right leaves (snapped range: segments 0 .. 0 on x)
    st, (ans, ss, mx, cut) = _quad_answer(t, [[0, 0], [0, 0], [0, 0]],
                                          [[9, 9], [4, 4], [7, 9]],
                                          [[0, 0], [0, 0], [0, 0]], [[1, 1], [0, 0], [0, 1]])
    assert st == 0
    assert ans.tolist() == [10.0, 1.0, 4.0] and ss.tolist() == [4.0, 1.0, 2.0]
    assert mx.tolist() == [1.0, 1.0, 1.0] and cut.tolist() == [0, 0, 0, 0, 6.0, 2.0]


@pytest.mark.parametrize("case", ["child", "leaf", "stack", "nchild"])
def test_quad_answer_refuses_indices_outside_the_tree(case):
    t = _quad_tree_arrays()
    stack = 16
    if case == "child":
        t["child"][0] = 3                   # children 3 .. 6 of 5 nodes
    elif case == "leaf":
        t["leaf"][4] = 4
    elif case == "nchild":
        t["nchild"][0] = 5
    else:
        stack = 3
    st, _ = _quad_answer(t, [[6, 6]], [[9, 9]], [[1, 1]], [[1, 1]], stack=stack)
    assert st == lib.PDS_EINVAL
