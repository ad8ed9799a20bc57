"""clip=True / --clip: out-of-domain values are clipped to the declared domain instead of
refused, on every source; the release is exactly that of the clipped data under the same
seed.  Without clip nothing changes (the refusal, before any budget).  Real files and
databases, no mocks."""
import datetime
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.errors import FormatError
from pg_cluster import Cluster, postgres_bin

DOMAIN = (0, 99)
RAW = [-5, 3, 3, 50, 99, 100, 250, 10**6, -(10**6), 7]


def clipped(values, domain=DOMAIN):
    return [min(max(v, domain[0]), domain[1]) for v in values]


def same_release(a, b):
    """Two synopses released the same numbers (the arrays of their saved records)."""
    ka, ma, arrays_a, _ = a._to_record()
    kb, mb, arrays_b, _ = b._to_record()
    assert ka == kb and arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        assert np.array_equal(np.asarray(arrays_a[key]), np.asarray(arrays_b[key])), key
    assert ma["domain" if "domain" in ma else "domains"] == mb["domain" if "domain" in mb
                                                                else "domains"]


def interval(values, seed=5, **kw):
    kw.setdefault("domain", DOMAIN)
    return ps.IntervalSynopsis.build(values, epsilon=1, rng=ps.Rng(seed=seed), **kw)


@pytest.fixture(scope="module")
def reference():
    return interval(np.array(clipped(RAW)))


# ------------------------------------------------------------------ in memory
def test_clip_equals_the_release_of_clipped_data_arrays(reference):
    syn = interval(np.array(RAW), clip=True)
    same_release(syn, reference)
    assert syn.clipped and not reference.clipped
    # a Python list with integers beyond int64 (exact, never through a float)
    same_release(interval([10**30, -(10**30)] + RAW, clip=True),
                 interval(np.array(clipped([10**30, -(10**30)] + RAW))))
    # counts= (weighted input): the same as the clipped, repeated data
    w = np.arange(1, len(RAW) + 1)
    same_release(interval(np.array(RAW), counts=w, clip=True),
                 interval(np.repeat(clipped(RAW), w)))


def test_without_clip_the_refusal_is_unchanged_and_before_any_budget():
    budget = ps.Budget(5)
    with pytest.raises(ps.DomainError, match=r"^values must lie in the domain \[0, 99\]: "
                                             r"some value is outside it$"):
        interval(np.array(RAW), budget=budget)
    assert budget.remaining == 5
    with pytest.raises(TypeError, match="clip must be a bool"):
        interval(np.array(clipped(RAW)), clip="yes")


def test_rectangles_and_partition_clip_per_axis():
    pts = np.array([[-5, 3], [2, 99], [4, 4], [10**9, -(10**9)]])
    dom = [(0, 7), (-3, 7)]
    want = np.column_stack([np.clip(pts[:, 0], 0, 7), np.clip(pts[:, 1], -3, 7)])
    for structure in ("adaptive", "multitree"):
        a = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1, rng=ps.Rng(seed=3),
                                       structure=structure, clip=True)
        b = ps.RectangleSynopsis.build(want, domain=dom, epsilon=1, rng=ps.Rng(seed=3),
                                       structure=structure)
        same_release(a, b)
        assert a.clipped and not b.clipped
    p1 = ps.private_partition(RAW, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=3), clip=True)
    p2 = ps.private_partition(clipped(RAW), domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=3))
    assert np.array_equal(p1.end_offsets, p2.end_offsets)
    # the uint64 domains: a negative value below lo, 2**64 - 1 above hi
    big = (2**63, 2**64 - 2)
    u = [-1, 2**64 - 1, 2**63 + 5]
    same_release(interval(u, domain=big, clip=True),
                 interval(np.array(clipped(u, big), dtype=np.uint64), domain=big))


def test_pandas_and_user_units_clip_after_conversion():
    pd = pytest.importorskip("pandas")
    s = pd.Series(RAW, name="x")
    same_release(interval(s, clip=True), interval(pd.Series(clipped(RAW), name="x")))
    # dates: the domain in dates, values before and after it (and one beyond what
    # nanoseconds of int64 hold) become its first and last day
    days = np.array(["1999-05-01", "2001-03-02", "2001-12-31", "2450-01-01"],
                    dtype="datetime64[D]")
    dom = ("2001-01-01", "2001-12-31")
    want = np.array(["2001-01-01", "2001-03-02", "2001-12-31", "2001-12-31"],
                    dtype="datetime64[D]")
    same_release(interval(days, domain=dom, clip=True), interval(want, domain=dom))
    ns = ps.Column.datetime("t", unit="ns")
    dom_t = ("2001-01-01T00:00", "2001-01-02T00:00")
    times = [datetime.datetime(9999, 1, 1), datetime.datetime(2001, 1, 1, 12),
             datetime.datetime(1, 1, 1)]
    want_t = [datetime.datetime(2001, 1, 2), datetime.datetime(2001, 1, 1, 12),
              datetime.datetime(2001, 1, 1)]
    same_release(interval(times, domain=dom_t, columns=ns, clip=True),
                 interval(want_t, domain=dom_t, columns=ns))
    # decimals: a value of 30 digits overflows int64 once scaled: clipped too
    dec = ["1" * 30, "-2.5", "0.125", "3.14159"]
    same_release(interval(dec, domain=("0", "9.99"), scale="1e2", clip=True),
                 interval(["9.99", "0", "0.12", "3.14"], domain=("0", "9.99"), scale="1e2"))
    floats = np.array([1e300, -np.inf, 0.125, np.inf])
    same_release(interval(floats, domain=("0", "9.99"), scale="1e2", clip=True),
                 interval(["9.99", "0", "0.12", "9.99"], domain=("0", "9.99"), scale="1e2"))
    with pytest.raises(ps.DomainError, match="NULL"):        # NaN stays a refusal
        interval(np.array([np.nan, 1.0]), domain=("0", "9.99"), scale="1e2", clip=True)


def test_the_clip_is_saved_loaded_and_old_files_stay_unclipped(tmp_path, reference):
    syn = interval(np.array(RAW), clip=True)
    syn.save(tmp_path / "c.syn")
    reference.save(tmp_path / "r.syn")
    assert ps.load(tmp_path / "c.syn").clipped is True
    assert ps.load(tmp_path / "r.syn").clipped is False
    assert "clipped" not in reference._to_record()[1]      # unclipped files: as before
    assert syn._to_record()[1]["clipped"] is True
    from pydp_synopsis import persist

    kind, meta, arrays, _ = syn._to_record()
    persist.write_record(tmp_path / "bad.syn", kind, dict(meta, clipped="yes"), arrays)
    with pytest.raises(FormatError, match="clipped"):
        ps.load(tmp_path / "bad.syn")


# ----------------------------------------------------------------- files
def test_files_csv_parquet_npz_clip(tmp_path, reference):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    # CSV: plain integers (one beyond int64: pyarrow's int64 parse fails mid-file, the rest
    # is read again as text), with chunks small enough to cross batches
    rows = RAW + [10**30]
    want = interval(np.array(clipped(rows)))
    (tmp_path / "a.csv").write_text("x\n" + "".join(f"{v}\n" for v in rows))
    src = sources.files(str(tmp_path / "a.csv"), ["x"], chunk_rows=2)
    same_release(interval(src, clip=True), want)
    src = sources.files(str(tmp_path / "a.csv"), ["x"], scale="1")
    same_release(interval(src, clip=True), want)
    # Parquet: int64 and double columns; npz
    pq.write_table(pa.table({"x": np.array(RAW, dtype=np.int64),
                             "f": np.array(RAW, dtype=np.float64)}), tmp_path / "a.parquet")
    same_release(interval(sources.files(str(tmp_path / "a.parquet"), ["x"]), clip=True),
                 reference)
    same_release(interval(sources.files(str(tmp_path / "a.parquet"), ["f"]), clip=True),
                 reference)
    np.savez(tmp_path / "a.npz", x=np.array(RAW))
    same_release(interval(sources.files(str(tmp_path / "a.npz"), ["x"]), clip=True),
                 reference)
    np.save(tmp_path / "a.npy", np.array(RAW))
    same_release(interval(sources.files(str(tmp_path / "a.npy"), []), clip=True), reference)
    # dates in a CSV (the units path)
    (tmp_path / "d.csv").write_text("d\n1999-05-01\n2001-03-02\n2450-01-01\n")
    col = ps.Column.date("d")
    dom = ("2001-01-01", "2001-12-31")
    got = interval(sources.files(str(tmp_path / "d.csv"), ["d"], units=[col]), domain=dom,
                   columns=col, clip=True)
    same_release(got, interval(np.array(["2001-01-01", "2001-03-02", "2001-12-31"],
                                        dtype="datetime64[D]"), domain=dom, columns=col))
    # without clip: the one-line refusal, nothing charged
    budget = ps.Budget(5)
    with pytest.raises(ps.DomainError, match="column 'x' must lie in the domain"):
        interval(sources.files(str(tmp_path / "a.npz"), ["x"]), budget=budget)
    assert budget.remaining == 5


def test_array_source_and_rectangles_from_a_source(reference):
    same_release(interval(sources.ArraySource([np.array(RAW)], chunk_rows=3), clip=True),
                 reference)
    pts = np.array([[-5, 3], [2, 99], [4, 4], [10**9, -(10**9)]])
    dom = [(0, 7), (-3, 7)]
    want = np.column_stack([np.clip(pts[:, 0], 0, 7), np.clip(pts[:, 1], -3, 7)])
    a = ps.RectangleSynopsis.build(sources.ArraySource(list(pts.T), chunk_rows=1), domain=dom,
                                   epsilon=1, rng=ps.Rng(seed=3), clip=True)
    same_release(a, ps.RectangleSynopsis.build(want, domain=dom, epsilon=1,
                                               rng=ps.Rng(seed=3)))
    w = np.array([1, 2, 3, 4])
    a = ps.RectangleSynopsis.build(pts, domain=dom, epsilon=1, rng=ps.Rng(seed=3), counts=w,
                                   clip=True, shards=2)
    b = ps.RectangleSynopsis.build(np.repeat(want, w, axis=0), domain=dom, epsilon=1,
                                   rng=ps.Rng(seed=3), shards=2)
    same_release(a, b)


# -------------------------------------------------------------- databases
def _sqlite(path, values):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    con.commit()
    con.close()
    return f"sqlite:///{path}"


def test_sql_pushdown_clips_in_the_group_by(tmp_path, reference):
    url = _sqlite(tmp_path / "t.db", RAW)
    src = sources.SqlSource(url, ["x"], table="t")
    same_release(interval(src, clip=True), reference)
    # the pushdown stayed on (integer columns): every value of lo is one group
    budget = ps.Budget(5)
    with pytest.raises(ps.DomainError, match="column 'x' must lie in the domain"):
        interval(sources.SqlSource(url, ["x"], table="t"), budget=budget)
    assert budget.remaining == 5


def test_sqlite_row_path_clips_values_beyond_int64(tmp_path, reference):
    # a text value in an INTEGER column: SQLite streams the rows, converted in Python
    url = _sqlite(tmp_path / "t.db", RAW + ["1" * 30])
    same_release(interval(sources.SqlSource(url, ["x"], table="t"), clip=True),
                 interval(np.array(clipped(RAW + [10**29]))))


def test_duckdb_pushdown_clips_signed_and_unsigned(tmp_path, reference):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (x BIGINT, u UHUGEINT, h HUGEINT)")
    big = [0, 5, 2**64 - 1, 2**64 + 7, 2**127, 2**63 + 3, 1, 2, 3, 4]
    con.executemany("INSERT INTO t VALUES (?, ?, ?)",
                    [(x, u, x * 10**20) for x, u in zip(RAW, big)])
    con.close()
    url = f"duckdb:///{path}"
    same_release(interval(sources.SqlSource(url, ["x"], table="t"), clip=True), reference)
    same_release(interval(sources.SqlSource(url, ["h"], table="t"), clip=True),
                 interval(np.array(clipped([x * 10**20 for x in RAW]))))
    dom = (2**63, 2**64 - 2)
    same_release(interval(sources.SqlSource(url, ["u"], table="t"), domain=dom, clip=True),
                 interval(np.array(clipped(big, dom), dtype=np.uint64), domain=dom))
    rect = ps.RectangleSynopsis.build(sources.SqlSource(url, ["x", "h"], table="t"),
                                      domain=[DOMAIN, DOMAIN], epsilon=1, rng=ps.Rng(seed=3),
                                      clip=True)
    want = np.column_stack([clipped(RAW), clipped([x * 10**20 for x in RAW])])
    same_release(rect, ps.RectangleSynopsis.build(want, domain=[DOMAIN, DOMAIN], epsilon=1,
                                                  rng=ps.Rng(seed=3)))


@pytest.mark.integration
def test_postgresql_pushdown_clips(reference):
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries not installed")
    psycopg = pytest.importorskip("psycopg")
    with Cluster(port=54377) as pg:
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute("CREATE TABLE t (x int8, y int4)")
            with con.cursor() as cur:
                cur.executemany("INSERT INTO t VALUES (%s, %s)",
                                [(x, x % 1000) for x in RAW])
        url = pg.reader("t")        # the sources refuse a superuser
        same_release(interval(sources.SqlSource(url, ["x"], table="t"), clip=True),
                     reference)
        rect = ps.RectangleSynopsis.build(sources.SqlSource(url, ["x", "y"], table="t"),
                                          domain=[DOMAIN, (-3, 7)], epsilon=1,
                                          rng=ps.Rng(seed=3), clip=True, structure="multitree")
        want = np.column_stack([clipped(RAW), clipped([x % 1000 for x in RAW], (-3, 7))])
        same_release(rect, ps.RectangleSynopsis.build(want, domain=[DOMAIN, (-3, 7)],
                                                      epsilon=1, rng=ps.Rng(seed=3),
                                                      structure="multitree"))


@pytest.mark.integration
def test_dask_clips_on_the_workers(reference):
    da = pytest.importorskip("dask.array")
    import dask

    with dask.config.set(scheduler="synchronous"):
        x = da.from_array(np.array(RAW), chunks=3)
        same_release(interval(x, clip=True, shards=1), reference)


# ---------------------------------------------------------------------- CLI
@pytest.mark.integration
def test_cli_build_clip_and_info(tmp_path, reference):
    (tmp_path / "a.csv").write_text("x\n" + "".join(f"{v}\n" for v in RAW))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ps.__file__)))
    cmd = [sys.executable, "-m", "pydp_synopsis.cli", "build", "--input",
           str(tmp_path / "a.csv"), "--columns", "x", "--domain", "0:99", "--epsilon", "1",
           "--seed", "5", "--output", str(tmp_path / "a.syn")]
    refused = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120,
                             cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == ("pydp-synopsis: error: column 'x' must lie in the domain "
                              "[0, 99]: some value is outside it\n")
    done = subprocess.run(cmd + ["--clip"], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    same_release(ps.load(tmp_path / "a.syn"), reference)
    info = subprocess.run([sys.executable, "-m", "pydp_synopsis.cli", "info",
                           str(tmp_path / "a.syn")], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)
    assert "clipped:        yes" in info.stdout


def test_the_documented_example_runs():
    """docs/security-messages.md: its Python example runs as written."""
    import re

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "docs", "security-messages.md"), encoding="utf-8") as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "security-messages.md", "exec"), {})
