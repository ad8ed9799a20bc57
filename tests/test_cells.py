"""partition="cells" (every value of a small domain its own segment, epsilon 0) and the
workload rule that takes it for "short" on small domains (issue 33): the exact release and
its noise law, the rule's public inputs, every input path, files, bad input and the CLI."""
import math
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import cli, sources
from pydp_synopsis.errors import FormatError, ParameterError
from pydp_synopsis.interval_record import from_record
from pydp_synopsis.interval_workload import PartitionChoice, cells_rule
from pydp_synopsis.partitions import CellPartition
from pydp_synopsis.partitions.cells import CELLS_RULE_MAX, MAX_CELLS
from dnrr_law import dlap_pmf
from stattests import assert_gof
from two_columns import release, write_sources


@pytest.fixture(scope="module")
def ties():
    """A tie-heavy column (integer miles): 300 values hold 40,000 rows over 4,096."""
    rng = np.random.default_rng(11)
    atoms = rng.choice(4096, 300, replace=False)
    return atoms[rng.zipf(1.6, 40_000) % 300]


def _flat_noise(syn, values):
    """The released flat tree's noise on every cell (released minus the true counts)."""
    true = np.bincount(values - syn.domain[0], minlength=len(syn))
    return syn._released - true


# --------------------------------------------------------------- the release
def test_cells_release_is_the_histogram_plus_discrete_laplace(ties):
    eps = Fraction(1, 2)
    syn = ps.IntervalSynopsis.build(ties, domain=(0, 4095), epsilon=eps, partition="cells",
                                    fanout=4096, rng=ps.Rng(seed=3))
    assert isinstance(syn.partition, CellPartition) and len(syn) == 4096
    assert syn.epsilon_partition == 0 and syn.epsilon_tree == syn.epsilon == eps
    assert syn.pure_epsilon == eps
    assert syn._released.size == 4096                  # one level: the counts themselves
    z = _flat_noise(syn, ties)
    support, probs = dlap_pmf(2.0, 40)                # scale 1 / epsilon, one level
    counts = np.array([np.sum(z == k) for k in support] + [np.sum(np.abs(z) > 40)])
    assert_gof(counts, probs)
    # consistency over one level changes nothing: the answers are the noisy counts' sums
    lo, hi = np.array([0, 17, 4095]), np.array([4095, 17, 4095])
    assert np.allclose(syn.count_many(lo, hi),
                       [syn._released.sum(), syn._released[17], syn._released[4095]])


def test_cells_have_no_bias_and_bars_of_noise_only(ties):
    syn = ps.IntervalSynopsis.build(ties, domain=(0, 4095), epsilon=1.0, partition="cells",
                                    rng=ps.Rng(seed=4))
    assert syn.interior_weight_bound() == 0.0
    assert syn.partition.max_weight_bound() == 0.0
    assert not syn.partition.leaf_weight_bounds().any()
    # any interval is a union of whole cells: the bound is the noise's alone
    lo, hi = np.array([3, 100]), np.array([40, 2000])
    _, std = syn.count_many(lo, hi, return_std=True)
    assert np.all(std > 0)
    tree = ps.IntervalSynopsis.build(ties, domain=(0, 4095), epsilon=1.0, rng=ps.Rng(seed=4))
    assert syn.error_bound(0.05) < tree.error_bound(0.05)


def test_hierarchical_cells_answers_are_unbiased_with_the_exact_noise_std(ties):
    # 200 seeded builds of a 16-ary tree over 256 cells: the answers' mean and variance
    # match the truth and the std the synopsis reports (alpha = 1e-6)
    v = ties % 256
    lo, hi = 10, 99
    truth = int(np.sum((v >= lo) & (v <= hi)))
    got, std = [], None
    for seed in range(200):
        syn = ps.IntervalSynopsis.build(v, domain=(0, 255), epsilon=1.0, partition="cells",
                                        rng=ps.Rng(seed=seed))
        a, s = syn.count_many([lo], [hi], return_std=True)
        got.append(a[0])
        std = s[0]
    got = np.array(got)
    se = std / math.sqrt(got.size)
    assert abs(got.mean() - truth) < 5.5 * se
    assert 0.5 < got.std() / std < 1.6


# --------------------------------------------------------------- the rule
def test_short_on_a_small_domain_takes_cells_exactly_as_the_explicit_build(ties):
    ruled = ps.IntervalSynopsis.build(ties, domain=(0, 4095), epsilon=0.3, workload="short",
                                      rng=ps.Rng(seed=8))
    given = ps.IntervalSynopsis.build(ties, domain=(0, 4095), epsilon=0.3, workload="short",
                                      partition="cells", rng=ps.Rng(seed=8))
    assert isinstance(ruled.partition, CellPartition)
    assert ruled.workload.partition.partition == "cells"
    assert ruled.workload.partition.partition_share == 0 and ruled.epsilon_partition == 0
    assert np.array_equal(ruled._released, given._released) and ruled.fanout == given.fanout
    assert given.workload.partition is None                 # a partition given: no rule
    # short ranges on cells: the flat tree (fanout = cells, one level) wins the choice
    assert ruled.fanout == 4096 and ruled.level_ratio == 1
    assert ruled.workload.variance < ruled.workload.default_variance


def test_the_rule_reads_the_domain_size_and_nothing_else(ties):
    choice = PartitionChoice("short", 4, Fraction(7, 20), 2, Fraction(1, 4))
    assert cells_rule(choice, (5, 5 + CELLS_RULE_MAX - 1)).partition == "cells"
    assert cells_rule(choice, (5, 5 + CELLS_RULE_MAX)) == choice
    for other in ("mixed", "long"):
        c = PartitionChoice(other, 2, Fraction(1, 4), 2, Fraction(1, 4))
        assert cells_rule(c, (0, 9)) == c
    assert cells_rule(None, (0, 9)) is None
    # two data sets, the same declared inputs: the same mechanism
    a = ps.IntervalSynopsis.build(ties, domain=(0, CELLS_RULE_MAX - 1), epsilon=1.0,
                                  workload="short", rng=ps.Rng(seed=1))
    b = ps.IntervalSynopsis.build(np.arange(10), domain=(0, CELLS_RULE_MAX - 1), epsilon=1.0,
                                  workload="short", rng=ps.Rng(seed=2))
    assert a.workload.partition == b.workload.partition and len(a) == len(b) == CELLS_RULE_MAX
    big = ps.IntervalSynopsis.build(ties, domain=(0, CELLS_RULE_MAX), epsilon=1.0,
                                    workload="short", rng=ps.Rng(seed=1))
    assert big.workload.partition.partition == "privtree" and big.partition.fanout == 4


@pytest.mark.parametrize("given, name", [
    (dict(partition="privtree"), "partition"),
    (dict(privtree_fanout=2), "privtree_fanout"),
    (dict(partition_share=0.3), "partition_share"),
    (dict(shards=2), "shards"),
    (dict(privtree_merge=0.5), "privtree_merge"),
])
def test_any_partition_option_given_keeps_privtree(ties, given, name):
    syn = ps.IntervalSynopsis.build(ties, domain=(0, 4095), epsilon=1.0, workload="short",
                                    rng=ps.Rng(seed=2), **given)
    assert syn.workload.partition.partition == "privtree"
    assert name in syn.workload.partition.explicit
    assert not isinstance(syn.partition, CellPartition)


# --------------------------------------------------------------- inputs
def test_weighted_source_and_database_paths_give_the_same_release(ties, tmp_path):
    kw = dict(domain=(0, 4095), epsilon=1.0, partition="cells")
    ref = ps.IntervalSynopsis.build(ties, rng=ps.Rng(seed=5), **kw)
    v, c = np.unique(ties, return_counts=True)
    weighted = ps.IntervalSynopsis.build(v, counts=c, rng=ps.Rng(seed=5), **kw)
    arr = ps.IntervalSynopsis.build(sources.ArraySource([ties]), rng=ps.Rng(seed=5), **kw)
    dbs = write_sources(tmp_path, ("x", "y"), ties, ties)
    sql = ps.IntervalSynopsis.build(sources.SqlSource(dbs["sqlite"], ["x"], table="t"),
                                    rng=ps.Rng(seed=5), **kw)
    for other in (weighted, arr, sql):
        assert release(other) == release(ref)


def test_units_dates_by_day_take_cells(ties):
    days = np.datetime64("2024-01-01") + (ties % 366).astype("timedelta64[D]")
    syn = ps.IntervalSynopsis.build(days, domain=("2024-01-01", "2024-12-31"), epsilon=1.0,
                                    resolution="1d", workload="short", rng=ps.Rng(seed=6))
    assert isinstance(syn.partition, CellPartition) and len(syn) == 366
    got = syn.count(np.datetime64("2024-03-01"), np.datetime64("2024-03-01"))
    assert abs(got - np.sum(days == np.datetime64("2024-03-01"))) < 40


# --------------------------------------------------------------- bad input
@pytest.mark.parametrize("kw, words", [
    (dict(domain=(0, MAX_CELLS)), "at most 1048576 values"),
    (dict(partition_share=0.2), "partition_share and threshold_factor do not apply"),
    (dict(threshold_factor=2), "partition_share and threshold_factor do not apply"),
    (dict(estimator="seal"), "estimator must be one of"),
    (dict(privtree_fanout=4), "options of partition='privtree' only"),
    (dict(shards=2), "shards is an option of partition='privtree' or 'dnrr'"),
])
def test_bad_cells_options_refused_before_any_budget_or_draw(kw, words):
    budget, rng = ps.Budget(5.0), ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    kw = dict(dict(domain=(0, 99), epsilon=1.0, partition="cells"), **kw)
    with pytest.raises(ParameterError, match=words) as err:
        ps.IntervalSynopsis.build([1, 2, 3], budget=budget, rng=rng, **kw)
    assert "\n" not in str(err.value)
    assert budget.spent == 0 and rng.random_uint64() == first


# --------------------------------------------------------------- files
def test_cells_files_round_trip_and_tampered_records_are_refused(ties, tmp_path):
    syn = ps.IntervalSynopsis.build(ties, domain=(0, 4095), epsilon=1.0, workload="short",
                                    rng=ps.Rng(seed=9))
    ps.save(syn, tmp_path / "c.pds")
    back = ps.load(tmp_path / "c.pds")
    assert release(back) == release(syn) and back.workload == syn.workload
    assert isinstance(back.partition, CellPartition)
    kind, meta, arrays, _ = syn._to_record()
    assert meta["format"] == 6 and meta["partition"] == "cells"

    def load(**changes):
        m = dict(meta, **changes)
        return from_record(m, dict(arrays), ps.IntervalSynopsis._from_release)

    for bad in (dict(threshold_factor="privtree"), dict(partition="privtree"),
                dict(epsilon_partition=[1, 10]), dict(estimator="seal"),
                dict(domain=[0, 4096])):
        with pytest.raises(FormatError):
            load(**bad)
    with pytest.raises(FormatError):
        from_record(meta, dict(arrays, end_offsets=arrays["end_offsets"][::2]),
                    ps.IntervalSynopsis._from_release)
    # a PrivTree file claiming the rule took cells
    tree = ps.IntervalSynopsis.build(ties, domain=(0, 2**15), epsilon=1.0, workload="short",
                                     rng=ps.Rng(seed=9))
    k2, m2, a2, _ = tree._to_record()
    m2["workload"]["partition"]["partition"] = "cells"
    m2["workload"]["partition"]["partition_share"] = [0, 1]
    with pytest.raises(FormatError):
        from_record(m2, a2, ps.IntervalSynopsis._from_release)
    # the partition alone
    ps.save(syn.partition, tmp_path / "p.pds")
    assert ps.load(tmp_path / "p.pds") == syn.partition


# --------------------------------------------------------------- the CLI
def test_cli_cells_build_info_and_a_too_large_domain(tmp_path, capsys, ties):
    table = tmp_path / "t.csv"
    table.write_text("x\n" + "\n".join(map(str, ties[:3000])) + "\n")
    base = ["build", "--input", str(table), "--columns", "x", "--epsilon", "1", "--seed", "3"]
    assert cli.main(base + ["--domain", "0:4095", "--workload", "short",
                            "--output", str(tmp_path / "r.pds")]) == 0
    assert cli.main(base + ["--domain", "0:4095", "--partition", "cells",
                            "--output", str(tmp_path / "e.pds")]) == 0
    capsys.readouterr()
    assert cli.main(["info", str(tmp_path / "r.pds")]) == 0
    out = capsys.readouterr().out
    assert "partition:      cells" in out and "rule for short): cells" in out
    assert isinstance(ps.load(tmp_path / "e.pds").partition, CellPartition)
    assert cli.main(base + ["--domain", "0:9999999", "--partition", "cells",
                            "--output", str(tmp_path / "bad.pds")]) == 2
    err = capsys.readouterr().err
    assert "partition='cells' takes a domain of at most 1048576 values" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad.pds").exists()


def test_range_sums_over_cells_split_the_whole_epsilon(tmp_path):
    rng = np.random.default_rng(0)
    d, v = rng.integers(0, 1000, 20_000), rng.integers(0, 100, 20_000)
    syn = ps.IntervalSynopsis.build(d, domain=(0, 999), epsilon=1.0, partition="cells",
                                    sum_of=v, sum_bounds=(0, 100), rng=ps.Rng(seed=1))
    assert syn.epsilon_partition == 0 and syn.pure_epsilon == 1
    assert syn.epsilon_tree + syn.sums.epsilon == 1
    ps.save(syn, tmp_path / "s.pds")
    back = ps.load(tmp_path / "s.pds")
    assert back.sum(10, 50) == syn.sum(10, 50)
    true = int(v[(d >= 10) & (d <= 50)].sum())
    assert abs(syn.sum(10, 50) - true) < 8 * syn.sum_many([10], [50], return_std=True)[1][0]


def test_the_rule_with_range_sums_gives_the_explicit_cells_release():
    rng = np.random.default_rng(1)
    d, v = rng.integers(0, 500, 5_000), rng.integers(0, 10, 5_000)
    kw = dict(domain=(0, 499), epsilon=1.0, sum_of=v, sum_bounds=(0, 10), workload="short")
    ruled = ps.IntervalSynopsis.build(d, rng=ps.Rng(seed=3), **kw)
    given = ps.IntervalSynopsis.build(d, rng=ps.Rng(seed=3), partition="cells", **kw)
    assert isinstance(ruled.partition, CellPartition)
    (_, m1, a1), (_, m2, a2) = release(ruled), release(given)
    assert a1 == a2 and m1.pop("workload")["partition"]["partition"] == "cells"
    assert "partition" not in m2.pop("workload") and m1 == m2     # the rule is recorded
    assert ruled.sums.epsilon == given.sums.epsilon
    assert ruled.epsilon_tree + ruled.sums.epsilon == 1
