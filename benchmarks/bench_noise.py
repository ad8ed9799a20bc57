"""Throughput of exact discrete Laplace noise next to numpy's float Laplace.

numpy's ``Generator.laplace`` is inexact floating-point noise (not a
DP-safe sampler, see Mironov 2012); it is the floor we race, measured
alternately with ours in the same run (best of ``--repeat``).  Run:

    python benchmarks/bench_noise.py [--size 10000000] [--repeat 5]
"""
import argparse
import time

import numpy as np

import pydp_synopsis as ps


def paired(ours, peer, repeat):
    """Best-of-``repeat`` times of both, measured alternately so that they see the
    same load of a shared machine."""
    t_o = t_p = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        peer()
        t_p = min(t_p, time.perf_counter() - start)
        start = time.perf_counter()
        ours()
        t_o = min(t_o, time.perf_counter() - start)
    return t_o, t_p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = ps.Rng(seed=2024)  # benchmark only
    gen = np.random.default_rng(2024)
    n = args.size
    print(f"discrete_laplace vs numpy Generator.laplace, size={n:,}, best of {args.repeat}")
    print(f"{'scale':>9} | {'exact M/s':>10} | {'numpy M/s':>10} | {'ratio':>6} | {'var/formula':>11}")
    print("-" * 60)
    for scale in (1, 10, 1000, 10**6):
        ours, peer = paired(lambda: ps.discrete_laplace(scale, size=n, rng=rng),
                            lambda: gen.laplace(0.0, scale, size=n), args.repeat)
        z = ps.discrete_laplace(scale, size=min(n, 10**6), rng=rng)
        ratio_var = z.var() / ps.discrete_laplace_variance(scale)
        print(f"{scale:>9} | {n / ours / 1e6:>10.1f} | {n / peer / 1e6:>10.1f} | "
              f"{peer / ours:>6.2f} | {ratio_var:>11.3f}")


if __name__ == "__main__":
    main()
