"""Per-query error bars against the simultaneous bound, and the consistent releases.

For the demo data (ZIP-code centroids: latitude, latitude x longitude) and
the flights of 2001 H1 (departure minute; minute x distance; delay x
distance), default synopses at epsilon = 1, several builds, random queries
(half with endpoints uniform in the region, half between data points):

* ``med|err|``  median absolute error of the answers;
* ``med std``   median per-query noise standard deviation (exact, ``count_many(...,
  return_std=True)``);
* ``bound``     ``error_bound(0.95)``: the simultaneous worst-case bound (all queries
  at once), the only error bar before;
* ``half-width``  median half-width of the per-query 95% intervals
  (``confidence_intervals``), and its two parts: ``noise`` (rigorous
  Chernoff tail) and ``bias`` (bound on the boundary segments' or cells'
  within-segment error);
* ``cover``     fraction of queries whose true count lies in its 95% interval;
* ``cover 1.96s``  the same for ``answer -+ 1.96 std`` (noise only, a normal
  approximation: not a guarantee);
* ``rmse raw / >=0``  RMSE of the answers and of ``nonnegative=True``.

Then the continual counter on a real stream (departures per minute of one
airport): RMSE of the raw releases, of ``monotone=True`` (the online running
maximum) and of the offline isotonic regression of the same releases (pool
adjacent violators; not available online: it changes past outputs), and the
coverage of ``release -+ 1.96 std()``.

Usage::

    python benchmarks/bench_errorbars.py            # about 4 minutes on 2 cores
    python benchmarks/bench_errorbars.py --quick    # smoke run

Seeds make runs reproducible (benchmarks only).  Nothing is asserted.
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
from workloads import RectangleCounter, data_file, interval_counts  # noqa: E402

DEMO = HERE.parent / "pydp_synopsis" / "data" / "zipcodes.npz"
E6 = 1_000_000


def _queries(gen, q, region, points):
    """q rectangles (q, c): half uniform in ``region`` (c (lo, hi) pairs), half the
    bounding boxes of two data points."""
    c = len(region)
    half = q // 2
    a = np.column_stack([gen.integers(lo, hi + 1, (half, 2)) for lo, hi in region])
    a = a.reshape(half, c, 2) if c > 1 else a.reshape(half, 1, 2)
    uni_lo, uni_hi = a.min(axis=2), a.max(axis=2)
    p = points[gen.integers(0, len(points), q - half)]
    r = points[gen.integers(0, len(points), q - half)]
    lo = np.concatenate([uni_lo, np.minimum(p, r)])
    hi = np.concatenate([uni_hi, np.maximum(p, r)])
    return lo.astype(np.int64), hi.astype(np.int64)


def workloads(quick):
    zc = np.load(DEMO)
    lat, lon = zc["latitude_e6"].astype(np.int64), zc["longitude_e6"].astype(np.int64)
    fl = np.load(data_file("flights-2001h1.npz"))
    n = 300_000 if quick else fl["minute"].size
    idx = np.random.default_rng(0).permutation(fl["minute"].size)[:n]
    minute = fl["minute"][idx].astype(np.int64)
    dist = fl["distance"][idx].astype(np.int64)
    delay = fl["delay"][idx].astype(np.int64)
    lat_dom, lon_dom = (-90 * E6, 90 * E6), (-180 * E6, 180 * E6)
    return [
        ("demo: latitude (ZIP codes)", lat[:, None], [lat_dom],
         [(-15 * E6, 72 * E6)]),
        ("demo: lat x lon (ZIP codes)", np.column_stack([lat, lon]), [lat_dom, lon_dom],
         [(-15 * E6, 72 * E6), (-180 * E6, -60 * E6)]),
        (f"flights minute (n={n:,})", minute[:, None], [(0, 260640)], [(0, 260640)]),
        ("flights minute x distance", np.column_stack([minute, dist]),
         [(0, 260640), (0, 5000)], [(0, 260640), (0, 5000)]),
        ("flights delay x distance", np.column_stack([delay, dist]),
         [(-2880, 2880), (0, 5000)], [(-2880, 2880), (0, 5000)]),
    ]


def run_synopsis(name, pts, domain, region, builds, q, epsilon=1.0):
    c = pts.shape[1]
    gen = np.random.default_rng(1)
    lo, hi = _queries(gen, q, region, pts)
    lo = np.maximum(lo, [d[0] for d in domain])
    hi = np.minimum(hi, [d[1] for d in domain])
    if c == 1:
        true = interval_counts(pts[:, 0], lo[:, 0], hi[:, 0])
    else:
        true = RectangleCounter(pts).count(lo, hi)
    rows = {k: [] for k in ("err", "std", "half", "noise", "bias", "hit", "zhit", "clip", "neg")}
    bounds, t_build, t_bars = [], 0.0, 0.0
    for b in range(builds):
        rng = ps.Rng(seed=100 + b)
        t0 = time.perf_counter()
        if c == 1:
            s = ps.IntervalSynopsis.build(pts[:, 0], domain=domain[0], epsilon=epsilon, rng=rng)
            args = (lo[:, 0], hi[:, 0])
        else:
            s = ps.RectangleSynopsis.build(pts, domain=domain, epsilon=epsilon, rng=rng)
            args = (lo, hi)
        t_build += time.perf_counter() - t0
        t0 = time.perf_counter()
        bars = s.confidence_intervals(*args, 0.95)
        t_bars += time.perf_counter() - t0
        err = bars.answer - true
        rows["err"].append(err)
        rows["std"].append(bars.std)
        rows["half"].append(bars.noise + bars.bias)
        rows["noise"].append(bars.noise)
        rows["bias"].append(bars.bias)
        rows["hit"].append((bars.low <= true) & (true <= bars.high))
        rows["zhit"].append(np.abs(err) <= 1.96 * bars.std)
        rows["clip"].append(np.maximum(bars.answer, 0.0) - true)
        rows["neg"].append(bars.answer < 0)
        bounds.append(s.error_bound(0.95))
    r = {k: np.concatenate(v) for k, v in rows.items()}
    rmse = lambda e: float(np.sqrt(np.mean(e ** 2)))  # noqa: E731
    return (name, float(np.median(np.abs(r["err"]))), float(np.median(r["std"])),
            float(np.mean(bounds)), float(np.median(r["half"])), float(np.median(r["noise"])),
            float(np.median(r["bias"])), float(r["hit"].mean()), float(r["zhit"].mean()),
            rmse(r["err"]), rmse(r["clip"]), t_bars / builds / q * 1e6, float(r["neg"].mean()))


def isotonic(y):
    """Least-squares non-decreasing fit of y (pool adjacent violators), offline."""
    vals, wts, ends = [], [], []
    for i, v in enumerate(y.astype(np.float64)):
        vals.append(v)
        wts.append(1.0)
        ends.append(i)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            w = wts[-2] + wts[-1]
            vals[-2] = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / w
            wts[-2] = w
            ends[-2] = ends[-1]
            vals.pop()
            wts.pop()
            ends.pop()
    out = np.empty(y.size)
    start = 0
    for v, e in zip(vals, ends):
        out[start:e + 1] = v
        start = e + 1
    return out


def run_counter(code, runs, k=19, epsilon=1.0):
    fl = np.load(data_file("flights-2001h1.npz"))
    origin = int(np.flatnonzero(fl["airports"] == code)[0])
    stream = np.bincount(fl["minute"][fl["origin"] == origin] - 1, minlength=260640)
    truth = np.cumsum(stream)
    raw_e, mono_e, iso_e, low_e, hits, stds = [], [], [], [], [], []
    for r in range(runs):
        c = ps.KaryTreeCounter(horizon=stream.size, epsilon=epsilon, k=k, rng=ps.Rng(seed=200 + r))
        d = ps.KaryTreeCounter(horizon=stream.size, epsilon=epsilon, k=k, rng=ps.Rng(seed=200 + r))
        raw = c.update_many(stream)
        mono = d.update_many(stream, monotone=True)
        std = c.std(np.arange(1, stream.size + 1))
        raw_e.append(raw - truth)
        mono_e.append(mono - truth)
        iso_e.append(isotonic(raw) - truth)
        # a variant (not in the API): the running max of release - 2 std
        low_e.append(np.maximum.accumulate(np.maximum(raw - 2 * std, 0)) - truth)
        hits.append(np.abs(raw - truth) <= 1.96 * std)
        stds.append(std)
    rmse = lambda e: float(np.sqrt(np.mean(np.concatenate(e) ** 2)))  # noqa: E731
    return (code, int(truth[-1]), rmse(raw_e), rmse(mono_e), rmse(iso_e),
            float(np.mean(np.concatenate(mono_e))), float(np.median(np.concatenate(stds))),
            float(np.mean(np.concatenate(hits))), rmse(low_e))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a minute)")
    args = parser.parse_args()
    builds, q, runs = (2, 2000, 2) if args.quick else (5, 4000, 5)
    start = time.perf_counter()
    print(f"## Per-query error bars, epsilon = 1, default options, {builds} builds x {q} queries "
          "(half uniform, half between data points)\n")
    print("| data | med abs err | med std | simultaneous bound (0.95) | 95% half-width: "
          "median (noise + bias) | cover (95%) | cover 1.96 std | rmse raw / >= 0 (answers < 0) | "
          "us/query |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, pts, domain, region in workloads(args.quick):
        row = run_synopsis(name, pts, domain, region, builds, q)
        print(f"| {row[0]} | {row[1]:.1f} | {row[2]:.1f} | {row[3]:,.0f} | {row[4]:,.0f} "
              f"({row[5]:,.0f} + {row[6]:,.0f}) | {row[7]:.4f} | {row[8]:.3f} | {row[9]:.2f} / "
              f"{row[10]:.2f} ({row[12]:.1%}) | {row[11]:.1f} |", flush=True)
    print(f"\n## Continual counting, departures per minute (T = 260,640), k = 19, epsilon = 1, "
          f"{runs} runs\n")
    print("| airport | flights | rmse raw | rmse monotone (online running max) | "
          "mean bias monotone | running max of release - 2 std | rmse isotonic (offline) | "
          "med std | cover 1.96 std |")
    print("|---|---|---|---|---|---|---|---|---|")
    for code in ("ORD", "ABQ", "ACT"):
        r = run_counter(code, runs)
        print(f"| {r[0]} | {r[1]:,} | {r[2]:.1f} | {r[3]:.1f} | {r[5]:+.1f} | {r[8]:.1f} | "
              f"{r[4]:.1f} | {r[6]:.1f} | {r[7]:.3f} |", flush=True)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
