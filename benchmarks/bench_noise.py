"""Throughput of exact discrete Laplace noise next to numpy's float Laplace.

numpy's ``Generator.laplace`` is inexact floating-point noise (not a
DP-safe sampler, see Mironov 2012); it is the floor we race, measured in the
same run.  ``ps.discrete_laplace`` is timed with one thread and with two
(``ps.set_threads``; fills of 2**17 draws or more are split in chunks, with
the same draws for any thread count).  Run:

    python benchmarks/bench_noise.py [--size 10000000] [--repeat 3]

Columns: exact M samples/s with 1 and 2 threads, numpy's M samples/s, the
ratios exact/numpy, and the sample variance over the formula
(``ps.discrete_laplace_variance``) on 10**6 draws -- about 1.000.  The last
line is the raw ChaCha20 keystream rate (``Rng.random_uint64``).
"""
import argparse
import time

import numpy as np

import pydp_synopsis as ps


def best_of(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = ps.Rng(seed=2024)  # benchmark only
    gen = np.random.default_rng(2024)
    n = args.size
    print(f"discrete_laplace vs numpy Generator.laplace, size={n:,}, best of {args.repeat}")
    print(f"{'scale':>9} | {'exact 1T':>8} | {'exact 2T':>8} | {'numpy':>6} | {'1T/np':>5} | "
          f"{'2T/np':>5} | {'var/formula':>11}")
    print(f"{'':>9} | {'M/s':>8} | {'M/s':>8} | {'M/s':>6} | {'':>5} | {'':>5} |")
    print("-" * 72)
    before = ps.set_threads(1)
    try:
        for scale in (1, 10, 1000, 10**6):
            ps.set_threads(1)
            one = best_of(lambda: ps.discrete_laplace(scale, size=n, rng=rng), args.repeat)
            ps.set_threads(2)
            two = best_of(lambda: ps.discrete_laplace(scale, size=n, rng=rng), args.repeat)
            peer = best_of(lambda: gen.laplace(0.0, scale, size=n), args.repeat)
            z = ps.discrete_laplace(scale, size=min(n, 10**6), rng=rng)
            ratio_var = z.var() / ps.discrete_laplace_variance(scale)
            print(f"{scale:>9} | {n / one / 1e6:>8.1f} | {n / two / 1e6:>8.1f} | {n / peer / 1e6:>6.1f} | "
                  f"{peer / one:>5.2f} | {peer / two:>5.2f} | {ratio_var:>11.3f}")
        words = best_of(lambda: rng.random_uint64(n), args.repeat)
        print(f"ChaCha20 keystream (Rng.random_uint64, one thread): {n / words / 1e6:.0f} M words/s")
    finally:
        ps.set_threads(before)


if __name__ == "__main__":
    main()
