"""End-to-end tests of the ``pydp-synopsis`` command, through subprocesses."""
import csv
import os
import sqlite3
import stat
import subprocess
import sys

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.cli import parse_domain
from pydp_synopsis.inputs import to_fixed_point
from clirun import PACKAGE_PARENT, SCRIPT, answer_and_bound, one_line_error, run

pytestmark = pytest.mark.integration     # the command line in subprocesses


@pytest.fixture
def table(tmp_path):
    rng = ps.Rng(seed=4)
    x = rng.integers(0, 1000, size=3000)
    y = rng.integers(-500, 500, size=3000)
    csv_path = tmp_path / "data.csv"
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x", "y", "label"])
        for a, b in zip(x.tolist(), y.tolist()):
            w.writerow([a, b, "row"])
    npz_path = tmp_path / "data.npz"
    np.savez(npz_path, x=x, y=y)
    db_path = tmp_path / "data.db"
    con = sqlite3.connect(db_path)
    con.execute("CREATE TABLE t (x INTEGER, y INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", zip(x.tolist(), y.tolist()))
    con.commit()
    con.close()
    return {"x": x, "y": y, "csv": csv_path, "npz": npz_path, "db": db_path}


def test_demo_prints_the_table():
    proc = run("demo", "--seed", 1, "--queries", 200)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "ZIP code" in out and "New York City area" in out and "RMSE" in out
    assert "± std" in out and "95% interval (this query)" in out
    assert "simultaneous 95% bounds (every query at once)" in out and "in 95% interval" in out
    assert "total privacy loss 2" in out


@pytest.mark.parametrize("source", ["csv", "npz", "sqlite"])
def test_build_info_query_round_trip(tmp_path, table, source):
    syn = tmp_path / f"{source}.pds"
    if source == "sqlite":
        inp = ["--sql", "SELECT x FROM t", "--database", f"sqlite:///{table['db']}"]
    else:
        inp = ["--input", table[source]]
    proc = run("build", *inp, "--columns", "x", "--domain=0:999", "--epsilon", 1000, "--seed", 3,
               "--output", syn)
    assert proc.returncode == 0, proc.stderr
    assert "interval synopsis" in proc.stdout
    info = run("info", syn)
    assert info.returncode == 0 and "interval-synopsis" in info.stdout and "segments" in info.stdout
    q = run("query", syn, "--lo", 100, "--hi", 599)
    assert q.returncode == 0, q.stderr
    answer, bound = answer_and_bound(q.stdout)
    true = int(np.count_nonzero((table["x"] >= 100) & (table["x"] <= 599)))
    assert abs(answer - true) <= bound


def test_rectangle_build_and_query_file(tmp_path, table):
    syn = tmp_path / "r.pds"
    proc = run("build", "--input", table["npz"], "--columns", "x,y", "--domain=0:999,-500:499",
               "--epsilon", 1000, "--seed", 5, "--output", syn)
    assert proc.returncode == 0, proc.stderr
    assert "rectangle synopsis" in proc.stdout
    queries = tmp_path / "q.csv"
    queries.write_text("lo_0,lo_1,hi_0,hi_1\n0,-500,999,499\n10,0,500,200\n")
    out = tmp_path / "answers.csv"
    q = run("query", syn, "--queries", queries, "--output", out)
    assert q.returncode == 0, q.stderr
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 2 and {"answer", "std", "low", "high", "simultaneous_bound"} <= set(rows[0])
    for r in rows:
        lo0, lo1, hi0, hi1 = (int(r[k]) for k in ("lo_0", "lo_1", "hi_0", "hi_1"))
        true = np.count_nonzero((table["x"] >= lo0) & (table["x"] <= hi0) & (table["y"] >= lo1) & (table["y"] <= hi1))
        assert abs(float(r["answer"]) - true) <= float(r["simultaneous_bound"])


@pytest.mark.parametrize("args,fragments", [
    (["--columns", "nope", "--domain=0:9", "--epsilon", 1], ["no column 'nope'"]),
    (["--columns", "label", "--domain=0:9", "--epsilon", 1], ["not a number"]),
    (["--columns", "x", "--domain=0:9", "--epsilon", 1], ["must lie in the domain [0, 9]", "some value is outside"]),
    (["--columns", "x", "--domain=0:999", "--epsilon", 0], ["epsilon"]),
    (["--columns", "x", "--domain=0:999", "--epsilon", -1], ["epsilon"]),
    (["--columns", "x", "--epsilon", 1], ["--domain is required", "leak"]),
])
def test_build_bad_inputs_exit_2_and_write_nothing(tmp_path, table, args, fragments):
    out = tmp_path / "out.pds"
    proc = run("build", "--input", table["csv"], *args, "--output", out)
    one_line_error(proc, *fragments)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".pdsyn")] == []


def test_unreadable_input_and_corrupted_synopsis(tmp_path, table):
    out = tmp_path / "out.pds"
    one_line_error(run("build", "--input", tmp_path / "missing.csv", "--columns", "x", "--domain=0:9",
                       "--epsilon", 1, "--output", out), "does not exist")
    assert not out.exists()
    bad = tmp_path / "bad.pds"
    bad.write_bytes(b"garbage" * 10)
    one_line_error(run("query", bad, "--lo", 1, "--hi", 2), "not a pydp_synopsis file")
    one_line_error(run("info", bad), "not a pydp_synopsis file")


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"pydp-synopsis {ps.__version__}"


def test_usage_error_is_one_line_exit_2():
    proc = run("build")
    one_line_error(proc, "--output")
    proc = run("frobnicate")
    one_line_error(proc, "invalid choice")


def test_debug_shows_traceback(tmp_path):
    bad = tmp_path / "bad.pds"
    bad.write_bytes(b"garbage" * 10)
    proc = run("--debug", "info", bad)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def stream_bits(n, seed=9):
    bits = (ps.Rng(seed=seed).integers(0, 100, size=n) < 10).astype(int)
    return bits, "\n".join(map(str, bits.tolist())) + "\n"


@pytest.mark.parametrize("counter", ["kary", "binary", "sparse"])
def test_count_stream_checkpoint_resume_matches_uninterrupted(tmp_path, counter):
    bits, text = stream_bits(400)
    common = ["--horizon", 1000, "--epsilon", 1, "--counter", counter, "--seed", 17]
    full = run("count-stream", *common, stdin=text)
    assert full.returncode == 0, full.stderr
    assert len(full.stdout.split()) == 400
    ck = tmp_path / "state.pds"
    first_text = "\n".join(map(str, bits[:150].tolist())) + "\n"
    rest_text = "\n".join(map(str, bits[150:].tolist())) + "\n"
    a = run("count-stream", *common, "--checkpoint", ck, stdin=first_text)
    assert a.returncode == 0, a.stderr
    assert stat.S_IMODE(os.stat(ck).st_mode) == 0o600
    b = run("count-stream", "--checkpoint", ck, stdin=rest_text)
    assert b.returncode == 0, b.stderr
    assert a.stdout.split() + b.stdout.split() == full.stdout.split()


def test_count_stream_bad_input():
    one_line_error(run("count-stream", "--horizon", 10, "--epsilon", 1, stdin="0\n1\nx\n"), "not an integer")
    one_line_error(run("count-stream", "--horizon", 2, "--epsilon", 1, stdin="0\n1\n1\n"), "horizon")
    one_line_error(run("count-stream", "--epsilon", 1, stdin="0\n"), "--horizon")


def test_parse_domain_and_fixed_point():
    assert parse_domain("0:9,-5:5", 2) == [(0, 9), (-5, 5)]
    assert parse_domain("int8", 2) == [(-128, 127), (-128, 127)]
    with pytest.raises(ValueError, match="lo:hi"):
        parse_domain("5", 1)
    assert to_fixed_point(["0.0000005", "0.0000015", "-1.25"], "1e6").tolist() == [0, 2, -1250000]
    # a float stands for its shortest decimal: 2.675 (2.67499.. in binary) is a tie, to even
    assert to_fixed_point(np.array([0.1, 2.675, -3.5]), "1e2").tolist() == [10, 268, -350]
    with pytest.raises(ValueError, match="give scale="):
        to_fixed_point(["1.5"])
    with pytest.raises(ValueError, match="power of ten"):
        to_fixed_point(["1.5"], "3")


def test_build_with_scale_from_decimal_csv(tmp_path):
    path = tmp_path / "dec.csv"
    path.write_text("lat\n" + "\n".join(f"{40 + i / 1000:.6f}" for i in range(500)) + "\n")
    out = tmp_path / "s.pds"
    proc = run("build", "--input", path, "--columns", "lat", "--domain=-90:90", "--scale", "1e6",
               "--epsilon", 1000, "--seed", 2, "--output", out)
    assert proc.returncode == 0, proc.stderr
    q = run("query", out, "--lo", "40.1", "--hi", "40.2", "--scale", "1e6")
    assert q.returncode == 0, q.stderr
    answer, bound = answer_and_bound(q.stdout)
    assert abs(answer - 101) <= bound


def test_build_from_parquet_with_decimal_doubles(tmp_path):
    pa = pytest.importorskip("pyarrow")  # in the test extra; optional for users
    import pyarrow.parquet as pq

    lat = np.array([40.1, 40.25, 41.0, 39.999999, 40.5] * 100)
    path = tmp_path / "points.parquet"
    pq.write_table(pa.table({"lat": lat, "name": ["x"] * len(lat)}), path)
    out = tmp_path / "p.pds"
    proc = run("build", "--input", path, "--columns", "lat", "--domain=-90:90", "--scale", "1e6",
               "--epsilon", 1000, "--seed", 1, "--output", out)
    assert proc.returncode == 0, proc.stderr
    q = run("query", out, "--lo", "40", "--hi", "40.5", "--scale", "1e6")
    answer, bound = answer_and_bound(q.stdout)
    assert abs(answer - 300) <= bound
    one_line_error(run("build", "--input", path, "--columns", "name", "--domain=0:9", "--epsilon", 1,
                       "--output", tmp_path / "n.pds"), "name")


def test_demo_plot(tmp_path):
    pytest.importorskip("matplotlib")  # in the test extra; optional for users
    png = tmp_path / "demo.png"
    proc = run("demo", "--seed", 2, "--queries", 100, "--plot", png)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_progress_line_only_on_a_terminal_after_two_seconds(monkeypatch):
    import io

    from pydp_synopsis.cli import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        p = progress.Progress("counting", total=10, stream=stream)
        p.update(1)          # before 2 s: silent
        clock[0] += 3
        p.update(5)
        p.close()
    assert "counting" in tty.getvalue() and "50.0%" in tty.getvalue() and tty.getvalue().endswith("\n")
    assert pipe.getvalue() == ""


def test_count_stream_ctrl_c_saves_a_checkpoint_that_resumes_exactly(tmp_path):
    import signal
    import time

    bits, text = stream_bits(300, seed=12)
    lines = text.splitlines(keepends=True)
    common = ["--horizon", 1000, "--epsilon", 1, "--counter", "kary", "--seed", 5]
    full = run("count-stream", *common, stdin=text).stdout.split()
    ck = tmp_path / "live.pds"
    cmd = ([SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "pydp_synopsis.cli"])
    proc = subprocess.Popen(cmd + ["count-stream", *map(str, common), "--checkpoint", str(ck)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT),
                            cwd=os.path.dirname(PACKAGE_PARENT))
    proc.stdin.write("".join(lines[:120]))
    proc.stdin.flush()
    first = [proc.stdout.readline().strip() for _ in range(120)]  # answered live, before EOF
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # blocked reading: stops cleanly
    rest_out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert rest_out == "" and first == full[:120]
    resumed = run("count-stream", "--checkpoint", ck, stdin="".join(lines[120:]))
    assert resumed.returncode == 0, resumed.stderr
    assert first + resumed.stdout.split() == full
