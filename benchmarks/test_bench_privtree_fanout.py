"""Short tier of benchmarks/bench_privtree_fanout.py: the whole table on a tiny subsample.

Checks structure (every row printed, every RMSE finite, every ratio inside its interval)
and the paired bootstrap, not accuracy: the full run is the measurement.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import bench_privtree_fanout as bench  # noqa: E402


def test_table_on_a_tiny_subsample(capsys):
    rows = bench.main(["--subsample", "1500", "--reps", "2", "--queries", "40",
                       "--peer-buckets", "256", "--data", "distance,latitude"])
    out = capsys.readouterr().out
    assert len(rows) == 2 * len(bench.EPSILONS) * len(bench.CLASSES)
    lines = [line for line in out.splitlines() if line.startswith("| flights distance")
             or line.startswith("| zip latitude")]
    assert len(lines) == len(rows)
    for row in rows.values():
        for m in bench.METHODS + bench.PEERS:
            assert math.isfinite(row[m]) and row[m] >= 0
        for m in bench.METHODS[1:]:
            r, lo, hi = row[f"{m}/binary"]
            assert lo <= r * (1 + 1e-9) and r <= hi * (1 + 1e-9)
        assert row["segments"]["4-ary"] >= 1
    assert "4-ary / binary, short: geomean" in out
    few = bench.main(["--subsample", "800", "--reps", "2", "--queries", "20", "--no-peers",
                      "--data", "delay", "--epsilons", "3"])
    assert set(few) == {("flights delay", 3.0, c) for c, _ in bench.CLASSES}
    assert "PrivTree RMSE" not in capsys.readouterr().out    # --no-peers


def test_ratio_interval_is_paired_and_exact_for_equal_methods():
    a = np.array([1.0, 4.0, 9.0, 2.0])
    assert bench.ratio_interval(a, a) == (1.0, 1.0, 1.0)
    r, lo, hi = bench.ratio_interval(4 * a, a)
    assert (r, lo, hi) == (2.0, 2.0, 2.0)
    r, lo, hi = bench.ratio_interval([1.0, 9.0], [1.0, 1.0])
    assert lo < r < hi and r == math.sqrt(5)
