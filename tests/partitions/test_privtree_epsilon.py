"""PrivTree budgets from a split of a float epsilon (``privtree_epsilon``).

A share of a share of a float epsilon can leave a denominator near 2**62, and
PrivTree's scale ``lambda = 7 / (3 epsilon)`` then has a numerator the
samplers cannot take: builds with ordinary epsilons (0.3, 0.7, 2/3) were
refused with "epsilon of the PrivTree partition must be >= 3 / 2**48".  The
budget is now rounded down just enough, only where it must be; a budget that
fits is returned unchanged, so no release that was possible changes.
"""
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis._core import LIMITS
from pydp_synopsis.params import exact_epsilon, split_epsilon
from pydp_synopsis.partitions.merge import merge_epsilons
from pydp_synopsis.partitions.privtree import privtree_epsilon, privtree_parameters

FLOATS = [0.3, 0.7, 0.9, 1 / 3, 2 / 3, 0.44030375005569383, 0.013833492358743824, 2.3, 1e-9]
SHARES = [Fraction(1, 4), Fraction(1, 5), Fraction(5, 16), Fraction(7, 20), 0.3, 0.35, 1 / 3]


def _fits(e):
    lim = LIMITS.param_limit
    return all(x.numerator < lim and x.denominator < lim
               for x in (Fraction(3) / e, Fraction(7, 3) / e))


@pytest.mark.parametrize("eps", FLOATS)
@pytest.mark.parametrize("share", SHARES)
def test_a_share_of_a_share_is_rounded_down_only_when_it_must_be(eps, share):
    e = exact_epsilon(eps)
    first = exact_epsilon(e * Fraction(share) * Fraction(5, 16))
    got = privtree_epsilon(first, e)
    if _fits(first):
        assert got == first                          # unchanged: no release moves
    else:
        assert 0 < got < first and float(first - got) < 2.0**-58
        assert (e - got).denominator < 2**62                  # the rest stays exact
    assert _fits(got)
    for fanout in (2, 4):
        privtree_parameters(got, fanout)             # never refused for a usable epsilon


@pytest.mark.parametrize("eps", [3.3, 17.1, 1000.7, 2.0**40 - 0.5])
def test_a_large_epsilon_moves_by_a_tiny_share_of_itself(eps):
    e = exact_epsilon(eps)
    first = exact_epsilon(e * Fraction(5, 16) * Fraction(0.35))
    got = privtree_epsilon(first, e)
    assert _fits(got) and got <= first
    assert float(first - got) < 2.0**-58 * max(1.0, float(first))


def test_small_rationals_are_returned_as_they_are():
    for e in (Fraction(1, 10), Fraction(9, 128), Fraction(1, 3), Fraction(33, 64), Fraction(2**40)):
        assert privtree_epsilon(e) == e


def test_an_epsilon_too_small_to_round_is_left_for_privtree_parameters_to_refuse():
    tiny = Fraction(1, 2**61)
    assert privtree_epsilon(tiny) == tiny
    with pytest.raises(ps.ParameterError, match="PrivTree"):
        privtree_parameters(tiny, 4)


def test_split_epsilon_rounds_only_the_first_part_and_gives_the_rest_what_is_left():
    e = exact_epsilon(0.3) * Fraction(3, 4)
    plain = split_epsilon(e, Fraction(5, 16))
    rounded = split_epsilon(e, Fraction(5, 16), round_first=privtree_epsilon)
    assert not _fits(plain[0]) and _fits(rounded[0])
    assert rounded[0] < plain[0]
    assert rounded[0] + rounded[1] == e                         # the parts still add up
    assert split_epsilon(Fraction(1), Fraction(1, 4), round_first=privtree_epsilon) == \
        (Fraction(1, 4), Fraction(3, 4))
    with pytest.raises(ValueError, match="round_first"):
        split_epsilon(Fraction(1), Fraction(1, 4), round_first=lambda x, whole: x * 2)


def test_merge_epsilons_round_the_privtree_part_only():
    e = exact_epsilon(0.3) * Fraction(7, 20)
    eps_1, eps_m = merge_epsilons(exact_epsilon(e), Fraction(3, 10))
    assert _fits(eps_1) and eps_1 + eps_m == exact_epsilon(e)
    assert merge_epsilons(Fraction(1, 4), Fraction(1, 4)) == (Fraction(3, 16), Fraction(1, 16))


@pytest.mark.parametrize("eps", [0.3, 0.7, 2 / 3, 0.44030375005569383])
@pytest.mark.parametrize("opts", [dict(structure="quadtree"),
                                  dict(structure="quadtree", partition_share=0.3),
                                  dict(structure="quadtree", partition_share=0.35, split_share=0.3)])
def test_quadtree_builds_at_ordinary_float_epsilons(eps, opts):
    rng = np.random.default_rng(1)
    pts = rng.integers(0, 1000, (400, 2))
    syn = ps.RectangleSynopsis.build(pts, domain=[(0, 999), (0, 999)], epsilon=eps,
                                     rng=ps.Rng(seed=2), **opts)
    assert syn.structure == "quadtree"
    assert syn.epsilon <= exact_epsilon(eps)
    assert float((exact_epsilon(eps) - syn.epsilon) / exact_epsilon(eps)) < 1e-15
    if opts == dict(structure="quadtree"):                    # shares 1/4 and 5/16: nothing lost
        assert syn.epsilon == exact_epsilon(eps)


@pytest.mark.parametrize("eps", [0.3, 2 / 3, 0.44030375005569383])
@pytest.mark.parametrize("opts", [dict(partition_share=0.35), dict(partition_share=1 / 3,
                                                                   privtree_fanout=4),
                                  dict(partition_share=0.45, privtree_merge=0.25),
                                  dict(partition_share=1 / 3, privtree_fanout=4,
                                       privtree_merge=0.3)])
def test_intervals_build_at_ordinary_float_epsilons_and_shares(eps, opts):
    x = np.random.default_rng(3).integers(0, 1000, 500)
    syn = ps.IntervalSynopsis.build(x, domain=(0, 999), epsilon=eps, rng=ps.Rng(seed=4), **opts)
    assert syn.epsilon <= exact_epsilon(eps)             # float shares: each part rounded down
    assert float((exact_epsilon(eps) - syn.epsilon) / exact_epsilon(eps)) < 1e-15


def test_the_rounding_is_the_largest_fraction_below_with_a_bounded_denominator():
    from pydp_synopsis.partitions.privtree import _floor_fraction   # the helper under test
    rng = np.random.default_rng(5)
    for _ in range(300):
        x = Fraction(int(rng.integers(1, 10**9)), int(rng.integers(1, 10**9)))
        q_max = int(rng.integers(1, 60))
        best = max(Fraction(int(np.floor(x * q)), q) for q in range(1, q_max + 1))
        assert _floor_fraction(x, q_max) == best
