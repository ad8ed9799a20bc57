"""``query RECT --quantile Q --axis A`` / ``--cdf X --axis A`` and ``query SYN --levels A,B``
(a rectangle's category axis, or one category column): the API's numbers, one-line errors."""
import csv
import io

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.cli import main

LEVELS = ["AA", "DL", "UA", "WN"]


def cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("axes")
    g = np.random.default_rng(1)
    n = 2000
    pts = np.empty((n, 3), dtype=object)
    pts[:, 0] = np.array(LEVELS, dtype=object)[g.integers(0, 4, n)]
    pts[:, 1] = (np.datetime64("2001-01-01") + g.integers(0, 60, n)).astype(str)
    pts[:, 2] = g.integers(0, 24, n)
    cols = [ps.Column.category(LEVELS, name="carrier"), ps.Column.date("day"),
            ps.Column.integer("hour")]
    rect = ps.RectangleSynopsis.build(pts, domain=[("AA", "WN"), ("2001-01-01", "2001-03-01"),
                                                   (0, 23)], columns=cols, epsilon=1,
                                      rng=ps.Rng(seed=3))
    rect.save(d / "r.pds")
    flat = ps.LevelHistogram.build(pts[:, 0], levels=LEVELS, epsilon=1, rng=ps.Rng(seed=3))
    flat.save(d / "h.pds")
    ints = ps.IntervalSynopsis.build(pts[:, 2].astype(np.int64), domain=(0, 23), epsilon=1,
                                     rng=ps.Rng(seed=3))
    ints.save(d / "i.pds")
    return d, rect, flat


def test_quantile_and_cdf_of_an_axis(saved, capsys):
    d, rect, _ = saved
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--quantile", "0.25,0.5", "--axis", "day")
    rows = list(csv.reader(io.StringIO(out)))
    assert rc == 0 and rows[0] == ["q", "value"]
    want = rect.quantile([0.25, 0.5], axis=1)
    assert [r[1] for r in rows[1:]] == [str(v) for v in want.astype("datetime64[D]")]
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--cdf", "7,20", "--axis", "2")
    rows = list(csv.reader(io.StringIO(out)))
    assert rc == 0 and rows[0] == ["x", "cdf", "count"]
    assert [float(r[1]) for r in rows[1:]] == pytest.approx(rect.cdf([7, 20], axis=2).tolist())
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--quantile", "0.9", "--axis", "carrier")
    assert rc == 0 and out.strip().split("\n")[1].split(",")[1] == \
        str(rect.quantile(0.9, axis="carrier"))


def test_histogram_of_an_axis(saved, capsys):
    d, rect, _ = saved
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--histogram", "4", "--axis", "hour")
    rows = list(csv.reader(io.StringIO(out)))
    assert rc == 0 and rows[0] == ["lo", "hi", "count", "std", "low", "high"]
    counts, edges, bars = rect.histogram(4, axis="hour", confidence=0.95)
    assert [r[:2] for r in rows[1:]] == [["0", "5"], ["6", "11"], ["12", "17"], ["18", "23"]]
    assert [float(r[2]) for r in rows[1:]] == pytest.approx(counts.tolist())


def test_levels_of_a_rectangle_and_of_one_column(saved, capsys):
    d, rect, flat = saved
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--levels", "WN,AA", "--lo", "2001-01-05,3",
                     "--hi", "2001-02-01,20")
    answer, std = rect.count_levels(["WN", "AA"], ["2001-01-05", "3"], ["2001-02-01", "20"],
                                    return_std=True)
    assert rc == 0 and out.startswith(f"{answer!r} ± {std!r} (noise std; an upper bound")
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--levels", "UA")
    assert rc == 0 and out.startswith(f"{rect.count_levels('UA')!r} ± ")
    rc, out, _ = cli(capsys, "query", d / "h.pds", "--levels", "DL,WN")
    assert rc == 0 and out.startswith(f"{flat.count_levels(['DL', 'WN'])!r} ± ")


@pytest.mark.parametrize("syn, args, text", [
    ("r.pds", ["--quantile", "0.5"], "--axis is required for a rectangle synopsis"),
    ("r.pds", ["--quantile", "0.5", "--axis", "3"], "--axis: axis must be an int in [0, 2]"),
    ("r.pds", ["--cdf", "3", "--axis", "fare"], "--axis: axis must be an int in [0, 2]"),
    ("r.pds", ["--quantile", "1.5", "--axis", "0"], "q must be in [0, 1]"),
    ("i.pds", ["--quantile", "0.5", "--axis", "0"], "--axis applies to a rectangle synopsis"),
    ("i.pds", ["--lo", "0", "--hi", "3", "--axis", "0"],
     "--axis goes with --quantile, --cdf or --histogram"),
    ("r.pds", ["--levels", "ZZ"], "--levels: levels: 'ZZ' is not a level"),
    ("r.pds", ["--levels", "AA", "--lo", "2001-01-01"],
     "--lo with --levels or --by-level gives the 2 axes"),
    ("h.pds", ["--levels", "AA", "--lo", "AA"], "drop --lo/--hi"),
    ("i.pds", ["--levels", "AA"], "--levels needs a synopsis with a category column"),
])
def test_bad_usage_is_one_line(saved, capsys, syn, args, text):
    d = saved[0]
    rc, out, err = cli(capsys, "query", d / syn, *args)
    assert rc == 2 and text in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_by_level_of_a_rectangle(saved, capsys):
    d, rect, _ = saved
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--by-level", "--lo", "2001-01-05,3",
                     "--hi", "2001-02-01,20")
    rows = list(csv.reader(io.StringIO(out)))
    assert rc == 0 and rows[0] == ["level", "answer", "std", "low", "high"]
    levels, counts, bars = rect.counts_by_level(["2001-01-05", "3"], ["2001-02-01", "20"])
    assert [r[0] for r in rows[1:]] == list(levels)
    assert [float(r[1]) for r in rows[1:]] == pytest.approx(counts.tolist())
    rc, _, err = cli(capsys, "query", d / "r.pds", "--by-level", "--hi", "3")
    assert rc == 2 and "--hi with --levels or --by-level gives the 2 axes" in err
