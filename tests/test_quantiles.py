"""cdf, quantile and histogram of an interval synopsis: post-processing of its release.

Exact tests against a brute-force oracle written here from the synopsis's public
answers (prefix counts at the released segment ends, a plain pool-adjacent-violators
fit, the uniform spread over a segment's grid points), monotonicity properties,
user units, save/load, a rank-error bound at alpha = 1e-6, bad inputs.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pydp_synopsis as ps
from pydp_synopsis.errors import InputError
from pydp_synopsis.quantiles import MAX_BINS, check_fractions, isotonic
from cdf_oracle import interpolated_cdf, oracle_quantile, pava
from stattests import ALPHA


# ------------------------------------------------------------------ the oracle
def oracle(syn):
    """Per grid point x of the (small) domain, the private count of rows <= x."""
    lo, hi = syn.domain
    ends = [int(e) for e in syn.partition.ends]
    prefix = syn.count_many([lo] * len(ends), ends)
    return interpolated_cdf(prefix, ends, lo)


@pytest.fixture(scope="module")
def noisy():
    """A small domain, noisy enough that the prefix answers dip (isotonic at work)."""
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.integers(0, 300, 400), rng.integers(700, 720, 300)])
    return ps.IntervalSynopsis.build(values, domain=(-50, 1000), epsilon=0.3,
                                     rng=ps.Rng(seed=11))


# ------------------------------------------------------------------ exact
def test_isotonic_matches_the_textbook_fit():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100, 1000):
        y = np.cumsum(rng.normal(0, 3, n)) + rng.normal(0, 10, n)
        np.testing.assert_allclose(isotonic(y), pava(y), rtol=0, atol=1e-9)
        assert (np.diff(isotonic(y)) >= 0).all()
    assert isotonic([]).size == 0
    with pytest.raises(ps.ParameterError):
        isotonic([1.0, float("nan")])


def test_noise_free_release_gives_the_data_quantiles():
    # epsilon 1e6: every released count is the true count, so the private
    # distribution is the data's with each segment spread uniformly
    values = np.repeat(np.arange(10, 20), 100)          # 10..19, 100 each
    s = ps.IntervalSynopsis.build(values, domain=(0, 63), epsilon=1e6, rng=ps.Rng(seed=1))
    ends = [int(e) for e in s.partition.ends]
    assert [round(c) for c in s.count_many([0] * len(ends), ends)] == \
        [int(np.count_nonzero(values <= e)) for e in ends]
    f = oracle(s)
    assert f[-1] == pytest.approx(1000)
    assert s.cdf(63) == 1.0 and s.cdf(9) == pytest.approx(f[9] / 1000)
    for q in (0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.999, 1):
        assert s.quantile(q) == oracle_quantile(f, 0, q)
    # segments holding one value each recover it exactly
    single = {e for e, prev in zip(ends, [-1] + ends) if e - prev == 1}
    for q, want in ((0.05, 10), (0.5, 14), (0.95, 19)):
        if want in single:
            assert s.quantile(q) == want


def test_cdf_and_quantile_equal_the_oracle(noisy):
    s = noisy
    lo, hi = s.domain
    f = oracle(s)
    grid = np.arange(lo, hi + 1)
    np.testing.assert_allclose(s.cdf(grid, counts=True), f, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(s.cdf(grid), f / f[-1], rtol=1e-12, atol=1e-12)
    q = np.linspace(0, 1, 201)
    got = s.quantile(q)
    assert got.dtype == np.int64 and got.shape == (201,)
    assert got.tolist() == [oracle_quantile(f, lo, v) for v in q]
    assert s.quantile(q.reshape(3, 67)).shape == (3, 67)
    assert np.ndim(s.quantile(0.5)) == 0 and np.ndim(s.cdf(7)) == 0


def test_histogram_is_count_many_of_the_bins(noisy):
    s = noisy
    counts, edges = s.histogram(7)
    lo, hi = s.domain
    width = hi - lo + 1
    assert edges.tolist() == [lo + width * j // 7 for j in range(7)] + [hi]
    stops = list(edges[1:-1] - 1) + [hi]
    np.testing.assert_array_equal(counts, s.count_many(edges[:-1], stops, nonnegative=True))
    counts2, edges2, bars = s.histogram([-50, 0, 300, 699, 720, 1000], confidence=0.9)
    assert edges2.tolist() == [-50, 0, 300, 699, 720, 1000]
    want = s.confidence_intervals([-50, 0, 300, 699, 720], [-1, 299, 698, 719, 1000], 0.9,
                                  nonnegative=True)
    for a, b in zip(bars, want):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(counts2, want.answer)
    one, e1 = s.histogram(1)
    assert e1.tolist() == [lo, hi] and one[0] == max(s.count(lo, hi), 0.0)


def test_whole_domain_and_uint64_domains():
    values = np.array([2**63 + 5] * 50 + [2**64 - 3] * 50, dtype=np.uint64)
    s = ps.IntervalSynopsis.build(values, domain=(0, 2**64 - 1), epsilon=1e6,
                                  rng=ps.Rng(seed=3))
    q = s.quantile([0.25, 0.75])
    assert q.dtype == np.uint64
    ends = [int(e) for e in s.partition.ends]
    for v, want in zip(q.tolist(), (2**63 + 5, 2**64 - 3)):     # in the value's segment
        i = next(j for j, e in enumerate(ends) if e >= want)
        assert (ends[i - 1] + 1 if i else 0) <= v <= ends[i]
    assert s.cdf(np.array([2**64 - 1], dtype=np.uint64))[0] == 1.0
    counts, edges = s.histogram(2)
    assert edges.dtype == np.uint64 and edges.tolist() == [0, 2**63, 2**64 - 1]
    assert [round(c) for c in counts] == [0, 100]


# ------------------------------------------------------------------ properties
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), eps=st.sampled_from([0.05, 0.5, 5.0]),
       xs=st.lists(st.integers(-100, 400), min_size=1, max_size=30),
       qs=st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_monotone_and_inverse_of_each_other(seed, eps, xs, qs):
    rng = np.random.default_rng(seed)
    values = rng.integers(-100, 400, 300)
    s = ps.IntervalSynopsis.build(values, domain=(-100, 400), epsilon=eps, rng=ps.Rng(seed=seed))
    xs, qs = np.sort(xs), np.sort(qs)
    f, c = s.cdf(xs), s.cdf(xs, counts=True)
    assert (np.diff(f) >= 0).all() and (f >= 0).all() and (f <= 1).all()
    q = s.quantile(qs)
    assert (np.diff(q) >= 0).all() and (q >= -100).all() and (q <= 400).all()
    total = s.cdf(400, counts=True)
    # where F(x) > 0, the smallest x' with F(x') >= F(x) is at most x (up to the
    # rounding of q N); quantile(0) is the first point with F > 0 by definition
    pos = c > 0
    assert (s.quantile(np.minimum(c[pos] / total * (1 - 1e-12), 1.0)) <= xs[pos]).all()
    assert (s.quantile(np.zeros(int((~pos).sum()))) > xs[~pos]).all()
    cq = s.cdf(q, counts=True)
    assert (cq >= qs * total - 1e-9 * total).all()


def test_other_trees_are_monotone_too():
    values = np.random.default_rng(1).integers(0, 1000, 2000)
    for opts in ({"structure": "kary"}, {"structure": "binary", "consistency": False},
                 {"partition": "dnrr"}, {"estimator": "cover"}):
        s = ps.IntervalSynopsis.build(values, domain=(0, 999), epsilon=0.2, rng=ps.Rng(seed=2),
                                      **opts)
        f = s.cdf(np.arange(1000))
        assert (np.diff(f) >= 0).all() and f[-1] == 1.0, opts
        assert (np.diff(s.quantile(np.linspace(0, 1, 101))) >= 0).all(), opts
        assert abs(s.quantile(0.5) - 500) < 100, opts


# ------------------------------------------------------------------ user units
def test_dates_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    days = np.datetime64("2001-01-01") + rng.integers(0, 181, 4000)
    s = ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-06-30"), epsilon=1,
                                  rng=ps.Rng(seed=4))
    q = s.quantile([0, 0.5, 1])
    assert q.dtype == np.dtype("datetime64[D]")
    assert q[0] >= np.datetime64("2001-01-01") and q[2] <= np.datetime64("2001-06-30")
    assert abs((q[1] - np.datetime64("2001-04-01")).astype(int)) <= 10
    # the same point as a date, a string, a datetime64 array
    assert s.cdf("2001-03-31") == s.cdf(np.datetime64("2001-03-31")) == \
        s.cdf(np.array(["2001-03-31"]))[0]
    assert np.ndim(s.cdf("2001-03-31")) == 0 and s.cdf(["2001-03-31"] * 4).shape == (4,)
    assert s.cdf(q[1], counts=True) >= 0.5 * s.cdf("2001-06-30", counts=True)
    counts, edges = s.histogram(["2001-01-01", "2001-04-01", "2001-06-30"])
    assert edges.dtype == np.dtype("datetime64[D]")
    np.testing.assert_array_equal(counts, s.count_many(["2001-01-01", "2001-04-01"],
                                                       ["2001-03-31", "2001-06-30"],
                                                       nonnegative=True))
    path = tmp_path / "d.pds"
    s.save(path)
    t = ps.load(path)
    np.testing.assert_array_equal(t.quantile([0.1, 0.5, 0.9]), s.quantile([0.1, 0.5, 0.9]))
    assert t.cdf("2001-05-05") == s.cdf("2001-05-05")
    for a, b in zip(t.histogram(5, confidence=0.9), s.histogram(5, confidence=0.9)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_datetimes_with_a_time_zone_return_utc():
    t = np.datetime64("2001-03-01T00:00") + np.arange(0, 48 * 60, 7).astype("m8[m]")
    s = ps.IntervalSynopsis.build(t.astype("datetime64[s]"),
                                  domain=("2001-03-01T00:00:00", "2001-03-03T00:00:00"),
                                  columns=ps.Column.datetime("t", tz="UTC", resolution="1m"),
                                  epsilon=1e6, rng=ps.Rng(seed=5))
    mid = s.quantile(0.5)
    assert mid.dtype.kind == "M"
    assert abs((mid - np.datetime64("2001-03-02T00:00")).astype("m8[m]").astype(int)) <= 30


def test_decimals_round_trip():
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(3, 1, 5000), 2)
    s = ps.IntervalSynopsis.build(x, domain=(-10, 10), scale="1e2", epsilon=1,
                                  rng=ps.Rng(seed=6))
    q = s.quantile([0.1, 0.5, 0.9])
    assert q.dtype == np.float64
    np.testing.assert_allclose(q * 100, np.round(q * 100), atol=1e-9)    # on the grid
    np.testing.assert_allclose(q, np.quantile(x, [0.1, 0.5, 0.9]), atol=0.1)
    assert s.cdf(3.0) == s.cdf("3.00") == s.cdf(3)
    assert s.cdf(float(q[1]), counts=True) >= 0.5 * s.cdf(10.0, counts=True)
    counts, edges = s.histogram([-10, 0.5, 3.25, 10])
    assert edges.tolist() == [-10.0, 0.5, 3.25, 10.0]
    np.testing.assert_array_equal(counts, s.count_many(["-10", "0.5", "3.25"],
                                                       ["0.49", "3.24", "10"],
                                                       nonnegative=True))
    r = ps.IntervalSynopsis.build(x, domain=(-10, 10), resolution=0.25, epsilon=1,
                                  rng=ps.Rng(seed=6))
    qr = r.quantile([0.5])
    assert qr[0] * 4 == round(qr[0] * 4) and abs(qr[0] - 3) < 0.5


# ------------------------------------------------------------------ statistics
def test_median_rank_error_within_the_noise_bound():
    # With probability >= 1 - alpha every raw answer is within B = error_bound of the
    # truth; the isotonic fit of the prefix answers at the segment ends then stays
    # within B of the (monotone) true prefix counts, the total N within B of n, and
    # inside a segment the spread misplaces at most its true count s.  So the median's
    # rank interval [F(Q - 1), F(Q)] lies within 1.5 B + s of n / 2.
    runs = 10
    conf = 1 - ALPHA / runs
    for seed in range(runs):
        rng = np.random.default_rng(100 + seed)
        values = np.round(rng.lognormal(8, 1, 20000)).astype(np.int64)
        s = ps.IntervalSynopsis.build(values, domain=(0, 2**24 - 1), epsilon=0.5,
                                      beta=ALPHA / runs / 10, rng=ps.Rng(seed=seed))
        b = s.error_bound(conf)
        ends = s.partition.ends
        seg = np.diff(np.concatenate(([0], np.searchsorted(np.sort(values), ends,
                                                           side="right"))))
        med = int(s.quantile(0.5))
        below, upto = np.count_nonzero(values < med), np.count_nonzero(values <= med)
        n = values.size
        miss = max(below - n / 2, n / 2 - upto, 0)
        assert miss <= 1.5 * b + seg.max(), (seed, miss, b, seg.max())
        assert miss / n < 0.01          # and small in practice (a loose sanity line)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("q, exc, text", [
    (1.5, ps.ParameterError, r"q must be in \[0, 1\], got 1.5"),
    (-0.1, ps.ParameterError, r"q must be in \[0, 1\], got -0.1"),
    (float("nan"), ps.ParameterError, r"q must be in \[0, 1\], got nan"),
    ([0.5, np.inf], ps.ParameterError, r"got inf"),
    (True, TypeError, "not bool"),
    ("0.5", TypeError, "q must be real"),
    ([np.datetime64("2001-01-01")], TypeError, "q must be real"),
])
def test_bad_q(noisy, q, exc, text):
    with pytest.raises(exc, match=text):
        noisy.quantile(q)
    with pytest.raises(exc, match=text):
        check_fractions(q)


def test_bad_x_and_bins(noisy):
    s = noisy
    with pytest.raises(ps.DomainError, match=r"x must lie in the domain \[-50, 1000\]"):
        s.cdf([0, 1001])
    with pytest.raises(TypeError, match="x must be integers"):
        s.cdf(2.5)
    with pytest.raises(TypeError, match="counts must be a bool"):
        s.cdf(3, counts=1)
    with pytest.raises(ps.ParameterError, match=r"bins must be in \[1, 1051\], got 0"):
        s.histogram(0)
    with pytest.raises(ps.ParameterError, match=r"bins must be in \[1, 1051\], got 2000"):
        s.histogram(2000)
    with pytest.raises(ps.ParameterError, match="strictly increasing"):
        s.histogram([0, 10, 5])
    with pytest.raises(ps.ParameterError, match="strictly increasing"):
        s.histogram([0, 10, 10])
    with pytest.raises(ps.ParameterError, match="1-D array of 2 to"):
        s.histogram([5])
    with pytest.raises(ps.ParameterError, match="1-D array of 2 to"):
        s.histogram([[0, 5], [6, 9]])
    with pytest.raises(ps.DomainError, match=r"bins must lie in the domain"):
        s.histogram([0, 2000])
    with pytest.raises(TypeError, match="bins must be integers"):
        s.histogram([0.5, 3])
    with pytest.raises(ps.ParameterError, match="confidence"):
        s.histogram(3, confidence=1.5)
    assert MAX_BINS == 2**20


def test_bad_units():
    days = np.datetime64("2001-01-01") + np.arange(100)
    s = ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-12-31"), epsilon=1,
                                  rng=ps.Rng(seed=1))
    with pytest.raises(TypeError, match="x: numbers given for a date column"):
        s.cdf(5)
    with pytest.raises(InputError, match="x: a value is not an ISO date"):
        s.cdf("March")
    with pytest.raises(ps.DomainError, match="x must lie in the domain"):
        s.cdf("2002-01-01")
    with pytest.raises(TypeError, match="bins: numbers given for a date column"):
        s.histogram([1, 2])


def test_empty_release_has_no_distribution():
    s = ps.IntervalSynopsis.build(np.zeros(0, dtype=np.int64), domain=(0, 99), epsilon=1e6,
                                  rng=ps.Rng(seed=1))
    with pytest.raises(ps.DomainError, match="private total is not positive"):
        s.quantile(0.5)
    with pytest.raises(ps.DomainError, match="private total is not positive"):
        s.cdf(5)
    assert s.cdf(5, counts=True) == 0.0
    assert math.isfinite(s.histogram(4)[0].sum())
