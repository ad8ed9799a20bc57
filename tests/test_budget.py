"""Sequential composition: the budget refuses to overspend, charges before noise."""
from fractions import Fraction

import pytest

import pydp_synopsis as ps


def test_budget_charges_and_refuses():
    b = ps.Budget(1)
    assert b.charge(0.25, "a") == Fraction(1, 4)
    assert b.charge(Fraction(1, 2), "b") == Fraction(1, 2)
    assert b.remaining == Fraction(1, 4) and b.spent == Fraction(3, 4)
    with pytest.raises(ps.BudgetError, match="only 1/4"):
        b.charge(0.3, "c")
    assert b.spent == Fraction(3, 4) and [w for w, _ in b.ledger] == ["a", "b"]
    assert b.charge(0.25) == Fraction(1, 4) and b.remaining == 0


@pytest.mark.parametrize("bad,exc", [(0, ps.ParameterError), (-1, ps.ParameterError), ("1", TypeError)])
def test_budget_bad_total(bad, exc):
    with pytest.raises(exc, match="total_epsilon"):
        ps.Budget(bad)


def test_counters_charge_the_budget_only_when_valid():
    b = ps.Budget(1)
    ps.KaryTreeCounter(horizon=100, epsilon=0.5, budget=b)
    assert b.spent == Fraction(1, 2)
    with pytest.raises(ps.ParameterError):
        ps.KaryTreeCounter(horizon=100, epsilon=0.5, k=1, budget=b)  # invalid k: nothing charged
    assert b.spent == Fraction(1, 2)
    ps.SparseStreamCounter(horizon=100, epsilon=0.25, budget=b)
    with pytest.raises(ps.BudgetError):
        ps.BinaryTreeCounter(horizon=100, epsilon=0.5, budget=b)
    assert b.spent == Fraction(3, 4)
    with pytest.raises(TypeError, match="budget"):
        ps.BinaryTreeCounter(horizon=100, epsilon=0.1, budget=1.0)
