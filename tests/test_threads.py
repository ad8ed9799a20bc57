"""Large query batches run in two threads and give exactly the one-thread answers."""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import _threads

GEN = np.random.default_rng(77)


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(_threads, "THREAD_ROWS", 8)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)


@pytest.mark.parametrize("options", [{}, {"tree": "binary", "consistency": False},
                                     {"tree": "kary"}])
def test_interval_answers_and_std_in_two_threads(small_batches, options):
    syn = ps.IntervalSynopsis.build(GEN.integers(0, 10**6, 5000), domain=(0, 10**6 - 1),
                                    epsilon=1, rng=ps.Rng(seed=1), **options)
    a, b = GEN.integers(0, 10**6, (2, 1001))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    two = syn.count_many(lo, hi, return_std=True)
    _threads.THREAD_ROWS = 1 << 62
    one = syn.count_many(lo, hi, return_std=True)
    assert all(np.array_equal(x, y) for x, y in zip(two, one))


@pytest.mark.parametrize("structure", ["multitree", "adaptive"])
def test_rectangle_answers_in_two_threads(small_batches, structure):
    syn = ps.RectangleSynopsis.build(GEN.integers(0, 4096, (3000, 2)), domain=[(0, 4095)] * 2,
                                     epsilon=1, structure=structure, rng=ps.Rng(seed=2))
    a, b = GEN.integers(0, 4096, (2, 999, 2))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    two = syn.count_many(lo, hi)
    _threads.THREAD_ROWS = 1 << 62
    assert np.array_equal(two, syn.count_many(lo, hi))


def test_halves_splits_tuples_and_arrays(small_batches):
    x = np.arange(20)
    assert np.array_equal(_threads.halves(lambda a: a * 2, x), x * 2)
    s, d = _threads.halves(lambda a, b: (a + b, a - b), x, x[::-1].copy())
    assert np.array_equal(s, np.full(20, 19)) and np.array_equal(d, x - x[::-1])
