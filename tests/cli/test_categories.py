"""The command line with category columns: build --categories/--levels/--other,
query by level names and --by-level, info showing the levels; bad usage exits 2."""
import subprocess
import sys

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.cli import main

SECRET = "QQ-secret"


@pytest.fixture()
def files(tmp_path):
    g = np.random.default_rng(3)
    carriers = np.array(["AA", "DL", "UA", "WN", SECRET])[g.integers(0, 5, 1200)]
    days = g.integers(0, 60, 1200)
    (tmp_path / "t.csv").write_text("carrier,day\n" + "".join(
        f"{c},{d}\n" for c, d in zip(carriers, days)))
    (tmp_path / "levels.txt").write_text("AA\nDL\n\nUA\nWN\n")
    return tmp_path, carriers, days


def cli(capsys, *args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_build_flat_query_info_by_level(files, capsys):
    d, carriers, _ = files
    rc, out, _ = cli(capsys, "build", "--input", d / "t.csv", "--columns", "carrier",
                     "--categories", "AA,DL,UA,WN", "--other", "other", "--epsilon", "1e6",
                     "--output", d / "h.pds", "--seed", 1)
    assert rc == 0 and "5 levels (flat histogram)" in out
    assert isinstance(ps.load(d / "h.pds"), ps.LevelHistogram)
    rc, out, _ = cli(capsys, "info", d / "h.pds")
    assert rc == 0 and "levels:         AA, DL, UA, WN" in out and "other:          other" in out
    rc, out, _ = cli(capsys, "query", d / "h.pds", "--lo", "DL", "--hi", "UA")
    assert rc == 0 and out.startswith(f"{int(np.isin(carriers, ['DL', 'UA']).sum())}.0 ±")
    rc, out, _ = cli(capsys, "query", d / "h.pds", "--by-level")
    rows = [line.split(",") for line in out.strip().split("\n")]
    assert rows[0] == ["level", "answer", "std", "low", "high"]
    assert [r[0] for r in rows[1:]] == ["AA", "DL", "UA", "WN", "other"]
    assert float(rows[-1][1]) == np.sum(carriers == SECRET)


def test_levels_file_tree_and_rectangle(files, capsys):
    d, carriers, days = files
    rc, out, _ = cli(capsys, "build", "--input", d / "t.csv", "--columns", "carrier",
                     "--levels", d / "levels.txt", "--other", "rest", "--structure", "tree",
                     "--epsilon", "1e6", "--output", d / "t.pds")
    assert rc == 0 and "interval synopsis over 5 levels" in out
    syn = ps.load(d / "t.pds")
    assert isinstance(syn, ps.IntervalSynopsis) and syn.levels == ("AA", "DL", "UA", "WN", "rest")
    rc, out, _ = cli(capsys, "build", "--input", d / "t.csv", "--columns", "carrier,day",
                     "--levels", d / "levels.txt", "--other", "rest", "--domain", "0:59",
                     "--epsilon", "1e6", "--output", d / "r.pds")
    assert rc == 0 and "rectangle synopsis over 2 columns" in out
    rc, out, _ = cli(capsys, "query", d / "r.pds", "--lo", "UA,0", "--hi", "WN,29")
    true = int(np.sum(np.isin(carriers, ["UA", "WN"]) & (days <= 29)))
    assert rc == 0 and round(float(out.split(" ")[0])) == true
    rc, out, _ = cli(capsys, "info", d / "r.pds")
    assert "column carrier: category (4 levels, other 'rest'), domain AA .. rest" in out


@pytest.mark.parametrize("extra, text", [
    (["--categories", "AA,DL", "--levels", "x.txt"], "not both"),
    (["--other", "o"], "--other needs --categories"),
    (["--categories", "AA,DL,AA"], "'AA' is given twice"),
    (["--categories", ",,"], "at least one level"),
    (["--categories", "AA,DL,UA,WN", "--domain", "0:9"], "drop --domain"),
    (["--categories", "AA,DL", "--scale", "1e2"], "do not apply"),
    (["--categories", "AA,DL", "--levels", "missing.txt"], "not both"),
    (["--levels", "missing.txt"], "cannot read"),
    (["--categories", "AA,DL,UA,WN", "--engine", "dask"], "does not read category columns"),
    (["--categories", "AA,DL,UA,WN", "--structure", "flat", "--partition", "dnrr"],
     "--partition applies to a tree"),
])
def test_bad_usage_is_one_line_exit_2(files, capsys, extra, text):
    d, _, _ = files
    rc, out, err = cli(capsys, "build", "--input", d / "t.csv", "--columns", "carrier",
                       "--epsilon", "1", "--output", d / "x.pds", *extra)
    assert rc == 2 and text in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (d / "x.pds").exists()


def test_value_outside_the_levels_is_refused_without_echo(files, capsys):
    d, _, _ = files
    rc, _, err = cli(capsys, "build", "--input", d / "t.csv", "--columns", "carrier",
                     "--categories", "AA,DL,UA,WN", "--epsilon", "1", "--output", d / "x.pds")
    assert rc == 2 and "outside its 4 levels" in err and SECRET not in err
    assert err.count("\n") == 1 and not (d / "x.pds").exists()


def test_query_errors(files, capsys):
    d, _, _ = files
    cli(capsys, "build", "--input", d / "t.csv", "--columns", "carrier", "--categories",
        "AA,DL,UA,WN", "--other", "other", "--epsilon", "1", "--output", d / "h.pds")
    rc, _, err = cli(capsys, "query", d / "h.pds", "--lo", "ZZ", "--hi", "WN")
    assert rc == 2 and "'ZZ' is not a level" in err
    rc, _, err = cli(capsys, "query", d / "h.pds", "--lo", "WN", "--hi", "AA")
    assert rc == 2 and "lo must come before hi" in err
    rc, _, err = cli(capsys, "query", d / "h.pds", "--by-level", "--lo", "AA")
    assert rc == 2 and "drop --lo" in err
    cli(capsys, "build", "--input", d / "t.csv", "--columns", "day", "--domain", "0:59",
        "--epsilon", "1", "--output", d / "i.pds")
    rc, _, err = cli(capsys, "query", d / "i.pds", "--by-level")
    assert rc == 2 and "category column" in err


def test_plot_draws_the_levels(files, capsys):
    pytest.importorskip("matplotlib")
    d, _, _ = files
    for mechanism in ("flat", "tree"):
        cli(capsys, "build", "--input", d / "t.csv", "--columns", "carrier", "--categories",
            "AA,DL,UA,WN", "--other", "other", "--structure", mechanism, "--epsilon", "1",
            "--output", d / f"{mechanism}.pds")
        rc, out, _ = cli(capsys, "plot", d / f"{mechanism}.pds", "-o", d / f"{mechanism}.png")
        assert rc == 0 and "counts by level" in out
        assert (d / f"{mechanism}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.integration
def test_subprocess_build_and_query(files):
    d, carriers, _ = files
    run = [sys.executable, "-m", "pydp_synopsis.cli"]
    p = subprocess.run(run + ["build", "--input", str(d / "t.csv"), "--columns", "carrier",
                              "--categories", "AA,DL,UA,WN", "--other", "other", "--epsilon",
                              "1e6", "--output", str(d / "h.pds")],
                       capture_output=True, text=True, timeout=300, cwd=d)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(run + ["query", str(d / "h.pds"), "--lo", "AA", "--hi", "AA"],
                       capture_output=True, text=True, timeout=300, cwd=d)
    assert p.returncode == 0 and p.stdout.startswith(f"{int(np.sum(carriers == 'AA'))}.0")
