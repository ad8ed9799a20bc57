"""The (epsilon, delta) benchmark runs (short tier): python -m pytest benchmarks/test_bench_delta.py -q"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_delta  # noqa: E402


def test_bench_delta_quick_prints_every_row(capsys):
    bench_delta.run(quick=True)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    # header + 3 interval domains + 2 dims x 2 configurations + 2-D unpruned + 2 counters
    assert len(rows) == 1 + 3 + 5 + 2
    for line in rows[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        pure, delta = float(cells[2]), float(cells[3])
        assert 0 < delta <= pure          # never more noise than the pure scale
