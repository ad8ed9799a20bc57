"""Every detector catches its mutant (issue #12): no test that cannot fail.

A build of the C core with the test-only mutants (``PDS_TEST_MUTANTS=1``,
csrc/mutation.c) runs each registered mechanism's tight pair under each
mutant it declares; the audit (or, for the partitions, the exact-law test)
must flag every one, and with no mutant selected the same build must pass.
The release build refuses the switch.  The detectors run in a child process
started right after collection (tests/conftest.py, tests/privacy/mutants.py).
"""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis._core import lib

from privacy import MECHANISMS, MUTANTS
from privacy.mutants import BASELINES, background_results

pytestmark = pytest.mark.mutants     # a separate C build in a child process

CASES = [(name, m) for name, mech in MECHANISMS.items() for m in mech.mutants]


@pytest.fixture(scope="module")
def detections():
    return {(r["mechanism"], r["mutant"]): r for r in background_results()}


@pytest.mark.parametrize("name,mutant", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_mutant_is_detected(detections, name, mutant):
    r = detections[(name, mutant)]
    assert r["detected"], (f"{mutant} survived on {name} ({r['pair']}): privacy-loss lower bound "
                           f"{r['lower_bound']:.3f} <= epsilon {r['epsilon']:.3f}, "
                           f"exact-law p-value {r['law_pvalue']}")


@pytest.mark.parametrize("name", BASELINES)
def test_mutant_build_without_a_mutant_passes(detections, name):
    r = detections[(name, "none")]
    assert not r["detected"], r


def test_every_mechanism_declares_mutants_and_a_tight_pair():
    for mech in MECHANISMS.values():
        assert mech.mutants and set(mech.mutants) <= set(MUTANTS), mech.name
        assert mech.mutant_pair() in mech.tagged("tight"), mech.name


def test_release_build_refuses_the_switch():
    """No mutant exists in this build: every request is refused, and the releases
    under a seed are the same before and after the attempts."""
    def release():
        rng = ps.Rng(seed=11)
        return (ps.discrete_laplace(2, size=50, rng=rng).tolist(),
                ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 7), epsilon=1, rng=rng)
                .count_many([0], [7]).tolist())
    before = release()
    for code in (*MUTANTS.values(), 0, -1, 99):
        assert lib.pds_test_mutation(code) == lib.PDS_EINVAL
    assert release() == before
    assert not any(name.startswith("pds_mutate") for name in dir(lib))
