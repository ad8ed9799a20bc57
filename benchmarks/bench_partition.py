"""Benchmark: offline private partition vs its floor, ``np.sort`` of the same array.

Usage::

    python benchmarks/bench_partition.py [--repeat 3] [--epsilon 1.0]

For each data set the table shows the best-of-``repeat`` wall time of
``private_partition`` (validation + sort + C kernel) next to ``np.sort`` of
the same array measured in the same run, their ratio, the number of
segments, the largest true segment weight and Theorem 2.1's bound
``5 (ln D + ln(1/beta)) / epsilon`` (DNRR, Fig. 1 / Remark 2.2).  The seed is
fixed for reproducibility only.  Nothing is asserted.
"""
import argparse
import time

import numpy as np

import pydp_synopsis as ps
from pydp_synopsis.partition import private_partition
from workloads import data_dir  # benchmarks/ (the script's directory)

__all__ = ["main"]

DATA = data_dir() / "flights-2001h1.npz"


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _datasets():
    gen = np.random.default_rng(2024)  # benchmark data only
    for n in (10**6, 10**7):
        yield (f"uniform n={n:.0e}", gen.integers(0, 2**64 - 1, size=n, dtype=np.uint64,
                                                  endpoint=True), (0, 2**64 - 1))
    if DATA.exists():
        minute = np.load(DATA)["minute"].astype(np.int64)
        yield ("flights minute D=2^18", minute, (0, 2**18 - 1))
        shift = np.uint64(2**63 + 12345)
        yield ("flights minute shifted, D=2^64", minute.astype(np.uint64) + shift,
               (0, 2**64 - 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args(argv)
    rng = ps.Rng(seed=7)
    head = (f"{'data':34s} {'n':>9s} {'partition s':>12s} {'np.sort s':>10s} {'ratio':>6s} "
            f"{'segments':>9s} {'max weight':>10s} {'bound':>7s}")
    print(f"epsilon={args.epsilon}, beta=0.05, best of {args.repeat}")
    print(head)
    print("-" * len(head))
    for name, values, domain in _datasets():
        t_sort, _ = _best(lambda: np.sort(values), args.repeat)
        t_part, part = _best(lambda: private_partition(values, domain=domain,
                                                        epsilon=args.epsilon, rng=rng),
                             args.repeat)
        w = part.weights(values)
        print(f"{name:34s} {len(values):9d} {t_part:12.3f} {t_sort:10.3f} "
              f"{t_part / t_sort:6.2f} {len(part):9d} {int(w.max()):10d} "
              f"{part.max_weight_bound():7.1f}")


if __name__ == "__main__":
    main()
