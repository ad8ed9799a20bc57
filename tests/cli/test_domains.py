"""The command line in user units: build records column names and kinds, query and
info speak them, --resolution and --dropna, missing values refused in one line."""
import sqlite3

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.cli import parse_user_domain
from pydp_synopsis.units import Column
from clirun import one_line_error, run

pytestmark = pytest.mark.integration     # the command line in subprocesses

pytest.importorskip("pyarrow")


@pytest.fixture
def places(tmp_path):
    rng = np.random.default_rng(0)
    lat, lon = rng.uniform(25, 49, 3000), rng.uniform(-124, -67, 3000)
    days = np.datetime64("2001-01-01") + rng.integers(0, 365, 3000)
    hours = rng.integers(0, 24, 3000)
    path = tmp_path / "p.csv"
    with open(path, "w") as fh:
        fh.write("latitude,longitude,day,when\n")
        for a, b, d, h in zip(lat, lon, days, hours):
            fh.write(f"{a:.5f},{b:.5f},{d},{d}T{h:02d}:30:00\n")
    return path, lat, lon, days


def test_parse_user_domain():
    assert parse_user_domain("0:9,2001-01-01:2001-12-31", 2) == [(0, 9), ("2001-01-01",
                                                                           "2001-12-31")]
    assert parse_user_domain("-90.5:90", 1) == [("-90.5", 90)]
    with pytest.raises(ps.SynopsisError, match=r"\.\."):
        parse_user_domain("2001-01-01T00:00:2001-12-31T00:00", 1)


def test_scale_is_recorded_and_queries_need_not_repeat_it(places, tmp_path):
    path, lat, lon, _ = places
    out = tmp_path / "R.pds"
    proc = run("build", "--input", path, "--columns", "latitude,longitude", "--scale", "1e5",
               "--domain=-90:90,-180:180", "--epsilon", "1", "--seed", "3", "--output", out)
    assert proc.returncode == 0, proc.stderr
    syn = ps.load(out)
    assert syn.columns == (Column.decimal("latitude", scale="1e5"),
                           Column.decimal("longitude", scale=100000))
    want = syn.count(["40", "-75"], ["41", "-73"])
    proc = run("query", out, "--lo", "40,-75", "--hi", "41,-73")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{want:.1f} ±")
    same = run("query", out, "--lo", "40,-75", "--hi", "41,-73", "--scale", "1e5")
    assert same.stdout == proc.stdout
    one_line_error(run("query", out, "--lo", "40,-75", "--hi", "41,-73", "--scale", "1e6"),
                   "--scale 1e6", "decimal (scale 1e5)")
    info = run("info", out).stdout
    assert "column latitude:" in info and "-90.00000 .. 90.00000" in info
    assert "seal shares:" in info          # the adaptive grid's released shares
    assert f"fine constant:  {syn.fine_constant:g}\n" in info      # ZIP codes: AG's 5
    assert syn.fine_constant == 5.0
    queries = tmp_path / "q.csv"
    queries.write_text("lo_0,lo_1,hi_0,hi_1\n40,-75,41,-73\n30.5,-100,35.25,-90\n")
    proc = run("query", out, "--queries", queries)
    assert proc.returncode == 0, proc.stderr
    answers = [float(r.split(",")[4]) for r in proc.stdout.strip().splitlines()[1:]]
    assert answers[0] == pytest.approx(want, rel=1e-5)


def test_dates_and_hourly_times(places, tmp_path):
    path, _, _, days = places
    out = tmp_path / "D.pds"
    proc = run("build", "--input", path, "--columns", "day", "--domain=2001-01-01:2001-12-31",
               "--epsilon", "1", "--seed", "4", "--output", out)
    assert proc.returncode == 0, proc.stderr
    syn = ps.load(out)
    assert syn.column == Column.date("day")
    ref = ps.IntervalSynopsis.build(days.astype(np.int64), domain=(11323, 11687), epsilon=1,
                                    rng=ps.Rng(seed=4))
    assert syn.count("2001-03-01", "2001-03-31") == ref.count(11382, 11412)
    proc = run("query", out, "--lo", "2001-03-01", "--hi", "2001-03-31")
    assert proc.stdout.startswith(f"{ref.count(11382, 11412):.1f} ±")
    assert "date, domain 2001-01-01 .. 2001-12-31" in run("info", out).stdout
    one_line_error(run("query", out, "--lo", "2001-03-01", "--hi", "2001-02-30"),
                   "hi: a value is not a valid date")
    hourly = tmp_path / "T.pds"
    proc = run("build", "--input", path, "--columns", "when", "--resolution", "1h",
               "--domain=2001-01-01T00:00..2001-12-31T23:59", "--epsilon", "1",
               "--output", hourly)
    assert proc.returncode == 0, proc.stderr
    assert ps.load(hourly).column == Column.datetime("when", resolution="1h")
    assert "datetime (unit s, step 3600)" in run("info", hourly).stdout


def test_missing_values_are_refused_in_one_line_or_dropped(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("x,y\n1,2\n3,NA\n5,6\n,8\n")
    out = tmp_path / "m.pds"
    line = one_line_error(run("build", "--input", path, "--columns", "x,y",
                              "--domain=0:9,0:9", "--epsilon", "1", "--output", out),
                          "column 'x'", "--dropna")      # the first column holding one
    late = tmp_path / "late.csv"
    late.write_text("x,y\n" + "1,2\n" * 50 + "9,NaN\n")
    one_line_error(run("build", "--input", late, "--columns", "x,y", "--domain=0:9,0:9",
                       "--epsilon", "1", "--output", out), "column 'y'", "NULL")
    assert "NA" not in line.split("holds NULL")[0]
    assert not out.exists()
    proc = run("build", "--input", path, "--columns", "x,y", "--domain=0:9,0:9", "--epsilon",
               "1", "--dropna", "--seed", "1", "--output", out)
    assert proc.returncode == 0, proc.stderr
    ref = ps.RectangleSynopsis.build([[1, 2], [5, 6]], domain=[(0, 9), (0, 9)], epsilon=1,
                                     rng=ps.Rng(seed=1))
    assert ps.load(out).count([0, 0], [9, 9]) == ref.count([0, 0], [9, 9])


def test_sql_nulls_are_dropped_in_the_database(tmp_path):
    db = tmp_path / "t.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (n INTEGER, d DATE)")
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(1, "2001-01-05"), (None, "2001-02-01"), (3, None), (4, "2001-03-01")])
    con.commit()
    con.close()
    out = tmp_path / "s.pds"
    one_line_error(run("build", "--database", f"sqlite:///{db}", "--table", "t", "--columns",
                       "n", "--domain=0:9", "--epsilon", "1", "--output", out),
                   "column 'n' holds NULL values", "--dropna")
    proc = run("build", "--database", f"sqlite:///{db}", "--table", "t", "--columns", "n",
               "--domain=0:9", "--epsilon", "1", "--dropna", "--seed", "2", "--output", out)
    assert proc.returncode == 0, proc.stderr
    ref = ps.IntervalSynopsis.build([1, 3, 4], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=2))
    assert ps.load(out).count(0, 9) == ref.count(0, 9)
    proc = run("build", "--database", f"sqlite:///{db}", "--table", "t", "--columns", "d",
               "--domain=2001-01-01:2001-12-31", "--epsilon", "1", "--dropna", "--seed", "2",
               "--output", out)
    assert proc.returncode == 0, proc.stderr
    ref = ps.IntervalSynopsis.build(np.array(["2001-01-05", "2001-02-01", "2001-03-01"],
                                             dtype="datetime64[D]"),
                                    domain=("2001-01-01", "2001-12-31"), epsilon=1,
                                    rng=ps.Rng(seed=2))
    assert ps.load(out).count("2001-01-01", "2001-02-15") == ref.count("2001-01-01",
                                                                       "2001-02-15")


def test_bad_domains_in_user_units_are_usage_errors(places, tmp_path):
    path = places[0]
    out = tmp_path / "x.pds"
    one_line_error(run("build", "--input", path, "--columns", "latitude", "--domain=-90.5:90",
                       "--epsilon", "1", "--output", out), "--domain", "--scale")
    one_line_error(run("build", "--input", path, "--columns", "day",
                       "--domain=2001-01-01:2001-13-01", "--epsilon", "1", "--output", out),
                   "--domain", "not a valid date")
    one_line_error(run("build", "--input", path, "--columns", "day", "--scale", "1e2",
                       "--resolution", "1h", "--domain=0:9", "--epsilon", "1", "--output", out),
                   "--scale or --resolution")
