"""User units (pydp_synopsis.columns, .units): exact conversions, synopses built from and
queried in dates, datetimes and decimals, the record's column descriptions,
missing values refused (or dropped with dropna) before any budget or randomness."""
import datetime as dt
import json
import pathlib
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pydp_synopsis as ps
from pydp_synopsis import persist
from pydp_synopsis.errors import InputError
from pydp_synopsis.columns import Column, missing_mask, parse_resolution

pd = pytest.importorskip("pandas")
FIXTURES = pathlib.Path(__file__).parent / "fixtures"


# ------------------------------------------------------------- conversions
def test_dates_are_days_since_1970_exactly():
    col = Column.date("day")
    got = col.to_int(["1970-01-01", "1969-12-31", "2001-03-01", "2000-02-29"])
    assert got.tolist() == [0, -1, 11382, 11016]
    assert col.to_int([dt.date(2001, 3, 1)]).tolist() == [11382]
    assert col.to_int(np.array(["2001-03-01"], dtype="datetime64[D]")).tolist() == [11382]
    # times are binned into their day (floor, also before 1970)
    assert col.to_int(np.array(["1969-12-31T23:59:59"], dtype="datetime64[s]")).tolist() == [-1]
    assert col.values([11382]).tolist() == [dt.date(2001, 3, 1)]
    assert col.format(-1) == "1969-12-31"


def test_datetimes_with_units_time_zones_and_resolution():
    naive = Column.datetime("t", unit="s")
    assert naive.to_int(["1970-01-01T00:00:01.9", "1969-12-31T23:59:59.5"]).tolist() == [1, -1]
    ns = Column.datetime("t", unit="ns")
    assert ns.to_int(["1970-01-01T00:00:00.000000001"]).tolist() == [1]
    paris = Column.datetime("t", unit="s", tz="Europe/Paris")
    # wall times in the zone (winter +01:00, summer +02:00) and aware values agree
    assert paris.to_int(["2001-01-01T01:00:00", "2001-07-01T02:00:00"]).tolist() == \
        [978307200, 993945600]
    assert paris.to_int(["2001-07-01T00:00:00Z"]).tolist() == [993945600]
    assert paris.format(993945600) == "2001-07-01T02:00:00+02:00"
    series = pd.Series(pd.to_datetime(["2001-07-01 02:00"]).tz_localize("Europe/Paris"))
    assert paris.to_int(series).tolist() == [993945600]
    hourly = Column.datetime("t", resolution="1h")
    assert (hourly.unit, hourly.step) == ("s", 3600)
    assert hourly.to_int(["1970-01-01T02:59:59", "1969-12-31T23:00:01"]).tolist() == [2, -1]
    # a date alone as a query's hi is the end of that day
    assert hourly.to_int("1970-01-01", bound="hi") == 23
    with pytest.raises(TypeError, match="naive"):
        naive.to_int([dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc)])


def test_decimals_round_half_even_and_resolutions_floor():
    col = Column.decimal("lat", scale="1e5")
    assert col.to_int(["40.712805", "40.712815", "-0.000005", "3"]).tolist() == \
        [4071280, 4071282, 0, 300000]
    assert col.to_int([Decimal("1.000015"), 2]).tolist() == [100002, 200000]
    assert col.format(-7550000) == "-75.50000"
    cents = Column.decimal("x", resolution=0.1)
    # a float stands for its shortest decimal: 0.3 is bin 3 (its binary value would give 2)
    assert cents.to_int(np.array([0.3, 0.29999, -0.05, 1e-17])).tolist() == [3, 2, -1, 0]
    assert cents.to_int(["0.3", "-0.05"]).tolist() == [3, -1]
    assert cents.values([3])[0] == Decimal("0.3")
    third = Column.decimal("x", resolution="1/3")
    assert third.to_int([1, -1]).tolist() == [3, -3]
    rng = np.random.default_rng(1)
    x = np.round(rng.uniform(-1000, 1000, 2000), 3)
    exact = [int((Decimal(repr(v)) / Decimal("0.025")).to_integral_value("ROUND_FLOOR"))
             for v in x.tolist()]
    assert Column.decimal("x", resolution="0.025").to_int(x).tolist() == exact


def test_integer_columns_take_whole_floats_and_nullable_integers():
    col = Column.integer("n")
    assert col.to_int(np.array([1.0, -3.0])).tolist() == [1, -3]
    assert col.to_int(pd.Series([1, 2], dtype="Int64")).tolist() == [1, 2]
    with pytest.raises(TypeError, match="non-integer.*resolution="):
        col.to_int(np.array([1.5]))


def test_resolutions_and_kinds_are_checked():
    assert parse_resolution("15min") == ("s", 900)
    assert parse_resolution("7d") == ("D", 7)
    for bad in ("1fortnight", 0, -0.5, "abc"):
        with pytest.raises(ps.ParameterError, match="resolution"):
            parse_resolution(bad)
    with pytest.raises(ps.ParameterError, match="kind"):
        Column("x", "currency")
    with pytest.raises(ps.ParameterError, match="time zone"):
        Column.datetime("x", tz="Mars/Olympus")
    with pytest.raises(ps.ParameterError, match="not both"):
        Column("x", "decimal", scale=100, resolution="0.5")


def test_missing_values_are_recognised():
    got = missing_mask(np.array([1.0, np.nan]))
    assert got.tolist() == [False, True]
    assert missing_mask(["1", "", "NA", " NaN "]).tolist() == [False, True, True, True]
    assert missing_mask(pd.Series([1, None], dtype="Int64")).tolist() == [False, True]
    assert missing_mask(np.array(["2001-01-01", "NaT"], dtype="datetime64[D]")).tolist() == \
        [False, True]


# ----------------------------------------------------------------- builds
def _days():
    rng = np.random.default_rng(7)
    return np.datetime64("2001-01-01") + rng.integers(0, 365, 3000)


def test_interval_in_dates_equals_interval_in_days():
    days = _days()
    by_date = ps.IntervalSynopsis.build(pd.Series(days, name="day"),
                                        domain=("2001-01-01", "2001-12-31"), epsilon=1.0,
                                        rng=ps.Rng(seed=11))
    ints = days.astype(np.int64)
    by_int = ps.IntervalSynopsis.build(ints, domain=(11323, 11687), epsilon=1.0,
                                       rng=ps.Rng(seed=11))
    assert by_date.domain == by_int.domain
    assert by_date.column == Column.date("day")
    assert by_date.user_domain == (dt.date(2001, 1, 1), dt.date(2001, 12, 31))
    assert by_date.count("2001-03-01", "2001-03-31") == by_int.count(11382, 11412)
    lo, hi = ["2001-01-01", "2001-06-15"], [dt.date(2001, 2, 1), "2001-12-31"]
    np.testing.assert_array_equal(by_date.count_many(lo, hi),
                                  by_int.count_many([11323, 11488], [11354, 11687]))
    bars_d = by_date.confidence_intervals(lo, hi, 0.9)
    bars_i = by_int.confidence_intervals([11323, 11488], [11354, 11687], 0.9)
    np.testing.assert_array_equal(bars_d.high, bars_i.high)
    ends = by_date.user_segment_ends
    assert ends.dtype == np.dtype("datetime64[D]")
    assert ends.astype(np.int64).tolist() == \
        [e + 11323 for e in by_int.partition.end_offsets.tolist()]


def test_rectangle_in_decimals_equals_rectangle_in_integers():
    rng = np.random.default_rng(3)
    lat = np.round(rng.uniform(25, 49, 2000), 5)
    lon = np.round(rng.uniform(-124, -67, 2000), 5)
    frame = pd.DataFrame({"latitude": [f"{v:.5f}" for v in lat],
                          "longitude": [f"{v:.5f}" for v in lon]})
    syn = ps.RectangleSynopsis.build(frame, domain=[("-90", "90"), (-180, 180)], scale="1e5",
                                     epsilon=1.0, rng=ps.Rng(seed=5))
    pts = np.column_stack([np.rint(lat * 1e5), np.rint(lon * 1e5)]).astype(np.int64)
    ref = ps.RectangleSynopsis.build(pts, domain=[(-9000000, 9000000), (-18000000, 18000000)],
                                     epsilon=1.0, rng=ps.Rng(seed=5))
    assert [c.name for c in syn.columns] == ["latitude", "longitude"]
    assert syn.count(["40.5", "-75.25"], ["41", -73]) == \
        ref.count([4050000, -7525000], [4100000, -7300000])
    assert syn.user_domain[0] == (Decimal("-90.00000"), Decimal("90.00000"))


def test_plain_integer_builds_are_unchanged_and_unlabelled(tmp_path):
    syn = ps.IntervalSynopsis.build([1, 2, 3], domain=(0, 9), epsilon=1.0, rng=ps.Rng(seed=1))
    syn.save(tmp_path / "a.pds")
    _, meta, _, _ = persist.read_record(tmp_path / "a.pds")
    assert "columns" not in meta and syn.column == Column.integer()
    with pytest.raises(TypeError, match="values"):
        ps.IntervalSynopsis.build([1.5], domain=(0, 9), epsilon=1.0)


def test_whole_valued_floats_from_pandas_are_accepted():
    s = pd.Series([1, None, 3], dtype="Int64", name="n").dropna().astype(float)
    syn = ps.IntervalSynopsis.build(s, domain=(0, 9), epsilon=1e6, rng=ps.Rng(seed=2))
    ref = ps.IntervalSynopsis.build([1, 3], domain=(0, 9), epsilon=1e6, rng=ps.Rng(seed=2))
    assert syn.count(0, 9) == ref.count(0, 9) and syn.column.name == "n"


def test_dropna_drops_rows_and_their_counts():
    s = pd.Series([1, None, 3, 3], dtype="Int64", name="n")
    syn = ps.IntervalSynopsis.build(s, domain=(0, 9), epsilon=1.0, rng=ps.Rng(seed=4),
                                    dropna=True, counts=[1, 5, 2, 1])
    ref = ps.IntervalSynopsis.build([1, 3, 3], domain=(0, 9), epsilon=1.0, rng=ps.Rng(seed=4),
                                    counts=[1, 2, 1])
    assert syn.count(0, 9) == ref.count(0, 9)
    frame = pd.DataFrame({"a": [1.0, 2.0, np.nan], "b": ["2001-01-01", None, "2001-01-03"]})
    rect = ps.RectangleSynopsis.build(frame, domain=[(0, 9), ("2001-01-01", "2001-01-31")],
                                      epsilon=1.0, dropna=True, rng=ps.Rng(seed=6))
    ref = ps.RectangleSynopsis.build([[1, 11323]], domain=[(0, 9), (11323, 11353)], epsilon=1.0,
                                     rng=ps.Rng(seed=6))
    assert rect.count([0, "2001-01-01"], [9, "2001-01-31"]) == ref.count([0, 11323], [9, 11353])


# ------------------------------------------------------------- save/load
def test_descriptions_survive_save_and_load(tmp_path):
    t = pd.Series(pd.to_datetime(["2001-03-01 10:00", "2001-03-02 23:30"])
                  .tz_localize("Europe/Paris"), name="t")
    syn = ps.IntervalSynopsis.build(t, domain=("2001-01-01T00:00", "2001-12-31T23:59"),
                                    resolution="1h", epsilon=1.0, rng=ps.Rng(seed=8))
    syn.save(tmp_path / "t.pds")
    back = ps.load(tmp_path / "t.pds")
    assert back.column == syn.column == Column.datetime("t", tz="Europe/Paris", resolution="1h")
    assert back.count("2001-03-01", "2001-03-02") == syn.count("2001-03-01", "2001-03-02")
    frame = pd.DataFrame({"x": ["0.25", "0.5"], "d": ["2001-01-01", "2001-01-02"]})
    rect = ps.RectangleSynopsis.build(frame, domain=[(0, 1), ("2001-01-01", "2001-12-31")],
                                      resolution=["0.25", None], epsilon=1.0, rng=ps.Rng(seed=9))
    rect.save(tmp_path / "r.pds")
    back = ps.load(tmp_path / "r.pds")
    assert back.columns == rect.columns
    assert back.columns[0] == Column.decimal("x", resolution="0.25")
    assert back.count([0, "2001-01-01"], [1, "2001-01-02"]) == \
        rect.count([0, "2001-01-01"], [1, "2001-01-02"])


@pytest.mark.parametrize("name", ["interval_hierarchical", "rect_adaptive"])
def test_release_01_files_load_as_plain_integer_columns(name):
    syn = ps.load(FIXTURES / f"{name}.pds")
    cols = (syn.column,) if isinstance(syn, ps.IntervalSynopsis) else syn.columns
    assert all(c == Column.integer() for c in cols)


@pytest.mark.parametrize("bad", [
    "not a list", [], [{"name": "t", "kind": "date"}],                  # step missing
    [{"name": "t", "kind": "date", "step": 0}],
    [{"name": "t", "kind": "date", "step": 1, "extra": 1}],
    [{"name": "t", "kind": "currency"}],
    [{"name": 5, "kind": "integer"}],
    [{"name": "t", "kind": "datetime", "unit": "fortnight", "step": 1, "tz": None}],
    [{"name": "t", "kind": "datetime", "unit": "s", "step": 1, "tz": "Mars/Olympus"}],
    [{"name": "t", "kind": "decimal", "scale": 100, "resolution": "0.5"}],
    [{"name": "t", "kind": "decimal", "scale": 1, "resolution": "0.50"}],   # not canonical
    [{"name": "t", "kind": "decimal", "scale": 20, "resolution": None}],
    [{"name": "t", "kind": "decimal", "scale": True, "resolution": None}],
    [{"name": "t", "kind": "date", "step": 1}, {"name": "u", "kind": "date", "step": 1}],
])
def test_malformed_column_descriptions_are_format_errors(tmp_path, bad):
    syn = ps.IntervalSynopsis.build(pd.Series(_days()[:50], name="d"),
                                    domain=("2001-01-01", "2001-12-31"), epsilon=1.0,
                                    rng=ps.Rng(seed=1))
    syn.save(tmp_path / "ok.pds")
    kind, meta, arrays, _ = persist.read_record(tmp_path / "ok.pds")
    assert meta["columns"] == [{"name": "d", "kind": "date", "step": 1}]
    persist.write_record(tmp_path / "bad.pds", kind, dict(meta, columns=bad), arrays)
    with pytest.raises(ps.FormatError):
        ps.load(tmp_path / "bad.pds")


# ------------------------------------------------- refusals cost nothing
BAD_BUILDS = [
    (dict(values=pd.Series([1, None, 3], dtype="Int64", name="n"), domain=(0, 9)),
     ps.DomainError, r"column 'n' holds NULL values: "),
    (dict(values=np.array([1.0, np.nan]), domain=(0, 9), resolution=0.5),
     ps.DomainError, r"holds NULL values: "),
    (dict(values=["2001-01-01", "01/02/2001"], domain=("2001-01-01", "2001-12-31")),
     ps.DomainError, r"^values: a value is not an ISO date"),
    (dict(values=np.array([1.0, 2.5]), domain=(0, 9), columns="n"),
     TypeError, r"non-integer numbers: give resolution="),
    (dict(values=[1, 2], domain=("2001-01-01", 5)), TypeError, "both bounds must be dates"),
    (dict(values=["1.5"], domain=("0", "9")), TypeError, "scale= .* or resolution="),
    (dict(values=[1], domain=(0, 9), columns=Column("n", "integer"), scale="1e2"),
     ps.ParameterError, "not both"),
    (dict(values=[1], domain=(0, 9), resolution="1fortnight"), ps.ParameterError, "time unit"),
    (dict(values=[1], domain=(0, 9), dropna="yes"), TypeError, "dropna"),
]


@pytest.mark.parametrize("kwargs, error, match", BAD_BUILDS)
def test_bad_inputs_raise_one_line_before_budget_or_randomness(kwargs, error, match):
    budget, rng = ps.Budget(5), ps.Rng(seed=5)
    first = ps.Rng(seed=5).random_uint64()
    with pytest.raises(error, match=match) as info:
        ps.IntervalSynopsis.build(epsilon=1.0, budget=budget, rng=rng, **kwargs)
    assert "\n" not in str(info.value)
    assert budget.spent == 0 and rng.random_uint64() == first


def test_messages_never_show_the_offending_value():
    with pytest.raises(ps.DomainError) as info:
        ps.IntervalSynopsis.build(pd.Series(["2001-01-01", "SECRET-77"], name="d"),
                                  domain=("2001-01-01", "2001-12-31"), epsilon=1.0)
    assert "SECRET" not in str(info.value) and "'d'" in str(info.value)
    with pytest.raises(ps.DomainError) as info:
        ps.RectangleSynopsis.build(pd.DataFrame({"a": [1, 2], "b": ["x", "NA"]}),
                                   domain=[(0, 9), (0, 9)], epsilon=1.0)
    # the column, never the row (its position is data: docs/security-messages.md)
    assert "column 'b'" in str(info.value) and "row" not in str(info.value).split(":")[0]


def test_queries_in_the_wrong_units_are_refused():
    syn = ps.IntervalSynopsis.build(pd.Series(_days()[:100], name="day"),
                                    domain=("2001-01-01", "2001-12-31"), epsilon=1.0,
                                    rng=ps.Rng(seed=1))
    with pytest.raises(TypeError, match="date column \\('day'\\)"):
        syn.count(11323, 11400)
    with pytest.raises(ps.DomainError, match="not a valid date"):
        syn.count("2001-01-01", "2001-02-30")
    with pytest.warns(ps.errors.QueryClippedWarning, match=r"\[2001-01-01, 2001-12-31\]"):
        assert syn.count("2000-12-31", "2001-02-01") == syn.count("2001-01-01", "2001-02-01")


# --------------------------------------------------------------- sources
def test_csv_and_sqlite_sources_with_dates_and_dropna(tmp_path):
    pytest.importorskip("pyarrow")
    import sqlite3

    from pydp_synopsis import sources

    days = _days()[:500]
    path = tmp_path / "d.csv"
    rows = [str(d) for d in days.tolist()]
    rows[10] = "NA"
    path.write_text("day\n" + "\n".join(rows) + "\n")
    unit = (Column.date("day"),)
    with pytest.raises(ps.DomainError, match=r"column 'day' holds NULL values: missing"):
        ps.IntervalSynopsis.build(sources.files(str(path), ["day"], units=unit),
                                  domain=("2001-01-01", "2001-12-31"), columns=unit, epsilon=1.0)
    kept = np.delete(days, 10)
    ref = ps.IntervalSynopsis.build(pd.Series(kept, name="day"),
                                    domain=("2001-01-01", "2001-12-31"), epsilon=1.0,
                                    rng=ps.Rng(seed=3))
    got = ps.IntervalSynopsis.build(sources.files(str(path), ["day"], units=unit, dropna=True),
                                    domain=("2001-01-01", "2001-12-31"), columns=unit,
                                    epsilon=1.0, rng=ps.Rng(seed=3))
    assert got.column == ref.column
    assert got.count("2001-02-01", "2001-05-01") == ref.count("2001-02-01", "2001-05-01")
    db = tmp_path / "d.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (day DATE)")
    con.executemany("INSERT INTO t VALUES (?)",
                    [(None if r == "NA" else r,) for r in rows])
    con.commit()
    con.close()
    src = sources.SqlSource(f"sqlite:///{db}", ["day"], table="t", units=unit, dropna=True)
    got = ps.IntervalSynopsis.build(src, domain=("2001-01-01", "2001-12-31"), columns=unit,
                                    epsilon=1.0, rng=ps.Rng(seed=3))
    assert got.count("2001-02-01", "2001-05-01") == ref.count("2001-02-01", "2001-05-01")
    with pytest.raises(ps.DomainError, match="column 'day' holds NULL values"):
        ps.IntervalSynopsis.build(sources.SqlSource(f"sqlite:///{db}", ["day"], table="t",
                                                    units=unit),
                                  domain=("2001-01-01", "2001-12-31"), columns=unit, epsilon=1.0)


def test_parquet_dates_and_nan(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from pydp_synopsis import sources

    days = _days()[:300]
    pq.write_table(pa.table({"day": pa.array(days.astype("datetime64[D]")),
                             "x": pa.array(np.where(np.arange(300) == 4, np.nan, 1.0))}),
                   tmp_path / "d.parquet")
    spec = str(tmp_path / "d.parquet")
    with pytest.raises(ps.DomainError, match="holds dates or times"):
        ps.IntervalSynopsis.build(sources.files(spec, ["day"]), domain=(0, 99999), epsilon=1.0)
    with pytest.raises(ps.DomainError, match=r"column 'x' holds NULL values: missing"):
        ps.IntervalSynopsis.build(sources.files(spec, ["x"]), domain=(0, 9), epsilon=1.0)
    unit = (Column.date("day"),)
    got = ps.IntervalSynopsis.build(sources.files(spec, ["day"], units=unit),
                                    domain=("2001-01-01", "2001-12-31"), columns=unit,
                                    epsilon=1.0, rng=ps.Rng(seed=3))
    ref = ps.IntervalSynopsis.build(pd.Series(days, name="day"),
                                    domain=("2001-01-01", "2001-12-31"), epsilon=1.0,
                                    rng=ps.Rng(seed=3))
    assert got.count("2001-02-01", "2001-05-01") == ref.count("2001-02-01", "2001-05-01")


def test_record_meta_holds_only_public_descriptions(tmp_path):
    syn = ps.IntervalSynopsis.build(pd.Series(["12.5", "13.25"], name="price"),
                                    domain=("0", "100"), scale=100, epsilon=1.0,
                                    rng=ps.Rng(seed=1))
    syn.save(tmp_path / "p.pds")
    _, meta, _, _ = persist.read_record(tmp_path / "p.pds")
    assert meta["columns"] == [{"name": "price", "kind": "decimal", "scale": 100,
                                "resolution": None}]
    assert "12.5" not in json.dumps(meta) and "1250" not in json.dumps(meta)


def test_time_zone_aware_builds_equal_builds_on_utc_instants():
    t = pd.Series(pd.to_datetime(["2001-07-01 02:00", "2001-07-01 03:30", "2001-07-01 23:00"])
                  .tz_localize("Europe/Paris"), name="t")
    syn = ps.IntervalSynopsis.build(t, domain=("2001-07-01T00:00", "2001-07-01T23:59"),
                                    epsilon=1.0, rng=ps.Rng(seed=12))
    start = 993938400                              # 2001-07-01T00:00+02:00
    assert syn.column == Column.datetime("t", unit="us", tz="Europe/Paris")
    assert syn.domain == (start * 10**6, (start + 86340) * 10**6)
    ints = [(start + s) * 10**6 for s in (7200, 12600, 82800)]
    ref = ps.IntervalSynopsis.build(ints, domain=syn.domain, epsilon=1.0, rng=ps.Rng(seed=12))
    assert syn.count("2001-07-01T02:00", "2001-07-01T04:00") == \
        ref.count((start + 7200) * 10**6, (start + 14400) * 10**6)
    with pytest.raises(TypeError, match="give its time zone"):
        ps.IntervalSynopsis.build(t, domain=("2001-07-01T00:00", "2001-07-01T23:59"),
                                  columns=Column.datetime("t", unit="us"), epsilon=1.0)


def test_dask_collections_drop_missing_rows_on_request():
    dd = pytest.importorskip("dask.dataframe")
    frame = pd.DataFrame({"x": pd.array([1, None, 3, 7], dtype="Int64"),
                          "y": [1.0, 2.0, np.nan, 4.0]})
    with pytest.raises(ps.DomainError, match="column '[xy]' holds NULL values"):
        ps.RectangleSynopsis.build(dd.from_pandas(frame, npartitions=2),
                                   domain=[(0, 9), (0, 9)], epsilon=1.0)
    got = ps.RectangleSynopsis.build(dd.from_pandas(frame, npartitions=2), dropna=True,
                                     domain=[(0, 9), (0, 9)], epsilon=1.0, rng=ps.Rng(seed=3))
    ref = ps.RectangleSynopsis.build([[1, 1], [7, 4]], domain=[(0, 9), (0, 9)], epsilon=1.0,
                                     rng=ps.Rng(seed=3))
    assert got.count([0, 0], [9, 9]) == ref.count([0, 0], [9, 9])


@pytest.mark.slow
def test_iso_dates_are_parsed_exactly_in_bulk():
    every = np.datetime64("0001-01-01") + np.arange(0, 3652059, 3)    # years 1 to 9999
    col = Column.date("d")
    assert col.to_int(every.astype(str)).tolist() == every.astype(np.int64).tolist()
    assert col.to_int(np.array(["2000-02-29", " 1969-12-31 "], dtype=object)).tolist() == \
        [11016, -1]
    for bad, row in ((["2000-02-29", "2001-02-29"], 2), (["2001-01-01", "2001-1-01"], 2),
                     (["2001-13-01", "2001-01-01"], 1), (["2001-01-01", "2001-01-0x"], 2)):
        with pytest.raises(ps.DomainError, match="^values: a value is not"):
            col.to_int(bad)
    assert Column.date("w", resolution="7d").to_int(["1970-01-07", "1970-01-08",
                                                      "1969-12-31"]).tolist() == [0, 1, -1]


def test_duckdb_time_zone_aware_timestamps(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    from pydp_synopsis import sources

    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE t (ts TIMESTAMPTZ)")
    con.execute("INSERT INTO t VALUES ('2001-07-01 00:00:00+00'), ('2001-07-01 01:30:00+00')")
    con.close()
    unit = (Column.datetime("ts", tz="Europe/Paris"),)
    got = ps.IntervalSynopsis.build(sources.SqlSource(f"duckdb:///{db}", ["ts"], table="t",
                                                      units=unit),
                                    domain=("2001-07-01T00:00", "2001-07-01T23:59"),
                                    columns=unit, epsilon=1.0, rng=ps.Rng(seed=2))
    ref = ps.IntervalSynopsis.build([993945600, 993951000], domain=got.domain, epsilon=1.0,
                                    rng=ps.Rng(seed=2))
    assert got.count("2001-07-01T02:00", "2001-07-01T03:59") == \
        ref.count(993945600, 993945600 + 7140)          # hi: 03:59:00, the second


def test_iso_datetimes_in_bulk_equal_one_by_one():
    rng = np.random.default_rng(5)
    ns = rng.integers(-2 * 10**18, 7 * 10**18, 3000)
    text = ns.astype("datetime64[ns]").astype(str)
    for col in (Column.datetime("t", unit="s"), Column.datetime("t", unit="ns"),
                Column.datetime("t", resolution="1h", tz="Europe/Paris"),
                Column.datetime("t", unit="ms", tz="UTC")):
        bulk = col.to_int(text)
        one = [int(col.to_int(v)) for v in text[:200].tolist()]
        assert bulk[:200].tolist() == one
    mixed = np.array(["2001-03-01T10:00:00", "2001-03-01T10:00:00+02:00"])
    assert Column.datetime("t", tz="UTC").to_int(mixed).tolist() == [983440800, 983433600]
    with pytest.raises(ps.DomainError, match="^values: a value is not a valid ISO datetime"):
        Column.datetime("t").to_int(["2001-03-01T10:00:00", "2001-03-01T25:00:00"])


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@pytest.mark.fuzz
def test_fuzz_column_descriptions_load_or_raise_format_error(tmp_path, data):
    """Hostile ``columns`` fields: load raises FormatError or gives a synopsis whose
    descriptions read its domain back in user units (never another error)."""
    syn = ps.IntervalSynopsis.build([3, 5], domain=(-2**62, 2**62), epsilon=1.0,
                                    columns="x", rng=ps.Rng(seed=1))
    syn.save(tmp_path / "ok.pds")
    kind, meta, arrays, _ = persist.read_record(tmp_path / "ok.pds")
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
                        st.sampled_from(["s", "ns", "UTC", "Europe/Paris", "0.25", "1/3",
                                         "integer", "decimal", "date", "datetime", 10**18]))
    entry = st.dictionaries(st.sampled_from(["name", "kind", "scale", "resolution", "unit",
                                             "step", "tz", "extra"]), scalars, max_size=7)
    columns = data.draw(st.one_of(scalars, st.lists(entry, max_size=2)))
    persist.write_record(tmp_path / "m.pds", kind, dict(meta, columns=columns), arrays)
    try:
        obj = ps.load(tmp_path / "m.pds")
    except ps.FormatError:
        return
    obj.user_domain
    [obj.column.format(b) for b in obj.domain]


@pytest.mark.parametrize("col", [Column.date("d"), Column.datetime("t", unit="ns"),
                                 Column.datetime("t", tz="Europe/Paris"),
                                 Column.datetime("t", unit="ns", tz="UTC", resolution="1h")])
def test_extreme_integers_are_shown_without_errors(col):
    for v in (-2**62, 2**62, -2**63 + 2):
        if abs(v * col.step) < 2**63 - 1:
            assert col.format(v)
            assert col.values(np.array([v])).shape == (1,)


def test_decimals_with_huge_exponents_are_refused_or_zero_without_writing_them_out():
    # format(Decimal("1E+999999999999999999"), "f") would write 10^18 digits (MemoryError)
    col = ps.Column.decimal(scale=100)
    for v in (Decimal("1E+999999999999999999"), Decimal("-7E+999999999")):
        with pytest.raises(InputError, match="too large for int64"):
            col.to_int([v])
    assert col.to_int([Decimal("1E-999999999999999999"), Decimal("-3E-61")]).tolist() == [0, 0]
    assert col.to_int([Decimal("1E+10"), Decimal("1.234E-2")]).tolist() == [10**12, 1]
