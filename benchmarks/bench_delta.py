"""(epsilon, delta) trees: node scale and measured error, pure against delta = 1e-6.

Run from the repository root after building in place::

    python benchmarks/bench_delta.py            # about 4 s on 2 cores
    python benchmarks/bench_delta.py --quick    # smaller n and fewer queries

For eps = 1 and delta = 1e-6 (Andersson, Pagh, Torkamani, "Count on Your
Elders", section 5.2, Lemma 5.5 and Theorem 1.3): every object's node scale
with ``delta=0`` (S / eps_noise) and with ``delta=1e-6`` (min(S / eps_noise,
lambda), lambda calibrated to the l2 sensitivity sqrt(S)), S the nodes one
item moves, and the measured RMSE of random queries of the same seeded data:

* interval synopsis (default options) over domains 2^16, 2^32, 2^64,
  n = 10^5 values, random intervals;
* rectangle multi-tree, 2-D and 3-D: the default multi-tree options
  (``structure="multitree"``) and DNRR's configuration (``config="dnrr"``;
  in 2-D also unpruned, ``prune=None``),
  n = 2*10^4 points over 2^20 per axis, random rectangles;
* tree counters (binary; k-ary k = 19) at T = 2^20 on a Bernoulli(1/2)
  stream: RMSE of every prefix count.

The pure epsilon each delta object also achieves (``pure_epsilon``) is
printed.  Seeds are fixed (benchmarks only).  Nothing is asserted.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pydp_synopsis as ps  # noqa: E402

EPS, DELTA = 1.0, 1e-6


def _rmse(a, b):
    return float(np.sqrt(np.mean((np.asarray(a, dtype=float) - np.asarray(b, dtype=float)) ** 2)))


def _interval_nodes(s):
    if s.tree == "kary":
        return ps.KaryTreeCounter(horizon=len(s), epsilon=1, k=s.k).height
    from pydp_synopsis.trees import tree_shape
    return tree_shape(len(s), s.fanout)[0]


def _row(name, nodes, pure_scale, delta_scale, pure_rmse, delta_rmse, pure_eps):
    return (f"| {name} | {nodes} | {float(pure_scale):.3f} | {float(delta_scale):.3f} | "
            f"{pure_rmse:.2f} | {delta_rmse:.2f} | {pure_rmse / delta_rmse:.3f} | "
            f"{float(pure_eps):.3f} |")


def intervals(n, q, runs):
    gen = np.random.default_rng(1)
    for bits in (16, 32, 64):
        hi = 2**bits - 1
        dtype = np.uint64
        values = np.sort(gen.integers(0, hi, n, dtype=dtype, endpoint=True))
        lo_q = gen.integers(0, hi, q, dtype=dtype, endpoint=True)
        hi_q = gen.integers(0, hi, q, dtype=dtype, endpoint=True)
        lo_q, hi_q = np.minimum(lo_q, hi_q), np.maximum(lo_q, hi_q)
        truth = np.searchsorted(values, hi_q, side="right") - np.searchsorted(values, lo_q, side="left")
        err, scale, last = {}, {}, {}
        for d in (0, DELTA):
            sq = []
            for r in range(runs):
                s = ps.IntervalSynopsis.build(values, domain=(0, hi), epsilon=EPS, delta=d,
                                              rng=ps.Rng(seed=100 + r))
                sq.append(_rmse(s.count_many(lo_q, hi_q), truth) ** 2)
            err[d], scale[d], last[d] = math.sqrt(np.mean(sq)), s.noise_scale, s
        yield _row(f"interval 2^{bits}", _interval_nodes(last[DELTA]), scale[0], scale[DELTA],
                   err[0], err[DELTA], last[DELTA].pure_epsilon)


def _rect_truth(pts, lo, hi):
    inside = np.ones((len(lo), len(pts)), dtype=bool)
    for a in range(pts.shape[1]):
        inside &= (pts[None, :, a] >= lo[:, a, None]) & (pts[None, :, a] <= hi[:, a, None])
    return inside.sum(axis=1)


def rectangles(n, q, runs):
    gen = np.random.default_rng(2)
    hi = 2**20 - 1
    for c in (2, 3):
        pts = gen.integers(0, hi, (n, c), endpoint=True)
        a, b = gen.integers(0, hi, (q, c), endpoint=True), gen.integers(0, hi, (q, c), endpoint=True)
        lo_q, hi_q = np.minimum(a, b), np.maximum(a, b)
        truth = _rect_truth(pts, lo_q, hi_q)
        configs = [("default multitree", {"structure": "multitree"}), ("DNRR", {"config": "dnrr"})]
        if c == 2:     # DNRR prunes below ln(N/beta) scales; unpruned shows the node noise alone
            configs.append(("DNRR unpruned", {"config": "dnrr", "prune": None}))
        for label, extra in configs:
            err, scale, last = {}, {}, {}
            for d in (0, DELTA):
                sq = []
                for r in range(runs):
                    s = ps.RectangleSynopsis.build(pts, domain=[(0, hi)] * c, epsilon=EPS, delta=d,
                                                   rng=ps.Rng(seed=200 + r), **extra)
                    sq.append(_rmse(s.count_many(lo_q, hi_q), truth) ** 2)
                err[d], scale[d], last[d] = math.sqrt(np.mean(sq)), s.scales[1], s
            yield _row(f"{c}-D {label}", "+".join(map(str, last[DELTA].sensitivity)), scale[0],
                       scale[DELTA], err[0], err[DELTA], last[DELTA].pure_epsilon)


def counters(horizon, runs):
    xs = np.random.default_rng(3).integers(0, 2, horizon)
    truth = np.cumsum(xs)
    for name, cls in (("binary", ps.BinaryTreeCounter), ("k-ary k=19", ps.KaryTreeCounter)):
        err, scale, last = {}, {}, {}
        for d in (0, DELTA):
            sq = []
            for r in range(runs):
                c = cls(horizon=horizon, epsilon=EPS, delta=d, rng=ps.Rng(seed=300 + r))
                sq.append(_rmse(c.update_many(xs), truth) ** 2)
            err[d], scale[d], last[d] = math.sqrt(np.mean(sq)), c.noise_scale, c
        yield _row(f"counter {name}, T = 2^{int(math.log2(horizon))}", last[DELTA].height,
                   scale[0], scale[DELTA], err[0], err[DELTA], last[DELTA].pure_epsilon)


def run(quick=False):
    """Print the table; ``quick`` shrinks n, the queries, the runs and T."""
    n, q, runs = (5000, 300, 2) if quick else (100_000, 2000, 5)
    nr, qr = (2000, 200) if quick else (20_000, 1000)
    horizon = 2**12 if quick else 2**20
    print(f"eps = {EPS}, delta = {DELTA:g}; RMSE over {runs} seeded runs "
          f"(intervals n = {n}, rectangles n = {nr}, {q}/{qr} random queries)")
    print()
    print("| object | S (nodes per item) | scale, pure | scale, delta | RMSE, pure | RMSE, delta "
          "| ratio | pure_epsilon (delta) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for gen in (intervals(n, q, runs), rectangles(nr, qr, runs), counters(horizon, runs)):
        for line in gen:
            print(line, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller n, fewer queries and runs")
    run(parser.parse_args().quick)


if __name__ == "__main__":
    main()
