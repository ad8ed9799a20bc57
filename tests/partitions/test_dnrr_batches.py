"""The batched skip of the DNRR partition (csrc/partition.c, issue #17): exact law by chi-square.

The kernel samples consecutive runs as one batch at the rate of the last run
and thins the candidates; how far a batch reaches (and how the seal offset's
low bits are drawn) is a policy that must not change the law.  Each test
forces a policy with :func:`pydp_synopsis._exact.forcing_policy`, checks
through the kernel's counters that the path was taken, and tests the
output against the law computed from Fig. 1's definition (alpha = 1e-6).
"""
import math

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import _exact, partition as P
from pydp_synopsis.partitions import dnrr
from pydp_synopsis._core import ffi, lib
from stattests import assert_gof
from dnrr_law import (BETA, COUNTS, EPS, EXACT_FIRST, EXACT_NSEG, SCALE, VALUES,
                            dlap_pmf, histograms, p_seal)

INF = float("inf")

#: name -> forcing_policy arguments.  "one run": the plain skip of Remark 2.2
#: with every offset bit drawn alone; "pairs": at most two entries after a
#: batch's first run, whatever their rate; "wide": batches expecting up to
#: ~4 candidates, blocks kept with probability >= 1/e; "unbounded": batches
#: as long as the count stays below T~ (candidates often dropped) and the
#: whole offset drawn as one block (proposals often dropped).
POLICIES = {
    "one run": dict(batch_cap=0, block_limit=0.0),
    "default": {},
    "pairs": dict(batch_cap=2, batch_limit=INF),
    "wide": dict(batch_limit=4.0, block_limit=1.0),
    "unbounded": dict(batch_limit=INF, block_limit=INF),
}

STATS = ("stat_batches", "stat_dropped", "stat_blocks")


def _offline(values, domain, trials, seed, counts=None):
    """``private_partition``'s kernel path (``partition_of_sorted``) ``trials`` times;
    the end offsets of each and the kernel's counters summed."""
    rng = ps.Rng(seed=seed)
    eps = ps.exact_epsilon(EPS)
    offsets = np.sort(np.asarray(values, dtype=np.uint64))
    size = domain[1] - domain[0] + 1
    runs, stats = [], dict.fromkeys(STATS, 0)
    for _ in range(trials):
        state = dnrr.start_kernel(rng, size, eps, BETA, 3.0)
        runs.append(dnrr.run_kernel(state, rng, offsets, counts, size - 1))
        for k in STATS:
            stats[k] += int(getattr(state, k))
    return runs, stats


def _check_path(name, stats):
    """The counters show the policy's path was taken."""
    if name == "one run":
        assert stats["stat_batches"] == 0 and stats["stat_blocks"] == 0
        return
    assert stats["stat_batches"] > 0
    if name in ("pairs", "unbounded", "wide"):
        assert stats["stat_dropped"] > 0
    if name in ("unbounded", "wide"):
        assert stats["stat_blocks"] > 0


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.slow
def test_batched_offline_matches_exact_law(name):
    """Duplicates (one item per entry: the galloping batch end), 64 positions."""
    with _exact.forcing_policy(**POLICIES[name]):
        runs, stats = _offline(VALUES, (0, 63), 20000, seed=f"batched|{name}".encode())
    _check_path(name, stats)
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


@pytest.mark.parametrize("name", ["pairs", "unbounded"])
@pytest.mark.slow
def test_batched_weights_match_exact_law(name):
    """Counts per entry (the linear batch end), some zero, some split over two entries."""
    nz = np.flatnonzero(COUNTS)
    values = np.repeat(nz, 2)
    counts = np.stack([COUNTS[nz] // 3, COUNTS[nz] - COUNTS[nz] // 3], 1).ravel()
    with _exact.forcing_policy(**POLICIES[name]):
        # through the public entry: aggregate, drop zeros, kernel counts
        rng = ps.Rng(seed=f"weights|{name}".encode())
        runs = [P.private_partition(values, domain=(0, 63), epsilon=EPS, beta=BETA, rng=rng,
                                    counts=counts).end_offsets for _ in range(20000)]
        _, stats = _offline(nz, (0, 63), 200, seed=b"w", counts=COUNTS[nz].astype(np.int64))
    _check_path(name, stats)
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


@pytest.mark.slow
def test_batched_exact_fallback_matches_exact_law(monkeypatch):
    """Every comparison the fast path does not settle goes to the decimal resolver,
    mid-batch and mid-block included."""
    settled = []
    settle = _exact.settle
    monkeypatch.setattr(_exact, "settle", lambda *a: settled.append(1) or settle(*a))
    with _exact.forcing_exact(slack=1e300), _exact.forcing_policy(**POLICIES["wide"]):
        runs, stats = _offline(VALUES, (0, 63), 2500, seed=b"batched|fallback")
    _check_path("wide", stats)
    assert len(settled) > 2500
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


def _online(trials, seed):
    """Online feeds in pieces (cuts inside runs, between entries of one position,
    skips), as test_partition's online test does."""
    rng = ps.Rng(seed=seed)
    runs = []
    cuts = [0, 5, 11, 12, 31, 40, 64]
    for k in range(trials):
        op = P.OnlinePartition(size=64, epsilon=EPS, beta=BETA, rng=rng)
        out = []
        if k % 2:
            for a, b in zip(cuts[:-1], cuts[1:]):
                out.append(op.feed(COUNTS[a:b]))
        else:
            pos = np.repeat(np.flatnonzero(COUNTS), 2)
            cnt = np.stack([COUNTS[pos[::2]] // 2, COUNTS[pos[::2]] - COUNTS[pos[::2]] // 2],
                           1).ravel()
            out.append(op.feed_sparse(pos[:6], cnt[:6], 12))
            out.append(op.skip(0))
            out.append(op.feed_sparse(pos[6:], cnt[6:], 52))
        assert op.finished
        runs.append(np.concatenate(out))
    return runs


@pytest.mark.parametrize("name", ["default", "unbounded"])
@pytest.mark.slow
def test_batched_online_pieces_match_exact_law(name):
    """A batch never reaches past a piece (positions not given yet): pieces give
    other draws than one offline call, but the same law."""
    with _exact.forcing_policy(**POLICIES[name]):
        runs = _online(12000, seed=f"online|{name}".encode())
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


@pytest.mark.slow
def test_batched_online_exact_fallback_matches_exact_law():
    """PDS_EPRECISION inside a batch of a piece: the kernel resumes it exactly."""
    with _exact.forcing_exact(slack=1e300), _exact.forcing_policy(**POLICIES["wide"]):
        runs = _online(2500, seed=b"online|fallback")
    first, nseg = histograms(runs, 64)
    assert_gof(first, EXACT_FIRST)
    assert_gof(nseg, EXACT_NSEG)


# ------------------------------------------------------- long runs: offsets
# Items far apart on D = 2^40: each run is up to 2^39 positions, so the seal
# offsets take ~40 bits (high bits alone, low bits in a block), and a batch
# spans runs of very different rates.  The law of the first seal, binned by
# run and offset, computed from Fig. 1: given T~ = tau, a position of run r
# (count C_r) seals with p_r = P(nu >= tau - C_r + 1), independently.

BIG_D = 2**40
BIG_POS = np.array([0, 2**12, 2**20, 2**28, 2**33, 2**36, 2**38], dtype=np.uint64)
BIG_CNT = np.array([40, 10, 8, 6, 5, 4, 3], dtype=np.int64)


def _big_bins():
    """Bin edges (absolute offsets) per run: small offsets and quarters of the run."""
    starts = [int(x) for x in BIG_POS] + [BIG_D - 1]
    edges = []
    for a, b in zip(starts[:-1], starts[1:]):
        length = b - a
        cut = {0, 1, 2**6, 2**12, 2**20, 2**28, length // 8, length // 4, length // 2,
               3 * length // 4, length}
        edges.extend(a + c for c in sorted(cut) if c <= length)
    return np.unique(np.array(edges, dtype=object)).tolist()   # ends at D - 1: the last position


def _big_law(threshold):
    """P(first seal in [edges[i], edges[i+1])) and P(first seal at the last position)."""
    edges = _big_bins()
    zs, pz = dlap_pmf(SCALE, int(60 * SCALE) + 5)
    starts = [int(x) for x in BIG_POS]
    cum = np.cumsum(BIG_CNT)
    probs = np.zeros(len(edges))        # bins, then the last position
    for z, w in zip(zs, pz):
        tau = threshold + z
        log_alive = 0.0                 # log P(no seal before the current run)
        for r, a in enumerate(starts):
            b = starts[r + 1] if r + 1 < len(starts) else BIG_D - 1
            p = float(p_seal(tau - cum[r] + 1, SCALE))
            lq = math.log1p(-p) if p < 1 else -math.inf
            for k in range(len(edges) - 1):
                lo, hi = edges[k], edges[k + 1]
                if lo < a or hi > b:
                    continue
                # alive at lo times (1 - (1-p)^(hi-lo))
                lead = (lo - a) * lq if lo > a else 0.0
                probs[k] += w * math.exp(log_alive + lead) * -math.expm1((hi - lo) * lq)
            log_alive += (b - a) * lq
        probs[-1] += w * math.exp(log_alive)
    return edges, probs


@pytest.mark.parametrize("name,weighted", [("one run", False), ("default", False),
                                           ("default", True), ("wide", False), ("wide", True)])
@pytest.mark.slow
def test_batched_long_runs_first_seal_matches_exact_law(name, weighted):
    """Duplicate entries (galloping batch end) or one weighted entry per position
    (linear batch end).  ("unbounded" would drop millions of candidates and
    proposals per seal here; "wide" still drops many.)"""
    threshold = P.Partition([BIG_D - 1], domain=(0, BIG_D - 1), epsilon=EPS, beta=BETA).threshold
    edges, law = _big_law(threshold)
    assert law.sum() == pytest.approx(1, abs=1e-9)
    values = BIG_POS if weighted else np.repeat(BIG_POS, BIG_CNT)
    with _exact.forcing_policy(**POLICIES[name]):
        runs, stats = _offline(values, (0, BIG_D - 1), 20000, seed=f"long|{name}|{weighted}".encode(),
                               counts=BIG_CNT if weighted else None)
    _check_path(name, stats)
    if name == "default":
        assert stats["stat_blocks"] > 0   # ~40-bit offsets: the low block is used
    first = np.array([int(r[0]) for r in runs], dtype=object)
    at_last = first == BIG_D - 1
    bins = np.searchsorted(np.array(edges[:-1], dtype=np.uint64),
                           first[~at_last].astype(np.uint64), side="right") - 1
    counts = np.append(np.bincount(bins, minlength=len(edges) - 1), at_last.sum())
    assert_gof(counts, law)


# -------------------------------------------------- re-entry and streaming

def _feed(state, rng, pos, end, cap=64):
    n = len(pos)
    buf = np.empty(cap, dtype=np.uint64)
    consumed, nseals = ffi.new("size_t *"), ffi.new("size_t *")
    with rng.native() as p:
        st = lib.pds_partition_feed(state, p, ffi.cast("uint64_t *", ffi.from_buffer(pos))
                                    if n else ffi.NULL, ffi.NULL, n, end, consumed,
                                    ffi.cast("uint64_t *", ffi.from_buffer(buf)), cap, nseals)
    return st, int(consumed[0])


def test_reentry_after_eprecision_checks_the_batch():
    """Stopped inside a batch, the kernel continues only with the batch's own entries."""
    rng = ps.Rng(seed=77)
    pos = np.sort(np.random.default_rng(1).integers(0, 10**6, 300)).astype(np.uint64)
    with _exact.forcing_exact(slack=1e300), _exact.forcing_policy(batch_limit=INF):
        state = dnrr.start_kernel(rng, 10**6, ps.exact_epsilon(0.5), 0.05, 3.0)
    done = 0
    while True:
        st, used = _feed(state, rng, pos[done:], 10**6 - 1)
        done += used
        if st == lib.PDS_EPRECISION and state.batch_items >= 2:
            break
        assert st in (lib.PDS_OK, lib.PDS_EPRECISION) and not state.finished
        if st == lib.PDS_EPRECISION:
            with rng.native() as p:
                _exact.settle(state, p)
    with rng.native() as p:
        _exact.settle(state, p)
    rest = pos[done:]
    b = int(state.batch_items)
    bad = [np.delete(rest, b - 1),                       # an entry of the batch missing
           np.insert(rest, b - 1, rest[b - 1])]          # one too many
    for other in bad:
        assert _feed(state, rng, other, 10**6 - 1)[0] == lib.PDS_EINVAL
    end_inside = int(state.position + state.run_lm1) - 1
    assert _feed(state, rng, rest[rest <= end_inside], end_inside)[0] == lib.PDS_EINVAL
    st, _ = _feed(state, rng, rest, 10**6 - 1)          # the right entries: it goes on
    assert st in (lib.PDS_OK, lib.PDS_EPRECISION)


@pytest.mark.parametrize("policy", [dict(POLICIES["wide"], batch_cap=5), {}])
@pytest.mark.slow
def test_chunked_stream_is_the_whole_partition_under_a_seed(policy):
    """partition_of_chunks stops the kernel before a batch that could reach the
    next chunk, so chunks give exactly partition_of_sorted's draws and weights."""
    gen = np.random.default_rng(5)
    n = 300_000 if not policy else 3000
    keys = np.unique(gen.integers(0, 2**50, n).astype(np.uint64))
    counts = gen.integers(1, 4, keys.size).astype(np.int64)
    counts[::7] = 0
    dom = (0, 2**50 - 1)
    eps = ps.exact_epsilon(1.0)
    with _exact.forcing_policy(**policy):
        whole = P.partition_of_sorted(keys, dom, eps, 0.05, 3.0, ps.Rng(seed=9), counts=counts)
        step = 7 if policy else 40_000
        chunks = ((keys[a:a + step], counts[a:a + step]) for a in range(0, keys.size, step))
        part, weights = P.partition_of_chunks(chunks, dom, eps, 0.05, 3.0, ps.Rng(seed=9))
    assert part == whole
    np.testing.assert_array_equal(weights, whole.weights(np.repeat(keys, counts)))
