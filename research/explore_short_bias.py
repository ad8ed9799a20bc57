"""Exploration, not a release: can a smoother answer inside a leaf remove the short-range bias?

The default interval build answers a query that cuts a leaf of its private
partition by the leaf's share of the cut ("uniform": the leaf's count spread
evenly over its values).  On short ranges almost all of the default build's
error is that spread's bias (docs/research.md, "Finer leaves for the same
budget"; ``explore_privtree.py --split``).  If the data inside a leaf follow a
slope, a piecewise-linear density fitted to the released leaves -- pure
post-processing -- would remove part of it without touching the partition.

This script measures the best case.  For each data set and epsilon it builds
the default synopsis, then answers the short queries from the leaves' **true**
counts (no release noise) in two ways:

``uniform``
    the release's estimator: the leaf's count times the share of its values
    inside the query;
``linear``
    a density that is linear inside each leaf, its mean the leaf's density,
    its slope the smaller (minmod) of the slopes to the two neighbouring
    leaves' densities (0 when they disagree in sign), clipped so the density
    stays non-negative: the leaf's count is kept and so is every answer made
    of whole leaves.

Each column's RMSE against the truth is the partition's bias under that
estimator; ``release`` is the real build's RMSE (``count_many``).  A linear
model fed the true counts is the best any smoothing of the released counts
can do (release noise only adds), so where ``linear`` is not below
``uniform`` no estimator of this kind can help.

Usage::

    python research/explore_short_bias.py --reps 3
    python research/explore_short_bias.py --data extra --kinds small,data
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "benchmarks"))   # data, workloads
if __name__ == "__main__":
    sys.path.insert(1, os.path.dirname(HERE))

import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis.intervals import IntervalSynopsis  # noqa: E402
import bench_accuracy  # noqa: E402

MODELS = ("uniform", "linear")


def leaf_counts(ends, keys):
    """``(first, ends, counts)`` of the leaves ending at the offsets ``ends`` over the
    sorted int64 offsets ``keys`` (their true counts)."""
    ends = np.asarray(ends, dtype=np.int64)
    first = np.concatenate([[0], ends[:-1] + 1])
    count = (np.searchsorted(keys, ends, "right") - np.searchsorted(keys, first)).astype(float)
    return first, ends, count


def slopes(first, ends, count):
    """Minmod slopes of the leaves' densities (per value), clipped so that the linear
    density ``d + s (t - mid)`` stays >= 0 over each leaf."""
    width = (ends - first + 1).astype(np.float64)
    dens = count / width
    mid = (first + ends) / 2.0
    if dens.size < 2:
        return np.zeros_like(dens)
    between = np.diff(dens) / np.diff(mid)
    left = np.concatenate([[0.0], between])
    right = np.concatenate([between, [0.0]])
    s = np.where(left * right > 0, np.sign(left) * np.minimum(np.abs(left), np.abs(right)), 0.0)
    cap = 2.0 * dens / width
    return np.clip(s, -cap, cap)


def answers(model, first, ends, count, lo, hi):
    """The ``model``'s answers to the offset ranges ``[lo, hi]`` from the leaf counts."""
    below = np.concatenate([[0.0], np.cumsum(count)])
    width = (ends - first + 1).astype(np.float64)
    dens = count / width
    s = slopes(first, ends, count) if model == "linear" else np.zeros_like(dens)
    mid = (first + ends) / 2.0

    def mass(x):                                     # values at or below x (x >= -1)
        k = np.minimum(np.searchsorted(ends, np.maximum(x, 0)), ends.size - 1)
        a, b = first[k] - 0.5, x + 0.5               # value t covers [t - 1/2, t + 1/2]
        part = dens[k] * (b - a) + s[k] * ((b - mid[k]) ** 2 - (a - mid[k]) ** 2) / 2.0
        return np.where(x < 0, 0.0, below[k] + part)

    return mass(hi) - mass(lo - 1)


def run(args):
    rows = []
    print("| data | eps | workload | release | " + " | ".join(f"{m} bias" for m in MODELS)
          + " | linear / uniform |")
    print("|---|---|---|---|" + "---|" * (len(MODELS) + 1))
    for name, values, domain in bench_accuracy.datasets(1, args.subsample, args.data):
        wl = bench_accuracy.make_workloads(1, values, domain, args.queries, seed=7)
        keys = np.sort((values - domain[0]).astype(np.int64))
        for eps in args.eps:
            for kind in args.kinds:
                lo, hi, truth = wl[kind]
                lo_o = (lo - domain[0]).astype(np.int64)
                hi_o = (hi - domain[0]).astype(np.int64)
                sq = {k: [] for k in ("release",) + MODELS}
                for r in range(args.reps):
                    syn = IntervalSynopsis.build(values, domain=domain, epsilon=eps,
                                                 rng=ps.Rng(seed=1000 + r))
                    sq["release"].append(np.mean((syn.count_many(lo, hi) - truth) ** 2))
                    first, ends, count = leaf_counts(syn.partition.end_offsets, keys)
                    for m in MODELS:
                        est = answers(m, first, ends, count, lo_o, hi_o)
                        sq[m].append(np.mean((est - truth) ** 2))
                rmse = {k: float(np.sqrt(np.mean(v))) for k, v in sq.items()}
                rows.append((name, eps, kind, rmse))
                ratio = rmse["linear"] / rmse["uniform"] if rmse["uniform"] > 0 else float("nan")
                print(f"| {name} | {eps} | {kind} | {rmse['release']:.1f} | "
                      + " | ".join(f"{rmse[m]:.1f}" for m in MODELS) + f" | {ratio:.3f} |",
                      flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_accuracy.row_arguments(ap, kinds=["small"], reps=3, queries=1000, subsample=None)
    args = ap.parse_args(argv)
    bench_accuracy.check_kinds(ap, args.kinds)
    return run(args)


if __name__ == "__main__":
    main()
