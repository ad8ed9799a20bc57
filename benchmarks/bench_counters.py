"""Accuracy and speed of the continual counters.

Run from the repository root after building in place::

    python benchmarks/bench_counters.py            # a few minutes on 2 cores
    python benchmarks/bench_counters.py --quick    # smaller sizes

Prints three tables:

1. empirical mean squared error (mean over runs of the per-run mean of
   squared errors over t = 1..T) of BinaryTreeCounter and KaryTreeCounter
   (k = 3, 5, 9, 19, 21), next to the exact expected MSE
   (``mean_squared_error()``: mean path length x discrete Laplace variance;
   Lemma 4.7 for full trees) and, for k = 19, the paper's asymptotic
   0.1236 log2(T)^3 / eps^2 (Corollary 4.9);
2. throughput of ``update_many`` next to ``discrete_laplace`` (the floor: a
   counter draws about one noise term per step), with the ratio;
3. a real sparse stream, departures of one airport per minute in 2001 H1
   (../shared/data/flights-2001h1.npz): max and mean absolute error.

Seeds are fixed for reproducibility (benchmarks only).  Nothing is asserted.
"""

import argparse
import math
import pathlib
import time

import numpy as np

import pydp_synopsis as ps
from pydp_synopsis import BinaryTreeCounter, KaryTreeCounter, SparseStreamCounter

EPSILON = 1.0
DATA = pathlib.Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "flights-2001h1.npz"


def counters(horizon, rng):
    yield "binary", lambda: BinaryTreeCounter(horizon=horizon, epsilon=EPSILON, rng=rng)
    for k in (3, 5, 9, 19, 21):
        yield f"kary k={k}", lambda k=k: KaryTreeCounter(horizon=horizon, epsilon=EPSILON, k=k, rng=rng)


def empirical_mse(make, stream, runs):
    truth = np.cumsum(stream)
    per_run = np.empty(runs)
    for r in range(runs):
        err = (make().update_many(stream) - truth).astype(np.float64)
        per_run[r] = np.mean(err * err)
    se = per_run.std(ddof=1) / math.sqrt(runs) if runs > 1 else float("nan")
    return per_run.mean(), se


def table_mse(sizes, budget, rng):
    print(f"## 1. Mean squared error, eps = {EPSILON}, all-zero stream "
          f"(runs x T ~ {budget:.0e} per cell; +- is one standard error)")
    print(f"{'counter':<12} {'T':>9} {'runs':>5} {'h':>3} {'empirical MSE':>20} {'exact MSE':>11} "
          f"{'emp/exact':>9} {'0.1236 log2(T)^3':>17}")
    for horizon in sizes:
        runs = max(2, int(budget // horizon))
        zeros = np.zeros(horizon, dtype=np.int64)
        for name, make in counters(horizon, rng):
            mse, se = empirical_mse(make, zeros, runs)
            c = make()
            exact = c.mean_squared_error()
            asym = f"{0.1236 * math.log2(horizon) ** 3 / EPSILON**2:17.1f}" if name == "kary k=19" else ""
            print(f"{name:<12} {horizon:>9} {runs:>5} {c.height:>3} {mse:>11.1f} +- {se:>5.1f} "
                  f"{exact:>11.1f} {mse / exact:>9.3f} {asym}")
        # The sparse counter's error depends on the data: a stream with
        # T/1000 ones at random times (no closed form; the tree counters'
        # MSE does not depend on the data).
        sparse = np.zeros(horizon, dtype=np.int64)
        sparse[np.random.default_rng(horizon).choice(horizon, horizon // 1000, replace=False)] = 1
        for inner in ("kary", "binary"):
            mse, se = empirical_mse(lambda: SparseStreamCounter(horizon=horizon, epsilon=EPSILON,
                                                                counter=inner, rng=rng), sparse, runs)
            print(f"{'sparse/' + inner:<12} {horizon:>9} {runs:>5} {'':>3} {mse:>11.1f} +- {se:>5.1f} "
                  f"{'-':>11} {'-':>9}   (stream of T/1000 ones)")
    print()


def table_throughput(horizon, rng):
    print(f"## 2. Throughput, T = {horizon:.0e}, eps = {EPSILON} (best of 3)")
    zeros = np.zeros(horizon, dtype=np.int64)
    rows = []
    for name, make in counters(horizon, rng):
        best = min(_timed(lambda: make().update_many(zeros)) for _ in range(3))
        rows.append((name, horizon / best, make().noise_scale))
    floor = {}
    for _, _, scale in rows:
        if scale not in floor:
            floor[scale] = horizon / min(_timed(lambda: ps.discrete_laplace(scale, size=horizon, rng=rng))
                                         for _ in range(3))
    print(f"{'counter':<12} {'update_many items/s':>20} {'discrete_laplace draws/s':>25} {'ratio':>6}")
    for name, speed, scale in rows:
        print(f"{name:<12} {speed:>20.3e} {floor[scale]:>25.3e} {speed / floor[scale]:>6.2f}")
    print()


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def airport_stream(code):
    data = np.load(DATA)
    airports = list(data["airports"])
    minutes = data["minute"][data["origin"] == airports.index(code)]
    horizon = int(data["minute"].max())
    return np.bincount(minutes - 1, minlength=horizon).astype(np.int64)


def table_airports(codes, runs, rng):
    print(f"## 3. Departures per minute of one airport, 2001 H1, eps = {EPSILON}, {runs} runs "
          "(absolute error of the released prefix sum, mean over runs)")
    print(f"{'airport':<8} {'T':>7} {'flights':>8} {'counter':<12} {'max |err|':>10} {'mean |err|':>11}")
    for code in codes:
        stream = airport_stream(code)
        truth = np.cumsum(stream)
        makers = [("binary", lambda: BinaryTreeCounter(horizon=len(stream), epsilon=EPSILON, rng=rng)),
                  ("kary k=19", lambda: KaryTreeCounter(horizon=len(stream), epsilon=EPSILON, rng=rng))]
        for name, make in makers:
            mx, mean = [], []
            for _ in range(runs):
                err = np.abs(make().update_many(stream) - truth)
                mx.append(err.max())
                mean.append(err.mean())
            print(f"{code:<8} {len(stream):>7} {int(truth[-1]):>8} {name:<12} {np.mean(mx):>10.1f} "
                  f"{np.mean(mean):>11.2f}")
        positions = np.flatnonzero(stream) + 1
        t_all = np.arange(1, len(stream) + 1)
        mx, mean, elapsed = [], [], []
        for _ in range(runs):
            c = SparseStreamCounter(horizon=len(stream), epsilon=EPSILON, rng=rng)
            t0 = time.perf_counter()
            times, values = c.update_sparse(positions, stream[positions - 1], until=len(stream))
            elapsed.append(time.perf_counter() - t0)
            idx = np.searchsorted(times, t_all, side="right") - 1
            release = np.where(idx >= 0, values[np.maximum(idx, 0)], 0)
            err = np.abs(release - truth)
            mx.append(err.max())
            mean.append(err.mean())
        print(f"{code:<8} {len(stream):>7} {int(truth[-1]):>8} {'sparse/kary':<12} {np.mean(mx):>10.1f} "
              f"{np.mean(mean):>11.2f}   (update_sparse: {len(positions)} busy minutes, "
              f"{np.mean(elapsed) * 1e3:.1f} ms)")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds)")
    args = parser.parse_args()
    rng = ps.Rng(2024)
    if args.quick:
        table_mse([10**4, 10**5], 10**6, rng)
        table_throughput(10**6, rng)
        table_airports(["ORD", "ABQ"], 3, rng)
    else:
        table_mse([10**4, 10**5, 10**6, 10**7], 2 * 10**7, rng)
        table_throughput(10**7, rng)
        table_airports(["ORD", "ABQ", "ACT"], 20, rng)


if __name__ == "__main__":
    main()
