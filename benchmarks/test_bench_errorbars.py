"""Short tier of benchmarks/bench_errorbars.py: the coverage table on subsamples, 2 builds.

Checks structure only (every data set x class x interval printed, coverages and
their Wilson intervals in [0, 1], finite ratios), not the targets: the full run
(``python benchmarks/bench_errorbars.py``) is the measurement.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_errorbars  # noqa: E402


def test_coverage_table_on_subsamples(capsys, monkeypatch):
    monkeypatch.delenv("PYDP_SYNOPSIS_DATA", raising=False)
    rows = bench_errorbars.main(["--builds", "2", "--queries", "30", "--subsample", "3000",
                                 "--no-counters"])
    out = capsys.readouterr().out
    assert len(rows) == 4 * 3 * 2
    assert {k[1] for k in rows} == set(bench_errorbars.CLASSES)
    assert {k[2] for k in rows} == {"rigorous", "calibrated"}
    for key, (cov, lo, hi, half, err, ratio) in rows.items():
        assert 0 <= lo <= cov <= hi <= 1, key
        assert half >= 0 and err >= 0 and (math.isfinite(ratio) or err == 0), key
    table = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(table) == 1 + 4 * 3 * 2


def test_wilson_interval():
    lo, hi = bench_errorbars.wilson(95, 100)
    assert lo < 0.95 < hi and round(lo, 4) == 0.8882 and round(hi, 4) == 0.9785
    assert bench_errorbars.wilson(0, 10)[0] == 0.0


def test_coverage_table_of_the_quadtree_reads_the_2d_sets(capsys, monkeypatch):
    monkeypatch.delenv("PYDP_SYNOPSIS_DATA", raising=False)
    rows = bench_errorbars.main(["--builds", "2", "--queries", "30", "--subsample", "3000",
                                 "--no-counters", "--structure", "quadtree"])
    assert len(rows) == 2 * 3 * 2 and all(" x " in k[0] for k in rows)
    assert "structure='quadtree'" in capsys.readouterr().out
    for key, (cov, lo, hi, half, err, ratio) in rows.items():
        assert 0 <= lo <= cov <= hi <= 1, key
