"""4-ary against binary PrivTree, and the private leaf merge, on short/medium/long ranges.

For every data set x epsilon in {0.1, 1} x query class: the RMSE of
``IntervalSynopsis.build`` with PrivTree of fanout 2 (the default), of fanout
4 (``privtree_fanout=4``), and each with its leaves merged by noisy density
(``privtree_merge=SHARE``), over ``--reps`` seeded builds (>= 10 for the
table) on the same queries, next to the re-implemented peers PrivTree
(peers_privtree.py) and DAWA given the workload (peers_dawa.py, 2^16 cells).
Each ratio to the default comes with a 95% interval (a percentile bootstrap
over the builds: ``RMSE_a / RMSE_b`` of resampled per-build mean squared
errors, the same resample for both methods, which ran on the same seeds).

Query classes (``--queries`` each, 1000 by default), data-centred by rank:
``r`` uniform in ``[0, n)``, ``lo = sorted[r]``, ``hi = sorted[min(r + ceil(f
n), n - 1)]`` with ``f`` = 0.1% (short), 1% (medium), 10% (long) of the data.

Data: the five 1-D sets of bench_accuracy.py (flights minute in ns, distance,
delay; ZIP latitude and longitude) from the shipped files: the flights from
``$PYDP_SYNOPSIS_DATA`` (default ``tests/data``: the 30,000-row sample), the
ZIP codes from the package.

Usage::

    python benchmarks/bench_privtree_fanout.py                 # the table (10 builds)
    python benchmarks/bench_privtree_fanout.py --quick         # smoke test
    python benchmarks/bench_privtree_fanout.py --merge-share 0.5 --no-peers

Seeds make runs reproducible (benchmarks only).  Nothing is asserted.
"""
import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(HERE, "peers"))     # the re-implemented peers
if __name__ == "__main__":
    sys.path.insert(1, os.path.dirname(HERE))        # run from a checkout: its package first

import pydp_synopsis as ps  # noqa: E402
import workloads  # noqa: E402
from peers_dawa import Dawa  # noqa: E402
from peers_privtree import PrivTree  # noqa: E402

__all__ = ["EPSILONS", "CLASSES", "METHODS", "datasets", "queries", "ratio_interval", "run",
           "main"]

EPSILONS = (0.1, 1.0)
#: Query classes: the fraction of the data a query spans (by rank).
CLASSES = (("short", 0.001), ("medium", 0.01), ("long", 0.1))
#: Our methods: name -> build options (the merge share is filled in by --merge-share).
METHODS = ("binary", "4-ary", "binary+merge", "4-ary+merge")
PEERS = ("PrivTree", "DAWA")
SAMPLE = Path(HERE).parent / "tests" / "data"


def datasets(subsample=None, seed=0):
    """``[(name, values, domain), ...]``: the five 1-D sets of bench_accuracy.py."""
    if workloads.data_dir() is None:
        os.environ[workloads.DATA_ENV] = str(SAMPLE)
    fl = np.load(workloads.data_file("flights-2001h1.npz"))
    zc = np.load(workloads.data_file("zipcodes.npz"))
    cols = {k: fl[k].astype(np.int64) for k in ("minute", "distance", "delay")}
    lat = zc["latitude_e6"].astype(np.int64)
    lon = zc["longitude_e6"].astype(np.int64)
    gen = np.random.default_rng(seed)
    if subsample:
        if subsample < cols["minute"].size:
            pick = np.sort(gen.choice(cols["minute"].size, subsample, replace=False))
            cols = {k: v[pick] for k, v in cols.items()}
        if subsample < lat.size:
            pick = np.sort(gen.choice(lat.size, subsample, replace=False))
            lat, lon = lat[pick], lon[pick]
    return [
        ("flights time ns", cols["minute"] * 60_000_000_000, (0, 2**63 - 1)),
        ("flights distance", cols["distance"], (0, 2**13 - 1)),
        ("flights delay", cols["delay"] + 1116, (0, 2**12 - 1)),
        ("zip latitude", lat + 90_000_000, (0, 180_000_000)),
        ("zip longitude", lon + 180_000_000, (0, 360_000_000)),
    ]


def queries(values, frac, q, seed):
    """``(lo, hi, truth)``: ``q`` data-centred queries spanning ``frac`` of the data."""
    s = np.sort(values)
    n = s.size
    r = np.random.default_rng(seed).integers(0, n, q)
    lo, hi = s[r], s[np.minimum(r + max(1, math.ceil(frac * n)), n - 1)]
    truth = np.searchsorted(s, hi, "right") - np.searchsorted(s, lo, "left")
    return lo, hi, truth.astype(np.float64)


def ratio_interval(mse_a, mse_b, reps=2000, seed=0):
    """``(ratio, low, high)``: ``RMSE_a / RMSE_b`` and its 95% percentile bootstrap interval
    over builds (paired: build i of both methods used the same seed)."""
    a, b = np.asarray(mse_a, dtype=np.float64), np.asarray(mse_b, dtype=np.float64)
    ratio = math.sqrt(a.mean() / b.mean()) if b.mean() > 0 else float("inf")
    if a.size < 2:
        return ratio, float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, a.size, (reps, a.size))
    boot = np.sqrt(a[idx].mean(1) / np.maximum(b[idx].mean(1), 1e-300))
    return ratio, float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def _options(method, share):
    opts = {}
    if method.startswith("4-ary"):
        opts["privtree_fanout"] = 4
    if method.endswith("merge"):
        opts["privtree_merge"] = share
    return opts


def _ours(values, domain, eps, wls, reps, method, share):
    """{class: per-build mean squared errors}, and the mean number of segments."""
    mse = {c: [] for c in wls}
    segments = []
    for r in range(reps):
        syn = ps.IntervalSynopsis.build(values, domain=domain, epsilon=eps,
                                        rng=ps.Rng(seed=1000 + r), **_options(method, share))
        segments.append(len(syn))
        for c, (lo, hi, truth) in wls.items():
            mse[c].append(float(np.mean((syn.count_many(lo, hi) - truth) ** 2)))
    return mse, float(np.mean(segments))


def _peers(values, domain, eps, wls, reps, buckets):
    out = {}
    for c, (lo, hi, truth) in wls.items():
        pt, dw = [], []
        dev = None
        for r in range(reps):
            est = PrivTree(values, domain, eps, seed=2000 + r).answer(lo, hi)
            pt.append(float(np.mean((est - truth) ** 2)))
            m = Dawa(values, domain, eps, lo, hi, buckets=buckets, deviations=dev, seed=2000 + r)
            dev = m.deviations
            dw.append(float(np.mean((m.answer(lo, hi) - truth) ** 2)))
        out[c] = {"PrivTree": math.sqrt(np.mean(pt)), "DAWA": math.sqrt(np.mean(dw))}
    return out


def _fmt(x):
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def run(args):
    """Print the table; return ``{(data, eps, class): {column: value}}``."""
    sets = datasets(args.subsample)
    if args.data:
        sets = [s for s in sets if any(w in s[0] for w in args.data.split(","))]
    header = (["data", "eps", "class"] + [f"{m} RMSE" for m in METHODS]
              + ([f"{p} RMSE" for p in PEERS] if args.peers else [])
              + ["4-ary / binary [95%]", "binary+merge / binary [95%]",
                 "4-ary+merge / binary [95%]"])
    print(f"reps={args.reps} queries={args.queries} merge share={args.merge_share} "
          f"n={[s[1].size for s in sets]}")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    rows = {}
    for name, values, domain in sets:
        for eps in args.epsilons:
            wls = {c: queries(values, f, args.queries, seed=7) for c, f in CLASSES}
            mse, segs = {}, {}
            for m in METHODS:
                mse[m], segs[m] = _ours(values, domain, eps, wls, args.reps, m, args.merge_share)
            peers = _peers(values, domain, eps, wls, args.reps, args.peer_buckets) \
                if args.peers else None
            for c, _ in CLASSES:
                rmse = {m: math.sqrt(np.mean(mse[m][c])) for m in METHODS}
                cells = [name, f"{eps:g}", c] + [_fmt(rmse[m]) for m in METHODS]
                row = dict(rmse)
                if peers is not None:
                    cells += [_fmt(peers[c][p]) for p in PEERS]
                    row.update(peers[c])
                for m in METHODS[1:]:
                    r, lo, hi = ratio_interval(mse[m][c], mse["binary"][c])
                    cells.append(f"{r:.2f} [{lo:.2f}, {hi:.2f}]")
                    row[f"{m}/binary"] = (r, lo, hi)
                row["segments"] = segs
                rows[(name, eps, c)] = row
                print("| " + " | ".join(cells) + " |", flush=True)
    print()
    for m in METHODS[1:]:
        for c, _ in CLASSES:
            rs = [rows[k][f"{m}/binary"] for k in rows if k[2] == c]
            geo = math.exp(np.mean([math.log(r[0]) for r in rs]))
            wins = sum(r[2] < 1 for r in rs)
            losses = sum(r[1] > 1 for r in rs)
            print(f"{m} / binary, {c}: geomean {geo:.2f}; interval below 1 on {wins}, "
                  f"above 1 on {losses} of {len(rs)} rows")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=10, help="seeded builds per method (default 10)")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--subsample", type=int, default=None, help="random rows of each set")
    p.add_argument("--merge-share", type=float, default=0.25,
                   help="privtree_merge share of the partition's epsilon (default 0.25)")
    p.add_argument("--no-peers", dest="peers", action="store_false")
    p.add_argument("--peer-buckets", type=int, default=1 << 16, help="DAWA's cells")
    p.add_argument("--data", default=None, help="comma-separated name fragments to keep")
    p.add_argument("--epsilons", type=lambda t: tuple(float(x) for x in t.split(",")),
                   default=EPSILONS, help="comma-separated epsilons (default 0.1,1)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 3000 rows, 3 builds, 100 queries, 1024 DAWA cells")
    args = p.parse_args(argv)
    if args.quick:
        args.subsample, args.reps, args.queries, args.peer_buckets = 3000, 3, 100, 1024
    return run(args)


if __name__ == "__main__":
    main()
