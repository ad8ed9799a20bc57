"""Short tier of research/explore_privtree.py.

The ``ratio`` variant at x = ln 2 and the ``grid`` variant at G = 0 must be
the package's own build, answer for answer (an independent check of how the
script drives the C kernel and the tree release); the other parameters must
keep PrivTree's loss bound; the staged, grid and pruned partitions must be a
halving tree's leaves that refine stage 1 / the public cells / the merged
nodes, which must equal a recursive statement of the merge rule; DAWA's
buckets must be runs of its equal cells covering the domain; the noise / bias split
must add up exactly on a noiseless release; every variant's table must print
finite rows; bad arguments exit 2.
"""
import math
import os
import sys
from fractions import Fraction

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "benchmarks"))

import explore_privtree as ex  # noqa: E402
import bench_accuracy  # noqa: E402
import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis import IntervalSynopsis  # noqa: E402
from pydp_synopsis.privtree import TreePartition  # noqa: E402


@pytest.mark.parametrize("variant, params", [("ratio", (math.log(2.0),)), ("grid", (0,))])
def test_ln2_and_grid0_are_the_package_build(variant, params):
    for name, values, domain in bench_accuracy.datasets(1, 20000)[::2]:
        wl = bench_accuracy.make_workloads(1, values, domain, 200, seed=3)
        for eps in (0.1, 1.0):
            keys = np.sort((values - domain[0]).astype(np.uint64))
            mine = ex.build(keys, domain, eps, 11, variant, params)
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


def _halving_nodes(a, b, depth):
    """The halving tree's nodes of ``depth`` under ``[a, b]``, by recursion."""
    if depth == 0 or a == b:
        return [(a, b)]
    m = a + (b - a) // 2
    return _halving_nodes(a, m, depth - 1) + _halving_nodes(m + 1, b, depth - 1)


@pytest.mark.parametrize("size, depth", [(1, 3), (5, 4), (1000, 0), (1000, 4), (2**13, 13),
                                         (2**63, 6), (180_000_001, 10)])
def test_grid_cells_are_the_halving_nodes(size, depth):
    first, last = ex.grid_cells(size, depth)
    expect = _halving_nodes(0, size - 1, min(depth, 12))
    if depth <= 12:
        assert list(zip(first.tolist(), last.tolist())) == expect
    assert first[0] == 0 and last[-1] == size - 1
    np.testing.assert_array_equal(first[1:], last[:-1] + 1)


def test_grid_partition_refines_the_cells():
    name, values, domain = bench_accuracy.datasets(1, 30000)[3]
    lo, hi = domain
    keys = np.sort((values - lo).astype(np.uint64))
    eps_p = Fraction(1, 4)
    default, _ = ex.partition("ratio", (math.log(2.0),), keys, hi - lo + 1, eps_p, ps.Rng(seed=5))
    ends, counts = ex.partition("grid", (8,), keys, hi - lo + 1, eps_p, ps.Rng(seed=5))
    TreePartition(ends, domain=domain, epsilon=eps_p, beta=0.025)    # raises if not a halving tree
    np.testing.assert_array_equal(
        counts, np.diff(np.searchsorted(keys, ends, side="right"), prepend=0))
    _, last = ex.grid_cells(hi - lo + 1, 8)
    assert np.isin(last.astype(np.uint64), ends).all()     # every cell ends in a leaf
    # the restart makes the data's leaves finer: the heaviest non-unit leaf holds less
    first = np.concatenate([[0], ends[:-1] + 1])
    dfirst = np.concatenate([[0], default[:-1] + 1])
    dcounts = np.diff(np.searchsorted(keys, default, side="right"), prepend=0)
    assert counts[ends > first].max() < dcounts[default > dfirst].max()


def _pruned_by_recursion(a, b, depth, noisy_of, limit):
    """``pruned_cells`` by recursion: ``(nodes, low, total, cells)`` of the subtree
    of ``[a, b]`` whose grid cells are ``depth`` levels down."""
    if depth == 0 or a == b:
        if depth > 0:                       # a width-1 node: the same cell all the way down
            return _pruned_by_recursion(a, b, 0, noisy_of, limit)
        x = noisy_of[(a, b)]
        return [(a, b)], x < limit, x, 1
    m = a + (b - a) // 2
    left = _pruned_by_recursion(a, m, depth - 1, noisy_of, limit)
    right = _pruned_by_recursion(m + 1, b, depth - 1, noisy_of, limit)
    total, cells = left[2] + right[2], left[3] + right[3]
    if left[1] and right[1] and total < limit * math.sqrt(cells):
        return [(a, b)], True, total, cells
    return left[0] + right[0], False, total, cells


@pytest.mark.parametrize("size, depth, limit", [(1000, 4, 5.0), (37, 6, 3.0), (2**40, 7, 8.0),
                                                (5, 4, 2.0), (1000, 5, -1.0), (1000, 5, 1e9)])
def test_pruned_cells_merge_low_siblings(size, depth, limit):
    first, last = ex.grid_cells(size, depth)
    rng = np.random.default_rng(size + depth)
    noisy = rng.integers(-6, 12, first.size) * rng.integers(0, 2, first.size)
    a, b = ex.pruned_cells(size, depth, noisy, limit)
    expect = _pruned_by_recursion(0, size - 1, depth, dict(zip(zip(first.tolist(), last.tolist()),
                                                                noisy.tolist())), limit)[0]
    assert list(zip(a.tolist(), b.tolist())) == expect
    assert a[0] == 0 and b[-1] == size - 1
    np.testing.assert_array_equal(a[1:], b[:-1] + 1)
    if limit < 0:                           # nothing is low: the grid itself
        assert a.size == first.size
    if limit > 1e8:                         # everything is low: the whole domain
        assert a.size == 1


def test_pruned_partition_refines_its_nodes():
    name, values, domain = bench_accuracy.datasets(1, 30000)[0]      # flight times in ns, 2^63
    lo, hi = domain
    keys = np.sort((values - lo).astype(np.uint64))
    eps_p = Fraction(1, 4)
    grid, _ = ex.partition("grid", (8,), keys, hi - lo + 1, eps_p, ps.Rng(seed=5))
    ends, counts = ex.partition("pruned", (8, 0.1, 6), keys, hi - lo + 1, eps_p, ps.Rng(seed=5))
    TreePartition(ends, domain=domain, epsilon=eps_p, beta=0.025)    # raises if not a halving tree
    np.testing.assert_array_equal(
        counts, np.diff(np.searchsorted(keys, ends, side="right"), prepend=0))
    # the data sit in one of the 256 cells: the empty ones merge into a few nodes
    assert ends.size < grid.size - 200


def test_dawa_partition_is_buckets_of_equal_cells():
    for name, values, domain in bench_accuracy.datasets(1, 20000)[:3]:     # 2^63, 2^13, 2^12
        lo, hi = domain
        size = hi - lo + 1
        keys = np.sort((values - lo).astype(np.uint64))
        ends, counts = ex.dawa_partition(keys, size, 0.25, 0.75, np.random.default_rng(3))
        part = ex.Partition(ends, domain=domain, epsilon=Fraction(1, 4), beta=0.025,
                            threshold_factor=3)                 # raises unless it covers [lo, hi]
        assert len(part) == ends.size and int(ends[-1]) == size - 1
        np.testing.assert_array_equal(
            counts, np.diff(np.searchsorted(keys, ends, side="right"), prepend=0))
        axis = ex.EqualWidthAxis(0, size - 1, min(1 << 16, size))
        assert np.isin(ends, axis.ends).all()                   # bucket ends are cell ends
        if size <= 1 << 16:                                     # one cell per value: the
            assert (counts > 0).sum() >= 20                     # data's shape is resolved
        syn = ex.build(keys, domain, 1.0, 3, "dawa", (0.25,))
        assert len(syn) == ends.size
        total = syn.count_many(np.array([lo]), np.array([hi]))[0]
        assert abs(total - values.size) < 2000                  # the tree's noise, ~10 at eps 1


def test_split_adds_up_on_exact_counts():
    rng = np.random.default_rng(4)
    keys = np.sort(rng.integers(0, 1000, 3000)).astype(np.uint64)
    ends = np.array([99, 100, 499, 999], dtype=np.uint64)
    lo = rng.integers(0, 1000, 400)
    hi = np.minimum(lo + rng.integers(0, 400, 400), 999)
    ideal = ex.uniform_ideal(ends, keys, lo, hi)
    # by hand: each leaf's true count spread evenly over its values
    first = np.array([0, 100, 101, 500])
    count = np.diff(np.searchsorted(keys, ends, side="right"), prepend=0)
    dens = np.repeat(count / (ends.astype(int) - first + 1), ends.astype(int) - first + 1)
    hand = np.array([dens[a:b + 1].sum() for a, b in zip(lo, hi)])
    np.testing.assert_allclose(ideal, hand, rtol=1e-12, atol=1e-9)
    # ranges of whole leaves are exact
    whole = ex.uniform_ideal(ends, keys, np.array([0, 100, 101, 0]), np.array([99, 100, 999, 999]))
    np.testing.assert_allclose(whole, [count[0], count[1], count[2] + count[3], 3000])


@pytest.mark.parametrize("argv", [["ratio", "0.3"], ["staged", "0.3", "10", "1"],
                                  ["subleaf", "0.15", "2", "3"], ["grid", "4", "--split"],
                                  ["pruned", "6", "0.1", "4", "--split"], ["dawa", "0.25"]])
def test_tables_print(argv, capsys):
    rows = ex.main(argv + ["--subsample", "5000", "--reps", "1", "--queries", "60",
                           "--eps", "1"])
    out = capsys.readouterr().out
    assert len(rows) == 5 * 3
    for _, _, _, rmse in rows:
        assert set(rmse) == {"default", out.splitlines()[0].split(" | ")[4]}
    if "--split" in argv:    # "rmse (noise / bias)" cells and a leaves row per data set
        lines = [x for x in out.splitlines() if x.startswith("| ") and "(" in x]
        assert len(lines) == 5 * 3 and sum("| leaves |" in x for x in out.splitlines()) == 5
        for line in lines:
            for cell in line.split(" | ")[3:5]:
                rm, noise, bias = (float(t) for t in cell.replace("(", "").replace(")", "")
                                   .replace("/", "").split())
                assert noise <= rm + 0.1 + bias and bias <= rm + 0.1 + noise
        assert all(np.isfinite(v) and v >= 0 for v in rmse.values())


@pytest.mark.parametrize("argv", [["staged", "0.3", "10"], ["staged", "1.5", "10", "1"],
                                  ["ratio", "0"], ["subleaf", "0.9", "2", "3"], ["nothing", "1"],
                                  ["grid", "1.5"], ["grid", "17"], ["grid", "-1"],
                                  ["pruned", "8", "0.1"], ["pruned", "0", "0.1", "4"],
                                  ["pruned", "8", "1", "4"], ["pruned", "8", "0.1", "0"],
                                  ["dawa", "0"], ["dawa", "0.3", "1"],
                                  ["subleaf", "0.15", "2", "3", "--split"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        ex.main(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err
