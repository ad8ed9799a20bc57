"""The inversion sampler behind ps.discrete_laplace (csrc/noise.c, pds_dlap_*).

Exact law (chi-square at ALPHA = 1e-6 against the exact pmf) on every path a
draw can take -- the double tier, the long double tier, the decimal fallback
(forced with the test hook), the chunked two-thread fill -- and the same
draws for 1, 2 or 3 threads; the decimal decision against mpmath; the scale
boundary where CKS Algorithm 2 takes over; bad input refused before any
randomness is drawn; the ChaCha20 stream (seeking, fill keys) it relies on.
"""
import hashlib
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import _exact, noise
from pydp_synopsis._core import LIMITS, ffi, i64, lib
from pydp_synopsis.noise import _discrete_laplace_cks
from forking import in_forked_child
from stattests import assert_gof, assert_mean_var

SCALES = [1, Fraction(5, 2), 10, 1000, 10**6]
SPLIT = noise.SPLIT


# ------------------------------------------------------------- helpers
def dlap_cdf(z, b):
    """P(Z <= z) of the discrete Laplace of scale b (float, exact formula)."""
    q = math.exp(-1 / b)
    if z >= 0:
        return 1 - q ** (z + 1) / (1 + q)
    return q ** (-z) / (1 + q)


def assert_dlap_law(z, scale, bins=60):
    """Chi-square of draws z against the exact pmf: one bin per integer where
    the pmf is large, quantile bins in between, the tails pooled."""
    b = float(scale)
    qs = np.linspace(0, 1, bins + 1)[1:-1]
    edges = sorted({int(math.floor(b * (math.log(2 * p) if p < 0.5 else -math.log(2 * (1 - p)))))
                    for p in qs})
    cdf = [dlap_cdf(e, b) for e in edges]
    probs = [cdf[0]] + [cdf[i] - cdf[i - 1] for i in range(1, len(edges))]
    counts = np.bincount(np.searchsorted(np.array(edges), z, side="left"),
                         minlength=len(edges) + 1)
    return assert_gof(counts, probs)


def small_fills(scale, n, seed):
    """n draws as fills below SPLIT: the generator's own stream, one thread."""
    rng = ps.Rng(seed=seed)
    step = SPLIT - 1
    return np.concatenate([ps.discrete_laplace(scale, size=min(step, n - i), rng=rng)
                           for i in range(0, n, step)])


@pytest.fixture
def threads():
    before = ps.set_threads(None)
    yield ps.set_threads
    ps.set_threads(before)


# ----------------------------------------------------------- exact law
@pytest.mark.parametrize("scale", SCALES)
def test_fast_path_has_the_exact_law(scale):
    z = small_fills(scale, 300_000, seed=int(Fraction(scale) * 2) + 1)
    assert_dlap_law(z, scale)


@pytest.mark.parametrize("scale", SCALES)
def test_threaded_chunked_fill_has_the_exact_law(scale, threads):
    threads(2)
    z = ps.discrete_laplace(scale, size=5 * 2**16 + 777, rng=ps.Rng(seed=int(Fraction(scale) * 2) + 2))
    assert_dlap_law(z, scale)


@pytest.mark.parametrize("scale", SCALES)
def test_decimal_path_has_the_exact_law(scale):
    """Every draw decided by pydp_synopsis._exact (both C tiers switched off)."""
    with _exact.forcing_exact(math.inf):
        z = ps.discrete_laplace(scale, size=3000, rng=ps.Rng(seed=5))
    assert_dlap_law(z, scale, bins=12)


@pytest.mark.parametrize("scale", [1, 10, 10**6])
@pytest.mark.slow
def test_every_path_decides_the_same_draws(scale):
    """A decided draw is floor(y(U)) whoever decides it: the double tier (the
    default), the long double tier alone, the decimal fallback alone, or a
    mixture (moderate slack), for the same stream -- one word per draw unless
    the decimal path needs more (never at these seeds)."""
    want = ps.discrete_laplace(scale, size=4000, rng=ps.Rng(seed=8))
    for slack, slack_ld in ((math.inf, 0), (math.inf, math.inf), (2**-12, 2**-12), (1e-6, math.inf)):
        with _exact.forcing_exact(slack, slack_ld):
            got = ps.discrete_laplace(scale, size=4000, rng=ps.Rng(seed=8))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("scale", [1, 10])
def test_mixed_decimal_and_double_path_has_the_exact_law(scale):
    """With a moderate slack some draws go to Python, the rest stay in C."""
    with _exact.forcing_exact(2**-11):
        z = ps.discrete_laplace(scale, size=100_000, rng=ps.Rng(seed=6))
    assert_dlap_law(z, scale)


def test_long_double_tier_alone_has_the_exact_law():
    with _exact.forcing_exact(math.inf, 0):
        z = small_fills(1000, 200_000, seed=12)
    assert_dlap_law(z, 1000)


@pytest.mark.parametrize("scale", [10, 1000])
def test_variance_is_the_formula(scale, threads):
    threads(2)
    z = ps.discrete_laplace(scale, size=2**20, rng=ps.Rng(seed=13))
    assert_mean_var(z, 0.0, ps.discrete_laplace_variance(scale))
    z = small_fills(scale, 400_000, seed=14)
    assert_mean_var(z, 0.0, ps.discrete_laplace_variance(scale))


def test_the_law_test_detects_a_five_percent_scale_error():
    """The chi-square above at these sizes fails a slightly wrong scale."""
    z = small_fills(Fraction(21, 2), 300_000, seed=3)
    with pytest.raises(AssertionError, match="goodness of fit"):
        assert_dlap_law(z, 10)


# ------------------------------------------------------- threads, seeds
@pytest.mark.slow
def test_same_draws_for_one_two_three_threads(threads):
    n = 5 * 2**16 + 12345
    runs = []
    for k in (1, 2, 3):
        threads(k)
        rng = ps.Rng(seed=21)
        runs.append((ps.discrete_laplace(7, size=n, rng=rng), ps.discrete_laplace(7, size=1000, rng=rng)))
    for a, b in runs[1:]:
        np.testing.assert_array_equal(a, runs[0][0])
        np.testing.assert_array_equal(b, runs[0][1])   # the generator moved on alike
    assert not np.array_equal(runs[0][0], ps.discrete_laplace(7, size=n, rng=ps.Rng(seed=22)))
    with _exact.forcing_exact(2**-11):   # pending draws inside chunks: same again
        threads(2)
        mixed = ps.discrete_laplace(7, size=n, rng=ps.Rng(seed=21))
    np.testing.assert_array_equal(mixed, runs[0][0])


def test_a_large_fill_draws_two_words_and_reads_its_fill_stream_by_chunk():
    """pds_rng_split takes two words F, G of the generator and keys the fill
    with ChaCha20 block 0 of nonce (F >> 32, 2 + 4 (G mod 2^30), F mod 2^32)
    under the generator's key; chunk c reads that key's stream from block
    c 2^32 on."""
    seed = 31
    key = hashlib.sha256(b"pydp_synopsis.Rng v1\0" + b"int:" + seed.to_bytes(2, "little", signed=True)).digest()
    rng, twin = ps.Rng(seed=seed), ps.Rng(seed=seed)
    n = 3 * 2**16 + 99
    z = ps.discrete_laplace(10, size=n, rng=rng)
    f, g = (int(w) for w in twin.random_uint64(2))
    assert int(rng.random_uint64()) == int(twin.random_uint64())   # exactly two words drawn
    block = ffi.new("uint8_t[64]")
    middle = (2 + 4 * (g % 2**30)).to_bytes(4, "little")
    nonce = (f >> 32).to_bytes(4, "little") + middle + (f & 0xFFFFFFFF).to_bytes(4, "little")
    assert lib.pds_chacha20_block(key, 0, nonce, block) == lib.PDS_OK
    fill_key = bytes(block)[:32]
    for c in range(4):
        lo, hi = c * 2**16, min(n, (c + 1) * 2**16)
        gen = ffi.new("pds_rng *")
        assert lib.pds_rng_init_at(gen, fill_key, c << 32) == lib.PDS_OK
        state = ffi.new("pds_dlap *")
        assert lib.pds_dlap_init(state, 10, 1) == lib.PDS_OK
        out = np.empty(hi - lo, dtype=np.int64)
        assert lib.pds_dlap_fill(state, gen, i64(out), hi - lo) == lib.PDS_OK
        np.testing.assert_array_equal(out, z[lo:hi])


def test_small_fills_use_the_generator_s_own_stream():
    """Below SPLIT: draw i is the (i+1)-th word of the stream (no pending draws
    at this seed), sign from the top bit, |z| = floor(y) from the rest."""
    words = ps.Rng(seed=40).random_uint64(500)
    z = ps.discrete_laplace(3, size=500, rng=ps.Rng(seed=40))
    for w, got in zip(words[:50].tolist(), z[:50].tolist()):
        want = _exact.dlap_floor_exact(3, 1, [w], 30)
        assert want is not None and got == (-want if w >> 63 else want)


def test_fork_check_applies_to_fills_and_their_chunk_streams(threads):
    """A forked child reseeds before drawing, so neither a small fill nor the
    key of a chunked fill repeats the parent's; and the child gets its own
    thread pool (the parent's threads do not exist there)."""
    threads(2)
    ps.discrete_laplace(10, size=SPLIT + 1, rng=ps.Rng(seed=49))   # the parent's pool is up
    for n in (1000, SPLIT + 5):
        rng = ps.Rng(seed=50)
        child = np.frombuffer(
            in_forked_child(lambda: ps.discrete_laplace(10, size=n, rng=rng).tobytes(),
                            timeout=120, what="the forked child's fill"), dtype=np.int64)
        parent = ps.discrete_laplace(10, size=n, rng=rng)
        assert child.size == n and not np.array_equal(child, parent)
        np.testing.assert_array_equal(parent, ps.discrete_laplace(10, size=n, rng=ps.Rng(seed=50)))


# -------------------------------------------------- scales and inputs
def test_the_cks_sampler_takes_over_above_2_to_the_30():
    top = LIMITS.dlap_fast_max_scale
    assert top == 2**30
    state = ffi.new("pds_dlap *")
    for t, s, fast in ((top, 1, 1), (top + 1, 1, 0), (2 * top, 2, 1), (2 * top + 1, 2, 0),
                       (1, 10**6, 1), (2**61, 3, 0)):
        assert lib.pds_dlap_init(state, t, s) == lib.PDS_OK
        assert state.fast == fast
    above = Fraction(top + 1)
    np.testing.assert_array_equal(ps.discrete_laplace(above, size=2000, rng=ps.Rng(seed=60)),
                                  _discrete_laplace_cks(above, 2000, ps.Rng(seed=60)))
    assert not np.array_equal(ps.discrete_laplace(top, size=2000, rng=ps.Rng(seed=60)),
                              _discrete_laplace_cks(top, 2000, ps.Rng(seed=60)))


@pytest.mark.parametrize("scale", [2**30, 2**30 + 1])
def test_both_sides_of_the_boundary_have_the_exact_law(scale, threads):
    threads(2)
    z = ps.discrete_laplace(scale, size=2**18, rng=ps.Rng(seed=61))
    assert_dlap_law(z, scale, bins=40)


@pytest.mark.parametrize("scale,exc,match", [
    (0, ps.ParameterError, r"scale must be in \(0, 2\*\*48\]"),
    (-3, ps.ParameterError, r"scale must be in \(0, 2\*\*48\]"),
    (2**48 + 1, ps.ParameterError, r"scale must be in \(0, 2\*\*48\]"),
    (float("nan"), ps.ParameterError, "scale"), ("1", TypeError, "scale"),
])
def test_bad_scale_is_refused_before_drawing(scale, exc, match):
    rng = ps.Rng(seed=70)
    before = rng._to_state()
    for size in (None, 10, SPLIT + 1):
        with pytest.raises(exc, match=match):
            ps.discrete_laplace(scale, size=size, rng=rng)
    assert rng._to_state() == before


@pytest.mark.parametrize("size,exc", [(-1, ValueError), (2**41, ValueError), (1.5, TypeError),
                                      ((2**21, 2**21), ValueError)])
def test_bad_size_is_refused_before_drawing(size, exc):
    rng = ps.Rng(seed=71)
    before = rng._to_state()
    with pytest.raises(exc, match="size"):
        ps.discrete_laplace(3, size=size, rng=rng)
    assert rng._to_state() == before


def test_c_entry_points_check_their_arguments():
    state = ffi.new("pds_dlap *")
    gen = ffi.new("pds_rng *")
    assert lib.pds_rng_init_key(gen, bytes(32)) == lib.PDS_OK
    out = np.zeros(4, dtype=np.int64)
    for t, s in ((0, 1), (1, 0), (2**62, 1), (1, 2**62)):
        assert lib.pds_dlap_init(state, t, s) == lib.PDS_EINVAL
    assert lib.pds_dlap_init(ffi.NULL, 1, 1) == lib.PDS_EINVAL
    assert lib.pds_dlap_init(state, 2**62 - 1, 2**62 - 1) == lib.PDS_OK
    for slack, slack_ld in ((1e-13, 0), (math.nan, 0), (1e-12, 1e-30), (1e-12, math.nan)):
        assert lib.pds_dlap_set_slack(state, slack, slack_ld) == lib.PDS_EINVAL
    assert lib.pds_dlap_set_slack(state, 1e-12, 0) == lib.PDS_OK
    assert lib.pds_dlap_resolve(state, i64(out), 3) == lib.PDS_ESTATE    # nothing pending
    assert lib.pds_dlap_fill(state, gen, ffi.NULL, 4) == lib.PDS_EINVAL
    assert lib.pds_dlap_fill(state, gen, i64(out), 4) == lib.PDS_OK
    assert lib.pds_dlap_fill_chunks(state, gen, bytes(32), i64(out), 2**49) == lib.PDS_ESTATE
    state.pending = 1
    assert lib.pds_dlap_fill(state, gen, i64(out), 4) == lib.PDS_ESTATE
    assert lib.pds_dlap_resolve(state, i64(out), 2**63) == lib.PDS_EINVAL
    assert lib.pds_rng_init_at(gen, bytes(32), 12) == lib.PDS_EINVAL    # not a multiple of 8
    assert lib.pds_rng_split(ffi.NULL, ffi.new("uint8_t[32]")) == lib.PDS_EINVAL


# ------------------------------------------- the decimal decision itself
def mp_floor_y(t, s, u_num, u_den):
    """floor(y(U)) at U = u_num / u_den with 80 digits (mpmath), and y."""
    with mpmath.workdps(80):
        b = mpmath.mpf(t) / s
        c = mpmath.log(2 / (1 + mpmath.exp(-mpmath.mpf(s) / t)))
        y = b * (-mpmath.log(mpmath.mpf(u_num) / u_den) + c)
        return int(mpmath.floor(y)), y


def boundary(t, s, k, bits):
    """floor(T_k 2^bits) for T_k = 2 q^k / (1 + q), the U where y(U) = k."""
    with mpmath.workdps(80):
        q = mpmath.exp(-mpmath.mpf(s) / t)
        return int(mpmath.floor(2 * q**k / (1 + q) * mpmath.mpf(2) ** bits))


@pytest.mark.parametrize("t,s", [(1, 1), (5, 2), (10, 1), (10**6, 1), (2**30, 1), (7, 10**6)])
def test_decimal_decision_on_words_straddling_a_boundary(t, s):
    b = t / s
    for k in sorted({1, 2, max(1, round(b)), max(1, round(3 * b))}):
        n63 = boundary(t, s, k, 63)
        if n63 < 1:
            continue
        sign = 1 << 63
        assert _exact.dlap_floor_exact(t, s, [sign | n63], 30) is None   # straddles y = k
        n127 = boundary(t, s, k, 127)
        assert n127 >> 64 == n63
        lo_word = n127 & (2**64 - 1)
        assert _exact.dlap_floor_exact(t, s, [n63, lo_word], 70) is None
        # one step below T_k: U < T_k, y > k; one step above: y < k
        for n, want in ((n127 - 1, k), (n127 + 1, k - 1)):
            words = [n >> 64, n & (2**64 - 1)]
            got = _exact.dlap_floor_exact(t, s, words, 70)
            assert got == want == mp_floor_y(t, s, n, 2**127)[0] == mp_floor_y(t, s, n + 1, 2**127)[0]


def test_decimal_decision_matches_mpmath_on_random_words():
    gen = np.random.default_rng(90)
    for t, s in ((1, 1), (3, 1), (1000, 7), (10**6, 1)):
        for w in gen.integers(0, 2**63, 40, dtype=np.uint64).tolist():
            lo, _ = mp_floor_y(t, s, w + 1, 2**63)
            hi, _ = mp_floor_y(t, s, w, 2**63) if w else (None, None)
            got = _exact.dlap_floor_exact(t, s, [w], 30)
            assert got == (lo if lo == hi else None)
    assert _exact.dlap_floor_exact(3, 1, [1 << 63], 30) is None       # U may be 0


def crafted_rng(words):
    """A generator whose next keystream words are `words` (then its stream)."""
    rng = ps.Rng(seed=0)
    state = rng._to_state()
    state["buf"] = [str(w) for w in words] + state["buf"][len(words):]
    state["pos"] = 0
    return ps.Rng._from_state(state)


@pytest.mark.parametrize("t,s,k", [(1, 1, 1), (10, 1, 10), (10**6, 1, 3 * 10**6), (2**30, 1, 2**30)])
def test_a_pending_draw_is_settled_with_further_words_of_the_same_stream(t, s, k):
    """The kernel cannot settle a word whose U-interval holds T_k; the fill
    stops, Python extends U with the next word of the stream and decides,
    and the fill goes on with the word after it."""
    n127 = boundary(t, s, k, 127)
    for n, want in ((n127 - 1, k), (n127 + 2, k - 1)):
        first, second = (1 << 63) | (n >> 64), n & (2**64 - 1)
        third = 5 << 60
        z = ps.discrete_laplace(Fraction(t, s), size=2, rng=crafted_rng([first, second, third]))
        assert z[0] == -want
        assert z[1] == _exact.dlap_floor_exact(t, s, [third], 30)
    # U's first 63 bits all zero: undecidable until a non-zero word comes
    z = ps.discrete_laplace(Fraction(t, s), size=1, rng=crafted_rng([0, 0, 2**62]))
    n = 2**62
    assert z[0] == mp_floor_y(t, s, n, 2**191)[0] == mp_floor_y(t, s, n + 1, 2**191)[0]


# ------------------------------------------------------------ ChaCha20
def test_seeking_across_the_high_block_word_is_the_rfc_block_function():
    key = bytes(range(32))
    gen = ffi.new("pds_rng *")
    start = 2**32 - 16
    assert lib.pds_rng_init_at(gen, key, start) == lib.PDS_OK
    words = np.empty(32 * 8, dtype=np.uint64)
    assert lib.pds_rng_fill_u64(gen, ffi.from_buffer("uint64_t[]", words), words.size) == lib.PDS_OK
    block = ffi.new("uint8_t[64]")
    stream = b""
    for b in range(start, start + 32):
        nonce = (b >> 32).to_bytes(4, "little") + bytes(8)
        assert lib.pds_chacha20_block(key, b & 0xFFFFFFFF, nonce, block) == lib.PDS_OK
        stream += bytes(block)
    assert words.tolist() == np.frombuffer(stream, dtype="<u8").tolist()
