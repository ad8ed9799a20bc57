"""Fuzz tier over ``--sql`` statements on SQLite and DuckDB files (issue 30).

Statements are spliced from fragments an attacker would try: several
statements, comments, semicolons inside strings, PRAGMA, ATTACH, COPY,
CHECKPOINT, INSTALL/LOAD, EXPORT, SET, VACUUM INTO, parenthesis break-outs.
Each build either reads (a synopsis) or fails with one line
(InputError/ParameterError/DomainError) with nothing spent; afterwards the
database file is byte-identical and its directory holds no new file.
"""
import hashlib
import os
import shutil
import sqlite3
import tempfile

import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.errors import DomainError, InputError, ParameterError

duckdb = pytest.importorskip("duckdb")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

WORK = tempfile.mkdtemp(prefix="pydp-sql-fuzz-")
OUT = os.path.join(WORK, "out")

FRAGMENTS = [
    "SELECT x FROM t", "SELECT 1 AS x", " ; ", ";", " -- comment ; DELETE FROM t\n",
    "/* ; DROP TABLE t; */", "SELECT ';DELETE FROM t;' AS s, x FROM t", ") q; ",
    "SELECT * FROM (", "x) AS a, (SELECT 1", "PRAGMA user_version = 7",
    "PRAGMA journal_mode = WAL", f"ATTACH '{OUT}.db' AS p", f"COPY t TO '{OUT}.csv'",
    "CHECKPOINT", "FORCE CHECKPOINT", "INSTALL httpfs", "LOAD httpfs",
    f"EXPORT DATABASE '{OUT}'", "SET threads = 1", "SET enable_external_access = true",
    f"VACUUM INTO '{OUT}.vac'", "VACUUM", "DELETE FROM t", "INSERT INTO t VALUES (5)",
    "CREATE TABLE z (a INT)", "DROP TABLE t", "BEGIN", "COMMIT", "ROLLBACK",
    "WITH w AS (SELECT x FROM t) SELECT x FROM w", f"SELECT * FROM read_csv('{OUT}.csv')",
    "SELECT x FROM t UNION ALL SELECT x FROM t", "UPDATE t SET x = 0",
    "SELECT count(*) AS x FROM t", "SELECT 1 AS x FROM checkpoint()",
    "SELECT 1 AS x FROM force_checkpoint()", "'", "\"", "(", ")",
]


@pytest.fixture(scope="module", autouse=True)
def _remove_work_dir():
    yield
    shutil.rmtree(WORK, ignore_errors=True)


def _make(engine):
    path = os.path.join(WORK, f"t.{'db' if engine == 'sqlite' else 'duckdb'}")
    if not os.path.exists(path):
        if engine == "sqlite":
            con = sqlite3.connect(path)
            con.execute("CREATE TABLE t (x INTEGER)")
            con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in range(20)])
            con.commit()
            con.close()
        else:
            con = duckdb.connect(path)
            con.execute("CREATE TABLE t AS SELECT range::INTEGER AS x FROM range(20)")
            con.close()
    return path


def _state(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest(), sorted(os.listdir(WORK))


@pytest.mark.fuzz
@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=5).map(" ".join),
    # the break-out: close the wrapping subquery, run statements, reopen one
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map(
        lambda mid: "SELECT x FROM t) q; " + "; ".join(mid) + "; SELECT * FROM (SELECT x FROM t")))
def test_sql_statements_read_or_refuse_in_one_line(engine, sql):
    path = _make(engine)
    before = _state(path)
    budget = ps.Budget(5)
    try:
        src = sources.SqlSource(f"{engine}:///{path}", ["x"], sql=sql, statement_timeout=5)
        ps.IntervalSynopsis.build(src, domain=(0, 999), epsilon=1, rng=ps.Rng(seed=1),
                                  budget=budget)
    except (InputError, ParameterError, DomainError) as exc:
        assert "\n" not in str(exc)
        assert budget.spent == 0
    assert _state(path) == before, sql
