"""RectangleSynopsis.count_levels: a set of levels of the category axis and a range on the
others, as the sum of the boxes of its runs of consecutive codes; error bars; bad input."""
import numpy as np
import pytest

import pydp_synopsis as ps

LEVELS = ["AA", "DL", "UA", "WN", "B6"]


def _data(n=3000, seed=0):
    g = np.random.default_rng(seed)
    car = np.array(LEVELS + ["XX"], dtype=object)[g.integers(0, 6, n)]
    days = (np.datetime64("2001-01-01") + g.integers(0, 90, n).astype("timedelta64[D]"))
    hours = g.integers(0, 24, n)
    return car, days, hours


def _build(structure="multitree", epsilon=1.0, seed=4, **kw):
    car, days, hours = _data()
    cols = [ps.Column.date("day"), ps.Column.category(LEVELS, other="other", name="carrier"),
            ps.Column.integer("hour")]
    pts = np.empty((car.size, 3), dtype=object)
    pts[:, 0], pts[:, 1], pts[:, 2] = days.astype(str), car, hours
    syn = ps.RectangleSynopsis.build(pts, domain=[("2001-01-01", "2001-03-31"), ("AA", "other"),
                                                  (0, 23)], columns=cols, epsilon=epsilon,
                                     structure=structure, rng=ps.Rng(seed=seed), **kw)
    return syn, car, days, hours


@pytest.fixture(scope="module", params=["adaptive", "multitree"])
def noisy(request):
    return _build(request.param)


def test_the_sum_of_the_runs_boxes(noisy):
    syn = noisy[0]
    # codes: AA 0, DL 1, UA 2, WN 3, B6 4, other 5; {AA, UA, WN, other} = runs [0], [2, 3], [5]
    lo = [["2001-01-10", "AA", 6], ["2001-01-10", "UA", 6], ["2001-01-10", "other", 6]]
    hi = [["2001-02-20", "AA", 18], ["2001-02-20", "WN", 18], ["2001-02-20", "other", 18]]
    answers, std = syn.count_many(np.array(lo, dtype=object), np.array(hi, dtype=object),
                                  return_std=True)
    got, spread = syn.count_levels(["WN", "other", "AA", "UA"], ["2001-01-10", 6],
                                   ["2001-02-20", 18], return_std=True)
    assert got == pytest.approx(float(answers.sum()), rel=1e-12, abs=1e-9)
    assert spread == pytest.approx(float(std.sum()), rel=1e-12)
    one, one_std = syn.count_levels(["UA", "WN"], ["2001-01-10", 6], ["2001-02-20", 18],
                                    return_std=True)
    assert (one, one_std) == (answers[1], std[1])          # one run: the box's exact std
    whole = syn.count_levels("DL")
    assert whole == syn.count(["2001-01-01", "DL", 0], ["2001-03-31", "DL", 23])
    assert syn.count_levels(["DL"], axis="carrier") == syn.count_levels(["DL"], axis=1) == whole


def test_noise_free_counts_are_the_true_counts():
    syn, car, days, hours = _build("multitree", epsilon=1e9, threshold=0)
    sel = np.isin(car, ["AA", "UA"])
    assert round(syn.count_levels(["AA", "UA"])) == int(sel.sum())
    inside = sel & (days <= np.datetime64("2001-02-15")) & (hours >= 12)
    assert round(syn.count_levels(["UA", "AA"], ["2001-01-01", 12], ["2001-02-15", 23])) == \
        int(inside.sum())
    other = ~np.isin(car, LEVELS)
    assert round(syn.count_levels("other")) == int(other.sum())


@pytest.mark.slow
def test_error_bars_cover_the_truth_at_the_stated_spread():
    # the answer minus the truth is the noise (no bias without a partition threshold's
    # merging: threshold 0, multi-tree); its std is at most the reported spread
    syn, car, days, hours = _build("multitree", epsilon=1.0, threshold=0)
    truth = int(np.isin(car, ["AA", "UA", "B6"]).sum())
    errs, spreads = [], []
    for seed in range(30):
        s = _build("multitree", epsilon=1.0, threshold=0, seed=100 + seed)[0]
        got, spread = s.count_levels(["AA", "UA", "B6"], return_std=True)
        errs.append(got - truth)
        spreads.append(spread)
    # Chebyshev at alpha = 1e-6 on the mean of 30 independent errors of std <= spread
    bound = max(spreads) / np.sqrt(30) / np.sqrt(1e-6)
    assert abs(np.mean(errs)) <= bound
    assert max(spreads) > 0


@pytest.mark.parametrize("call, exc, text", [
    (lambda s: s.count_levels(["ZZ"]), ps.DomainError, "'ZZ' is not a level"),
    (lambda s: s.count_levels([]), ps.ParameterError, "at least one level"),
    (lambda s: s.count_levels(["AA", "AA"]), ps.ParameterError, "distinct"),
    (lambda s: s.count_levels(["AA"], axis=0), ps.ParameterError,
     "axis 0 is not a category axis"),
    (lambda s: s.count_levels(["AA"], axis=7), ps.ParameterError, r"axis must be an int in"),
    (lambda s: s.count_levels(["AA"], ["2001-01-01"], ["2001-02-01", 3]), ps.ParameterError,
     r"lo must give one value per axis other than the category axis \(2\)"),
    (lambda s: s.count_levels(["AA"], return_std=1), TypeError, "return_std must be a bool"),
])
def test_bad_input_refused_in_one_line(noisy, call, exc, text):
    with pytest.raises(exc, match=text) as info:
        call(noisy[0])
    assert "\n" not in str(info.value)


def test_a_synopsis_without_a_category_axis_is_refused():
    s = ps.RectangleSynopsis.build([[1, 2], [3, 4]], domain=[(0, 7), (0, 7)], epsilon=1,
                                   rng=ps.Rng(seed=1))
    with pytest.raises(ps.ParameterError, match="needs a category axis; this synopsis has no"):
        s.count_levels(["AA"])


def test_counts_by_level_are_the_level_boxes_intervals(noisy):
    syn = noisy[0]
    levels, counts, bars = syn.counts_by_level(["2001-01-10", 6], ["2001-02-20", 18],
                                               confidence=0.9, nonnegative=True)
    assert levels == tuple(LEVELS) + ("other",)
    lo = np.array([["2001-01-10", lv, 6] for lv in levels], dtype=object)
    hi = np.array([["2001-02-20", lv, 18] for lv in levels], dtype=object)
    ref = syn.confidence_intervals(lo, hi, 0.9, nonnegative=True)
    assert counts.tolist() == ref.answer.tolist() and bars.high.tolist() == ref.high.tolist()
    assert counts.tolist() == [max(syn.count_levels(lv, ["2001-01-10", 6],
                                                    ["2001-02-20", 18]), 0.0) for lv in levels]
    with pytest.raises(ps.ParameterError, match="confidence"):
        syn.counts_by_level(confidence=1.5)
