"""Category columns of SQL sources: rows streamed and mapped here, or GROUP BY in the database.

A table of ``n`` rows with a text column of 52 distinct values (50 public levels
plus two outside them, counted under ``other=``) and a date column, in SQLite and in
DuckDB (generated inside each database).  For each engine and size:

* ``1-D``: ``LevelHistogram.build(SqlSource(..., units=[Column.category(...)]))``;
* ``category x date``: ``RectangleSynopsis.build`` over (carrier, day), the adaptive grid;

each with ``plan="sort"`` (the rows streamed, every string mapped to its code here:
the path before the pushdown) and ``plan="group"`` (``SELECT carrier[, day], count(*)
... GROUP BY``: only the distinct tuples cross the connection).  Every build runs in a
child process; its peak RSS is read by that child's parent from
``getrusage(RUSAGE_CHILDREN)`` (as benchmarks/bench_scale.py).  ``same`` says whether
the two plans released the same numbers under one seed (they must).

    PYTHONPATH=. python benchmarks/bench_category_pushdown.py                  # 10^5 rows
    PYTHONPATH=. python benchmarks/bench_category_pushdown.py --rows 1e6,1e7   # the full run

The data are written under a temporary directory and removed.  Timings on a shared
machine are noisy: take ratios.  Seeds are for benchmarks only.  Nothing is asserted.
"""
import argparse
import hashlib
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
_ROOT = os.path.dirname(os.path.dirname(HERE))
if any(n.startswith("_native") for n in os.listdir(os.path.join(_ROOT, "pydp_synopsis"))):
    sys.path.insert(0, _ROOT)       # a built checkout's package first; else the installed one

import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis import sources  # noqa: E402

MIB = 1024 ** 2
LEVELS = [f"L{i:02d}" for i in range(50)]
DOMAIN = [(LEVELS[0], "other"), ("2001-01-01", "2001-12-31")]


def units(dims):
    cols = [ps.Column.category(LEVELS, other="other", name="carrier"), ps.Column.date("day")]
    return cols[:dims]


# ------------------------------------------------------------------ data
def make_duckdb(path, rows):
    import duckdb

    con = duckdb.connect(path)
    con.execute(f"CREATE TABLE t AS SELECT 'L' || lpad(CAST(hash(i) % 52 AS VARCHAR), 2, '0') "
                f"AS carrier, DATE '2001-01-01' + CAST(hash(i + 7919) % 365 AS INTEGER) AS day "
                f"FROM range({int(rows)}) AS r(i)")
    con.close()


def make_sqlite(path, rows):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (carrier TEXT, day TEXT)")
    con.execute(f"WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r "
                f"WHERE i < {int(rows) - 1}) INSERT INTO t SELECT printf('L%02d', abs(random()) "
                f"% 52), date('2001-01-01', '+' || (abs(random()) % 365) || ' days') FROM r")
    con.commit()
    con.close()


# ------------------------------------------------------------------ one build
def task(args):
    url, dims, plan = args["url"], args["dims"], args["plan"]
    src = sources.SqlSource(url, ["carrier", "day"][:dims], table="t", units=units(dims),
                            plan=plan)
    t0 = time.perf_counter()
    if dims == 1:
        syn = ps.LevelHistogram.build(src, levels=units(1)[0], epsilon=1.0, rng=ps.Rng(seed=1))
        released = syn.released.tobytes()
    else:
        syn = ps.RectangleSynopsis.build(src, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=1))
        lo = [[lv, "2001-01-01"] for lv in LEVELS]
        hi = [[lv, "2001-06-30"] for lv in LEVELS]
        released = syn.count_many(lo, hi).tobytes()
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "digest": hashlib.sha256(released).hexdigest()}


def measure(args):
    """The build in a grandchild; its peak RSS from RUSAGE_CHILDREN (our one child)."""
    proc = subprocess.run([sys.executable, HERE, "--task", json.dumps(args)],
                          capture_output=True, text=True)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if proc.returncode != 0:
        return {"error": (proc.stderr or "failed").strip().splitlines()[-1]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["rss"] = rss
    return out


def run_one(args):
    proc = subprocess.run([sys.executable, HERE, "--measure", json.dumps(args)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr or "failed").strip().splitlines()[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(rows_list, engines, workdir=None):
    tmp = tempfile.mkdtemp(prefix="bench-catpush-", dir=workdir)
    try:
        print("| engine | rows | case | streamed s | grouped s | speed-up | streamed RSS MiB "
              "| grouped RSS MiB | same |")
        print("|---|---|---|---|---|---|---|---|---|")
        for engine in engines:
            for rows in rows_list:
                path = os.path.join(tmp, f"t{rows}.{'duckdb' if engine == 'duckdb' else 'db'}")
                (make_duckdb if engine == "duckdb" else make_sqlite)(path, rows)
                for dims, case in ((1, "1-D"), (2, "category x date")):
                    res = {plan: run_one({"url": f"{engine}:///{path}", "dims": dims,
                                          "plan": plan}) for plan in ("sort", "group")}
                    bad = [r["error"] for r in res.values() if "error" in r]
                    if bad:
                        print(f"| {engine} | {rows:.0e} | {case} | error: {bad[0]} |||||")
                        continue
                    s, g = res["sort"], res["group"]
                    print(f"| {engine} | {rows:.0e} | {case} | {s['seconds']:.2f} "
                          f"| {g['seconds']:.2f} | {s['seconds'] / g['seconds']:.1f}x "
                          f"| {s['rss'] / MIB:.0f} | {g['rss'] / MIB:.0f} "
                          f"| {'yes' if s['digest'] == g['digest'] else 'NO'} |", flush=True)
                os.remove(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("--task", "--measure"):
        result = (task if sys.argv[1] == "--task" else measure)(json.loads(sys.argv[2]))
        print(json.dumps(result))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1e5", help="comma-separated sizes (default 1e5)")
    parser.add_argument("--engines", default="sqlite,duckdb")
    parser.add_argument("--workdir", default=None, help="where the temporary tables go")
    a = parser.parse_args()
    main([int(float(t)) for t in a.rows.split(",") if t], a.engines.split(","), a.workdir)
