"""Accuracy and speed of IntervalSynopsis next to its peers, measured in the same run.

Usage::

    python benchmarks/bench_intervals.py            # full run (a few minutes)
    python benchmarks/bench_intervals.py --quick    # smaller n and fewer queries
    python benchmarks/bench_intervals.py --tune     # the DNRR partition's defaults' evidence

(The PrivTree defaults were chosen against PrivTree and DAWA too, with
``benchmarks/bench_accuracy.py``.)  Ours: the default (PrivTree), the
``partition="dnrr"`` default, DNRR's own configuration, and the k-ary tree.

Accuracy: RMSE and max |error| over random intervals (endpoints uniform in the
domain, and endpoints drawn from the data) for our configurations and for
 - the full-domain hierarchical histogram, binary and 16-ary (a correct release
   noises every node; its expected squared error is exact and analytic, so D up
   to 2^64 is fine): peers_intervals.expected_squared_error;
 - OpenDP make_b_ary_tree + make_consistent_b_ary_tree over 2^16 equal-width
   buckets, uniform inside buckets: peers_intervals.opendp_interval_answers.
ratio = our default's RMSE / the best peer's RMSE.
--tune: on the --quick data sets, every option set of TUNE (DNRR partition:
estimator, tree, fanout, partition_share, threshold_factor) on all 24 workloads (6 data sets x
eps in {0.1, 1} x uniform / data-centred endpoints); prints each workload's
RMSE / best peer (RMSE averaged over 2 builds) and the geometric mean and max.
Speed: build at n = 10^7 (--quick: 10^6), D = 2^64, next to np.sort of the
same values; count_many on 10^6 queries next to np.searchsorted of the 2*10^6
endpoints into the segment ends.  Nothing here asserts anything about time.
Seeds make runs reproducible; they are for benchmarks only.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis.intervals import IntervalSynopsis  # noqa: E402
import peers_intervals as peers  # noqa: E402
import workloads  # noqa: E402


OURS = [  # (label, build options)
    ("default", dict()),
    ("dnrr-default", dict(partition="dnrr")),
    ("DNRR", dict(partition="dnrr", structure="binary", consistency=False, estimator="cover",
                  partition_share=0.5, threshold_factor=3)),
    ("kary", dict(structure="kary")),
]

_BASE = dict(structure="hierarchical", fanout=16, estimator="seal_uniform", partition_share=0.5,
             threshold_factor=3)
TUNE = (
    [dict(_BASE, estimator=e) for e in ("cover", "uniform", "seal", "seal_uniform")]
    + [dict(_BASE, structure="binary"), dict(_BASE, structure="binary", consistency=False),
       dict(_BASE, fanout=8), dict(_BASE, fanout=32)]
    + [dict(_BASE, partition_share=s, threshold_factor=c)
       for s in (0.15, 0.25, 0.35, 0.5) for c in (1, 1.5, 2)]
    + [dict(_BASE, partition_share=0.25, threshold_factor=1, fanout=f) for f in (8, 32)]
)


def datasets(quick):
    minutes = np.load(workloads.data_file("flights-2001h1.npz"))["minute"].astype(np.int64)
    if quick:
        minutes = minutes[np.random.default_rng(0).choice(minutes.size, 300_000, replace=False)]
    yield "flights minutes", minutes, (0, 260_640)
    # scaled into [0, 2^64): v -> v * floor(2^64 / 260641) (order and ties kept)
    step = (2**64) // 260_641
    scaled = minutes.astype(np.uint64) * np.uint64(step)
    yield "flights scaled 2^64", scaled, (0, 2**64 - 1)
    gen = np.random.default_rng(1)
    for n in ((10_000, 100_000) if quick else (10_000, 1_000_000)):
        yield f"uniform n={n}", gen.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True), (0, 2**64 - 1)
        # Zipf-like: rank r gets probability ~ 1/r^1.1, ranks placed at random points of 2^64
        ranks = np.minimum(gen.zipf(1.1, n), 10**6) - 1
        points = gen.integers(0, 2**64 - 1, 10**6, dtype=np.uint64, endpoint=True)
        yield f"zipf n={n}", points[ranks], (0, 2**64 - 1)


def accuracy(quick):
    q = 2_000 if quick else 10_000
    rows = []
    for name, values, domain in datasets(quick):
        for eps in (0.1, 1.0):
            for kind in ("uniform", "data"):
                lo, hi = workloads.random_intervals(q, domain, kind=kind, values=values, seed=2)
                truth = workloads.interval_counts(values, lo, hi).astype(np.float64)
                res = {}
                for label, opts in OURS:
                    try:
                        syn = IntervalSynopsis.build(values, domain=domain, epsilon=eps,
                                                     rng=ps.Rng(seed=3), **opts)
                    except ImportError:
                        continue  # kary needs pydp_synopsis.counters
                    err = syn.count_many(lo, hi) - truth
                    res[label] = (float(np.sqrt(np.mean(err**2))), float(np.abs(err).max()), len(syn))
                peer = {}
                for b in (2, 16):
                    var = peers.expected_squared_error(lo, hi, domain, b, eps)
                    peer[f"HH b={b}"] = (peers.rmse_from_variances(var), float("nan"))
                try:
                    ans = peers.opendp_interval_answers(values, domain, eps, lo, hi)
                    err = ans - truth
                    peer["OpenDP 2^16"] = (float(np.sqrt(np.mean(err**2))), float(np.abs(err).max()))
                except ImportError:
                    pass
                best = min(v[0] for v in peer.values())
                rows.append((name, eps, kind, res, peer, res["default"][0] / best))
                print_row(rows[-1])
    return rows


def print_row(row):
    name, eps, kind, res, peer, ratio = row
    ours = "  ".join(f"{k}={v[0]:.1f}/{v[1]:.0f}" for k, v in res.items())
    ps_ = "  ".join(f"{k}={v[0]:.1f}" for k, v in peer.items())
    m = res["default"][2]
    print(f"| {name} | {eps} | {kind} | m={m} | {ours} | {ps_} | {ratio:.3f} |", flush=True)


def speed(quick):
    n = 1_000_000 if quick else 10_000_000
    gen = np.random.default_rng(4)
    values = gen.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    t0 = time.perf_counter()
    np.sort(values)
    t_sort = time.perf_counter() - t0
    t0 = time.perf_counter()
    syn = IntervalSynopsis.build(values, domain=(0, 2**64 - 1), epsilon=1.0, rng=ps.Rng(seed=5))
    t_build = time.perf_counter() - t0
    print(f"| build n={n}, D=2^64 | {t_build:.3f} s | np.sort {t_sort:.3f} s | ratio {t_build / t_sort:.2f} |")
    q = 1_000_000
    lo, hi = workloads.random_intervals(q, (0, 2**64 - 1), kind="uniform", seed=6)
    ends = syn.partition.end_offsets
    t0 = time.perf_counter()
    np.searchsorted(ends, lo)
    np.searchsorted(ends, hi)
    t_ss = time.perf_counter() - t0
    t0 = time.perf_counter()
    syn.count_many(lo, hi)
    t_q = time.perf_counter() - t0
    print(f"| count_many {q} queries (m={len(syn)}) | {t_q:.3f} s | searchsorted {t_ss:.3f} s | "
          f"ratio {t_q / t_ss:.2f} |")


def tune():
    rows = []
    for name, values, domain in datasets(True):
        for eps in (0.1, 1.0):
            for kind in ("uniform", "data"):
                lo, hi = workloads.random_intervals(2_000, domain, kind=kind, values=values, seed=2)
                truth = workloads.interval_counts(values, lo, hi).astype(np.float64)
                best = min(peers.rmse_from_variances(peers.expected_squared_error(lo, hi, domain, b, eps))
                           for b in (2, 16))
                try:
                    ans = peers.opendp_interval_answers(values, domain, eps, lo, hi)
                    best = min(best, float(np.sqrt(np.mean((ans - truth) ** 2))))
                except ImportError:
                    pass
                out = []
                for opts in TUNE:
                    mse = [np.mean((IntervalSynopsis.build(values, domain=domain, epsilon=eps,
                                                           rng=ps.Rng(seed=3 + r), **opts)
                                    .count_many(lo, hi) - truth) ** 2) for r in range(2)]
                    out.append(float(np.sqrt(np.mean(mse))) / best)
                rows.append(out)
                print(f"| {name} | {eps} | {kind} | {best:.1f} | " + " | ".join(f"{x:.2f}" for x in out)
                      + " |", flush=True)
    arr = np.array(rows)
    print("| geomean | | | | " + " | ".join(f"{x:.2f}" for x in np.exp(np.log(arr).mean(0))) + " |")
    print("| max | | | | " + " | ".join(f"{x:.2f}" for x in arr.max(0)) + " |")
    for i, opts in enumerate(TUNE):
        print(f"column {i}: {opts}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller data and fewer queries")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--tune", action="store_true", help="compare option sets (the defaults' evidence)")
    args = ap.parse_args()
    if args.tune:
        tune()
        return
    print("RMSE/max over random intervals; peers: hierarchical histogram (analytic RMSE), OpenDP")
    print("| data | eps | queries | segments | ours (rmse/max) | peers (rmse) | default / best peer |")
    print("|---|---|---|---|---|---|---|")
    accuracy(args.quick)
    if not args.skip_speed:
        print("\n| speed | ours | floor | ratio |\n|---|---|---|---|")
        speed(args.quick)


if __name__ == "__main__":
    main()
