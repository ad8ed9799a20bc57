"""A local wall time that does not exist (skipped by a daylight-saving change) or occurs
twice is refused in one line, on every path (a bound, a query, a data value: the vectorised
and the one-by-one conversions agree); a data value is never echoed.  ``build --help``
describes the columns a build reads (issue 32, frictions)."""
import datetime as dt

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.errors import InputError

CHI = ps.Column.datetime("t", tz="America/Chicago")
GAP, TWICE = "2017-03-12T02:30", "2017-11-05T01:30"


@pytest.mark.parametrize("value", [GAP, dt.datetime(2017, 3, 12, 2, 30), np.datetime64(GAP)])
def test_a_nonexistent_wall_time_is_refused(value):
    with pytest.raises(InputError) as info:
        CHI.to_int(value, "lo")
    text = str(info.value)
    assert text.startswith("lo: a wall time that does not exist in time zone America/Chicago")
    assert "02:30" not in text and "\n" not in text


def test_a_repeated_wall_time_is_refused_unless_its_offset_is_given():
    with pytest.raises(InputError, match="occurs twice"):
        CHI.to_int(TWICE, "hi")
    first, second = (int(CHI.to_int(f"{TWICE}{off}")) for off in ("-05:00", "-06:00"))
    assert second - first == 3600
    # an existing wall time is read as before; UTC has no gaps
    assert int(CHI.to_int("2017-03-12T03:30")) == int(CHI.to_int("2017-03-12T08:30Z"))
    assert int(ps.Column.datetime(tz="UTC").to_int(GAP)) == \
        int(ps.Column.datetime().to_int(GAP))


def test_data_values_are_refused_on_both_paths_without_the_value():
    pd = pytest.importorskip("pandas")
    for values in (np.array([GAP, "2017-03-12T05:00"], dtype=object),     # vectorised
                   [dt.datetime(2017, 3, 12, 2, 30), dt.datetime(2017, 3, 12, 5)]):
        with pytest.raises(InputError) as info:
            CHI.to_int(values, "values (column 't')")
        assert "does not exist" in str(info.value) and "02:30" not in str(info.value)
    del pd


def test_a_build_with_a_bound_in_a_gap_spends_nothing():
    budget = ps.Budget(2)
    with pytest.raises(InputError, match="domain of column 't'.*does not exist"):
        ps.IntervalSynopsis.build(np.array(["2017-03-12T05:00"], dtype="datetime64[s]"),
                                  domain=(GAP, "2017-12-31T00:00"), columns=CHI, epsilon=1,
                                  budget=budget)
    assert budget.spent == 0


@pytest.mark.integration
def test_the_command_line_refuses_a_gap_and_its_help_says_what_it_reads(tmp_path):
    from clirun import run

    (tmp_path / "t.csv").write_text("t\n2017-03-12T05:00\n")
    p = run("build", "--input", tmp_path / "t.csv", "--columns", "t", "--tz", "America/Chicago",
            f"--domain={GAP}..2017-12-31T00:00", "--epsilon", 1, "--output", tmp_path / "t.pds")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert f"--domain entry '{GAP}..2017-12-31T00:00'" in p.stderr      # typed by the user
    assert "does not exist in time zone America/Chicago" in p.stderr
    text = run("build", "--help").stdout
    assert "one integer column" not in text
    for word in ("decimals", "dates", "--scale", "daylight"):
        assert word in " ".join(text.split()), word
