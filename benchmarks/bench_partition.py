"""Benchmark: offline private partition vs its floor, ``np.sort`` of the same array.

Usage::

    python benchmarks/bench_partition.py [--repeat 3] [--epsilon 1.0] [--sizes 6,7]

For each data set the table shows best-of-``repeat`` wall times of

* ``kernel``: the partition of the already sorted offsets
  (``partition_of_sorted``: the C kernel, csrc/partition.c, plus a few
  Python calls) -- what the batched skip of issue #17 is about;
* ``full``: ``private_partition`` of the unsorted values (validation, sort,
  kernel);
* ``np.sort`` of the same array, measured in the same run,

their ratios to ``np.sort``, the number of segments, the largest true
segment weight and Theorem 2.1's bound ``5 (ln D + ln(1/beta)) / epsilon``
(DNRR, Fig. 1 / Remark 2.2).  The seed is fixed for reproducibility only.
Nothing is asserted.
"""
import argparse
import time

import numpy as np

import pydp_synopsis as ps
from pydp_synopsis.params import as_offsets, check_domain, exact_epsilon
from pydp_synopsis.partition import partition_of_sorted, private_partition
from workloads import data_file  # benchmarks/ (the script's directory)

__all__ = ["main"]



def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _datasets(sizes):
    gen = np.random.default_rng(2024)  # benchmark data only
    for k in sizes:
        yield (f"uniform over [0, 2^64), n=1e{k}",
               gen.integers(0, 2**64 - 1, size=10**k, dtype=np.uint64, endpoint=True),
               (0, 2**64 - 1))
    flights = data_file("flights-2001h1.npz", required=False)
    if flights is not None:
        minute = np.load(flights)["minute"].astype(np.int64)
        yield ("flights minute, D=2^18", minute, (0, 2**18 - 1))
        shift = np.uint64(2**63 + 12345)
        yield ("flights minute shifted into 2^64", minute.astype(np.uint64) + shift,
               (0, 2**64 - 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--sizes", default="6,7",
                    help="comma-separated k: uniform data sets of 10^k values")
    args = ap.parse_args(argv)
    sizes = [int(k) for k in args.sizes.split(",") if k]
    rng = ps.Rng(seed=7)
    eps = exact_epsilon(args.epsilon)
    head = (f"{'data':36s} {'n':>9s} {'kernel s':>9s} {'full s':>8s} {'np.sort s':>10s} "
            f"{'kernel/sort':>11s} {'full/sort':>9s} {'segments':>9s} {'max weight':>10s} "
            f"{'bound':>7s}")
    print(f"epsilon={args.epsilon}, beta=0.05, best of {args.repeat}")
    print(head)
    print("-" * len(head))
    for name, values, domain in _datasets(sizes):
        dom = check_domain(domain)
        t_sort, offsets = _best(lambda: np.sort(as_offsets(values, dom).ravel()), 1)
        t_sort, _ = _best(lambda: np.sort(values), args.repeat)
        t_kernel, _ = _best(lambda: partition_of_sorted(offsets, dom, eps, 0.05, 3.0, rng),
                            args.repeat)
        t_full, part = _best(lambda: private_partition(values, domain=domain,
                                                        epsilon=args.epsilon, rng=rng),
                             args.repeat)
        w = part.weights(values)
        print(f"{name:36s} {len(values):9d} {t_kernel:9.3f} {t_full:8.3f} {t_sort:10.3f} "
              f"{t_kernel / t_sort:11.2f} {t_full / t_sort:9.2f} {len(part):9d} "
              f"{int(w.max()):10d} {part.max_weight_bound():7.1f}")


if __name__ == "__main__":
    main()
