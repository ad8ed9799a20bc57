"""Tests of SparseStreamCounter (DNRR section 3.1: online partition + tree counter)."""

import copy
import json
import math
import os
import pickle
import stat
import threading
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist
from pydp_synopsis import KaryTreeCounter, OnlinePartition, SparseStreamCounter
from pydp_synopsis.errors import DomainError, FormatError, HorizonError, ParameterError
from pydp_synopsis import Rng
from stattests import assert_dp_ratio, clopper_pearson

NOISELESS = 10**12  # every noise term is 0 with probability 1 - e^(-10^11)


def random_stream(horizon, items, seed):
    gen = np.random.default_rng(seed)
    xs = np.zeros(horizon, dtype=np.int64)
    np.add.at(xs, gen.integers(0, horizon, items), gen.integers(1, 4, items))
    return xs


@pytest.mark.parametrize("counter", ["kary", "binary"])
def test_noiseless_release_is_prefix_at_last_seal(counter):
    xs = random_stream(3000, 300, 1)
    c = SparseStreamCounter(horizon=3000, epsilon=NOISELESS, structure=counter, rng=Rng(1))
    out = np.concatenate([c.update_many(xs[:1000]), [c.update(int(xs[1000]))], c.update_many(xs[1001:])])
    truth = np.cumsum(xs)
    seals = c.seal_times
    assert seals[-1] == 3000 and c.segments == len(seals)
    # Noiseless partition: threshold 1, a segment seals once it holds >= 2 items.
    weights = truth[seals - 1] - np.concatenate([[0], truth[seals[:-1] - 1]])
    assert np.all(weights[:-1] >= 2)
    last_seal = np.searchsorted(seals, np.arange(1, 3001), side="right") - 1
    expected = np.where(last_seal >= 0, truth[seals[np.maximum(last_seal, 0)] - 1], 0)
    np.testing.assert_array_equal(out, expected)
    assert c.release == truth[-1]


def test_sparse_and_dense_agree_when_noiseless():
    xs = random_stream(50000, 400, 2)
    dense = SparseStreamCounter(horizon=50000, epsilon=NOISELESS, rng=Rng(2))
    sparse = SparseStreamCounter(horizon=50000, epsilon=NOISELESS, rng=Rng(3))
    out = dense.update_many(xs)
    pos = np.flatnonzero(xs) + 1
    t1, v1 = sparse.update_sparse(pos[:100], xs[pos[:100] - 1])
    t2, v2 = sparse.update_sparse(pos[100:], xs[pos[100:] - 1], until=50000)
    times, values = np.concatenate([t1, t2]), np.concatenate([v1, v2])
    np.testing.assert_array_equal(times, dense.seal_times)
    np.testing.assert_array_equal(values, out[times - 1])
    assert sparse.time == dense.time == 50000 and sparse.release == dense.release


def test_huge_horizon_costs_items_plus_seals():
    horizon = 2**62
    gen = np.random.default_rng(4)
    pos = np.unique(gen.integers(1, horizon, 10**4))
    c = SparseStreamCounter(horizon=horizon, epsilon=1.0, rng=Rng(4))
    times, values = c.update_sparse(pos[:5000])
    assert c.time == pos[4999]
    times2, values2 = c.update_sparse(pos[5000:], until=horizon)
    assert c.time == horizon and times2[-1] == horizon
    assert c.segments == len(times) + len(times2) <= 2 * 10**4
    assert np.all(np.diff(np.concatenate([times, times2])) > 0)
    assert abs(c.release - len(pos)) <= c.error_bound()
    with pytest.raises(HorizonError):
        c.update(1)


@pytest.mark.slow
def test_error_bound_holds_in_1_minus_beta_of_runs():
    beta, runs, horizon = 0.1, 400, 20000
    fails = 0
    rng = Rng(5)
    for r in range(runs):
        xs = random_stream(horizon, 60, 100 + r)
        c = SparseStreamCounter(horizon=horizon, epsilon=1.0, beta=beta, rng=rng)
        worst = np.abs(c.update_many(xs) - np.cumsum(xs)).max()
        fails += worst > c.error_bound(weight=int(xs.sum()))
    lo, _ = clopper_pearson(fails, runs)
    assert lo <= beta


def bit_stream(horizon, items, seed):
    xs = np.zeros(horizon, dtype=np.int64)
    xs[np.random.default_rng(seed).choice(horizon, items, replace=False)] = 1
    return xs


def heavy_stream(horizon, items, seed):
    """Small items plus a few far heavier than the interior weight bound W
    (~130 here): the bound must hold without any bound on the item size."""
    gen = np.random.default_rng(seed)
    xs = random_stream(horizon, items, seed)
    xs[gen.integers(0, horizon, 8)] += gen.integers(200, 5000, 8)
    return xs


@pytest.mark.parametrize("stream", [bit_stream, heavy_stream])
@pytest.mark.slow
def test_rigorous_error_bound_holds_in_1_minus_beta_of_runs(stream):
    """max_t |error_t| <= error_bound() (and error_bound(weight=#non-zero)) in
    >= 1 - beta of runs, on 0/1 streams and on streams with heavy items."""
    beta, runs, horizon = 0.1, 300, 20000
    fails = fails_w = 0
    rng = Rng(11)
    for r in range(runs):
        xs = stream(horizon, 1500, 200 + r)
        c = SparseStreamCounter(horizon=horizon, epsilon=1.0, beta=beta, rng=rng)
        worst = np.abs(c.update_many(xs) - np.cumsum(xs)).max()
        fails += worst > c.error_bound()
        fails_w += worst > c.error_bound(weight=int(np.count_nonzero(xs)))
    for k in (fails, fails_w):
        lo, _ = clopper_pearson(k, runs)
        assert lo <= beta


def test_error_bound_parts(monkeypatch):
    """The bound is the partition's interior weight bound W plus the inner
    counter's bound; W exceeds Theorem 2.1's constant; a weight bound narrows
    the inner union only when the empty-seal probability is small."""
    c = SparseStreamCounter(horizon=20000, epsilon=1.0, beta=0.1, rng=Rng(12))
    inner = KaryTreeCounter(horizon=20000, epsilon=c.epsilon_counter)  # the inner counter's twin
    w = c.interior_weight_bound()
    assert w == int(w) and w > 5 * (np.log(20000) + np.log(2 / 0.1)) / 0.5
    assert c.error_bound() == int(w) + inner._error_bound(0.05, 20000)
    delta0 = c.empty_seal_probability()
    assert 0 < delta0 < 1e-3
    assert c.error_bound(weight=60) == int(w) + inner._error_bound(0.05 - delta0, 61)
    assert c.error_bound(weight=10**9) == c.error_bound()
    # delta0 <= beta sqrt(beta / 2D) < beta/2 always; if it were >= beta/4 the weight is ignored
    monkeypatch.setattr(c, "empty_seal_probability", lambda: 0.1 / 4)
    assert c.error_bound(weight=60) == c.error_bound()
    with pytest.raises(ParameterError, match="weight"):
        c.error_bound(weight=-1)


@pytest.mark.parametrize("max_items", [None, 1])
@pytest.mark.slow
def test_neighbouring_streams_clopper_pearson(max_items):
    """One item at position 1 or not.  The last position always seals, so the
    final release is x1 + inner noise: the event {final release >= 1}.  With
    max_items = 1 both streams are within the bound (inner horizon 2)."""
    eps, n = 1.0, 15000
    rng = Rng(6)
    hits = []
    for x1 in (0, 1):
        xs = np.zeros(4, dtype=np.int64)
        xs[0] = x1
        count = 0
        for _ in range(n):
            out = SparseStreamCounter(horizon=4, epsilon=eps, max_items=max_items, rng=rng).update_many(xs)
            count += bool(out[-1] >= 1)
        hits.append(count)
    assert SparseStreamCounter(horizon=4, epsilon=eps, max_items=max_items).inner_horizon == (max_items or 3) + 1
    assert hits[1] > hits[0]
    assert_dp_ratio(hits[1], n, hits[0], n, eps)


def _sum_of_two_tail(m, a):
    """P(nu - Z >= m) for independent discrete Laplace nu, Z with pmf
    (1-a)/(1+a) a^|z| (brute-force sum over Z; the terms beyond 400 are < a^400)."""
    def tail(j):  # P(nu >= j)
        return a**j / (1 + a) if j >= 0 else 1 - a ** (1 - j) / (1 + a)
    return sum((1 - a) / (1 + a) * a ** abs(z) * tail(m + z) for z in range(-400, 401))


SEAL_EPS, SEAL_SHARE, SEAL_M = 2, Fraction(3, 10), 2


def _seal_event_hits(make, units, runs):
    """Runs of ``make()`` on the stream (units, 0) whose first release is at
    time 1 (position 1 sealed) with value >= T - SEAL_M + 1."""
    hits = 0
    for _ in range(runs):
        c = make()
        times, values = c.update_sparse([1], [units], until=2)
        hits += bool(times[0] == 1 and values[0] >= c.threshold - SEAL_M + 1)
    return hits


def _seal_event_ratio(make, runs):
    """Neighbouring streams (c0 + 1, 0) and (c0, 0), c0 = T - SEAL_M: the event
    {position 1 seals and its release >= c0 + 1}.  Returns hits and the exact
    probabilities of the correct mechanism.

    Position 1 seals iff c + nu > T + Z (Fig. 1), i.e. nu - Z >= T - c + 1:
    SEAL_M for c0 + 1 items, SEAL_M + 1 for c0.  Given the seal the inner
    counter (horizon 2: one tree level, one noise term N of scale 1/eps_c)
    releases c + N, in the event iff N >= 0 resp. N >= 1.  The ratio is
    e^{eps_c} times P(nu - Z >= m) / P(nu - Z >= m + 1), whose deficit from
    e^{eps_p} comes only from threshold noises Z < -(T - c): about 0.91 eps
    in the exponent here, at an event probability of 0.23 vs 0.04.
    """
    probe = make()
    c0 = probe.threshold - SEAL_M
    a = math.exp(-float(probe.epsilon_partition))
    ac = math.exp(-float(probe.epsilon_counter))
    p1 = _sum_of_two_tail(SEAL_M, a) / (1 + ac)
    p0 = _sum_of_two_tail(SEAL_M + 1, a) * ac / (1 + ac)
    return _seal_event_hits(make, c0 + 1, runs), _seal_event_hits(make, c0, runs), p1, p0


@pytest.mark.slow
def test_neighbouring_streams_seal_event_is_nearly_tight():
    """An event with likelihood ratio e^{0.91 eps}: the CP lower bound of the
    ratio stays <= e^eps, and the hit rates match the exact probabilities."""
    rng, runs = Rng(13), 4000

    def make():
        return SparseStreamCounter(horizon=2, epsilon=SEAL_EPS, partition_share=SEAL_SHARE, rng=rng)

    # The inner counter has one level: its error bound is that of a height-1 twin.
    probe, twin = make(), KaryTreeCounter(horizon=2, epsilon=Fraction(SEAL_EPS) * (1 - SEAL_SHARE))
    assert twin.height == 1 and probe.epsilon_counter == twin.epsilon
    assert probe.error_bound() == int(probe.interior_weight_bound()) + twin._error_bound(probe.beta / 2, 2)
    k1, k0, p1, p0 = _seal_event_ratio(make, runs)
    assert math.log(p1 / p0) >= 0.9 * SEAL_EPS and p1 > 0.2 and p0 > 0.03
    for k, p in ((k1, p1), (k0, p0)):
        lo, hi = clopper_pearson(k, runs)
        assert lo <= p <= hi
    assert_dp_ratio(k1, runs, k0, runs, SEAL_EPS)


@pytest.mark.slow
def test_seal_event_detects_halved_inner_noise():
    """The same test code on a broken variant (inner counter at twice its
    budget, i.e. half the noise scale): its true ratio e^{0.91 eps + eps_c}
    is caught.  The variant is a counter whose total epsilon is
    eps_p + 2 eps_c, split so that the partition keeps its budget eps_p."""
    rng, runs = Rng(14), 4000
    eps_p = Fraction(SEAL_EPS) * SEAL_SHARE
    eps_c = Fraction(SEAL_EPS) - eps_p
    broken = eps_p + 2 * eps_c

    def make():
        c = SparseStreamCounter(horizon=2, epsilon=broken, partition_share=eps_p / broken, rng=rng)
        assert (c.epsilon_partition, c.epsilon_counter) == (eps_p, 2 * eps_c)
        return c

    k1, k0, _, _ = _seal_event_ratio(make, runs)
    with pytest.raises(AssertionError, match="privacy violated"):
        assert_dp_ratio(k1, runs, k0, runs, SEAL_EPS)


def test_checkpoint_continues_the_same_release(tmp_path):
    xs = random_stream(20000, 500, 7)
    a = SparseStreamCounter(horizon=20000, epsilon=1.0, rng=Rng(7))
    a.update_many(xs[:8000])
    state = json.loads(json.dumps(a.to_state()))
    b = SparseStreamCounter.from_state(state, rng=Rng(70))
    assert without_rng(b.to_state()) == without_rng(a.to_state())  # b draws from its own rng
    persist.save(a, tmp_path / "sparse")
    assert stat.S_IMODE(os.stat(tmp_path / "sparse").st_mode) == 0o600
    assert persist.load(tmp_path / "sparse").to_state() == a.to_state()
    # Same future randomness: identical continuation, so the restore drew
    # nothing.  A seeded state holds its generator's position: restored
    # without an rng it continues a...
    resumed = SparseStreamCounter.from_state(state)
    np.testing.assert_array_equal(a.update_many(xs[8000:]), resumed.update_many(xs[8000:]))
    # ...and restored with one, its future noise comes from that rng alone.
    twin = SparseStreamCounter.from_state(without_rng(state), rng=Rng(70))
    np.testing.assert_array_equal(b.update_many(xs[8000:]), twin.update_many(xs[8000:]))


def test_from_state_rejects_inconsistent_states():
    a = SparseStreamCounter(horizon=5000, epsilon=1.0, rng=Rng(8))
    a.update_many(random_stream(2000, 200, 8))
    s = a.to_state()
    assert a.segments > 0
    bad = [dict(s, total=s["total"] + 10**20), dict(s, sealed_total=s["sealed_total"] + 1),
           dict(s, release=s["release"] + 1), dict(s, horizon=4000), dict(s, counter="binary"),
           dict(s, partition_share=[1, 3]), dict(s, kind="KaryTreeCounter"), dict(s, version=2),
           dict(s, inner=dict(s["inner"], noise=s["inner"]["noise"] + 1))]
    for state in bad:
        with pytest.raises(FormatError):
            SparseStreamCounter.from_state(json.loads(json.dumps(state)))


def test_budget_split_is_exact_and_recorded():
    c = SparseStreamCounter(horizon=100, epsilon=Fraction(3, 10), partition_share=0.25, rng=Rng(0))
    assert c.epsilon == Fraction(3, 10)
    assert c.epsilon_partition == Fraction(3, 40) and c.epsilon_counter == Fraction(9, 40)
    assert c.epsilon_partition + c.epsilon_counter <= c.epsilon
    # The parts run at these budgets: the threshold is the partition's at
    # epsilon_partition, the bound adds a k = 19 counter's at epsilon_counter.
    part = OnlinePartition(size=100, epsilon=c.epsilon_partition, beta=c.beta / 2)
    inner = KaryTreeCounter(horizon=100, epsilon=c.epsilon_counter)
    assert c.threshold == part.threshold and c.interior_weight_bound() == part.interior_weight_bound()
    assert c.error_bound() == int(part.interior_weight_bound()) + inner._error_bound(c.beta / 2, 100)
    assert c.counter == "kary" and c.horizon == 100


def test_bad_parameters():
    ok = dict(horizon=100, epsilon=1.0)
    for kw, err, msg in [(dict(structure="tree"), ParameterError, "structure"),
                         (dict(structure=3), TypeError, "structure"),
                         (dict(partition_share=0), ParameterError, "partition_share"),
                         (dict(partition_share=1.0), ParameterError, "partition_share"),
                         (dict(partition_share=float("nan")), ParameterError, "partition_share"),
                         (dict(partition_share="half"), TypeError, "partition_share"),
                         (dict(beta=0), ParameterError, "beta"), (dict(beta=1.5), ParameterError, "beta"),
                         (dict(horizon=0), ParameterError, "horizon"), (dict(horizon=2**63), ParameterError, "horizon"),
                         (dict(epsilon=-1), ParameterError, "epsilon"), (dict(rng=5), TypeError, "rng")]:
        with pytest.raises(err, match=msg):
            SparseStreamCounter(**{**ok, **kw})


def test_bad_sparse_input_consumes_nothing():
    c = SparseStreamCounter(horizon=1000, epsilon=1.0, rng=Rng(9))
    c.update_sparse([3, 5], until=10)
    state = c.to_state()
    for kw, err, msg in [(dict(positions=[10]), DomainError, "positions"),
                         (dict(positions=[12, 11]), DomainError, "non-decreasing"),
                         (dict(positions=[1001]), DomainError, "positions"),
                         (dict(positions=[11.5]), TypeError, "positions"),
                         (dict(positions=[[11]]), DomainError, "one-dimensional"),
                         (dict(positions=[11, 12], weights=[1]), DomainError, "weights"),
                         (dict(positions=[11], weights=[-1]), DomainError, "weights"),
                         (dict(positions=[11], weights=[2**61]), DomainError, "weights"),
                         (dict(positions=[20], until=19), DomainError, "until"),
                         (dict(positions=[], until=5), DomainError, "until"),
                         (dict(positions=[20], until=1001), HorizonError, "horizon")]:
        with pytest.raises(err, match=msg):
            c.update_sparse(**kw)
    with pytest.raises(HorizonError):
        c.update_many(np.zeros(991, dtype=np.int64))
    with pytest.raises(DomainError):
        c.update(-1)
    assert c.to_state() == state
    times, values = c.update_sparse([], until=10)
    assert len(times) == len(values) == 0


def test_advancing_without_items_seals_and_releases():
    """update_sparse with no positions still advances, seals (the last
    position always does) and feeds the sealed counts to the inner counter."""
    c = SparseStreamCounter(horizon=1000, epsilon=NOISELESS, rng=Rng(15))
    c.update_sparse([3, 5], until=10)
    times, values = c.update_sparse([], until=1000)
    assert c.time == 1000 and times[-1] == 1000 and values[-1] == 2 == c.release
    assert SparseStreamCounter.from_state(c.to_state()).to_state() == c.to_state()

def without_rng(state):
    """A checkpoint minus the generator positions (which differ when another rng is given)."""
    out = {k: v for k, v in state.items() if k != "rng"}
    if "inner" in out:
        out["inner"] = without_rng(out["inner"])
    return out


# ------------------------------------------------------------- max_items
def test_max_items_sets_the_inner_horizon_whatever_d():
    """DNRR Theorem 3.1: with max_items = n the inner counter runs over
    min(D, n + 1) segments, so its height and noise do not grow with D."""
    inner = []
    for d in (2**20, 2**40, 2**62):
        c = SparseStreamCounter(horizon=d, epsilon=1.0, max_items=10**4, rng=Rng(1))
        assert (c.horizon, c.max_items, c.inner_horizon, c.max_item) == (d, 10**4, 10**4 + 1, 10**4)
        inner.append((c._inner.height, c._inner.noise_scale))
        without = SparseStreamCounter(horizon=d, epsilon=1.0, rng=Rng(1))
        assert without.inner_horizon == d and without.max_items is None and without.max_item == 2**60
        assert c.error_bound() < without.error_bound()
    assert inner[0] == inner[1] == inner[2]
    assert SparseStreamCounter(horizon=50, epsilon=1.0, max_items=10**4).inner_horizon == 50


def test_max_items_stream_to_the_end_and_checkpoint():
    xs = random_stream(20000, 300, 21)
    n = int(xs.sum())
    c = SparseStreamCounter(horizon=20000, epsilon=NOISELESS, max_items=n, rng=Rng(21))
    out = c.update_many(xs[:5000])
    b = SparseStreamCounter.from_state(json.loads(json.dumps(c.to_state())))
    assert b.max_items == n and b.inner_horizon == n + 1
    rest = c.update_many(xs[5000:])
    np.testing.assert_array_equal(b.update_many(xs[5000:]), rest)
    assert c.release == n and c.segments <= n + 1
    assert np.all(out <= np.cumsum(xs[:5000]))
    state = c.to_state()
    assert state["max_items"] == n and "max_items" not in SparseStreamCounter(
        horizon=10, epsilon=1.0).to_state()
    for bad in (dict(state, max_items=0), dict(state, max_items=n + 1), dict(state, max_items=2**61)):
        with pytest.raises(FormatError):
            SparseStreamCounter.from_state(json.loads(json.dumps(bad)))


@pytest.mark.parametrize("how", ["dense", "sparse"])
def test_more_seals_than_max_items_allows_spends_the_counter(how, monkeypatch):
    """If the partition seals more segments than max_items + 1 (an empty
    seal: probability <= beta sqrt(beta/2D) for a stream within its bound;
    forced here), the update raises before releasing anything and the
    counter refuses every later update and checkpoint."""
    c = SparseStreamCounter(horizon=1000, epsilon=1.0, max_items=3, rng=Rng(22))
    c.update_sparse([5], until=10)
    segments, release = c.segments, c.release
    fake = np.arange(20, 20 + c.inner_horizon - segments + 1, dtype=np.uint64)  # one seal too many
    if how == "dense":
        monkeypatch.setattr(c._partition, "feed", lambda counts: fake)
        call = lambda: c.update_many(np.zeros(100, dtype=np.int64))  # noqa: E731
    else:
        monkeypatch.setattr(c._partition, "feed_sparse", lambda pos, cnt, n: fake)
        call = lambda: c.update_sparse([11], until=200)  # noqa: E731
    with pytest.raises(HorizonError, match="spent.*max_items \\+ 1 = 4"):
        call()
    assert c.segments == segments and c.release == release  # nothing was released
    for again in (lambda: c.update(0), lambda: c.update_sparse([], until=300), c.to_state,
                  lambda: persist.save(c, "never-written")):
        with pytest.raises(HorizonError, match="spent"):
            again()
    assert not os.path.exists("never-written")


@pytest.mark.parametrize("d", [2, 3, 1000, 2**40, 2**62])
@pytest.mark.parametrize("eps,beta,share", [(1.0, 0.05, 0.5), (0.1, 0.3, 0.5), (5.0, 0.9, 0.1),
                                            (1.0, 1e-6, 0.9)])
def test_spent_probability_is_at_most_beta_over_2(d, eps, beta, share):
    """The union bound of the class docstring: delta0 <= beta sqrt(beta/2D) <= beta/2."""
    c = SparseStreamCounter(horizon=d, epsilon=eps, beta=beta, partition_share=share, max_items=5)
    delta0 = c.empty_seal_probability()
    assert delta0 <= beta * math.sqrt(beta / (2 * d)) * (1 + 1e-9) <= beta / 2


def test_total_bound_is_exact_and_public():
    """The total weight is compared with its public bound in exact integers:
    the bound itself is released, one more raises before anything changes,
    whatever the float64 rounding of the sum (the old filter released
    2**61 - 129 and refused 2**61 - 128)."""
    for bound, kw in ((2**60, {}), (10**6, {"max_items": 10**6}), (2**60, {"max_items": 2**60})):
        c = SparseStreamCounter(horizon=100, epsilon=NOISELESS, rng=Rng(23), **kw)
        c.update_many([bound - 3, 1])
        state = c.to_state()
        for call in (lambda: c.update_many([0, 3]), lambda: c.update_sparse([50, 60], [1, 2]),
                     lambda: c.update(3), lambda: c.update_many([2**62])):
            with pytest.raises(DomainError, match=f"(public bound {bound} |\\[0, {bound}\\])") as info:
                call()
            assert str(bound + 1) not in str(info.value)
        assert c.to_state() == state
        out = c.update_sparse([50, 60], [1, 1], until=100)[1]
        assert c.release == bound and out[-1] == bound
    c = SparseStreamCounter(horizon=100, epsilon=NOISELESS, rng=Rng(23))
    with pytest.raises(DomainError, match=str(2**60)):
        c.update_many([2**61 - 129])
    # many items summing past int64 are summed exactly, not wrapped
    with pytest.raises(DomainError, match="public bound"):
        c.update_many(np.full(16, 2**60, dtype=np.int64))
    assert c.time == 0


def test_messages_carry_no_data_values():
    c = SparseStreamCounter(horizon=1000, epsilon=1.0, max_items=10**6, rng=Rng(24))
    c.update_sparse([3, 5], until=10)
    for kw in (dict(positions=[123457]), dict(positions=[7]), dict(positions=[20, 98765], until=500),
               dict(positions=[11], weights=[987654321])):
        with pytest.raises((DomainError, HorizonError)) as info:
            c.update_sparse(**kw)
        assert not any(v in str(info.value) for v in ("123457", "98765", "987654321", "[7", " 7]"))
    with pytest.raises(DomainError) as info:
        c.update_many([0, 987654321])
    assert "987654321" not in str(info.value)


def test_arguments_are_checked_before_the_budget_is_charged():
    """Issue: SparseStreamCounter(horizon=10**6, epsilon=1e-12, budget=b) used
    to charge b before the inner counter refused its noise scale."""
    b = ps.Budget(1)
    rng = Rng(25)
    before = rng._to_state()
    for kw in (dict(epsilon=1e-12), dict(epsilon=1e-15), dict(max_items=0), dict(max_items=2**60 + 1),
               dict(max_items=1.5), dict(structure="kary19"), dict(beta=1), dict(partition_share=1)):
        with pytest.raises((ParameterError, TypeError)):
            SparseStreamCounter(**{"horizon": 10**6, "epsilon": 0.5, "rng": rng, "budget": b, **kw})
    assert b.spent == 0 and rng._to_state() == before
    SparseStreamCounter(horizon=10**6, epsilon=0.5, max_items=100, budget=b)
    assert b.spent == Fraction(1, 2)


@pytest.mark.slow
def test_error_bound_with_max_items_holds_in_1_minus_beta_of_runs():
    beta, runs, horizon = 0.1, 300, 20000
    fails = 0
    rng = Rng(27)
    for r in range(runs):
        xs = bit_stream(horizon, 1500, 300 + r)
        c = SparseStreamCounter(horizon=horizon, epsilon=1.0, beta=beta, max_items=1500, rng=rng)
        worst = np.abs(c.update_many(xs) - np.cumsum(xs)).max()
        fails += worst > c.error_bound()
    lo, _ = clopper_pearson(fails, runs)
    assert lo <= beta


# ------------------------------------------------------- threads and copies
def test_a_sparse_counter_shared_by_threads_stays_consistent(tmp_path):
    """The issue's case: threads hammering one counter used to leave time and
    total inconsistent and a checkpoint that no longer loaded."""
    c = SparseStreamCounter(horizon=10**7, epsilon=1.0, max_items=10**6, rng=Rng(28))
    errors = []
    per_thread = 400

    def work(seed):
        try:
            for i in range(per_thread):
                if i % 2:
                    c.update(1)
                else:
                    c.update_many(np.ones(3, dtype=np.int64))
                if i % 100 == 0:
                    SparseStreamCounter.from_state(c.to_state())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    items = 4 * (per_thread // 2) * (1 + 3)
    assert c.time == items and c._total == items
    restored = SparseStreamCounter.from_state(json.loads(json.dumps(c.to_state())))
    assert restored.to_state() == c.to_state()
    persist.save(c, tmp_path / "sparse-threads")
    assert persist.load(tmp_path / "sparse-threads").time == items


def test_sparse_copies_and_pickles_are_refused():
    c = SparseStreamCounter(horizon=100, epsilon=1.0, rng=Rng(29))
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="secret noise"):
            attempt(c)


@pytest.mark.parametrize("seed", range(6))
def test_update_one_item_is_update_many_of_one(seed):
    """update(x) takes a scalar path: the same draws, releases and checkpoint as
    update_many([x]) item by item (monotone or not, both inner counters, max_items)."""
    gen = np.random.default_rng(seed)
    xs = (gen.random(2000) < 0.5).astype(np.int64) * gen.integers(1, 3, 2000)
    kw = dict(horizon=2**20, epsilon=1, structure="binary" if seed % 2 else "kary")
    if seed % 3 == 0:
        kw["max_items"] = 5000
    monotone = seed % 2 == 0
    a = ps.SparseStreamCounter(**kw, rng=ps.Rng(seed=seed))
    b = ps.SparseStreamCounter(**kw, rng=ps.Rng(seed=seed))
    got = [a.update(int(x), monotone=monotone) for x in xs]
    want = [int(b.update_many([int(x)], monotone=monotone)[0]) for x in xs]
    assert got == want and a.segments > 3
    assert str(a.to_state()) == str(b.to_state())


def test_update_one_item_refuses_like_update_many():
    c = ps.SparseStreamCounter(horizon=4, epsilon=1, max_items=3, rng=ps.Rng(seed=1))
    with pytest.raises(DomainError):
        c.update(-1)
    with pytest.raises(TypeError):
        c.update(1.5)
    with pytest.raises(DomainError):
        c.update(4)                          # above the total bound: nothing consumed
    assert c.time == 0
    for _ in range(4):
        c.update(0)
    with pytest.raises(HorizonError):
        c.update(0)


def test_a_spent_counter_refuses_single_updates(monkeypatch):
    """The scalar path spends the counter as update_many does: a seal beyond the inner
    horizon (max_items + 1) raises before releasing, and every later update raises."""
    c = SparseStreamCounter(horizon=1000, epsilon=1.0, max_items=3, rng=Rng(22))
    monkeypatch.setattr(c._partition, "feed_one", lambda x: True)    # every position seals
    for _ in range(c.inner_horizon):
        c.update(0)
    segments, release = c.segments, c.release
    with pytest.raises(HorizonError, match="spent.*max_items \\+ 1 = 4"):
        c.update(0)
    assert c.segments == segments and c.release == release
    with pytest.raises(HorizonError, match="spent"):
        c.update(0)


def test_online_partition_feed_one_is_feed_of_one():
    a = ps.OnlinePartition(size=4000, epsilon=1, rng=ps.Rng(seed=4))
    b = ps.OnlinePartition(size=4000, epsilon=1, rng=ps.Rng(seed=4))
    counts = np.random.default_rng(4).integers(0, 3, 4000)
    got = [a.feed_one(int(x)) for x in counts]
    want = [bool(b.feed([int(x)]).size) for x in counts]
    assert got == want and a.segments.tolist() == b.segments.tolist() and sum(got) > 3
    with pytest.raises(HorizonError):
        a.feed_one(0)


def test_online_partition_feed_one_through_the_exact_fallback(monkeypatch):
    """feed_one's step (arguments allocated once) settles a pending exact
    decision and calls the kernel again as feed does: forced onto the
    decimal path, the same draws and seals as feed of one count each."""
    from pydp_synopsis import _exact

    settled = []
    settle = _exact.settle
    monkeypatch.setattr(_exact, "settle", lambda *a: settled.append(1) or settle(*a))
    counts = np.random.default_rng(6).integers(0, 3, 300)
    with _exact.forcing_exact(slack=1e300):
        a = ps.OnlinePartition(size=300, epsilon=2, rng=ps.Rng(seed=6))
        b = ps.OnlinePartition(size=300, epsilon=2, rng=ps.Rng(seed=6))
    got = [a.feed_one(int(x)) for x in counts]
    one = len(settled)
    want = [bool(b.feed([int(x)]).size) for x in counts]
    assert one > 20 and len(settled) > one              # both paths took the decimal decisions
    assert got == want and a.segments.tolist() == b.segments.tolist() and a.finished
    assert str(a.to_state()) == str(b.to_state())


def test_online_partition_feed_one_holds_the_generator_s_lock_and_caps_counts():
    """Each feed_one step takes the generator's lock once and releases it;
    a count above 2**62 is capped as feed caps it."""
    class Counting:
        def __init__(self):
            self.lock, self.acquired, self.released = threading.Lock(), 0, 0

        def acquire(self):
            self.acquired += 1
            return self.lock.acquire()

        def release(self):
            assert self.lock.locked()
            self.released += 1
            self.lock.release()

    rng = ps.Rng(seed=8)
    rng._lock = Counting()
    a = ps.OnlinePartition(size=50, epsilon=1, rng=rng)
    b = ps.OnlinePartition(size=50, epsilon=1, rng=ps.Rng(seed=8))
    before = rng._lock.acquired
    assert a.feed_one(2**70) == bool(b.feed(np.array([2**62], dtype=np.int64)).size)
    assert a.feed_one(0) == bool(b.feed([0]).size)
    assert rng._lock.acquired == rng._lock.released == before + 2 and not rng._lock.lock.locked()
    assert str(a.to_state()) == str(b.to_state())


@pytest.mark.parametrize("max_items", [None, 3])
def test_update_one_item_refusals_match_update_many_s(max_items):
    """update(x) refuses with the checked path's errors (the item check of
    ContinualCounter.update, then update_many's) and consumes nothing; numpy
    integers take the checked path with the same release."""
    kw = dict(horizon=5, epsilon=1, max_items=max_items)
    a, b = SparseStreamCounter(**kw, rng=Rng(9)), SparseStreamCounter(**kw, rng=Rng(9))
    assert a.update(np.int64(1)) == int(b.update_many([1])[0])
    assert a.update(1, monotone=True) == int(b.update_many([1], monotone=True)[0])
    bound = max_items or 2**60
    for bad in (-1, bound + 1):
        with pytest.raises(DomainError) as one:
            a.update(bad)
        assert str(one.value) == f"x must be an integer in [0, {bound}] (max_item, public)"
    # in range but over the total bound: update_many's message
    with pytest.raises(DomainError) as one:
        a.update(bound - 1)
    with pytest.raises(DomainError) as many:
        b.update_many([bound - 1])
    assert str(one.value) == str(many.value) and "total weight" in str(one.value)
    with pytest.raises(TypeError, match="monotone"):
        a.update(0, monotone=1.5)
    assert a.time == 2 and a.to_state() == b.to_state()
    for _ in range(3):
        assert a.update(0) == int(b.update_many([0])[0])
    with pytest.raises(HorizonError) as one:
        a.update(0)
    with pytest.raises(HorizonError) as many:
        b.update_many([0])
    assert str(one.value) == str(many.value)
