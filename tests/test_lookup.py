"""The segment lookup (csrc/lookup.c) is exactly searchsorted(ends, x, side="left")."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pydp_synopsis as ps
from pydp_synopsis import trees
from pydp_synopsis._core import ffi, lib
from pydp_synopsis.errors import DomainError, ParameterError
from pydp_synopsis.lookup import SegmentLookup

U64_MAX = 2**64 - 1


def _ends(values, last):
    e = np.unique(np.asarray(values, dtype=np.uint64))
    e = e[e < np.uint64(last)]
    return np.append(e, np.uint64(last))


def _keys(ends, gen, n=20000):
    last = int(ends[-1])
    e = ends.astype(object)
    near = [int(v) + d for v in e[: min(len(e), 500)] for d in (-1, 0, 1)]
    near += [int(v) + d for v in e[-500:] for d in (-1, 0, 1)]
    near = [v for v in near if 0 <= v <= last] + [0, last]
    rand = gen.integers(0, last, n, dtype=np.uint64, endpoint=True)
    return np.concatenate([np.array(near, dtype=np.uint64), rand])


def _layouts():
    gen = np.random.default_rng(5)
    yield "uniform 2^64", _ends(gen.integers(0, U64_MAX, 50000, dtype=np.uint64), U64_MAX)
    yield "cluster near 2^63", _ends(gen.integers(0, 2**18, 20000, dtype=np.uint64)
                                     + np.uint64(2**63), U64_MAX)
    yield "two clusters", _ends(np.concatenate([gen.integers(0, 1000, 3000, dtype=np.uint64),
                                                gen.integers(2**60, 2**60 + 10**6, 3000,
                                                             dtype=np.uint64)]), U64_MAX)
    yield "dense small", _ends(np.arange(0, 5000, 3, dtype=np.uint64), 5000)
    yield "geometric", _ends(np.uint64(1) << np.arange(63, dtype=np.uint64), U64_MAX)
    yield "one segment", np.array([U64_MAX], dtype=np.uint64)
    yield "one position", np.array([0], dtype=np.uint64)
    yield "two", np.array([0, 1], dtype=np.uint64)
    yield "domain end only far", np.array([7, 9, 2**40], dtype=np.uint64)


@pytest.mark.parametrize("name,ends", list(_layouts()), ids=[n for n, _ in _layouts()])
def test_lookup_is_searchsorted_left(name, ends):
    keys = _keys(ends, np.random.default_rng(len(ends)))
    lk = SegmentLookup(ends)
    want = np.searchsorted(ends, keys, side="left")
    np.testing.assert_array_equal(lk.find(keys), want)
    # the strided uint32 form of the rectangle build, on a column of an (n, 2) array
    pair = np.stack([keys, keys[::-1]], axis=1)
    out = np.zeros((keys.size, 3), dtype=np.uint32)
    lk.find_into(pair[:, 1], out[:, 2])
    np.testing.assert_array_equal(out[:, 2], want[::-1])
    assert not out[:, :2].any()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, U64_MAX - 1), min_size=0, max_size=60),
       st.lists(st.integers(0, U64_MAX), min_size=1, max_size=60),
       st.integers(0, 64))
def test_lookup_matches_searchsorted_on_arbitrary_ends(vals, keys, bits):
    last = U64_MAX >> bits if bits < 64 else 0
    ends = _ends([v >> bits if bits < 64 else 0 for v in vals], last)
    x = np.array([k % (last + 1) for k in keys], dtype=np.uint64)
    np.testing.assert_array_equal(SegmentLookup(ends).find(x),
                                  np.searchsorted(ends, x, side="left"))


def test_lookup_refuses_keys_past_the_domain_and_bad_ends():
    lk = SegmentLookup(np.array([3, 10], dtype=np.uint64))
    with pytest.raises(ParameterError):
        lk.find(np.array([11], dtype=np.uint64))
    native = ffi.new("pds_lookup *")
    table = ffi.new("uint32_t[]", 3)
    for bad in ([5, 5], [6, 5]):
        assert lib.pds_lookup_init(native, ffi.new("uint64_t[]", bad), 2, table, 3) == lib.PDS_EINVAL
    assert lib.pds_lookup_init(native, ffi.new("uint64_t[]", [1, 2]), 2, table, 4) == lib.PDS_EINVAL
    assert lib.pds_lookup_init(native, ffi.new("uint64_t[]", [1]), 0, table, 3) == lib.PDS_EINVAL


def test_lookup_reads_stay_inside_a_corrupted_table():
    ends = np.array([3, 10, 20, 40], dtype=np.uint64)
    lk = SegmentLookup(ends)
    lk._table[:] = 2**31          # corrupted: every entry past m
    got = lk.find(np.array([0, 5, 40], dtype=np.uint64))
    assert got.min() >= 0 and got.max() <= 3


@pytest.mark.parametrize("tree,consistency", [("hierarchical", True), ("binary", False),
                                              ("kary", False)])
@pytest.mark.parametrize("estimator", trees.ESTIMATORS)
def test_fused_answers_equal_searchsorted_answers(tree, consistency, estimator):
    gen = np.random.default_rng(9)
    v = gen.integers(0, 2**64 - 1, 20000, dtype=np.uint64)
    syn = ps.IntervalSynopsis.build(v, domain=(0, U64_MAX), epsilon=1.0, tree=tree,
                                    consistency=consistency, estimator=estimator,
                                    rng=ps.Rng(seed=1))
    ends = syn.partition.end_offsets
    lo = gen.integers(0, 2**64 - 1, 5000, dtype=np.uint64)
    hi = gen.integers(0, 2**64 - 1, 5000, dtype=np.uint64)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    lo[:100], hi[:100] = ends[:100], ends[:100]              # whole one-segment queries
    lo[100:200] = ends[:100] + np.uint64(1)                  # starting right after a seal
    hi = np.maximum(lo, hi)
    got = syn.count_many(lo, hi)
    e = np.ascontiguousarray(ends)
    if syn.tree == "kary" or syn.consistency:
        prefix = (np.concatenate(([0.0], np.cumsum(trees.consistent_leaves(
            syn._released, len(syn), syn.fanout)))) if syn.tree != "kary"
            else np.concatenate(([0.0], syn._released.astype(np.float64))))
        want = trees.interval_answers(e, lo, hi, estimator, float(syn.partition.threshold),
                                      prefix=prefix)
    else:
        want = trees.interval_answers(e, lo, hi, estimator, float(syn.partition.threshold),
                                      nodes=syn._released, fanout=syn.fanout)
    np.testing.assert_array_equal(got, want)


def test_count_many_still_names_a_reversed_interval():
    syn = ps.IntervalSynopsis.build([1, 5, 9], domain=(0, 99), epsilon=1.0, rng=ps.Rng(seed=2))
    with pytest.raises(DomainError, match="index 1"):
        syn.count_many([0, 50, 3], [10, 40, 4])
    with pytest.raises(DomainError):
        syn.count_many([0], [100])


def test_partition_segment_of_uses_the_lookup():
    p = ps.Partition(np.array([3, 9, 2**40, U64_MAX], dtype=np.uint64), domain=(0, U64_MAX), epsilon=1, beta=0.05)
    x = np.array([0, 3, 4, 9, 10, 2**40, 2**40 + 1, U64_MAX], dtype=np.uint64)
    assert p.segment_of(x).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert p.segment_of(x).tolist() == np.searchsorted(p.end_offsets, x).tolist()
