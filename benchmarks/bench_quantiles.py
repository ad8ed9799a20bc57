"""Quantiles from one interval synopsis against OpenDP's quantile measurement, same total epsilon.

For each data set and epsilon in {0.1, 1}, three tasks at the same **total**
epsilon:

* ``median``  -- one quantile (OpenDP spends all of epsilon on it);
* ``tails`` -- q = 0.1, 0.9 (OpenDP: epsilon / 2 each);
* ``quartiles`` -- q = 0.25, 0.5, 0.75 (OpenDP: epsilon / 3 each, sequential
  composition);
* ``deciles`` -- q = 0.1 .. 0.9 (OpenDP: epsilon / 9 each);
* ``percentiles`` -- q = 0.01 .. 0.99 (OpenDP: epsilon / 99 each).

Ours builds one default :class:`~pydp_synopsis.IntervalSynopsis` per run at
epsilon and answers every task from it with ``quantile`` (post-processing:
no further budget).  ``private_quantiles`` is the package's dedicated
mechanism (:func:`pydp_synopsis.private_quantiles`: permute-and-flip, the
recursive split over the task's quantiles), run once per task and run at the
same total epsilon over the same candidates as OpenDP's.  OpenDP 0.16 runs ``make_private_quantile``'s mechanism:
``make_quantile_score_candidates`` (Smith 2011's scores) then
``make_noisy_max`` (its source composes exactly these two), with the noise
scale found by ``binary_search_param`` on OpenDP's own privacy map so the
whole chain is ``epsilon / k``-DP (``map(1) <= epsilon / k``, asserted); the
deterministic scores are computed once per quantile and the noisy max drawn
per run.  Candidates: every integer of the domain when it has at most
``--candidates`` (2^14) values, else that many equal-width grid points
(a user of OpenDP must give a finite list; OpenDP's exact noisy max costs
about 0.1 s per release over 2^14 candidates, 0.45 s over 2^16).  The
``grid`` column is the rank error of the best candidate: what the grid alone
costs OpenDP.

Error of an answer ``a`` for ``q``: the rank error ``dist(q n, [#{x < a},
#{x <= a}]) / n`` (0 when ``a`` is a ``q``-quantile of the data); a task's
error per run is the mean over its quantiles.  The table prints the mean
over runs for both and the ratio ours / OpenDP with a 95% bootstrap interval
over runs (``< 1``: ours is better).

Usage::

    python benchmarks/bench_quantiles.py                    # $PYDP_SYNOPSIS_DATA's flights
    PYDP_SYNOPSIS_DATA=tests/data python benchmarks/bench_quantiles.py   # the 30,000-row sample
    python benchmarks/bench_quantiles.py --quick            # smoke run

Seeds make our runs reproducible (benchmarks only); OpenDP draws its own
noise (not seedable).  Nothing is asserted about time.
"""
import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import pydp_synopsis as ps  # noqa: E402
from workloads import data_file  # noqa: E402

EPSILONS = (0.1, 1.0)
TASKS = {
    "median": np.array([0.5]),
    "tails": np.array([0.1, 0.9]),
    "quartiles": np.array([0.25, 0.5, 0.75]),
    "deciles": np.arange(1, 10) / 10,
    "percentiles": np.arange(1, 100) / 100,
}


def datasets(subsample=None, seed=0):
    """``[(name, values, (lo, hi)), ...]``: the flights of $PYDP_SYNOPSIS_DATA and the ZIP codes."""
    fl = np.load(data_file("flights-2001h1.npz"))
    zc = np.load(data_file("zipcodes.npz"))
    out = [("flights distance", fl["distance"].astype(np.int64), (0, 2**13 - 1)),
           ("flights delay", fl["delay"].astype(np.int64) + 1116, (0, 2**12 - 1)),
           ("flights minute", fl["minute"].astype(np.int64), (0, 2**18 - 1)),
           ("zip latitude", zc["latitude_e6"].astype(np.int64) + 90_000_000,
            (0, 180_000_000))]
    if subsample:
        pick = np.random.default_rng(seed)
        out = [(n, v if v.size <= subsample else
                v[np.sort(pick.choice(v.size, subsample, replace=False))], d)
               for n, v, d in out]
    return out


def rank_errors(sorted_values, answers, qs):
    """``dist(q n, [#{x < a}, #{x <= a}]) / n`` per answer (sorted data)."""
    n = sorted_values.size
    a = np.asarray(answers, dtype=np.int64)
    below = np.searchsorted(sorted_values, a, side="left")
    upto = np.searchsorted(sorted_values, a, side="right")
    t = qs * n
    return np.maximum(np.maximum(below - t, t - upto), 0) / n


def candidates(domain, most):
    """Every integer of the domain, or ``most`` equal-width grid points over it."""
    lo, hi = domain
    width = hi - lo + 1
    if width <= most:
        return np.arange(lo, hi + 1, dtype=np.int64)
    return np.array([lo + width * j // most for j in range(most)], dtype=np.int64)


class OpenDPQuantile:
    """OpenDP's quantile mechanism for one (data set, q, epsilon): scores once, draws per run."""

    def __init__(self, values, cands, q, epsilon):
        import opendp.prelude as dp
        dp.enable_features("contrib")
        space = (dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.symmetric_distance())
        self.cands = cands
        score = dp.t.make_quantile_score_candidates(*space, cands.tolist(), float(q))

        def chain(scale):
            return score >> dp.m.make_noisy_max(score.output_domain, score.output_metric,
                                                dp.max_divergence(), negate=True, scale=scale)

        scale = dp.binary_search_param(chain, d_in=1, d_out=float(epsilon), T=float)
        self.measure = dp.m.make_noisy_max(score.output_domain, score.output_metric,
                                           dp.max_divergence(), negate=True, scale=scale)
        spent = (score >> self.measure).map(1)
        if spent > epsilon * (1 + 1e-9):
            raise RuntimeError(f"OpenDP reports epsilon {spent} > {epsilon}")
        self.scores = score(values)                 # deterministic: once

    def release(self):
        return int(self.cands[self.measure(self.scores)])


def bootstrap_ratio(ours, peer, seed, reps=2000):
    """95% percentile bootstrap interval of mean(ours) / mean(peer), runs resampled
    (a resample where both are 0 counts as 1, where only OpenDP's is as inf)."""
    gen = np.random.default_rng(seed)
    o = ours[gen.integers(0, ours.size, (reps, ours.size))].mean(axis=1)
    p = peer[gen.integers(0, peer.size, (reps, peer.size))].mean(axis=1)
    r = np.full(reps, np.inf)
    np.divide(o, p, out=r, where=p > 0)
    r[(p == 0) & (o == 0)] = 1.0
    return (float(np.quantile(r, 0.025, method="lower")),
            float(np.quantile(r, 0.975, method="higher")))


def grid_floor(sorted_values, cands, qs):
    """Mean over ``qs`` of the smallest rank error of any candidate."""
    n = sorted_values.size
    below = np.searchsorted(sorted_values, cands, side="left")
    upto = np.searchsorted(sorted_values, cands, side="right")
    return float(np.mean([np.min(np.maximum(np.maximum(below - q * n, q * n - upto), 0)) / n
                          for q in qs]))


def geomean(rows, col):
    """Geometric mean of ``row[col] / OpenDP`` over the rows where both are positive."""
    ratios = [r[col] / r[4] for r in rows if r[4] > 0 and r[col] > 0]
    return math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")


def ratio_text(a, b):
    return "inf" if b == 0 and a > 0 else ("1" if b == 0 else f"{a / b:.3g}")


def run(args):
    t0 = time.time()
    data = [d for d in datasets(args.subsample)
            if not args.datasets or any(w in d[0] for w in args.datasets.split(","))]
    rows = []
    print(f"Rank error |rank(answer) - q n| / n, mean over {args.runs} runs (and over the "
          f"task's quantiles); OpenDP splits epsilon evenly over the task's quantiles.\n")
    print("| data | n | epsilon | task | ours | private_quantiles | OpenDP | grid | "
          "ours / OpenDP [95% CI] | private_quantiles / OpenDP [95% CI] |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---|---|")
    for name, values, domain in data:
        srt = np.sort(values)
        cands = candidates(domain, args.candidates)
        for eps in args.epsilons:
            ours = {t: np.zeros(args.runs) for t in args.tasks}
            syns = [ps.IntervalSynopsis.build(values, domain=domain, epsilon=eps,
                                              rng=ps.Rng(seed=1000 * r + 7))
                    for r in range(args.runs)]
            for task in args.tasks:
                qs = TASKS[task]
                for r, syn in enumerate(syns):
                    ours[task][r] = rank_errors(srt, syn.quantile(qs), qs).mean()
                flip = np.array([rank_errors(srt, ps.private_quantiles(
                    values, qs, domain=domain, epsilon=eps, candidates=args.candidates,
                    rng=ps.Rng(seed=1000 * r + 11)), qs).mean() for r in range(args.runs)])
                peer = np.zeros(args.runs)
                for q in qs:
                    mech = OpenDPQuantile(values, cands, q, eps / qs.size)
                    answers = [mech.release() for _ in range(args.runs)]
                    peer += rank_errors(srt, answers, np.full(args.runs, q))
                peer /= qs.size
                lo, hi = bootstrap_ratio(ours[task], peer, seed=len(rows))
                flo, fhi = bootstrap_ratio(flip, peer, seed=len(rows) + 10_000)
                o, p, f = ours[task].mean(), peer.mean(), flip.mean()
                rows.append((name, eps, task, o, p, lo, hi, f, flo, fhi))
                print(f"| {name} | {values.size:,} | {eps:g} | {task} | {o:.2e} | {f:.2e} | "
                      f"{p:.2e} | {grid_floor(srt, cands, qs):.1e} | {ratio_text(o, p)} "
                      f"[{lo:.3g}, {hi:.3g}] | {ratio_text(f, p)} [{flo:.3g}, {fhi:.3g}] |",
                      flush=True)
    print()
    for task in args.tasks:
        mine = [r for r in rows if r[2] == task]
        print(f"{task}: ours <= OpenDP in {sum(r[3] <= r[4] for r in mine)} of {len(mine)} "
              f"rows, geomean ratio {geomean(mine, 3):.3g}; private_quantiles <= OpenDP in "
              f"{sum(r[7] <= r[4] for r in mine)} of {len(mine)} rows, geomean ratio "
              f"{geomean(mine, 7):.3g}")
    print(f"({time.time() - t0:.0f} s; candidates per OpenDP release: at most "
          f"{args.candidates:,})")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="seeded runs per row (default 10)")
    ap.add_argument("--subsample", type=int, default=None, help="rows per data set (default: all)")
    ap.add_argument("--candidates", type=int, default=1 << 14,
                    help="most candidates of an OpenDP release (default 2^14)")
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    ap.add_argument("--datasets", default="",
                    help="only the data sets whose names contain one of these (comma-separated)")
    ap.add_argument("--tasks", default=",".join(TASKS),
                    help=f"comma-separated, of {', '.join(TASKS)} (default: all)")
    ap.add_argument("--quick", action="store_true", help="3 runs, 20,000 rows, 4096 candidates")
    args = ap.parse_args(argv)
    args.epsilons = [float(e) for e in args.epsilons.split(",")]
    args.tasks = args.tasks.split(",")
    if not set(args.tasks) <= set(TASKS):
        ap.error(f"--tasks: each one of {', '.join(TASKS)}")
    if args.quick:
        args.runs, args.subsample, args.candidates = 3, 20_000, 4096
    if args.runs < 2 or not all(e > 0 and math.isfinite(e) for e in args.epsilons):
        ap.error("--runs must be >= 2 and every epsilon positive")
    return run(args)


if __name__ == "__main__":
    main()
