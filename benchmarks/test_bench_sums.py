"""Short tier of benchmarks/bench_sums.py: the whole table on a small subsample.

Checks structure (every row printed, every RMSE and ratio finite and positive) and one
sanity relation that holds by construction (OpenDP at epsilon / q per query is noisier
than OpenDP at the whole epsilon for one query); the full run is the measurement.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import pydp_synopsis as ps  # noqa: E402

import bench_sums  # noqa: E402


def test_sums_table_on_a_small_subsample(capsys):
    out = bench_sums.main(["--queries", "12", "--reps", "1", "--subsample", "3000",
                           "--flat-widths", "60,1440"])
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line
            and not line.startswith("| value")]
    assert len(rows) == len(bench_sums.VALUES) * 2 * len(bench_sums.CLASSES), text
    assert set(out) == {(v, e, c) for v in bench_sums.VALUES for e in (0.1, 1.0)
                        for c in bench_sums.CLASSES}
    for r in out.values():
        assert all(math.isfinite(r[k]) and r[k] > 0 for k in ("ours", "flat", "opendp", "one"))
        assert r["flat_width"] in (60, 1440)
    assert "geomean ours/flat" in text


def test_flat_histogram_is_exact_without_noise_on_whole_bins():
    x = np.array([0, 5, 59, 60, 130])
    v = np.array([1, 2, 3, 4, 5])
    lo, hi = np.array([0, 60, 0]), np.array([59, 119, 179])
    got = bench_sums.flat_sums(x, v, (0, 5), 60, 1e9, lo, hi, ps.Rng(seed=1))
    assert got.tolist() == [6.0, 4.0, 15.0]
