"""Range sums and means (IntervalSynopsis.build(sum_of=..., sum_bounds=...)): exact answers at
a huge epsilon, the sum tree's noise law (chi-square at alpha = 1e-6), the error bars, the
budget, save/load, and every bad input refused before any budget or randomness."""
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.errors import QueryClippedWarning
from pydp_synopsis import persist
from pydp_synopsis.errors import FormatError, InputError, ParameterError
from pydp_synopsis.noise import discrete_laplace_variance
from pydp_synopsis.range_sums import DEFAULT_SUM_SHARE, RangeSums

from stattests import assert_gof, assert_mean_var, assert_binomial_at_most


def _data(n=3000, seed=0, hi=999):
    g = np.random.default_rng(seed)
    return g.integers(0, hi + 1, n), g.integers(-5, 60, n)


def _blocks(syn):
    """Inclusive (lo, hi) of every block of the sum tree (whole blocks: no apportioning)."""
    ends = np.asarray(syn.sums.block_ends, dtype=np.int64)
    starts = np.concatenate(([syn.domain[0]], ends[:-1] + 1))
    return starts, ends


def _true_sums(x, v, lo, hi):
    return np.array([v[(x >= a) & (x <= b)].sum() for a, b in zip(lo, hi)])


# ------------------------------------------------------------------ exact answers
def test_whole_blocks_exact_at_huge_epsilon():
    x, v = _data()
    syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=1e6, sum_of=v,
                                    sum_bounds=(0, 50), rng=ps.Rng(seed=3))
    syn.sums._check()
    vc = np.clip(v, 0, 50)
    lo, hi = _blocks(syn)
    assert np.array_equal(np.round(syn.sum_many(lo, hi)), _true_sums(x, vc, lo, hi))
    assert round(syn.sum(0, 999)) == vc.sum()
    counts = np.array([np.count_nonzero((x >= a) & (x <= b)) for a, b in zip(lo, hi)])
    want = _true_sums(x, vc, lo, hi) / np.maximum(counts, 1)
    got = syn.mean_many(lo, hi)
    assert np.allclose(got[counts > 0], want[counts > 0], atol=1e-3)


def test_shifted_bounds_and_negative_values_exact():
    x, v = _data(seed=1)
    syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=1e6, sum_of=v,
                                    sum_bounds=(-3, 40), rng=ps.Rng(seed=4))
    vc = np.clip(v, -3, 40)
    lo, hi = _blocks(syn)
    assert np.array_equal(np.round(syn.sum_many(lo, hi)), _true_sums(x, vc, lo, hi))
    assert round(syn.sum(0, 999)) == vc.sum()
    assert syn.mean(0, 999) == pytest.approx(vc.mean(), abs=1e-3)


def test_decimal_values_with_sum_scale_exact():
    g = np.random.default_rng(2)
    x = g.integers(0, 99, 2000)
    cents = g.integers(0, 10_000, 2000)
    fares = cents / 100                                      # 0.00 .. 99.99
    syn = ps.IntervalSynopsis.build(x, domain=(0, 99), epsilon=1e6, sum_of=fares,
                                    sum_bounds=("0", "80.5"), sum_scale=100,
                                    rng=ps.Rng(seed=5))
    assert syn.sums.user_bounds == (Decimal("0.00"), Decimal("80.50"))
    assert syn.sums.unit == 100 and syn.sums.bounds == (0, 8050)
    want = np.clip(cents, 0, 8050).sum() / 100
    assert syn.sum(0, 99) == pytest.approx(want, abs=1e-6)


def test_clipping_counts_values_at_the_bounds():
    x = np.array([1, 1, 2, 2])
    v = np.array([-100, 5, 7, 1000])
    syn = ps.IntervalSynopsis.build(x, domain=(0, 3), epsilon=1e6, sum_of=v,
                                    sum_bounds=(0, 10), rng=ps.Rng(seed=6))
    assert round(syn.sum(0, 3)) == 0 + 5 + 7 + 10
    # how many values were clipped is never computed: the record holds public facts only
    assert set(syn._to_record()[1]["sums"]) == {"column", "bounds", "epsilon", "block"}


def test_user_units_on_x_dates():
    days = np.array(["2001-01-05", "2001-02-10", "2001-02-11", "2001-03-01"],
                    dtype="datetime64[D]")
    v = np.array([10, 20, 30, 40])
    syn = ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-12-31"), epsilon=1e6,
                                    sum_of=v, sum_bounds=(0, 100), estimator="cover",
                                    rng=ps.Rng(seed=7))
    assert round(syn.sum("2001-01-01", "2001-12-31")) == 100


# ------------------------------------------------------------------ noise law
def _dlap_probs(b, k):
    q = math.exp(-1 / float(b))
    z = np.arange(-k, k + 1)
    return z, (1 - q) / (1 + q) * q ** np.abs(z)


@pytest.mark.parametrize("level_ratio", [1, Fraction(7, 4)])
def test_leaf_noise_is_discrete_laplace_of_scale_u_over_epsilon(level_ratio):
    """A whole block's answer from the raw tree is its leaf: true shifted sum plus one
    discrete Laplace draw of the leaves' scale U * L / epsilon_sum (equal levels)."""
    x, v = _data(n=40000, seed=8, hi=16383)
    noises, scale = [], None
    for seed in range(14):
        syn = ps.IntervalSynopsis.build(x, domain=(0, 16383), epsilon=6, sum_of=v,
                                        sum_bounds=(0, 3), consistency=False,
                                        estimator="cover", level_ratio=level_ratio,
                                        rng=ps.Rng(seed=100 + seed))
        b = syn.sums.noise_scales[0]
        assert scale is None or b == scale
        scale = b
        lo, hi = _blocks(syn)
        noises.append(np.round(syn.sum_many(lo, hi)).astype(np.int64)
                      - _true_sums(x, np.clip(v, 0, 3), lo, hi))
        std = syn.sum_many(lo, hi, return_std=True)[1]
        assert np.allclose(std, math.sqrt(discrete_laplace_variance(b)))
    eps_s = Fraction(6) * Fraction(3, 4) * DEFAULT_SUM_SHARE
    if level_ratio == 1:
        assert scale == syn.sums.noise_scale == 3 * syn.sums._levels / eps_s
    else:
        r = Fraction(level_ratio)
        assert scale == 3 * (r + syn.sums._levels - 1) / (eps_s * r)
    z = np.concatenate(noises)
    assert z.size > 2000
    k = int(12 * float(scale))
    support, probs = _dlap_probs(scale, k)
    counts = np.array([np.count_nonzero(z == s) for s in support] + [np.count_nonzero(
        np.abs(z) > k)])
    assert_gof(counts, probs)


def test_consistent_sum_errors_match_their_std():
    """Standardised errors of whole-segment ranges (consistent tree): mean 0, variance 1."""
    x, v = _data(n=5000, seed=9)
    z = []
    for seed in range(40):
        syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=2, sum_of=v,
                                        sum_bounds=(0, 20), rng=ps.Rng(seed=200 + seed))
        lo, hi = _blocks(syn)
        pick = np.arange(0, lo.size, max(1, lo.size // 8))
        lo, hi = np.concatenate((lo[pick], [0])), np.concatenate((hi[pick], [999]))
        ans, std = syn.sum_many(lo, hi, return_std=True)
        z.append((ans - _true_sums(x, np.clip(v, 0, 20), lo, hi)) / std)
    assert_mean_var(np.concatenate(z), 0.0, 1.0)


@pytest.mark.parametrize("options", [{}, {"consistency": False, "structure": "binary"},
                                     {"level_ratio": 1}])
def test_std_of_cut_blocks_is_exact(options):
    """Given the counts, an answer is linear in the sum tree's released nodes: its weights,
    read by releasing unit vectors through the same constructor, give the exact variance
    that ``return_std`` computes by polarisation over whole-block ranges."""
    x, v = _data(n=40000, seed=21, hi=9999)
    syn = ps.IntervalSynopsis.build(x, domain=(0, 9999), epsilon=1, sum_of=v, sum_bounds=(0, 60),
                                    rng=ps.Rng(seed=22), **options)
    sums = syn.sums
    assert sums._levels >= 2                  # covariances between the leaves' estimates
    g = np.random.default_rng(23)
    lo = np.concatenate((g.integers(0, 9999, 60), [0, 3, 500]))
    hi = np.minimum(lo + np.concatenate((g.integers(0, 3000, 60), [9999, 3, 0])), 9999)
    _, std = syn.sum_many(lo, hi, return_std=True)
    nodes = sums._released.size
    levels, sizes, n = sums._levels, [], len(sums)
    for _ in range(levels):
        sizes.append(n)
        n = -(-n // sums.fanout)
    scale_of_node = np.repeat([float(discrete_laplace_variance(b)) for b in sums.noise_scales],
                              sizes)
    weights = np.empty((nodes, lo.size))
    base = RangeSums._from_release(syn, np.zeros(nodes, np.int64), epsilon=sums.epsilon,
                                   column=sums.column, bounds=sums.bounds, block=sums.block)
    try:
        syn.sums = base
        zero = syn.sum_many(lo, hi)
        for j in range(nodes):
            unit = np.zeros(nodes, np.int64)
            unit[j] = 1
            syn.sums = RangeSums._from_release(syn, unit, epsilon=sums.epsilon,
                                               column=sums.column, bounds=sums.bounds,
                                               block=sums.block)
            weights[j] = syn.sum_many(lo, hi) - zero
    finally:
        syn.sums = sums
    exact = np.sqrt((weights ** 2 * scale_of_node[:, None]).sum(axis=0))
    assert np.allclose(std, exact, rtol=1e-7, atol=1e-9)


def test_intervals_cover_the_truth():
    """95% sum and mean intervals: coverage >= 95% (their rigorous guarantee)."""
    x, v = _data(n=4000, seed=10)
    vc = np.clip(v, -5, 30)
    g = np.random.default_rng(11)
    lo = g.integers(0, 999, 25)
    hi = np.minimum(lo + g.integers(0, 300, 25), 999)
    truth = _true_sums(x, vc, lo, hi)
    cnt = np.array([np.count_nonzero((x >= a) & (x <= b)) for a, b in zip(lo, hi)])
    miss = total = miss_m = total_m = 0
    for seed in range(12):
        syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=1, sum_of=v,
                                        sum_bounds=(-5, 30), rng=ps.Rng(seed=300 + seed))
        bars = syn.sum_intervals(lo, hi, 0.9)
        assert np.all(bars.low <= bars.answer) and np.all(bars.answer <= bars.high)
        miss += np.count_nonzero((truth < bars.low) | (truth > bars.high))
        total += lo.size
        mb = syn.mean_intervals(lo, hi, 0.9)
        ok = ~np.isnan(mb.low)
        mean = truth / np.maximum(cnt, 1)
        miss_m += np.count_nonzero(ok & ((mean < mb.low - 1e-9) | (mean > mb.high + 1e-9)))
        total_m += np.count_nonzero(ok)
        assert np.all((mb.low[ok] >= -5) & (mb.high[ok] <= 30))
    assert_binomial_at_most(miss, total, 0.1)
    assert_binomial_at_most(miss_m, max(total_m, 1), 0.1)


def test_mean_is_nan_where_the_count_interval_holds_zero():
    x = np.array([5] * 3)
    syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=0.5, sum_of=[1, 2, 3],
                                    sum_bounds=(0, 10), rng=ps.Rng(seed=12))
    bars = syn.mean_intervals([600], [610])
    assert math.isnan(bars.low[0]) and math.isnan(bars.high[0])
    assert math.isnan(bars.noise[0]) and math.isnan(bars.bias[0])


# ------------------------------------------------------------------ budget, persistence
def test_budget_and_epsilon_compose():
    x, v = _data()
    budget = ps.Budget(2)
    syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=1, sum_of=v, sum_bounds=(0, 9),
                                    sum_share=0.25, budget=budget, rng=ps.Rng(seed=13))
    assert syn.epsilon == syn.epsilon_partition + syn.epsilon_tree + syn.sums.epsilon == 1
    assert syn.sums.epsilon == Fraction(3, 16) and syn.epsilon_tree == Fraction(9, 16)
    assert budget.spent == 1
    assert "sum_bounds=(0, 9)" in str(budget.ledger) and "epsilon_sum=3/16" in str(budget.ledger)


def test_save_load_roundtrip(tmp_path):
    x, v = _data()
    syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=1, sum_of=v / 10,
                                    sum_bounds=(-0.5, 4.5), sum_scale="1e1",
                                    rng=ps.Rng(seed=14))
    path = tmp_path / "s.pds"
    syn.save(path)
    back = ps.load(path)
    lo, hi = [0, 10, 500], [999, 20, 501]
    assert np.array_equal(back.sum_many(lo, hi), syn.sum_many(lo, hi))
    assert np.array_equal(back.mean_intervals(lo, hi).high, syn.mean_intervals(lo, hi).high,
                          equal_nan=True)
    assert back.epsilon == syn.epsilon == 1 and back.sums.epsilon == syn.sums.epsilon
    assert back.sums.user_bounds == (Decimal("-0.5"), Decimal("4.5"))
    kind, meta, arrays, _ = syn._to_record()
    assert meta["sums"]["bounds"] == [-5, 45] and meta["sums"]["column"]["scale"] == 10
    for key, bad in (("bounds", [5, 5]), ("bounds", [0, 2**41]), ("epsilon", [0, 1])):
        sums = dict(meta["sums"], **{key: bad})
        persist.write_record(tmp_path / "bad.pds", kind, dict(meta, sums=sums), arrays)
        with pytest.raises(FormatError):
            ps.load(tmp_path / "bad.pds")
    short = dict(arrays, sum_released=arrays["sum_released"][:-1])
    persist.write_record(tmp_path / "bad.pds", kind, meta, short)
    with pytest.raises(FormatError):
        ps.load(tmp_path / "bad.pds")


def test_a_synopsis_without_sums_says_so():
    syn = ps.IntervalSynopsis.build([1, 2], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=15))
    assert syn.sums is None and "sums" not in syn._to_record()[1]
    for call in (lambda: syn.sum(0, 9), lambda: syn.mean_many([0], [9]),
                 lambda: syn.sum_intervals([0], [9]), lambda: syn.mean_intervals([0], [9])):
        with pytest.raises(ParameterError, match="no range sums"):
            call()
    with pytest.raises(TypeError):
        RangeSums()


# ------------------------------------------------------------------ bad inputs
X = np.arange(10)
V = np.arange(10, dtype=np.float64)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"sum_bounds": (5, 5)}, ParameterError, "lo < hi"),
    ({"sum_bounds": (0, 0)}, ParameterError, "lo < hi"),
    ({"sum_bounds": (0, -3)}, ParameterError, "lo < hi"),
    ({"sum_bounds": (10, 0)}, ParameterError, "lo < hi"),
    ({"sum_bounds": (0, float("nan"))}, ParameterError, "finite"),
    ({"sum_bounds": (0, float("inf"))}, ParameterError, "finite"),
    ({"sum_bounds": "0:10"}, ParameterError, "pair"),
    ({"sum_bounds": (0, 1, 2)}, ParameterError, "pair"),
    ({"sum_bounds": (0, None)}, TypeError, r"sum_bounds\[1\]"),
    ({"sum_bounds": (0, 0.5)}, ParameterError, r"sum_bounds\[1\]"),
    ({"sum_bounds": (0, 2**41)}, ParameterError, "2\\*\\*40"),
    ({"sum_bounds": None}, ParameterError, "sum_bounds"),
    ({"sum_share": 0}, ParameterError, "sum_share"),
    ({"sum_share": 1}, ParameterError, "sum_share"),
    ({"sum_share": 1.5}, ParameterError, "sum_share"),
    ({"sum_scale": 3}, ParameterError, "sum_scale"),
    ({"structure": "kary"}, ParameterError, "kary"),
    ({"delta": 1e-6}, ParameterError, "delta"),
    ({"counts": np.ones(10, dtype=np.int64)}, ParameterError, "counts"),
    ({"dropna": True}, ParameterError, "dropna"),
    ({"sum_of": V[:9]}, ParameterError, "same length"),
    ({"sum_of": np.where(X == 3, np.nan, V)}, InputError, "missing"),
    ({"sum_of": np.array(["a"] * 10)}, TypeError, "numeric"),
    ({"sum_of": np.ones(10, dtype=bool)}, TypeError, "numeric"),
    ({"sum_of": V + 0.5}, TypeError, "sum_of"),
    ({"sum_of": None, "sum_bounds": (0, 1)}, ParameterError, "need sum_of"),
    ({"sum_of": None, "sum_share": 0.5}, ParameterError, "need sum_of"),
])
def test_bad_input_refused_before_budget_and_randomness(kwargs, error, match):
    args = {"sum_of": V, "sum_bounds": (0, 9), **kwargs}
    budget, rng = ps.Budget(5), ps.Rng(seed=16)
    with pytest.raises(error, match=match) as info:
        ps.IntervalSynopsis.build(X, domain=(0, 9), epsilon=1, budget=budget, rng=rng, **args)
    assert budget.spent == 0
    assert rng.random_uint64() == ps.Rng(seed=16).random_uint64()
    assert "\n" not in str(info.value)
    for secret in ("3.5", "4.5", "8.5", "nan"):          # no data value in the message
        assert secret not in str(info.value) or secret in repr(kwargs)


def test_bounds_too_wide_for_the_sampler_are_refused_before_budget():
    budget, rng = ps.Budget(1), ps.Rng(seed=18)
    with pytest.raises(ParameterError, match="2\\*\\*48"):
        ps.IntervalSynopsis.build(np.arange(100), domain=(0, 2**40), epsilon=0.01,
                                  sum_of=np.arange(100), sum_bounds=(0, 2**40), fanout=2,
                                  budget=budget, rng=rng)
    assert budget.spent == 0 and rng.random_uint64() == ps.Rng(seed=18).random_uint64()
    # the same bounds on a small domain (few levels) and a larger epsilon are fine
    ps.IntervalSynopsis.build(np.arange(100), domain=(0, 99), epsilon=1, sum_of=np.arange(100),
                              sum_bounds=(0, 2**40), rng=rng)


def test_bad_query_arguments():
    x, v = _data()
    syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=1, sum_of=v, sum_bounds=(0, 9),
                                    rng=ps.Rng(seed=17))
    with pytest.raises(ps.DomainError):
        syn.sum_many([5], [4])
    with pytest.warns(QueryClippedWarning, match="1 of 1 queries reach outside"):
        assert syn.mean(0, 1000) == syn.mean(0, 999)       # clipped to the domain
    with pytest.warns(QueryClippedWarning, match=r"answered NaN \(no rows\)"):
        assert np.isnan(syn.mean(1000, 2000))
    with pytest.warns(QueryClippedWarning, match="answered 0"):
        assert syn.sum(1000, 2000) == 0 and syn.sum_intervals([1000], [2000]).high[0] == 0
    with pytest.raises(TypeError):
        syn.sum_many([0], [9], return_std=1)
    with pytest.raises(ParameterError, match="confidence"):
        syn.sum_intervals([0], [9], 1.0)
    with pytest.raises(ParameterError, match="confidence"):
        syn.mean_intervals([0], [9], 0.99999)


def test_a_source_is_refused_before_reading(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("x\n1\n2\n")
    source = ps.sources.files(str(path), ["x"])
    budget = ps.Budget(1)
    with pytest.raises(ParameterError, match="Source"):
        ps.IntervalSynopsis.build(source, domain=(0, 9), epsilon=1, sum_of=[1, 2],
                                  sum_bounds=(0, 5), budget=budget)
    assert budget.spent == 0
