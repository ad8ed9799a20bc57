"""Timing channel of single counter updates (issue #12).

Run from the repository root after building in place::

    python benchmarks/bench_timing.py              # 10^5 updates per counter, ~1 min
    python benchmarks/bench_timing.py --quick      # 2 * 10^4 updates

When a counter's releases are observed one at a time, the time an update
takes must not depend on the noise it releases: discrete Laplace sampling
takes longer for larger |z|, so an update that draws the noise it releases
leaks its magnitude.  For each counter this script times ``update`` calls
with ``time.perf_counter_ns`` (garbage collector off, after a warm-up) on a
random 0/1 stream, computes the noise of every release (release minus the
true prefix sum, which the benchmark knows) and prints:

* ``rho``: Spearman rank correlation between the update's time and
  ``|noise|`` of its release (target ``|rho| < 0.02``);
* ``rho new``: the same with ``|z|`` of the noise terms the step *adds* to
  the release (the terms it had to draw before the pool; recovered from a
  seeded twin's checkpoints after the timing, so the timed loop is not
  disturbed) -- the sharper test of the sampler's timing;
* ``rho next``: time of update t against ``|noise|`` of release t + 1 (a
  pool refill at the end of update t draws noise released later: this is
  the residual aggregate channel);
* ``AUC``: probability that an update releasing ``|noise| >= 3b`` takes
  longer than one releasing ``|noise| <= b/4`` (b = node noise scale h/eps;
  0.5 = indistinguishable), with the two group sizes;
* the median update time.

Public structure (which nodes a step touches depends on t only) also moves
both time and |noise|; ``rho new`` is free of that confounder for the binary
counter, whose every step adds exactly one term.  Seeds are fixed (benchmark
only).  Nothing is asserted.
"""

import argparse
import gc
import time

import numpy as np
from scipy import stats

import pydp_synopsis as ps


def timed_updates(counter, xs):
    """Per-update wall time (ns) and the releases of ``counter.update`` on ``xs``."""
    n = len(xs)
    times = np.empty(n, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    items = [int(x) for x in xs]
    clock = time.perf_counter_ns
    update = counter.update
    gc.disable()
    try:
        for i in range(n):
            t0 = clock()
            r = update(items[i])
            t1 = clock()
            times[i] = t1 - t0
            out[i] = r
    finally:
        gc.enable()
    return times, out


def new_terms(make, xs):
    """Sum of |z| over the noise terms each step adds (replayed on a seeded twin)."""
    twin = make()
    before = twin.to_state()["slots"]
    added = np.zeros(len(xs))
    for i, x in enumerate(xs):
        twin.update(int(x))
        after = twin.to_state()["slots"]
        added[i] = sum(abs(b) for a, b in zip(before, after) if a != b and b != 0)
        before = after
    return added


def auc(high, low):
    """P(a time from ``high`` exceeds one from ``low``) (Mann-Whitney)."""
    if len(high) == 0 or len(low) == 0:
        return float("nan")
    u = stats.mannwhitneyu(high, low, alternative="two-sided").statistic
    return u / (len(high) * len(low))


def row(name, make, n, seed):
    xs = np.random.default_rng(seed).integers(0, 2, n)
    warm = make()
    timed_updates(warm, xs[: min(n, 2000)])  # warm caches and the allocator
    counter = make()
    times, out = timed_updates(counter, xs)
    noise = np.abs(out - np.cumsum(xs)).astype(np.float64)
    b = float(counter.noise_scale)
    rho = stats.spearmanr(times, noise).statistic
    rho_next = stats.spearmanr(times[:-1], noise[1:]).statistic
    added = new_terms(make, xs)
    rho_new = stats.spearmanr(times, added).statistic
    hi, lo = times[noise >= 3 * b], times[noise <= b / 4]
    print(f"{name:<22} {n:>7} {b:>6.1f} {rho:>+8.4f} {rho_new:>+8.4f} {rho_next:>+9.4f} "
          f"{auc(hi, lo):>7.4f} {len(hi):>7} {len(lo):>7} {np.median(times):>9.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 * 10^4 updates per counter")
    args = parser.parse_args()
    n = 2 * 10**4 if args.quick else 10**5
    horizon = n + 10
    print(f"## Single updates: time vs |released noise|, eps = 1, {n} updates of a random 0/1 stream")
    print(f"{'counter':<22} {'updates':>7} {'b':>6} {'rho':>8} {'rho new':>8} {'rho next':>9} "
          f"{'AUC':>7} {'n(>=3b)':>7} {'n(<=b/4)':>7} {'median ns':>9}")
    makers = [
        ("binary", lambda: ps.BinaryTreeCounter(horizon=horizon, epsilon=1.0, rng=ps.Rng(7))),
        ("kary k=19", lambda: ps.KaryTreeCounter(horizon=horizon, epsilon=1.0, rng=ps.Rng(7))),
    ]
    for name, make in makers:
        row(name, make, n, 1)


if __name__ == "__main__":
    main()
