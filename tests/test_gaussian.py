"""The discrete Gaussian sampler, its calibration, and the square-root factorization counter."""
import math
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist
from pydp_synopsis.errors import DomainError, HorizonError, ParameterError
from pydp_synopsis.gaussian import (discrete_gaussian_delta, discrete_gaussian_sigma2,
                                    discrete_gaussian_variance, exact_sigma2)
from pydp_synopsis.sqrt_counter import MAX_HORIZON, SqrtFactorizationCounter, sqrt_factor_coefficients

from stattests import ALPHA, assert_gof, assert_mean_var, clopper_pearson


def pmf(sigma2, lo, hi):
    """Exact-enough float pmf of N_Z(0, sigma2) on lo..hi (normaliser over the whole support)."""
    s = float(sigma2)
    m = int(40 * math.sqrt(s)) + 40
    zz = np.arange(-m, m + 1, dtype=np.float64)
    norm = np.sum(np.exp(-zz * zz / (2 * s)))
    z = np.arange(lo, hi + 1, dtype=np.float64)
    return np.exp(-z * z / (2 * s)) / norm


def unchanged(rng, before):
    return rng._to_state() == before


# ----------------------------------------------------------------- sampler

@pytest.mark.parametrize("sigma2,n", [(Fraction(1, 2), 200_000), (3, 200_000), (100, 200_000), (10**6, 200_000)])
def test_sampler_goodness_of_fit(sigma2, n):
    z = ps.discrete_gaussian(sigma2, size=n, rng=ps.Rng(seed=f"gof{sigma2}".encode()))
    sd = math.sqrt(float(sigma2))
    lo, hi = -int(8 * sd) - 3, int(8 * sd) + 3
    counts = np.bincount(np.clip(z, lo, hi + 1) - lo, minlength=hi - lo + 2)
    probs = pmf(sigma2, lo, hi)
    # the mass outside [lo, hi] is the tail bin (below lo is folded into lo's count: negligible)
    assert counts[0] == 0 and counts[-1] == 0
    assert_gof(counts, probs)


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(1, 3), 3, Fraction(7, 2), 100, 10**6, 2**60])
def test_sampler_mean_and_variance(sigma2):
    z = ps.discrete_gaussian(sigma2, size=100_000, rng=ps.Rng(seed=f"mv{sigma2}".encode()))
    var = discrete_gaussian_variance(sigma2)
    assert_mean_var(z.astype(np.float64), 0.0, var)


def test_variance_is_exact_sum():
    for sigma2 in (Fraction(1, 2), 3, 10):
        z = np.arange(-200, 201, dtype=np.float64)
        w = np.exp(-z * z / (2 * float(sigma2)))
        assert discrete_gaussian_variance(sigma2) == pytest.approx(float(np.sum(z * z * w) / np.sum(w)), rel=1e-13)
    assert discrete_gaussian_variance(0.5) < 0.5


def test_sampler_reproducible_and_shapes():
    a = ps.discrete_gaussian(5, size=(3, 4), rng=ps.Rng(seed=1))
    b = ps.discrete_gaussian(5, size=(3, 4), rng=ps.Rng(seed=1))
    assert a.shape == (3, 4) and a.dtype == np.int64 and np.array_equal(a, b)
    assert isinstance(ps.discrete_gaussian(5, rng=ps.Rng(seed=1)), int)
    assert ps.discrete_gaussian(5, size=0, rng=ps.Rng(seed=1)).shape == (0,)


def test_tiny_sigma2_is_almost_always_zero():
    z = ps.discrete_gaussian(Fraction(1, 100), size=10_000, rng=ps.Rng(seed=2))
    assert not z.any()  # P(z != 0) = 2 e^-50 / ... per draw


def test_exact_sigma2_rounds_up_into_the_sampler_range():
    assert exact_sigma2(2.5) == Fraction(5, 2)
    assert exact_sigma2(0.1) >= Fraction(1, 10)
    big = Fraction(11 * 2**60 + 1, 11)
    got = exact_sigma2(big)
    assert got >= big and got - big < Fraction(1, 4)
    assert exact_sigma2(1e-30) >= Fraction(1e-30)


@pytest.mark.parametrize("bad,exc", [(True, TypeError), ("1", TypeError), (None, TypeError), (1j, TypeError),
                                     (0, ParameterError), (-1, ParameterError), (float("nan"), ParameterError),
                                     (float("inf"), ParameterError), (2**62 + 1, ParameterError)])
def test_sampler_bad_sigma2(bad, exc):
    rng = ps.Rng(seed=3)
    before = rng._to_state()
    with pytest.raises(exc, match="sigma2"):
        ps.discrete_gaussian(bad, size=3, rng=rng)
    assert unchanged(rng, before)


def test_sampler_bad_size_and_rng():
    rng = ps.Rng(seed=3)
    before = rng._to_state()
    with pytest.raises(TypeError, match="size"):
        ps.discrete_gaussian(1, size=1.5, rng=rng)
    with pytest.raises(ValueError, match="size"):
        ps.discrete_gaussian(1, size=-1, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        ps.discrete_gaussian(1, size=1, rng=np.random.default_rng(0))
    assert unchanged(rng, before)


# ------------------------------------------------------------- calibration

def brute_scalar_delta(sigma2, shift, eps):
    z = np.arange(-400, 401)
    p = pmf(sigma2, -400, 400)
    q = pmf(sigma2, -400 - shift, 400 - shift)  # P(X + shift = z)
    return float(np.sum(np.maximum(0.0, p - math.exp(eps) * q)))


@pytest.mark.parametrize("sigma2,shift,eps", [(3, 1, 0.5), (3, 2, 1), (Fraction(1, 2), 1, 1), (20, 1, 1), (50, 3, 0.25)])
def test_scalar_delta_is_theorem_7(sigma2, shift, eps):
    exact = brute_scalar_delta(sigma2, shift, eps)
    got = discrete_gaussian_delta(sigma2, shift, eps, scalar=True)
    assert exact <= got <= exact * (1 + 1e-8) + 1e-15
    # smaller shifts are covered by the bound for the sensitivity
    assert brute_scalar_delta(sigma2, max(shift - 1, 0), eps) <= got


def brute_vector_delta(sigma2, shifts, eps):
    """sum_y max(0, P(y) - e^eps Q(y)) over a box, y in Z^d, d = len(shifts) <= 2."""
    m = 40
    p1 = pmf(sigma2, -m, m)
    dens_p = p1
    dens_q = pmf(sigma2, -m - shifts[0], m - shifts[0])
    if len(shifts) == 2:
        dens_p = np.outer(p1, p1)
        dens_q = np.outer(dens_q, pmf(sigma2, -m - shifts[1], m - shifts[1]))
    return float(np.sum(np.maximum(0.0, dens_p - math.exp(eps) * dens_q)))


@pytest.mark.parametrize("sigma2,shifts,eps", [(2, (1, 1), 0.5), (2, (1, 1), 1.5), (5, (2, 1), 1), (3, (1,), 0.3)])
def test_vector_delta_bounds_the_exact_one(sigma2, shifts, eps):
    l2 = Fraction(math.isqrt(sum(s * s for s in shifts) * 10**12) + 1, 10**6)  # >= the l2 norm
    exact = brute_vector_delta(sigma2, shifts, eps)
    got = discrete_gaussian_delta(sigma2, l2, eps)
    assert exact <= got
    assert got < 10 * exact + 1e-6  # the zCDP bound is not vacuous


def test_sigma2_calibration_vector_and_scalar():
    delta = Fraction(1, 10**6)
    vec = discrete_gaussian_sigma2(1, 1, delta)
    assert discrete_gaussian_delta(vec, 1, 1) <= 1e-6
    assert discrete_gaussian_delta(vec * Fraction(99, 100), 1, 1) > 1e-6
    one = discrete_gaussian_sigma2(1, 1, delta, scalar=True)
    assert one < vec
    assert discrete_gaussian_delta(one, 1, 1, scalar=True) <= 1e-6
    assert discrete_gaussian_delta(one * (1 - Fraction(1, 10**6)), 1, 1, scalar=True) > 1e-6 * (1 - 1e-6)
    # scaling: sigma2 grows with the square of the sensitivity
    assert float(discrete_gaussian_sigma2(10, 1, delta)) == pytest.approx(100 * float(vec), rel=1e-9)


@pytest.mark.parametrize("kwargs,exc,name", [
    (dict(l2_sensitivity=0), ParameterError, "l2_sensitivity"),
    (dict(l2_sensitivity="1"), TypeError, "l2_sensitivity"),
    (dict(epsilon=0), ParameterError, "epsilon"),
    (dict(epsilon=float("nan")), ParameterError, "epsilon"),
    (dict(delta=0), ParameterError, "delta"),
    (dict(delta=1), ParameterError, "delta"),
    (dict(delta="x"), TypeError, "delta"),
])
def test_calibration_bad_inputs(kwargs, exc, name):
    args = dict(l2_sensitivity=1, epsilon=1, delta=1e-6)
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        discrete_gaussian_sigma2(**args)


def test_scalar_needs_an_integer_sensitivity():
    with pytest.raises(TypeError, match="l2_sensitivity"):
        discrete_gaussian_delta(3, 1.5, 1, scalar=True)
    with pytest.raises(ParameterError, match="epsilon"):
        discrete_gaussian_delta(3, 1, -1)
    assert discrete_gaussian_delta(Fraction(1, 2**40), 2**20, 1) == 1.0


# ------------------------------------------------------------ factorization

def toeplitz(coef, n):
    i, j = np.indices((n, n))
    return np.where(i >= j, np.asarray(coef, dtype=np.float64)[np.clip(i - j, 0, None)], 0.0)


def test_coefficients_are_central_binomials():
    c = sqrt_factor_coefficients(64)
    for j in range(64):
        exact = Fraction(math.comb(2 * j, j), 4**j)
        assert abs(Fraction(c[j]) - exact) <= exact * Fraction(1, 10**14)
    assert sqrt_factor_coefficients(0).shape == (0,)


def test_square_root_of_the_prefix_matrix():
    n = 64
    lower = toeplitz(sqrt_factor_coefficients(n), n)
    assert np.max(np.abs(lower @ lower - np.tril(np.ones((n, n))))) < 1e-12


def test_integer_factorization_reproduces_prefix_sums():
    c = SqrtFactorizationCounter(horizon=64, epsilon=1, delta=1e-6, rng=ps.Rng(seed=0))
    plan = c._plan
    r = toeplitz(plan.coef, 64)
    b = toeplitz(plan.b, 64)
    assert np.max(np.abs(b @ r - np.tril(np.ones((64, 64))))) < 1e-12
    k = c.precision_bits
    assert np.array_equal(plan.coef, np.floor(sqrt_factor_coefficients(64) * 2.0**k + 0.5).astype(np.int64))
    assert c.sensitivity_squared == sum(int(v) ** 2 for v in plan.coef)
    assert c.rho <= c.sensitivity_squared / (2 * c.sigma2) * (1 + Fraction(1, 10**9))
    assert c.sensitivity_squared / (2 * c.sigma2) <= c.rho


# ------------------------------------------------------------------ counter

def test_noise_is_exactly_the_discrete_gaussian_draws():
    """w - R x equals the sampler's output for the same seed, on every path (R x is exact)."""
    horizon = 300
    xs = np.random.default_rng(5).integers(0, 1000, horizon)
    c = SqrtFactorizationCounter(horizon=horizon, epsilon=0.5, delta=1e-9, rng=ps.Rng(seed=11))
    c.update_many(xs[:5])
    c.update_many(xs[5:200])
    for v in xs[200:210]:
        c.update(int(v))
    c.update_many(xs[210:])
    c._check()
    z = ps.discrete_gaussian(c.sigma2, size=horizon, rng=ps.Rng(seed=11))
    rx = np.array([sum(int(c._plan.coef[t - i]) * int(xs[i]) for i in range(t + 1)) for t in range(horizon)],
                  dtype=object)
    assert np.array_equal(c._w.astype(object) - rx, z.astype(object))


def test_paths_agree_and_are_accurate_with_little_noise():
    xs = np.random.default_rng(1).integers(0, 5, 3000)
    seeded = dict(horizon=3000, epsilon=2**20, delta=0.1)
    one = SqrtFactorizationCounter(**seeded, rng=ps.Rng(seed=4))
    per_item = np.array([one.update(int(v)) for v in xs[:50]] + list(one.update_many(xs[50:])))
    batch = SqrtFactorizationCounter(**seeded, rng=ps.Rng(seed=4)).update_many(xs)
    offline = SqrtFactorizationCounter.release_all(xs, epsilon=2**20, delta=0.1, rng=ps.Rng(seed=4))
    assert np.allclose(per_item, batch, rtol=0, atol=1e-7)
    assert np.array_equal(batch, offline)
    # noise sd of a release is about 1e-3 here
    assert np.max(np.abs(batch - np.cumsum(xs))) < 0.05


def test_mean_squared_error_formula():
    c = SqrtFactorizationCounter(horizon=1000, epsilon=1, delta=1e-6, rng=ps.Rng(seed=0))
    b = c._plan.b
    var = discrete_gaussian_variance(c.sigma2)
    per_t = var * np.cumsum(b * b)
    assert c.mean_squared_error() == pytest.approx(per_t.mean(), rel=1e-12)
    assert c.mean_squared_error(10) == pytest.approx(per_t[:10].mean(), rel=1e-12)
    # the rounding of c_j to k bits costs nothing visible against the ideal sqrt(A) mechanism
    cc = sqrt_factor_coefficients(1000)
    ideal = np.dot(cc, cc) / (2 * float(c.rho)) * np.mean(np.cumsum(cc * cc))
    assert c.mean_squared_error() == pytest.approx(ideal, rel=1e-6)


@pytest.mark.slow
def test_empirical_mse_within_clt_band():
    horizon, runs = 256, 2000
    rng = ps.Rng(seed=21)
    zeros = np.zeros(horizon, dtype=np.int64)
    per_run = np.empty(runs)
    for r in range(runs):
        y = SqrtFactorizationCounter.release_all(zeros, epsilon=1, delta=1e-6, rng=rng)
        per_run[r] = np.mean(y * y)
    exact = SqrtFactorizationCounter(horizon=horizon, epsilon=1, delta=1e-6).mean_squared_error()
    z_crit = 4.9  # two-sided, alpha = 1e-6
    band = z_crit * per_run.std(ddof=1) / math.sqrt(runs)
    assert band < 0.05 * exact, "too few runs for a 5% band"
    assert abs(per_run.mean() - exact) < band


def _privacy_statistics(make, xs, base, coef, sigma2, shift, runs, rng):
    """Per run: the optimal test statistic and a lattice event, from the releases alone.

    The statistic is <d, w_hat - R base> / (|d| sigma) with w_hat = R A^{-1} y
    recovered from the release y (d = R e_1, the neighbours' difference).
    """
    horizon = len(xs)
    ys = np.array([make(rng).update_many(xs) for _ in range(runs)])
    r = toeplitz(coef, horizon)
    w_hat = np.diff(ys, prepend=0.0, axis=1) @ r.T
    stats = (w_hat - r @ base) @ shift / (math.sqrt(float(np.dot(shift, shift))) * math.sqrt(float(sigma2)))
    # A release that added integer noise to L x would show frac(L^{-1} y) = frac(L x).
    lower = toeplitz(sqrt_factor_coefficients(horizon), horizon)
    lattice = (np.linalg.solve(lower, ys.T)[-1] % 1.0) < 0.25
    return stats, lattice


def _assert_approx_dp(k1, k0, runs, eps, delta):
    lo1, _ = clopper_pearson(k1, runs, ALPHA / 2)
    _, hi0 = clopper_pearson(k0, runs, ALPHA / 2)
    assert lo1 <= math.exp(eps) * hi0 + delta, f"P[S|x]>={lo1:.4g} but e^eps P[S|x']+delta<={math.exp(eps) * hi0 + delta:.4g}"


def _check_neighbours(sigma_factor, runs):
    eps, delta, horizon = 1.0, 1e-3, 2
    template = SqrtFactorizationCounter(horizon=horizon, epsilon=eps, delta=delta, rng=ps.Rng(seed=0))
    plan = template._plan._replace(sigma2=exact_sigma2(template.sigma2 * sigma_factor))
    coef = [int(v) for v in plan.coef]
    shift = np.array(coef[:horizon], dtype=np.float64)  # R e_1: the neighbours differ in the first item

    def make(rng):
        c = SqrtFactorizationCounter(horizon=horizon, epsilon=eps, delta=delta, rng=rng)
        c._plan = plan
        return c

    rng = ps.Rng(seed=f"neighbours{sigma_factor}".encode())
    x, x_prime = np.array([0, 1]), np.array([1, 1])
    s0, l0 = _privacy_statistics(make, x, x, coef, plan.sigma2, shift, runs, rng)
    s1, l1 = _privacy_statistics(make, x_prime, x, coef, plan.sigma2, shift, runs, rng)
    mu = math.sqrt(float(np.dot(shift, shift)) / float(plan.sigma2))  # mean shift of the statistic
    for a in (1.0, 2.0, 3.0):
        hi0, hi1 = int(np.sum(s0 > a)), int(np.sum(s1 > a))
        lo0, lo1 = int(np.sum(s0 < mu - a)), int(np.sum(s1 < mu - a))
        _assert_approx_dp(hi1, hi0, runs, eps, delta)
        _assert_approx_dp(lo0, lo1, runs, eps, delta)
    for k1, k0 in ((int(l1.sum()), int(l0.sum())), (int(l0.sum()), int(l1.sum()))):
        _assert_approx_dp(k1, k0, runs, eps, delta)


@pytest.mark.slow
def test_neighbouring_streams_clopper_pearson():
    _check_neighbours(1, runs=20_000)


@pytest.mark.slow
def test_neighbour_check_detects_too_little_noise():
    """The same check fails for a counter with a quarter of the noise sd (the test has teeth)."""
    with pytest.raises(AssertionError, match="e\\^eps"):
        _check_neighbours(Fraction(1, 16), runs=4_000)


# ---------------------------------------------------------------- bad input

COUNTER_ARGS = dict(horizon=10, epsilon=1, delta=1e-6)


@pytest.mark.parametrize("kwargs,exc,name", [
    (dict(horizon=True), TypeError, "horizon"),
    (dict(horizon=1.5), TypeError, "horizon"),
    (dict(horizon=0), ParameterError, "horizon"),
    (dict(horizon=MAX_HORIZON + 1), ParameterError, "horizon"),
    (dict(epsilon=0), ParameterError, "epsilon"),
    (dict(epsilon=-1), ParameterError, "epsilon"),
    (dict(epsilon=float("nan")), ParameterError, "epsilon"),
    (dict(epsilon="1"), TypeError, "epsilon"),
    (dict(delta=0), ParameterError, "delta"),
    (dict(delta=1), ParameterError, "delta"),
    (dict(delta=float("inf")), ParameterError, "delta"),
    (dict(delta=None), TypeError, "delta"),
    (dict(rng="seed"), TypeError, "rng"),
    (dict(budget=ps.Budget(10)), ps.BudgetError, "delta"),          # a pure budget
    (dict(budget=ps.Budget(10, total_delta=1e-9)), ps.BudgetError, "delta"),
    (dict(budget="all"), TypeError, "budget"),
    (dict(epsilon=1e-12, delta=1e-12), ParameterError, "epsilon"),
])
def test_counter_bad_arguments(kwargs, exc, name):
    rng = ps.Rng(seed=5)
    before = rng._to_state()
    args = dict(COUNTER_ARGS, rng=rng)
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        SqrtFactorizationCounter(**args)
    assert unchanged(rng, before)


def test_counter_charges_epsilon_and_delta():
    budget = ps.Budget(2, total_delta=Fraction(1, 10**5))
    c = ps.SqrtFactorizationCounter(horizon=64, epsilon=1, delta=1e-6, budget=budget,
                                    rng=ps.Rng(seed=1))
    what, eps, dlt = budget.charges[-1]
    assert (eps, dlt) == (c.epsilon, c.delta) and "SqrtFactorizationCounter" in what
    assert budget.remaining == 1 and budget.remaining_delta == Fraction(1, 10**5) - c.delta
    ps.SqrtFactorizationCounter.release_all([1, 0, 1], epsilon=1, delta=1e-6, budget=budget)
    assert budget.remaining == 0
    with pytest.raises(ps.BudgetError):
        ps.SqrtFactorizationCounter(horizon=64, epsilon=1, delta=1e-6, budget=budget)


def test_counter_bad_updates_consume_nothing():
    rng = ps.Rng(seed=6)
    c = SqrtFactorizationCounter(**COUNTER_ARGS, rng=rng)
    c.update(3)
    before = rng._to_state()
    cases = [
        (lambda: c.update(-1), DomainError, "x"),
        (lambda: c.update(c.max_total + 1), DomainError, "x"),
        (lambda: c.update(True), TypeError, "x"),
        (lambda: c.update(1.0), TypeError, "x"),
        (lambda: c.update_many([1.5]), TypeError, "xs"),
        (lambda: c.update_many([[1]]), DomainError, "xs"),
        (lambda: c.update_many([1, -1]), DomainError, "xs"),
        (lambda: c.update_many([0] * 10), HorizonError, "horizon"),
        (lambda: c.update_many([c.max_total]), DomainError, "max_total"),
        (lambda: c.update_many([2**40, 2**40, 2**40]), DomainError, "max_total"),
        (lambda: c.mean_squared_error(0), ParameterError, "steps"),
        (lambda: c.mean_squared_error(11), ParameterError, "steps"),
    ]
    for call, exc, name in cases:
        with pytest.raises(exc, match=name):
            call()
    assert unchanged(rng, before) and c.time == 1
    c._check()
    assert c.update_many([]).shape == (0,)
    assert c.update_many(np.array([True, False])).shape == (2,)


def test_release_all_bad_input():
    rng = ps.Rng(seed=7)
    before = rng._to_state()
    for xs, exc in (([], DomainError), ([[1, 2]], DomainError), ([0.5], TypeError), ([-1], DomainError)):
        with pytest.raises(exc, match="xs"):
            SqrtFactorizationCounter.release_all(xs, epsilon=1, delta=1e-6, rng=rng)
    with pytest.raises(ParameterError, match="delta"):
        SqrtFactorizationCounter.release_all([1], epsilon=1, delta=2, rng=rng)
    assert unchanged(rng, before)


def test_repr_and_properties():
    c = SqrtFactorizationCounter(horizon=100, epsilon=0.5, delta=1e-9, rng=ps.Rng(seed=0))
    assert c.horizon == 100 and c.time == 0 and c.epsilon == Fraction(1, 2)
    assert c.delta == Fraction(1e-9) and c.max_total == 2**(62 - c.precision_bits) - 1
    assert "SqrtFactorizationCounter(horizon=100" in repr(c)


def test_sqrt_counter_saves_and_loads_and_continues_the_same_release(tmp_path):
    """ps.save(SqrtFactorizationCounter) was refused (TypeError); now a record of kind
    "sqrt-factorization-counter", mode 0600, and a loaded seeded counter continues
    exactly as the uninterrupted one (issue 31 part 7)."""
    first, then = np.arange(20) % 3, np.array([1, 0, 2, 5, 1] * 4)
    saved, twin = (SqrtFactorizationCounter(horizon=100, epsilon=1, delta=1e-6,
                                            rng=ps.Rng(seed=9)) for _ in range(2))
    assert np.array_equal(saved.update_many(first), twin.update_many(first))
    path = tmp_path / "c.pds"
    ps.save(saved, path)
    assert path.stat().st_mode & 0o777 == 0o600           # the items are secret
    loaded = ps.load(path)
    assert (loaded.horizon, loaded.time, loaded.epsilon, loaded.delta) == (100, 20, 1, twin.delta)
    assert np.array_equal(loaded.update_many(then), twin.update_many(then))   # > 8: convolution
    assert loaded.update(3) == twin.update(3)                                 # the direct path
    loaded._check()
    empty = SqrtFactorizationCounter(horizon=5, epsilon=1, delta=1e-6, rng=ps.Rng(seed=1))
    ps.save(empty, tmp_path / "e.pds")
    assert ps.load(tmp_path / "e.pds").update_many([1, 1]).shape == (2,)


def test_sqrt_counter_record_is_checked(tmp_path):
    c = SqrtFactorizationCounter(horizon=50, epsilon=1, delta=1e-6, rng=ps.Rng(seed=2))
    c.update_many([1, 2, 3])
    kind, meta, arrays, _ = c._to_record()
    assert kind == "sqrt-factorization-counter" and set(arrays) == {"items", "w"}
    bad = [({**meta, "time": 51}, arrays), ({**meta, "version": 2}, arrays),
           ({**meta, "epsilon": [0, 1]}, arrays), ({**meta, "horizon": MAX_HORIZON + 1}, arrays),
           (meta, {**arrays, "items": np.array([1, -2, 3])}),
           (meta, {**arrays, "items": np.array([1, 2**60, 3])}),
           (meta, {**arrays, "w": np.array([1, 2])}), (meta, {"items": arrays["items"]})]
    for i, (m, a) in enumerate(bad):
        persist.write_record(tmp_path / f"{i}.pds", kind, m, a)
        with pytest.raises(ps.FormatError):
            ps.load(tmp_path / f"{i}.pds")
