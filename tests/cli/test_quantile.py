"""``pydp-synopsis query SYN --quantile / --cdf / --histogram``: the distribution of a saved
interval synopsis in its units, the same numbers as the API, one-line errors."""
import csv
import io

import numpy as np
import pytest

import pydp_synopsis as ps
from clirun import one_line_error, run

pytestmark = pytest.mark.integration     # the command line in subprocesses


def rows(text):
    return list(csv.reader(io.StringIO(text)))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("q")
    rng = np.random.default_rng(0)
    days = np.datetime64("2001-01-01") + rng.integers(0, 181, 5000)
    ints = rng.integers(-50, 50, 5000)
    dec = np.round(rng.normal(3, 1, 5000), 2)
    out = {}
    for name, syn in (
            ("days", ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-06-30"),
                                               epsilon=1, rng=ps.Rng(seed=2))),
            ("ints", ps.IntervalSynopsis.build(ints, domain=(-100, 100), epsilon=1,
                                               rng=ps.Rng(seed=2))),
            ("dec", ps.IntervalSynopsis.build(dec, domain=(-10, 10), scale="1e2", epsilon=1,
                                              rng=ps.Rng(seed=2)))):
        syn.save(d / f"{name}.pds")
        out[name] = (d / f"{name}.pds", syn)
    return out


def test_quantiles_in_user_units(saved):
    for name, (path, syn) in saved.items():
        proc = run("query", path, "--quantile", "0,0.5,0.9,1")
        assert proc.returncode == 0, proc.stderr
        table = rows(proc.stdout)
        assert table[0] == ["q", "value"]
        want = syn.quantile([0, 0.5, 0.9, 1])
        got = [r[1] for r in table[1:]]
        if name == "days":
            assert got == [str(v) for v in want]
        elif name == "dec":
            assert [float(v) for v in got] == pytest.approx(want.tolist(), abs=1e-9)
            assert all(len(v.split(".")[1]) == 2 for v in got)       # the column's 2 digits
        else:
            assert got == [str(v) for v in want.tolist()]


def test_cdf_and_histogram(saved, tmp_path):
    path, syn = saved["ints"]
    proc = run("query", path, "--cdf", "-5,0,100")
    assert proc.returncode == 0, proc.stderr
    table = rows(proc.stdout)
    assert table[0] == ["x", "cdf", "count"]
    assert [float(r[1]) for r in table[1:]] == syn.cdf([-5, 0, 100]).tolist()
    assert [float(r[2]) for r in table[1:]] == syn.cdf([-5, 0, 100], counts=True).tolist()
    proc = run("query", path, "--histogram", "4", "--confidence", "0.9")
    assert proc.returncode == 0, proc.stderr
    table = rows(proc.stdout)
    assert table[0] == ["lo", "hi", "count", "std", "low", "high"]
    counts, edges, bars = syn.histogram(4, confidence=0.9)
    assert [r[:2] for r in table[1:]] == [["-100", "-51"], ["-50", "-1"], ["0", "49"],
                                          ["50", "100"]]
    assert [float(r[2]) for r in table[1:]] == counts.tolist()
    assert [float(r[5]) for r in table[1:]] == bars.high.tolist()
    path, syn = saved["days"]
    out = tmp_path / "h.csv"
    proc = run("query", path, "--histogram", "2001-01-01,2001-04-01,2001-06-30",
               "--output", out)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    table = rows(out.read_text())
    assert [r[:2] for r in table[1:]] == [["2001-01-01", "2001-03-31"],
                                          ["2001-04-01", "2001-06-30"]]
    want = syn.count_many(["2001-01-01", "2001-04-01"], ["2001-03-31", "2001-06-30"],
                          nonnegative=True)
    assert [float(r[2]) for r in table[1:]] == want.tolist()


@pytest.mark.parametrize("args, fragments", [
    (["--quantile", "1.5"], ["--quantile", "q must be in [0, 1], got 1.5"]),
    (["--quantile", "nan"], ["--quantile", "'nan' is not a number in [0, 1]"]),
    (["--quantile", "0.5,,0.9"], ["--quantile", "an empty value"]),
    (["--quantile", "0.5", "--lo", "1", "--hi", "2"], ["give one of --quantile"]),
    (["--quantile", "0.5", "--cdf", "1"], ["give one of --quantile"]),
    (["--cdf", "500"], ["--cdf", "x must lie in the domain [-100, 100]"]),
    (["--cdf", "2001-01-01"], ["--cdf", "the synopsis holds integers"]),
    (["--histogram", "0"], ["--histogram", "bins must be in [1, 201], got 0"]),
    (["--histogram", "5,3"], ["--histogram", "strictly increasing"]),
    (["--histogram", "x"], ["--histogram", "a number of bins or two or more edges"]),
    (["--histogram", "1_0"], ["--histogram", "a number of bins or two or more edges"]),
    (["--cdf", "1_0"], ["--cdf", "the synopsis holds integers"]),
])
def test_bad_input_is_one_line(saved, args, fragments):
    one_line_error(run("query", saved["ints"][0], *args), *fragments)


def test_bad_units_and_kinds(saved, tmp_path):
    one_line_error(run("query", saved["days"][0], "--cdf", "5"), "--cdf", "ISO date")
    box = ps.RectangleSynopsis.build(np.zeros((10, 2), dtype=np.int64),
                                     domain=[(0, 9), (0, 9)], epsilon=1, rng=ps.Rng(seed=1))
    box.save(tmp_path / "r.pds")
    one_line_error(run("query", tmp_path / "r.pds", "--quantile", "0.5"),
                   "--axis is required for a rectangle synopsis")
    path = saved["ints"][0]
    one_line_error(run("query", path, "--quantile", "0.5", "--output", path), "also an input")


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
def test_datetimes_naive_and_zoned(tmp_path, tz):
    t = np.datetime64("2001-03-01T00:00") + np.arange(0, 48 * 60, 7).astype("m8[m]")
    syn = ps.IntervalSynopsis.build(t.astype("datetime64[s]"),
                                   domain=("2001-03-01T00:00:00", "2001-03-03T00:00:00"),
                                   columns=ps.Column.datetime("t", tz=tz, resolution="1m"),
                                   epsilon=1, rng=ps.Rng(seed=5))
    syn.save(tmp_path / "t.pds")
    proc = run("query", tmp_path / "t.pds", "--quantile", "0.25,0.5")
    assert proc.returncode == 0, proc.stderr
    got = [r[1] for r in rows(proc.stdout)[1:]]
    ints = syn.column.to_int(syn.quantile([0.25, 0.5]), "q", None, utc=tz is not None)
    assert got == [syn.column.format(v) for v in ints.tolist()]
    assert all(v.endswith("+01:00") == (tz is not None) for v in got)
