"""Rectangles from databases and files: the cell pass and the progress of every pass.

The same seed gives the same rectangle synopsis whichever plan computes the
per-axis aggregates and whichever engine runs the cell pass (GROUP BY in
PostgreSQL, a spill of the rows' segments elsewhere); the cell spill is 0600
in a private directory under ``temp_directory`` and is removed on success,
failure and SIGTERM; each pass is reported to a progress object (never
printed by the library), and the CLI draws it on a terminal only.  Real
engines, real files, real terminals (``pty``); no mocks."""
import os
import pty
import signal
import stat
import subprocess
import threading
import time

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.sources.base import prefetch
from clirun import PACKAGE_PARENT, command, read_pty, sigterm_once_spilled
from pg_cluster import Cluster, postgres_bin
from two_columns import release, write_sources

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")

ROWS = 30_000
DOMAIN = [(0, 10**9), (0, 10**9)]       # two high-cardinality axes


@pytest.fixture(scope="module")
def data():
    gen = np.random.default_rng(35)
    x, y = gen.integers(0, 10**9, ROWS), gen.integers(0, 10**9, ROWS)
    x[:500] = 12345                       # a heavy value on one axis
    return x, y


@pytest.fixture(scope="module")
def dbs(tmp_path_factory, data):
    x, y = data
    return write_sources(tmp_path_factory.mktemp("rect"), ("x", "y"), x, y)


def make(dbs, engine, **kw):
    if engine == "parquet":
        return sources.files(dbs["parquet"], ["x", "y"], engine="duckdb", **kw)
    return sources.SqlSource(dbs[engine], ["x", "y"], table="t", chunk_rows=7_000, **kw)


@pytest.fixture(scope="module")
def reference(data):
    return release(ps.RectangleSynopsis.build(np.column_stack(data), domain=DOMAIN, epsilon=1,
                                             rng=ps.Rng(seed=8)))


class Recorder:
    """A progress object: every pass report, in order (what the CLI's line is fed)."""

    def __init__(self, on_step=None):
        self.steps, self.rows, self.on_step = [], [], on_step

    def __call__(self, rows):
        self.rows.append(rows)

    def step(self, phase, done, total, unit):
        self.steps.append((phase, done, total, unit))
        if self.on_step is not None:
            self.on_step(phase, done)

    def phases(self):
        return list(dict.fromkeys(s[0] for s in self.steps))


@pytest.mark.parametrize("engine", ["duckdb", "sqlite", "parquet"])
@pytest.mark.parametrize("plan", ["group", "sort"])
def test_same_seed_same_rectangles_whichever_plan(dbs, reference, engine, plan, tmp_path):
    got = ps.RectangleSynopsis.build(make(dbs, engine, plan=plan, temp_directory=str(tmp_path)),
                                     domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=8))
    assert release(got) == reference
    assert os.listdir(tmp_path) == []          # runs and cell spill removed on success


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_every_pass_is_reported_in_order(dbs, data, engine):
    rec = Recorder()
    # prepare is handed the progress object (as by the CLI's Observed)
    ps.RectangleSynopsis.build(_Reporting(make(dbs, engine, plan="sort"), rec), domain=DOMAIN,
                               epsilon=1, rng=ps.Rng(seed=8))
    assert rec.phases() == ["checking the columns", "reading column 'x'",
                            "merging the runs of column 'x'", "reading column 'y'",
                            "merging the runs of column 'y'", "counting cells",
                            "counting cells (from the spill)"]
    reads = [s for s in rec.steps if s[0] == "reading column 'x'"]
    assert reads[0][1] == 0 and reads[-1][1] == ROWS and {s[2] for s in reads} == {ROWS}
    merged = [s[1] for s in rec.steps if s[0] == "merging the runs of column 'x'"]
    assert merged == sorted(merged) and merged[-1] == len(np.unique(data[0]))
    cells = [s for s in rec.steps if s[0] == "counting cells"]
    assert cells[-1][1:] == (ROWS, ROWS, "rows")
    assert rec.rows == []                      # the pushdown reads no rows in prepare


class _Reporting(sources.Source):
    """A source whose prepare() is handed a progress object (as the CLI's Observed does)."""

    def __init__(self, source, progress):
        self._source, self._progress, self.columns = source, progress, source.columns

    def prepare(self, domains, progress=None, clip=False):
        return self._source.prepare(domains, progress=self._progress, clip=clip)


def test_group_plan_reports_values_and_a_plain_callable_hears_rows_only(dbs, tmp_path):
    rec = Recorder()
    ps.RectangleSynopsis.build(_Reporting(make(dbs, "duckdb", plan="group"), rec), domain=DOMAIN,
                               epsilon=1, rng=ps.Rng(seed=8))
    assert "grouping column 'x' in the database" in rec.phases()
    grouped = [s for s in rec.steps if s[0] == "grouping column 'y'"]
    assert grouped[-1][1:] == (ROWS, None, "distinct values")     # y has no repeat
    # a row source: a plain callable hears the rows read, as before
    heard = []
    csv = tmp_path / "p.csv"
    csv.write_text("x,y\n" + "".join(f"{i},{2 * i}\n" for i in range(50)))
    src = sources.files(str(csv), ["x", "y"])
    with src.prepare(DOMAIN, progress=heard.append):
        pass
    assert heard[-1] == 50


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_cell_spill_is_private_and_removed_when_the_build_fails(dbs, engine, tmp_path):
    modes = []

    def look(phase, done):
        if phase == "counting cells" and not modes:
            (top,) = os.listdir(tmp_path)
            spill = tmp_path / top
            (cells,) = [n for n in os.listdir(spill) if n.startswith("cells")]
            modes.append((stat.S_IMODE(os.stat(spill).st_mode),
                          stat.S_IMODE(os.stat(spill / cells).st_mode)))
        if phase == "counting cells (from the spill)":
            raise KeyboardInterrupt          # as SIGINT would, mid-pass

    with pytest.raises(KeyboardInterrupt):
        ps.RectangleSynopsis.build(
            _Reporting(make(dbs, engine, plan="group", temp_directory=str(tmp_path)),
                       Recorder(look)), domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=8))
    assert modes == [(0o700, 0o600)]
    assert os.listdir(tmp_path) == []


@pytest.mark.integration
def test_postgresql_rectangles_same_release_whichever_plan(data, reference, tmp_path):
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    psycopg = pytest.importorskip("psycopg")
    x, y = data
    with Cluster() as pg:
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute("CREATE TABLE t (x int8, y int8)")
            with con.cursor().copy("COPY t (x, y) FROM STDIN") as copy:
                for a, b in zip(x.tolist(), y.tolist()):
                    copy.write_row((a, b))
        url = pg.reader("t")
        for plan in ("group", "sort"):
            rec = Recorder()
            src = sources.SqlSource(url, ["x", "y"], table="t", plan=plan,
                                    temp_directory=str(tmp_path))
            got = ps.RectangleSynopsis.build(_Reporting(src, rec), domain=DOMAIN, epsilon=1,
                                             rng=ps.Rng(seed=8))
            assert release(got) == reference
            assert os.listdir(tmp_path) == []
            # the server counts the cells once; the grid's second level reads the spill
            assert rec.phases()[-2:] == ["counting cells in the database",
                                         "counting cells (from the spill)"]
            starts = [s for s in rec.steps if s[0] == "counting cells in the database"
                      and s[1] is None]
            assert len(starts) == 1
        modes = []

        def look(phase, done):
            if phase == "counting cells (from the spill)":
                (top,) = os.listdir(tmp_path)
                names = sorted(os.listdir(tmp_path / top))
                modes.append((stat.S_IMODE(os.stat(tmp_path / top).st_mode),
                              {stat.S_IMODE(os.stat(tmp_path / top / n).st_mode) for n in names}))
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            ps.RectangleSynopsis.build(
                _Reporting(sources.SqlSource(url, ["x", "y"], table="t",
                                             temp_directory=str(tmp_path)), Recorder(look)),
                domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=8))
        assert modes == [(0o700, {0o600})] and os.listdir(tmp_path) == []


def test_prefetch_consumer_leaving_at_the_end_of_a_full_queue_does_not_hang():
    # the producer has put its last item (the queue, of depth 1, is full) and is handing over
    # the end of the stream when the consumer leaves: close() must return, not wait forever
    finished = threading.Event()

    def consume():
        gen = prefetch(iter(range(2)), depth=1)
        assert next(gen) == 0
        time.sleep(0.3)                  # the producer fills the queue with 1, then ends
        gen.close()
        finished.set()

    threading.Thread(target=consume, daemon=True).start()
    assert finished.wait(10)


# ------------------------------------------------------------------ the CLI

@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Two high-cardinality columns, enough rows for the passes to take a moment."""
    db = tmp_path_factory.mktemp("bigrect") / "big.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT (hash(i) % 1000000007)::BIGINT AS x, "
                "(hash(i + 7) % 1000000007)::BIGINT AS y FROM range(2000000) r(i)")
    con.close()
    return db


def _build_args(db, out, *extra):
    return command() + ["build", "--database", f"duckdb:///{db}", "--table", "t", "--columns",
                        "x,y", "--domain", "0:1000000006", "--domain", "0:1000000006",
                        "--epsilon", "1", "--output", str(out), *extra]


@pytest.mark.integration
def test_cli_draws_each_pass_on_a_terminal_and_nothing_elsewhere(tmp_path, dbs):
    db = dbs["duckdb"][len("duckdb:///"):]
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, PYDP_SYNOPSIS_PROGRESS_DELAY="0")
    args = _build_args(db, tmp_path / "o.pds", "--plan", "sort", "--seed", "1")
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=tmp_path)
    os.close(slave)
    text = read_pty(master)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, text
    for phase in ("checking the columns", "reading column 'x'", "merging the runs of column 'y'",
                  "counting cells"):
        assert f"pydp-synopsis build: {phase}" in text, text
    assert text.endswith("\n")
    assert str(ROWS) not in out.decode() and f"{ROWS:,}" not in out.decode()   # stdout: no count
    piped = subprocess.run(args, capture_output=True, env=env, timeout=120, cwd=tmp_path)
    assert piped.returncode == 0 and piped.stderr == b""


@pytest.mark.integration
@pytest.mark.slow
def test_sigterm_mid_cell_pass_removes_the_cell_spill(tmp_path, big):
    spill = tmp_path / "spill"
    spill.mkdir()
    out = tmp_path / "s.pds"
    proc = subprocess.Popen(_build_args(big, out, "--plan", "group", "--temp-directory",
                                        str(spill)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT), cwd=tmp_path)
    modes, err = sigterm_once_spilled(proc, spill, lambda _dir, name: name.startswith("cells"))
    assert modes is not None, "the build ended before it could be signalled"
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert err.strip().splitlines() == ["pydp-synopsis: interrupted (SIGTERM)"], err
    assert os.listdir(spill) == [] and not out.exists()
    assert modes == (0o700, 0o600), modes
