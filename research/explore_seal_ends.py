"""Exploration, not a release: what per-end seal counts would do for the adaptive grid.

The grid (``pydp_synopsis.rectangles.grid``) spreads a fine cell's count
over the partition segments it spans in equal shares, and inside a segment
puts the axis' seal share ``rho_a`` on the segment's end (the per-axis seal
counts ``S_a`` are released).  Where one segment of a cell holds a heavy
value and its neighbours almost nothing -- NYC flight distances: 8,109
flights at 2586 miles beside a segment (2586, 4963] of 367 -- equal shares
move most of the heavy segment's mass onto the empty one (docs/benchmarks/intervals.md,
"On data sets that are not in this repository": 3-D uniform boxes 1.40x AG).

The model measured here releases the seal counts per segment end instead:
one count per end of every axis, each with discrete-Laplace-like noise of
the scale the per-axis totals have now (``c / epsilon_seal``; an item lies
on at most one end per axis, so the L1 sensitivity stays ``c``).  A
segment's weight is then ``M_j = max(S_j - k b, 0) + r_a`` (its noisy end
count above ``k`` noise scales, plus the axis' average remaining mass per
segment), its end share ``max(S_j - k b, 0) / M_j``, and a cell's count is
split over its segments in proportion to ``M_j``.  ``k = ln(m_a / (2 p))``:
with probability ``>= 1 - p`` no empty end of the axis' ``m_a`` passes
(``--margin p``, 0.05; a fixed 3 scales let noise pass on axes of 10^3 ends
and doubled the error of small samples).

Everything but the per-end counts is the real release (the same build);
the per-end noise is numpy's Laplace (this is a measurement of the model,
never a release: the package draws only from its C generator).  The
``equal`` column re-implements the grid's current answer in numpy and must
equal ``count_many`` (the short tier checks that, an independent check of
the C answer kernel).

Usage::

    python research/explore_seal_ends.py --dims 3 --data extra --eps 1 --kinds uniform
    python research/explore_seal_ends.py --dims 2 --kinds data,small,uniform
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))   # peers, workloads
if __name__ == "__main__":
    sys.path.insert(1, os.path.dirname(HERE))

import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis.rectangles import RectangleSynopsis  # noqa: E402
import bench_accuracy  # noqa: E402


def axis_model(syn, pts, a, mode, rng, margin, total):
    """``(M, e, ends)`` of axis ``a``: segment weights, end shares, segment ends (offsets)."""
    ends = syn.partitions[a].end_offsets.astype(np.int64)
    m = ends.size
    if mode == "equal":                       # the grid's current model
        return np.ones(m), np.full(m, syn.seal_shares[a]), ends
    x = (pts[:, a] - syn.domain[a][0]).astype(np.int64)
    seg = np.searchsorted(ends, x)
    on_end = ends[seg] == x
    scale = pts.shape[1] / float(syn.epsilon_seal)
    noisy = np.bincount(seg[on_end], minlength=m) + rng.laplace(0.0, scale, m)
    # k scales with P(some noise > k b) <= m e^-k / 2 = margin (a union bound over the ends)
    k = np.log(m / (2 * margin))
    heavy = np.maximum(noisy - k * scale, 0.0)
    rest = max(total - heavy.sum(), 0.0) / m
    weight = heavy + rest
    return weight, np.where(weight > 0, heavy / np.maximum(weight, 1e-300), 0.0), ends


def answers(syn, pts, lo, hi, mode, rng, margin=0.05, block=20):
    """Answers of the boxes ``[lo, hi]`` under the ``mode`` spread ("equal" or "ends")."""
    _, fine = syn.grid_cells()
    start, end, est = fine["start"], fine["end"], fine["estimate"]
    total = float(est.sum())                  # released
    axes = []
    for a in range(pts.shape[1]):
        weight, share, ends = axis_model(syn, pts, a, mode, rng, margin, total)
        first = np.concatenate([[0], ends[:-1] + 1])
        span = (ends - first + 1).astype(np.float64)
        prefix = np.concatenate([[0.0], np.cumsum(weight)])
        l = (lo[:, a] - syn.domain[a][0]).astype(np.int64)
        h = (hi[:, a] - syn.domain[a][0]).astype(np.int64)
        k, r = np.searchsorted(ends, l), np.searchsorted(ends, h)
        same = k == r
        fk = np.where(same, h - l + 1.0, ends[k] - l + 1.0) / span[k]
        fk = share[k] * ((h >= ends[k]) | ~same) + (1 - share[k]) * fk
        fr = (h - first[r] + 1.0) / span[r]
        fr = np.where(same, 0.0, share[r] * (h == ends[r]) + (1 - share[r]) * fr)
        axes.append((prefix, weight, k, r, np.minimum(fk, 1.0), np.minimum(fr, 1.0), same))
    out = np.empty(lo.shape[0])
    for q0 in range(0, lo.shape[0], block):
        sl = slice(q0, q0 + block)
        part = np.ones((lo[sl].shape[0], est.size))
        for a, (prefix, weight, k, r, fk, fr, same) in enumerate(axes):
            s, t = start[:, a][None, :], end[:, a][None, :]
            kk, rr = k[sl][:, None], r[sl][:, None]
            a0, a1 = np.maximum(s, kk), np.minimum(t, rr + 1)
            cov = np.where(a1 > a0, prefix[np.maximum(a1, a0)] - prefix[a0], 0.0)
            in_k = (kk >= s) & (kk < t)
            in_r = (rr >= s) & (rr < t) & ~same[sl][:, None]
            cov = cov - in_k * weight[kk] * (1 - fk[sl][:, None]) \
                - in_r * weight[rr] * (1 - fr[sl][:, None])
            w = prefix[t] - prefix[s]
            part *= np.where(w > 0, cov / np.where(w > 0, w, 1.0), 0.0)
        out[sl] = part @ est
    return out


def run(args):
    rows = []
    for name, pts, dom in bench_accuracy.datasets(args.dims, args.subsample, args.data):
        wl = bench_accuracy.make_workloads(args.dims, pts, dom, args.queries, seed=7)
        for eps in args.eps:
            for kind in args.kinds:
                lo, hi, truth = wl[kind]
                sq = {"count_many": [], "equal": [], "ends": []}
                for rep in range(args.reps):
                    syn = RectangleSynopsis.build(pts, domain=dom, epsilon=eps,
                                                  rng=ps.Rng(seed=1000 + rep))
                    rng = np.random.default_rng(rep)
                    sq["count_many"].append(np.mean((syn.count_many(lo, hi) - truth) ** 2))
                    for mode in ("equal", "ends"):
                        est = answers(syn, pts, lo, hi, mode, rng, args.margin)
                        sq[mode].append(np.mean((est - truth) ** 2))
                rmse = {k: float(np.sqrt(np.mean(v))) for k, v in sq.items()}
                rows.append((name, eps, kind, rmse))
                print(f"| {name} | {eps} | {kind} | {rmse['count_many']:.1f} | {rmse['equal']:.1f} "
                      f"| {rmse['ends']:.1f} | {rmse['ends'] / rmse['count_many']:.3f} |", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, choices=(2, 3), default=2)
    ap.add_argument("--data", choices=("default", "extra", "all"), default="default")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--kinds", type=lambda s: s.split(","), default=["data", "small", "uniform"])
    ap.add_argument("--margin", type=float, default=0.05,
                    help="chance that some empty end of an axis passes as heavy")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--subsample", type=int, default=None)
    args = ap.parse_args(argv)
    print("| data | eps | workload | count_many | equal (numpy) | per-end seals | ratio |")
    print("|---|---|---|---|---|---|---|")
    return run(args)


if __name__ == "__main__":
    main()
