"""One place for units (issue 32, frictions): a source's columns carry their names and
units (``scale=``, ``units=``) to ``build()``, which then needs no ``scale=`` of its own;
``build(scale=...)`` reaches a source that has none; the two must agree when both are
given; the names are kept in the saved file; library messages name keyword arguments,
never command-line flags."""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.cli.messages import in_cli_terms

LAT = ["41.804729", "41.980185", "41.7", "41.95", "42.0"]
DAYS = ["2017-01-03", "2017-05-01", "2017-05-02", "2017-12-31"]


@pytest.fixture
def csv(tmp_path):
    (tmp_path / "p.csv").write_text("lat,lon,d\n" + "".join(
        f"{a},-87.{i}5,{d}\n" for i, (a, d) in enumerate(zip(LAT, DAYS + DAYS[:1]))))
    return str(tmp_path / "p.csv")


def numbers(syn):
    return {k: v.tolist() for k, v in syn._to_record()[2].items()}


def build(data, **kw):
    kw.setdefault("domain", ("41.5", "42.1"))
    return ps.IntervalSynopsis.build(data, epsilon=1, rng=ps.Rng(seed=3), **kw)


def test_the_source_carries_its_scale_and_name(csv, tmp_path):
    want = build(np.array(LAT, dtype=object), scale="1e6")
    got = build(sources.files(csv, ["lat"], scale="1e6"))          # no scale= on build()
    assert numbers(got) == numbers(want)
    assert got.column == ps.Column.decimal("lat", scale="1e6")
    assert got.user_domain == want.user_domain
    got.save(tmp_path / "a.pds")
    assert ps.load(tmp_path / "a.pds").column.name == "lat"        # kept in the file
    # given on build() only: the source reads by it, and keeps its name
    only = build(sources.files(csv, ["lat"]), scale="1e6")
    assert numbers(only) == numbers(want) and only.column.name == "lat"
    # given on both, agreeing: the same
    assert numbers(build(sources.files(csv, ["lat"], scale="1e6"), scale=10**6)) == \
        numbers(want)


def test_a_date_column_of_a_source_needs_no_units(csv):
    days = np.array(DAYS + DAYS[:1], dtype="datetime64[D]")
    dom = ("2017-01-01", "2017-12-31")
    want = build(days, domain=dom)
    got = build(sources.files(csv, ["d"]), domain=dom)
    assert numbers(got) == numbers(want) and got.column == ps.Column.date("d")


def test_rectangles_take_the_sources_units_and_names(csv):
    dom = [("41.5", "42.1"), ("-88", "-87")]
    got = ps.RectangleSynopsis.build(sources.files(csv, ["lat", "lon"], scale="1e6"),
                                     domain=dom, epsilon=1, rng=ps.Rng(seed=4))
    pts = np.array([[a, f"-87.{i}5"] for i, a in enumerate(LAT)], dtype=object)
    want = ps.RectangleSynopsis.build(pts, domain=dom, scale="1e6", epsilon=1,
                                      rng=ps.Rng(seed=4))
    assert numbers(got) == numbers(want)
    assert [c.name for c in got.columns] == ["lat", "lon"]


def test_disagreeing_units_are_refused_before_anything_is_spent(csv):
    budget = ps.Budget(5)
    with pytest.raises(ps.ParameterError) as info:
        build(sources.files(csv, ["lat"], scale="1e6"), scale="1e5", budget=budget)
    text = str(info.value)
    assert "'lat'" in text and "1e6" in text and "1e5" in text and "one place" in text
    assert budget.spent == 0


def test_an_unnamed_column_is_never_column_none():
    with pytest.raises(TypeError) as info:
        build(np.array([41.7]))                   # decimal bounds, no units, no name
    assert "None" not in str(info.value) and "scale=" in str(info.value)


def test_messages_name_the_column_and_the_keyword_never_a_flag(csv):
    with pytest.raises(TypeError) as info:          # a decimal domain, no units anywhere
        build(sources.files(csv, ["lat"]))
    assert "'lat'" in str(info.value) and "None" not in str(info.value)
    assert "scale=" in str(info.value) and "--" not in str(info.value)
    with pytest.raises(ps.errors.InputError) as info:   # decimals in an integer domain
        build(sources.files(csv, ["lat"]), domain=(0, 99))
    assert "give scale=" in str(info.value) and "--" not in str(info.value)
    # the command line shows the same line in its own words
    assert "give --scale (e.g. 1e6)" in in_cli_terms(str(info.value))
