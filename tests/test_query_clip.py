"""Queries partly outside the domain are clipped to it and said so; a query wholly outside
answers 0 with a zero-width error bar; a reversed query is still refused; build errors
name the domain in the user's units (issue 32, frictions).  Intervals and rectangles, the
API and the command line."""
import warnings

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.errors import DomainError, QueryClippedWarning

DAYS = np.array(["2017-01-05", "2017-03-01", "2017-03-02", "2017-12-30"] * 40,
                dtype="datetime64[D]")
DOMAIN = ("2017-01-01", "2017-12-31")


@pytest.fixture(scope="module")
def days():
    return ps.IntervalSynopsis.build(DAYS, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=1))


@pytest.fixture(scope="module")
def boxes():
    pts = np.array([[1, 2], [3, 4], [8, 9]] * 30)
    return ps.RectangleSynopsis.build(pts, domain=[(0, 9), (0, 9)], epsilon=1,
                                      rng=ps.Rng(seed=2))


def quiet(call, *args, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = call(*args, **kw)
    return out, [w.message for w in seen if isinstance(w.message, QueryClippedWarning)]


def test_intervals_are_clipped_and_said_so(days):
    lo = ["2016-06-01", "2017-02-01", "2018-02-01", "2017-03-01"]
    hi = ["2017-01-31", "2019-03-01", "2018-05-01", "2017-03-31"]
    got, (w,) = quiet(days.count_many, lo, hi)
    want = days.count_many(["2017-01-01", "2017-02-01", "2017-03-01"],
                           ["2017-01-31", "2017-12-31", "2017-03-31"])
    assert got.tolist() == [want[0], want[1], 0.0, want[2]]
    assert (w.clipped, w.outside, w.total) == (3, 1, 4)
    assert "[2017-01-01, 2017-12-31]" in str(w) and "17167" not in str(w)
    assert days.clipped_queries(lo, hi).tolist() == [True, True, True, False]
    (answer, std), _ = quiet(days.count_many, lo, hi, return_std=True)
    assert std[2] == 0 and std[0] > 0
    bars, _ = quiet(days.confidence_intervals, lo, hi)
    for field in bars:
        assert field[2] == 0                       # wholly outside: 0, zero-width bar
    assert bars.low[0] < bars.answer[0] < bars.high[0]
    assert bars.answer[0] == want[0]
    _, none = quiet(days.count_many, ["2017-01-01"], ["2017-12-31"])
    assert none == []                              # inside: no warning
    with pytest.raises(DomainError, match="lo must be <= hi"):
        days.count("2018-02-01", "2018-01-01")     # reversed, even both outside


def test_integer_intervals_beyond_64_bits_are_clipped():
    syn = ps.IntervalSynopsis.build([1, 5, 9], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=3))
    got, (w,) = quiet(syn.count_many, [-(2**70), 3, 2**65], [2**70, 4, 2**66])
    assert got[0] == syn.count(0, 9) and got[1] == syn.count(3, 4) and got[2] == 0
    assert (w.clipped, w.outside) == (2, 1)


def test_rectangles_are_clipped_and_said_so(boxes):
    lo = np.array([[-5, 0], [20, 0], [0, 0]])
    hi = np.array([[3, 3], [30, 4], [9, 12]])
    (got, std), (w,) = quiet(boxes.count_many, lo, hi, return_std=True)
    assert got[0] == boxes.count([0, 0], [3, 3]) and got[2] == boxes.count([0, 0], [9, 9])
    assert got[1] == 0 and std[1] == 0
    assert (w.clipped, w.outside, w.total) == (3, 1, 3)
    assert "[0, 9] x [0, 9]" in str(w)
    assert boxes.clipped_queries(lo, hi).tolist() == [True, True, True]
    bars, _ = quiet(boxes.confidence_intervals, lo, hi)
    assert all(field[1] == 0 for field in bars) and bars.high[0] > bars.low[0]
    with pytest.raises(DomainError, match="lo must be <= hi"):
        boxes.count_many(np.array([[30, 0]]), np.array([[20, 9]]))


def test_build_errors_name_the_domain_in_user_units():
    with pytest.raises(DomainError) as info:
        ps.IntervalSynopsis.build(np.array(["2016-12-05"], dtype="datetime64[D]"),
                                  domain=DOMAIN, epsilon=1)
    assert "[2017-01-01, 2017-12-31]" in str(info.value) and "17167" not in str(info.value)
    with pytest.raises(DomainError) as info:
        ps.RectangleSynopsis.build(np.array([["41.2", "-87.5"]], dtype=object),
                                   domain=[("41.5", "42.1"), ("-88", "-87")], scale="1e6",
                                   epsilon=1)
    assert "[41.500000, 42.100000]" in str(info.value) and "41500000" not in str(info.value)


@pytest.mark.integration
def test_the_command_line_notes_clipped_queries(tmp_path, days):
    from clirun import run

    days.save(tmp_path / "d.pds")
    p = run("query", tmp_path / "d.pds", "--lo", "2016-11-01", "--hi", "2017-02-01")
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("pydp-synopsis: note: 1 of 1 queries reach outside the domain "
                               "[2017-01-01, 2017-12-31]") and "(clipped)" in p.stderr
    p = run("query", tmp_path / "d.pds", "--lo", "2018-01-01", "--hi", "2018-02-01")
    assert p.returncode == 0 and "0.0 ± 0.0" in p.stdout and "answered 0" in p.stderr
    (tmp_path / "q.csv").write_text("lo,hi\n2016-01-01,2017-01-31\n2017-02-01,2017-02-28\n"
                                    "2019-01-01,2019-02-01\n")
    p = run("query", tmp_path / "d.pds", "--queries", tmp_path / "q.csv")
    assert p.returncode == 0, p.stderr
    assert "2 of 3 queries" in p.stderr and "1 wholly outside" in p.stderr
    assert [float(v) for v in p.stdout.splitlines()[3].split(",")[2:6]] == [0, 0, 0, 0]
