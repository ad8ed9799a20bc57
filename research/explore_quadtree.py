"""Exploration, not a release: a 2-D PrivTree (a quadtree over the plane) with flat leaf counts, for small boxes.

The rectangle synopsis loses small boxes on the ZIP codes at epsilon = 1 to
the PrivTree peer (2.3x, ``bench_accuracy.py``).  This script measures the
plain alternative: PrivTree's own 2-D method in the package's exact noise.

The partition (``share * epsilon = epsilon_p``).  The domain box is the root
of a quadtree: a node ``[s, e]`` (two axes) splits at the midpoints ``m = s +
(e - s) // 2`` of every axis of width >= 2 into 4 children (2 when one axis
has width 1; a node of width 1 on both axes is a leaf without a draw).
Top-down, a node of depth ``d`` holding ``c`` points splits iff

    ``max(theta - delta, c - d delta) + Z > theta``,   ``Z ~ DLap(lambda)``,

with ``lambda = 7 / (3 epsilon_p)`` (fanout 4), the integer ``delta =
ceil(lambda ln 4 (1 + 1e-12)) >= lambda ln 4`` and a public integer
threshold ``theta = -tk delta`` (``tk`` levels for free: an empty node
below depth ``tk`` is likely to split, as if the root sat ``tk`` levels
down).  ``lambda`` and ``delta`` are
:func:`pydp_synopsis.privtree.privtree_parameters` ``(epsilon_p, 4)``.

Privacy.  (1) The partition is ``epsilon_p``-DP: the discrete form of
[ZXX16]_ Theorem 3 / Corollary 1 written out in
:mod:`pydp_synopsis.partitions.privtree` holds for any public ``theta`` and
any number of children up to ``beta = 4``: adding a point moves the counts
of the tested nodes on its root path only, by one each, and their biased
counts grow by ``>= delta`` per level upward, so the loss is at most
``(1/lambda)(1 + sum_j 4^-j) = 7 / (3 lambda) = epsilon_p``.  (2) Given the
released leaves, every point is in exactly one leaf: the leaf counts plus
discrete Laplace of scale ``1 / (epsilon - epsilon_p)`` are
``(epsilon - epsilon_p)``-DP together (parallel composition).  (3) By
sequential (adaptive) composition the pair is ``epsilon``-DP; a box is
answered by summing the leaves' noisy counts times the box's share of each
leaf's area (uniformity inside a leaf), which is post-processing.

Why it was not adopted (docs/research.md, "A quadtree for small boxes"): it
wins the ZIP codes at epsilon = 1 (0.83 of PrivTree against today's 2.28)
but loses both flights rows (1.52x and 1.11x the best peer, where today's
synopsis is at 0.96 and 0.90).  The flights' points lie on lines (one
distance per route) and a small box's edges sit on data values: an edge cuts
whole lines inside the plane's leaves, whose points the uniform share puts
on the wrong side (``--edges``).  Leaves one distance wide along a line
need the minute axis halved as often, so many leaves, each with its own
noise; the per-axis partitions of today's synopsis end at the data's heavy
values instead.  (A heavy point, as in the ZIP codes, is isolated by a few
deep leaves.)

Usage::

    python research/explore_quadtree.py share=0.5,tk=4 share=0.55,tk=3 share=0.5 --reps 20 \
        --peers-cache F --edges

A variant is ``key=value,...`` with ``share`` (``epsilon_p / epsilon`` in
(0, 1), 0.5 by default), ``tk`` (an integer >= 0, 0 by default) and
``theta`` (an integer added to ``-tk delta``, 0 by default).  For every
small-box row of ``bench_accuracy.py`` (``datasets(2, --subsample)``,
``small_boxes`` with seed 7) the table gives the best peer's RMSE (PrivTree,
AG, UG; ``--reps`` builds, seeds ``2000 + r``), the RMSE of today's
``RectangleSynopsis.build(..., workload="short")`` (seeds ``1000 + r``) and
of each variant (seeds ``3000 + r``) with its ratio to the best peer and the
95% bootstrap interval of ``bench_accuracy.ratio_interval``; a variant's
cell also gives its bias (the same partition answered with its true leaf
counts) and its mean number of leaves.  ``--edges`` adds a line per row
from the first build (:func:`edge_lines`, :func:`segment_widths`): where a
box's edges fall, per axis.  ``--peers-cache FILE``: the peers'
per-build MSEs in ``bench_accuracy.py``'s JSON cache (missing entries are
computed and stored).

References
----------
.. [ZXX16] J. Zhang, X. Xiao, X. Xie, "PrivTree: A Differentially Private
   Algorithm for Hierarchical Decompositions", SIGMOD 2016: Algorithm 2,
   Theorem 3, Corollary 1.
"""
import argparse
import json
import os
import sys
import time
from fractions import Fraction

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))   # workloads, bench_accuracy
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "benchmarks", "peers"))
if __name__ == "__main__":
    sys.path.insert(1, os.path.dirname(HERE))

import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis.privtree import privtree_parameters  # noqa: E402
import bench_accuracy  # noqa: E402
import workloads  # noqa: E402

__all__ = ["quadtree_parameters", "split_decisions", "grow", "release", "answer", "build",
           "edge_lines", "segment_widths", "parse_variant", "main"]

#: A variant's keys and defaults (module doc).
DEFAULTS = {"share": 0.5, "tk": 0, "theta": 0}
#: Entries of one block of the (queries x leaves) share matrix in :func:`answer`.
BLOCK = 1 << 22


def quadtree_parameters(eps_p, tk=0, theta=0):
    """``(lambda, delta, theta)`` of the quadtree at ``eps_p`` (a Fraction):
    ``lambda = 7 / (3 eps_p)`` exactly, the integer ``delta >= lambda ln 4``
    and the public integer threshold ``theta - tk delta``."""
    lam, delta = privtree_parameters(eps_p, 4)
    return lam, delta, int(theta) - int(tk) * delta


def split_decisions(counts, depth, lam, delta, theta, rng):
    """PrivTree's split test of nodes of ``depth`` holding ``counts`` (int64): ``max(theta
    - delta, c - depth delta) + Z > theta``, one exact ``Z ~ DLap(lambda)`` each."""
    biased = np.maximum(theta - delta, counts - depth * delta)
    return biased + ps.discrete_laplace(lam, size=counts.size, rng=rng) > theta


def grow(points, sizes, lam, delta, theta, rng):
    """The quadtree's leaves over ``[0, sizes[0] - 1] x [0, sizes[1] - 1]``.

    ``points``: an ``(n, 2)`` int64 array of offsets inside the box.  Level by
    level in numpy: each point carries the index of its node on the current
    level; a level's counts are one ``bincount``, its decisions one draw of
    :func:`split_decisions` over the nodes that can split, and the points of
    the nodes that split move to the child given by their side of each midpoint.

    Returns ``(first, last, count, depth)``: the leaves' lower and upper
    corners (``(L, 2)`` int64, inclusive), true counts and depths, level by level.
    """
    first = np.zeros((1, 2), dtype=np.int64)
    last = np.array([[sizes[0] - 1, sizes[1] - 1]], dtype=np.int64)
    pts = np.asarray(points, dtype=np.int64)
    node = np.zeros(pts.shape[0], dtype=np.int64)
    out = ([], [], [], [])
    corner = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=bool)    # child k: upper half on axis a
    d = 0
    while first.shape[0]:
        k = first.shape[0]
        count = np.bincount(node, minlength=k).astype(np.int64)
        wide = last > first                                   # (k, 2): the axes of width >= 2
        split = np.zeros(k, dtype=bool)
        can = np.flatnonzero(wide.any(axis=1))
        split[can] = split_decisions(count[can], d, lam, delta, theta, rng)
        for acc, x in zip(out, (first[~split], last[~split], count[~split],
                                np.full(int((~split).sum()), d, dtype=np.int64))):
            acc.append(x)
        si = np.flatnonzero(split)
        s, e, w = first[si], last[si], wide[si]
        mid = np.where(w, s + (e - s) // 2, e)
        valid = ~(corner[None, :, :] & ~w[:, None, :]).any(axis=2)     # (|si|, 4)
        child = np.full(valid.shape, -1, dtype=np.int64)
        child[valid] = np.arange(int(valid.sum()))
        owner, corner_of = np.nonzero(valid)
        up = corner[corner_of]
        first = np.where(up, mid[owner] + 1, s[owner])
        last = np.where(up, e[owner], mid[owner])
        slot = np.full(k, -1, dtype=np.int64)
        slot[si] = np.arange(si.size)
        at = slot[node]
        keep = at >= 0                                        # points of the nodes that split
        pts, at = pts[keep], at[keep]
        side = (pts > mid[at]).astype(np.int64)
        node = child[at, side[:, 0] | (side[:, 1] << 1)]
        d += 1
    return tuple(np.concatenate(x) for x in out)


def release(count, eps_t, rng):
    """The leaves' counts plus exact discrete Laplace of scale ``1 / eps_t`` (one
    point is in one leaf: ``eps_t``-DP together)."""
    return count + ps.discrete_laplace(1 / eps_t, size=count.size, rng=rng)


def answer(first, last, values, lo, hi):
    """Box answers ``(q,)`` or ``(q, m)`` from leaf values ``(L,)`` or ``(L, m)``: each
    leaf contributes its value times the box's share of its area (integer overlaps,
    uniformity inside a leaf).  Blocks of :data:`BLOCK` entries of the share matrix."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    width = (last - first + 1).astype(np.float64)
    vals = np.asarray(values, dtype=np.float64)
    out = np.empty((lo.shape[0],) + vals.shape[1:])
    step = max(1, BLOCK // max(1, first.shape[0]))
    for a in range(0, lo.shape[0], step):
        b = min(lo.shape[0], a + step)
        share = np.ones((b - a, first.shape[0]))
        for k in range(2):
            top = np.minimum(last[None, :, k], hi[a:b, k, None])
            bot = np.maximum(first[None, :, k], lo[a:b, k, None])
            share *= np.maximum(top - bot + 1, 0) / width[None, :, k]
        out[a:b] = share @ vals
    return out


def build(points, sizes, eps, seed, share=0.5, tk=0, theta=0):
    """One seeded build: ``(first, last, count, noisy)`` of the leaves, ``share``
    of ``eps`` spent on the partition and the rest on the counts (module doc)."""
    eps = Fraction(eps).limit_denominator(1000)
    eps_p = eps * Fraction(share).limit_denominator(1000)
    rng = ps.Rng(seed=seed)
    lam, delta, th = quadtree_parameters(eps_p, tk, theta)
    first, last, count, _ = grow(points, sizes, lam, delta, th, rng)
    return first, last, count, release(count, eps - eps_p, rng)


def edge_lines(first, last, count, counter, lo, hi, base):
    """``[(rmse, width)]`` per axis k for the boxes ``[lo, hi]`` (user units; ``base`` the
    domain's lower corner) over leaves with their true counts: the RMSE of the answers on
    the boxes' two axis-k edge lines (the box with its axis k narrowed to ``lo_k`` or to
    ``hi_k``; their errors added per box), and the median axis-k width of the leaves that
    an axis-k edge cuts (meeting the edge line and reaching outside the box on axis k;
    nan if none)."""
    out = []
    for k in range(2):
        err, widths = 0.0, []
        for side in (lo, hi):
            a, b = lo.copy(), hi.copy()
            a[:, k] = b[:, k] = side[:, k]
            err = err + answer(first, last, count, a - base, b - base) - counter.count(a, b)
            meet = ((first[None] <= (b - base)[:, None]) & (last[None] >= (a - base)[:, None])).all(2)
            out_k = (first[None, :, k] < (lo - base)[:, None, k]) | \
                (last[None, :, k] > (hi - base)[:, None, k])
            widths.append(np.broadcast_to(last[:, k] - first[:, k] + 1, meet.shape)[meet & out_k])
        widths = np.concatenate(widths)
        out.append((float(np.sqrt(np.mean(err ** 2))),
                    float(np.median(widths)) if widths.size else float("nan")))
    return out


def segment_widths(syn, lo, hi):
    """The median width of the segment of ``syn``'s partition of each axis holding the
    boxes' edges on that axis (user units)."""
    out = []
    for k, part in enumerate(syn.partitions):
        ends = np.asarray(part.end_offsets).astype(np.int64)
        width = np.diff(ends, prepend=-1)
        edges = np.concatenate([lo[:, k], hi[:, k]]) - syn.domain[k][0]
        out.append(float(np.median(width[np.searchsorted(ends, edges)])))
    return out


def parse_variant(text):
    """``{"share": float, "tk": int, "theta": int}`` from ``key=value,...`` (module doc);
    ValueError naming the key and its range."""
    out = dict(DEFAULTS)
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key not in DEFAULTS or not value:
            raise ValueError(f"{item!r}: a variant is key=value,... with keys share, tk, theta")
        out[key] = float(value) if key == "share" else int(value)
    if not 0 < out["share"] < 1:
        raise ValueError(f"share must be in (0, 1), got {out['share']}")
    if out["tk"] < 0:
        raise ValueError(f"tk must be an integer >= 0, got {out['tk']}")
    return out


def run(args, variants):
    """Print the table; return ``[(name, eps, {column: (rmse, ratio, low, high)})]``."""
    cache = {}
    if args.peers_cache and os.path.exists(args.peers_cache):
        with open(args.peers_cache) as fh:
            cache = json.load(fh)
    print(f"# small boxes, {args.queries} queries x {args.reps} seeded builds of every method; "
          "cells: RMSE, ratio to the best peer [95% CI]; variants: (bias, leaves)")
    print("| data | eps | best peer | today (workload=short) | " + " | ".join(variants) + " |")
    print("|---|---|---|---|" + "---|" * len(variants))
    rows = []
    for name, values, domain in bench_accuracy.datasets(2, args.subsample):
        counter = workloads.RectangleCounter(values)
        lo, hi = bench_accuracy.small_boxes(args.queries, values, counter, seed=7)
        truth = counter.count(lo, hi).astype(np.float64)
        base = np.array([d[0] for d in domain], dtype=np.int64)
        sizes = [d[1] - d[0] + 1 for d in domain]
        pts, qlo, qhi = values - base, lo - base, hi - base
        for eps in args.eps:
            peers = {}
            for peer in bench_accuracy.PEERS_CD:
                key = bench_accuracy.peer_key(2, name, len(values), eps, "small", args.queries,
                                              args.reps, peer)
                if key not in cache:
                    cache[key] = bench_accuracy.peer_mses(peer, 2, values, domain, eps, lo, hi,
                                                          truth, args.reps, {})
                peers[peer] = cache[key]
            best = min(peers, key=lambda p: np.mean(peers[p]))
            mses = {"today": []}
            for r in range(args.reps):
                syn = bench_accuracy.build_ours(2, values, domain, eps, 1000 + r, {}, "short")
                mses["today"].append(float(np.mean(
                    (np.asarray(syn.count_many(lo, hi), dtype=np.float64) - truth) ** 2)))
                if r == 0 and args.edges:
                    edges = {"today": "segment widths " + " / ".join(
                        f"{w:g}" for w in segment_widths(syn, lo, hi))}
            extra = {}
            for v, opts in variants.items():
                mse, bias, leaves = [], [], []
                for r in range(args.reps):
                    first, last, count, noisy = build(pts, sizes, eps, 3000 + r, **opts)
                    est = answer(first, last, np.stack([noisy, count], 1), qlo, qhi)
                    mse.append(float(np.mean((est[:, 0] - truth) ** 2)))
                    bias.append(float(np.mean((est[:, 1] - truth) ** 2)))
                    leaves.append(count.size)
                    if r == 0 and args.edges:
                        lines = edge_lines(first, last, count, counter, lo, hi, base)
                        edges[v] = ("edge-line RMSE " + " / ".join(f"{e:.1f}" for e, _ in lines)
                                    + ", cut leaves " + " / ".join(f"{w:g}" for _, w in lines))
                mses[v] = mse
                extra[v] = f" ({np.sqrt(np.mean(bias)):.1f}, {np.mean(leaves):.0f})"
            cells = {c: (float(np.sqrt(np.mean(m))),) + bench_accuracy.ratio_interval(m, peers)
                     for c, m in mses.items()}
            rows.append((name, eps, cells))
            print(f"| {name} | {eps} | {best} {np.sqrt(np.mean(peers[best])):.1f} | "
                  + " | ".join(f"{cells[c][0]:.1f}: {cells[c][1]:.3f} [{cells[c][2]:.3f}, "
                               f"{cells[c][3]:.3f}]{extra.get(c, '')}" for c in mses) + " |",
                  flush=True)
            if args.edges:
                print(f"| {name} | {eps} | edges | " + " | ".join(edges[c] for c in mses) + " |")
        if args.peers_cache:
            with open(args.peers_cache, "w") as fh:
                json.dump(cache, fh, indent=0, sort_keys=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="+", help="key=value,... with share, tk, theta (module doc)")
    ap.add_argument("--eps", type=float, nargs="+", default=list(bench_accuracy.EPSILONS))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--subsample", type=int, default=50_000)
    ap.add_argument("--peers-cache", default=None)
    ap.add_argument("--edges", action="store_true",
                    help="after each row, from the first build: today's median segment width "
                         "at the boxes' edges per axis; each variant's RMSE on the boxes' edge "
                         "lines with true leaf counts and the median width of the leaves the "
                         "edges cut, per axis")
    args = ap.parse_args(argv)
    try:
        variants = {v: parse_variant(v) for v in args.variants}
    except ValueError as exc:
        ap.error(str(exc))
    if args.reps < 1 or args.queries < 1 or args.subsample < 1:
        ap.error("--reps, --queries and --subsample must be >= 1")
    if not all(0 < e <= 1e6 for e in args.eps):
        ap.error("--eps: every epsilon must be in (0, 1e6]")
    t0 = time.perf_counter()
    rows = run(args, variants)
    print(f"\n{time.perf_counter() - t0:.0f} s", flush=True)
    return rows


if __name__ == "__main__":
    main()
