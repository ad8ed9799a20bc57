"""``pydp-synopsis build --sum COLUMN --sum-bounds LO:HI``, ``query --sum`` / ``--mean`` and
``info`` on range sums (cli/sums.py), run in-process through ``main``; one subprocess run in
the integration tier."""
import csv
import os
import subprocess
import sys

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.cli import main

FLIGHTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "flights-2001h1.npz")


@pytest.fixture(scope="module")
def flights(tmp_path_factory):
    d = np.load(FLIGHTS)
    path = tmp_path_factory.mktemp("sums") / "f.npz"
    np.savez(path, minute=d["minute"], delay=d["delay"])
    return path, d["minute"].astype(np.int64), d["delay"].astype(np.int64)


def _build(path, out, *extra):
    return main(["build", "--input", str(path), "--columns", "minute", "--domain", "0:262143",
                 "--epsilon", "1", "--sum", "delay", "--seed", "3", "--output", str(out),
                 *extra])


def test_build_query_info(flights, tmp_path, capsys):
    path, minute, delay = flights
    out = tmp_path / "s.pds"
    assert _build(path, out, "--sum-bounds", "-30:180") == 0
    syn = ps.load(out)
    assert syn.sums.bounds == (-30, 180) and syn.sums.column.name == "delay"
    assert syn.epsilon == 1
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "sums of:        delay (integer), clipped to [-30, 180]" in text
    assert "epsilon_sum:    3/8" in text
    assert main(["query", str(out), "--sum", "--lo", "0", "--hi", "100000"]) == 0
    line = capsys.readouterr().out
    want = syn.sum_intervals([0], [100000])
    assert line.startswith(f"sum {want.answer[0]:.4f} ± {want.std[0]:.4f}")
    truth = np.clip(delay, -30, 180)[minute <= 100000].sum()
    assert want.low[0] <= truth <= want.high[0]
    queries = tmp_path / "q.csv"
    queries.write_text("lo,hi\n0,100000\n5,6\n")
    answers = tmp_path / "a.csv"
    assert main(["query", str(out), "--mean", "--queries", str(queries),
                 "--output", str(answers)]) == 0
    rows = list(csv.DictReader(answers.open()))
    bars = syn.mean_intervals([0, 5], [100000, 6])
    assert [float(r["mean"]) for r in rows] == pytest.approx(bars.answer.tolist())
    assert rows[1]["low"] == "nan"            # no interval where the count's holds 0


def test_decimal_sums_from_csv(tmp_path, capsys):
    path = tmp_path / "f.csv"
    path.write_text("t,fare\n" + "".join(f"{i % 50},{(i % 7) * 1.25:.2f}\n" for i in range(400)))
    out = tmp_path / "c.pds"
    assert main(["build", "--input", str(path), "--columns", "t", "--domain", "0:49",
                 "--epsilon", "1e6", "--sum", "fare", "--sum-bounds", "0:5", "--sum-scale",
                 "1e2", "--seed", "1", "--output", str(out)]) == 0
    syn = ps.load(out)
    want = sum(min((i % 7) * 1.25, 5) for i in range(400))
    assert syn.sum(0, 49) == pytest.approx(want, abs=1e-6)
    assert syn.sums.unit == 100


@pytest.mark.parametrize("extra, message", [
    (["--sum-bounds", "5:5"], "lo < hi"),
    (["--sum-bounds", "0"], "LO:HI"),
    (["--sum-bounds", "0:x"], "--sum-bounds"),
    (["--sum-bounds", "0:1", "--sum-scale", "3"], "power of ten"),
    (["--sum-bounds", "0:1", "--sum-share", "2"], "--sum-share"),
    (["--sum-bounds", "0:1", "--dropna"], "--dropna"),
    ([], "--sum-bounds"),
])
def test_bad_sum_arguments_exit_2_with_one_line(flights, tmp_path, capsys, extra, message):
    out = tmp_path / "b.pds"
    assert _build(flights[0], out, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_sum_options_without_sum_and_query_without_sums(flights, tmp_path, capsys):
    path = flights[0]
    out = tmp_path / "n.pds"
    assert main(["build", "--input", str(path), "--columns", "minute", "--domain", "0:262143",
                 "--epsilon", "1", "--sum-bounds", "0:1", "--output", str(out)]) == 2
    assert "need --sum" in capsys.readouterr().err
    assert main(["build", "--input", str(path), "--columns", "minute", "--domain", "0:262143",
                 "--epsilon", "1", "--seed", "1", "--output", str(out)]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--mean", "--lo", "0", "--hi", "5"]) == 2
    assert "holds no range sums" in capsys.readouterr().err


@pytest.mark.integration
def test_command_line_subprocess(flights, tmp_path):
    out = tmp_path / "s.pds"
    cmd = [sys.executable, "-m", "pydp_synopsis.cli"]
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ps.__file__)))
    built = subprocess.run(cmd + ["build", "--input", str(flights[0]), "--columns", "minute",
                                  "--domain", "0:262143", "--epsilon", "1", "--sum", "delay",
                                  "--sum-bounds", "-30:180", "--output", str(out)],
                           capture_output=True, text=True, env=env, timeout=120,
                           cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    q = subprocess.run(cmd + ["query", str(out), "--mean", "--lo", "0", "--hi", "262143"],
                       capture_output=True, text=True, env=env, timeout=120,
                           cwd=tmp_path)
    assert q.returncode == 0 and q.stdout.startswith("mean ")
