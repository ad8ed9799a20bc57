"""Tests of the DNRR private partition (Fig. 1, Theorem 2.1, Remark 2.2)."""
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import _exact, partition as P
from pydp_synopsis._core import ffi, lib
from pydp_synopsis.errors import DomainError, FormatError, HorizonError, ParameterError
from pydp_synopsis.params import as_offsets, check_domain
from stattests import ALPHA, assert_dp_ratio, assert_gof, clopper_pearson
from dnrr_law import (BETA, COUNTS, EPS, EXACT_FIRST, EXACT_NSEG, SCALE, T_INT, VALUES,
                      exact_laws, histograms)

U64 = 2**64


def test_threshold_is_rounded_up():
    assert T_INT == math.ceil(3 * (math.log(64) + math.log(2))) == 15
    t = P.Partition([2**64 - 1], domain=(0, 2**64 - 1), epsilon=2, beta=0.05).threshold  # scale 1/2
    assert 1.5 * (64 * math.log(2) + math.log(20)) <= t < 1.5 * (64 * math.log(2) + math.log(20)) + 1


def test_exact_law_is_a_distribution():
    assert EXACT_FIRST.sum() == pytest.approx(1, abs=1e-12)
    assert EXACT_NSEG.sum() == pytest.approx(1, abs=1e-12)


def test_brute_force_matches_exact_law():
    """Per-position simulation of Fig. 1 (numpy over trials) vs the exact law."""
    trials, d = 20000, len(COUNTS)
    rng = ps.Rng(seed=11)
    nu = ps.discrete_laplace(SCALE, size=(trials, d), rng=rng)
    z = ps.discrete_laplace(SCALE, size=(trials, d), rng=rng)
    rows = np.arange(trials)
    seg = np.zeros(trials, dtype=np.int64)
    c = np.zeros(trials, dtype=np.int64)
    first = np.full(trials, -1)
    for i in range(d):
        c += COUNTS[i]
        seal = (c + nu[:, i] > T_INT + z[rows, seg]) | (i == d - 1)
        first[(first < 0) & seal] = i
        seg += seal
        c[seal] = 0
    assert_gof(np.bincount(first, minlength=d), EXACT_FIRST)
    assert_gof(np.bincount(seg - 1, minlength=d), EXACT_NSEG)


@pytest.mark.slow
def test_offline_skip_matches_exact_law():
    rng = ps.Rng(seed=12)
    runs = [ps_part.end_offsets for ps_part in
            (P.private_partition(VALUES, domain=(0, 63), epsilon=EPS, beta=BETA, rng=rng)
             for _ in range(20000))]
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


@pytest.mark.slow
def test_offline_exact_fallback_matches_exact_law(monkeypatch):
    """Force every non-fast-path comparison through the decimal resolver."""
    rng = ps.Rng(seed=13)
    settled = []
    settle = _exact.settle
    monkeypatch.setattr(_exact, "settle", lambda *a: settled.append(1) or settle(*a))
    with _exact.forcing_exact(slack=1e300):
        runs = [P.private_partition(VALUES, domain=(0, 63), epsilon=EPS, beta=BETA,
                                    rng=rng).end_offsets for _ in range(2500)]
    assert len(settled) > 2500  # the decimal path did decide (a few comparisons per run)
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


@pytest.mark.slow
def test_online_feed_matches_exact_law():
    rng = ps.Rng(seed=14)
    runs = []
    cuts = [0, 5, 11, 12, 40, 64]
    for k in range(20000):
        op = P.OnlinePartition(size=64, epsilon=EPS, beta=BETA, rng=rng)
        out = []
        if k % 3 == 1:
            for a, b in zip(cuts[:-1], cuts[1:]):
                out.append(op.feed(COUNTS[a:b]))
        elif k % 3 == 2:  # feed_sparse: a repeated position adds, a zero count is allowed
            pos = np.repeat(np.flatnonzero(COUNTS), 2)
            halves = np.stack([COUNTS[pos[::2]] // 2, COUNTS[pos[::2]] - COUNTS[pos[::2]] // 2], 1)
            out.append(op.feed_sparse(pos[:6], halves.ravel()[:6], 12))
            out.append(op.feed_sparse(pos[6:], halves.ravel()[6:], 52))
        else:  # zeros via skip()
            pos = 0
            for i in np.flatnonzero(COUNTS):
                out.append(op.skip(int(i) - pos))
                out.append(op.feed(COUNTS[i:i + 1]))
                pos = int(i) + 1
        assert op.finished and op.position == 64
        runs.append(np.concatenate(out))
        assert np.array_equal(runs[-1], op.segments)
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


def test_feed_sparse_is_feed_of_the_dense_counts():
    """Same rng stream, same kernel input: identical seals, one call per batch."""
    gen = np.random.default_rng(3)
    counts = np.zeros(5000, dtype=np.int64)
    counts[gen.integers(0, 5000, 300)] = gen.integers(1, 20, 300)
    a = P.OnlinePartition(size=10**6, epsilon=0.5, rng=ps.Rng(seed=8))
    b = P.OnlinePartition(size=10**6, epsilon=0.5, rng=ps.Rng(seed=8))
    nz = np.flatnonzero(counts)
    for lo, hi in ((0, 2000), (2000, 5000)):
        part = nz[(nz >= lo) & (nz < hi)]
        np.testing.assert_array_equal(a.feed(counts[lo:hi]), b.feed_sparse(part, counts[part], hi - lo))
    np.testing.assert_array_equal(a.skip(10**6 - 5000), b.feed_sparse([], [], 10**6 - 5000))
    assert a.finished and b.finished
    np.testing.assert_array_equal(a.segments, b.segments)


def test_online_interior_weight_bound_is_the_offline_one():
    for size, eps, beta in ((10, 1.0, 0.05), (2**64, 0.1, 0.01), (1000, Fraction(1, 3), 0.5)):
        op = P.OnlinePartition(size=size, epsilon=eps, beta=beta, rng=ps.Rng(seed=1))
        off = P.Partition([size - 1], domain=(0, size - 1), epsilon=eps, beta=beta)
        assert op.threshold == off.threshold
        assert op.interior_weight_bound() == off.interior_weight_bound()


def test_online_partition_of_dense_stream_is_valid():
    op = P.OnlinePartition(size=1000, epsilon=0.5, rng=ps.Rng(seed=1))
    counts = np.ones(1000, dtype=np.int64)
    ends = np.concatenate([op.feed(counts[:500]), op.feed(counts[500:])])
    assert ends[-1] == 999 and np.all(np.diff(ends.astype(np.int64)) > 0)
    assert op.finished and len(op.segments) == len(ends)
    # Under Theorem 2.1's event each segment holds at most the bound.
    part = P.Partition(ends, domain=(0, 999), epsilon=0.5, beta=0.05)
    assert part.weights(np.arange(1000)).max() <= part.max_weight_bound()


# ------------------------------------------------------ exact decimal decisions

def _pi_mp(kind, m, scale, mult, dps=120):
    with mpmath.workdps(dps):
        scale = Fraction(scale)
        a = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
        p = a**m / (1 + a) if m >= 1 else 1 - a ** (1 - m) / (1 + a)
        y = mult * -mpmath.log(1 - p)
        return 1 - mpmath.exp(-y) if kind == 1 else 1 / (1 + mpmath.exp(y))


@pytest.mark.parametrize("kind,m,mult", [
    (1, 5, 3), (1, 40, 2**40), (1, -3, 7), (1, 700, 2**60), (2, 5, 1), (2, 30, 2**45),
    (2, -2, 4), (2, 1, 2**63), (1, 2000, 2**63)])
def test_decimal_comparison_against_mpmath(kind, m, mult):
    """Words just below/above pi (so 64 bits cannot decide) and far from it."""
    scale = Fraction(3, 2)
    pi = _pi_mp(kind, m, scale, mult)
    with mpmath.workdps(120):
        base = int(mpmath.floor(pi * 2**128))
    # U = base / 2^128 + tiny: the first word alone straddles pi unless pi is tiny.
    for n128, expect in ((base - 1, 1), (base + 1, 0)):
        if n128 < 0:
            continue
        words = [n128 >> 64, n128 & (2**64 - 1)]
        got = _exact.compare_exact(kind, m, 3, 2, mult, words[:1], 40)
        if got is not None:  # decided from the first word: must be right
            assert got == (1 if (words[0] + 1) / 2**64 <= pi else 0) or got == expect
        res = _exact.compare_exact(kind, m, 3, 2, mult, words, 80)
        assert res == expect


def test_resolver_extends_bits_from_the_stream():
    """A pending comparison whose first word straddles pi is decided exactly."""
    state = ffi.new("pds_partition *")
    rng = ps.Rng(seed=5)
    with rng.native() as p:
        assert lib.pds_partition_init(state, p, 100, 1, 1, 10) == 0
    pi = _pi_mp(1, 4, 1, 9)
    word = int(mpmath.floor(pi * 2**64))
    state.pending = 1
    state.pending_kind, state.run_m, state.pending_mult, state.pending_word = 1, 4, 9, word
    with rng.native() as p:
        out = _exact.resolve_pending(state, p)
    nxt = ps.Rng(seed=5)
    with nxt.native() as p:  # reproduce the extension word
        lib.pds_partition_init(ffi.new("pds_partition *"), p, 100, 1, 1, 10)
        buf = ffi.new("uint64_t[1]")
        lib.pds_rng_fill_u64(p, buf, 1)
    u = (mpmath.mpf(word) + mpmath.mpf(int(buf[0])) / 2**64) / 2**64
    with mpmath.workdps(120):
        assert out == (1 if u < pi else 0)


# ------------------------------------------------------------- Theorem 2.1

@pytest.mark.parametrize("log2d", [16, 40, 64])
def test_theorem_2_1_accuracy(log2d):
    """P(> n + 1 segments, an empty noise-sealed segment, or a segment heavier
    than 5 (ln D + ln(1/beta)) / epsilon) <= beta.  (+1: the domain end seals
    the last segment even if it is empty.)"""
    gen = np.random.default_rng(log2d)  # test data only
    d = 2**log2d
    n, runs, beta = 400, 150, 0.05
    rng = ps.Rng(seed=log2d)
    fails = 0
    for k in range(runs):
        if k % 2:
            values = gen.integers(0, d, size=n, dtype=np.uint64, endpoint=False)
        else:  # clustered: 5 blocks of consecutive values (Theorem 2.1 is about sets)
            values = (np.arange(n, dtype=np.uint64) % np.uint64(80)
                      + np.uint64(d // 5) * (np.arange(n, dtype=np.uint64) // np.uint64(80)))
        part = P.private_partition(values, domain=(0, d - 1), epsilon=1.0, beta=beta, rng=rng)
        w = part.weights(values)
        if len(part) > n + 1 or np.any(w[:-1] == 0) or w.max() > part.max_weight_bound():
            fails += 1
    lo, _ = clopper_pearson(fails, runs)
    assert lo <= beta


# ---------------------------------------------------------------- privacy

@pytest.mark.slow
def test_privacy_first_segment_end_ratio():
    """Neighbours: x and x plus one item; event 'first segment ends at j'."""
    d = 24
    x = np.zeros(d, dtype=np.int64)
    x[[2, 5, 6, 9]] = [6, 5, 3, 4]
    x1 = x.copy()
    x1[5] += 1
    eps = 1
    t_int = P.Partition([d - 1], domain=(0, d - 1), epsilon=eps, beta=0.5).threshold
    f0, _ = exact_laws(x, 1.0, t_int)
    f1, _ = exact_laws(x1, 1.0, t_int)
    j = int(np.argmax(np.abs(np.log(f1 / f0)) * (np.minimum(f0, f1) > 0.05)))
    assert max(f1[j] / f0[j], f0[j] / f1[j]) <= math.e  # the mechanism's exact law
    trials = 20000
    rng = ps.Rng(seed=21)
    v0, v1 = np.repeat(np.arange(d), x), np.repeat(np.arange(d), x1)
    k0 = sum(int(P.private_partition(v0, domain=(0, d - 1), epsilon=eps, beta=0.5,
                                     rng=rng).end_offsets[0]) == j for _ in range(trials))
    k1 = sum(int(P.private_partition(v1, domain=(0, d - 1), epsilon=eps, beta=0.5,
                                     rng=rng).end_offsets[0]) == j for _ in range(trials))
    assert_dp_ratio(k1, trials, k0, trials, eps)
    # and the samples follow the exact law (the test has power)
    lo0, hi0 = clopper_pearson(k0, trials)
    lo1, hi1 = clopper_pearson(k1, trials)
    assert lo0 <= f0[j] <= hi0 and lo1 <= f1[j] <= hi1


# ----------------------------------------------------------- exact behaviour

def test_determinism_under_seed():
    vals = np.array([5, 2**63, 17, 17, 2**64 - 1], dtype=np.uint64)
    a = P.private_partition(vals, domain=(0, 2**64 - 1), epsilon=0.5, rng=ps.Rng(seed=3))
    b = P.private_partition(vals, domain=(0, 2**64 - 1), epsilon=0.5, rng=ps.Rng(seed=3))
    assert a == b
    o1 = P.OnlinePartition(size=2**64, epsilon=0.5, rng=ps.Rng(seed=4))
    o2 = P.OnlinePartition(size=2**64, epsilon=0.5, rng=ps.Rng(seed=4))
    for o in (o1, o2):
        o.feed([0, 3, 0, 0, 9])
        o.skip(2**40)
        o.feed(np.ones(100, dtype=np.int64))
    assert np.array_equal(o1.segments, o2.segments) and o1.position == o2.position


def test_empty_input_and_tiny_domains():
    p = P.private_partition(np.array([], dtype=np.int64), domain=(-5, 5), epsilon=1)
    assert p.end_offsets[-1] == 10 and p.ends.dtype == np.int64 and p.ends[-1] == 5
    assert p.weights(np.array([], dtype=np.int64)).sum() == 0
    one = P.private_partition([7], domain=(7, 7), epsilon=1)
    assert one.ends.tolist() == [7] and len(one) == 1
    op = P.OnlinePartition(size=1, epsilon=1)
    assert op.feed([4]).tolist() == [0] and op.finished


def test_full_uint64_and_int64_domains():
    vals = np.array([-2**63, -1, 0, 2**63 - 1], dtype=np.int64)
    p = P.private_partition(vals, domain=(-2**63, 2**63 - 1), epsilon=1, rng=ps.Rng(seed=8))
    assert p.ends.dtype == np.int64 and int(p.ends[-1]) == 2**63 - 1
    assert p.weights(vals).sum() == 4 and p.end_offsets.dtype == np.uint64
    q = P.private_partition(np.array([2**64 - 1], dtype=np.uint64), domain=(0, 2**64 - 1),
                            epsilon=1, rng=ps.Rng(seed=8))
    assert q.ends.dtype == np.uint64 and int(q.ends[-1]) == 2**64 - 1
    assert q.segment_of([2**64 - 1]).tolist() == [len(q) - 1]


def test_heavy_items_seal_and_segment_of():
    vals = np.repeat(np.array([100, 200, 300], dtype=np.int64), 1000)
    p = P.private_partition(vals, domain=(0, 10**6), epsilon=1, rng=ps.Rng(seed=9))
    # each heavy position must end a segment (its count alone exceeds T~ whp)
    assert {100, 200, 300} <= set(p.ends.tolist())
    seg = p.segment_of(vals)
    assert np.all(np.diff(seg) >= 0)
    assert p.weights(vals).tolist().count(1000) == 3
    assert repr(p).startswith("Partition(segments=")
    assert p.domain == (0, 10**6) and p.epsilon == 1 and p.beta == 0.05


def test_online_state_roundtrip_continues_identically():
    rng_a, rng_b = ps.Rng(seed=30), ps.Rng(seed=30)
    a = P.OnlinePartition(size=10**12, epsilon=0.25, rng=rng_a)
    b = P.OnlinePartition(size=10**12, epsilon=0.25, rng=rng_b)
    for o in (a, b):
        o.feed(np.full(300, 2))
    st = b.to_state()
    b2 = P.OnlinePartition.from_state(st, rng=rng_b)
    for o in (a, b2):
        o.skip(10**6)
        o.feed(np.full(500, 1))
        o.skip(10**12 - o.position)
    assert np.array_equal(a.segments, b2.segments) and b2.finished
    fin = P.OnlinePartition.from_state(b2.to_state())
    assert fin.finished and fin.position == 10**12
    with pytest.raises(HorizonError):
        fin.feed([1])


def test_from_state_rejects_tampering():
    st = P.OnlinePartition(size=100, epsilon=1, rng=ps.Rng(seed=1)).to_state()
    for key, val in [("threshold", 3), ("count", -1), ("position", 100), ("version", 9),
                     ("finished", True), ("ends", np.array([5, 3]))]:
        bad = dict(st, **{key: val})
        with pytest.raises(FormatError):
            P.OnlinePartition.from_state(bad)
    bad = dict(st)
    del bad["size"]
    with pytest.raises(FormatError):
        P.OnlinePartition.from_state(bad)


def test_skip_is_cheap_on_huge_gaps():
    op = P.OnlinePartition(size=2**64, epsilon=1, rng=ps.Rng(seed=2))
    for _ in range(1000):  # each skip is O(1) kernel steps, not O(2^50)
        op.skip(2**50)
    assert op.position == 1000 * 2**50
    op.skip(2**64 - op.position)
    assert op.finished and int(op.segments[-1]) == 2**64 - 1


# ------------------------------------------------------------- bad inputs

def test_bad_inputs():
    dom = (0, 100)
    with pytest.raises(DomainError, match="values"):
        P.private_partition([101], domain=dom, epsilon=1)
    with pytest.raises(DomainError, match="values"):
        P.private_partition(np.array([-1], dtype=np.int64), domain=(0, 2**64 - 1), epsilon=1)
    with pytest.raises(DomainError, match="values"):
        P.private_partition(np.array([2**64 - 1], dtype=np.uint64), domain=(-1, 10), epsilon=1)
    with pytest.raises(TypeError, match="values"):
        P.private_partition([1.0, 2.0], domain=dom, epsilon=1)
    with pytest.raises(TypeError, match="values"):
        P.private_partition(np.array([np.nan]), domain=dom, epsilon=1)
    with pytest.raises(TypeError, match="values"):
        P.private_partition(np.array([True]), domain=dom, epsilon=1)
    for eps in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match="epsilon"):
            P.private_partition([1], domain=dom, epsilon=eps)
    with pytest.raises(TypeError, match="epsilon"):
        P.private_partition([1], domain=dom, epsilon="1")
    for beta in (0, 1, 1.5, -0.1):
        with pytest.raises(ParameterError, match="beta"):
            P.private_partition([1], domain=dom, epsilon=1, beta=beta)
    with pytest.raises(DomainError, match="domain"):
        P.private_partition([], domain=(5, 4), epsilon=1)
    with pytest.raises(DomainError, match="domain"):
        P.private_partition([], domain=(-1, 2**64 - 1), epsilon=1)
    with pytest.raises(DomainError, match="domain"):
        P.private_partition([], domain=(0, 2**64), epsilon=1)
    with pytest.raises(DomainError, match="domain"):
        P.private_partition([], domain=(-2**63 - 1, 0), epsilon=1)
    with pytest.raises(TypeError, match="domain"):
        P.private_partition([], domain=(0.0, 5), epsilon=1)
    with pytest.raises(TypeError, match="domain"):
        P.private_partition([], domain=5, epsilon=1)
    with pytest.raises(TypeError, match="rng"):
        P.private_partition([1], domain=dom, epsilon=1, rng=np.random.default_rng())
    with pytest.raises(ParameterError, match="epsilon"):
        P.private_partition([1], domain=dom, epsilon=1e-15)


def test_bad_online_inputs_change_nothing():
    op = P.OnlinePartition(size=10, epsilon=1, rng=ps.Rng(seed=1))
    st = op.to_state()
    with pytest.raises(DomainError, match="counts"):
        op.feed([1, -1])
    with pytest.raises(TypeError, match="counts"):
        op.feed([0.5])
    with pytest.raises(TypeError, match="counts"):
        op.feed([[1]])
    with pytest.raises(HorizonError):
        op.feed(np.zeros(11, dtype=np.int64))
    with pytest.raises(HorizonError):
        op.skip(11)
    with pytest.raises(DomainError, match="n"):
        op.skip(-1)
    with pytest.raises(TypeError, match="n"):
        op.skip(1.5)
    for args, err, msg in [(([2, 3], [1], 3), DomainError, "counts"),
                           (([-1], [1], 3), DomainError, "positions"),
                           (([3], [1], 3), DomainError, "positions"),
                           (([2, 1], [1, 1], 3), DomainError, "non-decreasing"),
                           (([2], [-1], 3), DomainError, "counts"),
                           (([2.0], [1], 3), TypeError, "positions"),
                           (([2], [[1]], 3), TypeError, "counts"),
                           (([2], [1], 11), HorizonError, "feed_sparse"),
                           (([2], [1], -1), DomainError, "n"),
                           (([2], [1], 3.0), TypeError, "n")]:
        with pytest.raises(err, match=msg):
            op.feed_sparse(*args)
    after = op.to_state()
    assert {k: v for k, v in st.items() if k != "ends"} == \
        {k: v for k, v in after.items() if k != "ends"}
    for size in (0, 2**64 + 1):
        with pytest.raises(DomainError, match="size"):
            P.OnlinePartition(size=size, epsilon=1)
    with pytest.raises(TypeError, match="size"):
        P.OnlinePartition(size=10.0, epsilon=1)
    assert op.feed([]).size == 0 and op.skip(0).size == 0


def test_as_offsets_and_check_domain():
    assert check_domain((np.int64(-3), np.uint64(4))) == (-3, 4)
    assert as_offsets(np.array([-3, 4], dtype=np.int8), (-3, 4)).tolist() == [0, 7]
    big = np.array([2**63, 2**64 - 1], dtype=np.uint64)
    assert as_offsets(big, (2**63, 2**64 - 1)).tolist() == [0, 2**63 - 1]
    assert as_offsets([2**64 - 1, -0], (0, 2**64 - 1)).tolist() == [2**64 - 1, 0]
    with pytest.raises(DomainError):
        as_offsets(np.array([-1], dtype=np.int64), (0, 10))
    with pytest.raises(TypeError, match="pts"):
        as_offsets(["a"], (0, 10), name="pts")
    with pytest.raises(TypeError):
        check_domain((True, 5))
    with pytest.raises(DomainError):
        check_domain((0, 2**64))


def test_partition_constructor_validates():
    with pytest.raises(DomainError):
        P.Partition([3, 2, 9], domain=(0, 9), epsilon=1, beta=0.05)
    with pytest.raises(DomainError):
        P.Partition([3, 8], domain=(0, 9), epsilon=1, beta=0.05)
    a = P.Partition([3, 9], domain=(0, 9), epsilon=1, beta=0.05)
    assert a == P.Partition(np.array([3, 9], dtype=np.uint64), domain=(0, 9), epsilon=1,
                            beta=0.05)
    assert a != P.Partition([9], domain=(0, 9), epsilon=1, beta=0.05)
    assert a.max_weight_bound() == pytest.approx(5 * (math.log(10) + math.log(20)))
    with pytest.raises(DomainError):
        a.segment_of([10])


def test_presorted_skips_the_sort_and_checks_the_order():
    vals = np.sort(np.random.default_rng(3).integers(0, 1000, 500))
    a = P.private_partition(vals, domain=(0, 999), epsilon=1, rng=ps.Rng(seed=8))
    b = P.private_partition(vals, domain=(0, 999), epsilon=1, rng=ps.Rng(seed=8), presorted=True)
    assert a == b
    with pytest.raises(DomainError, match="non-decreasing"):
        P.private_partition(vals[::-1], domain=(0, 999), epsilon=1, rng=ps.Rng(seed=8), presorted=True)
