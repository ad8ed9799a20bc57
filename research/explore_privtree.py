"""Exploration, not a release: five ways to make PrivTree's leaves finer for short ranges, and DAWA's partition in its place.

The interval synopsis loses short ranges (0.1% of the data) to PrivTree and
DAWA by 1.0-2.6x (docs/benchmarks/intervals.md), mostly to
bias: a leaf's count is spread over its span, and a leaf at depth d stops
once it holds about ``d delta`` items, ``delta = lambda ln 2 = 2.08 /
epsilon_p``.  Each variant below is measured next to the default build on
the same data, queries and seeds of ``bench_accuracy.py``; only the
partition (or, for ``subleaf``, the placement of a cut leaf's estimate)
changes, the tree over the leaves is the package's own release
(``IntervalSynopsis._release_tree``).

``ratio X``  PrivTree with ``delta / lambda = x`` instead of ``ln 2``.  The
    privacy proof in :mod:`pydp_synopsis.privtree` bounds the loss by
    ``(1/lambda) (1 + 1/(1 - q))``, ``q = e^{-delta/lambda}``, for any ``q <
    1``: ``lambda = (2 - q) / ((1 - q) epsilon_p)``, ``delta = ceil(x
    lambda)``.  A small x makes ``delta`` smaller (1.46 / epsilon_p at x =
    0.3) but lambda larger, and an empty node splits with probability
    ``e^{-x} / 2`` (more empty leaves).  x = ln 2 is exactly the package's
    partition (the short tier checks the answers are equal).
``staged F T S``  Two PrivTrees.  Stage 1 over the domain with ``F
    epsilon_p`` and threshold ``theta = T lambda_1``; stage 2 inside every
    stage-1 leaf (public once released: parallel composition) with the
    rest of ``epsilon_p``, its depth restarting at S.  A leaf's ``d delta``
    then counts only stage 2's levels.  (Isolating a value at depth D still
    needs about ``max_i D_i delta_i`` items over the stages, which is least
    at one stage; what staging can gain is elsewhere.)
``subleaf SR J K``  A simulation: ``SR epsilon`` is taken from the tree;
    every leaf whose released estimate is at least ``K / (SR epsilon)`` gets
    noisy counts of its ``2^J`` public halving sub-cells (Laplace of scale
    ``1 / (SR epsilon)``, numpy's: a measurement of the model, never a
    release), and a cut leaf's estimate is placed by them instead of
    uniformly.
``grid G``  The public halving-tree nodes of depth ``G`` (``2^G`` cells, a
    grid fixed before any data is read) each grow their own PrivTree with
    all of ``epsilon_p``, its depth restarting at 0.  Every item is in one
    cell and each cell's tree is a PrivTree of that cell (its proof uses
    only that the biased count grows by ``delta`` per level upward, not the
    root's depth), so by parallel composition the partition is
    ``epsilon_p``-DP.  Unlike ``staged`` the first stage costs no budget:
    a value is isolated at global depth D once it holds about ``(D - G)
    delta`` items.  The price is the ``2^G`` cells themselves: every empty
    cell still ends in a leaf or two, which the tree over the leaves must
    carry.  (The leaves keep their global depths, whose weight bounds
    ``W_d`` are then loose but valid.)  ``grid 0`` is the package's build.
``pruned G F TAU``  ``grid G`` without most of its empty cells.  ``F
    epsilon_p`` buys a noisy count of every cell (exact discrete Laplace of
    scale ``s = 1 / (F epsilon_p)`` from the package's generator; each item
    is in one cell, so the counts together cost ``F epsilon_p``).  Then,
    bottom-up along the halving tree, two sibling nodes merge into their
    parent while both are merged-or-low and the parent's noisy total is
    below ``TAU s sqrt(k)`` (``k`` cells): a long empty stretch becomes a few
    dyadic nodes, as in the default tree.  This is post-processing of the
    counts.  Every resulting node grows a PrivTree restarting at depth 0
    with the rest of ``epsilon_p``, so the total is ``epsilon_p``.
``dawa S``  Not PrivTree: DAWA's noisy L1 partition (``peers_dawa.py``,
    numpy noise: a simulation) over ``min(2^16, D)`` equal cells with
    ``epsilon_p = S epsilon``, its buckets then released by the package's
    tree with the rest.  The noise on each interval's cost is twice
    DPBench's (which the DAWA peer keeps): the scale a one-variable coupling
    proof supports, since a neighbour can move the cost of the chosen bucket
    holding the item and that of a competing bucket by up to 2 each, in
    opposite directions.

Usage::

    python research/explore_privtree.py ratio 0.3 0.5 0.693 1 1.5 --peers-cache F
    python research/explore_privtree.py staged 0.3 10 1 --reps 10
    python research/explore_privtree.py subleaf 0.15 2 3
    python research/explore_privtree.py grid 4 8 10 12 --reps 10
    python research/explore_privtree.py pruned 8 0.1 4 --reps 10
    python research/explore_privtree.py dawa 0.25 --reps 10

The table gives per data set, epsilon and workload the RMSE of the default
build and of each variant (``--reps`` builds, 3 by default), and with
``--peers-cache`` (the JSON file of ``bench_accuracy.py``; missing entries
are computed and stored) the geometric mean and worst ratio to the best
peer per workload, as in ``bench_accuracy.py``'s summary.
"""
import argparse
import json
import math
import os
import sys
from fractions import Fraction

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))   # workloads, bench_accuracy
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "benchmarks", "peers"))
if __name__ == "__main__":
    sys.path.insert(1, os.path.dirname(HERE))

import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis import IntervalSynopsis  # noqa: E402
from pydp_synopsis import intervals as iv  # noqa: E402
from pydp_synopsis.noise import discrete_laplace  # noqa: E402
from pydp_synopsis.partition import Partition  # noqa: E402
from peers_dawa import WindowDeviations, l1_partition  # noqa: E402
from peers_rectangles import EqualWidthAxis  # noqa: E402
from pydp_synopsis.params import split_epsilon  # noqa: E402
from pydp_synopsis.partitions import privtree as pt  # noqa: E402
from pydp_synopsis.privtree import TreePartition, privtree_parameters  # noqa: E402
import explore_short_bias  # noqa: E402  -- research/, beside this script
import bench_accuracy  # noqa: E402

BETA = 0.05


def ratio_parameters(epsilon, x):
    """``(lambda, delta)`` of PrivTree with ``delta / lambda >= x`` at loss ``epsilon``:
    ``lambda = (2 - q) / ((1 - q) epsilon)`` rounded up, ``q = e^{-x}``.  At x = ln 2
    exactly the package's ``(3 / epsilon, ceil(lambda ln 2))``."""
    if abs(x - math.log(2.0)) < 1e-9:
        return privtree_parameters(epsilon)
    q = math.exp(-x)
    lam = Fraction((2 - q) / (1 - q)) * Fraction(1_000_000_001, 1_000_000_000) / epsilon
    lam = lam.limit_denominator(1 << 20)
    if lam * epsilon * (1 - Fraction(q)) < 2 - Fraction(q):    # limit_denominator rounded down
        lam += Fraction(1, 1 << 20)
    return lam, math.ceil(float(lam) * x * (1 + 1e-12))


def grow(keys, first, last, lam, delta, theta, depth0, rng):
    """Leaves (end offsets) and their true counts of one PrivTree over ``[first, last]``
    of the sorted uint64 ``keys`` with the given ``lambda``, ``delta`` and ``theta``,
    from the package's own driver of the C kernel."""
    return pt.privtree_kernel(keys, None, first, last, rng, scale=lam, bias=delta, theta=theta,
                              depth0=depth0)


def grow_cells(keys, first, last, lam, delta, depth0, rng):
    """``(ends, counts)`` of one PrivTree (theta 0, depth starting at ``depth0``) in
    every public cell ``[first[i], last[i]]`` (in domain order, covering the domain),
    empty or not, over the sorted uint64 ``keys``."""
    cut = np.searchsorted(keys, np.asarray(last).astype(np.uint64), side="right")
    start = np.concatenate([[0], cut[:-1]])
    parts = [grow(keys[s:t], a, b, lam, delta, 0, depth0, rng)
             for a, b, s, t in zip(np.asarray(first).tolist(), np.asarray(last).tolist(),
                                   start.tolist(), cut.tolist())]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def partition(variant, params, keys, size, eps_p, rng):
    """``(ends, counts)`` of the variant's partition of ``[0, size - 1]``."""
    if variant == "staged":
        share, t, restart = params
        e1 = eps_p * Fraction(share).limit_denominator(1000)
        lam1, d1 = privtree_parameters(e1)
        lam2, d2 = privtree_parameters(eps_p - e1)
        ends1, _ = grow(keys, 0, size - 1, lam1, d1, math.ceil(t * lam1), 0, rng)
        first1 = np.concatenate([[0], ends1[:-1] + 1]).astype(np.uint64)
        return grow_cells(keys, first1, ends1, lam2, d2, int(restart), rng)
    if variant == "grid":
        lam, delta = privtree_parameters(eps_p)
        return grow_cells(keys, *grid_cells(size, int(params[0])), lam, delta, 0, rng)
    if variant == "pruned":
        depth, share, tau = params
        e1 = eps_p * Fraction(share).limit_denominator(1000)
        lam, delta = privtree_parameters(eps_p - e1)
        first, last = grid_cells(size, int(depth))
        count = np.diff(np.searchsorted(keys, last.astype(np.uint64), side="right"), prepend=0)
        noisy = count + discrete_laplace(1 / e1, count.size, rng=rng)
        return grow_cells(keys, *pruned_cells(size, int(depth), noisy, tau * float(1 / e1)),
                          lam, delta, 0, rng)
    lam, delta = ratio_parameters(eps_p, params[0]) if variant == "ratio" \
        else privtree_parameters(eps_p)
    return grow(keys, 0, size - 1, lam, delta, 0, 0, rng)


def build(keys, domain, eps, seed, variant, params, cache=None):
    """The default synopsis of the sorted uint64 offsets ``keys`` with the variant's
    partition (``subleaf``: the default partition and ``SR epsilon`` less for the tree;
    ``cache``: see :func:`dawa_partition`)."""
    eps = Fraction(eps).limit_denominator(1000)
    rng = ps.Rng(seed=seed)
    eps_p, eps_t = split_epsilon(eps, Fraction(params[0]).limit_denominator(1000)
                                 if variant == "dawa" else iv.DEFAULT_SHARE)
    if variant == "subleaf":
        eps_t -= eps * Fraction(params[0]).limit_denominator(1000)
    lo, hi = domain
    if variant == "dawa":
        ends, counts = dawa_partition(keys, hi - lo + 1, float(eps_p), float(eps_t),
                                      np.random.default_rng(seed), cache)
        part = Partition(ends, domain=domain, epsilon=eps_p, beta=BETA / 2, threshold_factor=3)
    else:
        ends, counts = partition(variant, params, keys, hi - lo + 1, eps_p, rng)
        part = TreePartition._checked(ends, lo, hi, eps_p, BETA / 2)
    return IntervalSynopsis._release_tree(
        part, counts, eps_t, rng, beta=BETA, tree=iv.DEFAULT_TREE, fanout=iv.DEFAULT_FANOUT,
        consistency=True, estimator=iv.DEFAULT_ESTIMATOR, k=19, dlt=0,
        ratio=iv.DEFAULT_LEVEL_RATIO)


def dawa_partition(keys, size, eps_p, eps_t, nrng, cache=None):
    """``(ends, counts)`` of DAWA's noisy L1 partition (``dawa``, module doc) of the
    sorted uint64 ``keys`` over ``[0, size - 1]``: buckets of ``min(2^16, size)``
    equal cells, ends as uint64 offsets.  ``cache``: a dict keeping the cells'
    window deviations (data only, no noise) between builds of the same data, as
    the DAWA peer's ``deviations=`` does."""
    axis = EqualWidthAxis(0, size - 1, min(1 << 16, size))
    cells = np.bincount(axis.cell(keys), minlength=axis.m).astype(np.float64)
    dev = None if cache is None else cache.get("dawa deviations")
    if dev is None or not np.array_equal(dev.x, cells):
        dev = WindowDeviations(cells)
        if cache is not None:
            cache["dawa deviations"] = dev
    bounds, _ = l1_partition(dev, eps_p / 2, eps_t, nrng)
    counts = np.add.reduceat(cells, bounds[:-1]).astype(np.int64)
    return axis.ends[bounds[1:] - 1], counts


def halving(first, last, levels):
    """``levels`` rounds of public halving of the leaves ``[first, last]``: the
    sub-cells' ``(first, last, leaf)``, in domain order."""
    a, b, own = first.copy(), last.copy(), np.arange(first.size)
    for _ in range(levels):
        split = b > a
        mid = a + (b - a) // 2
        a = np.concatenate([a[~split], a[split], mid[split] + 1])
        b = np.concatenate([b[~split], mid[split], b[split]])
        own = np.concatenate([own[~split], own[split], own[split]])
    order = np.lexsort((a, own))
    return a[order], b[order], own[order]


def grid_levels(size, depth):
    """The public halving-tree nodes of every depth ``0 .. depth`` over ``[0, size -
    1]`` (``size <= 2^63``): a list of ``(first, last)`` int64 arrays in domain order
    (a node of width 1 stays whole)."""
    levels = [(np.zeros(1, dtype=np.int64), np.array([size - 1], dtype=np.int64))]
    for _ in range(depth):
        first, last, _ = halving(*levels[-1], 1)
        levels.append((first, last))
    return levels


def grid_cells(size, depth):
    """The nodes of ``depth`` of :func:`grid_levels`."""
    return grid_levels(size, depth)[-1]


def pruned_cells(size, depth, noisy, limit):
    """``pruned``'s nodes (module doc) as ``(first, last)`` int64 arrays in domain
    order: the grid cells of ``depth`` with noisy counts ``noisy``, merged
    bottom-up into their halving-tree parents while every child is merged-or-low
    and the parent's noisy total is below ``limit * sqrt(cells)``.  A function of
    public sizes and released counts only."""
    levels = grid_levels(size, depth)
    first, last = levels[depth]
    total = np.asarray(noisy, dtype=np.float64)
    cells = np.ones(first.size)
    low = total < limit
    out_first, out_last = [first[~low]], [last[~low]]          # busy cells stay whole
    for d in range(depth - 1, -1, -1):
        pfirst, plast = levels[d]
        parent = np.searchsorted(plast, last)                   # the node above each one
        kids = np.bincount(parent, minlength=pfirst.size)
        ptotal = np.bincount(parent, weights=total, minlength=pfirst.size)
        pcells = np.bincount(parent, weights=cells, minlength=pfirst.size)
        busy = np.bincount(parent, weights=~low, minlength=pfirst.size) > 0
        plow = ~busy & ((kids == 1) | (ptotal < limit * np.sqrt(pcells)))
        keep = low & ~plow[parent]                              # low, but the parent is not
        out_first.append(first[keep])
        out_last.append(last[keep])
        first, last, total, cells, low = pfirst, plast, ptotal, pcells, plow
    out_first.append(first[low])                                # the root, if all of it is low
    out_last.append(last[low])
    a, b = np.concatenate(out_first), np.concatenate(out_last)
    order = np.argsort(a)
    return a[order], b[order]


def subleaf_model(syn, keys, params, scale, rng):
    """The answers of one simulated sub-leaf release: a function of ``(lo, hi)``
    (offsets) placing the cut leaves' estimates by noisy sub-cell counts of
    Laplace ``scale`` (module doc), drawn once here."""
    _, levels, min_scales = params
    ends = syn.partition.end_offsets.astype(np.int64)
    first = np.concatenate([[0], ends[:-1] + 1])
    d0 = syn.domain[0]
    est = np.asarray(syn.count_many(first + d0, ends + d0), dtype=np.float64)
    refined = np.flatnonzero((est >= min_scales * scale) & (ends > first))
    sa, sb, own = halving(first[refined], ends[refined], int(levels))
    true = np.searchsorted(keys, sb, "right") - np.searchsorted(keys, sa, "left")
    w = np.maximum(true + rng.laplace(0.0, scale, true.size), 0.0)
    total = np.bincount(own, weights=w, minlength=refined.size)
    before = np.concatenate([[0.0], np.cumsum(w)])[:-1]
    before -= np.repeat(before[np.searchsorted(own, np.arange(refined.size))], np.bincount(
        own, minlength=refined.size))
    slot = np.full(ends.size, -1)
    slot[refined] = np.arange(refined.size)

    def moved(x):
        """Placed minus uniform share of the leaf at or below ``x``, and the leaf."""
        k = np.minimum(np.searchsorted(ends, x), ends.size - 1)
        inside = (x >= first[k]) & (x <= ends[k])
        uni = np.where(inside, (x - first[k] + 1) / (ends[k] - first[k] + 1.0), 0.0)
        placed = uni.copy()
        ok = inside & (slot[k] >= 0)
        s = np.searchsorted(sb, x[ok])
        mass = before[s] + w[s] * (x[ok] - sa[s] + 1) / (sb[s] - sa[s] + 1.0)
        t = total[slot[k[ok]]]
        placed[ok] = np.where(t > 0, mass / np.maximum(t, 1e-300), uni[ok])
        return placed - uni, k

    def answer(lo, hi):
        base = np.asarray(syn.count_many(lo + d0, hi + d0), dtype=np.float64)
        dl, kl = moved(lo - 1)
        dh, kh = moved(hi)
        return base - est[kl] * dl + est[kh] * dh

    return answer


def uniform_ideal(ends, keys, lo, hi):
    """The uniform estimator's answers over the leaves ending at ``ends`` with their
    true counts (no release noise) for the offset ranges ``[lo, hi]`` of the sorted
    uint64 ``keys``: its error against the truth is the partition's bias, and a
    release's error against it is the release noise (``--split``).  The estimator is
    :func:`explore_short_bias.answers`'s ``"uniform"`` model."""
    first, ends, count = explore_short_bias.leaf_counts(ends, keys.view(np.int64))
    return explore_short_bias.answers("uniform", first, ends, count, lo, hi)


def run(args):
    params = tuple(float(p) for p in args.params)
    variants = [(args.variant, (x,)) for x in params] \
        if args.variant in ("ratio", "grid", "dawa") \
        else [(args.variant, params)]
    cache = {}
    if args.peers_cache and os.path.exists(args.peers_cache):
        with open(args.peers_cache) as fh:
            cache = json.load(fh)
    cols = ["default"] + [f"{v} {' '.join(f'{x:g}' for x in p)}" for v, p in variants]
    print("| data | eps | workload | " + " | ".join(cols) + " | best peer |")
    print("|---|---|---|" + "---|" * (len(cols) + 1))
    rows, ratios = [], {}
    for name, values, domain in bench_accuracy.datasets(1, args.subsample, args.data):
        wl = bench_accuracy.make_workloads(1, values, domain, args.queries, seed=7)
        keys = np.sort((values - domain[0]).astype(np.uint64))     # offsets, below 2^63
        shared, deviations = {}, {}          # the peers' and dawa's data-only caches
        for eps in args.eps:
            sq = {(c, k): [] for c in cols for k in wl}
            split = {(c, k): ([], []) for c in cols for k in wl}    # --split: noise, bias
            leaves = {c: [] for c in cols}
            for r in range(args.reps):
                for c, (v, p) in zip(cols, [(None, ())] + variants):
                    seed = 1000 + r
                    if v is None:
                        syn = IntervalSynopsis.build(values, domain=domain, epsilon=eps,
                                                     rng=ps.Rng(seed=seed))
                    else:
                        syn = build(keys, domain, eps, seed, v, p, deviations)
                    leaves[c].append(len(syn))
                    if v == "subleaf":
                        model = subleaf_model(syn, keys.view(np.int64), p, 1.0 / (p[0] * eps),
                                              np.random.default_rng(seed))
                    for kind, (lo, hi, truth) in wl.items():
                        if v == "subleaf":
                            est = model((lo - domain[0]).astype(np.int64),
                                        (hi - domain[0]).astype(np.int64))
                        else:
                            est = np.asarray(syn.count_many(lo, hi), dtype=np.float64)
                        sq[c, kind].append(np.mean((est - truth) ** 2))
                        if args.split:
                            ideal = uniform_ideal(syn.partition.end_offsets, keys,
                                                  (lo - domain[0]).astype(np.int64),
                                                  (hi - domain[0]).astype(np.int64))
                            split[c, kind][0].append(np.mean((est - ideal) ** 2))
                            split[c, kind][1].append(np.mean((ideal - truth) ** 2))
            for kind, (lo, hi, truth) in wl.items():
                rmse = {c: float(np.sqrt(np.mean(sq[c, kind]))) for c in cols}
                best = None
                if args.peers_cache:
                    res = []
                    for peer in bench_accuracy.PEERS_1D:
                        key = bench_accuracy.peer_key(1, name, len(values), eps, kind,
                                                      args.queries, 3, peer)
                        if key not in cache:
                            cache[key] = bench_accuracy.peer_rmse(
                                peer, 1, values, domain, eps, lo, hi, truth, 3, shared)
                        res.append(cache[key])
                    best = min(res)
                    for c in cols:
                        ratios.setdefault((c, kind), []).append(rmse[c] / best)
                rows.append((name, eps, kind, rmse))
                cells = [f"{rmse[c]:.1f}" for c in cols]
                if args.split:
                    cells = [f"{x} ({math.sqrt(np.mean(split[c, kind][0])):.1f} / "
                             f"{math.sqrt(np.mean(split[c, kind][1])):.1f})"
                             for x, c in zip(cells, cols)]
                print(f"| {name} | {eps} | {kind} | " + " | ".join(cells)
                      + f" | {'-' if best is None else f'{best:.1f}'} |", flush=True)
            if args.split:
                print(f"| {name} | {eps} | leaves | "
                      + " | ".join(f"{np.mean(leaves[c]):.0f}" for c in cols) + " | |")
        if args.peers_cache:
            with open(args.peers_cache, "w") as fh:
                json.dump(cache, fh, indent=0, sort_keys=True)
    if ratios:
        print("\n" + "\n".join(bench_accuracy.summary_lines("options", cols, bench_accuracy.KINDS,
                                                          ratios)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant", choices=("ratio", "staged", "subleaf", "grid", "pruned", "dawa"))
    ap.add_argument("params", nargs="+", type=float,
                    help="ratio: x values; staged: F T S; subleaf: SR J K; grid: G values; "
                         "pruned: G F TAU; dawa: S values (module doc)")
    ap.add_argument("--data", choices=("default", "extra", "all"), default="default")
    ap.add_argument("--eps", type=float, nargs="+", default=list(bench_accuracy.EPSILONS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--subsample", type=int, default=None)
    ap.add_argument("--peers-cache", default=None)
    ap.add_argument("--split", action="store_true",
                    help="also print each RMSE's release noise / partition bias (the uniform "
                         "estimator on the leaves' true counts) and the mean number of leaves")
    args = ap.parse_args(argv)
    need = {"staged": 3, "subleaf": 3, "pruned": 3}.get(args.variant)
    if need and len(args.params) != need:
        ap.error(f"{args.variant} takes {need} parameters, got {len(args.params)}")
    if args.variant == "ratio" and min(args.params) <= 0:
        ap.error("ratio: every x must be > 0")
    if args.split and args.variant == "subleaf":
        ap.error("--split: subleaf places its estimates otherwise; use ratio, staged, grid or pruned")
    if args.variant == "grid" and not all(g == int(g) and 0 <= g <= 16 for g in args.params):
        ap.error("grid: every G must be an integer in [0, 16]")
    if args.variant == "pruned" and not (args.params[0] == int(args.params[0])
                                         and 1 <= args.params[0] <= 16
                                         and 0 < args.params[1] < 1 and args.params[2] > 0):
        ap.error("pruned: G must be an integer in [1, 16], F in (0, 1), TAU > 0")
    if args.variant == "dawa" and not all(0 < x < 1 for x in args.params):
        ap.error("dawa: every S must be in (0, 1)")
    if args.variant == "staged" and not 0 < args.params[0] < 1:
        ap.error("staged: F must be in (0, 1)")
    if args.variant == "subleaf" and not 0 < args.params[0] < 1 - iv.DEFAULT_SHARE:
        ap.error(f"subleaf: SR must be in (0, {1 - iv.DEFAULT_SHARE})")
    return run(args)


if __name__ == "__main__":
    main()
