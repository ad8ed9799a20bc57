"""Short tier of benchmarks/explore_privtree.py.

The ``ratio`` variant at x = ln 2 must be the package's own build, answer
for answer (an independent check of how the script drives the C kernel and
the tree release); the other parameters must keep PrivTree's loss bound; the
staged partition must be a halving tree's leaves that refine stage 1; every
variant's table must print finite rows; bad arguments exit 2.
"""
import math
import os
import sys
from fractions import Fraction

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import explore_privtree as ex  # noqa: E402
import bench_accuracy  # noqa: E402
import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis import IntervalSynopsis  # noqa: E402
from pydp_synopsis.privtree import TreePartition  # noqa: E402


def test_ln2_is_the_package_build():
    for name, values, domain in bench_accuracy.datasets(1, 20000)[::2]:
        wl = bench_accuracy.make_workloads(1, values, domain, 200, seed=3)
        for eps in (0.1, 1.0):
            keys = np.sort((values - domain[0]).astype(np.uint64))
            mine = ex.build(keys, domain, eps, 11, "ratio", (math.log(2.0),))
            ref = IntervalSynopsis.build(values, domain=domain, epsilon=eps, rng=ps.Rng(seed=11))
            np.testing.assert_array_equal(mine.partition.end_offsets, ref.partition.end_offsets)
            for kind, (lo, hi, _) in wl.items():
                np.testing.assert_array_equal(mine.count_many(lo, hi), ref.count_many(lo, hi),
                                              err_msg=f"{name} {eps} {kind}")


@pytest.mark.parametrize("x", [0.05, 0.3, 0.5, 1.0, 1.5, 4.0])
@pytest.mark.parametrize("eps", [Fraction(1, 40), Fraction(1, 4), Fraction(3, 2)])
def test_ratio_parameters_keep_the_loss_bound(x, eps):
    lam, delta = ex.ratio_parameters(eps, x)
    assert delta >= x * lam
    q = Fraction(math.exp(-delta / lam))
    assert (1 + 1 / (1 - q)) / lam <= eps * (1 + Fraction(1, 10**12))
    assert lam <= (1 + 1 / (1 - Fraction(math.exp(-x)))) / eps * Fraction(1001, 1000)


def test_staged_partition_refines_stage_one():
    name, values, domain = bench_accuracy.datasets(1, 30000)[3]
    lo, hi = domain
    keys = np.sort((values - lo).astype(np.uint64))
    eps_p = Fraction(1, 4)
    ends, counts = ex.partition("staged", (0.3, 10, 1), keys, hi - lo + 1, eps_p, ps.Rng(seed=5))
    TreePartition(ends, domain=domain, epsilon=eps_p, beta=0.025)    # raises if not a halving tree
    assert int(counts.sum()) == values.size
    np.testing.assert_array_equal(
        counts, np.diff(np.searchsorted(keys, ends, side="right"), prepend=0))
    lam1, d1 = ex.privtree_parameters(eps_p * Fraction(3, 10))
    stage1, _ = ex.grow(keys, 0, hi - lo, lam1, d1, math.ceil(10 * lam1), 0, ps.Rng(seed=5))
    assert np.isin(stage1, ends).all() and ends.size > stage1.size


@pytest.mark.parametrize("argv", [["ratio", "0.3"], ["staged", "0.3", "10", "1"],
                                  ["subleaf", "0.15", "2", "3"]])
def test_tables_print(argv, capsys):
    rows = ex.main(argv + ["--subsample", "5000", "--reps", "1", "--queries", "60",
                           "--eps", "1"])
    out = capsys.readouterr().out
    assert len(rows) == 5 * 3
    for _, _, _, rmse in rows:
        assert set(rmse) == {"default", out.splitlines()[0].split(" | ")[4]}
        assert all(np.isfinite(v) and v >= 0 for v in rmse.values())


@pytest.mark.parametrize("argv", [["staged", "0.3", "10"], ["staged", "1.5", "10", "1"],
                                  ["ratio", "0"], ["subleaf", "0.9", "2", "3"], ["nothing", "1"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        ex.main(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err
