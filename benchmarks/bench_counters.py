"""Accuracy and speed of the continual counters.

Run from the repository root after building in place::

    python benchmarks/bench_counters.py            # a few minutes on 2 cores
    python benchmarks/bench_counters.py --quick    # smaller sizes

Prints three tables:

1. empirical mean squared error (mean over runs of the per-run mean of
   squared errors over t = 1..T) of BinaryTreeCounter and KaryTreeCounter
   (k = 3, 5, 9, 19, 20, 21 with subtraction; k = 17 without, Algorithm 1),
   next to the exact expected MSE (``mean_squared_error()``: mean path
   length x discrete Laplace variance; Lemmas 3.5 and 4.7 and Claim 1 for
   full trees) and the papers' asymptotic c log2(T)^3 / eps^2 (c = 0.1236
   for k = 19, Corollary 4.9; 0.1238 for k = 20, Corollary A.7; 0.234 for
   Algorithm 1 with k = 17, Theorem 3.7);
2. throughput of ``update_many`` next to ``discrete_laplace`` (the floor: a
   counter draws about one noise term per step), with the ratio;
3. a real sparse stream, departures of one airport per minute in 2001 H1
   ($PYDP_SYNOPSIS_DATA/flights-2001h1.npz): max and mean absolute error;
4. DNRR Theorem 3.1: the RMS error of the sparse counter's inner counter at
   the seal times (the release minus the true prefix there: the open
   segment is empty) for n = 10^4 items at distinct random positions of
   D = 2^20, 2^40, 2^62, without ``max_items`` (inner horizon D) and with
   ``max_items = n`` (inner horizon n + 1), with the ratio to D = 2^20.

Seeds are fixed for reproducibility (benchmarks only).  Nothing is asserted.
``--only N`` prints table N alone.
"""

import argparse
import math
import time

import numpy as np

import pydp_synopsis as ps
from pydp_synopsis import BinaryTreeCounter, KaryTreeCounter, SparseStreamCounter
from workloads import data_file  # benchmarks/ (the script's directory)

EPSILON = 1.0


def counters(horizon, rng):
    yield "binary", lambda: BinaryTreeCounter(horizon=horizon, epsilon=EPSILON, rng=rng)
    for k in (3, 5, 9, 19, 20, 21):
        yield f"kary k={k}", lambda k=k: KaryTreeCounter(horizon=horizon, epsilon=EPSILON, k=k, rng=rng)
    yield "alg1 k=17", lambda: KaryTreeCounter(horizon=horizon, epsilon=EPSILON, k=17, subtraction=False,
                                               rng=rng)


#: The papers' leading constants c of c log2(T)^3 / eps^2: Corollary 4.9
#: (k = 19), Corollary A.7 (even k = 20), Theorem 3.7 (Algorithm 1, k = 17).
ASYMPTOTIC = {"kary k=19": 0.1236, "kary k=20": 0.1238, "alg1 k=17": 0.234}


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
          f"{'emp/exact':>9} {'c log2(T)^3':>12}")
    for horizon in sizes:
        runs = max(2, int(budget // horizon))
        zeros = np.zeros(horizon, dtype=np.int64)
        for name, make in counters(horizon, rng):
            mse, se = empirical_mse(make, zeros, runs)
            c = make()
            exact = c.mean_squared_error()
            asym = (f"{ASYMPTOTIC[name] * math.log2(horizon) ** 3 / EPSILON**2:12.1f} (c = {ASYMPTOTIC[name]})"
                    if name in ASYMPTOTIC else "")
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
    data = np.load(data_file("flights-2001h1.npz"))
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


def table_theorem_3_1(n, runs, rng):
    print(f"## 4. Sparse counter, inner counter's error at seal times (DNRR Thm 3.1): n = {n} items, "
          f"eps = {EPSILON}, {runs} runs")
    print(f"{'D':>6} {'max_items':>9} {'inner T':>20} {'h':>3} {'seals/run':>9} {'RMS at seals':>12} "
          f"{'vs D=2^20':>9} {'time/run':>9}")
    for max_items in (None, n):
        base = None
        for log_d in (20, 40, 62):
            d = 2**log_d
            errs, seals, elapsed = [], 0, 0.0
            for r in range(runs):
                pos = np.unique(np.random.default_rng(10**6 * log_d + r).integers(1, d + 1, n + n // 10))[:n]
                c = SparseStreamCounter(horizon=d, epsilon=EPSILON, max_items=max_items, rng=rng)
                t0 = time.perf_counter()
                times, values = c.update_sparse(pos, until=d)
                elapsed += time.perf_counter() - t0
                truth = np.searchsorted(pos, times, side="right")
                errs.append((values - truth).astype(np.float64))
                seals += len(times)
            rms = math.sqrt(np.mean(np.concatenate(errs) ** 2))
            base = rms if base is None else base
            print(f"{'2^' + str(log_d):>6} {str(max_items):>9} {c.inner_horizon:>20} {c._inner.height:>3} "
                  f"{seals / runs:>9.0f} {rms:>12.1f} {rms / base:>9.2f} {elapsed / runs * 1e3:>7.1f}ms")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds)")
    parser.add_argument("--only", type=int, choices=(1, 2, 3, 4), help="print one table only")
    args = parser.parse_args()
    rng = ps.Rng(2024)
    tables = {
        1: lambda: table_mse([10**4, 10**5] if args.quick else [10**4, 10**5, 10**6, 10**7],
                             10**6 if args.quick else 2 * 10**7, rng),
        2: lambda: table_throughput(10**6 if args.quick else 10**7, rng),
        3: lambda: table_airports(["ORD", "ABQ"] if args.quick else ["ORD", "ABQ", "ACT"],
                                  3 if args.quick else 20, rng),
        4: lambda: table_theorem_3_1(10**4, 5 if args.quick else 200, rng),
    }
    for number, table in tables.items():
        if args.only in (None, number):
            table()


if __name__ == "__main__":
    main()
