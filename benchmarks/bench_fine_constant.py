"""The adaptive grid's fine constant on real 2-D data: ``fine_constant="auto"`` against AG's 5.

``RectangleSynopsis.build(..., fine_constant=...)`` sets kappa_2 in the fine
grids' size ``ceil((v eps_fine / kappa_2)^(2/(c+2)))``.  The 2-D default
"auto" lowers it from AG's 5 towards 2 when the released seal counts say most
points of some axis lie on segment ends (heavy values) and the released coarse
counts are spread over many coarse cells (``pydp_synopsis/rectangles/grid.py``,
``fine_constant_of``).  This script measures the rule on every 2-D pair of the
real data sets here: ZIP codes (latitude, longitude) and five pairs of the
flights' columns (a random sample of ``--rows`` flights; minutes since
2001-01-01, miles, delay + 1116 minutes, origin and destination airport
indices).

Workloads as ``bench_accuracy.py`` (its ``make_workloads``): data-centred
boxes, small boxes (0.1-1% of the points) and uniform boxes.  Each cell:
RMSE with "auto" / RMSE with 5 = ratio, pooled over ``--reps`` builds (the
same seeds for both, so the partitions and coarse counts are the same draw).
``rho`` and ``top`` are the two released quantities the rule reads (of the
last build; ``rho`` with the seal counts less 6 noise scales), ``kappa`` the
constant it chose.

Usage::

    python benchmarks/bench_fine_constant.py            # 10^6 flights, ~2 minutes
    python benchmarks/bench_fine_constant.py --quick    # 10^5 flights, 1 build

Seeds make runs reproducible (benchmarks only).  Nothing is asserted.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if __name__ == "__main__":
    sys.path.insert(1, str(HERE.parent))       # a checkout's package first (as the others)

from bench_accuracy import KINDS, geomean, make_workloads  # noqa: E402
from pydp_synopsis import Rng  # noqa: E402
from pydp_synopsis.rectangles import RectangleSynopsis  # noqa: E402
from pydp_synopsis.rectangles.grid import fine_rule_inputs  # noqa: E402
from workloads import data_file  # noqa: E402


def pairs(rows, seed=3):
    """``[(name, points, domain)]``: ZIP codes and five pairs of flight columns."""
    z = np.load(data_file("zipcodes.npz"))
    out = [("zip (lat, lon)", np.stack([z["latitude_e6"], z["longitude_e6"]], 1).astype(np.int64),
            [(-90_000_000, 90_000_000), (-180_000_000, 180_000_000)])]
    f = np.load(data_file("flights-2001h1.npz"))
    pick = np.random.default_rng(seed).choice(f["minute"].size, min(rows, f["minute"].size),
                                              replace=False)
    col = {k: f[k][pick].astype(np.int64) for k in ("minute", "distance", "delay", "origin",
                                                     "destination")}
    col["delay"] = col["delay"] + 1116
    dom = {"minute": (0, 2**18 - 1), "distance": (0, 2**13 - 1), "delay": (0, 2**12 - 1),
           "origin": (0, 4095), "destination": (0, 4095)}
    for a, b in (("minute", "distance"), ("minute", "delay"), ("distance", "delay"),
                 ("origin", "destination"), ("minute", "origin")):
        out.append((f"flights ({a}, {b})", np.stack([col[a], col[b]], 1), [dom[a], dom[b]]))
    return out


def released_rule_inputs(syn):
    """``(rho, top)`` of one build, read from its released counts by the rule's own code."""
    g = syn._mechanism
    return fine_rule_inputs(g.seal_counts, g.coarse_counts, syn.dims / syn.epsilon_seal)


def run(rows, queries, reps, epsilons=(0.1, 1.0)):
    print(f"# {queries} boxes per workload x {reps} builds; cell = RMSE auto / RMSE 5 = ratio")
    print("\n| data | eps | rho | top | kappa | " + " | ".join(KINDS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(KINDS))
    ratios = []
    for name, pts, dom in pairs(rows):
        wl = make_workloads(2, pts, dom, queries, seed=7)
        for eps in epsilons:
            sq = {kappa: {k: 0.0 for k in KINDS} for kappa in ("auto", 5)}
            for kappa in sq:
                for r in range(reps):
                    syn = RectangleSynopsis.build(pts, domain=dom, epsilon=eps,
                                                  rng=Rng(seed=100 + r), fine_constant=kappa)
                    for kind, (lo, hi, truth) in wl.items():
                        sq[kappa][kind] += float(np.sum((syn.count_many(lo, hi) - truth) ** 2))
                    if kappa == "auto":
                        chosen, (rho, top) = syn.fine_constant, released_rule_inputs(syn)
            cells = []
            for kind in KINDS:
                a, b = (np.sqrt(sq[k][kind] / (reps * queries)) for k in ("auto", 5))
                ratios.append(a / b)
                cells.append(f"{a:.0f} / {b:.0f} = {a / b:.2f}")
            print(f"| {name} | {eps} | {rho:.2f} | {top:.2f} | {chosen:.2f} | "
                  + " | ".join(cells) + " |", flush=True)
    arr = np.array(ratios)
    print(f"\ngeomean ratio {geomean(arr):.3f}, best {arr.min():.2f}, "
          f"worst {arr.max():.2f} over {arr.size} cells")
    return arr


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^5 flights, 1 build, 300 boxes")
    ap.add_argument("--rows", type=int, default=None, help="flights sampled (default 10^6)")
    ap.add_argument("--queries", type=int, default=None, help="boxes per workload (600)")
    ap.add_argument("--reps", type=int, default=None, help="builds per setting (3)")
    a = ap.parse_args(argv)
    for name in ("rows", "queries", "reps"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            ap.error(f"--{name} must be >= 1, got {getattr(a, name)}")
    t0 = time.perf_counter()
    out = run(a.rows or (100_000 if a.quick else 1_000_000), a.queries or (300 if a.quick else 600),
              a.reps or (1 if a.quick else 3))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return out


if __name__ == "__main__":
    main()
