"""The command line's details users meet: per-query error bars, full-precision answers,
``--delimiter``, negative ``--domain`` values, help texts, progress only on a terminal."""
import csv
import os
import pty
import subprocess

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.cli import common, parse, progress
from clirun import PACKAGE_PARENT, SCRIPT, answer_and_bound, one_line_error, read_pty, run

pytestmark = pytest.mark.integration     # the command line in subprocesses


@pytest.fixture(scope="module")
def interval_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("polish")
    x = np.random.default_rng(3).integers(-5000, 5000, 20_000)
    syn = ps.IntervalSynopsis.build(x, domain=(-5000, 4999), epsilon=1.0, rng=ps.Rng(seed=8))
    syn.save(d / "i.pds")
    return d, x, syn


def test_query_prints_answer_std_interval_and_the_simultaneous_bound(interval_file):
    d, x, syn = interval_file
    q = run("query", d / "i.pds", "--lo", -1000, "--hi", 2500)
    assert q.returncode == 0, q.stderr
    first, second = q.stdout.splitlines()
    bars = syn.confidence_intervals(-1000, 2500, 0.95)
    bars = type(bars)(*(float(np.ravel(v)[0]) for v in bars))
    # answer ± std (noise std); 95% interval [low, high] (this query)
    assert first == (f"{bars.answer:.1f} ± {bars.std:.1f} (noise std); 95% interval "
                     f"[{bars.low:.1f}, {bars.high:.1f}] (this query)")
    assert second == f"simultaneous 95% bound (all queries at once): ± {syn.error_bound(0.95):.1f}"
    answer, bound = answer_and_bound(q.stdout)
    assert (bars.high - bars.low) / 2 < bound    # the per-query half-width is the narrower one
    q90 = run("query", d / "i.pds", "--lo", -1000, "--hi", 2500, "--confidence", 0.9)
    assert "90% interval" in q90.stdout and "simultaneous 90% bound" in q90.stdout


def test_batch_answers_are_written_in_full_precision_without_negative_zero(tmp_path, interval_file):
    d, x, syn = interval_file
    lo = [-5000, -4999, 0, -5000, 100]
    hi = [4999, -4999, 0, -4990, 4000]
    qf = tmp_path / "q.csv"
    qf.write_text("lo,hi\n" + "".join(f"{a},{b}\n" for a, b in zip(lo, hi)))
    out = tmp_path / "a.csv"
    q = run("query", d / "i.pds", "--queries", qf, "--output", out, "--nonnegative")
    assert q.returncode == 0, q.stderr
    rows = list(csv.DictReader(open(out)))
    bars = syn.confidence_intervals(lo, hi, 0.95, nonnegative=True)
    for i, r in enumerate(rows):
        # every float reads back exactly: repr, not 6 significant digits
        assert float(r["answer"]) == bars.answer[i] and float(r["std"]) == bars.std[i]
        assert float(r["low"]) == bars.low[i] and float(r["high"]) == bars.high[i]
        assert float(r["simultaneous_bound"]) == syn.error_bound(0.95)
        assert not any(r[k].startswith("-0.0") and float(r[k]) == 0 for k in r)
        assert "e+" not in r["answer"]
    assert min(float(r["answer"]) for r in rows) >= 0


def test_number_formats_never_print_negative_zero():
    assert common.full_text(-0.0) == "0.0" and common.full_text(4998554.3) == "4998554.3"
    assert common.full_text(0.1 + 0.2) == "0.30000000000000004"
    assert common.shown_text(-0.0) == "0.0" and common.shown_text(-0.04) == "0.0"
    assert common.shown_text(-0.06) == "-0.1"
    assert common.shown_text(-12.0) == "-12.0"


def test_negative_domain_needs_no_equals_sign(tmp_path):
    data = tmp_path / "v.csv"
    data.write_text("v,w\n" + "".join(f"{i % 11 - 5},{i % 7 - 3}\n" for i in range(300)))
    a = run("build", "--input", data, "--columns", "v", "--domain", "-5:5", "--epsilon", 1,
            "--seed", 1, "--output", tmp_path / "a.pds")
    b = run("build", "--input", data, "--columns", "v", "--domain=-5:5", "--epsilon", 1,
            "--seed", 1, "--output", tmp_path / "b.pds")
    assert a.returncode == 0 and b.returncode == 0, a.stderr
    assert ps.load(tmp_path / "a.pds").count(-5, 5) == ps.load(tmp_path / "b.pds").count(-5, 5)
    r = run("build", "--input", data, "--columns", "v,w", "--domain", "-5:5,-3:3", "--epsilon", 1,
            "--output", tmp_path / "r.pds")
    assert r.returncode == 0, r.stderr
    q = run("query", tmp_path / "r.pds", "--lo", "-5,-3", "--hi", "-1,-1")
    assert q.returncode == 0, q.stderr
    q1 = run("query", tmp_path / "a.pds", "--lo", "-4", "--hi", "-2")
    assert q1.returncode == 0 and " ± " in q1.stdout


def test_attach_negative_values_touches_only_value_options():
    f = parse.attach_negative_values
    assert f(["build", "--domain", "-5:5"]) == ["build", "--domain=-5:5"]
    assert f(["query", "s", "--lo", "-1,-2", "--hi", "3,-1"]) == ["query", "s", "--lo=-1,-2", "--hi", "3,-1"]
    assert f(["build", "--domain", "--epsilon"]) == ["build", "--domain", "--epsilon"]
    assert f(["build", "--", "--domain", "-5:5"]) == ["build", "--", "--domain", "-5:5"]
    assert f(["build", "--epsilon", "-1"]) == ["build", "--epsilon", "-1"]


def test_delimiter_for_input_and_query_files(tmp_path):
    data = tmp_path / "semi.csv"
    rows = [(i % 100, (i * 7) % 50) for i in range(2000)]
    data.write_text("a;b\n" + "".join(f"{a};{b}\n" for a, b in rows))
    comma = tmp_path / "comma.csv"
    comma.write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in rows))
    for name, args in (("semi", ["--input", data, "--delimiter", ";"]), ("comma", ["--input", comma])):
        p = run("build", *args, "--columns", "a,b", "--domain=0:99,0:49", "--epsilon", 1,
                "--seed", 4, "--output", tmp_path / f"{name}.pds")
        assert p.returncode == 0, p.stderr
    same = [ps.load(tmp_path / f"{n}.pds").count([0, 0], [50, 20]) for n in ("semi", "comma")]
    assert same[0] == same[1]
    tab = tmp_path / "tab.csv"
    tab.write_text("a\tb\n" + "".join(f"{a}\t{b}\n" for a, b in rows))
    p = run("build", "--input", tab, "--delimiter", "tab", "--columns", "a", "--domain=0:99",
            "--epsilon", 1, "--output", tmp_path / "t.pds")
    assert p.returncode == 0, p.stderr
    qf = tmp_path / "q.csv"
    qf.write_text("lo;hi\n0;10\n5;99\n")
    out = tmp_path / "ans.csv"
    q = run("query", tmp_path / "t.pds", "--queries", qf, "--delimiter", ";", "--output", out)
    assert q.returncode == 0, q.stderr
    assert out.read_text().splitlines()[0] == "lo;hi;answer;std;low;high;simultaneous_bound"
    one_line_error(run("build", "--input", data, "--delimiter", "ab", "--columns", "a",
                       "--domain=0:99", "--epsilon", 1, "--output", tmp_path / "x.pds"),
                   "--delimiter")
    assert not (tmp_path / "x.pds").exists()


def test_database_accepts_a_plain_path(tmp_path):
    import sqlite3

    db = tmp_path / "flights.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (m INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(i % 1440,) for i in range(3000)])
    con.commit()
    con.close()
    p = run("build", "--database", db, "--table", "t", "--columns", "m", "--domain=0:1439",
            "--epsilon", 1, "--output", tmp_path / "m.pds")
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("command,fragments", [
    ("build", ["privacy loss of this release", "failure probability", "default: 0.05",
               "epsilon-differentially private", "--delimiter"]),
    ("query", ["per-query interval", "simultaneous", "default: 0.95", "--nonnegative"]),
    ("demo", ["default: 1.0", "default: 1000"]),
    ("count-stream", ["--monotone", "running maximum"]),
    ("plot", ["heat map", "--releases", "error band"]),
])
def test_help_describes_each_command_and_its_defaults(command, fragments):
    text = " ".join(run(command, "--help").stdout.split())
    for f in fragments:
        assert f in text, (command, f)


def test_count_stream_progress_on_a_terminal_and_silent_otherwise(tmp_path):
    cmd = [SCRIPT] if os.path.exists(SCRIPT) else [os.sys.executable, "-m", "pydp_synopsis.cli"]
    args = cmd + ["count-stream", "--horizon", "200000", "--epsilon", "1"]
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, PYDP_SYNOPSIS_PROGRESS_DELAY="0")
    stream = "1\n" * 150_000
    out = tmp_path / "out.txt"
    master, slave = pty.openpty()
    with open(out, "w") as fh:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=fh, stderr=slave, env=env,
                                cwd=os.path.dirname(PACKAGE_PARENT))
        os.close(slave)
        import threading

        feeder = threading.Thread(target=lambda: (proc.stdin.write(stream.encode()),
                                                  proc.stdin.close()))
        feeder.start()
        text = read_pty(master)
        feeder.join()
        assert proc.wait(timeout=120) == 0
    assert "pydp-synopsis count-stream: items" in text and "150,000" in text
    assert text.endswith("\n")
    assert len(out.read_text().split()) == 150_000
    piped = subprocess.run(args, input=stream, capture_output=True, text=True, env=env,
                           timeout=120, cwd=os.path.dirname(PACKAGE_PARENT))
    assert piped.returncode == 0 and piped.stderr == ""


def test_progress_stays_off_when_the_releases_go_to_the_terminal():
    class Tty:
        def isatty(self):
            return True

        def write(self, text):
            raise AssertionError("progress written over the releases")

        def flush(self):
            pass

    p = progress.Progress("x", stream=Tty(), quiet_if=Tty())
    assert not p.enabled
    p.update(10)
    p.close()


def test_count_stream_monotone(tmp_path):
    common = ["--horizon", 2000, "--epsilon", 0.5, "--seed", 5]
    stream = "".join(f"{b}\n" for b in np.random.default_rng(1).integers(0, 2, 1500))
    raw = np.array(run("count-stream", *common, stdin=stream).stdout.split(), dtype=np.int64)
    mono = np.array(run("count-stream", *common, "--monotone", stdin=stream).stdout.split(),
                    dtype=np.int64)
    np.testing.assert_array_equal(mono, np.maximum.accumulate(np.maximum(raw, 0)))
    sparse = ["--horizon", 2**30, "--epsilon", 0.5, "--counter", "sparse", "--seed", 6]
    raw = run("count-stream", *sparse, stdin=stream).stdout.split()
    mono = run("count-stream", *sparse, "--monotone", stdin=stream).stdout.split()
    np.testing.assert_array_equal(np.array(mono, dtype=np.int64),
                                  np.maximum.accumulate(np.maximum(np.array(raw, dtype=np.int64), 0)))
