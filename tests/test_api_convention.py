"""One API convention (issue 31 part 7): the new names work without a warning;
each old name still works, gives the same result, and warns with a
DeprecationWarning that names the new one (kept for one release)."""
import inspect
import pathlib
import warnings
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.rectangles.options import ADAPTIVE, ADAPTIVE_2D, DEFAULT_MULTITREE, DNRR


def _no_warning(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


def _warns(call, new):
    with pytest.warns(DeprecationWarning, match=new) as record:
        out = call()
    assert len(record) == 1
    assert record[0].filename == __file__          # raised at the caller's line
    return out


@pytest.fixture(scope="module")
def rect():
    pts = np.random.default_rng(0).integers(0, 64, (300, 2))
    pts[:40] = 7                                    # duplicates: multiplicity matters
    return ps.RectangleSynopsis.build(pts, domain=[(0, 63), (0, 63)], epsilon=1.0,
                                      config="dnrr", rng=ps.Rng(seed=5))


# ------------------------------------------------ error_bound(confidence, *, multiplicity)
def test_rectangle_multiplicity_is_the_keyword(rect):
    new = _no_warning(lambda: rect.error_bound(0.9, multiplicity=3))
    assert new == _no_warning(lambda: rect.error_bound(confidence=0.9, multiplicity=3))
    assert _no_warning(lambda: rect.error_bound(0.9)) == rect.error_bound(0.9, multiplicity=1)
    assert new > rect.error_bound(0.9)
    old = _warns(lambda: rect.error_bound(0.9, max_multiplicity=3), "multiplicity=")
    assert old == new
    terms = _no_warning(lambda: rect.error_terms(0.9, multiplicity=3))
    assert _warns(lambda: rect.error_terms(0.9, max_multiplicity=3), "multiplicity=") == terms
    bars = _no_warning(lambda: rect.confidence_intervals([[0, 0]], [[9, 9]], 0.9, multiplicity=3))
    old_bars = _warns(lambda: rect.confidence_intervals([[0, 0]], [[9, 9]], 0.9,
                                                        max_multiplicity=3), "multiplicity=")
    assert np.array_equal(bars.high, old_bars.high) and np.array_equal(bars.bias, old_bars.bias)


def test_rectangle_old_and_new_multiplicity_together_refused(rect):
    with pytest.raises(ps.ParameterError, match="multiplicity= only"):
        rect.error_bound(0.9, multiplicity=2, max_multiplicity=2)
    with pytest.raises(ps.ParameterError, match="multiplicity"):
        rect.error_bound(0.9, multiplicity=0)


@pytest.mark.parametrize("cls", [ps.BinaryTreeCounter, ps.KaryTreeCounter])
def test_tree_counter_confidence_is_the_keyword(cls):
    c = cls(horizon=200, epsilon=1, rng=ps.Rng(seed=1))
    new = _no_warning(lambda: c.error_bound(confidence=0.9))
    assert _no_warning(c.error_bound) == c.error_bound(confidence=0.95)
    assert new < c.error_bound(confidence=0.999)
    # release 0.2's error_bound(beta), positional or keyword: the same bound as before
    old = _warns(lambda: c.error_bound(0.1), "confidence=1 - beta")
    assert old == _warns(lambda: c.error_bound(beta=0.1), "confidence=1 - beta")
    assert old == c._error_bound(0.1)
    assert abs(old - new) <= 1                      # 1 - 0.9 is 0.1 up to rounding
    assert _warns(lambda: c.error_bound(0.1, 5), "confidence") == c._error_bound(0.1, 5)
    with pytest.raises(ps.ParameterError, match="confidence=1 - beta only"):
        c.error_bound(0.1, confidence=0.9)


def test_sparse_counter_weight_keyword_and_confidence():
    c = ps.SparseStreamCounter(horizon=5000, epsilon=1.0, rng=ps.Rng(seed=2))
    c.update_many(np.zeros(100, dtype=np.int64))
    new = _no_warning(lambda: c.error_bound(weight=60))
    assert _warns(lambda: c.error_bound(60), "weight=") == new     # 0.2: error_bound(weight)
    default = _no_warning(c.error_bound)
    assert _no_warning(lambda: c.error_bound(confidence=0.9)) <= default
    assert c.error_bound(confidence=0.97) > default
    assert c.error_bound(confidence=0.9, weight=60) <= c.error_bound(confidence=0.9)
    with pytest.raises(ps.ParameterError, match="confidence must be < 1 - beta/2"):
        c.error_bound(confidence=1 - c.beta / 4)
    with pytest.raises(ps.ParameterError, match="weight= only"):
        c.error_bound(60, weight=60)


def test_interval_error_bound_takes_confidence_positionally_or_by_keyword():
    s = ps.IntervalSynopsis.build(list(range(0, 4000, 3)), domain=(0, 3999), epsilon=1.0,
                                  partition="dnrr", estimator="cover", rng=ps.Rng(seed=4))
    assert _no_warning(lambda: s.error_bound(0.9)) == s.error_bound(confidence=0.9, multiplicity=1)
    assert s.error_bound(0.9, multiplicity=5) > s.error_bound(0.9)


# ------------------------------------------------ one default per name: documented where not
def test_defaults_of_one_name_are_the_documented_ones():
    """threshold_factor and partition_share differ by structure (changing one would change
    seeded releases): docs/guide/choosing.md's table is what the code does."""
    text = (pathlib.Path(__file__).parents[1] / "docs/guide/choosing.md").read_text()
    assert "## One name, different defaults" in text
    online = ps.OnlinePartition(size=100, epsilon=1.0, rng=ps.Rng(seed=1))
    sparse = ps.SparseStreamCounter(horizon=100, epsilon=1.0, rng=ps.Rng(seed=1))
    part = ps.private_partition([1, 2, 3], domain=(0, 99), epsilon=1.0, rng=ps.Rng(seed=1))
    interval = ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 99), epsilon=1.0, partition="dnrr",
                                         rng=ps.Rng(seed=1))
    assert part.threshold_factor == 3 and online.threshold == part.threshold   # D = 100 both
    assert inspect.signature(ps.Partition).parameters["threshold_factor"].default == 3
    assert sparse.threshold == ps.OnlinePartition(size=100, epsilon=sparse.epsilon_partition,
                                                  beta=sparse.beta / 2).threshold
    assert interval.partition.threshold_factor == 1
    assert interval.epsilon_partition == Fraction(1, 4)
    assert inspect.signature(ps.SparseStreamCounter).parameters["partition_share"].default == 0.5
    assert (DEFAULT_MULTITREE.threshold_factor, DEFAULT_MULTITREE.partition_share) == (1, 0.1)
    assert (DNRR.threshold_factor, DNRR.partition_share) == (3, 0.5)
    assert (ADAPTIVE_2D.threshold_factor, ADAPTIVE.threshold_factor) == (0.7, 1)
    assert ADAPTIVE_2D.partition_share == ADAPTIVE.partition_share == 0.25
    for row in ("| `threshold_factor` | `IntervalSynopsis.build(partition=\"dnrr\")` | 1 |",
                "| `partition_share` | `ps.SparseStreamCounter` | 0.5 |",
                "| `partition_share` | `RectangleSynopsis.build(config=\"default\")` (multi-tree) | 0.1 |"):
        assert row in text


# ------------------------------------------------ one keyword chooses a structure: structure=
def test_interval_structure_is_the_keyword():
    vals = np.random.default_rng(3).integers(0, 1000, 500)
    kw = dict(domain=(0, 999), epsilon=1.0)
    new = _no_warning(lambda: ps.IntervalSynopsis.build(vals, structure="binary", rng=ps.Rng(seed=2), **kw))
    old = _warns(lambda: ps.IntervalSynopsis.build(vals, tree="binary", rng=ps.Rng(seed=2), **kw),
                 r"build\(tree=\) is deprecated, use structure=")
    assert new.structure == old.structure == new.tree == "binary"
    assert np.array_equal(new.count_many([0, 10], [999, 500]), old.count_many([0, 10], [999, 500]))
    default = _no_warning(lambda: ps.IntervalSynopsis.build(vals, rng=ps.Rng(seed=2), **kw))
    assert default.structure == "hierarchical"
    with pytest.raises(ps.ParameterError, match="structure= only"):
        ps.IntervalSynopsis.build(vals, structure="binary", tree="binary", **kw)


def test_sparse_counter_structure_is_the_keyword():
    kw = dict(horizon=1000, epsilon=1.0)
    new = _no_warning(lambda: ps.SparseStreamCounter(structure="binary", rng=ps.Rng(seed=1), **kw))
    old = _warns(lambda: ps.SparseStreamCounter(counter="binary", rng=ps.Rng(seed=1), **kw),
                 r"SparseStreamCounter\(counter=\) is deprecated, use structure=")
    assert new.structure == old.structure == old.counter == "binary"
    assert _no_warning(lambda: ps.SparseStreamCounter(**kw)).structure == "kary"
    items = np.zeros(1000, dtype=np.uint8)
    items[::7] = 1
    assert np.array_equal(new.update_many(items), old.update_many(items))
    with pytest.raises(ps.ParameterError, match="structure= only"):
        ps.SparseStreamCounter(structure="binary", counter="binary", **kw)
