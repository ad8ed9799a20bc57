"""Per-query error bars by query width: coverage and width of the rigorous and calibrated intervals.

For each data set (the flights of 2001 H1 -- the 30,000-row sample shipped in
``tests/data``, or the full 3 million rows from ``$PYDP_SYNOPSIS_DATA`` --
and the ZIP-code centroids shipped with the package; 1-D: departure minute,
latitude; 2-D: minute x distance, latitude x longitude), default synopses at
epsilon = 1 over ``--builds`` seeded builds, and three query-width classes:
each query is centred on a random data point with a width log-uniform in

* ``short``  1e-5 to 1e-3 of the data's span (per axis),
* ``medium`` 1e-3 to 1e-1,
* ``long``   1e-1 to 1,

clipped to the domain.  Per class and interval (``confidence_intervals(...,
0.95, method=...)``): the coverage (fraction of queries x builds whose true
count lies in the interval) with its 95% Wilson interval, the median
half-width, the median |error| of the answers and their ratio.  Targets
(issue 32): coverage >= 0.95 and half-width <= 5x median |error| in every
class.

``--structure quadtree`` measures the quadtree over partition cells (the 2-D
sets only).

Then the continual counter on a real stream (departures per minute of one
airport): RMSE of the raw releases, of ``monotone=True`` (the online running
maximum) and of the offline isotonic regression of the same releases (pool
adjacent violators; not available online: it changes past outputs), and the
coverage of ``release -+ 1.96 std()``.

Usage::

    PYDP_SYNOPSIS_DATA=/path python benchmarks/bench_errorbars.py   # + the full flights
    python benchmarks/bench_errorbars.py --quick    # smoke run

Seeds make runs reproducible (benchmarks only).  Nothing is asserted.
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
from workloads import RectangleCounter, data_file, interval_counts  # noqa: E402

DEMO = HERE.parent / "pydp_synopsis" / "data" / "zipcodes.npz"
SAMPLE = HERE.parent / "tests" / "data" / "flights-2001h1.npz"
E6 = 1_000_000
#: Query-width classes: log-uniform fractions of the data's span per axis.
CLASSES = {"short": (1e-5, 1e-3), "medium": (1e-3, 1e-1), "long": (1e-1, 1.0)}
METHODS = ("rigorous", "calibrated")


def wilson(hits, n, z=1.959964):
    """The 95% Wilson score interval of a binomial proportion."""
    p = hits / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def class_queries(gen, q, points, domain, widths):
    """q boxes (q, c) centred on random data points, widths log-uniform in ``widths``
    times the data's span on each axis, clipped to the domain."""
    c = points.shape[1]
    span = points.max(axis=0).astype(np.float64) - points.min(axis=0) + 1
    centre = points[gen.integers(0, len(points), q)].astype(np.float64)
    frac = np.exp(gen.uniform(math.log(widths[0]), math.log(widths[1]), (q, c)))
    half = np.maximum(frac * span / 2, 0.5)
    lo = np.floor(centre - half + 0.5).astype(np.int64)
    hi = np.floor(centre + half - 0.5).astype(np.int64)
    dlo = np.array([d[0] for d in domain])
    dhi = np.array([d[1] for d in domain])
    lo = np.clip(lo, dlo, dhi)
    hi = np.clip(np.maximum(hi, lo), dlo, dhi)
    return lo, hi


def _subsample(n, size, seed):
    """Indices of a seeded subsample of ``size`` of ``n`` rows (all rows when None)."""
    if size is None or size >= n:
        return slice(None)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def datasets(full_flights=None, subsample=None):
    """``(name, points (n, c), domain)`` of the data sets: ZIP codes and flights
    (``subsample``: at most that many rows of each, for the short test tier)."""
    zc = np.load(DEMO)
    keep = _subsample(zc["latitude_e6"].size, subsample, 1)
    lat = zc["latitude_e6"][keep].astype(np.int64)
    lon = zc["longitude_e6"][keep].astype(np.int64)
    path = full_flights if full_flights is not None else SAMPLE
    fl = np.load(path)
    keep = _subsample(fl["minute"].size, subsample, 2)
    minute = fl["minute"][keep].astype(np.int64)
    dist = fl["distance"][keep].astype(np.int64)
    tag = f"flights (n={minute.size:,})"
    lat_dom, lon_dom = (-90 * E6, 90 * E6), (-180 * E6, 180 * E6)
    return [
        (f"{tag}: minute", minute[:, None], [(0, 260640)]),
        (f"ZIP codes (n={lat.size:,}): latitude", lat[:, None], [lat_dom]),
        (f"{tag}: minute x distance", np.column_stack([minute, dist]), [(0, 260640), (0, 5000)]),
        ("ZIP codes: lat x lon", np.column_stack([lat, lon]), [lat_dom, lon_dom]),
    ]


def measure(points, domain, builds, q, epsilon=1.0, confidence=0.95, seed=0, structure="auto"):
    """Per class and method: ``(hits, n, median half-width, median |error|)`` over
    ``builds`` seeded builds (queries drawn once per class); ``structure`` of the
    rectangle synopses."""
    c = points.shape[1]
    gen = np.random.default_rng(seed)
    counter = None if c == 1 else RectangleCounter(points)
    sorted_1d = np.sort(points[:, 0]) if c == 1 else None
    work = {}
    for cls, widths in CLASSES.items():
        lo, hi = class_queries(gen, q, points, domain, widths)
        true = (interval_counts(sorted_1d, lo[:, 0], hi[:, 0], presorted=True) if c == 1
                else counter.count(lo, hi))
        work[cls] = (lo, hi, true.astype(np.float64))
    acc = {(cls, m): ([], [], []) for cls in CLASSES for m in METHODS}
    for b in range(builds):
        rng = ps.Rng(seed=1000 + b)
        if c == 1:
            s = ps.IntervalSynopsis.build(points[:, 0], domain=domain[0], epsilon=epsilon, rng=rng)
        else:
            s = ps.RectangleSynopsis.build(points, domain=domain, epsilon=epsilon, rng=rng,
                                           structure=structure)
        for cls, (lo, hi, true) in work.items():
            args = (lo[:, 0], hi[:, 0]) if c == 1 else (lo, hi)
            for m in METHODS:
                bars = s.confidence_intervals(*args, confidence, method=m)
                hit, half, err = acc[cls, m]
                hit.append((bars.low <= true) & (true <= bars.high))
                half.append((bars.high - bars.low) / 2)
                err.append(np.abs(bars.answer - true))
    out = {}
    for key, (hit, half, err) in acc.items():
        hit = np.concatenate(hit)
        out[key] = (int(hit.sum()), hit.size, float(np.median(np.concatenate(half))),
                    float(np.median(np.concatenate(err))))
    return out


def coverage_table(sets, builds, q, out=print, structure="auto"):
    """Print the coverage table; returns ``{(data, class, method): row}``."""
    opts = "default options" if structure == "auto" else f"structure={structure!r} (2-D)"
    out(f"## 95% intervals by query width: epsilon = 1, {opts}, {builds} seeded builds "
        f"x {q} queries per class\n")
    out("| data | class | interval | coverage (95% Wilson) | median half-width | "
        "median abs error | half-width / abs error |")
    out("|---|---|---|---|---|---|---|")
    rows = {}
    for name, pts, domain in sets:
        if structure != "auto" and pts.shape[1] == 1:
            continue                # a rectangle structure: the 2-D sets only
        res = measure(pts, domain, builds, q, structure=structure)
        for cls in CLASSES:
            for m in METHODS:
                hits, n, half, err = res[cls, m]
                lo, hi = wilson(hits, n)
                ratio = half / err if err > 0 else math.inf
                rows[name, cls, m] = (hits / n, lo, hi, half, err, ratio)
                out(f"| {name} | {cls} | {m} | {hits / n:.4f} ({lo:.4f}-{hi:.4f}) | "
                    f"{half:,.1f} | {err:,.2f} | {ratio:.1f} |")
    return rows


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


def run_counter(code, runs, k=19, epsilon=1.0, path=SAMPLE):
    fl = np.load(path)
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a minute)")
    parser.add_argument("--builds", type=int, default=20, help="seeded builds per data set")
    parser.add_argument("--queries", type=int, default=500, help="queries per class")
    parser.add_argument("--no-counters", action="store_true", help="skip the counter table")
    parser.add_argument("--subsample", type=int, default=None,
                        help="at most this many rows of each data set (the test tier)")
    parser.add_argument("--structure", default="auto", choices=("auto", "adaptive", "quadtree"),
                        help="the rectangle structure (not auto: the 2-D sets only)")
    args = parser.parse_args(argv)
    builds, q, runs = (3, 200, 2) if args.quick else (args.builds, args.queries, 5)
    start = time.perf_counter()
    full = data_file("flights-2001h1.npz", required=False)
    sets = datasets(subsample=args.subsample)
    if full is not None and args.subsample is None:
        sets += [d for d in datasets(full) if d[0].startswith("flights")]
    rows = coverage_table(sets, builds, q, structure=args.structure)
    if not args.no_counters:
        path = full if full is not None else SAMPLE
        print(f"\n## Continual counting, departures per minute (T = 260,640), k = 19, "
              f"epsilon = 1, {runs} runs\n")
        print("| airport | flights | rmse raw | rmse monotone (online running max) | "
              "mean bias monotone | running max of release - 2 std | rmse isotonic (offline) | "
              "med std | cover 1.96 std |")
        print("|---|---|---|---|---|---|---|---|---|")
        for code in ("ORD", "ABQ", "ACT"):
            r = run_counter(code, runs, path=path)
            print(f"| {r[0]} | {r[1]:,} | {r[2]:.1f} | {r[3]:.1f} | {r[5]:+.1f} | {r[8]:.1f} | "
                  f"{r[4]:.1f} | {r[6]:.1f} | {r[7]:.3f} |", flush=True)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")
    return rows


if __name__ == "__main__":
    main()
