"""The rectangle synopsis's calls into the C core: one function per kernel.

Callers pass checked, contiguous numpy arrays; these wrappers only convert
them to C pointers, call, and raise on a non-zero status.  Keeping every
call here means a change of a kernel's signature (``csrc/multitree.c``,
``csrc/grid.c``) is a change of one function.
"""
import numpy as np

from .._core import check, ffi, lib

__all__ = [
    "multitree_build",
    "multitree_check",
    "multitree_answer",
    "multitree_describe",
    "grid_fine_prefix",
    "grid_answer",
    "grid_count",
]


def _u64(a):
    return ffi.from_buffer("uint64_t[]", a)


def _i64(a):
    return ffi.from_buffer("int64_t[]", a)


def _f64(a):
    return ffi.from_buffer("double[]", a)


def _shape_arrays(segments, fanout):
    """The per-axis segment counts and fanouts as the multi-tree kernels take them."""
    return (_u64(np.array(segments, dtype=np.uint64)),
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
    segs = np.ascontiguousarray(segs)
    m_arr, k_arr = _shape_arrays(segments, fanout)
    tree = ffi.new("pds_multitree *")
    try:
        with rng.native() as p:
            st = lib.pds_multitree_build_weighted(
                p, ffi.from_buffer("uint32_t[]", segs),
                ffi.NULL if weights is None else _i64(np.ascontiguousarray(weights, np.int64)),
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
    return lib.pds_multitree_check(_i64(count), _i64(child), _i64(succ), count.size,
                                   len(segments), m_arr, k_arr) == lib.PDS_OK


def multitree_answer(records, cum, segments, fanout, wa, wb, kl, fl, kr, fr):
    """Answers of q queries from their per-axis covers ((q, c) arrays); float64 (q,)."""
    count, child, succ = records
    m_arr, k_arr = _shape_arrays(segments, fanout)
    out = np.empty(wa.shape[0], dtype=np.float64)
    check(lib.pds_multitree_answer(
        _i64(count), _i64(child), _i64(succ), _u64(cum), count.size, len(segments), m_arr,
        k_arr, _u64(wa), _u64(wb), _u64(kl), _f64(fl), _u64(kr), _f64(fr), out.size,
        _f64(out)), "rectangle answers")
    return out


def multitree_describe(child, succ, segments, fanout):
    """Per record: axis, level, node index and predecessor record (-1 on axis 0)."""
    n = child.size
    axis, level = np.empty(n, np.uint8), np.empty(n, np.uint8)
    index, pred = np.empty(n, np.uint64), np.empty(n, np.int64)
    m_arr, k_arr = _shape_arrays(segments, fanout)
    check(lib.pds_multitree_describe(
        _i64(child), _i64(succ), n, len(segments), m_arr, k_arr,
        ffi.from_buffer("uint8_t[]", axis), ffi.from_buffer("uint8_t[]", level), _u64(index),
        _i64(pred)), "multi-tree description")
    return axis, level, index, pred


# ---------------------------------------------------------------- adaptive grid
def grid_fine_prefix(fine_shape, base, fine):
    """Turn every coarse cell's fine estimates (float64, in place) into prefix sums."""
    check(lib.pds_grid_fine_prefix(fine_shape.shape[1], fine_shape.shape[0], _i64(fine_shape),
                                   _i64(base), _f64(fine), fine.size), "adaptive grid")


def grid_answer(sizes, runs, coarse, fine_shape, base, fine, k, r, fk, fr):
    """Answers of q queries from per-axis partition-segment weights ((q, c) arrays)."""
    out = np.empty(k.shape[0])
    check(lib.pds_grid_answer(
        len(sizes), _u64(np.array(sizes, dtype=np.uint64)), _u64(np.array(runs, dtype=np.uint64)),
        _f64(coarse), coarse.size, _i64(fine_shape), _i64(base), _f64(fine), fine.size, k.shape[0],
        _u64(k), _u64(r),
        _f64(fk), _f64(fr), _f64(out)), "rectangle answers")
    return out


#: Count arrays larger than this (entries) are updated in sorted order: random
#: increments into hundreds of megabytes miss the cache and the TLB at every row.
_RANDOM_ACCESS_LIMIT = 1 << 21


def grid_count(sizes, merge, seg, weights, counts, fine=None):
    """Add rows to ``counts`` (int64, in place): their coarse cells, or with
    ``fine`` (one row ``[base, q_0, .., q_{c-1}]`` per coarse cell) their fine
    cells.  ``seg`` is an (n, c) array of partition segments, ``weights``
    int64 or None (one each)."""
    seg = np.ascontiguousarray(seg, dtype=np.uint32)
    shape_args = (seg.shape[1], _u64(np.array(sizes, dtype=np.uint64)),
                  _u64(np.array(merge, dtype=np.uint64)), ffi.from_buffer("uint32_t[]", seg))
    layout = _i64(np.ascontiguousarray(fine, dtype=np.int64)) if fine is not None else ffi.NULL
    if counts.size > _RANDOM_ACCESS_LIMIT and seg.shape[0] > 1:
        cells = np.empty(seg.shape[0], dtype=np.uint64)
        check(lib.pds_grid_cells(*shape_args, seg.shape[0], layout, counts.size, _u64(cells)),
              "adaptive grid cells")
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
    w = ffi.NULL if weights is None else _i64(np.ascontiguousarray(weights, dtype=np.int64))
    check(lib.pds_grid_count(*shape_args, w, seg.shape[0], layout, _i64(counts), counts.size),
          "adaptive grid counts")
