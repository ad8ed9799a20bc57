"""Accuracy, build time, memory and size of RectangleSynopsis against grid peers.

For every data set and epsilon: RMSE and max |error| over random rectangles
(uniform over the domain and data-centred, 50/50), build time, peak RSS
growth during the build and node/cell count, for

* ``ours``  -- ``RectangleSynopsis`` with the default options (or ``--ours``'),
* ``dnrr``  -- ``config="dnrr"`` (DNRR section 3.3 as written),
* ``quadtree`` -- ``structure="quadtree"`` (2-D only; what ``workload="short"`` takes
  at epsilon >= 1/2),
* ``UG``, ``AG`` -- Qardaji, Yang & Li, ICDE 2013 (benchmarks/peers/peers_rectangles.py),
* ``flat``  -- one noisy count per cell of an equal-width grid (64 per axis in
  2-D, 16 in 3-D).

The last column is each method's RMSE divided by AG's (AG is the target).
Usage::

    python benchmarks/bench_rectangles.py            # default: about 10 s (measured 9 s)
    python benchmarks/bench_rectangles.py --quick    # smoke run
    python benchmarks/bench_rectangles.py --full     # adds n = 10^6 synthetic and flights 10^6
    python benchmarks/bench_rectangles.py --only "clustered 3-D" --ours coarse_share=0.5 --reps 6

``--reps R`` builds ours R times per row (seeds 11, 12, ...) and pools the
errors of all builds (one build moves a row by up to +-20%); the peers are
built once.  ``--ours key=value,...`` passes build options to ours.

Seeds make runs reproducible (benchmarks only).  Nothing is asserted.
"""
import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE / "peers"))          # the re-implemented peers
if __name__ == "__main__":
    # run as a script from a checkout: its package first.  Not when a test imports this
    # module: the suite's dask workers inherit sys.path, and a clean checkout's source
    # tree has no compiled core (they must import the installed package).
    sys.path.insert(1, str(HERE.parent))

import pydp_synopsis.rectangles as rect  # noqa: E402
from peers_rectangles import AdaptiveGrid, FlatHistogram, UniformGrid  # noqa: E402
from pydp_synopsis import Rng  # noqa: E402
from workloads import data_file, parse_options, random_rectangles, rectangle_counts  # noqa: E402



def _rss_mib():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _clustered(gen, n, c):
    """n points in 20 Gaussian clusters of random widths over [0, 2^32)^c (int64)."""
    centres = gen.uniform(2**28, 2**32 - 2**28, (20, c))
    widths = gen.uniform(2**20, 2**26, (20, 1))
    lab = gen.integers(0, 20, n)
    pts = centres[lab] + gen.normal(0, 1, (n, c)) * widths[lab]
    return np.clip(pts, 0, 2**32 - 1).astype(np.int64)


def datasets(size):
    zc = np.load(data_file("zipcodes.npz"))
    zip_pts = np.stack([zc["latitude_e6"], zc["longitude_e6"]], 1).astype(np.int64)
    zip_dom = [(-90_000_000, 90_000_000), (-180_000_000, 180_000_000)]
    fl = np.load(data_file("flights-2001h1.npz"))
    gen = np.random.default_rng(7)
    n_fl = min({"quick": 100_000, "default": 300_000, "full": 1_000_000}[size],
               fl["minute"].size)                 # all of a smaller file (the tests' sample)
    pick = gen.choice(fl["minute"].size, n_fl, replace=False)
    minute, dist, delay = (fl[k][pick].astype(np.int64) for k in ("minute", "distance", "delay"))
    out = [("zipcodes 2-D", zip_pts, zip_dom)]
    out.append((f"flights (min,dist) n={n_fl:.0e}", np.stack([minute, dist], 1),
                [(0, 2**20 - 1), (0, 2**13 - 1)]))
    out.append((f"flights (min,dist,delay) n={n_fl:.0e}", np.stack([minute, dist, delay + 2048], 1),
                [(0, 2**20 - 1), (0, 2**13 - 1), (0, 2**13 - 1)]))
    sizes = {"quick": [10**4, 10**5], "default": [10**4, 10**5], "full": [10**4, 10**5, 10**6]}[size]
    for n in sizes:
        out.append((f"clustered 2-D n={n:.0e}", _clustered(gen, n, 2), [(0, 2**32 - 1)] * 2))
    for n in sizes[1:]:
        # the same in 3-D, from its own generator (the 2-D sets above stay as they were)
        out.append((f"clustered 3-D n={n:.0e}", _clustered(np.random.default_rng(5 + n), n, 3),
                    [(0, 2**32 - 1)] * 3))
    return out


def _measure(name, fn, answer, lo, hi, true, reps=1):
    """RMSE and max |error| pooled over ``reps`` builds; build seconds, RSS growth
    and size of the first."""
    sq, mx = 0.0, 0.0
    for r in range(reps):
        base = _rss_mib()
        t0 = time.perf_counter()
        obj = fn(r)
        if r == 0:
            build = time.perf_counter() - t0
            rss = max(_rss_mib(), base) - base
            size = obj.num_nodes if hasattr(obj, "num_nodes") else obj.num_cells
        err = answer(obj, lo, hi) - true
        sq += float(np.sum(err ** 2))
        mx = max(mx, float(np.abs(err).max()))
    return name, float(np.sqrt(sq / (reps * true.size))), mx, build, rss, size


def run(size, queries, only=None, tune=False, ours_opts=None, reps=1):
    print(f"# {queries} rectangles per row (half uniform, half data-centred); RSS = growth in MiB")
    for label, pts, dom in datasets(size):
        if only and only not in label:
            continue
        c = pts.shape[1]
        lo1, hi1 = random_rectangles(queries // 2, dom, kind="uniform", seed=1)
        lo2, hi2 = random_rectangles(queries - queries // 2, dom, kind="data", points=pts, seed=2)
        lo = np.vstack([lo1.astype(np.int64), lo2.astype(np.int64)])
        hi = np.vstack([hi1.astype(np.int64), hi2.astype(np.int64)])
        true = rectangle_counts(pts, lo, hi).astype(np.float64)
        for eps in (0.1, 1.0):
            rng = Rng(seed=11)
            ours = lambda o, a, b: o.count_many(a, b)  # noqa: E731
            peer = lambda o, a, b: o.answer(a, b)      # noqa: E731
            # build r of ours: the first from the row's generator (as before --reps),
            # the others from seeds 12, 13, ...
            mine = lambda r: rng if r == 0 else Rng(seed=11 + r)  # noqa: E731
            methods = [
                ("ours", lambda r: rect.RectangleSynopsis.build(pts, domain=dom, epsilon=eps,
                                                                rng=mine(r), **(ours_opts or {})),
                 ours, reps),
                ("dnrr", lambda r: rect.RectangleSynopsis.build(pts, domain=dom, epsilon=eps,
                                                                config="dnrr", rng=rng), ours, 1),
                ("UG", lambda r: UniformGrid(pts, dom, eps, seed=3), peer, 1),
                ("AG", lambda r: AdaptiveGrid(pts, dom, eps, seed=4), peer, 1),
                ("flat", lambda r: FlatHistogram(pts, dom, eps, 64 if c == 2 else 16, seed=5),
                 peer, 1),
            ]
            if c == 2 and not ours_opts:
                methods.insert(1, ("quadtree", lambda r: rect.RectangleSynopsis.build(
                    pts, domain=dom, epsilon=eps, rng=Rng(seed=21 + r), structure="quadtree"),
                    ours, reps))
            if tune:
                methods = [(f"k={k} f={f} p={p}",
                            (lambda r, k=k, f=f, p=p: rect.RectangleSynopsis.build(
                                pts, domain=dom, epsilon=eps, rng=mine(r), fanout=k,
                                final_share=f, prune=p)), ours, reps)
                           for k in (4, 8, 16) for f in (0.5, 0.9) for p in (2.0, 3.0, 4.0)]
                methods.append(("AG", lambda r: AdaptiveGrid(pts, dom, eps, seed=4), peer, 1))
            rows = [_measure(nm, fn, ans, lo, hi, true, k) for nm, fn, ans, k in methods]
            ag = next(r[1] for r in rows if r[0] == "AG")
            print(f"\n## {label}, n={len(pts)}, eps={eps}")
            print(f"{'method':<16}{'RMSE':>10}{'max err':>11}{'build s':>9}{'RSS MiB':>9}"
                  f"{'nodes':>11}{'RMSE/AG':>9}")
            for nm, rmse, mx, b, rss, sz in rows:
                print(f"{nm:<16}{rmse:>10.1f}{mx:>11.1f}{b:>9.2f}{rss:>9.0f}{sz:>11}{rmse / ag:>9.2f}")
            sys.stdout.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true")
    g.add_argument("--full", action="store_true")
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--only", default=None, help="substring of the data set label")
    ap.add_argument("--tune", action="store_true", help="sweep fanout/final_share/prune instead")
    ap.add_argument("--ours", default="", help="build options for ours: key=value,...")
    ap.add_argument("--reps", type=int, default=1, help="builds of ours per row (errors pooled)")
    a = ap.parse_args(argv)
    if a.reps < 1:
        ap.error(f"--reps must be >= 1, got {a.reps}")
    size = "quick" if a.quick else "full" if a.full else "default"
    q = a.queries or (2000 if a.quick else 10_000)
    opts = parse_options(a.ours)
    if opts or a.reps > 1:
        print(f"# ours: {a.reps} build(s) per row, errors pooled" + (f", options {opts}" if opts else ""))
    run(size, q, a.only, a.tune, opts, a.reps)
    print(f"\npeak RSS of the whole run: {_peak_mib():.0f} MiB")


if __name__ == "__main__":
    main()
