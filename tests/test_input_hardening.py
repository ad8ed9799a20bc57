"""Inputs that used to build forever, spend before failing, or be silently misread."""
import time

import numpy as np
import pytest

import pydp_synopsis as ps


@pytest.mark.parametrize("factor", [0.5, 0.25, 0.69])
def test_threshold_factors_that_cannot_finish_are_refused_everywhere(factor):
    """Below 0.7 a partition of 2^64 would seal ~D^(1-c) empty positions (19.7 million at
    0.5 in release 0.1): one floor for every class, refused before anything runs."""
    calls = [
        lambda: ps.private_partition([], domain=(0, 2**64 - 1), epsilon=1, threshold_factor=factor),
        lambda: ps.IntervalSynopsis.build([1], domain=(0, 2**64 - 1), epsilon=1, threshold_factor=factor),
        lambda: ps.RectangleSynopsis.build([[1, 1]], domain=[(0, 2**64 - 1)] * 2, epsilon=1,
                                           threshold_factor=factor),
    ]
    for call in calls:
        with pytest.raises(ps.ParameterError, match=r"threshold_factor must be in \[0.7, 100\]"):
            call()


def test_the_lowest_accepted_factor_finishes_fast_on_the_largest_domain():
    start = time.perf_counter()
    part = ps.private_partition(np.arange(1000, dtype=np.uint64), domain=(0, 2**64 - 1), epsilon=1,
                                threshold_factor=0.7, beta=1e-10, rng=ps.Rng(seed=3))
    assert len(part) < 10**6 and time.perf_counter() - start < 60


def test_failed_builds_spend_no_budget_and_draw_no_randomness():
    budget = ps.Budget(1)
    rng = ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    with pytest.raises(ps.ParameterError):
        ps.IntervalSynopsis.build([1, 2], domain=(0, 99), epsilon=1e-15, budget=budget, rng=rng)
    assert budget.spent == 0 and rng.random_uint64() == first


def test_masked_arrays_are_refused_not_unmasked():
    values = np.ma.array([1, 99], mask=[False, True])
    with pytest.raises(TypeError, match="masked"):
        ps.IntervalSynopsis.build(values, domain=(0, 99), epsilon=1)
    with pytest.raises(TypeError, match="masked"):
        ps.private_partition(values, domain=(0, 99), epsilon=1)


@pytest.mark.parametrize("scale", [0, -1, float("nan"), float("inf")])
def test_discrete_laplace_variance_checks_its_scale(scale):
    with pytest.raises(ps.ParameterError, match="scale"):
        ps.discrete_laplace_variance(scale)


@pytest.mark.parametrize("low, high", [(1.5, 3), (0, 2.0), ("1", 3), (True, 3)])
def test_rng_integers_refuses_non_integers(low, high):
    with pytest.raises(TypeError, match="integers"):
        ps.Rng(seed=1).integers(low, high)


@pytest.mark.parametrize("structure", ["adaptive", "multitree"])
def test_rectangles_refuse_tiny_epsilon_before_spending(structure):
    """Release 0.1 charged the budget and advanced a seeded Rng before the noise scale
    was found out of range (epsilon 1e-14): every public check now runs first."""
    budget = ps.Budget(1)
    rng = ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    with pytest.raises(ps.ParameterError):
        ps.RectangleSynopsis.build(np.zeros((3, 2), dtype=np.int64), domain=[(0, 9)] * 2,
                                   epsilon=1e-14, budget=budget, rng=rng, structure=structure)
    assert budget.spent == 0 and rng.random_uint64() == first
