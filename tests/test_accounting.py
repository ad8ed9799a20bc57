"""Laplace noise calibrated to l2 sensitivity (APT §5.2) and the zCDP conversion, checked by exact accounting."""
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.accounting import (check_delta, discrete_laplace_delta, l2_laplace_epsilon,
                                      l2_laplace_scale, zcdp_delta, zcdp_rho)
from pydp_synopsis.errors import ParameterError


def lemma_5_5(l2, eps, delta, dps=50):
    """lambda = l2 / (sqrt(2(eps + ln 1/delta)) - sqrt(2 ln 1/delta)), at dps digits."""
    with mpmath.workdps(dps):
        big_l = mpmath.log(1 / mpmath.mpf(delta))
        return mpmath.mpf(l2) / (mpmath.sqrt(2 * (mpmath.mpf(eps) + big_l)) - mpmath.sqrt(2 * big_l))


def upper_l2(shifts):
    """A rational >= the l2 norm of an integer vector."""
    return Fraction(math.isqrt(sum(s * s for s in shifts) * 10**12) + 1, 10**6)


# ------------------------------------------------------------- the formula

def mp(frac):
    frac = Fraction(frac)
    return mpmath.mpf(frac.numerator) / frac.denominator


def test_scale_is_lemma_5_5_rounded_up():
    for l2, eps, delta in ((10, 1, Fraction(1, 10**6)), (2, Fraction(1, 2), Fraction(1, 1000)),
                           (Fraction(7, 3), 2, Fraction(1, 10**12)), (1, Fraction(1, 100), Fraction(1, 10**9))):
        got = l2_laplace_scale(l2, eps, delta)
        assert isinstance(got, Fraction)
        with mpmath.workdps(60):
            exact = lemma_5_5(mp(l2), mp(eps), mp(delta), dps=60)
            assert exact <= mp(got) <= exact * (1 + mpmath.mpf("1e-14"))


def test_epsilon_inverts_the_scale_and_rounds_up():
    for l2, eps, delta in ((10, 1, 1e-6), (3, 0.25, 1e-9), (100, 2, 1e-3)):
        lam = l2_laplace_scale(l2, eps, delta)
        back = l2_laplace_epsilon(l2, lam, delta)
        assert float(ps.exact_epsilon(eps)) * (1 - 1e-12) <= back <= eps
    # exact value of x^2/2 + x sqrt(2 ln(1/delta)) at x = 1/2, delta = 1e-6, never below it
    got = l2_laplace_epsilon(1, 2, 1e-6)
    with mpmath.workdps(60):
        x = mpmath.mpf(1) / 2
        exact = x * x / 2 + x * mpmath.sqrt(2 * mpmath.log(1 / mp(1e-6)))
        assert mpmath.mpf(got) >= exact
        assert got == pytest.approx(float(exact), rel=1e-15)


def test_theorem_1_3_takes_the_better_of_pure_and_l2():
    # 4 coordinates shifted by 1: l1 = 4, l2 = 2; at delta = 1e-6 the pure scale wins
    assert l2_laplace_scale(2, 1, 1e-6, l1_sensitivity=4) == 4
    assert l2_laplace_scale(2, 1, 1e-6) > 4
    assert l2_laplace_epsilon(2, 4, 1e-6, l1_sensitivity=4) == 1.0
    # 100 coordinates: the l2 scale wins
    assert l2_laplace_scale(10, 1, 1e-6, l1_sensitivity=100) == l2_laplace_scale(10, 1, 1e-6) < 54


def test_where_it_pays():
    """S coordinates shifted by one: the l2 scale beats the pure S/epsilon only for S > about 2 ln(1/delta)."""
    for s in range(1, 200):
        pays = l2_laplace_scale(math.sqrt(s) * (1 + 1e-15), 1, 1e-6) < s
        assert pays == (s >= 29), s
    for h in range(1, 16):  # tree counters of h <= 15 levels never gain
        assert l2_laplace_scale(math.sqrt(h) * (1 + 1e-15), 0.1, 1e-6) > h / 0.1


def test_monotone():
    assert l2_laplace_scale(5, 1, 1e-6) > l2_laplace_scale(5, 2, 1e-6) > l2_laplace_scale(5, 2, 1e-3)
    assert l2_laplace_scale(5, 1, 1e-6) < l2_laplace_scale(6, 1, 1e-6)


# ------------------------------------------------------------ tight check

def brute_laplace_delta(shifts, scale, eps):
    """sum over a box of Z^d of max(0, P(y) - e^eps Q(y)) for discrete Laplace noise."""
    q = math.exp(-1 / scale)
    m = 60
    z = np.arange(-m, m + 1)

    def dens(shift):
        return (1 - q) / (1 + q) * q ** np.abs(z - shift)

    p, qq = dens(0), dens(shifts[0])
    for s in shifts[1:]:
        p, qq = np.multiply.outer(p, dens(0)), np.multiply.outer(qq, dens(s))
    return float(np.sum(np.maximum(0.0, p - math.exp(eps) * qq)))


@pytest.mark.parametrize("shifts,scale,eps", [((1, 2), 1.5, 0.5), ((1, 2), 1.5, 0.0), ((1, 1, 1), 2.0, 0.7),
                                              ((3,), 0.8, 1.0), ((-2, 1), 1.0, 1.2)])
def test_privacy_loss_distribution_is_exact(shifts, scale, eps):
    assert discrete_laplace_delta(shifts, scale, eps) == pytest.approx(brute_laplace_delta(shifts, scale, eps),
                                                                        rel=1e-9, abs=1e-15)


def test_pure_dp_has_no_delta():
    assert discrete_laplace_delta([1] * 4, 4, 1) < 1e-15
    assert discrete_laplace_delta([1] * 4, 4, 0.99) > 5e-4  # about 0.01 P(every loss is +1/4)


@pytest.mark.parametrize("coords", [4, 16, 64, 100])
@pytest.mark.parametrize("eps", [0.5, 1, 2])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_true_delta_at_claimed_epsilon(coords, eps, delta):
    """The worst shift pattern of l1 = S, l2 = sqrt(S): every coordinate moves by one."""
    lam = l2_laplace_scale(math.isqrt(coords), eps, delta)
    assert discrete_laplace_delta([1] * coords, lam, eps) <= delta
    lam = l2_laplace_scale(math.isqrt(coords), eps, delta, l1_sensitivity=coords)
    assert discrete_laplace_delta([1] * coords, lam, eps) <= delta


@pytest.mark.parametrize("shifts", [(2, 1, 1, 1, 1), (3, 4), (1,) * 30 + (5,), (2,) * 25, (10,)])
@pytest.mark.parametrize("eps,delta", [(0.5, 1e-6), (1, 1e-3), (2, 1e-9)])
def test_true_delta_heterogeneous_shifts(shifts, eps, delta):
    lam = l2_laplace_scale(upper_l2(shifts), eps, delta)
    assert discrete_laplace_delta(shifts, lam, eps) <= delta


def test_calibration_is_not_vacuous():
    """The bound is loose but not absurdly so: a quarter of the scale breaks it."""
    lam = l2_laplace_scale(10, 1, 1e-6)
    assert discrete_laplace_delta([1] * 100, lam / 4, 1) > 1e-6


# ------------------------------------------------------------------- zCDP

def test_zcdp_delta_is_the_infimum_over_alpha():
    for rho, eps in ((0.025, 1), (0.5, 3), (0.01, 0.2), (2, 5)):
        with mpmath.workdps(50):
            r, e = mpmath.mpf(rho), mpmath.mpf(eps)

            def log_bound(a):
                return (a - 1) * (a * r - e) + a * mpmath.log(1 - 1 / a) - mpmath.log(a - 1)

            # the optimum solves (2a - 1) rho - eps + ln(1 - 1/a) = 0
            alpha = mpmath.findroot(lambda a: (2 * a - 1) * r - e + mpmath.log(1 - 1 / a), (1 + e / r) / 2 + 1)
            inf = mpmath.exp(log_bound(alpha))
            assert log_bound(alpha * 1.001) > log_bound(alpha) < log_bound(alpha * 0.999)
            got = zcdp_delta(rho, eps)
            assert inf <= got <= inf * (1 + mpmath.mpf("1e-9"))
        assert got <= math.exp(-((eps - rho) ** 2) / (4 * rho))  # the standard bound is weaker


def test_zcdp_rho_is_the_largest():
    for eps, delta in ((1, Fraction(1, 10**6)), (0.1, Fraction(1, 10**9)), (3, Fraction(1, 100))):
        rho = zcdp_rho(eps, delta)
        assert isinstance(rho, Fraction)
        assert zcdp_delta(rho, eps) <= delta
        assert zcdp_delta(rho * (1 + Fraction(1, 10**6)), eps) > delta


def test_zcdp_conversion_is_valid_for_the_gaussian():
    """delta(eps) of the continuous Gaussian with rho = 1/(2 sigma^2) (Balle-Wang) is below the bound."""
    for sigma, eps in ((4.0, 1.0), (1.0, 0.5), (10.0, 0.1)):
        ratio = 1 / sigma
        exact = (0.5 * math.erfc((eps / ratio - ratio / 2) / math.sqrt(2))
                 - math.exp(eps) * 0.5 * math.erfc((eps / ratio + ratio / 2) / math.sqrt(2)))
        assert exact <= zcdp_delta(Fraction(1 / (2 * sigma * sigma)), eps)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("func,kwargs,exc,name", [
    (l2_laplace_scale, dict(l2_sensitivity=0), ParameterError, "l2_sensitivity"),
    (l2_laplace_scale, dict(l2_sensitivity=-1), ParameterError, "l2_sensitivity"),
    (l2_laplace_scale, dict(l2_sensitivity=2**41), ParameterError, "l2_sensitivity"),
    (l2_laplace_scale, dict(l2_sensitivity=True), TypeError, "l2_sensitivity"),
    (l2_laplace_scale, dict(l2_sensitivity="1"), TypeError, "l2_sensitivity"),
    (l2_laplace_scale, dict(l2_sensitivity=float("nan")), ParameterError, "l2_sensitivity"),
    (l2_laplace_scale, dict(epsilon=0), ParameterError, "epsilon"),
    (l2_laplace_scale, dict(epsilon=None), TypeError, "epsilon"),
    (l2_laplace_scale, dict(delta=0), ParameterError, "delta"),
    (l2_laplace_scale, dict(delta=1.0), ParameterError, "delta"),
    (l2_laplace_scale, dict(delta=-0.1), ParameterError, "delta"),
    (l2_laplace_scale, dict(delta=float("nan")), ParameterError, "delta"),
    (l2_laplace_scale, dict(delta=[1e-6]), TypeError, "delta"),
    (l2_laplace_scale, dict(l1_sensitivity=0), ParameterError, "l1_sensitivity"),
    (l2_laplace_scale, dict(l1_sensitivity="4"), TypeError, "l1_sensitivity"),
    (l2_laplace_scale, dict(l2_sensitivity=2**30, epsilon=1e-6), ParameterError, "2\\*\\*48"),
    (l2_laplace_epsilon, dict(scale=0), ParameterError, "scale"),
    (l2_laplace_epsilon, dict(scale=2**49), ParameterError, "scale"),
    (l2_laplace_epsilon, dict(scale="2"), TypeError, "scale"),
    (l2_laplace_epsilon, dict(l2_sensitivity=0), ParameterError, "l2_sensitivity"),
    (l2_laplace_epsilon, dict(delta=2), ParameterError, "delta"),
])
def test_bad_arguments(func, kwargs, exc, name):
    args = dict(l2_sensitivity=2, epsilon=1, delta=1e-6) if func is l2_laplace_scale else \
        dict(l2_sensitivity=2, scale=5, delta=1e-6)
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        func(**args)


def test_accountant_bad_arguments():
    with pytest.raises(TypeError, match="shifts"):
        discrete_laplace_delta([0.5], 1, 1)
    with pytest.raises(ParameterError, match="shifts"):
        discrete_laplace_delta([[1]], 1, 1)
    with pytest.raises(ParameterError, match="shifts"):
        discrete_laplace_delta([2**21], 1, 1)
    with pytest.raises(ParameterError, match="epsilon"):
        discrete_laplace_delta([1], 1, -1)
    with pytest.raises(ParameterError, match="scale"):
        discrete_laplace_delta([1], 0, 1)
    with pytest.raises(ParameterError, match="rho"):
        zcdp_delta(0, 1)
    with pytest.raises(ParameterError, match="delta"):
        zcdp_rho(1, 0)
    assert check_delta(0.5) == Fraction(1, 2)
