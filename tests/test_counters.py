"""Tests of the continual counters (binary tree, k-ary tree with subtraction)."""

import json
import math
import os
import stat
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pydp_synopsis import persist
from pydp_synopsis import BinaryTreeCounter, KaryTreeCounter
from pydp_synopsis.errors import DomainError, FormatError, HorizonError, ParameterError
from pydp_synopsis import Rng, discrete_laplace_variance
from stattests import ALPHA, assert_dp_ratio, clopper_pearson

# A huge epsilon makes every noise term 0 with probability 1 - 1e-(10^9):
# the releases must then be the exact prefix sums.
NOISELESS = 10**12


def make(kind, horizon, epsilon, rng, k=3):
    if kind == "binary":
        return BinaryTreeCounter(horizon=horizon, epsilon=epsilon, rng=rng)
    return KaryTreeCounter(horizon=horizon, epsilon=epsilon, k=k, rng=rng)


def offset_digits(t, k, h):
    """Independent rep-hat: digits in [-(k-1)/2, (k-1)/2], level 1 first."""
    m = (k - 1) // 2
    out = []
    for _ in range(h):
        d = ((t + m) % k) - m
        out.append(d)
        t = (t - d) // k
    assert t == 0
    return out


def path(digits, k):
    """Algorithm 2 lines 8-12: (level, j, p) for every noise term used."""
    p = 0
    for level in range(len(digits), 0, -1):
        d = digits[level - 1]
        for j in range(abs(d)):
            p += (1 if d > 0 else -1) * k ** (level - 1)
            yield level, j, p


# ------------------------------------------------------------------ structure
@pytest.mark.parametrize("kind,k", [("binary", 2), ("kary", 3), ("kary", 5), ("kary", 19)])
def test_noiseless_releases_are_exact_prefix_sums(kind, k):
    rng = Rng(11)
    xs = np.random.default_rng(1).integers(0, 1000, 2000)
    c = make(kind, 2000, NOISELESS, rng, k)
    out = np.concatenate([c.update_many(xs[:7]), [c.update(int(xs[7]))], c.update_many(xs[8:])])
    np.testing.assert_array_equal(out, np.cumsum(xs))
    assert c.time == 2000
    type(c).from_state(c.to_state())  # the C invariants hold: the decoder checks them


@pytest.mark.parametrize("k", [3, 5, 7])
def test_offset_digits_round_trip_up_to_full_tree(k):
    # horizon = (k^h - 1)/2 for h = ceil(log_k(2T)): every representable t.
    h = {3: 6, 5: 4, 7: 3}[k]
    horizon = (k**h - 1) // 2
    c = KaryTreeCounter(horizon=horizon, epsilon=1, k=k, rng=Rng(2))
    assert c.height == h
    m = (k - 1) // 2
    for t in range(1, horizon + 1):
        c.update(0)
        digits = c.to_state()["digits"]
        assert digits == offset_digits(t, k, h)
        assert all(-m <= d <= m for d in digits)
        assert sum(d * k**i for i, d in enumerate(digits)) == t
    with pytest.raises(HorizonError):
        c.update(0)


@pytest.mark.parametrize("horizon,k,h", [(1, 3, 1), (4, 3, 2), (5, 3, 3), (13, 3, 3), (14, 3, 4),
                                         (9, 19, 1), (10, 19, 2), (180, 19, 2), (181, 19, 3),
                                         (2**63 - 1, 3, 41), (2**63 - 1, 19, 16)])
def test_kary_height_is_ceil_log_k_of_2T(horizon, k, h):
    c = KaryTreeCounter(horizon=horizon, epsilon=1, k=k, rng=Rng(0))
    assert c.height == h
    assert k ** (h - 1) < 2 * horizon <= k**h


@pytest.mark.parametrize("horizon,h", [(1, 1), (2, 2), (3, 2), (4, 3), (1023, 10), (1024, 11), (2**63 - 1, 63)])
def test_binary_height_is_ceil_log2_of_T_plus_1(horizon, h):
    assert BinaryTreeCounter(horizon=horizon, epsilon=1, rng=Rng(0)).height == h


@pytest.mark.parametrize("kind,k,horizon", [("kary", 3, 121), ("kary", 5, 312), ("kary", 19, 400),
                                            ("binary", 2, 255)])
def test_noise_terms_follow_algorithm_2(kind, k, horizon):
    """Recover every release's noise and check it is the sum of z_p over t's path.

    Each z_p must stay the same while in use (lazy draw, no redraw), be used
    during one contiguous interval of t (Proposition 4.10), and there are
    exactly as many distinct p as steps for a full tree.
    """
    c = make(kind, horizon, 1, Rng(5), k)
    xs = np.random.default_rng(3).integers(0, 3, horizon)
    m = 1 if kind == "binary" else (k - 1) // 2
    z_of, first, last = {}, {}, {}
    prefix = 0
    for t in range(1, horizon + 1):
        out = c.update(int(xs[t - 1]))
        prefix += int(xs[t - 1])
        state = c.to_state()
        if kind == "binary":
            digits = [int(b) for b in reversed(format(t, f"0{c.height}b"))]
            terms = list(path(digits, 2))
        else:
            digits = offset_digits(t, k, c.height)
            terms = list(path(digits, k))
        assert state["digits"] == digits
        noise = 0
        for level, j, p in terms:
            z = state["slots"][(level - 1) * m + j]
            assert z_of.setdefault(p, z) == z, "a noise term changed while in use"
            if p in last:
                assert last[p] == t - 1, "a noise term came back after it was dropped"
            first.setdefault(p, t)
            last[p] = t
            noise += z
        assert out - prefix == noise == state["noise"]
        used = {(level - 1) * m + j for level, j, _ in terms}
        assert all(z == 0 for i, z in enumerate(state["slots"]) if i not in used)
    if kind == "kary" and horizon == (k**c.height - 1) // 2:
        assert sorted(z_of) == list(range(1, horizon + 1))
    if kind == "binary":
        assert sorted(z_of) == list(range(1, horizon + 1))
    # The noise is not degenerate (scale h/eps >= 2): most terms are non-zero.
    assert sum(z != 0 for z in z_of.values()) > len(z_of) / 2


def test_update_and_update_many_agree_for_the_same_seed():
    xs = np.random.default_rng(4).integers(0, 2, 500)
    a = KaryTreeCounter(horizon=600, epsilon=0.5, k=5, rng=Rng(9))
    b = KaryTreeCounter(horizon=600, epsilon=0.5, k=5, rng=Rng(9))
    one = [a.update(int(x)) for x in xs]
    many = np.concatenate([b.update_many(xs[:123]), b.update_many(xs[123:123]), b.update_many(xs[123:])])
    np.testing.assert_array_equal(one, many)
    assert many.dtype == np.int64


def test_bool_stream_and_large_counts_accepted():
    c = BinaryTreeCounter(horizon=4, epsilon=NOISELESS, rng=Rng(1))
    assert list(c.update_many(np.array([True, False, True]))) == [1, 1, 2]
    assert c.update(2**61) == 2 + 2**61


# ------------------------------------------------------------------ accuracy
def test_lemma_4_7_closed_form_equals_exact_mean_path_length():
    for k in (3, 5, 9, 19, 21):
        for h in range(1, 6):
            T = (k**h - 1) // 2
            if T < 1:
                continue
            c = KaryTreeCounter(horizon=T, epsilon=1, k=k, rng=Rng(0))
            assert c.height == h
            a_T = Fraction(h * (k * k - 1), 4 * k) / (1 - Fraction(1, k**h))
            var = discrete_laplace_variance(c.noise_scale)
            assert c.mean_squared_error() == pytest.approx(float(a_T) * var, rel=1e-12)
    # Binary tree, T = 2^h - 1: mean popcount = h/2 * 2^h/(2^h - 1).
    for h in range(1, 12):
        T = 2**h - 1
        c = BinaryTreeCounter(horizon=T, epsilon=1, rng=Rng(0))
        mean_terms = Fraction(h * 2 ** (h - 1), T)
        assert c.mean_squared_error() == pytest.approx(float(mean_terms) * discrete_laplace_variance(h), rel=1e-12)


def test_mean_squared_error_of_partial_horizon_matches_brute_force():
    for k in (3, 7, 19):
        c = KaryTreeCounter(horizon=5000, epsilon=2, k=k, rng=Rng(0))
        for steps in (1, 2, 17, 1000, 5000):
            w = sum(sum(abs(d) for d in offset_digits(t, k, c.height)) for t in range(1, steps + 1))
            assert c.mean_squared_error(steps) == pytest.approx(
                w / steps * discrete_laplace_variance(c.noise_scale), rel=1e-12)
    c = BinaryTreeCounter(horizon=5000, epsilon=2, rng=Rng(0))
    for steps in (1, 3, 1000, 5000):
        w = sum(bin(t).count("1") for t in range(1, steps + 1))
        assert c.mean_squared_error(steps) == pytest.approx(
            w / steps * discrete_laplace_variance(c.noise_scale), rel=1e-12)


@pytest.mark.parametrize("kind,k,horizon", [("kary", 3, 1093), ("kary", 19, 3429), ("binary", 2, 1023),
                                            ("kary", 19, 1000), ("binary", 2, 1000)])
def test_empirical_mse_matches_formula(kind, k, horizon):
    """Mean over runs of the per-run MSE; CLT interval at alpha = 1e-6.

    The runs are independent, so the per-run MSEs are i.i.d. with finite
    variance; with 3000 runs the interval is about +-4% of the formula, so
    a wrong noise scale (a factor 1.1 in the scale is 21% in the MSE) or a
    wrong structure fails.
    """
    runs = 3000
    rng = Rng(21)
    zeros = np.zeros(horizon, dtype=np.int64)
    per_run = np.empty(runs)
    for r in range(runs):
        out = make(kind, horizon, 1, rng, k).update_many(zeros).astype(np.float64)
        per_run[r] = np.mean(out * out)
    expected = make(kind, horizon, 1, rng, k).mean_squared_error()
    z = stats.norm.isf(ALPHA / 2)
    half = z * per_run.std(ddof=1) / math.sqrt(runs)
    assert half < 0.05 * expected, "interval too wide to test anything"
    assert abs(per_run.mean() - expected) <= half, (per_run.mean(), expected, half)


# ------------------------------------------------------------------- privacy
@pytest.mark.parametrize("kind", ["binary", "kary"])
def test_neighbouring_streams_clopper_pearson(kind):
    """One item flipped at position 1 shifts every release by 1.

    binary, T = 3 (h = 2): o1 = x1 + z_1, o3 = x1 + x2 + x3 + z_2 + z_3 with
    node [1,2] the term z_2 shared with o2; the event {o1 >= 1, o2 >= 1} has
    the largest possible ratio, exactly e^(2/b) = e^eps at b = h/eps.
    kary, k = 3, T = 4 (h = 2): o1 = S1 + z_1, o3 = S3 + z_3, likewise.
    A scale below h/eps would make the ratio exceed e^eps.
    """
    eps = 1.0
    n = 60000
    rng = Rng(33)
    idx = (0, 1) if kind == "binary" else (0, 2)
    horizon = 3 if kind == "binary" else 4
    hits = []
    for x1 in (0, 1):
        xs = np.zeros(horizon, dtype=np.int64)
        xs[0] = x1
        count = 0
        for _ in range(n):
            out = make(kind, horizon, eps, rng).update_many(xs)
            count += bool(out[idx[0]] >= 1 and out[idx[1]] >= 1)
        hits.append(count)
    k0, k1 = hits
    assert k1 > k0  # the event is informative
    assert_dp_ratio(k1, n, k0, n, eps)
    # The test has power: the true ratio is e^eps, and e^(2 eps) is excluded.
    lo1 = stats.beta.ppf(ALPHA / 2, k1, n - k1 + 1)
    hi0 = stats.beta.ppf(1 - ALPHA / 2, k0 + 1, n - k0)
    assert lo1 / hi0 > 1.0


# --------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("kind,k", [("binary", 2), ("kary", 19), ("kary", 3)])
def test_checkpoint_continues_the_same_release(kind, k):
    xs = np.random.default_rng(8).integers(0, 4, 3000)
    a = make(kind, 3000, 1, Rng(1), k)
    a.update_many(xs[:1234])
    state = json.loads(json.dumps(a.to_state()))
    b = type(a).from_state(state, rng=Rng(77))
    assert without_rng(b.to_state()) == without_rng(a.to_state())  # b draws from its own rng
    assert (b.time, b.horizon, b.epsilon, b.k, b.height) == (a.time, a.horizon, a.epsilon, a.k, a.height)
    # Same future randomness for both: identical continuation, so the
    # restore drew nothing and kept every noise term in use.  A seeded state
    # holds its generator's position: restored without an rng it continues a...
    resumed = type(a).from_state(state)
    np.testing.assert_array_equal(a.update_many(xs[1234:]), resumed.update_many(xs[1234:]))
    # ...and restored with one, its future noise comes from that rng alone.
    twin = type(a).from_state(without_rng(state), rng=Rng(77))
    np.testing.assert_array_equal(b.update_many(xs[1234:]), twin.update_many(xs[1234:]))
    type(b).from_state(b.to_state())  # the C invariants hold: the decoder checks them


def test_restore_does_not_redraw_noise_terms_in_use():
    a = KaryTreeCounter(horizon=10**6, epsilon=1, k=19, rng=Rng(3))
    a.update_many(np.zeros(5000, dtype=np.int64))
    state = a.to_state()
    b = KaryTreeCounter.from_state(state)  # fresh OS rng for future draws
    before = b.to_state()
    assert before["noise"] == state["noise"] and before["slots"] == state["slots"]
    # The next step changes only level 1 (5001 = ... digit 4 -> 5, no carry):
    # it keeps all terms in use and adds one fresh term.
    out = b.update(0)
    after = b.to_state()
    new = [i for i, (u, v) in enumerate(zip(before["slots"], after["slots"])) if u != v]
    assert len(new) <= 1
    assert out == after["noise"] == state["noise"] + sum(after["slots"][i] for i in new)


def test_persist_round_trip_is_private_and_refuses_corruption(tmp_path):
    a = KaryTreeCounter(horizon=10**5, epsilon=0.5, k=9, rng=Rng(4))
    a.update_many(np.ones(777, dtype=np.int64))
    path = tmp_path / "ckpt"
    persist.save(a, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    b = persist.load(path)
    assert isinstance(b, KaryTreeCounter) and b.to_state() == a.to_state()
    c = BinaryTreeCounter(horizon=100, epsilon=1, rng=Rng(4))
    c.update_many([1, 0, 1])
    persist.save(c, tmp_path / "bin")
    assert persist.load(tmp_path / "bin").to_state() == c.to_state()
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    path.write_bytes(bytes(raw))
    with pytest.raises(FormatError):
        persist.load(path)


def tampered(state, **changes):
    s = json.loads(json.dumps(state))
    s.update(changes)
    return s


def test_from_state_rejects_inconsistent_states():
    a = KaryTreeCounter(horizon=1000, epsilon=1, k=5, rng=Rng(6))
    a.update_many(np.ones(37, dtype=np.int64))
    s = a.to_state()
    digits = list(s["digits"])
    digits[0] += 1
    slots = list(s["slots"])
    free = next(i for i, z in enumerate(slots) if z == 0 and i % 2 == 1)
    slots[free] = 5
    bad = [
        tampered(s, time=s["time"] + 1),
        tampered(s, digits=digits),
        tampered(s, noise=s["noise"] + 1),
        tampered(s, slots=slots),
        tampered(s, slots=s["slots"][:-1]),
        tampered(s, prefix=-1),
        tampered(s, time=-1),
        tampered(s, horizon=10),
        tampered(s, epsilon=[1, 0]),
        tampered(s, k=4),
        tampered(s, version=99),
        tampered(s, kind="BinaryTreeCounter"),
        {k: v for k, v in s.items() if k != "digits"},
    ]
    for state in bad:
        with pytest.raises(FormatError):
            KaryTreeCounter.from_state(state)
    with pytest.raises(FormatError):
        BinaryTreeCounter.from_state(s)
    with pytest.raises(TypeError):
        KaryTreeCounter.from_state([1, 2])


# ---------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("cls", [BinaryTreeCounter, KaryTreeCounter])
def test_bad_parameters(cls):
    ok = dict(horizon=10, epsilon=1.0)
    for horizon, err in [(0, ParameterError), (-5, ParameterError), (2**63, ParameterError),
                         (1.5, TypeError), (True, TypeError), ("10", TypeError)]:
        with pytest.raises(err, match="horizon"):
            cls(**{**ok, "horizon": horizon})
    for eps, err in [(0, ParameterError), (-1.0, ParameterError), (float("nan"), ParameterError),
                     (float("inf"), ParameterError), ("1", TypeError)]:
        with pytest.raises(err, match="epsilon"):
            cls(**{**ok, "epsilon": eps})
    with pytest.raises(ParameterError, match="epsilon"):
        cls(horizon=10, epsilon=Fraction(1, 2**40))
    with pytest.raises(TypeError, match="rng"):
        cls(**ok, rng=42)
    with pytest.raises(TypeError):
        cls(10, 1.0)


def test_bad_fanout():
    for k, err, msg in [(4, ParameterError, "odd"), (20, ParameterError, "odd"), (2, ParameterError, "odd"),
                        (1, ParameterError, "k"), (-3, ParameterError, "k"), (65537, ParameterError, "k"),
                        (3.0, TypeError, "k"), (True, TypeError, "k")]:
        with pytest.raises(err, match=msg):
            KaryTreeCounter(horizon=10, epsilon=1, k=k)


@pytest.mark.parametrize("kind", ["binary", "kary"])
def test_bad_items_consume_nothing(kind):
    c = make(kind, 10, 1, Rng(12))
    twin = make(kind, 10, 1, Rng(12))
    c.update_many([1, 1])
    twin.update_many([1, 1])
    for x, err in [(-1, DomainError), (2**62 + 1, DomainError), (1.0, TypeError), ("1", TypeError),
                   (None, TypeError)]:
        with pytest.raises(err, match="x"):
            c.update(x)
    for xs, err, msg in [([1, -1], DomainError, "xs"), ([0.5, 1.0], TypeError, "xs"),
                         (np.zeros((2, 2), dtype=np.int64), DomainError, "one-dimensional"),
                         (np.array([2**63], dtype=np.uint64), DomainError, "xs"),
                         ([0] * 9, HorizonError, "horizon"),
                         ([2**62, 2**62], DomainError, "2\\*\\*62")]:
        with pytest.raises(err, match=msg):
            c.update_many(xs)
    assert c.time == 2
    np.testing.assert_array_equal(c.update_many([0] * 8), twin.update_many([0] * 8))
    with pytest.raises(HorizonError, match="horizon"):
        c.update(0)
    assert c.update_many([]).shape == (0,)


@pytest.mark.parametrize("kind,k", [("binary", 2), ("kary", 19), ("kary", 3)])
def test_error_bound_holds_with_probability_1_minus_beta(kind, k):
    beta = 0.2
    horizon, runs = 500, 3000
    rng = Rng(41)
    zeros = np.zeros(horizon, dtype=np.int64)
    bound = make(kind, horizon, 1, rng, k).error_bound(beta)
    worst = np.array([np.abs(make(kind, horizon, 1, rng, k).update_many(zeros)).max() for _ in range(runs)])
    exceed = int((worst > bound).sum())
    lo, _ = clopper_pearson(exceed, runs)
    assert lo <= beta
    # Not vacuous: the bound is at most 3x the empirical (1 - beta) quantile.
    assert bound <= 3 * np.quantile(worst, 1 - beta)


def test_error_bound_arguments():
    c = KaryTreeCounter(horizon=100, epsilon=1, rng=Rng(0))
    assert c.error_bound(0.01) >= c.error_bound(0.1) >= c.error_bound(0.5, releases=1) > 0
    for beta in (0, 1, -0.1, float("nan")):
        with pytest.raises(ParameterError, match="beta"):
            c.error_bound(beta)
    with pytest.raises(ParameterError, match="releases"):
        c.error_bound(0.1, releases=101)


def without_rng(state):
    """A checkpoint minus the generator positions (which differ when another rng is given)."""
    out = {k: v for k, v in state.items() if k != "rng"}
    if "inner" in out:
        out["inner"] = without_rng(out["inner"])
    return out


@pytest.mark.parametrize("kind,k", [("binary", None), ("kary", 19)])
def test_seeded_checkpoint_without_rng_resumes_the_uninterrupted_release(kind, k):
    xs = np.random.default_rng(3).integers(0, 2, 500)
    full = make(kind, 500, 1, Rng(5), k).update_many(xs)
    a = make(kind, 500, 1, Rng(5), k)
    first = a.update_many(xs[:200])
    b = type(a).from_state(json.loads(json.dumps(a.to_state())))  # rng restored from the state
    assert np.array_equal(np.concatenate([first, b.update_many(xs[200:])]), full)
    assert make(kind, 500, 1, Rng(), k).to_state()["rng"] is None  # OS keys never exported
