"""Short tier of benchmarks/bench_accuracy.py: the whole table on a tiny subsample.

Checks structure only (every row printed, every ratio finite and >= 0 (0 when ours is exact),
the summary and the heavy-value line present), not accuracy: the full run
(``python benchmarks/bench_accuracy.py``) is the measurement.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_accuracy  # noqa: E402


def test_accuracy_table_on_a_tiny_subsample(capsys, tmp_path):
    cache = tmp_path / "peers.json"
    argv = ["--subsample", "3000", "--reps", "1", "--queries", "60", "--peer-buckets", "1024",
            "--peers-cache", str(cache), "--bias-reps", "2"]
    summary = bench_accuracy.main(argv)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines()
            if line.startswith("| ") and line.count("|") >= 10 and "---" not in line
            and not line.startswith("| data") and not line.startswith("| dims")]
    # 1-D: 5 data sets, 2-D: 2, 3-D: 1; x 2 epsilons x 3 workloads
    assert len(rows) == (5 + 2 + 1) * 2 * 3, out
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        ratio = float(cells[-1])
        assert math.isfinite(ratio) and ratio >= 0, line
        assert all(c != "nan" for c in cells), line
    assert set(summary) == {(d, k) for d in (1, 2, 3) for k in ("data", "small", "uniform")}
    assert "geomean ratio" in out and "heavy-value endpoints" in out
    # the bias line: its own builds and a finite +-2 SE across them
    bias = [line for line in out.splitlines() if "|mean error| / RMSE of ours" in line]
    assert bias and all(", 2 builds)" in b and "+- nan" not in b for b in bias), bias
    assert cache.exists()
    # the second run reads the peers from the cache and gives the same peer columns
    bench_accuracy.main(argv + ["--only", "1d", "--ours", "fanout=8"])
    out2 = capsys.readouterr().out
    peer_cols = [line.split("|")[7:-2] for line in out.splitlines()
                 if line.startswith("| flights distance")]
    peer_cols2 = [line.split("|")[7:-2] for line in out2.splitlines()
                  if line.startswith("| flights distance")]
    assert peer_cols == peer_cols2 and len(peer_cols) == 6
