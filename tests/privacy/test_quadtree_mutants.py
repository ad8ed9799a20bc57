"""The quadtree's Python-level mutants are caught, and the honest build passes the same
detectors (tests/privacy/quadtree_mutants.py: what each mutant breaks, how it is
switched on in the test process only, and the two detectors).

The C mutants reach the quadtree too: its registration declares them, and
tests/privacy/test_mutants.py runs them on its tight pair.
"""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.rectangles import quadtree as qt

from privacy import MECHANISMS
from privacy.quadtree import SPLIT_PAIR
from privacy.quadtree_mutants import (DETECTOR_PAIR, MUTANTS, NAME, TIGHT_PAIR, detect, mutant,
                                      probe_depth_law)


def _release(pair_name, seed=5):
    mech = MECHANISMS[NAME]
    pair = mech.pair(pair_name)
    params = {**mech.params, **pair.params}
    syn = mech.run(pair.x_prime, ps.Rng(seed=seed), **params)
    return mech.released(syn)


def _same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_mutant_changes_the_release_and_is_undone(name):
    """Under a seed the mutant's release differs from the honest one; after the block
    the module holds its own functions again and the release is the honest one."""
    names = ("grow", "discrete_laplace", "privtree_parameters")
    before = {k: getattr(qt, k) for k in names}
    honest = _release(DETECTOR_PAIR[name])
    with mutant(name):
        changed = _release(DETECTOR_PAIR[name])
    assert not _same(honest, changed)
    assert {k: getattr(qt, k) for k in names} == before
    assert _same(_release(DETECTOR_PAIR[name]), honest)


def test_a_failing_release_restores_the_module():
    before = qt.privtree_parameters
    with pytest.raises(ZeroDivisionError):
        with mutant("split_delta_zero"):
            assert qt.privtree_parameters is not before
            raise ZeroDivisionError
    assert qt.privtree_parameters is before


def test_probe_depth_law_is_a_law():
    mech = MECHANISMS[NAME]
    pair = mech.pair(SPLIT_PAIR)
    params = {**mech.params, **pair.params}
    for data in (pair.x, pair.x_prime):
        outcomes, probs = probe_depth_law(data, params)
        assert outcomes == [-1, 0, 1, 2, 3, 4, 5] and probs[0] == 0
        assert abs(sum(probs) - 1) < 1e-12 and min(probs[2:]) > 0.001
    # the neighbour's point makes the probe's leaf at depth 4 or 5 likelier by about
    # e^(2.14 / lambda) (tests/privacy/quadtree.py)
    p, p_prime = (sum(probe_depth_law(d, params)[1][-2:]) for d in (pair.x, pair.x_prime))
    assert 1.5 < np.log(p_prime / p) < 2.0


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutant_is_detected(name):
    """The leaves' mutants by the audit on the tight pair (a lower bound above epsilon);
    the split test's by the exact law of the probe's depth on the split pair (their audit,
    also above epsilon, takes ~100 s each: ``python -m privacy.quadtree_mutants``)."""
    split = DETECTOR_PAIR[name] == SPLIT_PAIR
    r = detect(name, audit=not split, law_runs=1000)
    assert r["detected"], r
    assert r["by"] == ("exact law" if split else "audit"), r


@pytest.mark.slow
def test_honest_build_passes_the_mutant_detectors():
    r = detect(None, TIGHT_PAIR)
    assert not r["detected"] and r["lower_bound"] > 0.6 * r["epsilon"], r   # not blind
    r = detect(None, SPLIT_PAIR, audit=False, law_runs=1000)
    assert not r["detected"], r
