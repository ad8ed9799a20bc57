"""RectangleSynopsis.cdf / quantile of one axis: a brute-force oracle of the
post-processing, monotonicity, user units, a rank-error bound at alpha = 1e-6
and bad input refused in one line."""
import numpy as np
import pytest

import pydp_synopsis as ps
from cdf_oracle import interpolated_cdf, oracle_quantile
from stattests import ALPHA


def oracle(syn, a):
    """Per integer x of axis a's (small) domain, the private count of rows <= x, from the
    public count_many of the prefix boxes at the axis's segment ends."""
    dom = syn.domain
    lo, hi = dom[a]
    ends = [int(e) for e in syn.partitions[a].ends]
    box_lo = [[d[0] for d in dom] for _ in ends]
    box_hi = [[e if b == a else d[1] for b, d in enumerate(dom)] for e in ends]
    return interpolated_cdf(syn.count_many(box_lo, box_hi), ends, lo)


def _points(n=1500, seed=3):
    g = np.random.default_rng(seed)
    x = np.concatenate([g.integers(0, 200, n // 2), g.integers(400, 430, n - n // 2)])
    y = g.integers(-20, 20, n)
    z = g.integers(0, 5, n)
    return np.stack([x, y, z], axis=1)


@pytest.fixture(scope="module", params=["adaptive", "multitree"])
def noisy(request):
    pts = _points()
    return ps.RectangleSynopsis.build(pts, domain=[(-10, 600), (-20, 19), (0, 4)], epsilon=0.5,
                                      structure=request.param, rng=ps.Rng(seed=9))


def test_cdf_and_quantile_equal_the_oracle(noisy):
    s = noisy
    for a in range(s.dims):
        lo, hi = s.domain[a]
        f = oracle(s, a)
        grid = np.arange(lo, hi + 1)
        np.testing.assert_allclose(s.cdf(grid, axis=a, counts=True), f, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(s.cdf(grid, axis=a), f / f[-1], rtol=1e-12, atol=1e-12)
        q = np.linspace(0, 1, 101)
        got = s.quantile(q, axis=a)
        assert got.dtype == np.int64
        assert got.tolist() == [oracle_quantile(f, lo, v) for v in q]
        assert (np.diff(got) >= 0).all() and (np.diff(s.cdf(grid, axis=a)) >= -1e-15).all()
    assert np.ndim(s.quantile(0.5, axis=0)) == 0 and np.ndim(s.cdf(3, axis=1)) == 0
    assert s.quantile(np.full((2, 3), 0.5), axis=2).shape == (2, 3)


def test_noise_free_marginal_is_the_data_marginal():
    pts = _points()
    s = ps.RectangleSynopsis.build(pts, domain=[(-10, 600), (-20, 19), (0, 4)], epsilon=1e9,
                                   structure="multitree", threshold=0, rng=ps.Rng(seed=1))
    for a in range(3):
        ends = [int(e) for e in s.partitions[a].ends]
        want = [int(np.count_nonzero(pts[:, a] <= e)) for e in ends]
        assert [round(v) for v in s.cdf(ends, axis=a, counts=True)] == want
        assert s.cdf(s.domain[a][1], axis=a) == 1.0


def test_units_dates_decimals_and_a_category_axis():
    g = np.random.default_rng(0)
    n = 2000
    days = np.datetime64("2001-01-01") + g.integers(0, 90, n).astype("timedelta64[D]")
    carriers = np.array(["AA", "DL", "UA"], dtype=object)[g.choice(3, n, p=[0.2, 0.5, 0.3])]
    fares = np.round(g.uniform(0, 100, n), 2)
    cols = [ps.Column.date("day"), ps.Column.category(["AA", "DL", "UA"], name="carrier"),
            ps.Column.decimal("fare", scale=100)]
    pts = np.empty((n, 3), dtype=object)
    pts[:, 0], pts[:, 1], pts[:, 2] = days.astype(str), carriers, fares.astype(str)
    s = ps.RectangleSynopsis.build(pts, domain=[("2001-01-01", "2001-03-31"), ("AA", "UA"),
                                                ("0", "100")],
                                   columns=cols, epsilon=1e6, rng=ps.Rng(seed=2))
    med = s.quantile(0.5, axis="day")
    assert med.dtype.kind == "M"
    true_med = np.sort(days)[n // 2]
    assert abs((med - true_med).astype(int)) <= 3
    assert s.quantile([0.1, 0.5, 0.9], axis="carrier").tolist() == ["AA", "DL", "UA"]
    assert s.cdf("DL", axis=1) == pytest.approx(np.mean(np.isin(carriers, ["AA", "DL"])),
                                                abs=0.01)
    fare = s.quantile(0.5, axis="fare")
    assert isinstance(float(fare), float) and abs(float(fare) - np.median(fares)) < 3
    assert s.cdf("2001-03-31", axis="day") == 1.0
    assert s.cdf(np.datetime64("2001-01-31"), axis=0) == pytest.approx(
        np.mean(days <= np.datetime64("2001-01-31")), abs=0.02)


@pytest.mark.parametrize("axis, exc, text", [
    (3, ps.ParameterError, r"axis must be an int in \[0, 2\] or a column name, got 3"),
    (-1, ps.ParameterError, r"got -1"),
    ("fare", ps.ParameterError, r"axis must be an int in \[0, 2\] or a column name"),
    (1.0, TypeError, "axis must be an int or a column name, not float"),
    (True, TypeError, "not bool"),
])
def test_bad_axis_refused_in_one_line(noisy, axis, exc, text):
    for call in (lambda: noisy.quantile(0.5, axis=axis), lambda: noisy.cdf(0, axis=axis)):
        with pytest.raises(exc, match=text) as info:
            call()
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("q, exc, text", [
    (1.5, ps.ParameterError, r"q must be in \[0, 1\], got 1.5"),
    (float("nan"), ps.ParameterError, r"got nan"),
    ("0.5", TypeError, "q must be real"),
])
def test_bad_q_refused(noisy, q, exc, text):
    with pytest.raises(exc, match=text):
        noisy.quantile(q, axis=0)
    with pytest.raises(TypeError):
        noisy.quantile(0.5)                 # axis is required
    with pytest.raises(ps.DomainError):
        noisy.cdf(601, axis=0)


def test_saved_and_loaded_marginals_agree(noisy, tmp_path):
    noisy.save(tmp_path / "r.pds")
    back = ps.load(tmp_path / "r.pds")
    q = np.linspace(0, 1, 11)
    assert back.quantile(q, axis=1).tolist() == noisy.quantile(q, axis=1).tolist()


def test_median_rank_error_within_the_box_bound():
    # With probability >= 1 - alpha every box answer is within B = error_bound of the
    # truth (one bound for all boxes at once); the prefix boxes of the marginal are boxes,
    # so the isotonic fit of their answers stays within B of the (monotone) true prefix
    # counts, the total within B of n, and inside a segment the spread misplaces at most
    # its true count s: the median's rank interval lies within 1.5 B + s of n / 2.
    runs = 5
    conf = 1 - ALPHA / runs
    for seed in range(runs):
        g = np.random.default_rng(200 + seed)
        x = np.round(g.lognormal(8, 1, 20000)).astype(np.int64) % 2**20
        y = g.integers(0, 1000, x.size)
        s = ps.RectangleSynopsis.build(np.stack([x, y], axis=1),
                                       domain=[(0, 2**20 - 1), (0, 999)], epsilon=1.0,
                                       beta=ALPHA / runs / 10, rng=ps.Rng(seed=seed))
        b = s.error_bound(conf)
        ends = s.partitions[0].ends
        seg = np.diff(np.concatenate(([0], np.searchsorted(np.sort(x), ends, side="right"))))
        med = int(s.quantile(0.5, axis=0))
        below, upto = np.count_nonzero(x < med), np.count_nonzero(x <= med)
        n = x.size
        miss = max(below - n / 2, n / 2 - upto, 0)
        assert miss <= 1.5 * b + seg.max(), (seed, miss, b, seg.max())


def test_histogram_of_an_axis_is_count_many_of_its_boxes(noisy):
    s = noisy
    counts, edges, bars = s.histogram(5, axis=0, confidence=0.9)
    assert edges.tolist() == [-10, 112, 234, 356, 478, 600]
    lo = [[e, -20, 0] for e in edges[:-1]]
    hi = [[e - 1, 19, 4] for e in edges[1:-1]] + [[600, 19, 4]]
    want = s.count_many(lo, hi, nonnegative=True)
    assert counts.tolist() == want.tolist() == bars.answer.tolist()
    ref = s.confidence_intervals(lo, hi, 0.9, nonnegative=True)
    assert bars.low.tolist() == ref.low.tolist() and bars.high.tolist() == ref.high.tolist()
    c2, e2 = s.histogram([0, 100, 300], axis=0)
    assert c2.tolist() == s.count_many([[0, -20, 0], [100, -20, 0]], [[99, 19, 4], [300, 19, 4]],
                                       nonnegative=True).tolist()


def test_histogram_of_a_date_axis_with_bars():
    g = np.random.default_rng(2)
    days = (np.datetime64("2001-01-01") + g.integers(0, 90, 800)).astype(str)
    pts = np.stack([days, g.integers(0, 10, 800).astype(str)], axis=1).astype(object)
    s = ps.RectangleSynopsis.build(pts, domain=[("2001-01-01", "2001-03-31"), (0, 9)],
                                   columns=[ps.Column.date("day"), ps.Column.integer("k")],
                                   epsilon=1.0, rng=ps.Rng(seed=5))
    counts, edges, bars = s.histogram(["2001-01-01", "2001-02-01", "2001-03-31"], axis="day",
                                      confidence=0.95)
    assert edges.astype("datetime64[D]").astype(str).tolist() == ["2001-01-01", "2001-02-01",
                                                                   "2001-03-31"]
    want = s.count_many([["2001-01-01", 0], ["2001-02-01", 0]],
                        [["2001-01-31", 9], ["2001-03-31", 9]], nonnegative=True)
    assert counts.tolist() == want.tolist() and (bars.low <= counts).all()
