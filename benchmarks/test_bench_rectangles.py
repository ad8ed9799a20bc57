"""Short tier of benchmarks/bench_rectangles.py: one small data set, two builds of ours.

Checks structure and that ``--ours`` and ``--reps`` reach the build, not accuracy: the
full run (``python benchmarks/bench_rectangles.py``) is the measurement.
"""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_rectangles  # noqa: E402
from pydp_synopsis import ParameterError  # noqa: E402

ARGV = ["--quick", "--only", "clustered 3-D", "--queries", "200"]


def _ours(out):
    """The ours rows' (RMSE, max error, nodes), one per epsilon."""
    rows = [line.split() for line in out.splitlines() if line.startswith("ours ")]
    return [(float(r[1]), float(r[2]), int(r[5])) for r in rows]


def test_rectangle_table_with_options_and_pooled_builds(capsys):
    bench_rectangles.main(ARGV)
    one = _ours(capsys.readouterr().out)
    bench_rectangles.main(ARGV + ["--reps", "2"])
    out = capsys.readouterr().out
    two = _ours(out)
    assert "## clustered 3-D n=1e+05" in out and "2 build(s) per row" in out
    assert len(one) == len(two) == 2                      # eps 0.1 and 1
    for (r1, m1, n1), (r2, m2, n2) in zip(one, two):
        assert math.isfinite(r2) and r2 > 0
        assert n1 == n2 and m2 >= m1                       # first build the same; max over both
        assert r1 != r2                                    # the second build is pooled in
    bench_rectangles.main(ARGV + ["--ours", "coarse_share=0.5"])
    other = _ours(capsys.readouterr().out)
    assert [n for *_, n in other] != [n for *_, n in one]  # another share, other fine grids


def test_bad_options_are_refused():
    with pytest.raises(ParameterError, match="coarse_share"):
        bench_rectangles.main(ARGV + ["--ours", "coarse_share=2"])
    with pytest.raises(SystemExit):
        bench_rectangles.main(ARGV + ["--reps", "0"])
