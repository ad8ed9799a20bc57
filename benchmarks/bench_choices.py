"""Which epsilon, which resolution, and when a flat DP histogram is better.

On the bundled ZIP-code latitudes (42,049 rows), random interval queries whose ends
lie on a 0.01-degree grid (so every resolution below answers the same queries
exactly), default interval synopses, several builds:

1. epsilon in {0.1, 0.5, 1, 2, 5} at resolution 1e-6 degree (the data's own):
   median |error|, median per-query std, RMSE;
2. resolution 1e-6, 1e-4, 1e-2 degree at epsilon = 1 (the values divided and
   floored, the domain shrunk with them): the same numbers;
3. against the flat DP histogram a user would build instead (one discrete
   Laplace count of scale 1/epsilon per bucket, epsilon = 1, a query answered
   by summing its buckets): 0.01-degree and 1-degree buckets, for short (at most
   1 degree), medium (1-10) and long (over 10 degrees) queries; for the 1-degree
   histogram only queries aligned to whole degrees, also answered by the
   synopsis at full resolution and by one built on whole degrees.

The histogram is the peer measured in the same run (benchmarks print a floor
or a peer).  Seeds make runs reproducible; nothing is asserted.

Usage::

    PYTHONPATH=. python benchmarks/bench_choices.py          # about a minute
"""
import argparse
import io
import importlib.resources
import time

import numpy as np

import pydp_synopsis as ps

E6 = 1_000_000


def latitudes():
    ref = importlib.resources.files("pydp_synopsis") / "data" / "zipcodes.npz"
    with ref.open("rb") as fh:
        return np.load(io.BytesIO(fh.read()))["latitude_e6"].astype(np.int64)


#: Queries lie between 17 and 72 degrees north (public: where the US is).
REGION = (17, 72)


def queries(q, gen, unit_e6, span=None):
    """Inclusive [lo, hi] in micro-degrees inside REGION, ends on a grid of ``unit_e6``."""
    first, cells = (REGION[0] + 90) * E6 // unit_e6, (REGION[1] - REGION[0]) * E6 // unit_e6
    if span is None:
        a = np.sort(gen.integers(0, cells, (q, 2)), axis=1)
    else:
        width = gen.integers(span[0], span[1] + 1, q)
        start = gen.integers(0, cells - width.max(), q)
        a = np.column_stack([start, start + width - 1])
    lo = (first + a[:, 0]) * unit_e6 - 90 * E6
    hi = (first + a[:, 1] + 1) * unit_e6 - 1 - 90 * E6
    return lo, hi


def truth(sorted_lat, lo, hi):
    return np.searchsorted(sorted_lat, hi, side="right") - np.searchsorted(sorted_lat, lo, "left")


def synopsis_errors(lat, lo, hi, epsilon, res_e6, builds, seed):
    """(median |err|, median std, rmse) of interval synopses at resolution res_e6."""
    v = np.floor_divide(lat + 90 * E6, res_e6)
    dom = (0, 180 * E6 // res_e6)
    lo_r, hi_r = (lo + 90 * E6) // res_e6, (hi + 90 * E6) // res_e6
    true = truth(np.sort(lat), lo, hi)
    errs, stds = [], []
    for b in range(builds):
        syn = ps.IntervalSynopsis.build(v, domain=dom, epsilon=epsilon,
                                        rng=ps.Rng(seed=f"choices|{seed}|{b}".encode()))
        ans, std = syn.count_many(lo_r, hi_r, return_std=True)
        errs.append(ans - true)
        stds.append(std)
    err, std = np.concatenate(errs), np.concatenate(stds)
    return np.median(np.abs(err)), np.median(std), float(np.sqrt(np.mean(err ** 2)))


def histogram_errors(lat, lo, hi, epsilon, bucket_e6, builds, seed):
    """(median |err|, median std, rmse) of a flat DP histogram with buckets of bucket_e6."""
    nb = 180 * E6 // bucket_e6 + 1
    counts = np.bincount((lat + 90 * E6) // bucket_e6, minlength=nb)
    b_lo, b_hi = (lo + 90 * E6) // bucket_e6, (hi + 90 * E6) // bucket_e6
    true = truth(np.sort(lat), lo, hi)
    scale = 1 / ps.exact_epsilon(epsilon)
    std = np.sqrt((b_hi - b_lo + 1) * ps.discrete_laplace_variance(scale))
    errs = []
    for b in range(builds):
        noisy = counts + ps.discrete_laplace(scale, nb, rng=ps.Rng(seed=f"hist|{seed}|{b}".encode()))
        prefix = np.concatenate([[0], np.cumsum(noisy)])
        errs.append(prefix[b_hi + 1] - prefix[b_lo] - true)
    err = np.concatenate(errs)
    return np.median(np.abs(err)), np.median(std), float(np.sqrt(np.mean(err ** 2)))


def row(cells):
    return "| " + " | ".join(cells) + " |"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=4000)
    parser.add_argument("--builds", type=int, default=20)
    args = parser.parse_args()
    start = time.perf_counter()
    lat = latitudes()
    gen = np.random.default_rng(2024)
    lo, hi = queries(args.queries, gen, 10_000)                  # ends on a 0.01-degree grid
    print(f"## ZIP-code latitudes (n = {len(lat):,}), {args.queries} random intervals in "
          f"[{REGION[0]}, {REGION[1]}] degrees with ends on a 0.01-degree grid, "
          f"{args.builds} builds\n")
    print("### 1. epsilon (resolution 1e-6 degree)\n")
    print(row(["epsilon", "median abs error", "median std", "RMSE"]))
    print(row(["---"] * 4))
    for eps in (0.1, 0.5, 1.0, 2.0, 5.0):
        m, s, r = synopsis_errors(lat, lo, hi, eps, 1, args.builds, "same")
        print(row([f"{eps:g}", f"{m:.1f}", f"{s:.1f}", f"{r:.1f}"]))
    print("\n### 2. resolution (epsilon = 1)\n")
    print(row(["resolution (degree)", "domain size", "segments", "median abs error", "median std",
               "RMSE"]))
    print(row(["---"] * 6))
    for res in (1, 100, 10_000):
        m, s, r = synopsis_errors(lat, lo, hi, 1.0, res, args.builds, "same")
        dom = 180 * E6 // res + 1
        segs = len(ps.IntervalSynopsis.build(np.floor_divide(lat + 90 * E6, res), domain=(0, dom - 1),
                                             epsilon=1.0, rng=ps.Rng(seed=b"segments")))
        print(row([f"{res / E6:g}", f"{dom:,}", f"{segs:,}", f"{m:.1f}", f"{s:.1f}", f"{r:.1f}"]))
    print("\n### 3. against a flat DP histogram (epsilon = 1)\n")
    print(row(["queries", "synopsis (1e-6 degree): median abs error / RMSE",
               "histogram, 0.01-degree buckets", "aligned to whole degrees: synopsis (1e-6 degree)",
               "synopsis (1-degree values)", "histogram, 1-degree buckets"]))
    print(row(["---"] * 6))
    for label, span100 in (("short (<= 1 degree)", (1, 100)), ("medium (1-10 degrees)", (101, 1000)),
                           ("long (> 10 degrees)", (1001, 5000))):
        qlo, qhi = queries(args.queries, gen, 10_000, span100)
        alo, ahi = queries(args.queries, gen, E6, (max(1, span100[0] // 100), max(1, span100[1] // 100)))
        cells = []
        for what, (a, b) in (("syn", (qlo, qhi)), ("h100", (qlo, qhi)), ("syn", (alo, ahi)),
                             ("syn1", (alo, ahi)), ("h1", (alo, ahi))):
            if what.startswith("syn"):
                m, _, r = synopsis_errors(lat, a, b, 1.0, 1 if what == "syn" else E6, args.builds,
                                          label)
            else:
                m, _, r = histogram_errors(lat, a, b, 1.0, 10_000 if what == "h100" else E6,
                                           args.builds, label)
            cells.append(f"{m:.1f} / {r:.1f}")
        print(row([label] + cells))
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
