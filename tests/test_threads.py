"""Large batches run in several threads and give exactly the one-thread answers;
the thread count (set_threads, PDS_THREADS) is checked like any argument."""
import os
import select
import signal

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import _threads

GEN = np.random.default_rng(77)


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(_threads, "THREAD_ROWS", 8)
    before = ps.set_threads(2)
    yield
    ps.set_threads(before)


@pytest.mark.parametrize("options", [{}, {"tree": "binary", "consistency": False},
                                     {"tree": "kary"}])
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
    from pydp_synopsis.rectangles import kernels
    monkeypatch.setattr(kernels, "_PARALLEL_ROWS", 64)
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
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(read)
            os.write(write, repr(_threads.run_parts(lambda a: a * 10, [(1,), (2,), (3,)])).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        ready, _, _ = select.select([f], [], [], 60)
        if not ready:  # pragma: no cover - the failure this test is about
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("run_parts in the forked child never finished")
        got = f.read()
    os.waitpid(pid, 0)
    assert got == "[10, 20, 30]"


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
