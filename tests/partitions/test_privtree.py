"""PrivTree partition (pydp_synopsis/privtree.py, csrc/privtree.c): exact law, exact privacy
loss, weight bound, and every bad input.

The law of the leaves is computed exactly in Python from the mechanism's definition (each
tested node splits with probability P(Z >= theta - b + 1), Z discrete Laplace), the C
kernel's leaves are tested against it (chi-square, alpha = 1e-6), and the privacy loss of
every outcome is computed exactly for neighbouring inputs.
"""
import math
import os
import stat
import tempfile
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.partitions import privtree
from pydp_synopsis._core import ffi, lib
from pydp_synopsis.errors import DomainError, FormatError, ParameterError
from pydp_synopsis.privtree import TreePartition, privtree_of_sorted, privtree_parameters

from privtree_law import split_prob
from stattests import assert_gof


# ----------------------------------------------------------------- the exact law
def _law(counts, first, last, lam, delta, depth=0):
    """{leaf ends: probability} of the tree over [first, last] (exhaustive)."""
    if first == last:
        return {(last,): 1.0}
    p, q = split_prob(int(sum(counts[first:last + 1])), depth, lam, delta)
    out = {(last,): q}
    mid = first + (last - first) // 2
    left = _law(counts, first, mid, lam, delta, depth + 1)
    right = _law(counts, mid + 1, last, lam, delta, depth + 1)
    for lk, lp in left.items():
        for rk, rp in right.items():
            out[lk + rk] = out.get(lk + rk, 0.0) + p * lp * rp
    return out


def _outcome_prob(counts, ends, lam, delta):
    """P(the leaves are exactly ``ends``), walking the tree they imply."""
    ends = set(ends)

    def walk(first, last, depth):
        if first == last:
            return 1.0 if last in ends else 0.0
        p, q = split_prob(int(sum(counts[first:last + 1])), depth, lam, delta)
        mid = first + (last - first) // 2
        if last in ends and not any(first <= e < last for e in ends):
            return q
        return p * walk(first, mid, depth + 1) * walk(mid + 1, last, depth + 1)

    return walk(0, len(counts) - 1, 0)


def _grow(values, size, eps, rng, depth0=0):
    # the in-memory form: the sorted column itself, repeats and all (cum None)
    srt = np.sort(np.asarray(values, dtype=np.uint64))
    return privtree._grow(srt, None, 0, size - 1, Fraction(eps), rng, depth0)[0]


def test_sorted_column_and_distinct_runs_give_the_same_tree():
    """The kernel's two inputs -- the sorted column (cum NULL) and its distinct values
    with running totals -- are the same data: same draws, same leaves, same counts."""
    gen = np.random.default_rng(3)
    v = np.sort(gen.integers(0, 5000, 20000) // 7 * 7).astype(np.uint64)
    keys, cum = privtree._runs_of_sorted(v, np.ones(v.size, dtype=np.int64))
    assert keys.size < v.size
    a = privtree._grow(v, None, 0, 4999, Fraction(1, 2), ps.Rng(seed=4))
    b = privtree._grow(keys, cum, 0, 4999, Fraction(1, 2), ps.Rng(seed=4))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[1].sum() == v.size
    # a column that decreases somewhere, or leaves [first, last], is refused before any draw
    for bad, last in ((v[::-1].copy(), 4999), (v, 100)):
        rng = ps.Rng(seed=4)
        with pytest.raises(ParameterError, match="invalid argument"):
            privtree._grow(bad, None, 0, last, Fraction(1, 2), rng)
        assert rng.random_uint64() == ps.Rng(seed=4).random_uint64()


def test_parameters_are_corollary_1_with_an_integer_bias():
    for eps in (Fraction(1, 10), Fraction(1), Fraction(7, 3), Fraction(1, 3000)):
        lam, delta = privtree_parameters(eps)
        assert lam == 3 / eps                                   # (2 beta - 1)/((beta - 1) eps)
        assert delta >= float(lam) * math.log(2) and delta - 1 < float(lam) * math.log(2)
    with pytest.raises(ParameterError, match="epsilon"):
        privtree_parameters(Fraction(1, 10**15))


def test_law_is_a_distribution():
    for counts in ([0] * 8, [5, 0, 0, 1, 9, 9, 0, 2], [40] * 8):
        law = _law(counts, 0, 7, 3.0, 3)
        assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
        for ends, p in law.items():
            assert _outcome_prob(counts, ends, 3.0, 3) == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("counts,eps", [([0, 3, 0, 0, 6, 0, 0, 1], 1.0),
                                        ([4, 4, 0, 0, 0, 0, 9, 0], 0.7),
                                        ([0] * 8, 2.0)])
@pytest.mark.slow
def test_leaves_follow_the_exact_law(counts, eps):
    lam, delta = privtree_parameters(Fraction(eps))
    law = _law(counts, 0, 7, float(lam), delta)
    keys = sorted(law)
    index = {k: i for i, k in enumerate(keys)}
    values = np.repeat(np.arange(8), counts)
    rng = ps.Rng(seed=f"privtree-law|{counts}".encode())
    seen = np.zeros(len(keys) + 1)
    for _ in range(6000):
        ends = tuple(int(e) for e in _grow(values, 8, eps, rng))
        seen[index.get(ends, len(keys))] += 1
    assert seen[-1] == 0
    assert_gof(seen[:-1], np.array([law[k] for k in keys]))


@pytest.mark.slow
def test_a_shard_root_starts_at_its_depth():
    # depth0 = 1: the law of the subtree of a depth-1 node of a twice larger domain
    counts = [3, 0, 2, 2, 0, 0, 7, 1]
    lam, delta = privtree_parameters(Fraction(1))
    law = _law(counts, 0, 7, float(lam), delta, depth=1)
    keys = sorted(law)
    index = {k: i for i, k in enumerate(keys)}
    rng = ps.Rng(seed=b"privtree-depth0")
    seen = np.zeros(len(keys))
    for _ in range(6000):
        seen[index[tuple(int(e) for e in _grow(np.repeat(np.arange(8), counts), 8, 1, rng, 1))]] += 1
    assert_gof(seen, np.array([law[k] for k in keys]))
    assert privtree.root_depth(2**16, 2**12) == 4 and privtree.root_depth(10, 10) == 0
    assert privtree.root_depth(10, 3) == 2


# ------------------------------------------------------------- exact privacy loss
def _max_loss(a, b, lam, delta, size=8):
    la, lb = _law(a, 0, size - 1, lam, delta), _law(b, 0, size - 1, lam, delta)
    assert set(la) == set(lb)
    return max(abs(math.log(la[k]) - math.log(lb[k])) for k in la)


NEIGHBOURS = [[0] * 8, [1] * 8, [0, 0, 0, 7, 0, 0, 0, 0], [2, 9, 4, 0, 0, 1, 30, 0],
              [6, 6, 6, 6, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 25]]


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_exact_loss_of_neighbours_is_at_most_epsilon(eps):
    lam, delta = privtree_parameters(Fraction(eps))
    worst = 0.0
    for base in NEIGHBOURS:
        for extra in range(8):
            plus = list(base)
            plus[extra] += 1
            worst = max(worst, _max_loss(base, plus, float(lam), delta))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.5 * eps          # the bound is not vacuous: most of it is used


def test_the_loss_oracle_sees_a_bias_below_lambda_ln_2():
    # delta = 0 (no depth bias): adding one item to an empty domain of 64 values
    # raises every split on its path by e^(1/lambda): 6 levels cost 6/lambda = 2 epsilon
    lam = 3.0
    size = 64
    empty, one = [0] * size, [0] * size
    one[0] = 1
    path = tuple(range(0, 1)) + tuple((1 << j) * 2 - 1 for j in range(0, 6))
    ends = (0, 1, 3, 7, 15, 31, 63)
    assert path[0] == 0
    loss = abs(math.log(_outcome_prob(one, ends, lam, 0)) - math.log(_outcome_prob(empty, ends, lam, 0)))
    assert loss > 3 / lam * 1.5
    # with the mechanism's bias the same outcome stays within epsilon
    delta = math.ceil(lam * math.log(2))
    loss = abs(math.log(_outcome_prob(one, ends, lam, delta))
               - math.log(_outcome_prob(empty, ends, lam, delta)))
    assert loss <= 3 / lam


# ----------------------------------------------------------------- weight bound
@pytest.mark.slow
def test_weight_bound_holds_for_every_tested_leaf():
    gen = np.random.default_rng(5)
    values = np.concatenate([gen.integers(0, 2**40, 3000), np.full(2000, 12345),
                             gen.normal(2**39, 2**20, 4000).astype(np.int64)]).astype(np.uint64)
    srt = np.sort(values)
    rng = ps.Rng(seed=b"privtree-weights")
    beta = 1e-9                                  # 300 builds fail with probability <= 3e-7
    tight = 0.0
    for _ in range(300):
        part = privtree_of_sorted(srt, (0, 2**40 - 1), Fraction(1, 5), beta, rng)
        w = np.bincount(np.searchsorted(part.end_offsets, srt), minlength=len(part))
        bounds = part.leaf_weight_bounds()
        tested = bounds > 0
        assert np.all(w[tested] <= bounds[tested])
        tight = max(tight, float((w[tested] / bounds[tested]).max()))
        # width-1 leaves hold any number of items, and are never cut
        starts = np.concatenate(([0], part.end_offsets[:-1] + np.uint64(1)))
        assert np.array_equal(~tested, part.end_offsets == starts)
    assert tight > 0.2                           # the bound is not vacuous


def test_synopsis_bias_is_per_cut_leaf_and_heavy_values_are_exact():
    vals = np.concatenate([np.full(5000, 10**6), np.arange(0, 2**32, 2**20)]).astype(np.uint64)
    syn = ps.IntervalSynopsis.build(vals, domain=(0, 2**32 - 1), epsilon=10**6,
                                    partition_share=Fraction(1, 10**6), rng=ps.Rng(seed=3))
    assert isinstance(syn.partition, TreePartition) and syn.estimator == "uniform"
    # the heavy value is a leaf of width 1: queries starting or ending on it are exact
    lo = np.array([10**6, 0, 10**6 + 1], dtype=np.uint64)
    hi = np.array([2**32 - 1, 10**6, 2**31], dtype=np.uint64)
    srt = np.sort(vals)
    truth = np.searchsorted(srt, hi, "right") - np.searchsorted(srt, lo, "left")
    err = syn.count_many(lo, hi) - truth
    bars = syn.confidence_intervals(lo, hi, 0.9, multiplicity=5000)
    assert np.all(np.abs(err) <= bars.noise + bars.bias)
    assert abs(err[0]) < 1 and abs(err[1]) < 1
    # multiplicity is irrelevant to PrivTree's bound (it counts duplicates)
    assert syn.error_bound(0.9, multiplicity=50) == syn.error_bound(0.9)
    assert np.array_equal(bars.bias, syn.confidence_intervals(lo, hi, 0.9).bias)


# ------------------------------------------------------------------- exactness
def test_in_memory_weighted_streamed_spilled_and_sharded_paths_agree(monkeypatch):
    gen = np.random.default_rng(8)
    v = np.concatenate([gen.integers(0, 10**9, 20000), np.full(3000, 777)]).astype(np.int64)
    dom = (0, 10**9 - 1)
    one = ps.IntervalSynopsis.build(v, domain=dom, epsilon=0.5, rng=ps.Rng(seed=1))
    u, c = np.unique(v, return_counts=True)
    two = ps.IntervalSynopsis.build(u, counts=c, domain=dom, epsilon=0.5, rng=ps.Rng(seed=1))
    assert one.partition == two.partition
    assert np.array_equal(one._released, two._released)
    # the streamed form, in chunks that cut runs of equal values, and spilled to disk
    chunks = [(u[i:i + 777].astype(np.uint64), c[i:i + 777]) for i in range(0, u.size, 777)]
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", 1000)
    part, weights = privtree.privtree_of_chunks(iter(chunks), dom, Fraction(1, 4), 0.025,
                                                ps.Rng(seed=1))
    ref = privtree_of_sorted(np.sort(v).astype(np.uint64), dom, Fraction(1, 4), 0.025,
                             ps.Rng(seed=1))
    assert part == ref
    assert weights.sum() == v.size and not list(tmp_spills())
    assert np.array_equal(weights, np.bincount(np.searchsorted(ref.end_offsets,
                                                               v.astype(np.uint64)),
                                               minlength=len(ref)))
    # the kernel's leaf counts are the true segment weights, spilled or not
    srt = np.sort(v).astype(np.uint64)
    keys, cum = privtree._runs_of_sorted(srt, np.ones(srt.size, dtype=np.int64))
    ends, counts = privtree._grow(keys, cum, 0, 10**9 - 1, Fraction(1, 4), ps.Rng(seed=1))
    assert np.array_equal(ends, ref.end_offsets) and np.array_equal(counts, weights)
    sharded = ps.IntervalSynopsis.build(v, domain=dom, epsilon=0.5, rng=ps.Rng(seed=1), shards=4)
    assert sharded.partition.shards == 4


def tmp_spills():
    """Leftover spill directories of this process's builds (none may remain)."""
    import glob
    import tempfile

    return [d for d in glob.glob(os.path.join(tempfile.gettempdir(), "pydp-privtree-*"))
            if os.stat(d).st_uid == os.getuid() and os.path.getmtime(d) > START]


START = __import__("time").time()


def test_domain_of_2_64_values():
    vals = np.array([0, 1, 2**63, 2**64 - 1] * 50, dtype=np.uint64)
    syn = ps.IntervalSynopsis.build(vals, domain=(0, 2**64 - 1), epsilon=50, rng=ps.Rng(seed=2))
    assert int(syn.partition.end_offsets[-1]) == 2**64 - 1
    assert syn.partition.depths.max() <= 64
    assert abs(syn.count(0, 2**64 - 1) - 200) < 20


def test_save_and_load_round_trip_and_crafted_records(tmp_path):
    gen = np.random.default_rng(4)
    v = gen.integers(0, 10**6, 5000)
    syn = ps.IntervalSynopsis.build(v, domain=(0, 10**6 - 1), epsilon=1, rng=ps.Rng(seed=9),
                                    shards=3)
    path = tmp_path / "s.pds"
    syn.save(path)
    back = ps.load(path)
    assert back.partition == syn.partition and back.partition.shards == 3
    q = gen.integers(0, 10**6, (2, 100))
    lo, hi = q.min(0), q.max(0)
    assert np.array_equal(back.count_many(lo, hi), syn.count_many(lo, hi))
    assert back.error_bound(0.9) == syn.error_bound(0.9)
    from pydp_synopsis import persist

    kind, meta, arrays = syn._to_record()[:3]
    bad_ends = dict(arrays, end_offsets=np.array([5, 10**6 - 1], dtype=np.uint64))
    for m, a, word in [
            (meta, bad_ends, "leaves"),
            (dict(meta, estimator="seal"), arrays, "estimator"),
            (dict(meta, shards=2), arrays, "leaves"),
            (dict(meta, partition="dnrr"), arrays, "PrivTree"),
            (dict(meta, shards=0), arrays, "shards")]:
        persist.write_record(tmp_path / "bad.pds", kind, m, a)
        with pytest.raises(FormatError, match=word):
            ps.load(tmp_path / "bad.pds")


def test_tree_partition_validates_its_leaves():
    TreePartition([3, 7], domain=(0, 7), epsilon=1, beta=0.05)
    p = TreePartition([0, 1, 3, 7], domain=(0, 7), epsilon=1, beta=0.05)
    assert p.depths.tolist() == [3, 3, 2, 1]
    for ends in ([2, 7], [3, 6], [4, 7], [0, 7]):
        with pytest.raises(DomainError):
            TreePartition(ends, domain=(0, 7), epsilon=1, beta=0.05)
    with pytest.raises(ParameterError, match="shards"):
        TreePartition([3, 7], domain=(0, 7), epsilon=1, beta=0.05, shards=0)
    with pytest.raises(TypeError):
        TreePartition([[3, 7]], domain=(0, 7), epsilon=1, beta=0.05)


def test_kernel_refuses_bad_arguments_before_drawing():
    rng = ps.Rng(seed=1)
    keys = np.array([1, 5, 9], dtype=np.uint64)
    cum = np.array([1, 2, 3], dtype=np.int64)
    out = ffi.new("pds_privtree *")
    cases = [
        (np.array([5, 1, 9], dtype=np.uint64), cum, 0, 9, 0, 3, 1, 2),     # keys unsorted
        (keys, np.array([2, 1, 3], dtype=np.int64), 0, 9, 0, 3, 1, 2),    # totals decrease
        (keys, cum, 2, 9, 0, 3, 1, 2),                                    # key below first
        (keys, cum, 0, 8, 0, 3, 1, 2),                                    # key above last
        (keys, cum, 0, 9, 65, 3, 1, 2),                                   # depth0 > 64
        (keys, cum, 0, 9, 0, 0, 1, 2),                                    # t = 0
        (keys, cum, 0, 9, 0, 3, 1, -1),                                   # delta < 0
    ]
    release = [0] * len(cases) + [2]                                      # release not 0/1
    cases.append((keys, cum, 0, 9, 0, 3, 1, 2))
    try:
        with rng.native() as state:
            for (k, c, first, last, d0, t, s, delta), rel in zip(cases, release):
                st = lib.pds_privtree_build(state, ffi.from_buffer("uint64_t[]", k),
                                            ffi.from_buffer("int64_t[]", c), 3, first, last,
                                            d0, t, s, delta, 0, 100, rel, out)
                assert st == lib.PDS_EINVAL and out.m == 0
        # a refused call drew nothing
        assert rng.random_uint64() == ps.Rng(seed=1).random_uint64()
        with rng.native() as state:
            # too many leaves: ENOMEM, nothing kept
            st = lib.pds_privtree_build(state, ffi.from_buffer("uint64_t[]", keys),
                                        ffi.from_buffer("int64_t[]", cum), 3, 0, 2**40, 0,
                                        1, 1000, 0, 0, 1, 0, out)
        assert st == lib.PDS_ENOMEM and out.m == 0 and out.ends == ffi.NULL
    finally:
        lib.pds_privtree_free(out)
    depths = np.empty(2, dtype=np.uint8)
    assert lib.pds_privtree_depths(ffi.from_buffer("uint64_t[]", np.array([3, 9], np.uint64)),
                                   2, 0, 9, 0, ffi.from_buffer("uint8_t[]", depths)) \
        == lib.PDS_ESTATE


@pytest.mark.parametrize("kwargs,exc,word", [
    (dict(partition="privtree", threshold_factor=1), ParameterError, "threshold_factor"),
    (dict(partition="privtree", estimator="seal_uniform"), ParameterError, "estimator"),
    (dict(partition="kd"), ParameterError, "partition"),
    (dict(partition=None, estimator=1), TypeError, "estimator"),
])
def test_bad_options_are_refused_before_the_budget_is_charged(kwargs, exc, word):
    budget = ps.Budget(1)
    with pytest.raises(exc, match=word):
        ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 63), epsilon=0.5, budget=budget,
                                  **kwargs)
    assert budget.spent == 0


def test_dnrr_options_select_dnrr():
    for kw in (dict(threshold_factor=3), dict(estimator="seal"), dict(partition="dnrr")):
        syn = ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 63), epsilon=1,
                                        rng=ps.Rng(seed=1), **kw)
        assert not isinstance(syn.partition, TreePartition)
    syn = ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 63), epsilon=1, rng=ps.Rng(seed=1))
    assert isinstance(syn.partition, TreePartition)


@pytest.mark.slow
def test_spilled_runs_read_through_a_window_agree(monkeypatch):
    # 3 * 2^20 distinct keys: the kernel reads the files through its window (2^20 entries)
    gen = np.random.default_rng(21)
    keys = np.unique(gen.integers(0, 2**40, 3 * 2**20 + 5000).astype(np.uint64))
    counts = gen.integers(1, 4, keys.size)
    chunks = [(keys[i:i + 2**18], counts[i:i + 2**18]) for i in range(0, keys.size, 2**18)]
    dom = (0, 2**40 - 1)
    mem, w_mem = privtree.privtree_of_chunks(iter(chunks), dom, Fraction(2), 0.025, ps.Rng(seed=5))
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", 2**16)
    disk, w_disk = privtree.privtree_of_chunks(iter(chunks), dom, Fraction(2), 0.025,
                                               ps.Rng(seed=5))
    assert disk == mem and np.array_equal(w_disk, w_mem) and w_disk.sum() == counts.sum()
    assert len(mem) > 1000 and not list(tmp_spills())


def test_a_failing_stream_leaves_no_spill_behind(monkeypatch):
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", 10)

    def chunks():
        yield np.arange(100, dtype=np.uint64), np.ones(100, dtype=np.int64)
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        privtree.privtree_of_chunks(chunks(), (0, 999), Fraction(1), 0.05, ps.Rng(seed=1))
    assert not list(tmp_spills())


def test_streamed_spill_is_private_and_removed(tmp_path, monkeypatch):
    # past _SPILL_ENTRIES distinct values the streamed build keeps them in files: secret,
    # so 0600 files in a 0700 directory (they were created with the umask's mode)
    monkeypatch.setattr(privtree, "_SPILL_ENTRIES", 64)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen, real = [], privtree.privtree_kernel_files

    def grow(keys, cum, *args, **kw):
        seen.append(tuple(stat.S_IMODE(os.stat(p).st_mode)
                          for p in (os.path.dirname(keys), keys, cum)))
        return real(keys, cum, *args, **kw)

    monkeypatch.setattr(privtree, "privtree_kernel_files", grow)
    chunks = [(np.arange(i * 100, i * 100 + 100, dtype=np.uint64), np.ones(100, dtype=np.int64))
              for i in range(5)]
    part, weights = privtree.privtree_of_chunks(iter(chunks), (0, 999), Fraction(1), 0.05,
                                                ps.Rng(seed=1))
    assert seen == [(0o700, 0o600, 0o600)]
    assert int(weights.sum()) == 500 and os.listdir(tmp_path) == []
