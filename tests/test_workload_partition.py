"""The partition a declared workload class picks before the release (issue 33, item 1 with item 2):
a public rule, explicit options win, the release is the explicit build's, recorded and shown."""
import hashlib
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import cli
from pydp_synopsis.errors import FormatError, ParameterError
from pydp_synopsis.interval_record import from_record
from pydp_synopsis.sources import ArraySource
from pydp_synopsis.interval_workload import (PARTITION_RULE, PartitionChoice, TreeChoice,
                                             partition_for_workload, partition_rule)
from pydp_synopsis.workload import CLASSES

DOMAIN = (0, 2**20 - 1)
NONE = dict(partition=None, estimator=None, threshold_factor=None)


@pytest.fixture(scope="module")
def two_sets():
    rng = np.random.default_rng(3)
    a = rng.normal(4e5, 3e4, 20000).astype(np.int64).clip(*DOMAIN)
    b = rng.integers(0, 2**20, 5000)
    return a, b


def _same_release(x, y):
    return (np.array_equal(x.partition.end_offsets, y.partition.end_offsets)
            and np.array_equal(x._released, y._released)
            and (x.fanout, x.level_ratio, x.epsilon_partition, x.epsilon_tree)
            == (y.fanout, y.level_ratio, y.epsilon_partition, y.epsilon_tree))


def test_rule_reads_only_public_inputs(two_sets):
    # no data argument at all: the same declared inputs give the same choice
    for name in CLASSES:
        f, s, choice = partition_for_workload(name, 1.0, privtree_fanout=None,
                                              partition_share=None, **NONE)
        assert (f, s) == partition_rule(name, Fraction(1)) and choice.workload == name
        assert (choice.privtree_fanout, choice.partition_share) == (f, s)
        assert (choice.default_privtree_fanout,
                choice.default_partition_share) == (2, Fraction(1, 4))
    # two different data sets, the same declared inputs: the same partition mechanism
    a, b = two_sets
    for name in ("short", "long"):
        sa = ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=1),
                                       workload=name)
        sb = ps.IntervalSynopsis.build(b, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=2),
                                       workload=name)
        assert sa.workload.partition == sb.workload.partition
        assert sa.partition.fanout == sb.partition.fanout == partition_rule(name, Fraction(1))[0]
        assert sa.epsilon_partition == sb.epsilon_partition == partition_rule(name,
                                                                              Fraction(1))[1]


@pytest.mark.parametrize("name, eps, share, want", [
    ("short", Fraction(1, 100), None, (4, Fraction(7, 20))),
    ("short", Fraction(3), None, (4, Fraction(7, 20))),
    ("short", Fraction(1), Fraction(1, 10), (4, Fraction(1, 10))),
    ("mixed", Fraction(1, 10), None, (2, Fraction(1, 4))),
    ("mixed", Fraction(3), Fraction(1, 2), (2, Fraction(1, 2))),
    ("long", Fraction(10), None, (2, Fraction(1, 4))),
    ("declared", Fraction(10), None, (2, Fraction(1, 4))),
])
def test_rule_values(name, eps, share, want):
    assert partition_rule(name, eps, share) == want


def test_rule_form_takes_the_4_ary_tree_from_an_epsilon_p(monkeypatch):
    monkeypatch.setitem(PARTITION_RULE, "mixed", (None, Fraction(1, 4)))
    assert partition_rule("mixed", Fraction(99, 100)) == (2, Fraction(1, 4))
    assert partition_rule("mixed", Fraction(1)) == (4, Fraction(1, 4))
    assert partition_rule("mixed", Fraction(1, 2), Fraction(1, 2)) == (4, Fraction(1, 2))


def test_rule_covers_the_classes_and_nothing_else():
    assert set(PARTITION_RULE) == set(CLASSES)
    # declared queries, no workload, garbage: the default, no choice recorded
    for wl in (None, ([1], [2]), "nonsense", 7):
        assert partition_for_workload(wl, 1.0, privtree_fanout=None, partition_share=None,
                                      **NONE) == (2, None, None)


@pytest.mark.parametrize("given, want, explicit", [
    (dict(privtree_fanout=2), (2, Fraction(7, 20)), ("privtree_fanout",)),
    (dict(partition_share=0.3), (4, Fraction(3, 10)), ("partition_share",)),
    (dict(privtree_fanout=2, partition_share=0.25), (2, Fraction(1, 4)),
     ("privtree_fanout", "partition_share")),
])
def test_explicit_options_win_over_the_rule(two_sets, given, want, explicit):
    a, _ = two_sets
    syn = ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=4),
                                    workload="short", **given)
    p = syn.workload.partition
    assert (p.privtree_fanout, p.partition_share, p.explicit) == (*want, explicit)
    assert syn.partition.fanout == want[0] and syn.epsilon_partition == want[1]


def test_dnrr_and_declared_queries_keep_their_partition(two_sets):
    a, _ = two_sets
    for kw in (dict(partition="dnrr"), dict(threshold_factor=2),
               dict(estimator="seal_uniform")):
        syn = ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=4),
                                        workload="short", **kw)
        assert syn.workload.partition is None and syn.epsilon_partition == Fraction(1, 4)
    syn = ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=4),
                                    workload=([10, 500], [20, 900]))
    base = ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=4))
    assert syn.workload.partition is None
    assert np.array_equal(syn.partition.end_offsets, base.partition.end_offsets)


@pytest.mark.parametrize("name", CLASSES)
def test_the_rule_releases_exactly_the_explicit_build(two_sets, name):
    a, _ = two_sets
    f, s = partition_rule(name, Fraction(6, 5))
    kw = dict(domain=DOMAIN, epsilon=1.2, beta=0.1)
    ruled = ps.IntervalSynopsis.build(a, rng=ps.Rng(seed=7), workload=name, **kw)
    given = ps.IntervalSynopsis.build(a, rng=ps.Rng(seed=7), workload=name, privtree_fanout=f,
                                      partition_share=s, **kw)
    assert _same_release(ruled, given)
    # and its partition is the one an explicit build without a workload releases
    plain = ps.IntervalSynopsis.build(a, rng=ps.Rng(seed=7), privtree_fanout=f,
                                      partition_share=s, **kw)
    assert np.array_equal(ruled.partition.end_offsets, plain.partition.end_offsets)
    assert ruled.pure_epsilon == plain.pure_epsilon <= Fraction(6, 5)


def test_a_source_gets_the_same_rule_and_release(two_sets):
    a, _ = two_sets
    kw = dict(domain=DOMAIN, epsilon=1.0, workload="short")
    streamed = ps.IntervalSynopsis.build(ArraySource([a]), rng=ps.Rng(seed=1), **kw)
    memory = ps.IntervalSynopsis.build(a, rng=ps.Rng(seed=1), **kw)
    assert streamed.workload == memory.workload and streamed.workload.partition is not None
    assert _same_release(streamed, memory)


def test_default_release_is_unchanged_bit_for_bit():
    # digest of the release computed with the code before the rule (commit 4f5d85f)
    v = np.random.default_rng(11).integers(0, 40000, 30000)
    s = ps.IntervalSynopsis.build(v, domain=(0, 2**20 - 1), epsilon=0.7, rng=ps.Rng(seed=21))
    got = hashlib.sha256(np.asarray(s.partition.end_offsets, np.uint64).tobytes()
                         + np.asarray(s._released, np.int64).tobytes()).hexdigest()
    assert got == "88956a7a97007a477d789dcc32d45e8ae85734518a64f9ce75d29c6d8e5de468"
    assert len(s) == 444 and s.workload is None


def test_record_round_trip_and_refusals(tmp_path, two_sets):
    a, _ = two_sets
    syn = ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=6),
                                    workload="short", partition_share=0.4)
    syn.save(tmp_path / "s.pds")
    back = ps.load(tmp_path / "s.pds")
    assert back.workload == syn.workload
    assert back.workload.partition == PartitionChoice("short", 4, Fraction(2, 5), 2,
                                                      Fraction(1, 4), ("partition_share",))
    assert np.array_equal(back.count_many([0, 10**5], [4 * 10**5, 9 * 10**5]),
                          syn.count_many([0, 10**5], [4 * 10**5, 9 * 10**5]))
    kind, meta, arrays = syn._to_record()[:3]
    part = meta["workload"]["partition"]
    for bad in ({"privtree_fanout": 3}, {"partition_share": [3, 2]}, {"workload": "declared"},
                {"explicit": ["fanout"]}, {"partition_share": "x"}):
        rec = dict(meta, workload=dict(meta["workload"], partition=dict(part, **bad)))
        with pytest.raises(FormatError, match="workload partition"):
            from_record(rec, arrays, type(syn)._from_release)
    rec = dict(meta, workload=dict(meta["workload"], partition=dict(part, privtree_fanout=2,
                                                                    default_privtree_fanout=4)))
    with pytest.raises(FormatError, match="workload's partition is not"):
        from_record(rec, arrays, type(syn)._from_release)
    # a record written before the rule (no partition key) loads with partition None
    old = dict(meta["workload"])
    del old["partition"]
    assert TreeChoice.from_meta(old).partition is None
    rec = dict(meta, workload=old)
    assert from_record(rec, arrays, type(syn)._from_release).workload.partition is None


def test_info_prints_the_partition_choice(tmp_path, capsys, two_sets):
    a, _ = two_sets
    ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=1),
                              workload="short").save(tmp_path / "s.pds")
    ps.IntervalSynopsis.build(a, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=1),
                              workload="short", privtree_fanout=2).save(tmp_path / "e.pds")
    lines = {}
    for name in ("s", "e"):
        assert cli.main(["info", str(tmp_path / f"{name}.pds")]) == 0
        lines[name] = [l.strip() for l in capsys.readouterr().out.splitlines()
                       if "partition (rule for" in l]
    assert lines["s"] == ["partition (rule for short): privtree_fanout 4, partition_share 7/20 "
                          "(default 2, 1/4)"]
    assert lines["e"] == ["partition (rule for short): privtree_fanout 2, partition_share 7/20 "
                          "(default 2, 1/4); set by you: privtree_fanout"]


@pytest.mark.parametrize("given, words", [
    (dict(privtree_fanout=3), "privtree_fanout"),
    (dict(privtree_fanout="4"), "privtree_fanout"),
    (dict(privtree_fanout=4.0), "privtree_fanout"),
    (dict(partition_share="0.5"), "partition_share"),
    (dict(partition_share=1.5), "partition_share"),
    (dict(partition_share=0.5, privtree_merge=2.0), "privtree_merge"),
    (dict(privtree_fanout=4, partition="dnrr"), "partition='privtree' only"),
    (dict(epsilon=-1), "epsilon"),
])
def test_bad_inputs_with_a_class_are_refused_before_budget_or_randomness(given, words):
    budget, rng = ps.Budget(10), ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    kw = dict(dict(domain=DOMAIN, epsilon=1.0), **given)
    with pytest.raises((ParameterError, ValueError, TypeError), match=words) as err:
        ps.IntervalSynopsis.build([1, 2, 3], budget=budget, rng=rng, workload="short", **kw)
    assert "\n" not in str(err.value)
    assert budget.spent == 0 and rng.random_uint64() == first


def test_cli_build_applies_the_rule_and_an_explicit_fanout_wins(tmp_path, capsys):
    table = tmp_path / "t.csv"
    v = np.random.default_rng(2).integers(0, 50000, 3000)
    table.write_text("x\n" + "\n".join(map(str, v)) + "\n")
    # a domain above CELLS_RULE_MAX values: the rule's PrivTree (tests/test_cells.py: below)
    cmd = ["build", "--input", str(table), "--columns", "x", "--domain", "0:99999",
           "--epsilon", "1", "--seed", "3", "--workload", "short"]
    assert cli.main(cmd + ["--output", str(tmp_path / "r.pds")]) == 0
    assert cli.main(cmd + ["--privtree-fanout", "2", "--output", str(tmp_path / "e.pds")]) == 0
    capsys.readouterr()
    ruled, given = ps.load(tmp_path / "r.pds"), ps.load(tmp_path / "e.pds")
    assert ruled.partition.fanout == 4 and ruled.workload.partition.explicit == ()
    assert given.partition.fanout == 2
    assert given.workload.partition.explicit == ("privtree_fanout",)
    assert ruled.epsilon_partition == given.epsilon_partition == Fraction(7, 20)
