"""Databases stay read-only and messages quote no data (issue 30, sections 1 and 2).

Real engines only: SQLite and DuckDB files, and a throwaway PostgreSQL cluster.
Each refusal is one line, raised before any budget is spent; the database is
unchanged afterwards (byte-identical files, table rows intact, no file written).
"""
import hashlib
import os
import sqlite3
import time

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.errors import DomainError, InputError, ParameterError
from pydp_synopsis.inputs import read_columns
from pydp_synopsis.readonly import check_statement_timeout, redact
from pg_cluster import Cluster, postgres_bin
from clirun import one_line_error, run

duckdb = pytest.importorskip("duckdb")

INJECTION = ("SELECT x FROM audit_log) a; COMMIT; DELETE FROM audit_log; "
             "SELECT * FROM (SELECT x FROM audit_log")
FOREVER = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
           "SELECT count(*) AS x FROM r")


def refused(make, *fragments, domain=(0, 999)):
    """Build ``make()``: one-line InputError/ParameterError naming ``fragments``, nothing spent."""
    budget = ps.Budget(5)
    with pytest.raises((InputError, ParameterError, DomainError)) as info:
        ps.IntervalSynopsis.build(make(), domain=domain, epsilon=1, rng=ps.Rng(seed=1),
                                  budget=budget)
    text = str(info.value)
    assert "\n" not in text
    assert budget.spent == 0
    for f in fragments:
        assert f in text, text
    return text


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def make_sqlite(path, values, kind="INTEGER"):
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE audit_log (x {kind})")
    con.executemany("INSERT INTO audit_log VALUES (?)", [(v,) for v in values])
    con.commit()
    con.close()
    return str(path)


def make_duckdb(path, values, kind="INTEGER"):
    if os.path.exists(path):
        os.remove(path)
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE audit_log (x {kind})")
    con.executemany("INSERT INTO audit_log VALUES (?)", [(v,) for v in values])
    con.close()
    return str(path)


@pytest.fixture
def files(tmp_path):
    return {"sqlite": make_sqlite(tmp_path / "a.db", range(10)),
            "duckdb": make_duckdb(tmp_path / "a.duckdb", range(10))}


# ---------------------------------------------------------------- SQLite and DuckDB

@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@pytest.mark.parametrize("sql, fragment", [
    (INJECTION, ""),
    ("SELECT x FROM audit_log; DELETE FROM audit_log", "one SELECT statement"),
    ("CHECKPOINT", ""),
    ("PRAGMA user_version = 7", ""),
    ("DELETE FROM audit_log", ""),
    ("SELECT x FROM audit_log -- a trailing comment", None),
])
def test_one_reading_statement_by_the_engines_parser(files, engine, sql, fragment):
    path = files[engine]
    before = digest(path)
    src = lambda: sources.SqlSource(f"{engine}:///{path}", ["x"], sql=sql)   # noqa: E731
    if fragment is None:
        syn = ps.IntervalSynopsis.build(src(), domain=(0, 999), epsilon=1e6, rng=ps.Rng(seed=1))
        assert round(syn.count(0, 999)) == 10
    else:
        refused(src, fragment)
    assert digest(path) == before
    with sqlite3.connect(path) if engine == "sqlite" else duckdb.connect(path) as con:
        assert con.execute("SELECT count(*) FROM audit_log").fetchone()[0] == 10


def test_duckdb_checkpoint_is_one_clear_line(files):
    # used to be "not enough values to unpack"
    refused(lambda: sources.SqlSource(f"duckdb:///{files['duckdb']}", ["x"],
                                      sql="SELECT 1 AS x; CHECKPOINT"),
            "sql= must be one SELECT statement (DuckDB's parser found: SELECT, CALL)")


def test_sqlite_pragma_writes_are_denied(files):
    path = files["sqlite"]
    before = digest(path)
    for sql in ("SELECT x FROM audit_log) q; PRAGMA user_version = 7; SELECT * FROM (SELECT 1",
                "PRAGMA journal_mode = WAL"):
        refused(lambda: sources.SqlSource(f"sqlite:///{path}", ["x"], sql=sql))
        with pytest.raises(InputError):
            read_columns(sql=sql, database=f"sqlite:///{path}", columns=["x"])
    assert digest(path) == before


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_query_that_runs_forever_stops_at_the_timeout(files, engine):
    start = time.monotonic()
    refused(lambda: sources.SqlSource(f"{engine}:///{files[engine]}", ["x"], sql=FOREVER,
                                      statement_timeout=0.5, memory_limit="300MB"),
            "ran past the statement timeout of 0.5 s")
    assert time.monotonic() - start < 10


def test_read_columns_has_the_timeout_and_the_single_statement(files):
    url = f"sqlite:///{files['sqlite']}"
    with pytest.raises(InputError, match="statement timeout of 0.3 s"):
        read_columns(sql=FOREVER, database=url, statement_timeout=0.3)
    with pytest.raises(InputError, match="one SELECT statement"):
        read_columns(sql="SELECT 1 AS x; SELECT 2 AS x", database=url)
    assert read_columns(sql="SELECT x FROM audit_log -- c", database=url)[0].tolist() \
        == list(range(10))


@pytest.mark.parametrize("value", [0, -1, "1_0", "nan", float("inf"), True, "5 s", 10 ** 7])
def test_a_bad_timeout_is_refused_before_connecting(value):
    with pytest.raises(ParameterError, match=r"^statement_timeout= must"):
        sources.SqlSource("sqlite:///no/such/file.db", ["x"], table="t", statement_timeout=value)
    assert check_statement_timeout("2.5") == 2.5


# ---------------------------------------------------------------- messages quote no data

def neighbours(make, path, a, b, build):
    """The error texts of ``build()`` on ``make(path, a)``, then on ``make(path, b)``."""
    texts = []
    for values in (a, b):
        make(path, values, "VARCHAR" if make is make_duckdb else "TEXT")
        texts.append(refused(build))
    return texts


# a secret non-integer at the end of 50 rows; its neighbour: another one, one row fewer
SECRET = [str(v) for v in range(50)] + ["TOPSECRET"]
OTHER = [str(v) for v in range(49)] + ["12x4"]


@pytest.mark.parametrize("engine, make", [("sqlite", make_sqlite), ("duckdb", make_duckdb)])
@pytest.mark.parametrize("route", ["table", "sql"])
def test_neighbouring_databases_give_the_same_bytes(tmp_path, engine, make, route):
    path = str(tmp_path / f"n.{'db' if engine == 'sqlite' else 'duckdb'}")
    sql = ("SELECT CAST(x AS INTEGER) AS x FROM audit_log" if engine == "duckdb"
           else "SELECT x FROM audit_log")
    kw = {"table": "audit_log"} if route == "table" else {"sql": sql}
    one, two = neighbours(make, path, SECRET, OTHER,
                          lambda: sources.SqlSource(f"{engine}:///{path}", ["x"], **kw))
    assert one == two
    said = one.replace(path, "DB")          # the path holds pytest's own counters
    assert "TOPSECRET" not in said and "51" not in said and "50" not in said


@pytest.mark.parametrize("engine, make", [("sqlite", make_sqlite), ("duckdb", make_duckdb)])
@pytest.mark.parametrize("route", ["table", "sql"])
def test_neighbours_out_of_the_domain_give_the_same_bytes(tmp_path, engine, make, route):
    path = str(tmp_path / f"n.{'db' if engine == 'sqlite' else 'duckdb'}")
    kw = {"table": "audit_log"} if route == "table" else {"sql": "SELECT x FROM audit_log"}
    texts = []
    for values in (list(range(50)) + [5000], list(range(49)) + [1000]):
        make(path, values)
        texts.append(refused(lambda: sources.SqlSource(f"{engine}:///{path}", ["x"], **kw),
                             "must lie in the domain [0, 999]"))
    assert texts[0] == texts[1] and "5000" not in texts[0] and "1000" not in texts[0]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_crafted_database_file_is_one_line(tmp_path, files, engine):
    with open(files[engine], "rb") as fh:
        data = bytearray(fh.read())
    for i in range(100, len(data), 97):
        data[i] ^= 0x5A
    path = tmp_path / f"crafted.{'db' if engine == 'sqlite' else 'duckdb'}"
    path.write_bytes(bytes(data))
    for kw in ({"table": "audit_log"}, {"sql": "SELECT x FROM audit_log"}):
        refused(lambda: sources.SqlSource(f"{engine}:///{path}", ["x"], **kw), "failed while")


def test_debug_adds_the_database_text_and_says_it_is_unsafe(files):
    sql = "SELECT CAST('TOPSECRET' AS INTEGER) AS x"
    url = f"duckdb:///{files['duckdb']}"
    plain = refused(lambda: sources.SqlSource(url, ["x"], sql=sql), "ConversionException")
    assert "TOPSECRET" not in plain
    loud = refused(lambda: sources.SqlSource(url, ["x"], sql=sql, debug=True))
    assert "TOPSECRET" in loud and "unsafe to share" in loud


def test_duckdb_files_never_list_sniffed_names_and_catch_corrupt_parquet(tmp_path):
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("x,y\n1,2\n3,4\nsalary:99000,ssn:123-45-6789,z\n")
    text = refused(lambda: sources.files(str(ragged), ["x"], engine="duckdb"),
                   "failed while reading the files")
    assert "123-45-6789" not in text and "99000" not in text
    ok = tmp_path / "ok.csv"
    ok.write_text("x,y\n1,2\n3,4\n")
    syn = ps.IntervalSynopsis.build(sources.files(str(ok), ["y"], engine="duckdb"),
                                    domain=(0, 9), epsilon=1e6, rng=ps.Rng(seed=1))
    assert round(syn.count(0, 9)) == 2
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"x": np.arange(10000)}), good)
    data = bytearray(good.read_bytes())
    for i in range(100, len(data) - 100, 7):
        data[i] ^= 0xFF
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    refused(lambda: sources.files(str(bad), ["x"], engine="duckdb"), "bad.parquet",
            "failed while reading")


def test_passwords_are_masked_everywhere(tmp_path):
    for url in (f"postgresql:///db?host={tmp_path}&port=5998&password=s3cr3t",
                f"postgresql://me:s3cr3t@/db?host={tmp_path}&port=5998",
                f"postgresql:///db?host={tmp_path}&port=5998&passfile=/s3cr3t/pgpass"):
        shown = sources.parse_database(url)[2]
        assert "s3cr3t" not in shown and "***" in shown
        if postgres_bin() is not None:
            text = refused(lambda: sources.SqlSource(url, ["x"], table="t", debug=True),
                           "failed while connecting")
            assert "s3cr3t" not in text
    assert redact("host=h password='a b' sslpassword=k") == "host=h password=*** sslpassword=***"
    with pytest.raises(InputError) as info:
        sources.parse_database("mysql://db/x?password=s3cr3t")
    assert "s3cr3t" not in str(info.value)


# ---------------------------------------------------------------- PostgreSQL

@pytest.fixture(scope="module")
def pg():
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    psycopg = pytest.importorskip("psycopg")
    with Cluster(port=54347) as cluster:
        with psycopg.connect(cluster.url, autocommit=True) as con:
            con.execute("CREATE ROLE owner LOGIN")
            con.execute("CREATE TABLE audit_log (x int8) ")
            con.execute("INSERT INTO audit_log SELECT g FROM generate_series(0, 9) AS g")
            con.execute("ALTER TABLE audit_log OWNER TO owner")
            con.execute("CREATE TABLE nb (x text)")
        cluster.reader_url = cluster.reader("audit_log", "nb")
        cluster.owner_url = cluster.role_url("owner")
        yield cluster


def pg_rows(pg):
    import psycopg

    with psycopg.connect(pg.url) as con:
        return con.execute("SELECT count(*) FROM audit_log").fetchone()[0]


def pg_exists(pg, name):
    import psycopg

    with psycopg.connect(pg.url) as con:
        return con.execute("SELECT to_regclass(%s) IS NOT NULL", [name]).fetchone()[0]


@pytest.mark.integration
def test_postgresql_injection_cannot_delete(pg):
    # the owner may write the table: refused by default, and with the flag the statement is
    # still one statement of a read-only session (it emptied the table before)
    refused(lambda: sources.SqlSource(pg.owner_url, ["x"], sql=INJECTION),
            "refused to read as a role that may write", "allow_writable_role=True")
    refused(lambda: sources.SqlSource(pg.owner_url, ["x"], table="audit_log"),
            "may write table 'audit_log'")
    refused(lambda: sources.SqlSource(pg.owner_url, ["x"], sql=INJECTION,
                                      allow_writable_role=True), "SyntaxError")
    refused(lambda: sources.SqlSource(pg.reader_url, ["x"], sql=INJECTION), "SyntaxError")
    assert pg_rows(pg) == 10


@pytest.mark.integration
def test_postgresql_every_pass_refuses_a_second_statement(pg):
    """The engine's calls themselves (check, GROUP BY by COPY, cells by COPY with parameters,
    rows by a cursor) refuse the break-out, whichever pass would see it first."""
    import psycopg
    from pydp_synopsis.sources.engines import ENGINES

    engine = ENGINES["postgresql"](pg.owner_url, "pg", {"allow_writable_role": True})
    engine.connect()
    # read-only and bounded at the session level, whatever a transaction says
    assert engine.one_row("SELECT current_setting('default_transaction_read_only'), "
                          "current_setting('statement_timeout')") == ("on", "10min")
    rel = f"(\n{INJECTION}\n) AS pydp_query"
    calls = [lambda: engine.one_row(f"SELECT count(*) FROM {rel}"),
             lambda: list(engine.int_chunks(f"SELECT x::int8, count(*)::int8 FROM {rel} "
                                            f"GROUP BY x", 2, 100)),
             lambda: list(engine.int_chunks(f"SELECT width_bucket(x, %s::int8[])::int8 FROM "
                                            f"{rel}", 1, 100, [[1, 5]])),
             lambda: list(engine.row_chunks(f"SELECT x FROM {rel}", 1, 100))]
    try:
        for call in calls:
            with pytest.raises(psycopg.Error):
                call()
            engine.con.rollback()
    finally:
        engine.close()
    assert pg_rows(pg) == 10


@pytest.mark.integration
def test_postgresql_query_text_is_sent_as_written(pg):
    # no placeholder processing: a % in the query reaches the server unchanged, every pass
    src = sources.SqlSource(pg.reader_url, ["x", "y"],
                            sql="SELECT x, x AS y FROM audit_log WHERE 'a%' LIKE 'a%%'")
    syn = ps.RectangleSynopsis.build(src, domain=[(0, 999)] * 2, epsilon=1e6, rng=ps.Rng(seed=1))
    assert round(syn.count((0, 0), (999, 999))) == 10


@pytest.mark.integration
def test_postgresql_cannot_create_a_table(pg):
    for sql in ("SELECT 1::int8 AS x; CREATE TABLE pwn (a int)",
                "SELECT 1::int8 AS x) q; CREATE TABLE pwn (a int); SELECT * FROM (SELECT 1 AS x"):
        refused(lambda: sources.SqlSource(pg.url, ["x"], sql=sql, allow_writable_role=True))
        refused(lambda: sources.SqlSource(pg.reader_url, ["x"], sql=sql))
    assert not pg_exists(pg, "pwn")


@pytest.mark.integration
def test_postgresql_superuser_is_refused_without_the_flag(pg):
    refused(lambda: sources.SqlSource(pg.url, ["x"], table="audit_log"),
            "refused to read as a superuser", "allow_writable_role=True")
    refused(lambda: sources.SqlSource(pg.url, ["x"], sql="SELECT x FROM audit_log"),
            "refused to read as a superuser")
    syn = ps.IntervalSynopsis.build(sources.SqlSource(pg.url, ["x"], table="audit_log",
                                                      allow_writable_role=True),
                                    domain=(0, 999), epsilon=1e6, rng=ps.Rng(seed=1))
    assert round(syn.count(0, 999)) == 10


@pytest.mark.integration
def test_postgresql_superuser_with_the_flag_cannot_write_files(pg):
    made = os.path.join(pg.dir, "made-by-copy")
    exported = os.path.join(pg.dir, "made-by-lo-export")
    for sql in (f"SELECT 1::int8 AS x) q TO STDOUT; COPY (SELECT 1) TO PROGRAM 'touch {made}'; "
                f"SELECT * FROM (SELECT 1::int8 AS x",
                f"SELECT lo_export(lo_from_bytea(0, 'x'), '{exported}')::int8 AS x"):
        refused(lambda: sources.SqlSource(pg.url, ["x"], sql=sql, allow_writable_role=True))
    assert not os.path.exists(made) and not os.path.exists(exported)


@pytest.mark.integration
def test_postgresql_errors_quote_no_file_and_no_value(pg):
    text = refused(lambda: sources.SqlSource(
        pg.url, ["x"], sql="SELECT pg_read_file('/etc/passwd')::int8 AS x",
        allow_writable_role=True), "InvalidTextRepresentation")
    assert "root" not in text


@pytest.mark.integration
def test_postgresql_timeout_holds_even_if_the_query_resets_it(pg):
    start = time.monotonic()
    refused(lambda: sources.SqlSource(pg.reader_url, ["x"], sql="SELECT 1::int8 AS x FROM "
                                      "pg_sleep(30)", statement_timeout=0.5),
            "ran past the statement timeout of 0.5 s")
    refused(lambda: sources.SqlSource(
        pg.reader_url, ["x"], sql="SELECT 1::int8 AS x FROM (SELECT set_config("
        "'statement_timeout', '0', false)) AS s, pg_sleep(30)", statement_timeout=0.5),
        "statement timeout")
    assert time.monotonic() - start < 20


@pytest.mark.integration
@pytest.mark.parametrize("route", ["table", "sql"])
def test_postgresql_neighbours_give_the_same_bytes(pg, route):
    import psycopg

    kw = {"table": "nb"} if route == "table" else {"sql": "SELECT x::int8 AS x FROM nb"}
    texts = []
    for values in (SECRET, OTHER):
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute("TRUNCATE nb")
            with con.cursor().copy("COPY nb FROM STDIN") as copy:
                for v in values:
                    copy.write_row((v,))
        texts.append(refused(lambda: sources.SqlSource(pg.reader_url, ["x"], **kw)))
    assert texts[0] == texts[1]
    # the message opens with the source (the URL: its random socket directory may hold "51")
    where, said = texts[0].split(": ", 1)
    assert where.startswith("postgresql:") and "port=" in where
    assert "TOPSECRET" not in said and "12x4" not in said and "51" not in said


# ---------------------------------------------------------------- the command line

@pytest.mark.integration
def test_cli_sql_errors_are_one_line_and_identical_for_neighbours(tmp_path):
    path = tmp_path / "n.duckdb"
    lines = []
    for values in (SECRET, OTHER):
        make_duckdb(path, values, "VARCHAR")
        proc = run("build", "--database", f"duckdb:///{path}", "--sql",
                   "SELECT CAST(x AS INTEGER) AS x FROM audit_log", "--columns", "x",
                   "--domain=0:999", "--epsilon", 1, "--output", tmp_path / "o.pds")
        lines.append(one_line_error(proc, "ConversionException"))
        assert proc.stderr.encode() == lines[0].encode() + b"\n"
    assert lines[0] == lines[1] and "TOPSECRET" not in lines[0]
    proc = run("build", "--database", f"duckdb:///{path}", "--sql", "CHECKPOINT",
               "--columns", "x", "--domain=0:999", "--epsilon", 1, "--output", tmp_path / "o.pds")
    one_line_error(proc, "one SELECT statement")
    proc = run("build", "--database", f"duckdb:///{path}", "--sql", FOREVER, "--columns", "x",
               "--statement-timeout", "0.5", "--domain=0:999", "--epsilon", 1,
               "--output", tmp_path / "o.pds")
    one_line_error(proc, "statement timeout of 0.5 s")
    proc = run("build", "--database", f"duckdb:///{path}", "--sql", "SELECT 1 AS x",
               "--columns", "x", "--statement-timeout", "1_0", "--domain=0:999", "--epsilon",
               1, "--output", tmp_path / "o.pds")
    one_line_error(proc, "--statement-timeout")
    assert not (tmp_path / "o.pds").exists()


@pytest.mark.integration
def test_cli_postgresql_flags(pg, tmp_path):
    out = tmp_path / "pg.pds"
    args = ["--columns", "x", "--domain=0:999", "--epsilon", 1, "--output", out]
    one_line_error(run("build", "--database", pg.url, "--table", "audit_log", *args),
                   "refused to read as a superuser", "--allow-writable-role")
    assert not out.exists()
    one_line_error(run("build", "--database", pg.reader_url, "--sql", INJECTION, *args),
                   "SyntaxError")
    proc = run("build", "--database", pg.url, "--table", "audit_log", "--allow-writable-role",
               "--statement-timeout", 30, *args)
    assert proc.returncode == 0 and out.exists(), proc.stderr
    assert pg_rows(pg) == 10


@pytest.mark.integration
def test_cli_database_flags_elsewhere_are_refused(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    args = ["--input", tmp_path / "a.csv", "--columns", "x", "--domain=0:9", "--epsilon", 1,
            "--output", tmp_path / "o.pds"]
    one_line_error(run("build", *args, "--allow-writable-role"), "--allow-writable-role")
    one_line_error(run("build", *args, "--statement-timeout", 5), "--statement-timeout")
    assert not (tmp_path / "o.pds").exists()
    helptext = " ".join(run("build", "--help").stdout.split())
    for flag in ("--statement-timeout", "--allow-writable-role", "UNSAFE TO SHARE"):
        assert flag in helptext
