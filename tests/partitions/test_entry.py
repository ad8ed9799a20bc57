"""One route to a partition: ``partitions.partition_of_sorted(method=...)`` and its runner.

Release 0.2 chose PrivTree with ``threshold_factor="privtree"`` (a string in a
numeric parameter); it still works, with a DeprecationWarning naming
``method=``, and gives the same release for a seed.
"""
import warnings
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import partition as old_partition, privtree as old_privtree, shards as old_shards
from pydp_synopsis.errors import ParameterError
from pydp_synopsis.partitions import (METHODS, TreePartition, assemble_partition, partition_of_chunks,
                                      partition_of_sorted, partition_sharded, partition_source_axis)
from pydp_synopsis.sources import ArraySource, Prepared

DOM = (0, 2**20 - 1)
EPS = Fraction(1, 2)


def _data(seed=3, n=4000):
    v = np.random.default_rng(seed).integers(0, 2**20, n).astype(np.uint64)
    return np.sort(v)


def test_methods():
    assert METHODS == ("dnrr", "privtree")


@pytest.mark.parametrize("method", METHODS)
def test_one_entry_gives_the_streamed_and_sharded_releases(method):
    srt = _data()
    keys, counts = np.unique(srt, return_counts=True)
    counts = counts.astype(np.int64)
    whole, w = partition_of_sorted(srt, DOM, EPS, 0.05, None, ps.Rng(seed=1), method=method,
                                   weights=True)
    streamed, w2 = partition_of_chunks([(keys, counts)], DOM, EPS, 0.05, None, ps.Rng(seed=1),
                                       method=method)
    assert whole == streamed and np.array_equal(w, w2) and int(w.sum()) == srt.size
    assert isinstance(whole, TreePartition) == (method == "privtree")
    sharded, ws = partition_of_sorted(srt, DOM, EPS, 0.05, None, ps.Rng(seed=1), method=method,
                                      shards=4, weights=True)
    assert sharded == partition_sharded([(keys, counts)], DOM, 4, EPS, 0.05, None,
                                        ps.Rng(seed=1), method=method)[0]
    assert int(ws.sum()) == srt.size


def test_threshold_factor_privtree_is_deprecated_and_releases_the_same():
    srt = _data()
    new = partition_of_sorted(srt, DOM, EPS, 0.05, rng=ps.Rng(seed=5), method="privtree")
    with pytest.warns(DeprecationWarning, match=r"method='privtree'"):
        old = partition_of_sorted(srt, DOM, EPS, 0.05, "privtree", ps.Rng(seed=5))
    assert old == new and isinstance(old, TreePartition)
    keys, counts = np.unique(srt, return_counts=True)
    with pytest.warns(DeprecationWarning, match=r"method='privtree'"):
        part, _ = partition_of_chunks(iter([(keys, counts.astype(np.int64))]), DOM, EPS, 0.05,
                                      "privtree", ps.Rng(seed=5))
    assert part == new
    with pytest.warns(DeprecationWarning, match=r"method='privtree'"):
        again = assemble_partition(new.end_offsets, DOM[0], DOM[1], EPS, 0.05, "privtree")
    assert again == new


def test_the_deprecation_points_at_the_caller():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        partition_of_sorted(_data(n=10), DOM, EPS, 0.05, "privtree", ps.Rng(seed=5))
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]


def test_dnrr_default_and_a_numeric_factor_do_not_warn():
    srt = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = partition_of_sorted(srt, DOM, EPS, 0.05, 3.0, ps.Rng(seed=2))
        b = partition_of_sorted(srt, DOM, EPS, 0.05, rng=ps.Rng(seed=2))
    assert a == b == ps.private_partition(srt, domain=DOM, epsilon=EPS, rng=ps.Rng(seed=2))


def test_bad_method_and_factor_with_privtree_are_refused():
    with pytest.raises(ParameterError, match="method must be one of"):
        partition_of_sorted(_data(n=5), DOM, EPS, 0.05, rng=ps.Rng(seed=1), method="quadtree")
    with pytest.raises(ParameterError, match="threshold_factor is an option of method='dnrr'"):
        partition_of_sorted(_data(n=5), DOM, EPS, 0.05, 2.0, ps.Rng(seed=1), method="privtree")


class _LocalShards(Prepared):
    """A prepared source that runs the given function on each shard's aggregate itself, in
    this process: what a cluster's ``map_shards`` does on its workers."""

    def __init__(self, inner, domain):
        self._inner, self._domain = inner, domain
        self.rows = inner.rows
        self.calls = 0

    def axis(self, a):
        return self._inner.axis(a)

    def map_shards(self, a, shards, function, arguments):
        self.calls += 1
        keys, counts = (np.concatenate(x) for x in zip(*self._inner.axis(a)))
        lo = self._domain[0]
        out = []
        for (s, t), args in zip(old_shards.shard_domains(self._domain, shards), arguments):
            inside = (keys >= np.uint64(s - lo)) & (keys <= np.uint64(t - lo))
            out.append(function((keys[inside], counts[inside]), *args))
        return out


@pytest.mark.parametrize("method", METHODS)
def test_runner_gives_the_same_release_here_and_on_a_cluster(method):
    v = _data(seed=8).astype(np.int64)
    src = ArraySource([v])
    with src.prepare([DOM]) as prepared:
        here = partition_source_axis(prepared, 0, DOM, EPS, 0.05, ps.Rng(seed=4), 4, method=method)
        remote = _LocalShards(prepared, DOM)
        there = partition_source_axis(remote, 0, DOM, EPS, 0.05, ps.Rng(seed=4), 4, method=method)
    assert remote.calls == 1
    assert here[0] == there[0] and np.array_equal(here[1], there[1])
    memory = partition_of_sorted(np.sort(v).astype(np.uint64), DOM, EPS, 0.05, None,
                                 ps.Rng(seed=4), method=method, shards=4)
    assert here[0] == memory


def test_sources_run_no_mechanism():
    """A prepared source offers data (``axis``, ``cells``, ``map_shards``), not a partition."""
    assert not hasattr(Prepared, "partition")
    assert Prepared.map_shards is None


def test_old_module_paths_still_import():
    assert old_partition.private_partition is ps.private_partition
    assert old_partition.Partition is ps.Partition and old_partition.OnlinePartition is ps.OnlinePartition
    assert old_privtree.TreePartition is ps.TreePartition
    assert old_shards.shard_domains((0, 9), 3) == [(0, 2), (3, 5), (6, 9)]


def test_rectangles_with_counts_and_clip_take_the_one_route():
    """Release 0.2 partitioned a weighted rectangle build through ``private_partition`` of
    the unclipped points, so ``clip=True`` with ``counts=`` refused an out-of-domain point;
    the one route partitions the clipped offsets: the release of the clipped data."""
    pts = np.array([[-5, 3], [2, 200], [4, 4]])
    clipped = np.clip(pts, 0, 99)
    a = ps.RectangleSynopsis.build(pts, domain=[(0, 99)] * 2, epsilon=1, clip=True,
                                   counts=[1, 2, 3], rng=ps.Rng(seed=1))
    b = ps.RectangleSynopsis.build(clipped, domain=[(0, 99)] * 2, epsilon=1,
                                   counts=[1, 2, 3], rng=ps.Rng(seed=1))
    assert a.partitions == b.partitions
    assert a.count([0, 0], [99, 99]) == b.count([0, 0], [99, 99])
