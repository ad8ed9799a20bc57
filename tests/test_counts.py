"""Weighted input (``counts=``): exactly the release of the repeated values, at the cost of
the distinct ones; bad counts refused before any budget or randomness is spent."""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.aggregates import MAX_TOTAL_COUNT, SegmentIndex, SortedAggregator, aggregate, merge


def weighted(seed, n=400, hi=999, zeros=True):
    """Unsorted values with duplicates, counts with zeros."""
    gen = np.random.default_rng(seed)
    values = gen.integers(0, hi + 1, n)
    q = n // 4
    values[:q] = values[q:2 * q]                             # duplicates of other rows
    counts = gen.integers(0 if zeros else 1, 5, n)
    counts[::7] = 0 if zeros else counts[::7]
    return values, counts


def same_interval_synopsis(a, b):
    assert a.partition == b.partition
    top = a.domain[1]
    lo = np.arange(0, top + 1, max(1, top // 27))
    hi = np.minimum(lo + np.arange(lo.size) * 13, top)
    assert np.array_equal(a.count_many(lo, hi), b.count_many(lo, hi))
    assert a.error_bound(0.9) == b.error_bound(0.9)


@pytest.mark.parametrize("opts", [dict(structure="binary"), dict(structure="hierarchical"),
                                  dict(structure="hierarchical", consistency=False, estimator="cover"),
                                  dict(structure="kary", k=5)])
def test_interval_counts_equal_the_repeated_values(opts):
    values, counts = weighted(1)
    for seed in range(3):
        a = ps.IntervalSynopsis.build(np.repeat(values, counts), domain=(0, 999), epsilon=1,
                                      rng=ps.Rng(seed=seed), **opts)
        b = ps.IntervalSynopsis.build(values, counts=counts, domain=(0, 999), epsilon=1,
                                      rng=ps.Rng(seed=seed), **opts)
        same_interval_synopsis(a, b)


@pytest.mark.parametrize("factor", [0.7, 3])
def test_partition_counts_equal_the_repeated_values(factor):
    for seed in range(20):
        values, counts = weighted(seed, n=int(np.random.default_rng(seed).integers(0, 300)))
        kw = dict(domain=(0, 999), epsilon=0.5, threshold_factor=factor)
        ref = ps.private_partition(np.repeat(values, counts), rng=ps.Rng(seed=seed), **kw)
        assert ps.private_partition(values, counts=counts, rng=ps.Rng(seed=seed), **kw) == ref
        order = np.argsort(values, kind="stable")
        assert ps.private_partition(values[order], counts=counts[order], presorted=True,
                                    rng=ps.Rng(seed=seed), **kw) == ref


def same_rectangle_synopsis(a, b, c, hi):
    assert a.partitions == b.partitions and a.structure == b.structure
    if a.structure == "multitree":
        assert np.array_equal(a.tree_nodes(), b.tree_nodes())
    else:
        for x, y in zip(a.grid_cells(), b.grid_cells()):
            assert np.array_equal(x, y)
    gen = np.random.default_rng(5)
    corners = np.sort(gen.integers(0, hi + 1, (50, 2, c)), axis=1)
    assert np.array_equal(a.count_many(corners[:, 0], corners[:, 1]),
                          b.count_many(corners[:, 0], corners[:, 1]))


@pytest.mark.parametrize("c, opts", [
    (1, {}), (2, {}), (3, {}), (2, dict(structure="multitree")),
    (2, dict(config="dnrr")), (3, dict(structure="multitree", prune=1.0, merge=2)),
    (2, dict(structure="multitree", final_share=None, estimator="cover")),
])
def test_rectangle_counts_equal_the_repeated_points(c, opts):
    gen = np.random.default_rng(c)
    hi = 63
    points = gen.integers(0, hi + 1, (300, c))
    points[:60] = points[100:160]                        # duplicate rows
    counts = gen.integers(0, 4, 300)
    for seed in range(2):
        kw = dict(domain=[(0, hi)] * c, epsilon=2, **opts)
        a = ps.RectangleSynopsis.build(np.repeat(points, counts, axis=0), rng=ps.Rng(seed=seed),
                                       **kw)
        b = ps.RectangleSynopsis.build(points, counts=counts, rng=ps.Rng(seed=seed), **kw)
        same_rectangle_synopsis(a, b, c, hi)


def test_cost_is_in_distinct_values_not_in_their_total():
    values = np.array([10, 500, 500, 900])
    counts = np.array([10**12, 3, 4, 0])
    syn = ps.IntervalSynopsis.build(values, counts=counts, domain=(0, 999), epsilon=1,
                                    rng=ps.Rng(seed=1))
    assert abs(syn.count(0, 20) - 10**12) <= syn.error_bound(0.95)
    rect = ps.RectangleSynopsis.build([[10, 10], [500, 7]], counts=[10**12, 5],
                                      domain=[(0, 999)] * 2, epsilon=1, rng=ps.Rng(seed=2))
    assert abs(rect.count([0, 0], [20, 20]) - 10**12) <= rect.error_bound(0.95)
    part = ps.private_partition(values, counts=counts, domain=(0, 2**64 - 1), epsilon=1,
                                rng=ps.Rng(seed=3))
    assert int(part.ends[-1]) == 2**64 - 1


def test_all_zero_and_empty_counts_are_an_empty_database():
    for values, counts in (([3, 4], [0, 0]), ([], [])):
        a = ps.IntervalSynopsis.build(values, counts=counts, domain=(0, 9), epsilon=1,
                                      rng=ps.Rng(seed=4))
        b = ps.IntervalSynopsis.build([], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=4))
        same_interval_synopsis(a, b)


BAD_COUNTS = [
    ([1, -1, 2], ps.DomainError, "counts must be >= 0"),
    ([1.0, 2.0, 3.0], TypeError, "counts must be an array of non-negative integers"),
    ([1, float("nan"), 2], TypeError, "counts"),
    ([True, False, True], TypeError, "counts"),
    (["1", "2", "3"], TypeError, "counts"),
    ([1, 2], ps.ParameterError, "counts must hold one count per"),
    ([[1, 2, 3]], ps.ParameterError, "counts must hold one count per"),
    ([2**62, 1, 0], ps.DomainError, "total at most 2**62"),
    (np.full(3, 2**63 + 5, dtype=np.uint64), ps.DomainError, "total at most 2**62"),
    (np.full(3, 2**62 - 1, dtype=np.int64), ps.DomainError, "total at most 2**62"),
    ([2**70, 1, 1], ps.DomainError, "total at most 2**62"),
]


@pytest.mark.parametrize("counts, exc, message", BAD_COUNTS)
@pytest.mark.parametrize("builder", ["partition", "interval", "rectangle"])
def test_bad_counts_refused_before_budget_or_randomness(builder, counts, exc, message):
    rng, fresh = ps.Rng(seed=9), ps.Rng(seed=9)
    budget = ps.Budget(10)
    with pytest.raises(exc) as info:
        if builder == "partition":
            ps.private_partition([1, 2, 3], counts=counts, domain=(0, 9), epsilon=1, rng=rng)
        elif builder == "interval":
            ps.IntervalSynopsis.build([1, 2, 3], counts=counts, domain=(0, 9), epsilon=1,
                                      rng=rng, budget=budget)
        else:
            ps.RectangleSynopsis.build([[1, 1], [2, 2], [3, 3]], counts=counts,
                                       domain=[(0, 9)] * 2, epsilon=1, rng=rng, budget=budget)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert "2305843009213693952" not in text and "-1" not in text   # never a count's value
    assert budget.remaining == 10
    assert rng.random_uint64() == fresh.random_uint64()             # nothing drawn


def test_max_total_count_is_accepted():
    part = ps.private_partition([1, 2], counts=[MAX_TOTAL_COUNT - 1, 1], domain=(0, 9),
                                epsilon=1, rng=ps.Rng(seed=1))
    assert len(part) >= 1


# ------------------------------------------------------------- the aggregates

def test_aggregate_and_merge_match_numpy_unique():
    gen = np.random.default_rng(3)
    keys = gen.integers(0, 50, 1000).astype(np.uint64)
    counts = gen.integers(0, 3, 1000)
    k, c = aggregate(keys, counts)
    expect = {int(u): int(counts[keys == u].sum()) for u in np.unique(keys)}
    assert dict(zip(k.tolist(), c.tolist())) == {u: w for u, w in expect.items() if w}
    parts = [aggregate(keys[i:i + 100], counts[i:i + 100]) for i in range(0, 1000, 100)]
    km, cm = merge(parts)
    assert np.array_equal(km, k) and np.array_equal(cm, c)


@pytest.mark.parametrize("memory, block", [(4, 3), (64, 10), (10**6, 10**6)])
def test_sorted_aggregator_spills_and_merges_exactly(tmp_path, memory, block):
    gen = np.random.default_rng(memory)
    keys = gen.integers(0, 2**64 - 1, 5000, dtype=np.uint64, endpoint=True)
    keys[::3] = keys[1::3][: keys[::3].size]             # duplicates across chunks
    with SortedAggregator(memory_entries=memory, block_entries=block,
                          directory=tmp_path) as agg:
        for i in range(0, keys.size, 97):
            agg.add(keys[i:i + 97])
        chunks = list(agg.chunks())
        assert (agg.spilled_runs > 0) == (memory < 5000)
        assert agg.total == keys.size
    assert list(tmp_path.iterdir()) == []                # runs removed
    got = np.concatenate([k for k, _ in chunks])
    assert np.all(got[1:] > got[:-1])                     # strictly increasing across chunks
    uniq, cnt = np.unique(keys, return_counts=True)
    assert np.array_equal(got, uniq)
    assert np.array_equal(np.concatenate([c for _, c in chunks]), cnt)


# ------------------------------------------------- the data path's C kernels

def test_segment_index_is_numpy_searchsorted():
    gen = np.random.default_rng(4)
    for top in (10, 2**20, 2**64 - 1):
        ends = np.unique(gen.integers(0, top, 5000, dtype=np.uint64, endpoint=True))
        ends[-1] = top
        x = gen.integers(0, top, 20000, dtype=np.uint64, endpoint=True)
        x[:min(100, ends.size)] = ends[:100]                   # values on the ends themselves
        for bits in (1, 8, 18):
            got = SegmentIndex(ends, table_bits=bits).of(x)
            assert np.array_equal(got, np.searchsorted(ends, x, side="left"))
    with pytest.raises(ps.ParameterError):                 # a value past the last end
        SegmentIndex(np.array([5], dtype=np.uint64)).of(np.array([6], dtype=np.uint64))


def test_grid_counts_follow_the_layout():
    """The C cell counts equal the Python layout's (Layout.fine_index, the reference)."""
    from pydp_synopsis.rectangles import kernels
    from pydp_synopsis.rectangles.grid import Layout, _coarse_index, coarse_geometry

    gen = np.random.default_rng(5)
    for c, sizes, runs in ((2, (37, 11), (5, 3)), (3, (9, 8, 30), (2, 8, 7))):
        seg = np.stack([gen.integers(0, m, 5000) for m in sizes], axis=1)
        weights = gen.integers(0, 4, 5000)
        shape, width = coarse_geometry(sizes, runs)
        layout = Layout(runs, shape, width, np.minimum(gen.integers(1, 6, width.shape), width))
        coarse = _coarse_index(seg, runs, shape)
        fine_ref = np.bincount(layout.fine_index(seg, coarse), weights=weights,
                               minlength=layout.owner.size)
        fine = np.column_stack([layout.base, layout.fine_shape])
        for limit in (1 << 30, 0):                       # random increments / sorted cells
            kernels._RANDOM_ACCESS_LIMIT = limit
            try:
                got = np.zeros(width.shape[0], dtype=np.int64)
                kernels.grid_count(sizes, runs, seg, None, got)
                assert np.array_equal(got, np.bincount(coarse, minlength=width.shape[0]))
                got = np.zeros(layout.owner.size, dtype=np.int64)
                kernels.grid_count(sizes, runs, seg, weights, got, fine)
                assert np.array_equal(got, fine_ref)
            finally:
                kernels._RANDOM_ACCESS_LIMIT = 1 << 21
