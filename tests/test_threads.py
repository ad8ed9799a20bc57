"""Large batches run in several threads and give exactly the one-thread answers;
the thread count (set_threads, PDS_THREADS) is checked like any argument."""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import _threads
from forking import in_forked_child

GEN = np.random.default_rng(77)


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(_threads, "THREAD_ROWS", 8)
    before = ps.set_threads(2)
    yield
    ps.set_threads(before)


@pytest.mark.parametrize("options", [{}, {"structure": "binary", "consistency": False},
                                     {"structure": "kary"}])
def test_interval_answers_and_std_in_two_threads(small_batches, options):
    syn = ps.IntervalSynopsis.build(GEN.integers(0, 10**6, 5000), domain=(0, 10**6 - 1),
                                    epsilon=1, rng=ps.Rng(seed=1), **options)
    a, b = GEN.integers(0, 10**6, (2, 1001))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    two = syn.count_many(lo, hi, return_std=True)
    ps.set_threads(1)
    one = syn.count_many(lo, hi, return_std=True)
    assert all(np.array_equal(x, y) for x, y in zip(two, one))


@pytest.mark.parametrize("structure", ["multitree", "adaptive"])
def test_rectangle_answers_in_two_threads(small_batches, structure):
    syn = ps.RectangleSynopsis.build(GEN.integers(0, 4096, (3000, 2)), domain=[(0, 4095)] * 2,
                                     epsilon=1, structure=structure, rng=ps.Rng(seed=2))
    a, b = GEN.integers(0, 4096, (2, 999, 2))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    two = syn.count_many(lo, hi)
    ps.set_threads(1)
    assert np.array_equal(two, syn.count_many(lo, hi))


def test_halves_splits_tuples_and_arrays(small_batches):
    x = np.arange(20)
    assert np.array_equal(_threads.halves(lambda a: a * 2, x), x * 2)
    s, d = _threads.halves(lambda a, b: (a + b, a - b), x, x[::-1].copy())
    assert np.array_equal(s, np.full(20, 19)) and np.array_equal(d, x - x[::-1])


def test_three_threads_split_in_order(small_batches):
    ps.set_threads(3)
    x = np.arange(50)
    assert np.array_equal(_threads.halves(lambda a: a + 1, x), x + 1)
    assert _threads.run_parts(lambda a, b: a * b, [(1, 2), (3, 4), (5, 6), (7, 8)]) == [2, 12, 30, 56]


@pytest.mark.parametrize("structure", ["multitree", "adaptive"])
def test_rectangle_build_counts_in_threads(monkeypatch, structure):
    """The build's counting kernels split large chunks between threads: same synopsis."""
    from pydp_synopsis.rectangles import grid, kernels
    monkeypatch.setattr(kernels, "_PARALLEL_ROWS", 64)
    monkeypatch.setattr(grid, "_PARALLEL_CELLS", 2)
    pts = GEN.integers(0, 4096, (3000, 2))
    a, b = GEN.integers(0, 4096, (2, 500, 2))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    answers = []
    before = ps.set_threads(1)
    try:
        for n in (1, 2, 3):
            ps.set_threads(n)
            syn = ps.RectangleSynopsis.build(pts, domain=[(0, 4095)] * 2, epsilon=1,
                                             structure=structure, rng=ps.Rng(seed=5))
            answers.append(syn.count_many(lo, hi))
    finally:
        ps.set_threads(before)
    assert np.array_equal(answers[0], answers[1]) and np.array_equal(answers[0], answers[2])


def test_a_forked_child_makes_its_own_pool(small_batches):
    """The pool's threads stay in the parent; a child made by fork() after the
    pool started must not hand work to them (it would wait forever)."""
    assert _threads.run_parts(lambda a: a + 1, [(1,), (2,)]) == [2, 3]   # the pool is up
    got = in_forked_child(
        lambda: repr(_threads.run_parts(lambda a: a * 10, [(1,), (2,), (3,)])).encode(),
        timeout=60, what="run_parts in the forked child")
    assert got == b"[10, 20, 30]"


def test_thread_count_default_env_and_set(monkeypatch):
    before = ps.set_threads(None)
    try:
        monkeypatch.delenv("PDS_THREADS", raising=False)
        assert ps.get_threads() >= 1
        monkeypatch.setenv("PDS_THREADS", "3")
        assert ps.get_threads() == 3
        assert ps.set_threads(1) is None and ps.get_threads() == 1
        assert ps.set_threads(None) == 1 and ps.get_threads() == 3
    finally:
        ps.set_threads(before)


@pytest.mark.parametrize("bad", [0, -1, 257, 1.5, "2", True])
def test_bad_thread_counts(bad):
    with pytest.raises(ps.ParameterError, match=r"^n must be an integer in \[1, 256\]"):
        ps.set_threads(bad)


@pytest.mark.parametrize("bad", ["0", "two", "1e3", "300"])
def test_bad_env_thread_count(monkeypatch, bad):
    before = ps.set_threads(None)
    try:
        monkeypatch.setenv("PDS_THREADS", bad)
        with pytest.raises(ps.ParameterError, match=r"^PDS_THREADS must be an integer in \[1, 256\]"):
            ps.get_threads()
    finally:
        ps.set_threads(before)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 4097])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_sort_in_threads_is_np_sort(monkeypatch, n, threads):
    monkeypatch.setattr(_threads, "SORT_ROWS", 4)
    gen = np.random.default_rng(n)
    v = gen.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    v[::5] = v[:1] if n else v[::5]                # repeats across the pieces
    if n > 3:
        v[-1], v[1] = np.uint64(2**64 - 1), np.uint64(0)
    before = ps.set_threads(threads)
    try:
        out = _threads.sort_u64(v)
    finally:
        ps.set_threads(before)
    assert out.dtype == np.uint64 and np.array_equal(out, np.sort(v))
    with pytest.raises(TypeError, match="uint64"):
        _threads.sort_u64(v.astype(np.int64))


def test_merge_kernel_slices_and_bad_arguments():
    from pydp_synopsis._core import ffi, lib

    gen = np.random.default_rng(9)
    a = np.sort(gen.integers(0, 50, 300).astype(np.uint64))
    b = np.sort(gen.integers(0, 50, 200).astype(np.uint64))
    out = np.zeros(500, dtype=np.uint64)
    pa, pb, po = (ffi.from_buffer("uint64_t[]", x) for x in (a, b, out))
    cuts = [0, 1, 77, 250, 251, 499, 500]
    for first, last in reversed(list(zip(cuts, cuts[1:]))):   # any order, disjoint slices
        assert lib.pds_merge_sorted_u64(pa, a.size, pb, b.size, po, first, last) == lib.PDS_OK
    assert np.array_equal(out, np.sort(np.concatenate([a, b])))
    # one side empty
    assert lib.pds_merge_sorted_u64(pa, a.size, ffi.NULL, 0, po, 0, a.size) == lib.PDS_OK
    assert np.array_equal(out[:300], a)
    for args in [(pa, a.size, pb, b.size, po, 10, 9),        # first > last
                 (pa, a.size, pb, b.size, po, 0, 501),       # past the output
                 (ffi.NULL, 3, pb, b.size, po, 0, 1),        # missing input
                 (pa, a.size, pb, b.size, ffi.NULL, 0, 1)]:  # missing output
        assert lib.pds_merge_sorted_u64(*args) == lib.PDS_EINVAL


def test_axis_streams_are_fresh_per_build_and_distinct_per_axis():
    """The axes draw from child streams of 32 fresh bytes: two builds from one generator
    never share noise, and two identical columns get different partitions."""
    col = GEN.integers(0, 2**20, 4000)
    pts = np.stack([col, col], axis=1)
    rng = ps.Rng(seed=6)
    dom = [(0, 2**20 - 1)] * 2
    one = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1, rng=rng, config="dnrr")
    two = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1, rng=rng, config="dnrr")
    e1 = [p.end_offsets for p in one.partitions]
    e2 = [p.end_offsets for p in two.partitions]
    assert not np.array_equal(e1[0], e1[1])
    assert not np.array_equal(e1[0], e2[0]) and not np.array_equal(e1[1], e2[1])
