"""Streaming sources (files, SQLite, DuckDB, a throwaway PostgreSQL): the synopsis of a
streamed table is exactly the in-memory one; bad data are refused naming the column or the
connection, before any budget is charged or noise drawn.  Real databases, no mocks."""
import sqlite3

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.errors import InputError
from pydp_synopsis.sources.base import RowSource
from pg_cluster import Cluster, postgres_bin

duckdb = pytest.importorskip("duckdb")     # in the test extra; optional for users
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq

N = 4000
DOMAIN = [(0, 999), (-500, 499)]


@pytest.fixture(scope="module")
def data():
    gen = np.random.default_rng(0)
    x = gen.integers(0, 1000, N)
    x[:500] = 7                                        # a heavy value
    y = gen.integers(-500, 500, N)
    return x, y


@pytest.fixture(scope="module")
def reference(data):
    """In-memory synopses, the seeds fixed: what every source must reproduce exactly."""
    x, y = data
    return {
        "interval": ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=2)),
        "adaptive": ps.RectangleSynopsis.build(np.column_stack([x, y]), domain=DOMAIN,
                                               epsilon=1, rng=ps.Rng(seed=3)),
        "multitree": ps.RectangleSynopsis.build(np.column_stack([x, y]), domain=DOMAIN,
                                                epsilon=1, rng=ps.Rng(seed=4),
                                                structure="multitree"),
    }


@pytest.fixture(scope="module")
def files_dir(tmp_path_factory, data):
    x, y = data
    d = tmp_path_factory.mktemp("files")
    (d / "csv" / "part=1").mkdir(parents=True)
    (d / "csv" / "part=2").mkdir()
    cut = 1500
    for name, sl in (("part=1/a.csv", slice(0, cut)), ("part=2/b.csv", slice(cut, N))):
        (d / "csv" / name).write_text(
            "y,x,label\n" + "".join(f"{b},{a},r\n" for a, b in zip(x[sl], y[sl])))
    (d / "csv" / "_SUCCESS").write_text("")
    (d / "csv" / ".hidden.csv").write_text("garbage\n")
    (d / "pq").mkdir()
    for i, sl in enumerate((slice(0, 1000), slice(1000, N))):
        pq.write_table(pa.table({"x": x[sl], "y": y[sl].astype(np.int32)}),
                       d / "pq" / f"part{i}.parquet", row_group_size=300)
    return d


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory, data):
    x, y = data
    path = tmp_path_factory.mktemp("sqlite") / "t.db"
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "my table" (x INTEGER, "y col" INTEGER, f REAL, n INTEGER, s TEXT)')
    con.executemany('INSERT INTO "my table" VALUES (?, ?, 1.5, NULL, ?)',
                    [(a, b, "z") for a, b in zip(x.tolist(), y.tolist())])
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def duckdb_db(tmp_path_factory, data):
    x, y = data
    path = tmp_path_factory.mktemp("duckdb") / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute('CREATE TABLE t (x BIGINT, "y col" INTEGER, f DOUBLE, n BIGINT, s VARCHAR)')
    con.execute("INSERT INTO t SELECT x, y, 1.5, NULL, 'z' FROM (SELECT unnest(?) AS x, "
                "unnest(?) AS y)", [x.tolist(), y.tolist()])
    con.close()
    return path


@pytest.fixture(scope="module")
def postgres(data):
    """A throwaway cluster on a Unix socket in a temporary directory, stopped at teardown.
    Skipped only when the PostgreSQL binaries are absent (.ci/run installs them)."""
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    psycopg = pytest.importorskip("psycopg")
    x, y = data
    with Cluster() as pg:
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute('CREATE TABLE t (x int8, "y col" int4, f float8, n int8, s text, '
                        'num numeric)')
            with con.cursor().copy('COPY t (x, "y col", f, s, num) FROM STDIN') as copy:
                for a, b in zip(x.tolist(), y.tolist()):
                    copy.write_row((a, b, 1.5, "z", f"{a}.25"))
        # the sources refuse a superuser: read as a role that may only SELECT
        pg.admin_url, pg.url = pg.url, pg.reader("t")
        yield pg


def record(syn):
    """The released numbers and parameters; the column names a source carries (kept in
    its synopsis's ``columns``, an unnamed array has none) left out."""
    kind, meta, arrays, _ = syn._to_record()
    meta = dict(meta)
    if all(c["kind"] == "integer" for c in meta.get("columns", [])):
        meta.pop("columns", None)
    return kind, meta, {k: v.tolist() for k, v in arrays.items()}


def assert_same_release(make, reference):
    """``make(columns)`` builds a source; its synopses equal the in-memory ones."""
    s = ps.IntervalSynopsis.build(make(["x"]), domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=2))
    assert record(s) == record(reference["interval"])
    r = ps.RectangleSynopsis.build(make(["x", "y"]), domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=3))
    assert record(r) == record(reference["adaptive"])
    t = ps.RectangleSynopsis.build(make(["x", "y"]), domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=4),
                                   structure="multitree")
    assert record(t) == record(reference["multitree"])


# ------------------------------------------------------------- exact releases

def test_array_source_chunked_and_spilled_is_exact(data, reference):
    x, y = data

    def make(cols):
        src = sources.ArraySource([x, y][:len(cols)], names=cols, chunk_rows=97)
        src.memory_entries = 64                     # many sorted runs spilled to disk
        return src

    assert_same_release(make, reference)


@pytest.mark.parametrize("engine", ["local", "duckdb"])
@pytest.mark.parametrize("layout", ["csv-directory", "csv-glob", "parquet-directory",
                                    "parquet-glob"])
def test_files_are_exact(files_dir, reference, engine, layout):
    fmt, how = layout.split("-")
    folder = files_dir / ("csv" if fmt == "csv" else "pq")
    spec = str(folder) if how == "directory" else \
        str(folder / ("**/*.csv" if fmt == "csv" else "*.parquet"))
    assert_same_release(lambda cols: sources.files(spec, cols, engine=engine, chunk_rows=333),
                        reference)


def test_sqlite_table_and_query_are_exact(sqlite_db, reference):
    def table(cols):
        return sources.SqlSource(f"sqlite:///{sqlite_db}", ["x", "y col"][:len(cols)],
                                 table="my table", chunk_rows=333)

    def query(cols):
        sql = 'SELECT x, "y col" AS y FROM "my table"'
        return sources.SqlSource(str(sqlite_db), cols, sql=sql, chunk_rows=333)

    assert_same_release(table, reference)
    assert_same_release(query, reference)


def test_duckdb_database_is_exact(duckdb_db, reference):
    assert_same_release(lambda cols: sources.SqlSource(
        f"duckdb:///{duckdb_db}", ["x", "y col"][:len(cols)], table="t", chunk_rows=333,
        memory_limit="256MB"), reference)


def test_postgresql_is_exact(postgres, reference):
    assert_same_release(lambda cols: sources.SqlSource(
        postgres.url, ["x", "y col"][:len(cols)], table="t", chunk_rows=333), reference)
    assert_same_release(lambda cols: sources.SqlSource(
        postgres.url, cols, sql='SELECT x, "y col" AS y FROM t', chunk_rows=333), reference)


def test_decimal_columns_with_scale_are_streamed_exactly(postgres, duckdb_db, sqlite_db, data):
    x, _ = data
    # the source's scale describes its column: the domain is in its units (0 to 1000.00)
    expect = ps.IntervalSynopsis.build(x + 0.25, domain=(0, 1000), epsilon=1,
                                       rng=ps.Rng(seed=8),
                                       columns=ps.Column.decimal("num", scale="1e2"))
    src = sources.SqlSource(postgres.url, ["num"], table="t", scale="1e2", chunk_rows=700)
    got = ps.IntervalSynopsis.build(src, domain=(0, 1000), epsilon=1, rng=ps.Rng(seed=8))
    assert record(got) == record(expect) and got.domain == (0, 10**5)
    for db, table in ((f"duckdb:///{duckdb_db}", "t"), (f"sqlite:///{sqlite_db}", "my table")):
        src = sources.SqlSource(db, ["f"], table=table, scale=10)
        s = ps.IntervalSynopsis.build(src, domain=("0", "9.9"), epsilon=10**6,
                                      rng=ps.Rng(seed=1))
        assert round(s.count("0", "9.9")) == N and round(s.count("1.6", "9.9")) == 0


# ------------------------------------------------------------------ bad data

def bad(make, *fragments, domain=(0, 999)):
    """Build from ``make()``: InputError or DomainError naming ``fragments``; nothing spent."""
    budget, rng, fresh = ps.Budget(5), ps.Rng(seed=1), ps.Rng(seed=1)
    with pytest.raises((InputError, ps.DomainError, ps.ParameterError)) as info:
        ps.IntervalSynopsis.build(make(), domain=domain, epsilon=1, rng=rng, budget=budget)
    text = str(info.value)
    assert "\n" not in text
    for f in fragments:
        assert f in text, text
    assert budget.remaining == 5 and rng.random_uint64() == fresh.random_uint64()
    return text


@pytest.fixture(params=["sqlite", "duckdb",
                        pytest.param("postgresql", marks=pytest.mark.integration)])
def database(request, sqlite_db, duckdb_db):
    if request.param == "sqlite":
        return f"sqlite:///{sqlite_db}", "my table"
    if request.param == "duckdb":
        return f"duckdb:///{duckdb_db}", "t"
    return request.getfixturevalue("postgres").url, "t"


def test_bad_tables_and_columns_name_them(database):
    url, table = database
    bad(lambda: sources.SqlSource(url, ["x"], table="nope"), "table 'nope'")
    bad(lambda: sources.SqlSource(url, ["zz"], table=table), "no column 'zz'")
    bad(lambda: sources.SqlSource(url, ["x"], table=f"{table}; DROP TABLE {table}"), "failed while reading")
    bad(lambda: sources.SqlSource(url, ["n"], table=table), "column 'n' holds NULL values")
    bad(lambda: sources.SqlSource(url, ["f"], table=table), "column 'f'", "scale=")
    bad(lambda: sources.SqlSource(url, ["s"], table=table), "column 's'", "not a number")
    text = bad(lambda: sources.SqlSource(url, ["x"], table=table), "column 'x'",
               "must lie in the domain [0, 99]", domain=(0, 99))
    said = text[text.index("column 'x'"):]             # after the source (its path or URL)
    assert "999" not in said and " 7" not in said       # never a data value


def test_a_database_that_is_down_is_named(tmp_path):
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries not installed")
    pytest.importorskip("psycopg")
    url = f"postgresql://me:secret@/db?host={tmp_path}&port=5999"
    text = bad(lambda: sources.SqlSource(url, ["x"], table="t"), "failed while connecting",
               f"host={tmp_path}")
    assert "secret" not in text and "me:***@" in text
    bad(lambda: sources.SqlSource(f"sqlite:///{tmp_path}/missing.db", ["x"], table="t"),
        "does not exist")


def test_bad_files_name_the_file_and_column_never_the_row(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n3,4\n")
    (tmp_path / "b.csv").write_text("x,y\n5,6\n7,\n")
    text = bad(lambda: sources.files(str(tmp_path / "*.csv"), ["y"]), "b.csv", "column 'y'",
               "NULL")
    assert "row" not in text.split("NULL")[0]
    (tmp_path / "b.csv").write_text("x,y\n5,6\n7\n")
    bad(lambda: sources.files(str(tmp_path / "*.csv"), ["x"]), "b.csv",
        "a row has a different number of fields")
    (tmp_path / "b.csv").write_text("x,y\n5,6\n7.5,1\n")
    bad(lambda: sources.files(str(tmp_path / "*.csv"), ["x"]), "b.csv", "column 'x'", "give scale=")
    (tmp_path / "b.csv").write_text("z,y\n5,6\n")
    bad(lambda: sources.files(str(tmp_path / "*.csv"), ["x"]), "b.csv", "no column 'x'")
    pq.write_table(pa.table({"x": pa.array([1, None], pa.int64())}), tmp_path / "n.parquet")
    bad(lambda: sources.files(str(tmp_path / "n.parquet"), ["x"]), "column 'x' holds NULL")
    pq.write_table(pa.table({"x": pa.array([True, False])}), tmp_path / "b.parquet")
    bad(lambda: sources.files(str(tmp_path / "b.parquet"), ["x"]), "column 'x' has type bool")


def test_paths_globs_and_directories(tmp_path):
    with pytest.raises(InputError, match="no input file matches"):
        sources.expand_paths(str(tmp_path / "*.parquet"))
    with pytest.raises(InputError, match="holds no .csv"):
        sources.expand_paths(str(tmp_path))
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.parquet").write_bytes(b"")
    with pytest.raises(InputError, match="mix formats"):
        sources.expand_paths(str(tmp_path))
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(InputError, match="unknown input format"):
        sources.expand_paths(str(tmp_path / "notes.txt"))
    assert sources.expand_paths(str(tmp_path / "*.csv")) == ([str(tmp_path / "a.csv")], "csv")


# -------------------------------------------------------------- read-only

def test_duckdb_queries_cannot_reach_other_files(duckdb_db, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    bad(lambda: sources.SqlSource(f"duckdb:///{duckdb_db}", ["a"],
                                  sql=f"SELECT a FROM read_csv('{secret}')"), "failed while reading")
    bad(lambda: sources.SqlSource(f"duckdb:///{duckdb_db}", ["a"],
                                  sql="SELECT 1 AS a; SET enable_external_access = true"))


def test_postgresql_runs_read_only(postgres):
    import psycopg

    bad(lambda: sources.SqlSource(postgres.url, ["x"],
                                  sql="WITH d AS (DELETE FROM t RETURNING x) SELECT x FROM d"),
        "failed while reading the query")
    with psycopg.connect(postgres.url) as con:
        assert con.execute("SELECT count(*) FROM t").fetchone()[0] == N


def test_quoting_and_urls():
    assert sources.quote_identifier('a"b') == '"a""b"'
    assert sources.parse_database("x.sqlite")[:2] == ("sqlite", "x.sqlite")
    assert sources.parse_database("duckdb:///x.duckdb")[:2] == ("duckdb", "x.duckdb")
    with pytest.raises(InputError, match="must end in"):
        sources.parse_database("x.csv")
    with pytest.raises(InputError, match="unknown scheme"):
        sources.parse_database("mysql://u:pw@h/db")


# ------------------------------------------------------------- two passes

class Shrinking(RowSource):
    """A table that loses rows between the two reads of a rectangle build."""

    columns = ("x", "y")

    def __init__(self):
        self.reads = 0

    def chunks(self):
        self.reads += 1
        n = 50 if self.reads == 1 else 40
        yield [np.arange(n) % 10, np.arange(n) % 7]


def test_a_table_that_changes_between_passes_is_refused():
    with pytest.raises(InputError, match="the input changed"):
        ps.RectangleSynopsis.build(Shrinking(), domain=[(0, 9), (0, 9)], epsilon=1,
                                   rng=ps.Rng(seed=1))


def test_counts_with_a_source_are_refused(data):
    with pytest.raises(ps.ParameterError, match="counts="):
        ps.IntervalSynopsis.build(sources.ArraySource([data[0]]), counts=[1], domain=(0, 999),
                                  epsilon=1)
