"""``pydp-synopsis build`` from globs, directories and databases: the same release as from
one file; every argument checked before any data is read; a progress line on a terminal."""
import os
import pty
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

import pydp_synopsis as ps
from pg_cluster import Cluster, postgres_bin
from clirun import PACKAGE_PARENT, SCRIPT, one_line_error, read_pty, run

pytestmark = pytest.mark.integration     # CLI subprocesses, a PostgreSQL cluster

duckdb = pytest.importorskip("duckdb")

N = 3000


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-sources")
    gen = np.random.default_rng(11)
    x, y = gen.integers(0, 1000, N), gen.integers(-500, 500, N)
    rows = [f"{a},{b}\n" for a, b in zip(x.tolist(), y.tolist())]
    (d / "one.csv").write_text("x,y\n" + "".join(rows))
    (d / "parts").mkdir()
    for i in range(3):
        (d / "parts" / f"p{i}.csv").write_text("x,y\n" + "".join(rows[i * 1000:(i + 1) * 1000]))
    con = sqlite3.connect(d / "t.db")
    con.execute("CREATE TABLE t (x INTEGER, y INTEGER, n INTEGER, f REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?, NULL, 0.5)", zip(x.tolist(), y.tolist()))
    con.commit()
    con.close()
    dk = duckdb.connect(str(d / "t.duckdb"))
    dk.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{d / 'one.csv'}')")
    dk.close()
    return {"dir": d, "x": x, "y": y}


def release(path):
    kind, meta, arrays, _ = ps.load(path)._to_record()
    return kind, meta, {k: v.tolist() for k, v in arrays.items()}


def build(tmp_path, name, *args, domain="0:999,-500:499", columns="x,y"):
    out = tmp_path / f"{name}.pds"
    proc = run("build", *args, "--columns", columns, f"--domain={domain}", "--epsilon", 1,
               "--seed", 7, "--output", out)
    assert proc.returncode == 0, proc.stderr
    return release(out)


def test_globs_directories_engines_and_databases_release_the_same(tmp_path, table):
    d = table["dir"]
    expect = build(tmp_path, "one", "--input", d / "one.csv")
    assert expect[0] == "rectangle-synopsis"
    assert build(tmp_path, "glob", "--input", d / "parts" / "p*.csv") == expect
    assert build(tmp_path, "dir", "--input", d / "parts") == expect
    assert build(tmp_path, "duck", "--input", d / "parts", "--engine", "duckdb",
                 "--memory-limit", "256MB") == expect
    assert build(tmp_path, "sqlite", "--database", d / "t.db", "--table", "t") == expect
    assert build(tmp_path, "sql", "--database", f"sqlite:///{d / 't.db'}", "--sql",
                 "SELECT x, y FROM t") == expect
    assert build(tmp_path, "duckdb", "--database", f"duckdb:///{d / 't.duckdb'}",
                 "--table", "t") == expect
    one = build(tmp_path, "x", "--input", d / "one.csv", domain="0:999", columns="x")
    assert build(tmp_path, "xdb", "--database", d / "t.duckdb", "--table", "t", domain="0:999",
                 columns="x") == one


def test_postgresql_from_the_command_line(tmp_path, table):
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries not installed")
    psycopg = pytest.importorskip("psycopg")
    d = table["dir"]
    expect = build(tmp_path, "one", "--input", d / "one.csv")
    with Cluster(port=54331) as pg:
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute("CREATE TABLE t (x int8, y int4, n int8)")
            with con.cursor().copy("COPY t (x, y) FROM STDIN") as copy:
                for a, b in zip(table["x"].tolist(), table["y"].tolist()):
                    copy.write_row((a, b))
        url = pg.reader("t")
        assert build(tmp_path, "pg", "--database", url, "--table", "t") == expect
        out = tmp_path / "bad.pds"
        one_line_error(run("build", "--database", url, "--table", "t", "--columns", "n",
                           "--domain=0:9", "--epsilon", 1, "--output", out),
                       "column 'n' holds NULL values")
    line = one_line_error(run("build", "--database", url, "--table", "t", "--columns", "x",
                              "--domain=0:999", "--epsilon", 1, "--output", out),
                          "failed while connecting", "port=54331")
    assert not out.exists() and "Traceback" not in line


@pytest.mark.parametrize("args, fragments", [
    (["--table", "nope", "--columns", "x"], ["table 'nope'"]),
    (["--table", "t", "--columns", "zz"], ["no column 'zz'"]),
    (["--table", "t", "--columns", "n"], ["column 'n' holds NULL values"]),
    (["--table", "t", "--columns", "f"], ["column 'f'", "--scale"]),
    (["--table", "t", "--columns", "x", "--domain=0:99"], ["column 'x'", "domain [0, 99]"]),
])
def test_bad_database_inputs_exit_2_and_write_nothing(tmp_path, table, args, fragments):
    """(Every engine's bad inputs are tested through the API in test_sources.py.)"""
    out = tmp_path / "out.pds"
    domain = [] if any(a.startswith("--domain") for a in args) else ["--domain=0:999"]
    one_line_error(run("build", "--database", table["dir"] / "t.db", *args, *domain,
                       "--epsilon", 1, "--output", out), *fragments)
    assert not out.exists()


# ------------------------------------------ arguments are checked before the data

@pytest.mark.parametrize("args, fragment", [
    (["--columns", "x", "--domain=0:9x", "--epsilon", 1], "--domain entry '0:9x'"),
    (["--columns", "x,y", "--domain=0:9,0:9,0:9", "--epsilon", 1], "3 ranges for 2 columns"),
    (["--columns", "x", "--epsilon", 1], "--domain is required"),
    (["--columns", "x", "--domain=0:9", "--epsilon", "-1"], "epsilon"),
    (["--columns", "x", "--domain=0:9", "--epsilon", 1, "--beta", 2], "beta"),
    (["--columns", "x", "--domain=0:9", "--epsilon", 1, "--scale", 3], "power of ten"),
    (["--columns", "x", "--domain=0:9", "--epsilon", 1, "--scheduler", "tcp://h:1"],
     "--scheduler needs --engine dask"),
])
def test_every_argument_is_checked_before_the_input_is_opened(tmp_path, args, fragment):
    """The input is a FIFO nobody writes to: opening it would block until the timeout."""
    fifo = tmp_path / "rows.csv"
    os.mkfifo(fifo)
    out = tmp_path / "out.pds"
    proc = run("build", "--input", fifo, *args, "--output", out)   # run() times out at 300 s
    one_line_error(proc, fragment)
    assert not out.exists()


def test_an_unwritable_output_is_refused_before_the_input_is_opened(tmp_path):
    fifo = tmp_path / "rows.csv"
    os.mkfifo(fifo)
    one_line_error(run("build", "--input", fifo, "--columns", "x", "--domain=0:9", "--epsilon", 1,
                       "--output", tmp_path / "no" / "such" / "out.pds"), "does not exist")


# ---------------------------------------------------------------- progress

def command():
    return [SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "pydp_synopsis.cli"]


def test_progress_line_on_a_terminal_only(tmp_path, table):
    args = command() + ["build", "--input", str(table["dir"] / "one.csv"), "--columns", "x",
                        "--domain=0:999", "--epsilon", "1", "--output", str(tmp_path / "o.pds")]
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, PYDP_SYNOPSIS_PROGRESS_DELAY="0")
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=env,
                            cwd=os.path.dirname(PACKAGE_PARENT))
    os.close(slave)
    text = read_pty(master)
    assert proc.wait(timeout=120) == 0
    assert "pydp-synopsis build: reading" in text and "partitioning and counting" in text
    assert text.endswith("\n")
    piped = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120,
                           cwd=os.path.dirname(PACKAGE_PARENT))
    assert piped.returncode == 0 and piped.stderr == ""
