"""The CSPRNG and the exact samplers (issue: foundation)."""
import hashlib
import math
import os
import pickle
import subprocess
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis._core import ffi, lib
from pydp_synopsis.errors import ParameterError
from pydp_synopsis.params import check_beta, scale_parts
from pydp_synopsis.tails import laplace_sum_tail
from forking import in_forked_child
from stattests import assert_dp_ratio, assert_gof, assert_mean_var, dp_ratio_lower_bound


def chacha_block(key, counter, nonce):
    out = ffi.new("uint8_t[64]")
    assert lib.pds_chacha20_block(key, counter, nonce, out) == 0
    return bytes(out)


# ---------------------------------------------------------------- ChaCha20
def test_rfc8439_block_function_vector_2_3_2():
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    expected = bytes.fromhex(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert chacha_block(key, 1, nonce) == expected


def test_rfc8439_appendix_a1_vectors_1_and_2():
    zero_key, zero_nonce = bytes(32), bytes(12)
    assert chacha_block(zero_key, 0, zero_nonce) == bytes.fromhex(
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586")
    assert chacha_block(zero_key, 1, zero_nonce) == bytes.fromhex(
        "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
        "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f")


def test_rng_stream_is_the_chacha20_keystream_of_the_hashed_seed():
    seed = 12345
    key = hashlib.sha256(b"pydp_synopsis.Rng v1\0" + b"int:" + seed.to_bytes(3, "little", signed=True)).digest()
    words = ps.Rng(seed=seed).random_uint64(24)
    stream = b"".join(chacha_block(key, b, bytes(12)) for b in range(3))
    assert words.tolist() == np.frombuffer(stream, dtype="<u8").tolist()


def test_seed_reproducible_and_distinct():
    a = ps.Rng(seed=7).random_uint64(100)
    b = ps.Rng(seed=7).random_uint64(100)
    c = ps.Rng(seed=8).random_uint64(100)
    d = ps.Rng(seed=b"\x07").random_uint64(100)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, d)
    assert not np.array_equal(ps.Rng().random_uint64(4), ps.Rng().random_uint64(4))


def test_rng_seeded_flag_and_repr():
    assert ps.Rng(seed=1).seeded and "tests only" in repr(ps.Rng(seed=1))
    assert not ps.Rng().seeded


def test_forked_child_gets_a_different_stream():
    rng = ps.Rng(seed=99)
    child = np.frombuffer(in_forked_child(lambda: rng.random_uint64(8).tobytes()), dtype=np.uint64)
    parent = rng.random_uint64(8)
    assert len(child) == 8
    assert not np.array_equal(parent, child)
    # The parent's stream is untouched by the fork: still the seeded one.
    assert np.array_equal(parent, ps.Rng(seed=99).random_uint64(8))


def test_fork_after_use_reseeds_the_child_and_the_grandchild():
    """The fork check skips getpid() while no fork happened since a
    generator's last check (rng.c: fork generations).  A generator that was
    used (its check cached) before the fork must still reseed in the child,
    and again in a grandchild forked after the child used it."""
    rng = ps.Rng(seed=99)
    first = rng.random_uint64(4)                       # the check is cached now
    assert np.array_equal(first, ps.Rng(seed=99).random_uint64(4))

    def child():
        own = rng.random_uint64(8)
        again = rng.random_uint64(8)                   # the child's cached path
        grand = in_forked_child(lambda: rng.random_uint64(8).tobytes())
        return own.tobytes() + again.tobytes() + grand

    out = np.frombuffer(in_forked_child(child), dtype=np.uint64)
    assert len(out) == 24
    own, again, grand = out[:8], out[8:16], out[16:]
    parent = rng.random_uint64(16)
    expected = ps.Rng(seed=99).random_uint64(20)[4:]
    assert np.array_equal(parent, expected)            # the parent's stream is untouched
    for part in (own, again, grand):
        assert not np.isin(part, expected).any()       # no word of the parent's stream
    assert not np.isin(grand, np.concatenate([own, again])).any()


def test_shared_rng_across_threads_hands_out_each_word_once():
    rng = ps.Rng(seed=5)
    chunks, per_thread, calls = [], 5000, 20
    lock = threading.Lock()

    def work():
        for _ in range(calls):
            w = rng.random_uint64(per_thread)
            with lock:
                chunks.append(w)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = np.sort(np.concatenate(chunks))
    want = np.sort(ps.Rng(seed=5).random_uint64(4 * per_thread * calls))
    assert np.array_equal(got, want)


def test_rng_cannot_be_pickled():
    with pytest.raises(TypeError, match="replay"):
        pickle.dumps(ps.Rng(seed=1))


@pytest.mark.parametrize("seed", [1.5, "abc", True, [1]])
def test_bad_seed(seed):
    with pytest.raises(TypeError, match="seed"):
        ps.Rng(seed=seed)


@pytest.mark.integration
def test_import_fails_loudly_without_native():
    code = ("import sys; sys.modules['pydp_synopsis._native'] = None\n"
            "import pydp_synopsis")
    parent = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=os.path.dirname(parent), env=dict(os.environ, PYTHONPATH=parent))
    assert proc.returncode != 0
    assert "compiled C core" in proc.stderr


# ------------------------------------------------------- exact samplers
def sample_u8(fn, num, den, n, seed):
    out = np.empty(n, dtype=np.uint8)
    rng = ps.Rng(seed=seed)
    with rng.native() as p:
        assert fn(p, num, den, ffi.from_buffer("uint8_t[]", out), n) == 0
    return out


@pytest.mark.parametrize("num,den", [(1, 3), (2, 7), (0, 5), (5, 5), (1, 2**61 + 1)])
def test_bernoulli_fraction(num, den):
    n = 200_000
    k = int(sample_u8(lib.pds_bernoulli_frac_fill, num, den, n, 1).sum())
    p = num / den
    if p in (0.0, 1.0):
        assert k == n * p
    elif p < 1e-9:
        assert k <= 1
    else:
        assert_gof([n - k, k], [1 - p, p])


@pytest.mark.parametrize("num,den", [(1, 1), (1, 3), (5, 2), (0, 1), (3, 1)])
def test_bernoulli_exp(num, den):
    n = 200_000
    k = int(sample_u8(lib.pds_bernoulli_exp_fill, num, den, n, 2).sum())
    p = math.exp(-num / den)
    if num == 0:
        assert k == n
    else:
        assert_gof([n - k, k], [1 - p, p])


@pytest.mark.parametrize("num,den", [(1, 1), (1, 10), (7, 3)])
def test_geometric(num, den):
    n = 200_000
    out = np.empty(n, dtype=np.uint64)
    rng = ps.Rng(seed=3)
    with rng.native() as p:
        assert lib.pds_geometric_exp_fill(p, num, den, ffi.from_buffer("uint64_t[]", out), n) == 0
    q = math.exp(-num / den)
    kmax = int(math.log(1e-7) / math.log(q))
    probs = [(1 - q) * q**k for k in range(kmax)]
    counts = np.bincount(np.minimum(out, kmax).astype(np.int64), minlength=kmax + 1)
    assert_gof(counts, probs)


@pytest.mark.slow
def test_uniform_below_covers_range_without_bias():
    n = 300_000
    for bound in (3, 10, 2**40 + 3):
        out = np.empty(n, dtype=np.uint64)
        rng = ps.Rng(seed=bound)
        with rng.native() as p:
            assert lib.pds_uniform_fill(p, bound, ffi.from_buffer("uint64_t[]", out), n) == 0
        assert int(out.max()) < bound
        bins = 10 if bound > 10 else bound
        counts = np.bincount((out.astype(object) * bins // bound).astype(np.int64), minlength=bins)
        probs = [((i + 1) * bound // bins - i * bound // bins) / bound for i in range(bins)]
        assert_gof(counts, probs)


def test_c_entry_points_reject_bad_parameters():
    rng = ps.Rng(seed=1)
    out = np.empty(1, dtype=np.int64)
    with rng.native() as p:
        assert lib.pds_discrete_laplace_fill(p, 0, 1, ffi.from_buffer("int64_t[]", out), 1) == lib.PDS_EINVAL
        assert lib.pds_discrete_laplace_fill(p, 1, 0, ffi.from_buffer("int64_t[]", out), 1) == lib.PDS_EINVAL
        assert lib.pds_discrete_laplace_fill(p, 2**62, 1, ffi.from_buffer("int64_t[]", out), 1) == lib.PDS_EINVAL
        assert lib.pds_uniform_fill(p, 0, ffi.cast("uint64_t *", 0), 0) == lib.PDS_EINVAL
    from pydp_synopsis._core import strerror
    assert strerror(lib.PDS_EINVAL) == "invalid argument"
    assert strerror(12345) == "unknown status"


# ------------------------------------------------------ discrete Laplace
def dlap_cdf(z, b):
    """P(Z <= z) for the discrete Laplace with scale b (exact formula, float)."""
    q = math.exp(-1 / b)
    if z >= 0:
        return 1 - q ** (z + 1) / (1 + q)
    return q ** (-z) / (1 + q)


@pytest.mark.parametrize("scale", [1, Fraction(7, 3), 10, 10**6])
def test_discrete_laplace_goodness_of_fit(scale):
    n = 400_000
    z = ps.discrete_laplace(scale, size=n, rng=ps.Rng(seed=int(Fraction(scale) * 3)))
    b = float(scale)
    # Bins: quantile edges of the exact distribution, the tails pooled.
    qs = np.linspace(0, 1, 41)[1:-1]
    edges = sorted({int(math.floor(b * (math.log(2 * q) if q < 0.5 else -math.log(2 * (1 - q))))) for q in qs})
    cdf = [dlap_cdf(e, b) for e in edges]
    probs = [cdf[0]] + [cdf[i] - cdf[i - 1] for i in range(1, len(edges))]
    idx = np.searchsorted(np.array(edges), z, side="left")
    counts = np.bincount(idx, minlength=len(edges) + 1)
    assert_gof(counts, probs)


@pytest.mark.parametrize("scale", [1, Fraction(7, 3), 10, 10**6])
def test_discrete_laplace_mean_and_variance(scale):
    z = ps.discrete_laplace(scale, size=400_000, rng=ps.Rng(seed=11))
    var = ps.discrete_laplace_variance(scale)
    q = math.exp(-1 / float(scale))
    assert var == pytest.approx(2 * q / (1 - q) ** 2, rel=1e-9)
    assert_mean_var(z, 0.0, var)


def privacy_ratio_bound(sampler, scale, n=200_000):
    """CP lower bound of P[0 + Z >= 1] vs P[1 + Z >= 1] ratio, both directions."""
    z0 = sampler(scale, n, 21)
    z1 = sampler(scale, n, 22)
    k0 = int(np.count_nonzero(0 + z0 >= 1))
    k1 = int(np.count_nonzero(1 + z1 >= 1))
    return k1, k0, n


def ours(scale, n, seed):
    return ps.discrete_laplace(scale, size=n, rng=ps.Rng(seed=seed))


def broken(scale, n, seed):  # the bug the test must catch: scale halved
    return ps.discrete_laplace(Fraction(scale) / 2, size=n, rng=ps.Rng(seed=seed))


@pytest.mark.parametrize("scale", [1, 3])
def test_privacy_ratio_of_noise_is_at_most_e_to_one_over_scale(scale):
    k1, k0, n = privacy_ratio_bound(ours, scale)
    assert_dp_ratio(k1, n, k0, n, 1 / scale)


@pytest.mark.parametrize("scale", [1, 3])
def test_privacy_test_detects_a_broken_sampler(scale):
    k1, k0, n = privacy_ratio_bound(broken, scale)
    assert dp_ratio_lower_bound(k1, n, k0, n) > math.exp(1 / scale)
    with pytest.raises(AssertionError, match="privacy violated"):
        assert_dp_ratio(k1, n, k0, n, 1 / scale)


def test_discrete_laplace_shapes_and_types():
    rng = ps.Rng(seed=0)
    one = ps.discrete_laplace(2, rng=rng)
    assert type(one) is int
    arr = ps.discrete_laplace(2, size=(3, 4), rng=rng)
    assert arr.shape == (3, 4) and arr.dtype == np.int64
    assert ps.discrete_laplace(2, size=0, rng=rng).shape == (0,)
    assert ps.discrete_laplace(Fraction(1, 10**6), size=1000, rng=rng).tolist() == [0] * 1000
    assert isinstance(ps.discrete_laplace(2.5), int)  # OS-seeded default


def test_seeded_discrete_laplace_reproducible():
    a = ps.discrete_laplace(5, size=50, rng=ps.Rng(seed=3))
    b = ps.discrete_laplace(5, size=50, rng=ps.Rng(seed=3))
    assert np.array_equal(a, b)


@pytest.mark.parametrize("scale,exc", [
    (0, ps.ParameterError), (-1, ps.ParameterError), (float("nan"), ps.ParameterError),
    (float("inf"), ps.ParameterError), (2**49, ps.ParameterError), ("1", TypeError),
    (None, TypeError), (True, TypeError), (1j, TypeError),
])
def test_discrete_laplace_bad_scale(scale, exc):
    with pytest.raises(exc, match="scale"):
        ps.discrete_laplace(scale, size=3)


@pytest.mark.parametrize("size,exc", [
    (-1, ValueError), (1.5, TypeError), ("3", TypeError), ((2, -1), ValueError),
    (True, TypeError), ((2, 1.0), TypeError), (2**41, ValueError),
])
def test_discrete_laplace_bad_size(size, exc):
    with pytest.raises(exc, match="size"):
        ps.discrete_laplace(1, size=size)


def test_discrete_laplace_bad_rng():
    with pytest.raises(TypeError, match="rng"):
        ps.discrete_laplace(1, rng=np.random.default_rng(0))


# -------------------------------------------------- exact parameters
def test_exact_epsilon_rounds_floats_down():
    assert ps.exact_epsilon(0.1) == Fraction(1, 10)
    assert ps.exact_epsilon(1) == 1
    assert ps.exact_epsilon(Fraction(1, 3)) == Fraction(1, 3)
    for x in (0.3, 0.7, 1 / 3, 2 / 3, 1e-12, 123.456, 0.1 + 0.2):
        e = ps.exact_epsilon(x)
        assert e <= Fraction(x) and float(e) == pytest.approx(x, rel=1e-14)
        assert e.numerator < 2**62 and e.denominator < 2**62
    big = Fraction(2**70 + 1, 2**70)
    e = ps.exact_epsilon(big)
    assert e <= big and e.denominator < 2**62


def test_exact_scale_rounds_floats_up():
    assert ps.exact_scale(2.5) == Fraction(5, 2)
    for x in (0.1, 0.3, 1 / 3, 7.77, 1e-9):
        s = ps.exact_scale(x)
        assert s >= Fraction(x) and float(s) == pytest.approx(x, rel=1e-14)
    t, s = scale_parts(Fraction(2**70 + 1, 2**69))
    assert Fraction(t, s) >= Fraction(2**70 + 1, 2**69) and t < 2**62 and s < 2**62


@pytest.mark.parametrize("eps,exc", [
    (0, ps.ParameterError), (-0.5, ps.ParameterError), (float("nan"), ps.ParameterError),
    (float("inf"), ps.ParameterError), (2**41, ps.ParameterError), ("0.1", TypeError),
    (None, TypeError), (False, TypeError), (1e-300, ps.ParameterError),
])
def test_exact_epsilon_bad(eps, exc):
    with pytest.raises(exc, match="epsilon"):
        ps.exact_epsilon(eps)


@pytest.mark.parametrize("beta", [0, 1, -0.1, 1.5, float("nan")])
def test_check_beta_bad(beta):
    with pytest.raises(ps.ParameterError, match="beta"):
        check_beta(beta)


def test_errors_are_standard_exceptions():
    assert issubclass(ps.ParameterError, ValueError)
    assert issubclass(ps.DomainError, ValueError)
    assert issubclass(ps.EntropyError, OSError)
    assert issubclass(ps.FormatError, ps.SynopsisError)


def test_seeded_rng_state_round_trip_continues_the_stream():
    from pydp_synopsis import Rng

    rng = Rng(seed=3)
    rng.random_uint64(5)
    ps.discrete_laplace(3, size=7, rng=rng)  # leaves half words and bits buffered
    clone = Rng._from_state(rng._to_state())
    assert np.array_equal(ps.discrete_laplace(5, size=100, rng=rng),
                          ps.discrete_laplace(5, size=100, rng=clone))
    assert Rng()._to_state() is None  # an OS key is never exported
    bad = rng._to_state()
    bad["pos"] = 99
    with pytest.raises(ValueError, match="generator state"):
        Rng._from_state(bad)


# ------------------------------------------------------------ laplace_sum_tail
@pytest.mark.parametrize("b", [0.5, 3.0, 100.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6, 1e-30])
def test_laplace_sum_tail_against_the_exact_one_term_tail(b, delta):
    """One term: P(Z >= j) = p^j / (1 + p) for integers j >= 1, p = e^{-1/b}.  The
    bound is valid, and within Chernoff's known slack b (1 + 2 ln(1 + j/b)) of the
    exact quantile j (a polynomial prefactor lost in the exponent)."""
    t = laplace_sum_tail(1, b, -math.log(delta))
    p = math.exp(-1 / b)
    assert p ** math.ceil(t) / (1 + p) <= delta
    j = max(1, math.ceil(math.log(delta * (1 + p)) / math.log(p)))   # exact quantile
    assert j <= math.ceil(t) <= j + b * (1 + 2 * math.log(1 + j / b)) + 1


def test_laplace_sum_tail_sums_and_arguments():
    b = 2.0
    # several terms: the exact tail of a sum of 3 (numerical convolution) is below delta
    p = math.exp(-1 / b)
    z = np.arange(-400, 401)
    pmf = (1 - p) / (1 + p) * p ** np.abs(z)
    s3 = np.convolve(np.convolve(pmf, pmf), pmf)
    zs = np.arange(-1200, 1201)
    t = laplace_sum_tail(3, b, math.log(1e4))
    assert s3[zs >= t].sum() <= 1e-4
    assert laplace_sum_tail(0, b, 5.0) == 0.0
    assert laplace_sum_tail(2, Fraction(2), 5.0) == laplace_sum_tail(2, 2.0, 5.0)
    assert laplace_sum_tail(2, b, 5.0) < laplace_sum_tail(2.5, b, 5.0) < laplace_sum_tail(2.5, b, 9.0)
    for args, exc, name in (((-1, b, 5.0), ParameterError, "terms"), ((1, 0, 5.0), ParameterError, "scale"),
                            ((1, b, 0.0), ParameterError, "log_inv_delta"),
                            ((1, b, math.inf), ParameterError, "log_inv_delta"),
                            (("1", b, 5.0), TypeError, "terms"), ((1, None, 5.0), TypeError, "scale")):
        with pytest.raises(exc, match=name):
            laplace_sum_tail(*args)
