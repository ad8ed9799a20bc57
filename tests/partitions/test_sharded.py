"""Sharded builds are as accurate as in-memory ones (issue #13: "same accuracy as in memory").

A sharded partition cuts the domain at public points and seals at most ``shards - 1``
extra segments (pydp_synopsis/shards.py); the weight bound and the tree noise are those of
one partition.  Here the error distributions of many independent builds are compared: the
mean squared error of fixed queries over sharded and unsharded builds agree within 30%, and
the test checks that 30% is at least 5 standard errors of the difference (a correct build
fails with probability below 1e-6).  The dask path releases exactly the in-memory sharded
build under a seed (tests/sources/test_dask.py), so this covers the cluster too.
"""
import numpy as np
import pytest

import pydp_synopsis as ps

GEN = np.random.default_rng(1313)
MARGIN, Z = 0.30, 5.0


def _mse_per_build(build, truth, runs, seed0):
    out = np.empty(runs)
    for i in range(runs):
        err = build(ps.Rng(seed=seed0 + i)) - truth
        out[i] = np.mean(err ** 2)
    return out


def _same_accuracy(a, b):
    ma, mb = a.mean(), b.mean()
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    margin = MARGIN * min(ma, mb)
    assert margin >= Z * se, "too few builds for a test at alpha = 1e-6"
    assert abs(ma - mb) <= margin, (ma, mb, se)
    return ma / mb


@pytest.mark.parametrize("shards", [4, 16])
@pytest.mark.slow
def test_sharded_interval_synopses_are_as_accurate_as_one_partition(shards):
    domain = (0, 2**16 - 1)
    values = np.concatenate([GEN.integers(0, 2**16, 1500), GEN.normal(20000, 300, 1500)
                             .astype(np.int64), np.full(400, 40000)])
    a, b = GEN.integers(0, 2**16, (2, 200))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    srt = np.sort(values)
    truth = np.searchsorted(srt, hi, "right") - np.searchsorted(srt, lo, "left")

    def build(k):
        return lambda rng: ps.IntervalSynopsis.build(values, domain=domain, epsilon=1, rng=rng,
                                                     shards=k).count_many(lo, hi)

    one = _mse_per_build(build(1), truth, 800, 0)
    many = _mse_per_build(build(shards), truth, 800, 10**6)
    _same_accuracy(many, one)


@pytest.mark.slow
def test_sharded_rectangle_synopses_are_as_accurate_as_one_partition():
    domain = [(0, 4095), (0, 4095)]
    pts = np.concatenate([GEN.integers(0, 4096, (1500, 2)),
                          GEN.normal(1000, 60, (1000, 2)).astype(np.int64) % 4096])
    a, b = GEN.integers(0, 4096, (2, 100, 2))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    inside = ((pts[None, :, :] >= lo[:, None, :]) & (pts[None, :, :] <= hi[:, None, :])).all(2)
    truth = inside.sum(axis=1)

    def build(k):
        return lambda rng: ps.RectangleSynopsis.build(pts, domain=domain, epsilon=1, rng=rng,
                                                      structure="multitree",
                                                      shards=k).count_many(lo, hi)

    one = _mse_per_build(build(1), truth, 300, 0)
    many = _mse_per_build(build(4), truth, 300, 10**6)
    _same_accuracy(many, one)
