"""Every speed target of the package in one table: ours, the floor measured in the same run, the ratio.

Rows (issue #17; sizes are the targets' unless ``--quick``):

* ``private_partition`` of 10^7 values uniform over [0, 2^64): the whole call
  (its sort included) and the kernel on presorted values, against ``np.sort``
  of the same array;
* ``IntervalSynopsis.build`` of the same values against ``np.sort``;
* ``count_many`` of 10^6 random intervals against two ``np.searchsorted``
  calls of the same endpoints into the segment ends;
* ``discrete_laplace`` (exact) against numpy's float ``Generator.laplace``
  (inexact, not DP-safe), throughput;
* one ``KaryTreeCounter.update`` / ``SparseStreamCounter.update`` from Python
  against the targets in microseconds (median of 2·10^5 single calls);
* the default 2-D ``RectangleSynopsis.build`` of 10^7 points against c
  ``np.sort`` calls, and the build and ``count_many`` with 1 thread against
  2 threads (``ps.set_threads``); the same for interval ``count_many``;
* the machine's own ceiling for those thread ratios: two independent
  ``np.sort`` calls one after the other against one per thread.

Usage::

    python benchmarks/bench_speed.py            # the targets' sizes (~2 min)
    python benchmarks/bench_speed.py --quick    # 10x smaller, seconds

Best of ``--repeat`` (3) for every timing; seeds for reproducibility only.
Nothing is asserted: the table is the result (docs/guide/speed.md).
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pydp_synopsis as ps  # noqa: E402


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def with_threads(n, fn):
    before = ps.set_threads(n)
    try:
        return fn()
    finally:
        ps.set_threads(before)


def update_us(make, calls):
    """Median microseconds of one ``update(1)`` over ``calls`` single calls (batches of 1000)."""
    counter = make()
    upd = counter.update
    per = []
    for _ in range(calls // 1000):
        t0 = time.perf_counter()
        for _ in range(1000):
            upd(1)
        per.append((time.perf_counter() - t0) / 1000)
    return float(np.median(per)) * 1e6


def rows(quick, repeat):
    n = 10**6 if quick else 10**7
    gen = np.random.default_rng(4)
    values = gen.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    dom = (0, 2**64 - 1)
    t_sort = best(lambda: np.sort(values), repeat)
    srt = np.sort(values)
    out = []

    t = best(lambda: ps.private_partition(values, domain=dom, epsilon=1.0, rng=ps.Rng(seed=1)),
             repeat)
    out.append((f"private_partition n={n:.0e}, D=2^64", t, "np.sort", t_sort, t / t_sort, "<= 1.5"))
    t = best(lambda: ps.private_partition(srt, domain=dom, epsilon=1.0, rng=ps.Rng(seed=1),
                                          presorted=True), repeat)
    out.append((f"  presorted", t, "np.sort", t_sort, t / t_sort, "<= 0.5"))
    t = best(lambda: ps.IntervalSynopsis.build(values, domain=dom, epsilon=1.0,
                                               rng=ps.Rng(seed=5)), repeat)
    out.append((f"IntervalSynopsis.build n={n:.0e}", t, "np.sort", t_sort, t / t_sort, "<= 2.0"))

    syn = ps.IntervalSynopsis.build(values, domain=dom, epsilon=1.0, rng=ps.Rng(seed=5))
    q = 10**5 if quick else 10**6
    a, b = gen.integers(0, 2**64 - 1, (2, q), dtype=np.uint64, endpoint=True)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    ends = syn.partition.end_offsets
    syn.count_many(lo[:10], hi[:10])                  # builds the lookup once
    t_ss = best(lambda: (np.searchsorted(ends, lo), np.searchsorted(ends, hi)), repeat)
    t_q2 = with_threads(2, lambda: best(lambda: syn.count_many(lo, hi), repeat))
    t_q1 = with_threads(1, lambda: best(lambda: syn.count_many(lo, hi), repeat))
    out.append((f"interval count_many {q:.0e} queries", t_q2, "2x searchsorted", t_ss,
                t_q2 / t_ss, "<= 0.3"))
    out.append(("  1 thread / 2 threads", t_q1, "2 threads", t_q2, t_q1 / t_q2, ">= 1.6"))

    size = 10**6 if quick else 10**7
    for scale in (1, 10, 1000, 10**6):
        np_gen = np.random.default_rng(1)
        t_np = best(lambda: np_gen.laplace(0.0, scale, size), repeat)
        rng = ps.Rng(seed=2)
        t_ex = best(lambda: ps.discrete_laplace(scale, size, rng=rng), repeat)
        out.append((f"discrete_laplace scale {scale:g}, M/s", size / t_ex / 1e6,
                    "numpy laplace M/s", size / t_np / 1e6, t_np / t_ex, ">= 1.0"))

    calls = 20_000 if quick else 200_000
    horizon = 10**7
    t_k = update_us(lambda: ps.KaryTreeCounter(horizon=horizon, epsilon=1.0, rng=ps.Rng(seed=3)),
                    calls)
    out.append(("KaryTreeCounter.update, us", t_k, "target us", 2.0, t_k / 2.0, "<= 1.0"))
    t_s = update_us(lambda: ps.SparseStreamCounter(horizon=horizon, epsilon=1.0,
                                                   rng=ps.Rng(seed=3)), calls)
    out.append(("SparseStreamCounter.update, us", t_s, "target us", 10.0, t_s / 10.0, "<= 1.0"))

    # the machine's own ceiling for the thread rows: two independent sorts,
    # one after the other against one per thread (a virtual machine's second
    # core is not always all ours)
    other = gen.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    t_seq = best(lambda: (np.sort(values), np.sort(other)), repeat)

    def two_sorts():
        return ps._threads.run_parts(np.sort, [(values,), (other,)])

    t_par = with_threads(2, lambda: best(two_sorts, repeat))
    out.append(("two np.sort, sequential / 2 threads (ceiling)", t_seq, "2 threads", t_par,
                t_seq / t_par, "(2.0 ideal)"))

    pts = gen.integers(0, 2**32, size=(n, 2), dtype=np.int64)
    rdom = [(0, 2**32 - 1)] * 2
    t_2sort = best(lambda: (np.sort(pts[:, 0]), np.sort(pts[:, 1])), repeat)

    def rect():
        return ps.RectangleSynopsis.build(pts, domain=rdom, epsilon=1.0, rng=ps.Rng(seed=2))

    t_r2 = with_threads(2, lambda: best(rect, repeat))
    t_r1 = with_threads(1, lambda: best(rect, repeat))
    out.append((f"RectangleSynopsis.build c=2 n={n:.0e}", t_r2, "2x np.sort", t_2sort,
                t_r2 / t_2sort, "<= 8"))
    out.append(("  1 thread / 2 threads", t_r1, "2 threads", t_r2, t_r1 / t_r2, ">= 1.6"))
    rsyn = rect()
    q = q // 10                                       # ~30 us per rectangle here
    c1, c2 = gen.integers(0, 2**32, size=(2, q, 2))
    rlo, rhi = np.minimum(c1, c2), np.maximum(c1, c2)
    t_c2 = with_threads(2, lambda: best(lambda: rsyn.count_many(rlo, rhi), repeat))
    t_c1 = with_threads(1, lambda: best(lambda: rsyn.count_many(rlo, rhi), repeat))
    out.append((f"rectangle count_many {q:.0e}, 1 / 2 threads", t_c1, "2 threads", t_c2,
                t_c1 / t_c2, ">= 1.6"))

    # a streamed table's rows read over refined partitions (every end split off), mapped
    # back to the released segments with the rows on an end counted: the C pass against
    # numpy's two gathers per axis (the code it replaced)
    from pydp_synopsis.rectangles.axes import refine_ends
    from pydp_synopsis.rectangles.kernels import Unrefine

    ends = [np.unique(np.r_[gen.integers(0, 2**32, 700_000), 2**32 - 1]).astype(np.uint64)
            for _ in range(2)]
    maps = [refine_ends(e)[1:] for e in ends]
    refined = np.column_stack([gen.integers(0, m[0].size, n) for m in maps]).astype(np.uint32)
    unrefine = Unrefine(maps)

    def gathers():
        seg = np.empty_like(refined)
        for a, (orig, seal) in enumerate(maps):
            seg[:, a] = orig[refined[:, a]]
            int(np.count_nonzero(seal[refined[:, a]]))
        return seg

    t_np = best(gathers, repeat)
    t_un = best(lambda: unrefine(refined, None, np.zeros(2, dtype=np.int64)), repeat)
    out.append((f"sealed cells of {n:.0e} rows (2 axes, 1.4e6 refined segments)", t_un,
                "numpy gathers", t_np, t_un / t_np, "<= 1.0"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10x smaller sizes (seconds)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (default 3)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    print(f"threads available: {ps.get_threads()}; best of {args.repeat}")
    print("| what | ours | floor | floor value | ratio | target |")
    print("|---|---:|---|---:|---:|---|")
    for what, ours, floor, value, ratio, target in rows(args.quick, args.repeat):
        print(f"| {what} | {ours:.4g} | {floor} | {value:.4g} | {ratio:.2f} | {target} |",
              flush=True)


if __name__ == "__main__":
    main()
