"""Short tier of benchmarks/bench_quantiles.py: the whole table on a small subsample.

Checks structure (a row per data set, epsilon and task; finite errors; each
ratio inside its bootstrap interval; OpenDP's epsilon checked by its own map),
not accuracy: the full run (``python benchmarks/bench_quantiles.py``) is the
measurement.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("opendp")

import bench_quantiles  # noqa: E402


def test_quantile_table_on_a_small_subsample(capsys):
    rows = bench_quantiles.main(["--runs", "2", "--subsample", "3000", "--candidates", "512",
                                 "--epsilons", "1", "--tasks", "median,tails,quartiles"])
    out = capsys.readouterr().out
    assert len(rows) == 4 * 1 * 3                      # data sets x epsilons x tasks
    for name, eps, task, ours, peer, lo, hi, flip, flo, fhi in rows:
        assert math.isfinite(ours) and math.isfinite(peer) and 0 <= ours < 0.5 and peer < 0.5
        assert math.isfinite(flip) and 0 <= flip < 0.5
        if peer > 0 and ours > 0:
            assert lo <= ours / peer <= hi
        if peer > 0 and flip > 0:
            assert flo <= flip / peer <= fhi
    assert out.count("| zip latitude | 3,000 | 1 |") == 3
    assert "tails: ours <= OpenDP in" in out
    assert "quartiles: ours <= OpenDP in" in out and "private_quantiles <= OpenDP in" in out


def test_rank_errors_and_helpers():
    srt = np.array([1, 2, 2, 2, 5, 9])
    # q n = 3: 2 spans ranks [1, 4] (error 0); 5 spans [4, 5]: 1 / 6; 9 spans [5, 6]: 2 / 6
    err = bench_quantiles.rank_errors(srt, [2, 5, 9], np.array([0.5, 0.5, 0.5]))
    np.testing.assert_allclose(err, [0, 1 / 6, 2 / 6])
    assert bench_quantiles.candidates((0, 9), 16).tolist() == list(range(10))
    assert bench_quantiles.candidates((0, 99), 4).tolist() == [0, 25, 50, 75]
    assert bench_quantiles.grid_floor(srt, np.array([0, 5]), [0.5]) == pytest.approx(1 / 6)
    lo, hi = bench_quantiles.bootstrap_ratio(np.full(10, 2.0), np.full(10, 4.0), seed=0)
    assert lo == hi == 0.5
    assert bench_quantiles.bootstrap_ratio(np.zeros(5), np.zeros(5), seed=0) == (1.0, 1.0)
