"""Range sums: RMSE of ours against a flat DP histogram of sums and OpenDP's clipped sum.

Data: the 2001 flights (``tests/data/flights-2001h1.npz``, a 30,000-row sample;
``--full`` reads ``flights-2001h1.npz`` from ``$PYDP_SYNOPSIS_DATA``): x = the
departure minute of the half year (public domain ``[0, 2**18 - 1]``), v =
``distance`` clipped to ``[0, 2600]`` or ``delay`` clipped to ``[-30, 180]`` (public
bounds).  Workloads: ``--queries`` random ranges per class, short (1 hour),
medium (1 day), long (30 days), start uniform over the data's span.  The error
is against the true sums of the *clipped* values (clipping is the same for all).

At the same total epsilon per (data, epsilon, workload):

* ours: ``IntervalSynopsis.build(x, sum_of=v, sum_bounds=...)`` with its
  defaults (a quarter of epsilon to the partition, then half of the rest to the
  sums over blocks of 16 segments, apportioned by the counts; the counts come
  with it, and means);
* flat: a histogram of sums over public bins of ``w`` minutes, each bin's
  sum plus discrete Laplace noise of scale ``U / epsilon`` (parallel
  composition: one row is in one bin), a range answered by its whole bins and
  the covered fraction of its two end bins; ``w`` is the best of
  ``--flat-widths`` *for each row* (chosen with the truth: an optimistic peer);
* OpenDP 0.16: ``make_clamp >> make_sum >> make_laplace`` on the rows of each
  range, each of the ``q`` queries at ``epsilon / q`` (sequential composition:
  the same total epsilon for the workload); and, as a floor no workload reaches,
  ``OpenDP 1q``: one query alone at the whole epsilon (ten such queries per release).

Timings are not measured (accuracy only).  Run: ``python benchmarks/bench_sums.py``.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pydp_synopsis as ps  # noqa: E402
from workloads import data_file  # noqa: E402

__all__ = ["main", "CLASSES", "VALUES", "flat_sums", "opendp_sums"]

SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                      "flights-2001h1.npz")
DOMAIN = (0, 2**18 - 1)
#: Range widths in minutes.
CLASSES = {"short": 60, "medium": 1440, "long": 43200}
#: Value columns and their public clip bounds.
VALUES = {"distance": (0, 2600), "delay": (-30, 180)}


def load(full, subsample, seed):
    path = data_file("flights-2001h1.npz") if full else SAMPLE
    d = np.load(path)
    x, cols = d["minute"].astype(np.int64), {k: d[k].astype(np.int64) for k in VALUES}
    if subsample and subsample < x.size:
        keep = np.random.default_rng(seed).choice(x.size, subsample, replace=False)
        x, cols = x[keep], {k: v[keep] for k, v in cols.items()}
    return x, cols


def ranges(x, width, q, seed):
    g = np.random.default_rng(seed)
    lo = g.integers(int(x.min()), int(x.max()) - width + 2, q)
    return lo, lo + width - 1


def true_sums(x, v, lo, hi):
    order = np.argsort(x, kind="stable")
    xs, prefix = x[order], np.concatenate(([0], np.cumsum(v[order])))
    return (prefix[np.searchsorted(xs, hi, "right")]
            - prefix[np.searchsorted(xs, lo, "left")]).astype(np.float64)


def flat_sums(x, v, bounds, width, epsilon, lo, hi, rng):
    """The flat histogram's answers (see the module doc); noise from the package's sampler."""
    nbins = (DOMAIN[1] - DOMAIN[0]) // width + 1
    sums = np.bincount((x - DOMAIN[0]) // width, weights=v, minlength=nbins)
    # one row moves one bin's sum by at most max(|lo|, |hi|)
    sens = max(abs(bounds[0]), abs(bounds[1]))
    noisy = sums + ps.discrete_laplace(sens / epsilon, size=nbins, rng=rng)
    prefix = np.concatenate(([0.0], np.cumsum(noisy)))

    def upto(p):        # the estimate of [DOMAIN[0], p - 1]: whole bins, then a fraction
        b, r = np.divmod(p - DOMAIN[0], width)
        part = np.where(b < nbins, noisy[np.minimum(b, nbins - 1)] * r / width, 0.0)
        return prefix[b] + part
    return upto(hi + 1) - upto(lo)


def opendp_sums(x, v, bounds, epsilon, lo, hi):
    """OpenDP's clipped sum of each range's rows, each at ``epsilon`` (its own release)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    # add/remove one row moves the clipped sum by at most max(|lo|, |hi|)
    sens = max(abs(bounds[0]), abs(bounds[1]))
    meas = (space >> dp.t.then_clamp(tuple(int(b) for b in bounds)) >> dp.t.then_sum()
            >> dp.m.then_laplace(sens / epsilon))
    assert meas.map(1) <= epsilon * (1 + 1e-9)
    order = np.argsort(x, kind="stable")
    xs, vs = x[order], v[order]
    a, b = np.searchsorted(xs, lo, "left"), np.searchsorted(xs, hi, "right")
    return np.array([meas(vs[i:j].tolist()) for i, j in zip(a, b)], dtype=np.float64)


def rmse(est, truth):
    return float(np.sqrt(np.mean((np.asarray(est) - truth) ** 2)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilons", default="0.1,1")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--subsample", type=int, default=None)
    ap.add_argument("--flat-widths", default="15,60,240,1440")
    ap.add_argument("--full", action="store_true", help="the full data from $PYDP_SYNOPSIS_DATA")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    x, cols = load(args.full, args.subsample, args.seed)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    widths = [int(w) for w in args.flat_widths.split(",")]
    print(f"range sums, flights ({x.size:,} rows), x = departure minute, {args.queries} "
          f"ranges per class, {args.reps} releases each; RMSE of the sum\n")
    print("| value [bounds] | eps | ranges | ours | flat (best w) | OpenDP | OpenDP 1q | "
          "ours/flat | ours/OpenDP |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = {}
    for name, bounds in VALUES.items():
        v = np.clip(cols[name], *bounds)
        for eps in epsilons:
            errs = {k: {c: [] for c in CLASSES} for k in ("ours", "opendp", "one")}
            flat = {c: {w: [] for w in widths} for c in CLASSES}
            qs = {c: ranges(x, wd, args.queries, args.seed + i) for i, (c, wd)
                  in enumerate(CLASSES.items())}
            truth = {c: true_sums(x, v, *qs[c]) for c in CLASSES}
            for rep in range(args.reps):
                rng = ps.Rng(seed=(args.seed, rep, name, eps).__repr__().encode())
                syn = ps.IntervalSynopsis.build(x, domain=DOMAIN, epsilon=eps, sum_of=cols[name],
                                                sum_bounds=bounds, rng=rng)
                for c in CLASSES:
                    lo, hi = qs[c]
                    errs["ours"][c].append(syn.sum_many(lo, hi) - truth[c])
                    for w in widths:
                        flat[c][w].append(flat_sums(x, v, bounds, w, eps, lo, hi, rng)
                                          - truth[c])
                    errs["opendp"][c].append(opendp_sums(x, cols[name], bounds,
                                                         eps / args.queries, lo, hi) - truth[c])
                    errs["one"][c].append(opendp_sums(x, cols[name], bounds, eps, lo[:10],
                                                      hi[:10]) - truth[c][:10])
            for c in CLASSES:
                r = {k: rmse(np.concatenate(errs[k][c]), 0) for k in errs}
                fl = {w: rmse(np.concatenate(flat[c][w]), 0) for w in widths}
                best = min(fl, key=fl.get)
                out[(name, eps, c)] = {**r, "flat": fl[best], "flat_width": best}
                print(f"| {name} [{bounds[0]}, {bounds[1]}] | {eps:g} | {c} | {r['ours']:,.0f} | "
                      f"{fl[best]:,.0f} (w={best}) | {r['opendp']:,.0f} | {r['one']:,.0f} | "
                      f"{r['ours'] / fl[best]:.2f} | {r['ours'] / r['opendp']:.3f} |")
    def geomean(a, b):
        return math.exp(np.mean(np.log([o[a] / o[b] for o in out.values()])))
    print(f"\ngeomean ours/flat: {geomean('ours', 'flat'):.2f}; ours/OpenDP: "
          f"{geomean('ours', 'opendp'):.3f}")
    return out


if __name__ == "__main__":
    main()
