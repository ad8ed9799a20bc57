"""Short tier of benchmarks/bench_fine_constant.py: every pair on a small sample, one build.

Checks structure (a row per pair and epsilon, finite ratios, the chosen constant within the
rule's range and equal to the rule applied to the printed released quantities), not
accuracy: the full run (``python benchmarks/bench_fine_constant.py``) is the measurement.
"""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_fine_constant  # noqa: E402


def test_fine_constant_table_on_a_small_sample(capsys):
    ratios = bench_fine_constant.main(["--rows", "20000", "--queries", "60", "--reps", "1"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines()
            if line.startswith("| ") and "---" not in line and not line.startswith("| data")]
    assert len(rows) == 6 * 2, out                   # six pairs x two epsilons
    assert len(ratios) == 6 * 2 * 3 and all(math.isfinite(r) and r > 0 for r in ratios)
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rho, top, kappa = (float(x) for x in cells[2:5])
        assert 2.0 <= kappa <= 5.0, line
        # the printed (rounded) inputs give the printed constant up to their rounding
        t = min(max((rho - 0.2) / 0.3, 0), 1) * min(max((0.5 - top) / 0.15, 0), 1)
        assert kappa == pytest.approx(5 - 3 * t, abs=0.2), line
    assert "geomean ratio" in out


@pytest.mark.parametrize("flag", ["--rows", "--queries", "--reps"])
def test_fine_constant_bad_arguments_exit_2(flag, capsys):
    with pytest.raises(SystemExit) as e:
        bench_fine_constant.main([flag, "0"])
    assert e.value.code == 2
    assert f"{flag} must be >= 1, got 0" in capsys.readouterr().err
