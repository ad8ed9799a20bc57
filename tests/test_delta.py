"""delta= on the tree synopses and counters: the (epsilon, delta) claim, the pure epsilon, the budget.

* exact: with :func:`~pydp_synopsis.accounting.discrete_laplace_delta`, the
  true delta(epsilon) of each object's node noise -- its actual scale, its
  actual shift vector (S ones: L levels, S multi-tree nodes, h counter
  levels) -- is at most the delta it claims;
* statistical (alpha = 1e-6): node noise has the discrete Laplace variance
  of the scale the object reports;
* delta = 0 is the old path bit for bit; a delta at which the pure scale
  wins gives the same seeded release too;
* records keep delta and pure_epsilon (checked on load), the budget
  composes both, bad deltas are refused before any charge or draw.

The privacy audit of one (epsilon, delta) object is registered in
``tests/privacy/mechanisms.py`` ("counter/binary-delta").
"""
import os
import pathlib
import tempfile
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist
from pydp_synopsis.accounting import discrete_laplace_delta, unit_shift_scale
from pydp_synopsis.noise import discrete_laplace_variance
from pydp_synopsis.trees import tree_shape

from stattests import assert_mean_var

EPSILONS = (0.5, 1, 2)
DELTAS = (1e-3, 1e-6, 1e-9)


def _claim_holds(shifts, scale, epsilon, delta):
    true = discrete_laplace_delta(np.ones(shifts, dtype=np.int64), scale, epsilon)
    assert true <= float(delta), (shifts, float(scale), epsilon, float(delta), true)
    return true


def _pure_or_l2(shifts, epsilon, scale):
    """The scale is min(S / eps, l2 scale): never more noise than the pure one."""
    assert scale <= Fraction(shifts) / ps.exact_epsilon(epsilon)


# ------------------------------------------------------------------ exact claims
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_counters_true_delta_is_at_most_the_claim(epsilon, delta):
    used = 0
    for cls, horizon, extra in ((ps.BinaryTreeCounter, 2**10, {}),          # h = 11
                                (ps.BinaryTreeCounter, 2**40, {}),          # h = 41
                                (ps.BinaryTreeCounter, 2**61, {}),          # h = 62
                                (ps.KaryTreeCounter, 2**60, {"k": 3}),      # h = 39
                                (ps.KaryTreeCounter, 2**20, {})):           # h = 5
        c = cls(horizon=horizon, epsilon=epsilon, delta=delta, rng=ps.Rng(seed=1), **extra)
        h, b = c.height, c.noise_scale
        assert c.delta == Fraction(delta) and c.epsilon == ps.exact_epsilon(epsilon)
        assert c.pure_epsilon == Fraction(h) / b >= c.epsilon
        _pure_or_l2(h, epsilon, b)
        _claim_holds(h, b, c.epsilon, c.delta)
        used += b < Fraction(h) / c.epsilon
    assert used >= 1          # the grid exercises the l2 scale, not only the pure one


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_sparse_counter_inner_delta_is_at_most_the_claim(epsilon, delta):
    c = ps.SparseStreamCounter(horizon=2**62, epsilon=epsilon, delta=delta, structure="binary",
                               rng=ps.Rng(seed=2))
    inner_h = ps.BinaryTreeCounter(horizon=c.inner_horizon, epsilon=1).height   # inner horizon D
    b = unit_shift_scale(inner_h, c.epsilon_counter, c.delta)
    assert c.pure_epsilon == c.epsilon_partition + Fraction(inner_h) / b
    _claim_holds(inner_h, b, c.epsilon_counter, c.delta)
    assert c.pure_epsilon > c.epsilon        # h = 63 > 2 ln(1/delta): the l2 scale


@pytest.mark.parametrize("tree", ["binary", "hierarchical", "kary"])
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_interval_tree_true_delta_is_at_most_the_claim(tree, epsilon, delta):
    values = np.random.default_rng(3).integers(0, 2**64 - 1, 3000, dtype=np.uint64)
    s = ps.IntervalSynopsis.build(values, domain=(0, 2**64 - 1), epsilon=epsilon, delta=delta,
                                  structure=tree, threshold_factor=0.7, rng=ps.Rng(seed=4))
    if tree == "kary":
        levels = ps.KaryTreeCounter(horizon=len(s), epsilon=1, k=s.k).height
    else:
        levels = tree_shape(len(s), s.fanout)[0]
    assert s.noise_scale == unit_shift_scale(levels, s.epsilon_tree, s.delta)
    assert s.pure_epsilon == s.epsilon_partition + Fraction(levels) / s.noise_scale
    _pure_or_l2(levels, s.epsilon_tree, s.noise_scale)
    _claim_holds(levels, s.noise_scale, s.epsilon_tree, s.delta)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_multitree_true_delta_is_at_most_the_claim(epsilon, delta):
    pts = np.random.default_rng(5).integers(0, 2**16, (3000, 3))
    # DNRR (one scale for all S nodes), and a final share (two groups splitting delta)
    for c, extra in ((3, {"config": "dnrr"}), (2, {"config": "dnrr"}),
                     (2, {"structure": "multitree", "final_share": 0.5, "merge": 1, "fanout": 2})):
        s = ps.RectangleSynopsis.build(pts[:, :c], domain=[(0, 2**16 - 1)] * c, epsilon=epsilon,
                                       delta=delta, rng=ps.Rng(seed=6), **extra)
        s_int, s_fin = s.sensitivity
        b_int, b_fin = s.scales
        e_int, e_fin = s.epsilon_intermediate, s.epsilon_final
        if s.final_share is None:        # one group of S = S_int + S_fin nodes at one scale
            assert b_int == b_fin and e_int == 0
            groups = [(s_int + s_fin, b_fin, e_fin, s.delta)]
        else:
            d_fin = s.delta * e_fin / (e_int + e_fin)
            groups = [(s_int, b_int, e_int, s.delta - d_fin), (s_fin, b_fin, e_fin, d_fin)]
        assert sum(g[3] for g in groups) == s.delta           # basic composition
        pure = s.epsilon_partition
        for shifts, b, e, d in groups:
            assert b == unit_shift_scale(shifts, e, d)
            _claim_holds(shifts, b, e, d)
            pure += Fraction(shifts) / b
        assert s.pure_epsilon == pure


def test_the_l2_scale_pays_where_the_paper_says():
    """S = 6^3 + 6^2 + 6 = 258 multi-tree nodes in 3-D (DNRR) at eps = 1, delta = 1e-6: a
    scale below half of S / eps; the pure epsilon then exceeds eps (both reported)."""
    pts = np.random.default_rng(5).integers(0, 2**20, (20000, 3))
    s = ps.RectangleSynopsis.build(pts, domain=[(0, 2**20 - 1)] * 3, epsilon=1, delta=1e-6,
                                   config="dnrr", rng=ps.Rng(seed=6))
    S = sum(s.sensitivity)
    assert S > 200 and s.scales[1] < Fraction(S) / s.epsilon_final / 2
    assert s.pure_epsilon > 2 * s.epsilon
    assert f"delta=1e-06, pure_epsilon={float(s.pure_epsilon):.6g}" in repr(s)


# ------------------------------------------------------------------ statistical
@pytest.mark.slow
def test_binary_counter_node_noise_has_the_variance_of_its_l2_scale():
    """On a zero stream the release at t = 2^j is one node's noise (the node [1, 2^j]),
    independent across j and counters: 2000 counters x 13 nodes."""
    samples, scale = [], None
    rng = ps.Rng(seed=7)
    for _ in range(2000):
        c = ps.BinaryTreeCounter(horizon=2**20, epsilon=1, delta=1e-3, rng=rng)
        out = c.update_many(np.zeros(2**12, dtype=np.int64))
        samples.append(out[(1 << np.arange(13)) - 1])
        scale = c.noise_scale
    assert scale < Fraction(c.height)            # h = 21 > 2 ln(1000): the l2 scale
    assert_mean_var(np.concatenate(samples), 0.0, discrete_laplace_variance(scale))


@pytest.mark.slow
def test_kary_counter_mse_matches_its_l2_scale():
    """Zero stream, k = 3, h = 13: the releases at t = 3^j (one noise term each, distinct
    levels) over 3000 counters have the discrete Laplace variance of the reported scale."""
    samples, scale = [], None
    rng = ps.Rng(seed=8)
    for _ in range(3000):
        c = ps.KaryTreeCounter(horizon=3**12, epsilon=2, k=3, delta=0.05, rng=rng)
        out = c.update_many(np.zeros(3**7, dtype=np.int64))
        samples.append(out[3 ** np.arange(8) - 1])
        scale = c.noise_scale
    assert scale < Fraction(c.height, 2)
    assert_mean_var(np.concatenate(samples), 0.0, discrete_laplace_variance(scale))


# ------------------------------------------------------------------ delta = 0 is the old path
def _releases(delta_kw):
    v = np.random.default_rng(11).integers(0, 2**32, 2000)
    p = np.random.default_rng(12).integers(0, 2**20, (2000, 3))
    out = []
    for tree in ("binary", "hierarchical", "kary"):
        # level_ratio 1: delta > 0 needs the equal split (the pure default is 7/4)
        s = ps.IntervalSynopsis.build(v, domain=(0, 2**32 - 1), epsilon=0.7, structure=tree,
                                      rng=ps.Rng(seed=1), level_ratio=1, **delta_kw)
        out.append(s._to_record()[2]["released"].tolist())
    for extra in ({"config": "dnrr"}, {"structure": "multitree"}):
        s = ps.RectangleSynopsis.build(p, domain=[(0, 2**20 - 1)] * 3, epsilon=1,
                                       rng=ps.Rng(seed=2), **extra, **delta_kw)
        out.append(s.tree_nodes()["count"].tolist())
    xs = np.random.default_rng(5).integers(0, 2, 700)
    for cls in (ps.BinaryTreeCounter, ps.KaryTreeCounter):
        out.append(cls(horizon=5000, epsilon=0.5, rng=ps.Rng(seed=3), **delta_kw)
                   .update_many(xs).tolist())
    out.append(ps.SparseStreamCounter(horizon=2**50, epsilon=0.5, rng=ps.Rng(seed=4), **delta_kw)
               .update_many(xs).tolist())
    return out


def test_delta_zero_is_the_pure_path_bit_for_bit():
    assert _releases({}) == _releases({"delta": 0}) == _releases({"delta": 0.0})


def test_no_gain_means_the_same_release():
    """Where min(S/eps, lambda) is the pure scale the release is the pure one, seed for
    seed: the counters at T = 5000 (h <= 13) and the interval trees at delta = 1e-9."""
    got = _releases({"delta": 1e-9})
    pure = _releases({})
    assert got[:3] == pure[:3] and got[5:] == pure[5:]


def test_pure_objects_report_delta_zero_and_their_epsilon():
    s = ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 7), epsilon=1, rng=ps.Rng(seed=1))
    c = ps.KaryTreeCounter(horizon=10, epsilon=0.5, rng=ps.Rng(seed=1))
    r = ps.RectangleSynopsis.build([[1, 2]], domain=[(0, 7)] * 2, epsilon=1, rng=ps.Rng(seed=1))
    for obj in (s, c, r):
        assert obj.delta == 0 and obj.pure_epsilon == obj.epsilon
        assert "delta" not in repr(obj)


# ------------------------------------------------------------------ records
def _save_load(obj, tmp_path):
    path = tmp_path / "x.pds"
    ps.save(obj, path)
    return ps.load(path)


def _objects():
    v = np.random.default_rng(3).integers(0, 2**40, 500)
    return [
        ps.IntervalSynopsis.build(v, domain=(0, 2**40), epsilon=1, delta=0.4, structure="binary",
                                  rng=ps.Rng(seed=1)),
        ps.IntervalSynopsis.build(v, domain=(0, 2**40), epsilon=1, delta=0.4, structure="kary", k=3,
                                  rng=ps.Rng(seed=1)),
        ps.RectangleSynopsis.build(np.random.default_rng(4).integers(0, 2**20, (5000, 2)),
                                   domain=[(0, 2**20)] * 2, epsilon=1, delta=1e-6, config="dnrr",
                                   rng=ps.Rng(seed=1)),
        ps.BinaryTreeCounter(horizon=2**40, epsilon=1, delta=1e-6, rng=ps.Rng(seed=1)),
        ps.KaryTreeCounter(horizon=2**40, epsilon=1, k=3, delta=1e-3, rng=ps.Rng(seed=1)),
        ps.SparseStreamCounter(horizon=2**62, epsilon=1, structure="binary", delta=1e-6,
                               rng=ps.Rng(seed=1)),
    ]


def test_records_keep_delta_and_pure_epsilon(tmp_path):
    for obj in _objects():
        assert obj.pure_epsilon > obj.epsilon, obj        # every one uses its l2 scale
        back = _save_load(obj, tmp_path)
        assert (back.delta, back.pure_epsilon, back.epsilon) == (obj.delta, obj.pure_epsilon,
                                                                 obj.epsilon)
        assert repr(back) == repr(obj)
        if hasattr(obj, "to_state"):
            state = obj.to_state()
            assert state["delta"] == [obj.delta.numerator, obj.delta.denominator]
            again = type(obj).from_state(state)
            assert (again.delta, again.pure_epsilon) == (obj.delta, obj.pure_epsilon)


@pytest.mark.parametrize("field, value", [("pure_epsilon", [1, 1]), ("pure_epsilon", [3, 1]),
                                          ("delta", [1, 1]), ("delta", [-1, 2]),
                                          ("delta", [0, 1]), ("delta", "x")])
def test_tampered_delta_fields_are_refused(field, value):
    for obj in _objects():
        if hasattr(obj, "to_state"):
            state = dict(obj.to_state(), **{field: value})
            with pytest.raises(ps.FormatError):
                type(obj).from_state(state)
        else:
            kind, meta, arrays, _ = obj._to_record()
            meta = dict(meta, **{field: value})
            with pytest.raises(ps.FormatError):
                _load_record(kind, meta, arrays)


def _load_record(kind, meta, arrays):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.pds")
        persist.write_record(path, kind, meta, arrays)
        return ps.load(path)


def test_a_pure_epsilon_without_delta_is_refused():
    c = ps.BinaryTreeCounter(horizon=2**40, epsilon=1, delta=1e-6, rng=ps.Rng(seed=1))
    state = c.to_state()
    del state["delta"]
    with pytest.raises(ps.FormatError, match="pure_epsilon but no delta"):
        ps.BinaryTreeCounter.from_state(state)
    state = c.to_state()
    del state["pure_epsilon"]
    with pytest.raises(ps.FormatError, match="no pure_epsilon"):
        ps.BinaryTreeCounter.from_state(state)


def test_release_01_files_load_with_delta_zero():
    here = pathlib.Path(__file__).parent / "fixtures"
    for path in sorted(here.glob("*.pds")):
        obj = ps.load(path)
        assert obj.delta == 0 and obj.pure_epsilon == obj.epsilon, path.name


# ------------------------------------------------------------------ budget
def test_builders_charge_epsilon_and_delta_before_any_randomness():
    b = ps.Budget(4, total_delta=Fraction(3, 10**6))
    ps.IntervalSynopsis.build([1, 2], domain=(0, 99), epsilon=1, delta=1e-6, budget=b)
    ps.KaryTreeCounter(horizon=100, epsilon=1, delta=Fraction(1, 10**6), budget=b)
    ps.RectangleSynopsis.build([[1, 2]], domain=[(0, 9)] * 2, epsilon=1, delta=Fraction(1, 10**6),
                               config="dnrr", budget=b)
    assert b.spent == 3 and b.spent_delta == Fraction(1e-6) + Fraction(2, 10**6)
    assert b.ledger[0] == ("IntervalSynopsis(domain=(0, 99), epsilon=1, delta="
                           f"{Fraction(1e-6)})", 1)
    assert [d for _, _, d in b.charges][1:] == [Fraction(1, 10**6)] * 2
    rng = ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    with pytest.raises(ps.BudgetError, match=r"^cannot spend delta=1/1000000 on "
                                             r"'SparseStreamCounter\(horizon=100, delta=1/1000000\)'"):
        ps.SparseStreamCounter(horizon=100, epsilon=0.5, delta=Fraction(1, 10**6), budget=b,
                               rng=rng)
    assert b.spent == 3 and rng.random_uint64() == first
    ps.SparseStreamCounter(horizon=100, epsilon=0.5, budget=b)       # pure still fits
    assert b.spent == Fraction(7, 2)


def test_budget_composes_delta_exactly_and_refuses_in_one_line():
    b = ps.Budget(1, total_delta=1e-6)
    assert b.total_delta == Fraction(1e-6) and b.remaining_delta == Fraction(1e-6)
    assert b.charge(0.5, "a", delta=Fraction(1e-6) / 2) == Fraction(1, 2)
    with pytest.raises(ps.BudgetError) as err:
        b.charge(0.25, "b", delta=1e-6)
    assert "\n" not in str(err.value) and "delta" in str(err.value)
    assert b.spent == Fraction(1, 2) and b.ledger == [("a", Fraction(1, 2))]
    assert b.charges == [("a", Fraction(1, 2), Fraction(1e-6) / 2)]
    assert "total_delta" in repr(b)
    with pytest.raises(ps.BudgetError, match="delta"):
        ps.Budget(1).charge(0.1, "c", delta=1e-9)            # a pure budget takes no delta
    for bad in (1, -0.1, float("nan"), True, "0"):
        with pytest.raises((ps.ParameterError, TypeError), match=r"total_delta must be a real "
                                                                 r"number in \[0, 1\)"):
            ps.Budget(1, total_delta=bad)


# ------------------------------------------------------------------ bad inputs
BAD_DELTAS = [(1, ps.ParameterError), (1.5, ps.ParameterError), (-1e-9, ps.ParameterError),
              (float("nan"), ps.ParameterError), (float("inf"), ps.ParameterError),
              (True, TypeError), (np.bool_(False), TypeError), ("1e-6", TypeError),
              (None, TypeError), (1j, TypeError)]


@pytest.mark.parametrize("bad, exc", BAD_DELTAS)
def test_bad_deltas_are_refused_before_budget_or_randomness(bad, exc):
    calls = [
        lambda **kw: ps.IntervalSynopsis.build([1, 2], domain=(0, 99), epsilon=1, **kw),
        lambda **kw: ps.RectangleSynopsis.build([[1, 2]], domain=[(0, 9)] * 2, epsilon=1,
                                                config="dnrr", **kw),
        lambda **kw: ps.BinaryTreeCounter(horizon=10, epsilon=1, **kw),
        lambda **kw: ps.KaryTreeCounter(horizon=10, epsilon=1, **kw),
        lambda **kw: ps.SparseStreamCounter(horizon=10, epsilon=1, **kw),
    ]
    for call in calls:
        budget = ps.Budget(10, total_delta=0.5)
        rng = ps.Rng(seed=9)
        first = ps.Rng(seed=9).random_uint64()
        with pytest.raises(exc, match=r"^delta must be a real number in \[0, 1\)") as err:
            call(delta=bad, budget=budget, rng=rng)
        assert "\n" not in str(err.value)
        assert budget.spent == 0 and budget.spent_delta == 0 and rng.random_uint64() == first


def test_the_adaptive_grid_refuses_delta_before_budget_or_randomness():
    budget = ps.Budget(10, total_delta=0.5)
    rng = ps.Rng(seed=9)
    first = ps.Rng(seed=9).random_uint64()
    with pytest.raises(ps.ParameterError, match=r"^delta must be 0 for structure='adaptive': .*"
                                                r"structure='multitree'") as err:
        ps.RectangleSynopsis.build([[1, 2]], domain=[(0, 9)] * 2, epsilon=1, delta=1e-6,
                                   budget=budget, rng=rng)
    assert "\n" not in str(err.value)
    assert budget.spent == 0 and rng.random_uint64() == first
    # delta = 0 is accepted by every structure
    ps.RectangleSynopsis.build([[1, 2]], domain=[(0, 9)] * 2, epsilon=1, delta=0)
