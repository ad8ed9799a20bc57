"""Timing channel of single counter updates (issue #12), and their speed (issue #17).

Run from the repository root after building in place::

    PYTHONPATH=. python benchmarks/bench_timing.py          # 10^5 updates per row, ~2 min
    PYTHONPATH=. python benchmarks/bench_timing.py --quick  # 2 * 10^4 updates
    PYTHONPATH=. python benchmarks/bench_timing.py --speed  # the speed table alone, seconds

The first table, "One update from Python" (:func:`speed_rows`), gives for
each counter the time of one ``update(1)`` call (horizon 10^7, eps = 1):
median and mean microseconds per update over ``--calls`` calls (default
10^5) timed in batches of 100, next to the floor measured in the same run
-- the C function of the update called directly through cffi in the same
kind of loop, with arguments allocated beforehand and no lock
(``pds_counter_update_one`` for the tree counters, ``pds_partition_feed``
of one position for the sparse counter, whose update also feeds the inner
counter at each seal, about one position in a hundred) -- the ratio of
the medians and the target of issue #17 (2 us for the tree counters, 10 us
for the sparse counter).  Python and C batches alternate, so both see the
same load.

(``PYTHONPATH=/path/to/another/checkout`` measures another build: the
numbers before the pool were taken that way.)

When a counter's releases are observed one at a time, the time an update
takes must not depend on the noise it releases: discrete Laplace sampling
takes longer for larger |z|, so an update that draws the noise it releases
leaks its magnitude.  For each counter this script times ``update`` calls
with ``time.perf_counter_ns`` (garbage collector off, after a warm-up) on
random 0/1 streams, round robin over 16 counters (consecutive timings
belong to different counters, so the slow drift of one counter's noise
does not line up with the machine's load; ``--replays R`` replays the
same seeded run R times and keeps each update's least time), computes the noise of every release (release minus the
true prefix sum, which the benchmark knows) and prints:

* ``rho``: Spearman rank correlation between the update's time and
  ``|noise|`` of its release (target ``|rho| < 0.02``).  The time is first
  detrended (minus its running median over 201 updates): on a shared
  machine the load drifts over seconds, and ``|noise|``, whose terms stay
  in use for many steps, drifts too, so the raw correlation (``rho raw``)
  mixes in the machine's load; the detrended one keeps every per-update
  effect;
* ``rho|w``: the same, ranked within groups of releases summing the same
  number of noise terms (public: ``||rep(t)||_1``; a release of many terms
  has a larger |noise| and follows a step that did more work, whatever the
  values), so only what the values themselves do to the time remains;
* ``rho new``: the same with ``sum |z|`` over the noise terms the step
  *adds* to the release (the terms it had to draw before the pool;
  recovered from a seeded twin's checkpoints after the timing, so the timed
  loop is not disturbed), ranked within groups of steps adding the same
  number of terms (public: a carry adds many terms and takes longer,
  whatever their values) -- the sharper test of the sampler's timing;
* ``rho next``: time of update t against ``|noise|`` of release t + 1 (a
  pool refill at the end of update t draws noise released later: this is
  the residual aggregate channel);
* ``AUC``: probability that an update releasing ``|noise| >= 3b`` takes
  longer (detrended) than one releasing ``|noise| <= b/4`` (b = node noise scale h/eps;
  0.5 = indistinguishable), with the two group sizes;
* the median update time.

The rows marked ``(C)`` time only the C call of each update
(:func:`timed_kernel_calls`, a sensitivity probe on private state): the
Python around a call cost ~10 us with jitter far above the effect
measured before ``update`` took its one-item path (~1 us of Python now),
so the C rows show what the Python rows can only bound.

The last table, "Time against the secret item" (:func:`secret_row`,
issue #30 section 6), measures what an observer of one update's duration
learns about the item beyond what is public.  ``--counters`` counters of
one kind are stepped round robin, in a fresh random order every round;
counter j's item at round t is a secret random bit.  Within each round
(a public time t shared by all counters) the update times are ranked, and
the ranks, centred per round, are correlated with the centred bits, pooled
over all rounds: ``r(secret)``.  The same times against a second random bit
that is never fed (``control``) show the statistic's null spread in the
same run.  The 95% interval resamples rounds (bootstrap, 400 draws).
Verdict against the target ``|r| < 0.005``: ``ok`` if the interval lies
inside (-0.005, 0.005), ``LEAK`` if it lies outside, ``unclear`` if it
crosses a bound (measure more updates).  Time against the *release* is no
leak (the observer has the release); conditioning on t only, a cost that
depends on the release (CPython's cached ints -5..256) would show up here
too, so ``r(secret)`` is the stricter test.
``r|changed`` is the same correlation conditioned also on whether the
update changed the release (public: for the sparse counter, whether a
segment sealed).  The ``(C)`` row times the C call alone, its item read
from an array written before the loop; the ``[x]`` row times
``update_many([x])``.

    PYTHONPATH=. python benchmarks/bench_timing.py --secret               # that table alone, 10^6 updates
    PYTHONPATH=. python benchmarks/bench_timing.py --secret --secret-updates 200000

Seeds are fixed (benchmark only).  Nothing is asserted.
"""

import argparse
import gc
import time

import numpy as np
from scipy import ndimage, stats

import pydp_synopsis as ps


SPEED_HORIZON = 10**7
SPEED_BATCH = 100


def tree_floor(counter):
    """``run(n)``: n calls of ``pds_counter_update_one`` on the counter's C state
    (item 1, arguments allocated once, no lock): the floor of ``update(1)``.
    A build without it (an older checkout on PYTHONPATH) calls
    ``pds_counter_update_many`` with one-item buffers instead."""
    from pydp_synopsis._core import ffi, lib

    state, rng, out = counter._state, counter._rng._state, ffi.new("int64_t[1]")
    if not hasattr(lib, "pds_counter_update_one"):
        call, one = lib.pds_counter_update_many, ffi.new("int64_t[1]", [1])

        def run(n):
            for _ in range(n):
                if call(state, rng, one, out, 1):
                    raise RuntimeError("pds_counter_update_many refused")
        run.name = "pds_counter_update_many"
        return run
    call = lib.pds_counter_update_one

    def run(n):
        for _ in range(n):
            if call(state, rng, 1, out):
                raise RuntimeError("pds_counter_update_one refused")
    run.name = "pds_counter_update_one"
    return run


def sparse_floor(counter):
    """``run(n)``: n calls of ``pds_partition_feed`` for the next position with
    one item (arguments allocated once, no lock) on the sparse counter's
    partition: the floor of ``update(1)`` without its inner counter."""
    from pydp_synopsis import _exact
    from pydp_synopsis._core import ffi, lib

    part = counter._partition
    call, state, rng = lib.pds_partition_feed, part._state, part._rng._state
    pos, seal = ffi.new("uint64_t[1]"), ffi.new("uint64_t[1]")
    consumed, nseals, null = ffi.new("size_t *"), ffi.new("size_t *"), ffi.NULL

    def run(n):
        start = int(state.position)
        for i in range(start, start + n):
            pos[0] = i
            st = call(state, rng, pos, null, 1, i, consumed, seal, 1, nseals)
            while st == lib.PDS_EPRECISION:                 # rare: as the package does
                _exact.settle(state, rng)
                left = 1 - consumed[0]
                st = call(state, rng, pos if left else null, null, left, i, consumed, seal, 1, nseals)
            if st:
                raise RuntimeError("pds_partition_feed refused")
    run.name = "pds_partition_feed"
    return run


def speed_rows(calls):
    """Per counter: (name, median us, mean us, floor median us, floor name, target us)."""
    h = SPEED_HORIZON
    cases = [
        ("BinaryTreeCounter", lambda: ps.BinaryTreeCounter(horizon=h, epsilon=1.0, rng=ps.Rng(3)),
         tree_floor, 2.0),
        ("KaryTreeCounter k=19", lambda: ps.KaryTreeCounter(horizon=h, epsilon=1.0, rng=ps.Rng(3)),
         tree_floor, 2.0),
        ("SparseStreamCounter", lambda: ps.SparseStreamCounter(horizon=h, epsilon=1.0, rng=ps.Rng(3)),
         sparse_floor, 10.0),
    ]
    out = []
    clock = time.perf_counter_ns
    for name, make, floor, target in cases:
        counter, twin = make(), make()
        upd, raw = counter.update, floor(twin)

        def python(n):
            for _ in range(n):
                upd(1)

        for run in (python, raw):
            run(1000)                                      # warm up
        batches = max(1, calls // SPEED_BATCH)
        per = {python: np.empty(batches), raw: np.empty(batches)}
        gc.disable()
        try:
            for b in range(batches):
                for run in ((python, raw) if b % 2 else (raw, python)):
                    t0 = clock()
                    run(SPEED_BATCH)
                    per[run][b] = (clock() - t0) / SPEED_BATCH / 1000
        finally:
            gc.enable()
        out.append((name, float(np.median(per[python])), float(per[python].mean()),
                    float(np.median(per[raw])), raw.name, target))
    return out


def print_speed(calls):
    print(f"## One update from Python: us per update(1), horizon 10^7, eps = 1, {calls} calls in "
          f"batches of {SPEED_BATCH}; floor: the C call alone, same loop, batches alternating")
    print(f"{'counter':<22} {'median':>7} {'mean':>7} {'floor':>7} {'ratio':>6} {'target':>7}  floor call")
    for name, med, mean, floor, floor_name, target in speed_rows(calls):
        print(f"{name:<22} {med:>7.2f} {mean:>7.2f} {floor:>7.2f} {med / floor:>6.2f} "
              f"{'<= ' + format(target, 'g'):>7}  {floor_name}", flush=True)


def timed_updates(counters, xs):
    """Per-update wall time (ns) and release of ``update`` calls, round robin.

    ``xs[j]`` is the stream of ``counters[j]``; update i of every counter is
    timed before update i + 1 of any (time order: step-major).  Returns
    step-major arrays.
    """
    m, steps = xs.shape
    times = np.empty(m * steps, dtype=np.int64)
    out = np.empty(m * steps, dtype=np.int64)
    items = xs.T.ravel().tolist()
    updates = [c.update for c in counters] * steps
    clock = time.perf_counter_ns
    gc.disable()
    try:
        for i in range(m * steps):
            t0 = clock()
            r = updates[i](items[i])
            t1 = clock()
            times[i] = t1 - t0
            out[i] = r
    finally:
        gc.enable()
    return times, out


def timed_kernel_calls(counters, xs):
    """As :func:`timed_updates`, timing only the C call of each update.

    A sensitivity probe: it calls ``pds_counter_update_many`` on the
    counters' private C state (benchmark only), so the ~10 us of Python
    around a call and its jitter no longer hide effects of tens of ns.
    """
    from pydp_synopsis._core import ffi, lib

    m, steps = xs.shape
    times = np.empty(m * steps, dtype=np.int64)
    out = np.empty(m * steps, dtype=np.int64)
    cells = []
    for c in counters:
        x, o = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        cells.append((c._state, c._rng._state, x, o, ffi.from_buffer("int64_t[]", x),
                      ffi.from_buffer("int64_t[]", o)))
    items = xs.T.ravel().tolist()
    clock, call = time.perf_counter_ns, lib.pds_counter_update_many
    gc.disable()
    try:
        for i in range(m * steps):
            state, rng, x, o, xp, op = cells[i % m]
            x[0] = items[i]
            t0 = clock()
            status = call(state, rng, xp, op, 1)
            t1 = clock()
            times[i] = t1 - t0
            out[i] = o[0]
            if status:
                raise RuntimeError(f"pds_counter_update_many returned {status}")
    finally:
        gc.enable()
    return times, out


def new_terms(make, xs):
    """Per step: the sum of |z| over the noise terms it adds, and how many it
    adds (public: it follows from the digits of t alone).  Replayed on a
    seeded twin, reading the digits and slots of its checkpoints."""
    twin = make()
    k = twin.k
    subtraction = getattr(twin, "subtraction", k > 2)  # release 0.1: odd k only
    low = 0 if not subtraction else -((k - 1) // 2) if k % 2 else -(k // 2 - 1)
    high = low + k - 1
    before = twin.to_state()
    added, count = np.zeros(len(xs)), np.zeros(len(xs), dtype=np.int64)
    for i, x in enumerate(xs):
        twin.update(int(x))
        after = twin.to_state()
        new = []
        for level, (d0, d1) in enumerate(zip(before["digits"], after["digits"])):
            if d0 == d1:
                continue
            if d0 == high and d1 == low:          # a carry: |low| new terms
                new += after["slots"][level * high:level * high - low]
            else:                                  # the stop level
                if d0 >= 0:
                    new.append(after["slots"][level * high + d0])
                break
        added[i], count[i] = sum(abs(z) for z in new), len(new)
        before = after
    return added, count


def path_weights(counter, steps):
    """||rep(t)||_1 for t = 1..steps: how many noise terms release t sums (public)."""
    k = counter.k
    subtraction = getattr(counter, "subtraction", k > 2)
    low = 0 if not subtraction else -((k - 1) // 2) if k % 2 else -(k // 2 - 1)
    out = np.empty(steps, dtype=np.int64)
    for t in range(1, steps + 1):
        w, v = 0, t
        while v:
            d = (v - low) % k + low
            w += abs(d)
            v = (v - d) // k
        out[t - 1] = w
    return out


def stratified_spearman(a, b, strata):
    """Spearman correlation of a and b after ranking each within its stratum
    (a public quantity that moves both), so the public structure cancels."""
    ra, rb = np.empty(len(a)), np.empty(len(b))
    for g in np.unique(strata):
        m = strata == g
        ra[m] = stats.rankdata(a[m]) / m.sum()
        rb[m] = stats.rankdata(b[m]) / m.sum()
    return stats.spearmanr(ra, rb).statistic


def auc(high, low):
    """P(a time from ``high`` exceeds one from ``low``) (Mann-Whitney)."""
    if len(high) == 0 or len(low) == 0:
        return float("nan")
    u = stats.mannwhitneyu(high, low, alternative="two-sided").statistic
    return u / (len(high) * len(low))


def row(name, make, n, m, seed, replays, timed=None):
    timed = timed or timed_updates
    steps = n // m
    xs = np.random.default_rng(seed).integers(0, 2, (m, steps))
    timed([make(j) for j in range(m)], xs[:, :200])  # warm caches and the allocator
    # The same seeded run replayed: identical releases, so each update's
    # time is the least of its replays (load spikes filtered out).
    runs = []
    for _ in range(replays):
        counters = [make(j) for j in range(m)]
        runs.append(timed(counters, xs))
    assert all(np.array_equal(out, runs[0][1]) for _, out in runs)
    times, out = np.min([t for t, _ in runs], axis=0), runs[0][1]
    truth = np.cumsum(xs, axis=1).T.ravel()  # step-major, as the times
    noise = np.abs(out - truth).astype(np.float64)
    b = float(counters[0].noise_scale)
    raw = stats.spearmanr(times, noise).statistic
    det = times - ndimage.median_filter(times.astype(np.float64), size=201, mode="nearest")
    rho = stats.spearmanr(det, noise).statistic
    rho_next = stats.spearmanr(det[:-m], noise[m:]).statistic  # the same counter's next release
    weight = np.tile(path_weights(counters[0], steps), (m, 1)).T.ravel()
    rho_w = stratified_spearman(det, noise, weight)
    added, count = (np.stack(v, axis=1).ravel() for v in zip(*(new_terms(lambda j=j: make(j), xs[j])
                                                                for j in range(m))))
    rho_new = stratified_spearman(det, added, count)
    hi, lo = det[noise >= 3 * b], det[noise <= b / 4]
    print(f"{name:<14} {m * steps:>7} {b:>5.1f} {raw:>+8.4f} {rho:>+8.4f} {rho_w:>+8.4f} {rho_new:>+8.4f} "
          f"{rho_next:>+9.4f} "
          f"{auc(hi, lo):>7.4f} {len(hi):>7} {len(lo):>8} {np.median(times):>9.0f}")


#: Target of issue #30: |r(time, secret item | t)| below this.
SECRET_TARGET = 0.005


def within_round_r(times, labels, public=None, boot=400, seed=0):
    """Pooled within-round rank correlation of ``times`` and ``labels``, and its 95% interval.

    ``times`` and ``labels`` are (rounds, m) arrays, one row per public time
    t.  The times are ranked within their row (ties in counter order), ranks and
    labels are centred per row, and the Pearson correlation of the pooled
    centred values is returned with a bootstrap interval over rows
    (``boot`` resamples).  A public quantity shared by a row (the time t,
    the machine's load during those few microseconds) cancels.  With
    ``public`` (a (rounds, m) array of small ints, e.g. whether the release
    changed), the ranking and centring are within the cells of equal
    ``public`` in a row: the correlation conditioned on that output too.
    """
    rounds, m = times.shape
    cell = np.zeros((rounds, m), dtype=np.int64) if public is None else np.asarray(public, dtype=np.int64)
    key = (np.arange(rounds)[:, None] * (int(cell.max()) + 1) + cell).ravel()
    t, lab = times.ravel(), labels.ravel().astype(np.float64)
    order = np.lexsort((t, key))
    k_sorted = key[order]
    starts = np.flatnonzero(np.r_[True, k_sorted[1:] != k_sorted[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    group = np.repeat(np.arange(len(starts)), sizes)
    rank = np.arange(len(order)) - np.repeat(starts, sizes)
    a = np.empty(len(order))
    a[order] = rank - (sizes[group] - 1) / 2.0                 # centred rank within its cell
    g_of = np.empty(len(order), dtype=np.int64)
    g_of[order] = group
    b = lab - (np.bincount(g_of, lab) / np.bincount(g_of))[g_of]   # centred label within its cell
    row = np.repeat(np.arange(rounds), m)
    sab, saa, sbb = (np.bincount(row, w, minlength=rounds) for w in (a * b, a * a, b * b))
    rng = np.random.default_rng(seed)
    draws = np.empty(boot)
    with np.errstate(invalid="ignore", divide="ignore"):   # nan when no cell's labels vary
        r = sab.sum() / np.sqrt(saa.sum() * sbb.sum())
        for i in range(boot):
            idx = rng.integers(0, rounds, rounds)
            draws[i] = sab[idx].sum() / np.sqrt(saa[idx].sum() * sbb[idx].sum())
    low, high = np.quantile(draws, [0.025, 0.975])
    return float(r), float(low), float(high)


def verdict(low, high, target=SECRET_TARGET):
    """``ok`` when the interval is inside (-target, target), ``LEAK`` when it is outside, else ``unclear``."""
    if -target < low and high < target:
        return "ok"
    if low >= target or high <= -target:
        return "LEAK"
    return "unclear"


def secret_kernel_args(counter):
    """``(call, state, rng, out)``: the C update of a tree counter
    (``pds_counter_update_many`` of one item) and its arguments but the item,
    for :func:`secret_times`' ``"kernel"`` rows: the C core alone, without
    the Python around it."""
    from pydp_synopsis._core import ffi, lib

    return lib.pds_counter_update_many, counter._state, counter._rng._state, ffi.new("int64_t[1]")


def secret_item_pointer(stream):
    """A C pointer to the int64 array ``stream`` (kept alive by the caller)."""
    from pydp_synopsis._core import ffi

    return ffi.from_buffer("int64_t[]", stream)


def secret_times(make, rounds, m, seed, how="update"):
    """Per round t and counter j: the duration (ns) of counter j's update t,
    its secret bit, a control bit never fed, and its release; each an array
    (rounds, m).

    The m counters are updated round robin, in a fresh random order every
    round, through ``update(bit)`` (Python ints 0 and 1, as a user passes
    them; ``how="update"``), ``update_many([bit])`` (``"batch"``) or the C
    call alone (``"kernel"``).
    """
    g = np.random.default_rng(seed)
    bits = g.integers(0, 2, (rounds, m))
    control = g.integers(0, 2, (rounds, m))
    order = np.argsort(g.random((rounds, m)), axis=1)
    counters = [make(j, rounds) for j in range(m)]
    items = np.take_along_axis(bits, order, axis=1).ravel().tolist()
    who = order.ravel().tolist()
    times = np.empty(rounds * m, dtype=np.int64)
    released = np.empty(rounds * m, dtype=np.float64)
    clock = time.perf_counter_ns
    gc.disable()
    try:
        if how == "kernel":
            args = [secret_kernel_args(c) for c in counters]
            # every item in one int64 array, written before the loop: no
            # Python int of an item, and no store of it, near a timed call
            stream = np.ascontiguousarray(np.take_along_axis(bits, order, axis=1).ravel(), dtype=np.int64)
            base = secret_item_pointer(stream)
            for i in range(rounds * m):
                call, state, rng, out = args[who[i]]
                item = base + i
                t0 = clock()
                status = call(state, rng, item, out, 1)
                t1 = clock()
                times[i] = t1 - t0
                released[i] = out[0]
                if status:
                    raise RuntimeError(f"pds_counter_update_many returned {status}")
        else:
            updates = [c.update if how == "update" else c.update_many for c in counters]
            calls = [updates[j] for j in who]
            if how == "batch":
                items = [[x] for x in items]
            for i in range(rounds * m):
                x = items[i]
                call = calls[i]
                t0 = clock()
                r = call(x)
                t1 = clock()
                times[i] = t1 - t0
                released[i] = r[0] if how == "batch" else r
                r = None          # freed here, outside the next timed call
    finally:
        gc.enable()
    per, rel = np.empty((rounds, m), dtype=np.int64), np.empty((rounds, m))
    np.put_along_axis(per, order, times.reshape(rounds, m), axis=1)
    np.put_along_axis(rel, order, released.reshape(rounds, m), axis=1)
    return per, bits, control, rel


def secret_makers():
    """(name, make(j, rounds), most rounds per block, how) per counter kind;
    eps = 1, horizon = rounds of the block, seeds 7 + j.  The square-root
    counter's update is O(t): it runs blocks of 6250 rounds, fresh counters
    each."""
    def tree(cls, **kw):
        return lambda j, rounds: cls(horizon=rounds, epsilon=1.0, rng=ps.Rng(7 + j), **kw)

    return [
        ("binary", tree(ps.BinaryTreeCounter), None, "update"),
        ("kary k=19", tree(ps.KaryTreeCounter), None, "update"),
        ("kary k=19 (C)", tree(ps.KaryTreeCounter), None, "kernel"),
        ("kary k=19 [x]", tree(ps.KaryTreeCounter), None, "batch"),
        ("kary k=20", tree(ps.KaryTreeCounter, k=20), None, "update"),
        ("kary k=17 no sub", tree(ps.KaryTreeCounter, k=17, subtraction=False), None, "update"),
        ("sparse", tree(ps.SparseStreamCounter), None, "update"),
        ("sqrt (delta=1e-6)", lambda j, rounds: ps.SqrtFactorizationCounter(
            horizon=rounds, epsilon=1.0, delta=1e-6, rng=ps.Rng(7 + j)), 6250, "update"),
    ]


def secret_row(name, make, n, m, seed, block=None, how="update"):
    """One row of the secret-item table: (name, updates, r, low, high, control r,
    r conditioned on whether the release changed, median ns).

    The rounds run in blocks of at most ``block`` rounds (fresh counters and
    bits per block; default one block)."""
    rounds = max(2, n // m)
    block = rounds if block is None else block
    secret_times(make, min(rounds, 500), m, seed + 1, how)          # warm up
    parts = [secret_times(make, min(block, rounds - start), m, seed + 2 + start, how)
             for start in range(0, rounds, block)]
    times, bits, control, rel = (np.concatenate(p) for p in zip(*parts))
    r, low, high = within_round_r(times, bits)
    rc, _, _ = within_round_r(times, control)
    # conditioned on the output too: did the release change at this update
    # (the sparse counter's seals; nearly always for the others)
    changed = np.vstack([np.ones((1, m)), np.diff(rel, axis=0) != 0]).astype(np.int64)
    rp, _, _ = within_round_r(times, bits, changed)
    return name, rounds * m, r, low, high, rc, rp, float(np.median(times))


def print_secret(n, m):
    print(f"## Time against the secret item (issue #30): {m} counters round robin, fresh order each "
          f"round, secret random bits, eps = 1; r = within-round rank correlation of update time "
          f"and item, pooled; target |r| < {SECRET_TARGET}")
    print(f"{'counter':<18} {'updates':>8} {'r(secret)':>9} {'95% interval':>19} {'control':>8} "
          f"{'r|changed':>9} {'median ns':>9}  verdict")
    for name, make, block, how in secret_makers():
        name, count, r, low, high, rc, rp, med = secret_row(name, make, n, m, 3, block, how)
        print(f"{name:<18} {count:>8} {r:>+9.4f} [{low:>+8.4f}, {high:>+8.4f}] {rc:>+8.4f} "
              f"{rp:>+9.4f} {med:>9.0f}  {verdict(low, high)}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 * 10^4 updates per row")
    parser.add_argument("--counters", type=int, default=16, help="counters updated round robin")
    parser.add_argument("--replays", type=int, default=1, help="seeded replays; each update's least time")
    parser.add_argument("--speed", action="store_true", help="the speed table alone")
    parser.add_argument("--calls", type=int, default=10**5, help="update calls per speed row (10^5)")
    parser.add_argument("--secret", action="store_true", help="the secret-item table alone")
    parser.add_argument("--secret-updates", type=int, default=10**6,
                        help="updates per row of the secret-item table (10^6; --quick: 10^5)")
    args = parser.parse_args(argv)
    if args.secret:
        print_secret(args.secret_updates, args.counters)
        return
    print_speed(args.calls)
    if args.speed:
        return
    print()
    n = 2 * 10**4 if args.quick else 10**5
    m = args.counters
    horizon = n // m + 10
    print(f"## Single updates: time vs |released noise|, eps = 1, {n} updates of random 0/1 streams, "
          f"{m} counters round robin, least time of {args.replays} seeded replays")
    print(f"{'counter':<14} {'updates':>7} {'b':>5} {'rho raw':>8} {'rho':>8} {'rho|w':>8} {'rho new':>8} "
          f"{'rho next':>9} "
          f"{'AUC':>7} {'n(>=3b)':>7} {'n(<=b/4)':>8} {'median ns':>9}")
    makers = [
        ("binary", lambda j: ps.BinaryTreeCounter(horizon=horizon, epsilon=1.0, rng=ps.Rng(7 + j))),
        ("kary k=19", lambda j: ps.KaryTreeCounter(horizon=horizon, epsilon=1.0, rng=ps.Rng(7 + j))),
    ]
    for name, make in makers:
        row(name, make, n, m, 1, args.replays)
    for name, make in makers:
        row(name + " (C)", make, n, m, 1, args.replays, timed_kernel_calls)
    print()
    print_secret(10**5 if args.quick else args.secret_updates, m)


if __name__ == "__main__":
    main()
