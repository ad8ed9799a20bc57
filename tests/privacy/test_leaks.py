"""Leak checks (issue #12): besides the released arrays, nothing an analyst sees may
depend on the data -- exception texts, the ledger, reprs, the saved header and meta.

Releases on x and on x' that publish identical arrays (found among seeded
runs: tiny mechanisms collide often) must agree on everything else
(tests/privacy/leaks.py); saved files hold only whitelisted keys.
"""
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps

from privacy import MECHANISMS, Mechanism, Pair
from privacy.leaks import (ARRAY_KEYS, HEADER_KEYS, META_KEYS, SECRET_KINDS, colliding_releases,
                           saved_record, side_channels)

LEAKY = [name for name, m in MECHANISMS.items() if m.released is not None]


@pytest.mark.parametrize("name", LEAKY)
def test_side_channels_agree_when_the_releases_agree(name):
    mech = MECHANISMS[name]
    pair = mech.leak_pair()
    found = colliding_releases(mech, pair, runs=120, limit=2)
    assert found, "no colliding releases: the check would be vacuous"
    for a, b in found:
        assert side_channels(mech, a) == side_channels(mech, b)


@pytest.mark.parametrize("name", [n for n in LEAKY if MECHANISMS[n].charges])
def test_ledger_is_the_same_for_neighbours(name):
    mech = MECHANISMS[name]
    ledgers, refusals = [], []
    for pair in mech.pairs[:3]:
        params = {**mech.params, **pair.params}
        for data in (pair.x, pair.x_prime):
            budget = ps.Budget(100)
            mech.run(data, ps.Rng(seed=1), budget=budget, **params)
            ledgers.append((pair.name, budget.ledger))
            with pytest.raises(ps.BudgetError) as info:
                mech.run(data, ps.Rng(seed=1), budget=ps.Budget(Fraction(1, 1000)), **params)
            refusals.append((pair.name, str(info.value)))
    for got in (ledgers, refusals):
        assert all(got[i] == got[i + 1] for i in range(0, len(got), 2))


def _assert_whitelisted(header):
    assert set(header) <= HEADER_KEYS, set(header) - HEADER_KEYS
    kind = header["kind"]
    assert set(header["meta"]) <= META_KEYS[kind], set(header["meta"]) - META_KEYS[kind]
    names = {a["name"] for a in header["arrays"]}
    assert names <= ARRAY_KEYS[kind], names - ARRAY_KEYS[kind]


@pytest.mark.parametrize("name", [n for n in LEAKY if MECHANISMS[n].record is not None])
def test_saved_keys_are_on_the_whitelist(name):
    mech = MECHANISMS[name]
    for pair in mech.pairs:
        params = {**mech.params, **pair.params}
        release = mech.run(pair.x_prime, ps.Rng(seed=2), **params)
        _assert_whitelisted(saved_record(mech.record(release)))


def test_checkpoints_are_whitelisted_secret_kinds():
    for counter in (ps.BinaryTreeCounter(horizon=5, epsilon=1), ps.KaryTreeCounter(horizon=5, epsilon=1),
                    ps.SparseStreamCounter(horizon=5, epsilon=1)):
        counter.update_many([1, 0, 1])
        header = saved_record(counter)
        assert header["kind"] in SECRET_KINDS
        _assert_whitelisted(header)


def test_whitelist_check_fails_on_an_extra_key():
    header = saved_record(ps.IntervalSynopsis.build([1, 2], domain=(0, 7), epsilon=1))
    header["meta"]["n"] = 2
    with pytest.raises(AssertionError):
        _assert_whitelisted(header)


class _Leaky:
    """A real interval synopsis whose repr also shows the number of values (a side door)."""

    def __init__(self, syn, n):
        self.syn, self.n = syn, n

    def __repr__(self):
        return f"{self.syn!r} over {self.n} values"


def test_leak_check_catches_a_side_channel():
    """The collision check sees a repr that carries n (it cannot pass vacuously)."""
    inner = MECHANISMS["interval/hierarchical"]
    leaky = Mechanism(
        name="leaky", features=inner.features, epsilon=lambda r: r.syn.epsilon,
        run=lambda data, rng, **p: _Leaky(inner.run(data, rng, **p), len(data)),
        released=lambda r: inner.released(r.syn), pairs=inner.pairs, params=inner.params)
    found = colliding_releases(leaky, inner.mutant_pair(), runs=200, limit=1)
    assert found
    a, b = found[0]
    assert side_channels(leaky, a) != side_channels(leaky, b)


def test_neighbours_at_a_glance():
    """The catalogue's pairs really are neighbours: one item (point, unit) apart."""
    for mech in MECHANISMS.values():
        for pair in mech.pairs:
            x, y = pair.x, pair.x_prime
            if mech.name == "discrete_laplace":
                assert abs(y - x) == 1
            elif mech.name.startswith(("partition/online", "counter/")):
                diff = np.asarray(y, dtype=object) - np.asarray(x, dtype=object)
                assert sorted(diff.tolist()) == [0] * (len(x) - 1) + [1], (mech.name, pair.name)
            else:
                assert len(y) == len(x) + 1 and all(v in list(y) for v in list(x)), \
                    (mech.name, pair.name)
