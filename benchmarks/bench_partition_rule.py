"""How the workload partition rule was found: PrivTree's options per declared class (issue 33).

For each 1-D data set of ``bench_accuracy.py`` (the default and the extra
sets) in the chosen half, each epsilon and each query kind, ours is built in
workload mode (``workload=`` the kind's class, :data:`bench_accuracy.WORKLOAD_OF`)
with every candidate's ``privtree_fanout`` / ``partition_share`` given
explicitly (so the rule itself never applies), ``--reps`` seeded builds each.
Printed per row: every candidate's ratio to the best peer (as the judge
computes it, peers cached with ``--peers-cache``; ``--no-peers``: skipped)
and its RMSE relative to the first candidate's; then geomean / worst per
(kind, epsilon, candidate).

The halves were fixed before measuring: ``tune`` (flights time, flights
distance, ZIP latitude, NYC air time, IMDb votes) to choose the rule,
``check`` (flights delay, ZIP longitude, NYC departure seconds, diamond
prices) to check it.

Usage::

    PYDP_SYNOPSIS_DATA=... python benchmarks/bench_partition_rule.py --half tune \\
        --kinds small --candidates "2:0.25 4:0.25 4:0.35 4:0.5 2:0.35" \\
        --subsample 100000 --reps 5 --queries 500 --peers-cache /tmp/peers.json
    python benchmarks/bench_partition_rule.py --half tune --epsilons 0.02,3 --no-peers \\
        --candidates "2:0.25 4:0.35" --reps 4

Seeds make runs reproducible (benchmarks only).  Nothing is asserted.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if __name__ == "__main__":
    sys.path.insert(1, os.path.dirname(HERE))     # the checkout's package first (as the judge)

import bench_accuracy as judge  # noqa: E402
from pydp_synopsis.partitions.cells import MAX_CELLS  # noqa: E402

__all__ = ["TUNE", "CHECK", "parse_candidates", "run", "main"]

#: The halves of the 1-D sets, fixed before any measurement.
TUNE = ("flights time ns", "flights distance", "zip latitude", "nyc air time", "movie votes")
CHECK = ("flights delay", "zip longitude", "nyc departure s", "diamond price")


def parse_candidates(text):
    """``"2:0.25 4:0.35 cells rule"`` as build options ``[{privtree_fanout, partition_share},
    ..., {partition: "cells"}, {}]`` (``cells``: every value its own segment, on domains of at
    most 2**20 values, a row on a larger domain prints nan for it and is left out of its
    summary; ``rule``: no option, so the workload rule itself decides)."""
    out = []
    for item in text.split():
        if item in ("cells", "rule"):
            out.append({"partition": "cells"} if item == "cells" else {})
            continue
        fanout, _, share = item.partition(":")
        out.append({"privtree_fanout": int(fanout), "partition_share": float(share)})
    if not out:
        raise ValueError("at least one candidate fanout:share")
    return out


def _ours(values, domain, eps, wl, reps, options):
    """The judge's workload-mode run of ours with ``options``; None where the candidate
    does not apply (cells on a domain above 2**20 values: refused before any draw)."""
    if options.get("partition") == "cells" and domain[1] - domain[0] + 1 > MAX_CELLS:
        return None
    return judge.run_ours(1, values, domain, eps, wl, reps, options, "workload")


def _sets(half, subsample, data):
    names = {"tune": TUNE, "check": CHECK, "all": TUNE + CHECK}[half]
    every = []
    for which in ("default", "extra"):
        if data in (which, "all"):
            every += judge.datasets(1, subsample, which)
    return [s for s in every if s[0] in names]


def run(args):
    cands = parse_candidates(args.candidates)
    eps_list = [float(e) for e in args.epsilons.split(",")]
    kinds = args.kinds.split(",")
    cache = {}
    if args.peers_cache and os.path.exists(args.peers_cache):
        with open(args.peers_cache) as fh:
            cache = json.load(fh)
    labels = [c.get("partition") or (f"{c['privtree_fanout']}:{c['partition_share']}" if c
                                     else "rule") for c in cands]
    print(f"# candidates (privtree_fanout:partition_share, cells, rule) {' '.join(labels)}; "
          f"{args.reps} builds, {args.queries} queries, subsample {args.subsample}")
    print("| data | eps | kind | " + " | ".join(f"{l} / best peer" for l in labels)
          + " | " + " | ".join(f"{l} / {labels[0]}" for l in labels[1:]) + " |")
    print("|---|---|---|" + "---|" * (2 * len(cands) - 1))
    summary = {}
    for name, values, domain in _sets(args.half, args.subsample, args.data):
        n = len(values)
        wl = judge.make_workloads(1, values, domain, args.queries, seed=7)
        shared = {}
        for eps in eps_list:
            for kind in kinds:
                lo, hi, truth = wl[kind]
                peers = None
                if not args.no_peers:
                    peers = {}
                    for peer in judge.PEERS_1D:
                        key = judge.peer_key(1, name, n, eps, kind, args.queries, args.reps, peer,
                                             args.peer_buckets)
                        if key not in cache:
                            cache[key] = judge.peer_mses(peer, 1, values, domain, eps, lo, hi,
                                                         truth, args.reps, shared,
                                                         args.peer_buckets)
                        peers[peer] = cache[key]
                mses = [_ours(values, domain, eps, {kind: wl[kind]}, args.reps, c)
                        for c in cands]
                mses = [None if m is None else m[kind][0] for m in mses]
                to_peer = [judge.ratio_interval(m, peers)[0] if peers and m is not None
                           else float("nan") for m in mses]
                to_first = [float(np.sqrt(np.mean(m) / np.mean(mses[0])))
                            if m is not None and mses[0] is not None else float("nan")
                            for m in mses[1:]]
                for label, r, f in zip(labels, to_peer, [1.0] + to_first):
                    summary.setdefault((kind, eps, label), []).append((r, f))
                print(f"| {name} | {eps} | {kind} | " + " | ".join(f"{r:.3f}" for r in to_peer)
                      + " | " + " | ".join(f"{f:.3f}" for f in to_first) + " |", flush=True)
        if args.peers_cache:
            with open(args.peers_cache, "w") as fh:
                json.dump(cache, fh, indent=0, sort_keys=True)
    print("\n| kind | eps | candidate | geomean / best peer | worst | geomean / first | worst |")
    print("|---|---|---|---|---|---|---|")
    for (kind, eps, label), rs in summary.items():
        rs = [(r, f) for r, f in rs if not np.isnan(f)] or rs     # sets the candidate ran on
        peer = [r for r, _ in rs]
        first = [f for _, f in rs]
        print(f"| {kind} | {eps} | {label} | {judge.geomean(peer):.3f} | {max(peer):.3f} | "
              f"{judge.geomean(first):.3f} | {max(first):.3f} |")
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--half", choices=("tune", "check", "all"), default="tune")
    ap.add_argument("--data", choices=("default", "extra", "all"), default="all")
    ap.add_argument("--kinds", default="small", help="comma-separated: data,small,uniform")
    ap.add_argument("--candidates", default="2:0.25 4:0.25 4:0.35 4:0.5",
                    help="space-separated privtree_fanout:partition_share (the first: the base)")
    ap.add_argument("--epsilons", default="0.1,1")
    ap.add_argument("--subsample", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--peers-cache", default=None)
    ap.add_argument("--peer-buckets", type=int, default=1 << 16,
                    help="equal-width cells of DAWA and OpenDP (2^16; smaller: smoke tests)")
    ap.add_argument("--no-peers", action="store_true", help="ours only: ratios to the first")
    args = ap.parse_args(argv)
    if args.data != "default":
        try:
            judge.extra_data.datasets(1, 10)
        except judge.extra_data.MissingData as exc:
            ap.exit(2, f"bench_partition_rule.py: {exc}\n")
    return run(args)


if __name__ == "__main__":
    main()
