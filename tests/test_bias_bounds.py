"""Per-query intervals from released numbers: the rigorous snapped interval and the calibrated model.

Exact arithmetic on hand-built partitions and small synopses, coverage at alpha = 1e-6
(rigorous: on synthetic data, one query per build; calibrated: on the real data shipped in
the repository, slow tier), and bad arguments.
"""
import math
import pathlib
from statistics import NormalDist

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.bias_bounds import (CONCENTRATION, calibrated_interval, cut_variance,
                                       excess_kurtosis, noise_quantile, snapped_interval,
                                       split_delta)
from pydp_synopsis.errorbars import METHODS, CalibratedErrorBars, ErrorBars
from pydp_synopsis.interval_bars import segment_snaps
from stattests import ALPHA, assert_binomial_at_most, clopper_pearson

HERE = pathlib.Path(__file__).parent
Z95 = NormalDist().inv_cdf(0.975)


def _u64(*x):
    return np.array(x, dtype=np.uint64)


# ------------------------------------------------------------ the arithmetic
def test_segment_snaps_on_a_hand_built_partition():
    ends = _u64(9, 19, 29, 39)          # segments [0, 9] [10, 19] [20, 29] [30, 39]
    cases = [  # lo, hi -> has_inner, inner, outer, cut_l, cut_r, f_l, f_r
        (10, 29, True, (10, 29), (10, 29), False, False, 0.0, 0.0),     # whole segments
        (5, 29, True, (10, 29), (0, 29), True, False, 0.5, 0.0),         # left end cut
        (5, 34, True, (10, 29), (0, 39), True, True, 0.5, 0.5),          # both cut
        (12, 14, False, None, (10, 19), True, False, 0.3, 0.0),          # inside one segment
        (15, 24, False, None, (10, 29), True, True, 0.5, 0.5),           # two cut, none inside
        (0, 9, True, (0, 9), (0, 9), False, False, 0.0, 0.0),            # one whole segment
        (0, 0, False, None, (0, 9), True, False, 0.1, 0.0),
    ]
    lo = _u64(*[c[0] for c in cases])
    hi = _u64(*[c[1] for c in cases])
    k, r = np.searchsorted(ends, lo), np.searchsorted(ends, hi)
    has, in_lo, in_hi, out_lo, out_hi, cut_l, cut_r, f_l, f_r = segment_snaps(ends, k, r, lo, hi)
    for i, (_, _, h, inner, outer, cl, cr, fl, fr) in enumerate(cases):
        assert bool(has[i]) is h
        if h:
            assert (int(in_lo[i]), int(in_hi[i])) == inner
        assert (int(out_lo[i]), int(out_hi[i])) == outer
        assert (bool(cut_l[i]), bool(cut_r[i])) == (cl, cr)
        assert f_l[i] == pytest.approx(fl) and f_r[i] == pytest.approx(fr)


def test_split_snapped_and_model_arithmetic():
    log_in, log_out = split_delta(np.array([True, False]), 0.1)
    assert log_in[0] == pytest.approx(math.log(20)) and log_out[0] == pytest.approx(math.log(20))
    assert log_in[1] == math.inf and log_out[1] == pytest.approx(math.log(10))
    # the interval never excludes the answer, never goes below 0, and I, O in either order
    low, high, noise, bias = snapped_interval(
        np.array([12.0, 3.0, -5.0]), np.array([10.0, 8.0, 0.0]), np.array([3.0, 1.0, 0.0]),
        np.array([15.0, 6.0, -2.0]), np.array([4.0, 2.0, 1.0]))
    np.testing.assert_allclose(low, [7.0, 3.0, 0.0])
    np.testing.assert_allclose(high, [19.0, 10.0, 1.0])
    np.testing.assert_allclose(noise, [3.5, 1.5, 0.5])
    np.testing.assert_allclose(bias, (high - low) / 2 - noise)
    # f (1 - f) C (C + nu) / (1 + nu), nu = 2 f, C clipped at 0, f clipped to [0, 1]
    v = cut_variance(np.array([0.25, 1.0, 0.5, 0.5, 1.5]), np.array([12.0, 50.0, -3.0, 4.0, 9.0]),
                     concentration=2.0)
    np.testing.assert_allclose(v, [0.1875 * 12 * 12.5 / 1.5, 0.0, 0.0, 0.25 * 4 * 5 / 2, 0.0])
    nu = CONCENTRATION * 0.5
    assert cut_variance(np.array([0.5]), np.array([4.0]))[0] == pytest.approx(
        0.25 * 4 * (4 + nu) / (1 + nu))
    low, high = calibrated_interval(np.array([10.0, 1.0]), np.array([2.0, 2.0]),
                                    np.array([1.0, 9.0]), 0.95)
    half = np.sqrt(4.0 + Z95 ** 2 * np.array([1.0, 9.0]))
    np.testing.assert_allclose(high, [10.0, 1.0] + half)
    np.testing.assert_allclose(low, [10.0 - half[0], 0.0])


def test_noise_quantile_is_cornish_fisher_with_the_kurtosis_bound():
    b = 2.0
    a = math.exp(-1 / b)
    var = 2 * a / (1 - a) ** 2
    fourth = 2 * a * (1 + 10 * a + a * a) / (1 - a) ** 4
    assert excess_kurtosis(b) == pytest.approx(fourth / var ** 2 - 3)
    # the kurtosis against an explicit pmf sum
    z = np.arange(-400, 401)
    pmf = a ** np.abs(z)
    pmf /= pmf.sum()
    assert excess_kurtosis(b) == pytest.approx(
        float(np.sum(pmf * z ** 4)) / float(np.sum(pmf * z ** 2)) ** 2 - 3, rel=1e-9)
    # 4 equal weights 0.5: sum w^2 = 1, max |w| = 0.5, g = k / 4
    std = np.array([math.sqrt(var)])
    q = noise_quantile(std, np.array([[1.0]]), np.array([[0.5]]), [b], 0.95)
    g = excess_kurtosis(b) * 0.25
    assert q[0] == pytest.approx(std[0] * (Z95 + g * (Z95 ** 3 - 3 * Z95) / 24))
    # a single term: its 95% quantile within 3% of the exact discrete Laplace quantile
    one = noise_quantile(std, np.array([[1.0]]), np.array([[1.0]]), [b], 0.95)[0]
    cdf = np.cumsum(pmf[400:] * np.where(z[400:] == 0, 1, 2))
    exact = int(np.searchsorted(cdf, 0.95))
    assert exact - 1 <= one <= exact * 1.03


def test_error_bars_say_which_method():
    assert METHODS == ("rigorous", "calibrated")
    bars = ErrorBars(*(np.zeros(1),) * 6)
    assert bars.method == "rigorous" and CalibratedErrorBars(*bars).method == "calibrated"
    assert isinstance(CalibratedErrorBars(*bars), ErrorBars)
    assert bars._replace(answer=np.ones(1)).method == "rigorous"
    assert CalibratedErrorBars(*bars)._replace(low=np.ones(1)).method == "calibrated"


# ------------------------------------------- the interval synopsis, exactly
@pytest.fixture(scope="module")
def small():
    values = np.repeat(np.arange(0, 4000, 7), np.arange(0, 4000, 7) % 3 + 1)
    s = ps.IntervalSynopsis.build(values, domain=(0, 3999), epsilon=1.0, rng=ps.Rng(seed=50))
    return values, s


def _truth(values, lo, hi):
    srt = np.sort(values)
    return np.searchsorted(srt, hi, side="right") - np.searchsorted(srt, lo, side="left")


def test_rigorous_interval_is_the_snapped_ranges_answers_and_tails(small):
    values, s = small
    e = s.partition.end_offsets.astype(np.int64)
    assert len(e) >= 8 and np.all(np.diff(e)[:8] > 2)
    lo = np.array([e[1] + 1, e[1] + 2, e[1] + 2, e[1] + 2, e[1] + 2])
    hi = np.array([e[5], e[5], e[5] - 1, e[1] + 2, e[2] - 1])
    bars = s.confidence_intervals(lo, hi, 0.9)
    assert bars.method == "rigorous"
    # the inner / outer ranges of whole segments, answered and bounded on their own
    in_lo, in_hi = np.array([e[1] + 1, e[2] + 1, e[2] + 1]), np.array([e[5], e[5], e[4]])
    out_lo, out_hi = np.array([e[1] + 1, e[1] + 1, e[1] + 1, e[1] + 1, e[1] + 1]), \
        np.array([e[5], e[5], e[5], e[2], e[2]])
    inner = s.count_many(in_lo, in_hi)
    outer = s.count_many(out_lo, out_hi)
    # a whole-segment query is its own inner and outer range: its half-width is its tail
    # at log(2 / delta) on each side
    whole = s.confidence_intervals(in_lo, in_hi, 0.9)
    np.testing.assert_allclose(whole.high - whole.answer, whole.noise)
    np.testing.assert_allclose(whole.answer - whole.low, np.minimum(whole.noise, whole.answer))
    np.testing.assert_allclose(bars.low[:3], np.maximum(np.minimum(
        np.minimum(inner, outer[:3]) - whole.noise, bars.answer[:3]), 0))
    t_out = s.confidence_intervals(out_lo, out_hi, 0.9).noise
    np.testing.assert_allclose(bars.high[:3], np.maximum(np.maximum(inner, outer[:3]) + t_out[:3],
                                                         bars.answer[:3]))
    # inside one segment / two cut segments with none inside: [0, O + its tail at
    # log(1 / delta)], the whole-range tail of confidence 0.8 (log(2 / 0.2) = log(1 / 0.1))
    np.testing.assert_array_equal(bars.low[3:], 0.0)
    t_one = s.confidence_intervals(out_lo[3:], out_hi[3:], 0.8).noise
    np.testing.assert_allclose(bars.high[3:], np.maximum(np.maximum(outer[3:], 0) + t_one,
                                                         bars.answer[3:]))
    # the widths: noise part the mean of the two tails, bias what is left
    np.testing.assert_allclose(bars.high - bars.low, 2 * (bars.noise + bars.bias))
    assert np.all(bars.bias >= 0)
    assert bars.bias[0] == pytest.approx(0.0, abs=1e-9)          # whole segments: no bias


def test_rigorous_interval_of_a_noiseless_release_is_the_snapped_truth():
    # epsilon 1e6: the noise is 0 (scale 1e-6) and the tails vanish, so the interval is
    # [true count of the inner range, true count of the outer range], exactly
    values = np.array([3, 3, 5, 8, 8, 8, 12, 13, 21, 22, 22, 30])
    s = ps.IntervalSynopsis.build(values, domain=(0, 31), epsilon=1e6, estimator="uniform",
                                  rng=ps.Rng(seed=51))
    ends = s.partition.end_offsets.astype(np.int64)
    gen = np.random.default_rng(1)
    a, b = gen.integers(0, 32, (2, 200))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    bars = s.confidence_intervals(lo, hi, 0.95)
    k, r = np.searchsorted(ends, lo), np.searchsorted(ends, hi)
    first = np.where(k == 0, 0, ends[np.maximum(k, 1) - 1] + 1)
    first_r = np.where(r == 0, 0, ends[np.maximum(r, 1) - 1] + 1)
    outer = _truth(values, first, ends[r])
    ia = np.where(lo == first, k, k + 1)
    ib = np.where(hi == ends[r], r, r - 1)
    inner = np.where(ia <= ib, _truth(values, np.where(ia == 0, 0, ends[np.maximum(ia, 1) - 1] + 1),
                                      ends[np.maximum(ib, 0)]), 0)
    np.testing.assert_allclose(bars.low, np.minimum(inner, bars.answer).clip(0), atol=0.02)
    np.testing.assert_allclose(bars.high, np.maximum(outer, bars.answer), atol=0.02)
    true = _truth(values, lo, hi)
    assert np.all((bars.low - 0.02 <= true) & (true <= bars.high + 0.02))
    # calibrated: the answer -+ sqrt(q^2 + z^2 sum_cut f (1 - f) C (C + nu) / (1 + nu))
    cal = s.confidence_intervals(lo, hi, 0.95, method="calibrated")
    assert cal.method == "calibrated"
    single = k == r
    f_l = np.where(single, hi - lo + 1, ends[k] - lo + 1) / (ends[k] - first + 1)
    f_r = (hi - first_r + 1) / (ends[r] - first_r + 1)
    cut_l = ~((lo == first) & ((hi == ends[r]) | ~single))
    cut_r = ~single & (hi != ends[r])
    c_k, c_r = _truth(values, first, ends[k]), _truth(values, first_r, ends[r])
    var = (np.where(cut_l, cut_variance(f_l, c_k), 0.0) + np.where(cut_r, cut_variance(f_r, c_r),
                                                                   0.0))
    # ... clipped at what the cut segments can hold above the answer: sum (1 - f) C
    above = np.where(cut_l, (1 - f_l) * c_k, 0.0) + np.where(cut_r, (1 - f_r) * c_r, 0.0)
    np.testing.assert_allclose(cal.high - cal.answer, np.minimum(
        np.sqrt(cal.noise ** 2 + Z95 ** 2 * var), cal.noise + above), atol=0.02)
    assert (np.sqrt(Z95 ** 2 * var) > above + 0.1).any()        # the clip matters
    np.testing.assert_allclose(cal.noise, 0.0, atol=0.02)


def test_calibrated_falls_back_to_rigorous_for_other_estimators(small):
    values, _ = small
    for estimator in ("cover", "seal", "seal_uniform"):
        s = ps.IntervalSynopsis.build(values, domain=(0, 3999), epsilon=1.0, estimator=estimator,
                                      partition="dnrr", rng=ps.Rng(seed=52))
        cal = s.confidence_intervals([5, 100], [3000, 105], 0.9, method="calibrated")
        rig = s.confidence_intervals([5, 100], [3000, 105], 0.9)
        assert cal.method == rig.method == "rigorous"
        for x, y in zip(cal, rig):
            np.testing.assert_array_equal(x, y)


def test_kary_and_raw_trees_give_snapped_intervals(small):
    values, _ = small
    for kw in ({"structure": "kary"}, {"consistency": False, "fanout": 4}, {"level_ratio": 1}):
        s = ps.IntervalSynopsis.build(values, domain=(0, 3999), epsilon=1.0, rng=ps.Rng(seed=53),
                                      **kw)
        e = s.partition.end_offsets.astype(np.int64)
        bars = s.confidence_intervals([e[0] + 2], [e[3] - 1], 0.8)
        inner = s.confidence_intervals([e[1] + 1], [e[2]], 0.8)
        assert bars.low[0] == pytest.approx(max(min(inner.answer[0] - inner.noise[0],
                                                    bars.answer[0]), 0.0))
        for m in METHODS:
            b = s.confidence_intervals([0, 10], [3999, 3000], 0.95, method=m)
            assert np.all(b.low <= b.answer) and np.all(b.answer <= b.high)


# --------------------------------------------------------------- rectangles
def test_multitree_rigorous_interval_of_a_noiseless_release_is_the_snapped_truth():
    pts = np.array([[16 * x, 16 * ((5 * x) % 64)] for x in range(64)] * 3)
    s = ps.RectangleSynopsis.build(pts, domain=[(0, 1023), (0, 1023)], epsilon=1e6,
                                   structure="multitree", fanout=2, merge=1, prune=None,
                                   rng=ps.Rng(seed=54))
    e = [p.end_offsets.astype(np.int64) for p in s.partitions]
    assert all(len(x) >= 4 for x in e)
    # whole segments; lo cut on axis 0 and hi cut on axis 1; inside one cell
    lo = np.array([[e[0][0] + 1, e[1][0] + 1], [e[0][0] + 2, e[1][0] + 1],
                   [e[0][1] + 1, e[1][1] + 1]])
    hi = np.array([[e[0][2], e[1][2]], [e[0][2], e[1][2] - 1], [e[0][1] + 1, e[1][1] + 1]])
    assert e[0][1] - e[0][0] > 1 and e[1][2] - e[1][1] > 1 and e[0][2] - e[0][1] > 1
    in_lo = np.array([lo[0], [e[0][1] + 1, e[1][0] + 1]])
    in_hi = np.array([hi[0], [e[0][2], e[1][1]]])
    out_lo = np.array([lo[0], [e[0][0] + 1, e[1][0] + 1], [e[0][1] + 1, e[1][1] + 1]])
    out_hi = np.array([hi[0], [e[0][2], e[1][2]], [e[0][2], e[1][2]]])

    def truth(a, b):
        return np.array([np.all((pts >= x) & (pts <= y), axis=1).sum() for x, y in zip(a, b)])

    bars = s.confidence_intervals(lo, hi, 0.9)
    inner = np.append(truth(in_lo, in_hi), 0)
    np.testing.assert_allclose(bars.low, np.minimum(inner, bars.answer).clip(0), atol=0.02)
    np.testing.assert_allclose(bars.high, np.maximum(truth(out_lo, out_hi), bars.answer),
                               atol=0.02)
    true = truth(lo, hi)
    assert np.all((bars.low - 0.02 <= true) & (true <= bars.high + 0.02))
    # calibrated: each cut slab (the cut tree segment x the outer box) at its fraction
    cal = s.confidence_intervals(lo[1:2], hi[1:2], 0.9, method="calibrated")
    slab0 = truth([[e[0][0] + 1, e[1][0] + 1]], [[e[0][1], e[1][2]]])[0]
    slab1 = truth([[e[0][0] + 1, e[1][1] + 1]], [[e[0][2], e[1][2]]])[0]
    f0 = (e[0][1] - lo[1, 0] + 1) / (e[0][1] - e[0][0])
    f1 = (hi[1, 1] - e[1][1]) / (e[1][2] - e[1][1])
    var = cut_variance(np.array([f0, f1]), np.array([slab0, slab1], dtype=float)).sum()
    z = NormalDist().inv_cdf(0.95)
    above = (1 - f0) * slab0 + (1 - f1) * slab1
    assert cal.high[0] - cal.answer[0] == pytest.approx(
        min(math.sqrt(cal.noise[0] ** 2 + z * z * var), cal.noise[0] + above), abs=0.02)


def test_rectangle_methods_and_fallbacks():
    pts = np.random.default_rng(9).integers(0, 2**10, (2000, 2))
    dom = [(0, 2**10 - 1)] * 2
    lo, hi = np.array([[0, 0], [100, 200]]), np.array([[1023, 1023], [300, 260]])
    grid = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1.0, rng=ps.Rng(seed=55))
    tree = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1.0, structure="multitree",
                                      prune=None, rng=ps.Rng(seed=55))
    cover = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1.0, estimator="cover",
                                       prune=None, rng=ps.Rng(seed=55))
    dnrr = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1.0, config="dnrr",
                                      rng=ps.Rng(seed=55))
    for s, cal in ((grid, "calibrated"), (tree, "calibrated"), (cover, "rigorous"),
                   (dnrr, "rigorous")):
        assert s.confidence_intervals(lo, hi, 0.9).method == "rigorous"
        b = s.confidence_intervals(lo, hi, 0.9, method="calibrated")
        assert b.method == cal
        np.testing.assert_allclose(b.high - b.low, 2 * (b.noise + b.bias))
        assert np.all(b.low >= 0) and np.all(b.low <= b.answer) and np.all(b.answer <= b.high)
    # the grid's rigorous interval: answer -+ (noise + released bias), low clipped at 0
    g = grid.confidence_intervals(lo, hi, 0.9)
    assert g.low[0] > 0 and g.low[1] == 0
    assert g.high[0] - g.answer[0] == pytest.approx(g.answer[0] - g.low[0])


# ------------------------------------------------------------------ coverage
def _interval_hits(values, domain, builds, confidence, method, seed, width=None):
    """One query per build (independent hits): endpoints on data values, or a window of
    ``width`` centred on one."""
    srt = np.sort(values)
    gen, rng = np.random.default_rng(seed), ps.Rng(seed=seed)
    hits = narrow = 0
    for _ in range(builds):
        s = ps.IntervalSynopsis.build(values, domain=domain, epsilon=1.0, rng=rng)
        if width is None:
            a, b = gen.choice(values, 2)
            lo, hi = min(a, b), max(a, b)
        else:
            c, w = int(gen.choice(values)), int(gen.integers(1, width + 1))
            lo, hi = max(domain[0], c - w // 2), min(domain[1], c + w // 2)
        true = np.searchsorted(srt, hi, side="right") - np.searchsorted(srt, lo, side="left")
        bars = s.confidence_intervals([lo], [hi], confidence, method=method)
        hits += bool(bars.low[0] <= true <= bars.high[0])
        narrow += bool(abs(bars.answer[0] - true) <= bars.std[0])
    return hits, narrow


def test_rigorous_coverage_on_synthetic_data():
    # the theorem: misses at most 1 - confidence (binomial at alpha 1e-6; one query per
    # build); a clumped data set with duplicates, whose boundary segments hold the clumps
    gen = np.random.default_rng(10)
    values = np.concatenate([gen.integers(0, 10**5, 600), np.full(150, 4321),
                             gen.normal(70_000, 300, 400).astype(np.int64)])
    runs = 150
    for confidence, width in ((0.95, None), (0.8, 2000)):
        hits, narrow = _interval_hits(values, (0, 10**5 - 1), runs, confidence, "rigorous",
                                      seed=11, width=width)
        assert_binomial_at_most(runs - hits, runs, 1 - confidence)
        # the same test flags one-sigma bars (it can fail)
        lo, _ = clopper_pearson(runs - narrow, runs, 2 * ALPHA)
        assert lo > 1 - confidence


def test_rigorous_rectangle_coverage_on_synthetic_clusters():
    gen = np.random.default_rng(12)
    centres = gen.integers(0, 2**12, (4, 2))
    pts = np.clip(centres[gen.integers(0, 4, 1500)] + gen.normal(0, 60, (1500, 2)), 0,
                  2**12 - 1).astype(np.int64)
    rng, runs, hits = ps.Rng(seed=13), 100, 0
    for i in range(runs):
        kw = {} if i % 2 else {"structure": "multitree", "prune": None}
        s = ps.RectangleSynopsis.build(pts, domain=[(0, 2**12 - 1)] * 2, epsilon=1.0, rng=rng,
                                       **kw)
        a = pts[gen.integers(0, len(pts), 2)]
        lo, hi = a.min(axis=0), a.max(axis=0)
        true = int(np.all((pts >= lo) & (pts <= hi), axis=1).sum())
        bars = s.confidence_intervals(lo[None], hi[None], 0.9)
        hits += bool(bars.low[0] <= true <= bars.high[0])
    assert_binomial_at_most(runs - hits, runs, 0.1)


def _real(name):
    if name == "flights":
        return np.load(HERE / "data" / "flights-2001h1.npz")["minute"].astype(np.int64), \
            (0, 260640)
    z = np.load(HERE.parent / "pydp_synopsis" / "data" / "zipcodes.npz")
    return z["latitude_e6"].astype(np.int64), (-90 * 10**6, 90 * 10**6)


@pytest.mark.slow
@pytest.mark.parametrize("name,width", [("flights", 120), ("flights", 20_000),
                                        ("zipcodes", 100_000), ("zipcodes", 5 * 10**6)])
def test_calibrated_coverage_on_real_data(name, width):
    # a model, so a measurement: short and medium windows centred on data points, one per
    # build; the hit rate must be consistent with >= 0.95 (Clopper-Pearson, alpha 1e-6)
    values, domain = _real(name)
    runs = 400
    hits, _ = _interval_hits(values, domain, runs, 0.95, "calibrated", seed=14, width=width)
    assert_binomial_at_most(runs - hits, runs, 0.05)


# ------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("kw,exc,word", [
    ({"method": "exact"}, ps.ParameterError, "method"),
    ({"method": None}, TypeError, "method"),
    ({"method": 1}, TypeError, "method"),
    ({"confidence": 1.0, "method": "calibrated"}, ps.ParameterError, "confidence"),
    ({"confidence": 0.0, "method": "calibrated"}, ps.ParameterError, "confidence"),
    ({"confidence": -0.1}, ps.ParameterError, "confidence"),
    ({"confidence": float("inf"), "method": "calibrated"}, ps.ParameterError, "confidence"),
])
def test_bad_arguments_are_refused(small, kw, exc, word):
    _, s = small
    rect = ps.RectangleSynopsis.build([[1, 1], [2, 3]], domain=[(0, 7), (0, 7)], epsilon=1.0,
                                      rng=ps.Rng(seed=56))
    with pytest.raises(exc, match=word):
        s.confidence_intervals([1], [2], **kw)
    with pytest.raises(exc, match=word):
        rect.confidence_intervals([[1, 1]], [[2, 2]], **kw)
    # a bad method is named before the queries are read
    with pytest.raises(exc, match=word):
        s.confidence_intervals([3], [2], **kw)


def test_confidence_beyond_the_partition_share_is_fine_now(small):
    # the intervals read released counts: no share of beta, any confidence in (0, 1)
    _, s = small
    for m in METHODS:
        b = s.confidence_intervals([0], [3999], 0.999, method=m)
        assert np.isfinite(b.high).all()
