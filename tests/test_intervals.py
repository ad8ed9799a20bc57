"""Tests of the noisy segment tree (csrc/tree.c) and IntervalSynopsis (DNRR section 3.2)."""
import math
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist, trees
from pydp_synopsis._core import check, ffi, lib
from pydp_synopsis.errors import DomainError, FormatError, ParameterError
from pydp_synopsis.intervals import IntervalSynopsis
from pydp_synopsis.trees import tree_shape
from pydp_synopsis.tails import laplace_sum_tail
from stattests import assert_binomial_at_most, assert_dp_ratio, assert_mean_var

BIG = 10**6  # epsilon at which noise is zero with overwhelming probability


# ------------------------------------------------------------------ tree.c
def _nodes(counts, t=0, s=1, rng=None, f=2):
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    m = counts.size
    _, n = tree_shape(m, f)
    out = np.empty(n, dtype=np.int64)
    if rng is None:
        check(lib.pds_tree_build(ffi.NULL, ffi.from_buffer("int64_t[]", counts), m, f, t, s,
                                 ffi.from_buffer("int64_t[]", out), n))
    else:
        with rng.native() as p:
            check(lib.pds_tree_build(p, ffi.from_buffer("int64_t[]", counts), m, f, t, s,
                                     ffi.from_buffer("int64_t[]", out), n))
    return out


def _layout(m, f=2):
    levels, _ = tree_shape(m, f)
    return [(a, min(a + f**lv, m)) for lv in range(levels) for a in range(0, m, f**lv)]


def _cover_sums(nodes, m, i, j, f=2):
    i = np.ascontiguousarray(i, dtype=np.uint64)
    j = np.ascontiguousarray(j, dtype=np.uint64)
    out = np.empty(i.size, dtype=np.int64)
    check(lib.pds_tree_cover_sums(ffi.from_buffer("int64_t[]", nodes), m, f, ffi.from_buffer("uint64_t[]", i),
                                  ffi.from_buffer("uint64_t[]", j), i.size, ffi.from_buffer("int64_t[]", out)))
    return out


def _levels_expected(m, f):
    levels = 1
    while f**levels < m:
        levels += 1
    return levels


@pytest.mark.parametrize("f", [2, 3, 4, 16])
@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 100])
def test_tree_levels_nodes_and_cover_sums_exact(m, f):
    levels, n = tree_shape(m, f)
    assert levels == _levels_expected(m, f)
    if f == 2:
        assert levels == (1 if m <= 2 else math.ceil(math.log2(m)))
    gen = np.random.default_rng(m)
    counts = gen.integers(0, 9, m)
    nodes = _nodes(counts, f=f)
    rows = _layout(m, f)
    assert len(rows) == n == nodes.size
    assert all(nodes[r] == counts[a:b].sum() for r, (a, b) in enumerate(rows))
    i, j = np.triu_indices(m)
    prefix = np.concatenate(([0], np.cumsum(counts)))
    assert np.array_equal(_cover_sums(nodes, m, i, j, f), prefix[j + 1] - prefix[i])


def _cover_nodes(m, f, a, b):
    runs = ffi.new("pds_cover_run[128]")
    n = ffi.new("uint32_t *")
    assert lib.pds_tree_cover(m, f, a, b, runs, 128, n) == lib.PDS_OK
    return [(runs[r].level, u) for r in range(n[0]) for u in range(runs[r].first, runs[r].end)]


@pytest.mark.parametrize("m, f", [(1, 2), (2, 2), (5, 4), (9, 2), (17, 4), (33, 2), (40, 3), (70, 5),
                                  (100, 16)])
@pytest.mark.slow
def test_tree_cover_is_the_maximal_nodes_inside(m, f):
    """pds_tree_cover: the nodes inside [a, b) whose parent is not (top level: no parent),
    in left-to-right order; the ragged last node of a level is inside iff b = m."""
    levels, _ = tree_shape(m, f)
    span = [f**lv for lv in range(levels)]

    def inside(lv, u, a, b):
        return a <= u * span[lv] and min((u + 1) * span[lv], m) <= b

    for a in range(m):
        for b in range(a + 1, m + 1):
            want = sorted((lv, u) for lv in range(levels) for u in range(-(-m // span[lv]))
                          if inside(lv, u, a, b)
                          and (lv + 1 == levels or not inside(lv + 1, u // f, a, b)))
            got = _cover_nodes(m, f, a, b)
            assert sorted(got) == want
            firsts = [u * span[lv] for lv, u in got]
            assert firsts == sorted(firsts)
    runs = ffi.new("pds_cover_run[128]")
    n = ffi.new("uint32_t *", 7)
    for bad in ((0, 0), (1, 0), (0, m + 1)):
        assert lib.pds_tree_cover(m, f, *bad, runs, 128, n) == lib.PDS_EINVAL
        assert n[0] == 0
    assert lib.pds_tree_cover(m, 1, 0, 1, runs, 128, n) == lib.PDS_EINVAL
    # runs[] must have room for the 2 levels - 1 runs of the worst cover
    assert lib.pds_tree_cover(m, f, 0, 1, runs, 2 * levels - 2, n) == lib.PDS_EINVAL
    assert lib.pds_tree_cover(m, f, 0, 1, runs, 2 * levels - 1, n) == lib.PDS_OK


@pytest.mark.parametrize("m, f", [(77, 2), (77, 3), (70, 5), (40, 16)])
def test_tree_cover_is_a_set_of_at_most_the_counted_nodes(m, f):
    levels, n = tree_shape(m, f)
    i, j = np.triu_indices(m)
    used = np.zeros(i.size, dtype=np.int64)
    for v in range(n):  # a unit at node v: a cover sum counts how often v is used
        nodes = np.zeros(n, dtype=np.int64)
        nodes[v] = 1
        hit = _cover_sums(nodes, m, i, j, f)
        assert hit.max() <= 1
        used += hit
    assert used.max() <= trees.cover_terms(levels, f) and used.min() >= 1
    assert used[i == 0].max() <= trees.prefix_terms(levels, f)


@pytest.mark.parametrize("f", [2, 3, 4])
@pytest.mark.parametrize("m", [1, 2, 3, 5, 6, 11, 16, 23])
def test_consistency_is_least_squares(m, f):
    rows = _layout(m, f)
    A = np.zeros((len(rows), m))
    for r, (a, b) in enumerate(rows):
        A[r, a:b] = 1
    nodes = _nodes(np.arange(m) % 4, t=3, s=1, rng=ps.Rng(seed=m), f=f)
    leaf = np.empty(m)
    check(lib.pds_tree_consistent_leaves(ffi.from_buffer("int64_t[]", nodes), m, f,
                                         ffi.from_buffer("double[]", leaf)))
    expect = np.linalg.lstsq(A, nodes.astype(float), rcond=None)[0]
    np.testing.assert_allclose(leaf, expect, atol=1e-9)


def test_tree_noise_is_discrete_laplace_of_levels_over_epsilon():
    m = 1000
    levels, _ = tree_shape(m)
    eps = Fraction(1, 2)
    scale = Fraction(levels) / eps
    t, s = scale.numerator, scale.denominator
    noise = np.concatenate([_nodes(np.zeros(m), t, s, ps.Rng(seed=r)) for r in range(20)])
    assert_mean_var(noise, 0.0, ps.discrete_laplace_variance(scale))


def test_tree_kernel_rejects_bad_arguments():
    nodes = _nodes([1, 2, 3])
    with pytest.raises(ParameterError):
        _cover_sums(nodes, 3, [2], [1])
    with pytest.raises(ParameterError):
        _cover_sums(nodes, 3, [0], [3])
    with pytest.raises(ParameterError):
        _nodes([1, -1, 3])
    with pytest.raises(ParameterError):
        _nodes([1, 2, 3], f=1)


# --------------------------------------------------------- the synopsis
def _true(values_off, lo, hi):
    v = np.sort(np.asarray(values_off, dtype=np.uint64))
    return np.searchsorted(v, hi, "right") - np.searchsorted(v, lo, "left")


def _expected_noiseless(syn, values, lo, hi, estimator):
    """Answer of a noise-free synopsis, from the partition and the true weights."""
    ends = [int(e) for e in syn.partition.end_offsets]
    d0 = syn.domain[0]
    vals = sorted(int(v) - d0 for v in values)
    out = []
    for a, b in zip(lo, hi):
        a, b = int(a) - d0, int(b) - d0
        total = Fraction(0)
        start = 0
        for e in ends:
            first, last = start, e
            start = e + 1
            if last < a or first > b:
                continue
            w = sum(first <= x <= last for x in vals)
            x, y = max(a, first), min(b, last)
            if estimator == "cover" or (x == first and y == last):
                total += w
            elif estimator == "uniform":
                total += Fraction(y - x + 1, last - first + 1) * w
            elif estimator == "seal":
                total += w if y == last else 0
            else:  # seal_uniform: seal point w - iota, interior iota spread uniformly
                iota = min(w, syn.partition.threshold)
                inside = max(0, min(y, last - 1) - x + 1)
                total += (w - iota if y == last else 0) + Fraction(inside, last - first) * iota
        out.append(float(total))
    return np.array(out)


@pytest.mark.parametrize("estimator", ["cover", "uniform", "seal", "seal_uniform"])
@pytest.mark.parametrize("tree, consistency", [("binary", True), ("binary", False),
                                               ("hierarchical", True), ("hierarchical", False),
                                               ("kary", False)])
@pytest.mark.parametrize("domain", [(0, 999), (0, 2**64 - 1), (-(2**63), 2**63 - 1), (5, 5 + 2**40)])
@pytest.mark.slow
def test_exact_when_noise_is_negligible(estimator, tree, consistency, domain):
    gen = np.random.default_rng(3)
    lo_d, hi_d = domain
    span = hi_d - lo_d
    vals = [lo_d + int(x) for x in gen.integers(0, min(span, 2**62), 300)]
    vals += [lo_d, lo_d, hi_d, hi_d - 1, lo_d + span // 2] * 3
    syn = IntervalSynopsis.build(np.array(vals, dtype=object), domain=domain, epsilon=BIG,
                                 rng=ps.Rng(seed=4), estimator=estimator, consistency=consistency,
                                 structure=tree, fanout=3, threshold_factor=1)
    qs = [(lo_d, hi_d), (lo_d, lo_d), (hi_d, hi_d), (lo_d + 1, hi_d - 1)]
    qs += [tuple(sorted((lo_d + int(a), lo_d + int(b)))) for a, b in gen.integers(0, min(span, 2**62), (40, 2))]
    qs += [tuple(sorted(vals[int(x)] for x in gen.integers(0, len(vals), 2))) for _ in range(40)]
    lo = [q[0] for q in qs]
    hi = [q[1] for q in qs]
    got = syn.count_many(np.array(lo, dtype=object), np.array(hi, dtype=object))
    want = _expected_noiseless(syn, vals, lo, hi, estimator)
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=1e-12)
    assert [syn.count(a, b) for a, b in qs] == list(got)
    assert syn.count(lo_d, hi_d) == pytest.approx(len(vals))
    if estimator == "cover":  # DNRR's cover never undercounts
        truth = [sum(a <= v <= b for v in vals) for a, b in qs]
        assert np.all(got >= np.array(truth) - 1e-6)


def test_duplicates_n0_n1():
    for vals in ([], [7], [7] * 500, [0] * 100 + [2**64 - 1] * 100):
        syn = IntervalSynopsis.build(np.array(vals, dtype=np.uint64), domain=(0, 2**64 - 1), epsilon=BIG, rng=ps.Rng(seed=5))
        assert len(syn) >= 1
        assert syn.count(0, 2**64 - 1) == pytest.approx(len(vals))
        assert syn.count(0, 6) == pytest.approx(sum(v <= 6 for v in vals), abs=len(vals) + 1e-6)
        assert syn.error_bound() > 0
    syn = IntervalSynopsis.build([3] * 50, domain=(0, 9), epsilon=BIG, rng=ps.Rng(seed=6), estimator="cover")
    assert syn.count(3, 3) == pytest.approx(50)


def test_error_bound_covers_max_error_theorem_3_2():
    gen = np.random.default_rng(8)
    vals = gen.integers(0, 2**40, 2000).astype(np.uint64)
    lo = np.sort(gen.integers(0, 2**40, (300, 2)).astype(np.uint64), axis=1)
    truth = _true(vals, lo[:, 0], lo[:, 1])
    conf, runs, fails = 0.9, 12, 0
    for tree, cons, est in [("binary", True, "uniform"), ("binary", False, "cover"),
                            ("binary", False, "uniform")]:
        for r in range(runs // 3):
            syn = IntervalSynopsis.build(vals, domain=(0, 2**40), epsilon=0.5, beta=0.05,
                                         rng=ps.Rng(seed=100 + r), structure=tree, consistency=cons,
                                         estimator=est)
            err = np.abs(syn.count_many(lo[:, 0], lo[:, 1]) - truth).max()
            fails += err > syn.error_bound(conf)
    assert_binomial_at_most(fails, runs, 1 - conf)


def test_sum_tail_is_a_valid_chernoff_bound():
    # exact tail of one discrete Laplace: P(Z >= t) = p^t / (1 + p) for t >= 1
    b = 3.0
    p = math.exp(-1 / b)
    for delta in (1e-2, 1e-6):
        t = laplace_sum_tail(1, b, -math.log(delta))
        assert p ** math.ceil(t) / (1 + p) <= delta
    # bound grows with the number of terms and shrinks with delta
    assert (laplace_sum_tail(4, b, -math.log(1e-3)) < laplace_sum_tail(8, b, -math.log(1e-3))
            < laplace_sum_tail(8, b, -math.log(1e-6)))


@pytest.mark.slow
def test_privacy_neighbouring_databases():
    eps = 0.5
    base = [10, 20, 20, 30, 40, 41, 42, 50, 60, 62]
    neighbour = base + [25]
    runs = 1500
    hits = []
    for vals, off in ((base, 0), (neighbour, 10**6)):
        answers = np.array([
            IntervalSynopsis.build(vals, domain=(0, 63), epsilon=eps, rng=ps.Rng(seed=off + r),
                                   estimator="cover", consistency=False).count(16, 31)
            for r in range(runs)])
        hits.append(int(np.sum(answers >= 4)))
    assert_dp_ratio(hits[1], runs, hits[0], runs, eps)
    assert_dp_ratio(runs - hits[1], runs, runs - hits[0], runs, eps)


def test_save_load_round_trip_and_tamper(tmp_path):
    gen = np.random.default_rng(9)
    vals = gen.integers(0, 2**64 - 1, 500, dtype=np.uint64)
    lo = np.sort(gen.integers(0, 2**64 - 1, (50, 2), dtype=np.uint64), axis=1)
    for cons in (True, False):
        syn = IntervalSynopsis.build(vals, domain=(0, 2**64 - 1), epsilon=1.0, rng=ps.Rng(seed=10),
                                     consistency=cons)
        path = tmp_path / f"s{cons}.pds"
        syn.save(path)
        back = persist.load(path)
        assert isinstance(back, IntervalSynopsis)
        assert np.array_equal(back.count_many(lo[:, 0], lo[:, 1]), syn.count_many(lo[:, 0], lo[:, 1]))
        assert back.error_bound() == syn.error_bound()
        assert (back.epsilon, back.domain, len(back)) == (syn.epsilon, syn.domain, len(syn))
        kind, meta, arrays, _ = persist.read_record(path)
        assert kind == "interval-synopsis" and set(arrays) == {"end_offsets", "released"}
    raw = path.read_bytes()
    bad = tmp_path / "bad.pds"
    bad.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FormatError):
        persist.load(bad)
    flipped = bytearray(raw)
    flipped[-20] ^= 1
    bad.write_bytes(bytes(flipped))
    with pytest.raises(FormatError):
        persist.load(bad)


@pytest.mark.parametrize("kwargs, exc, word", [
    (dict(structure="ternary"), ParameterError, "structure"),
    (dict(structure=2), TypeError, "structure"),
    (dict(estimator="mid"), ParameterError, "estimator"),
    (dict(estimator=3), TypeError, "estimator"),
    (dict(partition="quantiles"), ParameterError, "partition"),
    (dict(partition=2), TypeError, "partition"),
    (dict(partition="privtree", threshold_factor=3), ParameterError, "threshold_factor"),
    (dict(partition="privtree", estimator="seal"), ParameterError, "estimator"),
    (dict(partition="privtree", estimator="seal_uniform"), ParameterError, "estimator"),
    (dict(epsilon=1e-15), ParameterError, "epsilon"),
    (dict(consistency="yes"), TypeError, "consistency"),
    (dict(k=4), ParameterError, "k"),
    (dict(k=1.5), TypeError, "k"),
    (dict(partition_share=0), ParameterError, "partition_share"),
    (dict(partition_share=1.0), ParameterError, "partition_share"),
    (dict(partition_share=float("nan")), ParameterError, "partition_share"),
    (dict(partition_share="a"), TypeError, "partition_share"),
    (dict(epsilon=0), ParameterError, "epsilon"),
    (dict(epsilon=-1.0), ParameterError, "epsilon"),
    (dict(epsilon=float("inf")), ParameterError, "epsilon"),
    (dict(epsilon="1"), TypeError, "epsilon"),
    (dict(beta=1.0), ParameterError, "beta"),
    (dict(beta=0), ParameterError, "beta"),
    (dict(rng=1), TypeError, "rng"),
    (dict(domain=(9, 0)), DomainError, "domain"),
    (dict(domain=(0, 2**64)), DomainError, "domain"),
    (dict(values=[1, 100]), DomainError, "values"),
    (dict(values=[1.5]), TypeError, "values"),
    (dict(values=[-1]), DomainError, "values"),
])
def test_bad_build_arguments(kwargs, exc, word):
    args = dict(values=[1, 2, 3], domain=(0, 63), epsilon=1.0)
    args.update(kwargs)
    vals = args.pop("values")
    with pytest.raises(exc, match=word):
        IntervalSynopsis.build(vals, **args)


def test_bad_query_arguments():
    syn = IntervalSynopsis.build([1, 2, 3], domain=(0, 63), epsilon=1.0, rng=ps.Rng(seed=11))
    with pytest.raises(DomainError, match="lo"):
        syn.count(5, 4)
    # partly outside the domain: clipped to it, and said so (tests/test_query_clip.py)
    with pytest.warns(ps.errors.QueryClippedWarning):
        assert syn.count(0, 64) == syn.count(0, 63)
    with pytest.warns(ps.errors.QueryClippedWarning):
        assert syn.count(-1, 3) == syn.count(0, 3)
    with pytest.raises(TypeError, match="lo"):
        syn.count(1.5, 3)
    with pytest.raises(DomainError, match="lo"):
        syn.count_many([0, 9], [3, 8])
    with pytest.raises(DomainError, match="shape"):
        syn.count_many([0, 1], [3])
    for conf in (0, 1, 0.99):  # 0.99 > 1 - beta/2 = 0.975
        with pytest.raises(ParameterError, match="confidence"):
            syn.error_bound(conf)
    with pytest.raises(TypeError):
        IntervalSynopsis()


# ------------------------------------------------- heavy duplicates, bounds
def _heavy_data(gen, n_single=3000, heavy=((10**6, 1500), (5 * 10**8, 800), (3 * 10**9, 3000))):
    vals = [gen.integers(0, 2**32, n_single).astype(np.uint64)]
    vals += [np.full(c, x, dtype=np.uint64) for x, c in heavy]
    return np.concatenate(vals)


def test_seal_estimators_bound_boundary_error_with_heavy_duplicates():
    # partition at epsilon_p = 1, tree noise negligible (epsilon_t ~ 1e6):
    # the answer's error is the boundary bias alone
    gen = np.random.default_rng(12)
    vals = _heavy_data(gen)
    heavy = np.array([10**6, 5 * 10**8, 3 * 10**9], dtype=np.uint64)
    # queries ending just below / starting on / starting just above a heavy point
    lo = np.concatenate([gen.integers(0, 10**5, 3).astype(np.uint64), heavy, heavy + np.uint64(1)])
    hi = np.concatenate([heavy - np.uint64(1), np.full(3, 2**32 - 1, np.uint64),
                         np.full(3, 2**32 - 1, np.uint64)])
    truth = _true(vals, lo, hi)
    share = Fraction(1, 10**6)
    errs = {}
    for est in ("cover", "uniform", "seal", "seal_uniform"):
        syn = IntervalSynopsis.build(vals, domain=(0, 2**32 - 1), epsilon=10**6, partition_share=share,
                                     rng=ps.Rng(seed=13), estimator=est, structure="binary",
                                     partition="dnrr")
        # every heavy point ends its segment (it crosses any threshold)
        assert np.isin(heavy, syn.partition.end_offsets).all()
        errs[est] = np.abs(syn.count_many(lo, hi) - truth).max()
        w = syn.interior_weight_bound()
    assert errs["seal"] <= w
    assert errs["seal_uniform"] <= w + syn.partition.threshold
    # the documented failure of the other two: a heavy seal point is miscounted
    assert errs["cover"] > 2 * w + 1 and errs["uniform"] > 2 * (w + 1)


@pytest.mark.parametrize("opts", [
    dict(),  # the defaults
    dict(structure="binary", consistency=False, estimator="seal"),
    dict(structure="hierarchical", fanout=4, consistency=False, estimator="seal_uniform"),
    dict(structure="binary", consistency=True, estimator="seal", threshold_factor=3),
])
def test_error_bound_covers_max_error_with_duplicates(opts):
    gen = np.random.default_rng(14)
    vals = _heavy_data(gen, n_single=1500)
    lo = np.sort(gen.integers(0, 2**32, (300, 2)).astype(np.uint64), axis=1)
    pick = np.sort(vals[gen.integers(0, vals.size, (300, 2))], axis=1)  # data-centred endpoints
    lo = np.concatenate([lo, pick])
    truth = _true(vals, lo[:, 0], lo[:, 1])
    conf, runs, fails = 0.9, 6, 0
    for r in range(runs):
        syn = IntervalSynopsis.build(vals, domain=(0, 2**32 - 1), epsilon=0.5, rng=ps.Rng(seed=200 + r),
                                     **opts)
        err = np.abs(syn.count_many(lo[:, 0], lo[:, 1]) - truth).max()
        fails += err > syn.error_bound(conf)
    assert_binomial_at_most(fails, runs, 1 - conf)


def test_interior_weight_bound_holds_and_grows_with_factor():
    gen = np.random.default_rng(15)
    vals = np.sort(gen.integers(0, 2**20, 20000).astype(np.uint64))
    bounds = []
    for factor in (1, 2, 3):
        syn = IntervalSynopsis.build(vals, domain=(0, 2**20 - 1), epsilon=1.0, rng=ps.Rng(seed=16),
                                     threshold_factor=factor)
        ends = syn.partition.end_offsets
        # weight of each segment without its seal position
        before_end = np.searchsorted(vals, ends, "left") - np.searchsorted(vals, np.concatenate(
            ([0], ends[:-1] + np.uint64(1))), "left")
        assert before_end.max() <= syn.interior_weight_bound()
        assert syn.partition.threshold_factor == factor
        bounds.append(syn.interior_weight_bound())
    assert bounds[0] < bounds[1] < bounds[2]


@pytest.mark.parametrize("f", [2, 16])
def test_fanout_tree_noise_is_discrete_laplace_of_levels_over_epsilon(f):
    m = 700
    levels, _ = tree_shape(m, f)
    scale = Fraction(levels) * 2
    noise = np.concatenate([_nodes(np.zeros(m), scale.numerator, scale.denominator, ps.Rng(seed=r), f=f)
                            for r in range(20)])
    assert_mean_var(noise, 0.0, ps.discrete_laplace_variance(scale))


@pytest.mark.slow
def test_privacy_neighbouring_databases_defaults():
    eps = 0.5
    base = [10, 20, 20, 30, 40, 41, 42, 50, 60, 62]
    neighbour = base + [25]
    runs = 1500
    hits = []
    for vals, off in ((base, 0), (neighbour, 10**6)):
        answers = np.array([
            IntervalSynopsis.build(vals, domain=(0, 63), epsilon=eps, rng=ps.Rng(seed=off + r)).count(16, 31)
            for r in range(runs)])
        hits.append(int(np.sum(answers >= 3)))
    assert_dp_ratio(hits[1], runs, hits[0], runs, eps)
    assert_dp_ratio(runs - hits[1], runs, runs - hits[0], runs, eps)


@pytest.mark.parametrize("kwargs, exc, word", [
    (dict(fanout=1), ParameterError, "fanout"),
    (dict(fanout=70000), ParameterError, "fanout"),
    (dict(fanout=2.0), TypeError, "fanout"),
    (dict(threshold_factor=0), ParameterError, "threshold_factor"),
    (dict(threshold_factor=0.5), ParameterError, "threshold_factor"),
    (dict(threshold_factor=float("nan")), ParameterError, "threshold_factor"),
    (dict(threshold_factor="3"), TypeError, "threshold_factor"),
    (dict(estimator="seal-uniform"), ParameterError, "estimator"),
])
def test_bad_new_build_arguments(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        IntervalSynopsis.build([1, 2, 3], domain=(0, 63), epsilon=1.0, **kwargs)


def test_bad_multiplicity():
    syn = IntervalSynopsis.build([1, 2, 3], domain=(0, 63), epsilon=1.0, rng=ps.Rng(seed=17),
                                 estimator="cover", partition="dnrr")
    with pytest.raises(ParameterError, match="multiplicity"):
        syn.error_bound(0.9, multiplicity=0)
    with pytest.raises(TypeError, match="multiplicity"):
        syn.error_bound(0.9, multiplicity=1.5)
    assert syn.error_bound(0.9, multiplicity=5) == syn.error_bound(0.9) + 4


@pytest.mark.parametrize("m, f", [(1, 2), (2, 2), (7, 2), (13, 2), (10, 3), (23, 4), (40, 16)])
def test_consistent_max_coefficient_matches_least_squares(m, f):
    rows = _layout(m, f)
    A = np.zeros((len(rows), m))
    for r, (a, b) in enumerate(rows):
        A[r, a:b] = 1
    leaf_of_node = np.linalg.pinv(A)          # leaf estimates = pinv(A) @ nodes
    G = np.vstack([np.zeros(len(rows)), np.cumsum(leaf_of_node, axis=0)])
    i, j = np.triu_indices(m + 1, 1)
    want = np.abs(G[j] - G[i]).max()
    out = ffi.new("double *")
    check(lib.pds_tree_consistent_max_coef(m, f, 10**8, out))
    assert out[0] == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert lib.pds_tree_consistent_max_coef(m, f, 1, out) == lib.PDS_ERANGE or m == 1


# ------------------------------------------------------------- structure="kary"
@pytest.mark.slow
def test_kary_prefix_noise_matches_lemma_4_7():
    # partition noise-free (epsilon_p = 10^6, T = 1): 12 positions holding 2
    # items each seal, and so does the domain end: m = 13 = (3^3 - 1) / 2.
    # The tree gets epsilon_t = 1: node scale h / epsilon_t with h = 3.
    k, h, m = 3, 3, 13
    vals = np.repeat(np.arange(12), 2)
    truth = np.concatenate((np.cumsum(np.full(12, 2)), [24]))
    eps = Fraction(10**6 + 1)
    share = Fraction(10**6, 10**6 + 1)
    samples = []
    for r in range(m * 120):
        syn = IntervalSynopsis.build(vals, domain=(0, 12), epsilon=eps, partition_share=share, structure="kary",
                                     k=k, rng=ps.Rng(seed=300 + r))
        assert len(syn) == m and syn.epsilon_tree == 1
        p = r % m  # one position per build: independent draws, every position equally often
        # segments 0 .. p whole: the released noisy prefix sum p itself
        samples.append(syn.count(0, int(syn.partition.ends[p])) - truth[p])
    a_t = h * (k * k - 1) / (4 * k * (1 - k ** -h))          # Lemma 4.7, mean over the T prefixes
    assert_mean_var(np.array(samples), 0.0, a_t * ps.discrete_laplace_variance(Fraction(h)))


@pytest.mark.slow
def test_kary_privacy_neighbouring_databases():
    eps = 0.5
    base = [10, 20, 20, 30, 40, 41, 42, 50, 60, 62]
    neighbour = base + [25]
    runs = 1500
    hits = []
    for vals, off in ((base, 0), (neighbour, 10**6)):
        answers = np.array([
            IntervalSynopsis.build(vals, domain=(0, 63), epsilon=eps, rng=ps.Rng(seed=off + r), structure="kary",
                                   k=3, estimator="seal").count(16, 31)
            for r in range(runs)])
        hits.append(int(np.sum(answers >= 3)))
    assert_dp_ratio(hits[1], runs, hits[0], runs, eps)
    assert_dp_ratio(runs - hits[1], runs, runs - hits[0], runs, eps)


def test_kary_error_bound_covers_max_error():
    gen = np.random.default_rng(18)
    vals = _heavy_data(gen, n_single=1500)
    lo = np.sort(gen.integers(0, 2**32, (300, 2)).astype(np.uint64), axis=1)
    truth = _true(vals, lo[:, 0], lo[:, 1])
    conf, runs, fails = 0.9, 6, 0
    for r in range(runs):
        syn = IntervalSynopsis.build(vals, domain=(0, 2**32 - 1), epsilon=0.5, rng=ps.Rng(seed=400 + r),
                                     structure="kary")
        fails += np.abs(syn.count_many(lo[:, 0], lo[:, 1]) - truth).max() > syn.error_bound(conf)
    assert_binomial_at_most(fails, runs, 1 - conf)


def test_consistent_bound_falls_back_when_coefficients_are_too_costly(monkeypatch):
    vals = np.random.default_rng(19).integers(0, 2**30, 3000).astype(np.uint64)

    def build():
        return IntervalSynopsis.build(vals, domain=(0, 2**30), epsilon=1.0, rng=ps.Rng(seed=20),
                                      structure="binary")
    syn = build()
    exact = syn.error_bound(0.9)
    m = len(syn)
    levels, _ = tree_shape(m, 2)
    assert trees.coefficient_bound(m, 2) < 0.7
    monkeypatch.setattr(trees, "MAX_COEF_WORK", 1)
    assert trees.coefficient_bound(m, 2) == pytest.approx(math.sqrt(trees.cover_terms(levels, 2)))
    assert build().error_bound(0.9) > exact


def test_budget_is_charged_only_after_every_check():
    budget = ps.Budget(1)
    # epsilon_p so small that the partition threshold passes 2**53: refused before the charge
    with pytest.raises(ParameterError, match="threshold"):
        IntervalSynopsis.build([1, 2], domain=(0, 2**64 - 1), epsilon=1e-15, budget=budget,
                               partition="dnrr")
    with pytest.raises(ParameterError, match="PrivTree"):
        IntervalSynopsis.build([1, 2], domain=(0, 2**64 - 1), epsilon=1e-15, budget=budget)
    with pytest.raises(DomainError, match="values"):
        IntervalSynopsis.build([1, 64], domain=(0, 63), epsilon=0.5, budget=budget)
    assert budget.spent == 0
    IntervalSynopsis.build([1, 2], domain=(0, 63), epsilon=0.5, budget=budget, rng=ps.Rng(seed=1))
    assert budget.spent == Fraction(1, 2)
