"""Two-phase privacy audits of every registered mechanism (issue #12, CI tier).

For each pair tagged ``ci`` (tests/privacy/mechanisms.py): events chosen on
one sample, the privacy loss bounded below on fresh samples (Clopper-Pearson,
alpha = 1e-6, Bonferroni over the events); the test fails if the lower bound
exceeds the epsilon the released object reports, and a pair tagged ``tight``
must show at least 0.8 epsilon, so the audit cannot go blind.  The long tier
is ``benchmarks/audit_privacy.py``.
"""
from fractions import Fraction

import pytest

import pydp_synopsis as ps

from privacy import MECHANISMS, TIGHT_FRACTION, Mechanism, Pair, audit_pair

CASES = [(name, p.name) for name, m in MECHANISMS.items() for p in m.tagged("ci")]


@pytest.mark.parametrize("name,pair", CASES, ids=[f"{n}: {p}" for n, p in CASES])
@pytest.mark.slow
def test_no_privacy_loss_above_epsilon(name, pair):
    mech = MECHANISMS[name]
    p = mech.pair(pair)
    r = audit_pair(mech, p, "ci")
    assert not r.violated, (f"privacy violated: loss lower bound {r.lower_bound:.4f} > "
                            f"epsilon {float(r.epsilon):.4f}; events {r.events}")
    if "tight" in p.tags:
        assert r.ratio >= TIGHT_FRACTION, (f"the audit went blind: lower bound {r.lower_bound:.4f}"
                                           f" < {TIGHT_FRACTION} epsilon on a tight pair")


def test_every_mechanism_has_a_tight_ci_pair():
    for mech in MECHANISMS.values():
        assert [p for p in mech.tagged("tight") if "ci" in p.tags], mech.name


@pytest.mark.parametrize("name", ["discrete_laplace", "counter/binary", "partition/offline"])
@pytest.mark.slow
def test_identical_inputs_show_no_loss(name):
    """Calibration: with x = x' every event has the same probability, so a lower
    bound above 0 would show the selection leaking into the test."""
    mech = MECHANISMS[name]
    p = mech.mutant_pair()
    r = audit_pair(mech, Pair("x = x'", p.x, p.x, params=p.params), "ci")
    assert r.lower_bound == 0.0, r.events


def test_audit_flags_a_mechanism_that_understates_epsilon():
    """The real sampler at scale 1/2 presented as if it were scale 1 (epsilon 1):
    its true loss is 2, and the audit must say so."""
    broken = Mechanism(
        name="understated", run=None, features=None, epsilon=None,
        sample=lambda shift, n, rng: (shift + ps.discrete_laplace(Fraction(1, 2), size=n, rng=rng),
                                      Fraction(1)),
        pairs=(Pair("shift", 0, 1),), samples=1.0)
    r = audit_pair(broken, broken.pairs[0], "ci")
    assert r.violated and r.lower_bound > 1.5
