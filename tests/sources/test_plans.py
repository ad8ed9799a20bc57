"""How a database column is aggregated (pydp_synopsis.sources.plans): GROUP BY in the
database or an external merge sort here.  Both plans give exactly the same release under
a seed, the sort plan's spill files are private and gone on every exit path, and bad
plans and memory sizes are refused before anything is read.  Real engines, no mocks."""
import os
import signal
import subprocess

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.errors import InputError
from pydp_synopsis.sources.plans import (SAMPLE_ROWS, memory_budget, parse_memory, prefers_sort,
                                         run_entries, sample_query)
from pg_cluster import Cluster, postgres_bin
from two_columns import release, write_sources
from clirun import PACKAGE_PARENT, one_line_error, run
from clirun import command, sigterm_once_spilled

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")

ROWS = SAMPLE_ROWS + 20_000
DOMAIN = (0, 10**9)
Y_DOMAIN = (-50, 49)


@pytest.fixture(scope="module")
def data():
    gen = np.random.default_rng(11)
    wide = gen.integers(0, 10**9, ROWS)         # about as many distinct values as rows
    wide[:3000] = 777                            # and a heavy value
    narrow = gen.integers(-50, 50, ROWS)         # few distinct values
    return wide, narrow


@pytest.fixture(scope="module")
def dbs(tmp_path_factory, data):
    wide, narrow = data
    return write_sources(tmp_path_factory.mktemp("plans"), ("w", "n"), wide, narrow)


def make(dbs, engine, columns, **kw):
    if engine == "parquet":
        return sources.files(dbs["parquet"], columns, engine="duckdb", **kw)
    return sources.SqlSource(dbs[engine], columns, table="t", chunk_rows=40_000, **kw)


@pytest.fixture(scope="module")
def reference(data):
    wide, narrow = data
    return (ps.IntervalSynopsis.build(wide, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=5)),
            ps.RectangleSynopsis.build(np.column_stack([wide, narrow]), domain=[DOMAIN, Y_DOMAIN],
                                       epsilon=1, rng=ps.Rng(seed=6)))


@pytest.mark.parametrize("engine", ["duckdb", "sqlite", "parquet"])
@pytest.mark.parametrize("plan", ["group", "sort", "auto"])
def test_every_plan_gives_the_in_memory_release(dbs, reference, engine, plan, tmp_path):
    one = ps.IntervalSynopsis.build(make(dbs, engine, ["w"], plan=plan, memory_limit="64MiB",
                                         temp_directory=str(tmp_path)),
                                    domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=5))
    assert release(one) == release(reference[0])
    two = ps.RectangleSynopsis.build(make(dbs, engine, ["w", "n"], plan=plan),
                                     domain=[DOMAIN, Y_DOMAIN], epsilon=1, rng=ps.Rng(seed=6))
    assert release(two) == release(reference[1])
    assert os.listdir(tmp_path) == []            # the sort plan's runs are gone


def test_clipped_values_aggregate_alike_in_both_plans(dbs, data):
    wide, _ = data
    narrow_domain = (10**8, 9 * 10**8)            # many values fall outside: clipped
    expect = ps.IntervalSynopsis.build(wide, domain=narrow_domain, epsilon=1, rng=ps.Rng(seed=7),
                                       clip=True)
    for plan in ("group", "sort"):
        got = ps.IntervalSynopsis.build(make(dbs, "duckdb", ["w"], plan=plan), domain=narrow_domain,
                                        epsilon=1, rng=ps.Rng(seed=7), clip=True)
        assert release(got) == release(expect)


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_auto_sorts_wide_columns_and_groups_narrow_ones(dbs, engine):
    src = make(dbs, engine, ["w", "n"])
    prepared = src.prepare([DOMAIN, Y_DOMAIN])
    try:
        assert prepared.plans == ["sort", "group"]
    finally:
        prepared.close()


def test_sort_plan_spills_into_a_private_directory_and_removes_it(dbs, tmp_path, monkeypatch):
    made = []
    from pydp_synopsis import spill

    real = spill.private_directory

    def watch(prefix, directory=None):
        path = real(prefix, directory)
        made.append((path, os.stat(path).st_mode & 0o777))
        return path

    monkeypatch.setattr("pydp_synopsis.aggregates.private_directory", watch)
    monkeypatch.setattr("pydp_synopsis.sources.sql.run_entries", lambda budget: 30_000)
    src = make(dbs, "duckdb", ["w"], plan="sort", temp_directory=str(tmp_path))
    ps.IntervalSynopsis.build(src, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=1))
    assert made and all(os.path.dirname(p) == str(tmp_path) and mode == 0o700 for p, mode in made)
    assert os.listdir(tmp_path) == []


def test_sort_plan_removes_its_runs_when_the_stream_fails(dbs, tmp_path, monkeypatch):
    # a chunk found bad after runs were spilled (fault injected in the offsets step)
    from pydp_synopsis.sources import sql

    calls, real = [], sql.column_offsets

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise InputError("column 'w' is bad (injected)")
        return real(*args, **kw)

    monkeypatch.setattr(sql, "column_offsets", failing)
    monkeypatch.setattr(sql, "run_entries", lambda budget: 30_000)
    src = make(dbs, "duckdb", ["w"], plan="sort", temp_directory=str(tmp_path))
    with pytest.raises(InputError, match="injected"):
        ps.IntervalSynopsis.build(src, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=1))
    assert len(calls) == 4 and os.listdir(tmp_path) == []


def test_plan_facts():
    assert prefers_sort(SAMPLE_ROWS, SAMPLE_ROWS // 4 + 1)
    assert not prefers_sort(SAMPLE_ROWS, SAMPLE_ROWS // 4)
    assert not prefers_sort(SAMPLE_ROWS - 1, SAMPLE_ROWS - 1)   # a small table: GROUP BY
    assert f"LIMIT {SAMPLE_ROWS}" in sample_query('"w"', "t")
    assert parse_memory("1GB") == 10**9 and parse_memory("512MiB") == 512 * 2**20
    assert parse_memory("1.5 GB") == 1_500_000_000 and parse_memory(2**30) == 2**30
    assert 64 * 2**20 <= memory_budget() <= 2**30
    assert run_entries(2**30) == 2**30 // 4 // 48


@pytest.mark.parametrize("kw, exc, words", [
    (dict(plan="fast"), InputError, "plan must be one of auto, group, sort"),
    (dict(plan=None), TypeError, "plan must be a str"),
    (dict(memory_limit="lots"), InputError, "memory_limit must be a size such as 1GB"),
    (dict(memory_limit="1MB"), InputError, "at least 64MiB"),
    (dict(memory_limit="5 parsecs"), InputError, "memory_limit"),
    (dict(memory_limit=1.5), TypeError, "memory_limit"),
])
def test_bad_plan_or_memory_refused_before_connecting(kw, exc, words, tmp_path, dbs):
    missing = tmp_path / "absent.duckdb"       # never opened: the arguments fail first
    with pytest.raises(exc, match=words):
        sources.SqlSource(f"duckdb:///{missing}", ["w"], table="t", **kw)
    with pytest.raises(exc, match=words):
        sources.files(dbs["parquet"], ["w"], engine="duckdb", **kw)


@pytest.mark.integration
def test_postgresql_plans_give_the_same_release(data, reference):
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    psycopg = pytest.importorskip("psycopg")
    wide, narrow = data
    with Cluster() as pg:
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute("CREATE TABLE t (w int8, n int8)")
            with con.cursor().copy("COPY t (w, n) FROM STDIN") as copy:
                for a, b in zip(wide.tolist(), narrow.tolist()):
                    copy.write_row((a, b))
        url = pg.reader("t")
        src = sources.SqlSource(url, ["w", "n"], table="t")
        prepared = src.prepare([DOMAIN, Y_DOMAIN])
        assert prepared.plans == ["sort", "group"]
        prepared.close()
        for plan in ("group", "sort"):
            got = ps.IntervalSynopsis.build(sources.SqlSource(url, ["w"], table="t", plan=plan),
                                            domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=5))
            assert release(got) == release(reference[0])


@pytest.mark.integration
@pytest.mark.slow
def test_sigterm_mid_sort_plan_removes_the_runs(tmp_path):
    db = tmp_path / "big.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT (hash(i) % 1000000007)::BIGINT AS v FROM range(3000000) r(i)")
    con.close()
    spill = tmp_path / "spill"
    spill.mkdir()
    out = tmp_path / "s.pds"
    proc = subprocess.Popen(command() + ["build", "--database", f"duckdb:///{db}", "--table", "t",
                                         "--columns", "v", "--domain", "0:1000000006", "--epsilon",
                                         "1", "--plan", "sort", "--memory-limit", "64MiB",
                                         "--temp-directory", str(spill), "--output", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT), cwd=tmp_path)
    modes, err = sigterm_once_spilled(proc, spill, lambda directory, _name: "pydp-aggregate-" in directory)
    assert modes is not None, "the build ended before it could be signalled"
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert err.strip().splitlines() == ["pydp-synopsis: interrupted (SIGTERM)"], err
    assert os.listdir(spill) == [] and not out.exists()
    assert modes == (0o700, 0o600), modes


@pytest.mark.integration
def test_cli_refuses_bad_plan_options_in_one_line(tmp_path, dbs):
    csv = tmp_path / "v.csv"
    csv.write_text("v\n1\n2\n")
    base = ["build", "--columns", "w", "--domain", "0:1000000000", "--epsilon", "1",
            "--output", str(tmp_path / "s.pds")]
    one_line_error(run(*base, "--database", dbs["duckdb"], "--table", "t", "--temp-directory",
                       str(tmp_path / "absent")), "--temp-directory", "not an existing directory")
    one_line_error(run(*base, "--database", dbs["duckdb"], "--table", "t", "--memory-limit",
                       "1MB"), "--memory-limit must be at least 64MiB")
    one_line_error(run(*base, "--input", str(csv), "--plan", "sort"),
                   "--plan and --temp-directory apply to a --database or --engine duckdb")
    one_line_error(run(*base, "--database", dbs["duckdb"], "--table", "t", "--plan", "fast"),
                   "--plan")
    assert not (tmp_path / "s.pds").exists()
    ok = run(*base, "--database", dbs["duckdb"], "--table", "t", "--plan", "sort",
             "--memory-limit", "256MiB", "--temp-directory", str(tmp_path), "--seed", "3")
    assert ok.returncode == 0, ok.stderr
    assert sorted(os.listdir(tmp_path)) == ["s.pds", "v.csv"]
