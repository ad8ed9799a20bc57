"""Builds from data that do not fit in memory: Parquet, CSV and DuckDB tables, with floors.

Every measurement runs in a child process; its peak RSS is read by the parent of that
child with ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` (a process with one child,
so the value is that child's).  The floors are measured in the same run:

* Parquet, 10^8 rows x 2 int64 columns: DuckDB's own ``SELECT a, count(*) ... GROUP BY a``
  over the same files (the result streamed out), against the 1-column build; the 2-column
  build against 60 s; peak RSS against 2 GiB; the 2-column build again with
  ``seal_share=0`` (no seal counts: the cost of reading the rows over refined partitions).
* A DuckDB table generated inside DuckDB with ``range()`` (10^7, 10^8, 10^9 rows): the
  1-column build by pushdown (the GROUP BY runs in DuckDB); peak RSS against 1 GiB, flat in n.
* CSV, 10^7 rows x 2 integer columns: ``pandas.read_csv`` of the same two columns, against
  the 2-column build (target <= 3x); peak RSS against 1 GiB.
* A DuckDB table of values ``hash(i) % 1000000007`` (about as many distinct values as
  rows, 10^7 and 10^8), the same rows as a Parquet file (DuckDB ``COPY``), and a
  PostgreSQL table of as many values (``generate_series``, in a throwaway cluster, where
  PostgreSQL is installed): the 1-column build with ``plan="auto"``, ``"sort"`` and
  ``"group"`` against fetching the column into numpy and building in memory from the same
  source; the peak RSS of the whole process tree (the task, its children and the
  PostgreSQL server, anonymous and file-backed, sampled every 20 ms) against 1 GiB; every
  plan's answer to one query under one seed, equal to the floor's.
* Rectangles over two such columns (``hash(i) % 1000000007`` and ``hash(i + 7) %
  1000000007``, 10^7 rows by default, ``--highcard-rect``): ``RectangleSynopsis.build``
  from the DuckDB table with ``plan="auto"``, ``"sort"`` and ``"group"`` and from the
  table's Parquet export through DuckDB, against fetching both columns into numpy and
  building in memory; the peak of RSS, and of its anonymous and file-backed parts
  (``/proc/self/status`` sampled every 10 ms); target 1.5 GiB; every path's answer to one
  box under one seed, equal to the floor's.
* Weighted input: ``build(v, counts=c)`` against ``build(np.repeat(v, c))``.
* Dask: the same Parquet files as a dask Series on a ``distributed.LocalCluster`` of 2
  worker processes (1 thread each), with 1 and 2 public shards: time against the
  one-process 1-column build, the driver's peak RSS and each worker's.

The data (uniform 32-bit values: ~10^8 distinct in column a, the worst case for sorting
and for the partition; seconds of one year in column b; 2^20 distinct values in the
DuckDB table) are generated under a temporary directory and removed at the end; nothing is
written to the repository.  Times are wall-clock seconds on the machine the script runs on:
take ratios, not absolute times.  The script asserts nothing.

    PYTHONPATH=. python benchmarks/bench_scale.py                 # everything (~8 min, 2 cores)
    PYTHONPATH=. python benchmarks/bench_scale.py --quick         # 10x smaller, ~1 min
    PYTHONPATH=. python benchmarks/bench_scale.py --pushdown 1e7,1e8,1e9 --skip parquet,csv
    PYTHONPATH=. python benchmarks/bench_scale.py --highcard 1e8 --skip weighted,parquet,pushdown,csv
    PYTHONPATH=. python benchmarks/bench_scale.py --highcard 1e8 --highcard-plans sort \
        --memory-limit 1GB --skip weighted,parquet,pushdown,csv,dask
    PYTHONPATH=. python benchmarks/bench_scale.py --highcard-rect 1e8 \
        --skip weighted,parquet,pushdown,highcard,csv
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.abspath(__file__)
GIB = 1024 ** 3
A_DOMAIN = (0, 2**32 - 1)
B_DOMAIN = (1_700_000_000, 1_700_000_000 + 31_536_000 - 1)
X_DOMAIN = (0, 2**20 - 1)
H_DOMAIN = (0, 1_000_000_006)
HUGE_DOMAIN = (0, 2**63 - 1)        # (hash(i) >> 1): about as many distinct values as rows


# ------------------------------------------------------------------ data

def make_parquet(directory, rows, files=4):
    import duckdb

    os.makedirs(directory, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    per = rows // files
    for f in range(files):
        con.execute(f"""COPY (SELECT (hash(i) % 4294967296)::BIGINT AS a,
                                    ({B_DOMAIN[0]} + hash(i + {10**12}) % 31536000)::BIGINT AS b
                             FROM range({f * per}, {(f + 1) * per if f < files - 1 else rows}) t(i))
                       TO '{directory}/part-{f}.parquet' (FORMAT parquet, ROW_GROUP_SIZE 1048576)""")


def make_csv(path, rows):
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""COPY (SELECT (hash(i) % 4294967296)::BIGINT AS a,
                                ({B_DOMAIN[0]} + hash(i + {10**12}) % 31536000)::BIGINT AS b
                         FROM range({rows}) t(i)) TO '{path}' (HEADER, DELIMITER ',')""")


def make_duckdb(path, rows, column="x", domain=X_DOMAIN):
    """A DuckDB table ``t`` of ``rows`` values ``hash(i) % (hi + 1)`` in one column: 2^20
    distinct values for the pushdown rows, about as many as rows for the high-cardinality
    ones (``column="v"``, ``domain=H_DOMAIN``: issue 35)."""
    import duckdb

    con = duckdb.connect(path)
    con.execute("SET enable_progress_bar = false")
    con.execute(f"CREATE TABLE t AS SELECT (hash(i) % {domain[1] + 1})::BIGINT AS {column} "
                f"FROM range({rows}) t(i)")
    con.close()


def make_rect_duckdb(path, rows, parquet=None):
    """A DuckDB table ``t`` of two high-cardinality columns ``x``, ``y`` (and, with
    ``parquet``, the same rows exported to that Parquet file)."""
    import duckdb

    con = duckdb.connect(path)
    con.execute("SET enable_progress_bar = false")
    con.execute(f"CREATE TABLE t AS SELECT (hash(i) % {H_DOMAIN[1] + 1})::BIGINT AS x, "
                f"(hash(i + 7) % {H_DOMAIN[1] + 1})::BIGINT AS y FROM range({rows}) t(i)")
    if parquet:
        con.execute(f"COPY t TO '{parquet}' (FORMAT parquet)")
    con.close()


class PeakRss:
    """The peak of this process's VmRSS, with its RssAnon and RssFile at that moment
    (``/proc/self/status``, sampled every 10 ms in a thread; Linux)."""

    def __init__(self):
        self.peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.01):
            try:
                with open("/proc/self/status") as fh:
                    now = {k: int(v.split()[0]) * 1024 for k, v in
                           (line.split(":", 1) for line in fh) if k in self.peak}
            except OSError:
                return
            if now.get("VmRSS", 0) > self.peak["VmRSS"]:
                self.peak.update(now)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peak


# ------------------------------------------------------------------ tasks (in a child)

def task(name, args):
    """Run one measurement; returns a dict (seconds of the work itself, not the imports)."""
    import numpy as np

    import pydp_synopsis as ps
    from pydp_synopsis import sources

    start = time.perf_counter()
    out = {}
    if name == "duckdb_groupby":
        import duckdb

        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        start = time.perf_counter()
        rel = con.sql(f"SELECT {args['column']}, count(*) FROM read_parquet('{args['glob']}') "
                      f"GROUP BY {args['column']}")
        reader = rel.to_arrow_reader(1 << 20) if hasattr(rel, "to_arrow_reader") \
            else rel.fetch_record_batch(1 << 20)
        out["groups"] = sum(b.num_rows for b in reader)
    elif name == "pandas_read_csv":
        import pandas as pd

        frame = pd.read_csv(args["path"], usecols=["a", "b"])
        out["rows"] = len(frame)
    elif name in ("parquet_1", "parquet_2", "csv_1", "csv_2"):
        cols = ["a"] if name.endswith("1") else ["a", "b"]
        src = sources.files(args["path"], cols, engine=args.get("engine", "local"),
                            **({"memory_limit": "1GB"} if args.get("engine") == "duckdb" else {}))
        start = time.perf_counter()
        if len(cols) == 1:
            syn = ps.IntervalSynopsis.build(src, domain=A_DOMAIN, epsilon=1)
            out["segments"] = len(syn)
        else:
            opts = {"seal_share": args["seal_share"]} if "seal_share" in args else {}
            syn = ps.RectangleSynopsis.build(src, domain=[A_DOMAIN, B_DOMAIN], epsilon=1, **opts)
            out["cells"] = syn.num_nodes
    elif name == "dask_1":
        import dask.dataframe as dd
        import distributed

        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            series = dd.read_parquet(f"{args['path']}/*.parquet", columns=["a"])["a"]
            start = time.perf_counter()
            syn = ps.IntervalSynopsis.build(series, domain=A_DOMAIN, epsilon=1,
                                            shards=args["shards"])
            out["seconds"] = time.perf_counter() - start
            out["segments"] = len(syn)
            out["worker_rss"] = sorted(client.run(
                lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024).values())
        return out
    elif name == "pushdown":
        src = sources.SqlSource(f"duckdb:///{args['path']}", ["x"], table="t",
                                memory_limit="400MB", threads=2)
        start = time.perf_counter()
        syn = ps.IntervalSynopsis.build(src, domain=X_DOMAIN, epsilon=1)
        out["segments"] = len(syn)
    elif name in ("highcard_auto", "highcard_group", "highcard_sort"):
        plan, where = name.split("_")[1], args.get("source", "duckdb")
        limit = {"memory_limit": args["memory_limit"]} if args.get("memory_limit") else {}
        if where == "parquet":
            src = sources.files(args["path"], ["v"], engine="duckdb", plan=plan, **limit)
        elif where == "postgresql":
            src = sources.SqlSource(args["url"], ["v"], table="t", plan=plan, **limit)
        else:
            src = sources.SqlSource(f"duckdb:///{args['path']}", ["v"], table="t", plan=plan,
                                    **limit)
        start = time.perf_counter()
        syn = ps.IntervalSynopsis.build(src, domain=H_DOMAIN, epsilon=1, rng=ps.Rng(seed=1))
        out["segments"] = len(syn)
        out["answer"] = float(syn.count(0, H_DOMAIN[1] // 2))
    elif name == "huge_sort":
        src = sources.files(args["path"], ["v"], engine="duckdb", plan="sort",
                            temp_directory=args["spill_dir"])
        start = time.perf_counter()
        syn = ps.IntervalSynopsis.build(src, domain=HUGE_DOMAIN, epsilon=1, rng=ps.Rng(seed=1))
        out["segments"] = len(syn)
        out["answer"] = float(syn.count(0, HUGE_DOMAIN[1] // 2))
    elif name == "highcard_numpy":
        where = args.get("source", "duckdb")
        if where == "parquet":
            import pyarrow.parquet as pq

            values = pq.read_table(args["path"], columns=["v"]).column("v").to_numpy()
        elif where == "postgresql":
            values = pg_column(args["url"])
        else:
            import duckdb

            con = duckdb.connect(args["path"], read_only=True)
            values = con.execute("SELECT v FROM t").fetchnumpy()["v"]
            con.close()
        syn = ps.IntervalSynopsis.build(values, domain=H_DOMAIN, epsilon=1, rng=ps.Rng(seed=1))
        out["segments"] = len(syn)
        out["answer"] = float(syn.count(0, H_DOMAIN[1] // 2))
    elif name.startswith("rect_"):
        sampler = PeakRss()
        box = ([0, 0], [H_DOMAIN[1] // 2, H_DOMAIN[1] // 3])
        if name == "rect_numpy":
            import duckdb

            con = duckdb.connect(args["path"], read_only=True)
            cols = con.execute("SELECT x, y FROM t").fetchnumpy()
            con.close()
            points = np.column_stack([cols.pop("x"), cols.pop("y")])
        elif name == "rect_parquet":
            points = sources.files(args["parquet"], ["x", "y"], engine="duckdb",
                                   plan=args["plan"])
        else:
            points = sources.SqlSource(f"duckdb:///{args['path']}", ["x", "y"], table="t",
                                       plan=args["plan"])
        syn = ps.RectangleSynopsis.build(points, domain=[H_DOMAIN] * 2, epsilon=1,
                                         rng=ps.Rng(seed=1))
        out["cells"] = syn.num_nodes
        out["answer"] = float(syn.count(*box))
        peak = sampler.stop()
        out["anon"], out["file"] = peak["RssAnon"], peak["RssFile"]
    elif name in ("weighted", "repeated"):
        gen = np.random.default_rng(1)
        values = gen.integers(0, 2**40, args["distinct"])
        counts = gen.geometric(1.0 / args["mean"], args["distinct"])
        start = time.perf_counter()
        if name == "weighted":
            syn = ps.IntervalSynopsis.build(values, counts=counts, domain=(0, 2**40 - 1),
                                            epsilon=1)
        else:
            syn = ps.IntervalSynopsis.build(np.repeat(values, counts), domain=(0, 2**40 - 1),
                                            epsilon=1)
        out["segments"] = len(syn)
        out["items"] = int(counts.sum())
    else:
        raise SystemExit(f"unknown task {name}")
    out["seconds"] = time.perf_counter() - start
    return out


def pg_column(url):
    """Column v of table t as int64 numpy, by binary COPY (no Python object per value)."""
    import numpy as np
    import psycopg

    buf = bytearray()
    with psycopg.connect(url) as con, con.cursor() as cur:
        with cur.copy("COPY (SELECT v::int8 FROM t) TO STDOUT (FORMAT BINARY)") as copy:
            for block in copy:          # one message per row: appended, never listed
                buf += block
    # 19-byte header, rows of (int16 1, int32 8, int64 value), trailer int16 -1
    rows = np.frombuffer(buf, dtype=[("n", ">i2"), ("l", ">i4"), ("v", ">i8")],
                         offset=19, count=(len(buf) - 21) // 14)
    return rows["v"].astype(np.int64)


def _tree_rss(roots):
    """``(anon, file)`` bytes resident in the processes ``roots`` and all their
    descendants (shared pages counted once per process: an upper bound)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    anon = file = 0
    todo, seen = list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("RssAnon:"):
                        anon += int(line.split()[1]) * 1024
                    elif line.startswith(("RssFile:", "RssShmem:")):
                        file += int(line.split()[1]) * 1024
        except OSError:
            pass
    return anon, file


def measure(name, args):
    """Run ``task`` in a grandchild; its peak RSS from RUSAGE_CHILDREN (our one child), and
    the peak of the whole process tree (the task, its children and ``args["server_pid"]``'s
    tree, e.g. a PostgreSQL server) sampled every 20 ms, anonymous and file-backed."""
    import threading

    proc = subprocess.Popen([sys.executable, HERE, "--task", name, json.dumps(args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    roots = [proc.pid] + ([args["server_pid"]] if args.get("server_pid") else [])
    peak = {"tree": 0, "anon": 0, "file": 0, "disk": 0}
    done = threading.Event()

    def sample():
        ticks = 0
        while not done.is_set():
            anon, file = _tree_rss(roots)
            if anon + file > peak["tree"]:
                peak.update(tree=anon + file, anon=anon, file=file)
            if args.get("spill_dir") and ticks % 25 == 0:      # every 0.5 s
                peak["disk"] = max(peak["disk"], _disk_used(args["spill_dir"]))
            ticks += 1
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    done.set()
    sampler.join()
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if proc.returncode != 0:
        return {"error": stderr.strip().splitlines()[-1] if stderr else "failed"}
    result = json.loads(stdout.strip().splitlines()[-1])
    result["rss"] = rss
    result["tree_rss"], result["tree_anon"], result["tree_file"] = \
        peak["tree"], peak["anon"], peak["file"]
    if args.get("spill_dir"):
        result["spill_disk"] = peak["disk"]
    return result


def _disk_used(directory):
    """Bytes of disk the files under ``directory`` take (blocks allocated), now."""
    total = 0
    for root, _dirs, names in os.walk(directory):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_blocks * 512
            except OSError:
                pass
    return total


def run(name, **args):
    proc = subprocess.run([sys.executable, HERE, "--measure", name, json.dumps(args)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr or "failed").strip().splitlines()[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ report

def row(label, result, floor=None, target=None):
    if "error" in result:
        print(f"  {label:<44} error: {result['error']}")
        return
    ratio = f"{result['seconds'] / floor:6.2f}x" if floor else "       "
    rss = f"{result['rss'] / GIB:6.2f} GiB"
    if "anon" in result:
        rss += f" (anon {result['anon'] / GIB:.2f}, file {result['file'] / GIB:.2f})"
    if "worker_rss" in result:
        rss += " (workers " + ", ".join(f"{w / GIB:.2f}" for w in result["worker_rss"]) + " GiB)"
    if "tree_rss" in result and result.get("tree_rss"):
        rss += (f" (tree {result['tree_rss'] / GIB:.2f} GiB: anon {result['tree_anon'] / 2**20:.0f}"
                f" + file {result['tree_file'] / 2**20:.0f} MiB)")
    extra = target or ""
    print(f"  {label:<44} {result['seconds']:8.1f} s {ratio} {rss}  {extra}")


def pg_cluster():
    """A started throwaway PostgreSQL cluster (tests/pg_cluster.py), or None without one."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests"))
    try:
        from pg_cluster import Cluster, postgres_bin
    except ImportError:
        return None
    finally:
        sys.path.pop(0)
    if postgres_bin() is None:
        return None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None
    cluster = Cluster(port=54339)
    try:
        return cluster.start()
    except BaseException:
        cluster.stop()
        raise


def highcard(work, sizes, scale, where, memory_limit, plans=("auto", "sort", "group")):
    """The high-cardinality table: per size and source, the floor (fetch the column into
    numpy, build in memory) and every plan, with the whole process tree's peak RSS."""
    print("\n## About as many distinct values as rows, 1-column build "
          f"(memory_limit {memory_limit or 'default'}); same seed, so every plan prints the "
          "same answer; RSS: the task's own peak, and the process tree's (with the "
          "PostgreSQL server) sampled every 20 ms")
    limit = {"memory_limit": memory_limit} if memory_limit else {}
    for rows in sizes:
        rows //= scale
        path = os.path.join(work, f"h{rows}.duckdb")
        t = time.perf_counter()
        make_duckdb(path, rows, column="v", domain=H_DOMAIN)
        print(f"  {rows:,} rows (table made in {time.perf_counter() - t:.0f} s)")
        for source in where:
            cluster, args = None, {"path": path, "source": source}
            if source == "parquet":
                import duckdb

                args["path"] = os.path.join(work, f"h{rows}.parquet")
                con = duckdb.connect(path, read_only=True)
                con.execute(f"COPY t TO '{args['path']}' (FORMAT PARQUET)")
                con.close()
            elif source == "postgresql":
                cluster = pg_cluster()
                if cluster is None:
                    print("  postgresql: not installed, skipped")
                    continue
                import psycopg

                with psycopg.connect(cluster.url, autocommit=True) as con:
                    con.execute("CREATE TABLE t (v int8)")
                    con.execute("INSERT INTO t SELECT (hashint8(i)::int8 & 2147483647) "
                                f"% 1000000007 FROM generate_series(1, {rows}) i")
                    con.execute("ANALYZE t")
                args = {"url": cluster.reader("t"), "source": source,
                        "server_pid": int(open(os.path.join(cluster.data,
                                                            "postmaster.pid")).readline())}
            try:
                floor = run("highcard_numpy", **args)
                row(f"{source}: fetch the column into numpy + build [floor]", floor)
                for plan in plans:
                    result = run(f"highcard_{plan}", **args, **limit)
                    same = ("" if "error" in result or "error" in floor else
                            "same release" if result["answer"] == floor["answer"] else
                            "RELEASE DIFFERS")
                    row(f"{source}: plan={plan}", result, floor.get("seconds"),
                        ("target <= 1.5x, RSS <= 1 GiB; " if plan == "sort" else "") + same)
            finally:
                if cluster is not None:
                    cluster.stop()
                if source == "parquet":
                    os.remove(args["path"])
        os.remove(path)


def huge(work, sizes, scale):
    """10^9 rows of about as many distinct values, one Parquet file, the sort plan alone:
    time, the process tree's peak RSS and the spill's peak disk use (no floor: fetching
    10^9 values into numpy needs 8 GB before the build starts)."""
    import duckdb

    print("\n## Parquet, about as many distinct values as rows, sort plan, default "
          "memory_limit; RSS: the process tree's peak; disk: the spill directory's peak")
    for rows in sizes:
        rows //= scale
        path = os.path.join(work, f"huge{rows}.parquet")
        spill = os.path.join(work, f"spill{rows}")
        os.makedirs(spill, exist_ok=True)
        t = time.perf_counter()
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        con.execute(f"COPY (SELECT (hash(i) >> 1)::BIGINT AS v FROM range({rows}) t(i)) "
                    f"TO '{path}' (FORMAT PARQUET)")
        con.close()
        print(f"  {rows:,} rows ({os.path.getsize(path) / GIB:.1f} GiB of Parquet made in "
              f"{time.perf_counter() - t:.0f} s)")
        try:
            result = run("huge_sort", path=path, spill_dir=spill)
            row("parquet: plan=sort", result, None, "target RSS <= 1.5 GiB")
            if "spill_disk" in result:
                print(f"  spill directory's peak disk use: {result['spill_disk'] / GIB:.1f} GiB; "
                      f"left behind: {_disk_used(spill)} bytes")
        finally:
            os.remove(path)
            shutil.rmtree(spill, ignore_errors=True)


def parse_sizes(text):
    return [int(float(t)) for t in text.split(",") if t]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parquet-rows", default="1e8")
    p.add_argument("--csv-rows", default="1e7")
    p.add_argument("--pushdown", default="1e7,1e8,1e9", help="DuckDB table sizes")
    p.add_argument("--highcard", default="1e7,1e8",
                   help="DuckDB table sizes, about as many distinct values as rows")
    p.add_argument("--highcard-rect", default="1e7",
                   help="DuckDB table sizes of the 2-axis rectangles, both axes about as "
                        "many distinct values as rows")
    p.add_argument("--highcard-sources", default="duckdb,parquet,postgresql",
                   help="comma list of the high-cardinality sources: duckdb,parquet,postgresql "
                        "(postgresql only where its binaries are installed)")
    p.add_argument("--highcard-plans", default="auto,sort,group",
                   help="comma list of the plans measured on the high-cardinality sources")
    p.add_argument("--memory-limit", default=None,
                   help="memory_limit of the high-cardinality builds (default: the package's)")
    p.add_argument("--huge", default="",
                   help="Parquet sizes for the 10^9-row run (sort plan only; off by default)")
    p.add_argument("--skip", default="",
                   help="comma list of: weighted,parquet,dask,pushdown,highcard,highcard_rect,"
                        "csv")
    p.add_argument("--distinct", default="1e6", help="distinct values of the weighted input")
    p.add_argument("--quick", action="store_true", help="10x smaller everywhere")
    p.add_argument("--workdir", help="where to generate data (default: a temporary directory)")
    p.add_argument("--task")
    p.add_argument("--measure")
    p.add_argument("args", nargs="?")
    a = p.parse_args()
    if a.task:
        print(json.dumps(task(a.task, json.loads(a.args))))
        return
    if a.measure:
        print(json.dumps(measure(a.measure, json.loads(a.args))))
        return
    skip = set(a.skip.split(","))
    scale = 10 if a.quick else 1
    work = tempfile.mkdtemp(prefix="pydp-bench-", dir=a.workdir)
    print(f"# bench_scale: data under {work} (removed at the end); {os.cpu_count()} cores")
    try:
        if "weighted" not in skip:
            distinct, mean = parse_sizes(a.distinct)[0] // scale, 100
            print(f"\n## weighted input: {distinct:,} distinct values, geometric counts of mean "
                  f"{mean} (~{distinct * mean:,} items), IntervalSynopsis, eps = 1")
            rep = run("repeated", distinct=distinct, mean=mean)
            row("build(np.repeat(v, c))  [floor]", rep)
            row("build(v, counts=c)", run("weighted", distinct=distinct, mean=mean),
                rep.get("seconds"))
        if "parquet" not in skip:
            rows = parse_sizes(a.parquet_rows)[0] // scale
            path = os.path.join(work, "parquet")
            t = time.perf_counter()
            make_parquet(path, rows)
            print(f"\n## Parquet: {rows:,} rows x 2 int64 columns in 4 files "
                  f"(generated in {time.perf_counter() - t:.0f} s)")
            floor = run("duckdb_groupby", glob=f"{path}/*.parquet", column="a")
            row("DuckDB SELECT a, count(*) GROUP BY a [floor]", floor)
            f = floor.get("seconds")
            row("1-column build (local engine)", run("parquet_1", path=path), f, "target <= 1.5x")
            row("1-column build (--engine duckdb)", run("parquet_1", path=path, engine="duckdb"), f)
            two = run("parquet_2", path=path)
            row("2-column build (local engine)", two, None, "target <= 60 s, RSS <= 2 GiB")
            # the grid's seal counts read the rows over partitions with every end split off
            row("2-column build, seal_share=0 [floor of the seal counts]",
                run("parquet_2", path=path, seal_share=0))
            if "dask" not in skip:
                single = run("parquet_1", path=path)
                row("1-column build, one process [floor]", single)
                for shards in (1, 2):
                    row(f"1-column, dask LocalCluster 2 workers, shards={shards}",
                        run("dask_1", path=path, shards=shards), single.get("seconds"))
            shutil.rmtree(path, ignore_errors=True)
        if "pushdown" not in skip:
            print("\n## DuckDB table generated with range(): 1-column build by pushdown "
                  "(DuckDB memory_limit 400MB)")
            for rows in parse_sizes(a.pushdown):
                rows //= scale
                path = os.path.join(work, f"t{rows}.duckdb")
                t = time.perf_counter()
                make_duckdb(path, rows)
                gen = time.perf_counter() - t
                row(f"{rows:,} rows (table made in {gen:.0f} s)", run("pushdown", path=path),
                    None, "target RSS <= 1 GiB, flat in n")
                os.remove(path)
        if "highcard" not in skip:
            highcard(work, parse_sizes(a.highcard), scale, a.highcard_sources.split(","),
                     a.memory_limit, a.highcard_plans.split(","))
        if a.huge:
            huge(work, parse_sizes(a.huge), scale)
        if "highcard_rect" not in skip:
            print("\n## Rectangles, 2 high-cardinality axes: RectangleSynopsis.build (default "
                  "--memory-limit); same seed, so every path prints the same answer")
            for rows in parse_sizes(a.highcard_rect):
                rows //= scale
                path = os.path.join(work, f"r{rows}.duckdb")
                parquet = os.path.join(work, f"r{rows}.parquet")
                t = time.perf_counter()
                make_rect_duckdb(path, rows, parquet)
                print(f"  {rows:,} rows x 2 columns (table and Parquet made in "
                      f"{time.perf_counter() - t:.0f} s)")
                floor = run("rect_numpy", path=path)
                row("fetch both columns into numpy + build [floor]", floor)
                for label, name, plan in (("DuckDB plan=auto", "rect_duckdb", "auto"),
                                          ("DuckDB plan=sort", "rect_duckdb", "sort"),
                                          ("DuckDB plan=group", "rect_duckdb", "group"),
                                          ("Parquet via DuckDB plan=auto", "rect_parquet",
                                           "auto")):
                    result = run(name, path=path, parquet=parquet, plan=plan)
                    same = ("" if "error" in result or "error" in floor else
                            "same release" if result["answer"] == floor["answer"] else
                            "RELEASE DIFFERS")
                    row(label, result, floor.get("seconds"), "target RSS <= 1.5 GiB; " + same)
                os.remove(path)
                os.remove(parquet)
        if "csv" not in skip:
            rows = parse_sizes(a.csv_rows)[0] // scale
            path = os.path.join(work, "data.csv")
            make_csv(path, rows)
            print(f"\n## CSV: {rows:,} rows x 2 integer columns "
                  f"({os.path.getsize(path) / 2**20:.0f} MiB)")
            floor = run("pandas_read_csv", path=path)
            row("pandas.read_csv(usecols=[a, b]) [floor]", floor)
            row("2-column build", run("csv_2", path=path), floor.get("seconds"),
                "target <= 3x, RSS <= 1 GiB")
            row("1-column build", run("csv_1", path=path), floor.get("seconds"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
