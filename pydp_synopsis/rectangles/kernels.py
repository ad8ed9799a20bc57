"""The rectangle synopsis's calls into the C core: one function per kernel.

Callers pass checked, contiguous numpy arrays; these wrappers only convert
them to C pointers, call, and raise on a non-zero status.  Keeping every
call here means a change of a kernel's signature (``csrc/multitree.c``,
``csrc/grid.c``, ``csrc/quadtree.c``) is a change of one function.
"""
import numpy as np

from .._core import check, f64, ffi, i64, lib, u64
from .._threads import pieces, run_parts

__all__ = [
    "multitree_build",
    "multitree_check",
    "multitree_answer",
    "multitree_noise",
    "multitree_describe",
    "grid_fine_prefix",
    "grid_answer",
    "grid_noise",
    "grid_count",
    "quad_level",
    "quad_answer",
    "Unrefine",
]


def _shape_arrays(segments, fanout):
    """The per-axis segment counts and fanouts as the multi-tree kernels take them."""
    return (u64(np.array(segments, dtype=np.uint64)),
            ffi.from_buffer("uint32_t[]", np.array(fanout, dtype=np.uint32)))


# ---------------------------------------------------------------- multi-tree
def multitree_build(rng, segs, segments, fanout, scale_int, thr_int, scale_fin, thr_fin,
                    max_nodes, weights=None):
    """Build the pruned multi-tree; returns its ``(count, child, succ)`` records.

    ``segs`` is the (n, c) uint32 array of tree-segment indices, ``weights``
    the int64 number of points each row stands for (None: one each); the
    scales are ``(t, s)`` pairs (``(0, 0)``: the level is uncounted).

    Raises
    ------
    MemoryError
        More than ``max_nodes`` nodes (or memory ran out).
    """
    if segs.dtype != np.uint32:
        raise TypeError(f"multitree_build takes uint32 segment ids, got {segs.dtype}")
    segs = np.ascontiguousarray(segs)
    m_arr, k_arr = _shape_arrays(segments, fanout)
    tree = ffi.new("pds_multitree *")
    try:
        with rng.native() as p:
            st = lib.pds_multitree_build_weighted(
                p, ffi.from_buffer("uint32_t[]", segs),
                ffi.NULL if weights is None else i64(np.ascontiguousarray(weights, np.int64)),
                segs.shape[0], segs.shape[1], m_arr,
                k_arr, scale_int[0], scale_int[1], thr_int, scale_fin[0], scale_fin[1], thr_fin,
                int(max_nodes), tree)
        if st == lib.PDS_ENOMEM:
            raise MemoryError(f"the multi-tree needs more than max_nodes={max_nodes} nodes "
                              "(or memory ran out): raise prune or max_nodes")
        check(st, "multi-tree")
        n_rec = int(tree.n_records)
        return tuple(np.frombuffer(ffi.buffer(arr, 8 * n_rec), dtype=np.int64).copy()
                     for arr in (tree.count, tree.child, tree.succ))
    finally:
        lib.pds_multitree_free(tree)


def multitree_check(count, child, succ, segments, fanout):
    """True if the records form a well-formed multi-tree for the shape."""
    m_arr, k_arr = _shape_arrays(segments, fanout)
    return lib.pds_multitree_check(i64(count), i64(child), i64(succ), count.size,
                                   len(segments), m_arr, k_arr) == lib.PDS_OK


def multitree_answer(records, cum, segments, fanout, wa, wb, kl, fl, kr, fr):
    """Answers of q queries from their per-axis covers ((q, c) arrays); float64 (q,)."""
    count, child, succ = records
    m_arr, k_arr = _shape_arrays(segments, fanout)
    out = np.empty(wa.shape[0], dtype=np.float64)
    check(lib.pds_multitree_answer(
        i64(count), i64(child), i64(succ), u64(cum), count.size, len(segments), m_arr,
        k_arr, u64(wa), u64(wb), u64(kl), f64(fl), u64(kr), f64(fr), out.size,
        f64(out)), "rectangle answers")
    return out


def multitree_noise(records, present, segments, fanout, wa, wb, kl, fl, kr, fr):
    """``(sumsq, maxabs)``, float64 (q,): the squared weights and the largest
    |weight| of the noisy final nodes in q answers (``present``: noisy final
    records before each record, n_records + 1 entries)."""
    _, child, succ = records
    m_arr, k_arr = _shape_arrays(segments, fanout)
    sumsq, maxabs = np.empty(wa.shape[0]), np.empty(wa.shape[0])
    check(lib.pds_multitree_noise(
        i64(child), i64(succ), u64(present), child.size, len(segments), m_arr, k_arr,
        u64(wa), u64(wb), u64(kl), f64(fl), u64(kr), f64(fr), sumsq.size, f64(sumsq),
        f64(maxabs)), "rectangle answer noise")
    return sumsq, maxabs


def multitree_describe(child, succ, segments, fanout):
    """Per record: axis, level, node index and predecessor record (-1 on axis 0)."""
    n = child.size
    axis, level = np.empty(n, np.uint8), np.empty(n, np.uint8)
    index, pred = np.empty(n, np.uint64), np.empty(n, np.int64)
    m_arr, k_arr = _shape_arrays(segments, fanout)
    check(lib.pds_multitree_describe(
        i64(child), i64(succ), n, len(segments), m_arr, k_arr,
        ffi.from_buffer("uint8_t[]", axis), ffi.from_buffer("uint8_t[]", level), u64(index),
        i64(pred)), "multi-tree description")
    return axis, level, index, pred


# ---------------------------------------------------------------- adaptive grid
def grid_fine_prefix(fine_shape, base, fine):
    """Turn every coarse cell's fine estimates (float64, in place) into prefix sums."""
    check(lib.pds_grid_fine_prefix(fine_shape.shape[1], fine_shape.shape[0], i64(fine_shape),
                                   i64(base), f64(fine), fine.size), "adaptive grid")


def grid_answer(sizes, runs, coarse, fine_shape, base, fine, k, r, fk, fr):
    """Answers of q queries from per-axis partition-segment weights ((q, c) arrays)."""
    out = np.empty(k.shape[0])
    check(lib.pds_grid_answer(
        len(sizes), u64(np.array(sizes, dtype=np.uint64)), u64(np.array(runs, dtype=np.uint64)),
        f64(coarse), coarse.size, i64(fine_shape), i64(base), f64(fine), fine.size, k.shape[0],
        u64(k), u64(r),
        f64(fk), f64(fr), f64(out)), "rectangle answers")
    return out


def grid_noise(sizes, runs, lam, v1, v2, fine_shape, base, ufine, k, r, fk, fr):
    """``(sumsq, maxabs, cut)``, float64 (q, 2) each: squared weights and largest
    |weight| of the coarse (column 0) and fine (column 1) counts in q answers,
    and the cut fine cells' summed raw counts (column 0) and number (column 1)."""
    sumsq, maxabs, cut = (np.empty((k.shape[0], 2)) for _ in range(3))
    check(lib.pds_grid_noise(
        len(sizes), u64(np.array(sizes, dtype=np.uint64)), u64(np.array(runs, dtype=np.uint64)),
        f64(lam), f64(v1), f64(v2), lam.size, i64(fine_shape), i64(base), f64(ufine),
        ufine.size, k.shape[0], u64(k), u64(r), f64(fk), f64(fr), f64(sumsq), f64(maxabs),
        f64(cut)), "rectangle answer noise")
    return sumsq, maxabs, cut


#: Count arrays larger than this (entries) are updated in sorted order: random
#: increments into hundreds of megabytes miss the cache and the TLB at every row.
_RANDOM_ACCESS_LIMIT = 1 << 21
#: Chunks of more rows than this are split between threads (the C calls
#: release the GIL).
_PARALLEL_ROWS = 1 << 17


def _halves(n):
    """Row ranges for the threads: one, or :func:`get_threads` pieces of a chunk of
    more than ``_PARALLEL_ROWS`` rows (the package's one split rule)."""
    return pieces(n, _PARALLEL_ROWS + 1)


def grid_count(sizes, merge, seg, weights, counts, fine=None):
    """Add rows to ``counts`` (int64, in place): their coarse cells, or with
    ``fine`` (one row ``[base, q_0, .., q_{c-1}]`` per coarse cell) their fine
    cells.  ``seg`` is an (n, c) array of partition segments, ``weights``
    int64 or None (one each).  Large chunks run in :func:`get_threads` threads."""
    seg = np.ascontiguousarray(seg, dtype=np.uint32)
    n, c = seg.shape
    m_arr, g_arr = u64(np.array(sizes, dtype=np.uint64)), u64(np.array(merge, dtype=np.uint64))
    layout = i64(np.ascontiguousarray(fine, dtype=np.int64)) if fine is not None else ffi.NULL
    ranges = _halves(n)
    if counts.size > _RANDOM_ACCESS_LIMIT and n > 1:
        cells = np.empty(n, dtype=np.uint64)

        def index(a, b):
            check(lib.pds_grid_cells(c, m_arr, g_arr, ffi.from_buffer("uint32_t[]", seg[a:b]),
                                     b - a, layout, counts.size, u64(cells[a:b])),
                  "adaptive grid cells")

        run_parts(index, ranges)
        if weights is None:
            cells.sort()
            new = np.empty(cells.size, dtype=bool)
            new[0] = True
            np.not_equal(cells[1:], cells[:-1], out=new[1:])
            starts = np.flatnonzero(new)
            counts[cells[starts]] += np.diff(starts, append=cells.size)
        else:
            order = np.argsort(cells)
            cells, w = cells[order], np.asarray(weights, dtype=np.int64)[order]
            starts = np.flatnonzero(np.diff(cells, prepend=~cells[:1]))
            counts[cells[starts]] += np.add.reduceat(w, starts)
        return
    w = None if weights is None else np.ascontiguousarray(weights, dtype=np.int64)
    extra = [counts] + [np.zeros_like(counts) for _ in ranges[1:]]

    def count(a, b, out):
        check(lib.pds_grid_count(c, m_arr, g_arr, ffi.from_buffer("uint32_t[]", seg[a:b]),
                                 ffi.NULL if w is None else i64(w[a:b]), b - a, layout,
                                 i64(out), out.size), "adaptive grid counts")

    run_parts(count, [(a, b, out) for (a, b), out in zip(ranges, extra)])
    for out in extra[1:]:
        counts += out


class Unrefine:
    """Rows read over refined partitions mapped back to the released segments
    (``csrc/aggregate.c``, ``pds_cells_unrefine``), with a per-axis count of the
    rows on a released segment's end.

    Parameters
    ----------
    maps : sequence of ``(orig, seal)``
        Per axis, from :func:`~pydp_synopsis.rectangles.axes.refine_ends`: the
        released segment of every refined one (uint32) and whether it is an end.
    """

    def __init__(self, maps):
        self.c = len(maps)
        sizes = [len(orig) for orig, _ in maps]
        self._r = np.array(sizes, dtype=np.uint64)
        self._off = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.uint64)
        # one entry per refined segment: (released segment << 1) | is-an-end
        self._map = np.ascontiguousarray(np.concatenate(
            [(np.asarray(o, dtype=np.uint64) << np.uint64(1)) | np.asarray(e, dtype=np.uint64)
             for o, e in maps]))

    def __call__(self, seg, weights=None, acc=None):
        """The released segments of ``seg`` ((n, c) refined segments), a new (n, c)
        uint32 array; with ``acc`` (int64, c entries) also add, per axis, the
        weight of the rows on an end (``weights`` None: 1 each)."""
        seg = np.ascontiguousarray(seg, dtype=np.uint32)
        n = seg.shape[0]
        if seg.ndim != 2 or seg.shape[1] != self.c:
            raise ValueError(f"segments must be (n, {self.c}), got {seg.shape}")
        out = np.empty((n, self.c), dtype=np.uint32)
        w = None if weights is None else np.ascontiguousarray(weights, dtype=np.int64)
        check(lib.pds_cells_unrefine(
            self.c, u64(self._off), u64(self._r), u64(self._map), ffi.from_buffer("uint32_t[]", seg),
            ffi.NULL if w is None else i64(w), n, ffi.from_buffer("uint32_t[]", out),
            ffi.NULL if acc is None else i64(acc)), "refined partition cells")
        return out


# ---------------------------------------------------------------- quadtree
def quad_level(cells, weights, node, live, slot, mid, child, counts):
    """One level of the quadtree (``pds_quad_level``): the first ``live`` rows of
    ``cells`` ((n, 2) uint32), ``weights`` and ``node`` (int64) of split nodes move to
    their children, compacted in place, their weights added to ``counts`` (int64, the
    next level); returns the number of rows kept."""
    if cells.dtype != np.uint32 or weights.dtype != np.int64 or node.dtype != np.int64:
        raise TypeError("quad_level takes uint32 cells and int64 weights and nodes")
    kept = ffi.new("uint64_t *")
    check(lib.pds_quad_level(ffi.from_buffer("uint32_t[]", cells), i64(weights), i64(node), live,
                             i64(slot), slot.size, i64(mid), i64(child), mid.shape[0],
                             i64(counts), counts.size, kept), "quadtree level")
    return int(kept[0])


def quad_answer(tree, lo, hi, i, j):
    """``(answer, sumsq, maxabs, cut)`` of the boxes ``[lo, hi]`` ((q, 2) uint64, snapped
    to segments ``[i, j]``, (q, 2) int64) over ``tree``: a dict of the node arrays
    (``pds_quad_answer``)."""
    q = lo.shape[0]
    answer, sumsq, maxabs = np.empty(q), np.empty(q), np.empty(q)
    cut = np.empty((q, 2))
    work = np.empty(tree["stack"], dtype=np.int64)
    check(lib.pds_quad_answer(
        tree["cfirst"].shape[0], u64(tree["cfirst"]), u64(tree["clast"]), i64(tree["first"]),
        i64(tree["last"]), i64(tree["child"]), i64(tree["nchild"]), i64(tree["leaf"]),
        f64(tree["sums"]), i64(tree["counts"]), tree["counts"].size, q,
        u64(np.ascontiguousarray(lo, dtype=np.uint64)),
        u64(np.ascontiguousarray(hi, dtype=np.uint64)),
        i64(np.ascontiguousarray(i, dtype=np.int64)), i64(np.ascontiguousarray(j, dtype=np.int64)),
        i64(work), work.size, f64(answer), f64(sumsq), f64(maxabs), f64(cut)), "quadtree answer")
    return answer, sumsq, maxabs, cut
