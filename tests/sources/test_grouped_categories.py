"""Category columns of SQL sources counted by the database (GROUP BY): the same
release as the streamed rows for a seed, on SQLite, DuckDB, Parquet/CSV through
DuckDB and PostgreSQL; refusals, other= and NULLs as on the streamed path."""
import datetime as dt
import sqlite3

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.errors import InputError
from pydp_synopsis.sources.grouped import GroupedPrepared

LEVELS = ["AA", "DL", "UA", "WN"]
SECRET = "ZZ-secret"
DAY0 = dt.date(2001, 1, 1)
DOMAIN = [("AA", "other"), ("2001-01-01", "2001-03-31")]


def _rows(n=3000, seed=0):
    g = np.random.default_rng(seed)
    carrier = np.array(LEVELS + ["XX", "YY"], dtype=object)[g.integers(0, 6, n)]
    day = g.integers(0, 90, n)
    return carrier, day


def _units(other="other"):
    return [ps.Column.category(LEVELS, other=other, name="carrier"), ps.Column.date("day")]


def _sqlite(path, carrier, day, nulls=False):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (carrier TEXT, day TEXT, n INTEGER)")
    rows = [(c, (DAY0 + dt.timedelta(days=int(d))).isoformat(), int(d))
            for c, d in zip(carrier.tolist(), day.tolist())]
    if nulls:
        rows.append((None, DAY0.isoformat(), 0))
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()
    return f"sqlite:///{path}"


def _duckdb(path, carrier, day):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (carrier VARCHAR, day DATE, n BIGINT)")
    days = [DAY0 + dt.timedelta(days=int(d)) for d in day.tolist()]
    con.execute("INSERT INTO t SELECT unnest(?), unnest(?), unnest(?)",
                [carrier.tolist(), days, day.tolist()])
    con.close()
    return f"duckdb:///{path}"


def _source(url, columns, units, plan, **kw):
    return sources.SqlSource(url, columns, table="t", units=units, plan=plan, **kw)


def _released_1d(src, seed=7, **kw):
    return ps.LevelHistogram.build(src, levels=LEVELS, other="other", epsilon=0.5,
                                   rng=ps.Rng(seed=seed), **kw).released


def _rect(src, domain, seed=7):
    return ps.RectangleSynopsis.build(src, domain=domain, epsilon=1.0, rng=ps.Rng(seed=seed))


def _same_rectangles(a, b, boxes):
    for pa, pb in zip(a.partitions, b.partitions):
        assert pa.end_offsets.tolist() == pb.end_offsets.tolist()
    lo, hi = boxes
    assert a.count_many(lo, hi).tolist() == b.count_many(lo, hi).tolist()


def _date_boxes():
    lo = np.array([[c, "2001-01-01"] for c in LEVELS + ["other"]], dtype=object)
    hi = np.array([[c, d] for c, d in zip(LEVELS + ["other"], ["2001-01-20", "2001-02-11",
                                                                "2001-03-31", "2001-03-02",
                                                                "2001-01-09"])], dtype=object)
    return lo, hi


def _is_grouped(src, domains):
    with src.prepare(domains) as prepared:
        return isinstance(prepared, GroupedPrepared)


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    d = tmp_path_factory.mktemp("grouped")
    carrier, day = _rows()
    urls = {"sqlite": _sqlite(d / "t.db", carrier, day)}
    try:
        urls["duckdb"] = _duckdb(d / "t.duckdb", carrier, day)
    except pytest.skip.Exception:
        pass
    return d, carrier, day, urls


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_one_column_grouped_gives_the_streamed_release(databases, engine):
    _, carrier, _, urls = databases
    if engine not in urls:
        pytest.skip("duckdb not installed")
    units = _units()[:1]
    grouped = _source(urls[engine], ["carrier"], units, "auto")
    streamed = _source(urls[engine], ["carrier"], units, "sort")
    assert _is_grouped(grouped, [(0, 4)]) and not _is_grouped(streamed, [(0, 4)])
    assert _released_1d(grouped).tolist() == _released_1d(streamed).tolist()
    exact = ps.LevelHistogram.build(grouped, levels=LEVELS, other="other", epsilon=1e9)
    truth = [int(np.sum(carrier == lv)) for lv in LEVELS] + [int(np.sum(~np.isin(carrier,
                                                                                  LEVELS)))]
    assert exact.released.tolist() == truth
    # the tree over the codes reads the same aggregate
    trees = [ps.category_synopsis(s, levels=units[0], epsilon=0.5, structure="tree",
                                  rng=ps.Rng(seed=3)) for s in (grouped, streamed)]
    assert trees[0].counts_by_level()[1].tolist() == trees[1].counts_by_level()[1].tolist()


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_category_by_date_rectangle_grouped_gives_the_streamed_release(databases, engine):
    _, _, _, urls = databases
    if engine not in urls:
        pytest.skip("duckdb not installed")
    grouped = _source(urls[engine], ["carrier", "day"], _units(), "group")
    streamed = _source(urls[engine], ["carrier", "day"], _units(), "sort")
    assert _is_grouped(grouped, [(0, 4), (11323, 11412)])
    for structure in ("adaptive", "multitree"):
        a = ps.RectangleSynopsis.build(grouped, domain=DOMAIN, epsilon=1.0, structure=structure,
                                       rng=ps.Rng(seed=11))
        b = ps.RectangleSynopsis.build(streamed, domain=DOMAIN, epsilon=1.0,
                                       structure=structure, rng=ps.Rng(seed=11))
        _same_rectangles(a, b, _date_boxes())


def test_category_by_integer_rectangle_and_clip(databases):
    _, carrier, day, urls = databases
    units = [_units()[0], ps.Column.integer("n")]
    domain = [("AA", "other"), (0, 59)]                 # n goes to 89: clipped
    a, b = (ps.RectangleSynopsis.build(_source(urls["sqlite"], ["carrier", "n"], units, plan),
                                       domain=domain, epsilon=1e9, clip=True,
                                       rng=ps.Rng(seed=2)) for plan in ("auto", "sort"))
    lo = np.array([[c, 0] for c in LEVELS], dtype=object)
    hi = np.array([[c, 59] for c in LEVELS], dtype=object)
    assert a.count_many(lo, hi).tolist() == b.count_many(lo, hi).tolist()
    assert [round(v) for v in a.count_many(lo, hi)] == [int(np.sum(carrier == c))
                                                         for c in LEVELS]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_value_outside_the_levels_refused_in_one_line(databases, engine):
    _, _, _, urls = databases
    if engine not in urls:
        pytest.skip("duckdb not installed")
    strict = _source(urls[engine], ["carrier"], [ps.Column.category(LEVELS, name="carrier")],
                     "group")
    budget = ps.Budget(1)
    with pytest.raises(InputError) as exc:
        ps.LevelHistogram.build(strict, levels=LEVELS, epsilon=1, budget=budget)
    text = str(exc.value)
    assert "carrier" in text and "outside its 4 levels" in text and "\n" not in text
    assert "XX" not in text and "YY" not in text
    assert budget.spent == 0


def test_nulls_refused_or_dropped_as_streamed(tmp_path):
    carrier, day = _rows(200)
    url = _sqlite(tmp_path / "n.db", carrier, day, nulls=True)
    units = _units()[:1]
    for plan in ("group", "sort"):
        with pytest.raises(InputError, match="column 'carrier' holds NULL values"):
            _released_1d(_source(url, ["carrier"], units, plan))
    dropped = [_released_1d(_source(url, ["carrier"], units, plan, dropna=True))
               for plan in ("group", "sort")]
    assert dropped[0].tolist() == dropped[1].tolist()


def test_na_strings_are_missing_and_never_echoed(tmp_path):
    con = sqlite3.connect(tmp_path / "m.db")
    con.execute("CREATE TABLE t (carrier TEXT)")
    con.executemany("INSERT INTO t VALUES (?)", [("AA",), ("NA",), (SECRET,)])
    con.commit()
    con.close()
    src = _source(f"sqlite:///{tmp_path / 'm.db'}", ["carrier"], _units()[:1], "group")
    with pytest.raises(InputError, match="holds NULL values") as exc:
        _released_1d(src)
    assert SECRET not in str(exc.value)


@pytest.mark.slow
def test_parquet_and_csv_through_duckdb(tmp_path):
    pytest.importorskip("duckdb")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    carrier, day = _rows(1500, seed=4)
    days = np.array([(DAY0 + dt.timedelta(days=int(d))).isoformat() for d in day])
    pq.write_table(pa.table({"carrier": carrier.astype(str), "day": days}), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text("carrier,day\n" + "".join(
        f"{c},{d}\n" for c, d in zip(carrier.tolist(), days.tolist())))
    for name in ("t.parquet", "t.csv"):
        made = [sources.files(str(tmp_path / name), ["carrier", "day"], units=_units(),
                              engine="duckdb", plan=plan) for plan in ("auto", "sort")]
        assert _is_grouped(made[0], [(0, 4), (11323, 11412)])
        _same_rectangles(_rect(made[0], DOMAIN), _rect(made[1], DOMAIN), _date_boxes())
        one = [sources.files(str(tmp_path / name), ["carrier"], units=_units()[:1],
                             engine="duckdb", plan=plan) for plan in ("group", "sort")]
        assert _released_1d(one[0]).tolist() == _released_1d(one[1]).tolist()


def test_many_distinct_tuples_stream_the_rows(tmp_path):
    """auto: a category crossed with a column of (nearly) unique values is streamed."""
    n = 1 << 17
    con = sqlite3.connect(tmp_path / "u.db")
    con.execute("CREATE TABLE t (carrier TEXT, n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", (("AA", i) for i in range(n)))
    con.commit()
    con.close()
    units = [_units()[0], ps.Column.integer("n")]
    src = _source(f"sqlite:///{tmp_path / 'u.db'}", ["carrier", "n"], units, "auto")
    assert not _is_grouped(src, [(0, 4), (0, n)])


@pytest.mark.integration
def test_postgresql_grouped_gives_the_streamed_release():
    from pg_cluster import Cluster, postgres_bin
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    psycopg = pytest.importorskip("psycopg")
    carrier, day = _rows(2000, seed=5)
    with Cluster(port=54383) as pg:
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute("CREATE TABLE t (carrier text, day date, n int8)")
            with con.cursor().copy("COPY t (carrier, day, n) FROM STDIN") as copy:
                for c, d in zip(carrier.tolist(), day.tolist()):
                    copy.write_row((c, DAY0 + dt.timedelta(days=int(d)), int(d)))
            con.execute("INSERT INTO t VALUES (NULL, '2001-01-01', 0)")
        url = pg.reader("t")
        one = [_source(url, ["carrier"], _units()[:1], plan, dropna=True)
               for plan in ("auto", "sort")]
        assert _is_grouped(one[0], [(0, 4)])
        assert _released_1d(one[0]).tolist() == _released_1d(one[1]).tolist()
        with pytest.raises(InputError, match="holds NULL values"):
            _released_1d(_source(url, ["carrier"], _units()[:1], "group"))
        two = [_source(url, ["carrier", "day"], _units(), plan, dropna=True)
               for plan in ("group", "sort")]
        _same_rectangles(_rect(two[0], DOMAIN), _rect(two[1], DOMAIN), _date_boxes())
        strict = _source(url, ["carrier"], [ps.Column.category(LEVELS, name="carrier")],
                         "group", dropna=True)
        with pytest.raises(InputError, match="outside its 4 levels") as exc:
            _released_1d(strict)
        assert "XX" not in str(exc.value)


def test_int_levels_grouped(tmp_path):
    g = np.random.default_rng(8)
    codes = np.array([10, 20, 30, 99])[g.integers(0, 4, 500)]
    con = sqlite3.connect(tmp_path / "i.db")
    con.execute("CREATE TABLE t (station INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(int(c),) for c in codes])
    con.commit()
    con.close()
    url = f"sqlite:///{tmp_path / 'i.db'}"
    col = ps.Column.category([30, 10, 20], other=-1, name="station")
    made = [_source(url, ["station"], [col], plan) for plan in ("auto", "sort")]
    assert _is_grouped(made[0], [(0, 3)])
    hists = [ps.LevelHistogram.build(s, levels=col, epsilon=1e9, rng=ps.Rng(seed=1))
             for s in made]
    assert hists[0].released.tolist() == hists[1].released.tolist() == \
        [int(np.sum(codes == c)) for c in (30, 10, 20)] + [int(np.sum(codes == 99))]


def test_cli_build_from_a_database_with_categories(databases, tmp_path, capsys):
    from pydp_synopsis.cli import main
    _, carrier, _, urls = databases
    rc = main(["build", "--database", urls["sqlite"], "--table", "t", "--columns", "carrier",
               "--categories", ",".join(LEVELS), "--other", "other", "--epsilon", "1e9",
               "--output", str(tmp_path / "h.pds")])
    capsys.readouterr()
    assert rc == 0
    assert ps.load(tmp_path / "h.pds").released.tolist()[:4] == \
        [int(np.sum(carrier == lv)) for lv in LEVELS]
