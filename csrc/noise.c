/* Exact samplers in integer arithmetic.
 *
 * Follows Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
 * Privacy" (NeurIPS 2020), section 5: Algorithm 1 (Bernoulli(exp(-gamma))),
 * Algorithm 2 (discrete Laplace).  Every decision compares integers drawn
 * from the ChaCha20 stream; no floating point is involved, so the output
 * distribution is exactly the stated one (up to the CSPRNG).
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <math.h>
#include "internal.h"

/* Half words and single bits of the keystream, so that small draws do not
 * waste a whole word; each keystream bit is used at most once. */
static inline uint32_t next_u32(pds_rng *rng)
{
    if (rng->nhalf) {
        rng->nhalf = 0;
        return rng->half;
    }
    uint64_t w = pds_rng_u64(rng);
    rng->half = (uint32_t)(w >> 32);
    rng->nhalf = 1;
    return (uint32_t)w;
}

static inline int next_coin(pds_rng *rng)
{
    if (rng->nbits == 0) {
        rng->bits = pds_rng_u64(rng);
        rng->nbits = 64;
    }
    int b = (int)(rng->bits & 1);
    rng->bits >>= 1;
    rng->nbits--;
    return b;
}

/* Uniform on {0, ..., n-1} without modulo bias: Lemire's multiply-and-
 * reject ("Fast random integer generation in an interval", 2019), on 32-bit
 * draws when n fits, to spend half the keystream. */
static inline uint64_t uniform_below(pds_rng *rng, uint64_t n)
{
    if (n <= 1) return 0;
    if (n == 2) return (uint64_t)next_coin(rng);
    if (n <= UINT32_MAX) {
        uint32_t n32 = (uint32_t)n;
        uint64_t m = (uint64_t)next_u32(rng) * n32;
        uint32_t low = (uint32_t)m;
        if (low < n32) {
            uint32_t threshold = (0u - n32) % n32;  /* 2^32 mod n */
            while (low < threshold) {
                m = (uint64_t)next_u32(rng) * n32;
                low = (uint32_t)m;
            }
        }
        return m >> 32;
    }
    unsigned __int128 m = (unsigned __int128)pds_rng_u64(rng) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = (0 - n) % n;  /* 2^64 mod n */
        while (low < threshold) {
            m = (unsigned __int128)pds_rng_u64(rng) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

static inline int bernoulli_frac(pds_rng *rng, uint64_t num, uint64_t den)
{
    if (num == 0) return 0;
    if (num >= den) return 1;
    return uniform_below(rng, den) < num;
}

/* Bernoulli(num / (den * k)); splits into two independent coins when the
 * product denominator does not fit in 64 bits. */
static inline int bernoulli_frac_over(pds_rng *rng, uint64_t num, uint64_t den,
                               uint64_t k)
{
    uint64_t prod;
    if (!__builtin_mul_overflow(den, k, &prod))
        return bernoulli_frac(rng, num, prod);
    return bernoulli_frac(rng, num, den) && uniform_below(rng, k) == 0;
}

/* CKS Algorithm 1 for gamma = num/den in [0, 1]: the parity of the first K
 * with a failed Bernoulli(gamma/K) coin has P(odd) = exp(-gamma). */
static inline int bernoulli_exp_unit(pds_rng *rng, uint64_t num, uint64_t den)
{
    uint64_t k = 1;
    while (bernoulli_frac_over(rng, num, den, k)) k++;
    return (int)(k & 1);
}

/* Algorithm 1 at gamma = 1, whose first coin (probability 1/1) is certain. */
static inline int bernoulli_exp_minus_one(pds_rng *rng)
{
    if (!next_coin(rng)) return 0;  /* stopped at K = 2: even */
    uint64_t k = 3;
    while (uniform_below(rng, k) == 0) k++;
    return (int)(k & 1);
}

/* Bernoulli(exp(-num/den)). */
static int bernoulli_exp(pds_rng *rng, uint64_t num, uint64_t den)
{
    /* exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)). */
    uint64_t whole = num / den;
    for (uint64_t i = 0; i < whole; i++)
        if (!bernoulli_exp_minus_one(rng)) return 0;
    return bernoulli_exp_unit(rng, num % den, den);
}

/* Geometric with ratio exp(-num/den): P(k) = (1 - q) q^k.
 * CKS Algorithm 2, steps 3-8: X = U + den*V is geometric with ratio
 * exp(-1/den) (U uniform below den accepted with prob exp(-U/den), V
 * geometric with ratio exp(-1)); floor(X / num) then has ratio
 * exp(-num/den). */
/* Single draws for other kernels (declared in internal.h; no checks). */
int pds_bernoulli_exp(pds_rng *rng, uint64_t num, uint64_t den)
{
    return bernoulli_exp(rng, num, den);
}

int pds_rng_coin(pds_rng *rng)
{
    return next_coin(rng);
}

uint64_t pds_uniform_below(pds_rng *rng, uint64_t n)
{
    return uniform_below(rng, n);
}

static uint64_t geometric_exp(pds_rng *rng, uint64_t num, uint64_t den)
{
    uint64_t u;
    do {
        u = uniform_below(rng, den);
    } while (!bernoulli_exp_unit(rng, u, den));
    uint64_t v = 0;
    while (bernoulli_exp_minus_one(rng)) v++;
    unsigned __int128 x = (unsigned __int128)den * v + u;
    if (num == 1) return x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
    if (x <= UINT64_MAX) return (uint64_t)x / num;
    unsigned __int128 y = x / num;
    return y > UINT64_MAX ? UINT64_MAX : (uint64_t)y;
}

/* CKS Algorithm 2: a signed geometric, rejecting the duplicate "-0". */
int64_t pds_discrete_laplace_one(pds_rng *rng, uint64_t t, uint64_t s)
{
    for (;;) {
        uint64_t y = geometric_exp(rng, s, t);
        int negative = next_coin(rng);
        if (negative && y == 0) continue;
        /* Saturation has probability exp(-2^63 s/t): zero for the scales
         * the Python layer admits (t/s <= 2^48). */
        int64_t mag = y > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)y;
        return negative ? -mag : mag;
    }
}

static int check_ratio(uint64_t num, uint64_t den)
{
    return den >= 1 && den < PDS_PARAM_LIMIT && num < PDS_PARAM_LIMIT;
}

pds_status pds_uniform_fill(pds_rng *rng, uint64_t n, uint64_t *out, size_t count)
{
    if (!rng || n == 0 || (count && !out)) return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    for (size_t i = 0; i < count; i++) out[i] = uniform_below(rng, n);
    return PDS_OK;
}

pds_status pds_bernoulli_frac_fill(pds_rng *rng, uint64_t num, uint64_t den,
                                   uint8_t *out, size_t count)
{
    if (!rng || !check_ratio(num, den) || num > den || (count && !out))
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    for (size_t i = 0; i < count; i++)
        out[i] = (uint8_t)bernoulli_frac(rng, num, den);
    return PDS_OK;
}

pds_status pds_bernoulli_exp_fill(pds_rng *rng, uint64_t num, uint64_t den,
                                  uint8_t *out, size_t count)
{
    if (!rng || !check_ratio(num, den) || (count && !out)) return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    for (size_t i = 0; i < count; i++)
        out[i] = (uint8_t)bernoulli_exp(rng, num, den);
    return PDS_OK;
}

pds_status pds_geometric_exp_fill(pds_rng *rng, uint64_t num, uint64_t den,
                                  uint64_t *out, size_t count)
{
    if (!rng || !check_ratio(num, den) || num == 0 || (count && !out))
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    for (size_t i = 0; i < count; i++)
        out[i] = geometric_exp(rng, num, den);
    return PDS_OK;
}

pds_status pds_discrete_laplace_fill(pds_rng *rng, uint64_t t, uint64_t s,
                                     int64_t *out, size_t count)
{
    if (!rng || !check_ratio(s, t) || s == 0 || (count && !out))
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    for (size_t i = 0; i < count; i++)
        out[i] = pds_discrete_laplace_one(rng, t, s);
    return PDS_OK;
}

/* ------------------------------------------------------------------------
 * Discrete Laplace by inversion: the bulk sampler (pds_discrete_laplace_invert).
 *
 * Law: P(Z = z) = (1-a)/(1+a) a^|z|, a = e^{-1/b}, b = t/s.  Z = S M with
 * an independent fair sign S and the magnitude M, whose tail is
 *     P(M >= k) = tau_k = c a^k (k >= 1),  c = 2/(1+a),  tau_0 = 1
 * (then P(Z = 0) = 1 - tau_1 = (1-a)/(1+a) and P(Z = +-k) = (tau_k -
 * tau_{k+1})/2 = a^k (1-a)/(1+a)).  For U uniform on [0, 1),
 *     M = #{k >= 1 : U < tau_k} = max(0, ceil(x(U)) - 1),
 *     x(U) = b (ln c - ln U) > 0,
 * has exactly this tail (U < tau_k iff k < x(U); tau decreases in k).
 *
 * One 64-bit word w per sample: its top bit is S, its low 63 bits u are the
 * first 63 bits of U, so U lies in [u 2^-63, (u+1) 2^-63).  x decreases in
 * U, and x(u 2^-63) - x((u+1) 2^-63) = b ln(1 + 1/u) <= b/u, so every x(U)
 * of the interval lies in [X - b/u, X] with X = x(u 2^-63) (the code bounds
 * b/u by b 2^-e (1 + 2^-50), 2^e <= d the power of two below u's double).  With X
 * computed in double and E a rigorous bound on its error, M is decided when
 * some integer n has
 *     n < X - b/u - E  and  X + E < n + 1:
 * then every U of the interval has x(U) in (n, n + 1) and M = max(0, n),
 * whatever U's later bits.  Otherwise (about 2 (E + b/u) of the time) the
 * call stops with the word in *pending and pydp_synopsis/_exact.py decides M
 * with correctly rounded decimals, extending U with further words of the
 * same stream -- the same lazily refined uniform as the partition kernel's
 * (csrc/partition.c).  Either way the output is M(U) for a uniform U: the
 * law is exact, floating point only chooses who decides.
 *
 * The bound E.  -ln U at the interval's left end is computed without libm
 * (neg_ln_u below): u rounded to a double d = m 2^e (relative error
 * 2^-53, m in [1, 2) exact), so -ln U = (63 - e) ln 2 - ln m up to 2^-52;
 * ln m = ln c_i + log1p(r) with c_i the centre of m's 1/128-wide bin
 * (LOG_CENTRE, INV_CENTRE: correctly rounded constants) and r = m / c_i - 1,
 * |r| <= 2^-8 (1 + 2^-52), so the degree-5 Taylor polynomial of log1p errs
 * by < |r|^6 / 5 < 2^-50.  With the roundings of r, the polynomial,
 * (63 - e) ln 2 and the sums, its absolute error is below
 * 2^-46 + 2^-52 (-ln U).  ln c = -log1p(expm1(-s/t) / 2) is
 * well conditioned for any scale (condition number <= 1.44 in expm1's
 * result, <= 1 in s/t); with the allowance `slack` (1e-12; tests raise it)
 * per libm function, as in partition.c (glibc documents at most a few ulp
 * for expm1 and log1p), its relative error is below 3 slack; it is
 * computed once per call.  ln c and -ln U are >= 0, so X = b (ln c +
 * (-ln U)) is a sum of non-negative terms times b: its error is at most
 * 3 slack b ln c + b (2^-46 + 2^-52 (-ln U)) plus three roundings of X
 * (t/s, the sum, the product); with the roundings of the bound on b/u and
 * of the final subtractions (each 2^-53 relative of a quantity <= X + b),
 *     E = 3 slack b ln c + 2^-40 + (X + b) 2^-44
 * bounds every error (the first two terms are one constant per call).
 * Words with u < 2^20 (probability 2^-43) always go to the exact path, so
 * b/u <= b 2^-20 <= 16 and X < 2^30.
 *
 * Cost: one keystream word, a table read, a few flops and no branch that
 * depends on the sample (sign and magnitude are selected branch-free); the
 * exact path is taken about 2 (E + b/u) ~ 2^-42 (X + b) of the time (once
 * in 4 million samples at b = 10^6).  Scales b > 2^24 would leave the fast
 * path undecided ever more often (E grows with X ~ b); there the call uses
 * the exact integer sampler of CKS Algorithm 2 (pds_discrete_laplace_one)
 * instead -- the choice depends on the public scale only, and both
 * samplers have the same exact law.
 */
enum { INVERT_MAX_LOG2_SCALE = 24, INVERT_MIN_LOG2_U = 20 };

/* ln c_i and 1/c_i for the bin centres c_i = 1 + (2i + 1)/256, and ln 2,
 * correctly rounded (computed with mpmath at 200 bits). */
static const double LOG_CENTRE[128] = {
    0x1.ff00aa2b10bc0p-9, 0x1.7dc475f810a77p-7, 0x1.3cea44346a575p-6,
    0x1.b9fc027af9198p-6, 0x1.1b0d98923d980p-5, 0x1.58a5bafc8e4d5p-5,
    0x1.95c830ec8e3ebp-5, 0x1.d276b8adb0b52p-5, 0x1.075983598e471p-4,
    0x1.253f62f0a1417p-4, 0x1.42edcbea646f0p-4, 0x1.60658a93750c4p-4,
    0x1.7da766d7b12cdp-4, 0x1.9ab42462033adp-4, 0x1.b78c82bb0eda1p-4,
    0x1.d4313d66cb35dp-4, 0x1.f0a30c01162a6p-4, 0x1.0671512ca596ep-3,
    0x1.14785846742acp-3, 0x1.2266f190a5acbp-3, 0x1.303d718e47fd3p-3,
    0x1.3dfc2b0ecc62ap-3, 0x1.4ba36f39a55e5p-3, 0x1.59338d9982086p-3,
    0x1.66acd4272ad51p-3, 0x1.740f8f54037a5p-3, 0x1.815c0a14357ebp-3,
    0x1.8e928de886d41p-3, 0x1.9bb362e7dfb83p-3, 0x1.a8becfc882f19p-3,
    0x1.b5b519e8fb5a4p-3, 0x1.c2968558c18c1p-3, 0x1.cf6354e09c5dcp-3,
    0x1.dc1bca0abec7dp-3, 0x1.e8c0252aa5a60p-3, 0x1.f550a564b7b37p-3,
    0x1.00e6c45ad501dp-2, 0x1.071b85fcd590dp-2, 0x1.0d46b579ab74bp-2,
    0x1.136870293a8b0p-2, 0x1.1980d2dd4236fp-2, 0x1.1f8ff9e48a2f3p-2,
    0x1.2596010df763ap-2, 0x1.2b9303ab89d25p-2, 0x1.31871c9544185p-2,
    0x1.3772662bfd85bp-2, 0x1.3d54fa5c1f710p-2, 0x1.432ef2a04e814p-2,
    0x1.49006804009d1p-2, 0x1.4ec973260026ap-2, 0x1.548a2c3add263p-2,
    0x1.5a42ab0f4cfe2p-2, 0x1.5ff3070a793d4p-2, 0x1.659b57303e1f3p-2,
    0x1.6b3bb2235943ep-2, 0x1.70d42e2789236p-2, 0x1.7664e1239dbcfp-2,
    0x1.7bede0a37afc0p-2, 0x1.816f41da0d496p-2, 0x1.86e919a330ba0p-2,
    0x1.8c5b7c858b48bp-2, 0x1.91c67eb45a83ep-2, 0x1.972a341135158p-2,
    0x1.9c86b02dc0863p-2, 0x1.a1dc064d5b995p-2, 0x1.a72a4966bd9eap-2,
    0x1.ac718c258b0e4p-2, 0x1.b1b1e0ebdfc5bp-2, 0x1.b6eb59d3cf35ep-2,
    0x1.bc1e08b0dad0ap-2, 0x1.c149ff115f027p-2, 0x1.c66f4e3ff6ff8p-2,
    0x1.cb8e0744d7acap-2, 0x1.d0a63ae721e64p-2, 0x1.d5b7f9ae2c684p-2,
    0x1.dac353e2c5954p-2, 0x1.dfc859906d5b5p-2, 0x1.e4c71a8687704p-2,
    0x1.e9bfa659861f5p-2, 0x1.eeb20c640ddf4p-2, 0x1.f39e5bc811e5cp-2,
    0x1.f884a36fe9ec2p-2, 0x1.fd64f20f61572p-2, 0x1.011fab125ff8ap-1,
    0x1.0389eefce633bp-1, 0x1.05f14bd26459cp-1, 0x1.0855c884b450ep-1,
    0x1.0ab76bece14d2p-1, 0x1.0d163ccb9d6b8p-1, 0x1.0f7241c9b497dp-1,
    0x1.11cb81787ccf8p-1, 0x1.1422025243d45p-1, 0x1.1675cababa60ep-1,
    0x1.18c6e0ff5cf06p-1, 0x1.1b154b57da29fp-1, 0x1.1d610fe677003p-1,
    0x1.1faa34b87094cp-1, 0x1.21f0bfc65beecp-1, 0x1.2434b6f483934p-1,
    0x1.26762013430e0p-1, 0x1.28b500df60783p-1, 0x1.2af15f02640adp-1,
    0x1.2d2b4012edc9ep-1, 0x1.2f62a99509546p-1, 0x1.3197a0fa7fe6ap-1,
    0x1.33ca2ba328995p-1, 0x1.35fa4edd36ea0p-1, 0x1.38280fe58797fp-1,
    0x1.3a5373e7ebdfap-1, 0x1.3c7c7fff73206p-1, 0x1.3ea33936b2f5cp-1,
    0x1.40c7a4880dce9p-1, 0x1.42e9c6ddf80bfp-1, 0x1.4509a5133bb0ap-1,
    0x1.472743f33aaadp-1, 0x1.4942a83a2fc07p-1, 0x1.4b5bd6956e274p-1,
    0x1.4d72d3a39fd00p-1, 0x1.4f87a3f5026e9p-1, 0x1.519a4c0ba3446p-1,
    0x1.53aad05b99b7dp-1, 0x1.55b9354b40bcdp-1, 0x1.57c57f336f191p-1,
    0x1.59cfb25fae87ep-1, 0x1.5bd7d30e71c73p-1, 0x1.5ddde57149923p-1,
    0x1.5fe1edad18919p-1, 0x1.61e3efda46467p-1
};
static const double INV_CENTRE[128] = {
    0x1.fe01fe01fe020p-1, 0x1.fa11caa01fa12p-1, 0x1.f6310aca0dbb5p-1,
    0x1.f25f644230ab5p-1, 0x1.ee9c7f8458e02p-1, 0x1.eae807aba01ebp-1,
    0x1.e741aa59750e4p-1, 0x1.e3a9179dc1a73p-1, 0x1.e01e01e01e01ep-1,
    0x1.dca01dca01dcap-1, 0x1.d92f2231e7f8ap-1, 0x1.d5cac807572b2p-1,
    0x1.d272ca3fc5b1ap-1, 0x1.cf26e5c44bfc6p-1, 0x1.cbe6d9601cbe7p-1,
    0x1.c8b265afb8a42p-1, 0x1.c5894d10d4986p-1, 0x1.c26b5392ea01cp-1,
    0x1.bf583ee868d8bp-1, 0x1.bc4fd65883e7bp-1, 0x1.b951e2b18ff23p-1,
    0x1.b65e2e3beee05p-1, 0x1.b37484ad806cep-1, 0x1.b094b31d922a4p-1,
    0x1.adbe87f94905ep-1, 0x1.aaf1d2f87ebfdp-1, 0x1.a82e65130e159p-1,
    0x1.a574107688a4ap-1, 0x1.a2c2a87c51ca0p-1, 0x1.a01a01a01a01ap-1,
    0x1.9d79f176b682dp-1, 0x1.9ae24ea5510dap-1, 0x1.9852f0d8ec0ffp-1,
    0x1.95cbb0be377aep-1, 0x1.934c67f9b2ce6p-1, 0x1.90d4f120190d5p-1,
    0x1.8e6527af1373fp-1, 0x1.8bfce8062ff3ap-1, 0x1.899c0f601899cp-1,
    0x1.87427bcc092b9p-1, 0x1.84f00c2780614p-1, 0x1.82a4a0182a4a0p-1,
    0x1.8060180601806p-1, 0x1.7e225515a4f1dp-1, 0x1.7beb3922e017cp-1,
    0x1.79baa6bb6398bp-1, 0x1.77908119ac60dp-1, 0x1.756cac201756dp-1,
    0x1.734f0c541fe8dp-1, 0x1.713786d9c7c09p-1, 0x1.6f26016f26017p-1,
    0x1.6d1a62681c861p-1, 0x1.6b1490aa31a3dp-1, 0x1.691473a88d0c0p-1,
    0x1.6719f3601671ap-1, 0x1.6524f853b4aa3p-1, 0x1.63356b88ac0dep-1,
    0x1.614b36831ae94p-1, 0x1.5f66434292dfcp-1, 0x1.5d867c3ece2a5p-1,
    0x1.5babcc647fa91p-1, 0x1.59d61f123ccaap-1, 0x1.5805601580560p-1,
    0x1.56397ba7c52e2p-1, 0x1.54725e6bb82fep-1, 0x1.52aff56a8054bp-1,
    0x1.50f22e111c4c5p-1, 0x1.4f38f62dd4c9bp-1, 0x1.4d843bedc2c4cp-1,
    0x1.4bd3edda68fe1p-1, 0x1.4a27fad76014ap-1, 0x1.4880522014880p-1,
    0x1.46dce34596066p-1, 0x1.453d9e2c776cap-1, 0x1.43a2730abee4dp-1,
    0x1.420b5265e5951p-1, 0x1.40782d10e6566p-1, 0x1.3ee8f42a5af07p-1,
    0x1.3d5d991aa75c6p-1, 0x1.3bd60d9232955p-1, 0x1.3a524387ac822p-1,
    0x1.38d22d366088ep-1, 0x1.3755bd1c945eep-1, 0x1.35dce5f9f2af8p-1,
    0x1.34679ace01346p-1, 0x1.32f5ced6a1dfap-1, 0x1.3187758e9ebb6p-1,
    0x1.301c82ac40260p-1, 0x1.2eb4ea1fed14bp-1, 0x1.2d50a012d50a0p-1,
    0x1.2bef98e5a3711p-1, 0x1.2a91c92f3c105p-1, 0x1.293725bb804a5p-1,
    0x1.27dfa38a1ce4dp-1, 0x1.268b37cd60127p-1, 0x1.2539d7e9177b2p-1,
    0x1.23eb79717605bp-1, 0x1.22a0122a0122ap-1, 0x1.21579804855e6p-1,
    0x1.2012012012012p-1, 0x1.1ecf43c7fb84cp-1, 0x1.1d8f5672e4abdp-1,
    0x1.1c522fc1ce059p-1, 0x1.1b17c67f2bae3p-1, 0x1.19e0119e0119ep-1,
    0x1.18ab083902bdbp-1, 0x1.1778a191bd684p-1, 0x1.1648d50fc3201p-1,
    0x1.151b9a3fdd5c9p-1, 0x1.13f0e8d344724p-1, 0x1.12c8b89edc0acp-1,
    0x1.11a3019a74826p-1, 0x1.107fbbe011080p-1, 0x1.0f5edfab325a2p-1,
    0x1.0e40655826011p-1, 0x1.0d24456359e3ap-1, 0x1.0c0a7868b4171p-1,
    0x1.0af2f722eecb5p-1, 0x1.09ddba6af8360p-1, 0x1.08cabb37565e2p-1,
    0x1.07b9f29b8eae2p-1, 0x1.06ab59c7912fbp-1, 0x1.059eea0727586p-1,
    0x1.04949cc1664c5p-1, 0x1.038c6b78247fcp-1, 0x1.02864fc7729e9p-1,
    0x1.0182436517a37p-1, 0x1.0080402010080p-1
};
static const double LN2 = 0x1.62e42fefa39efp-1;

/* -ln(u 2^-63) for 1 <= u < 2^63, absolute error < 2^-46 + 2^-52 (-ln U)
 * (the file comment above).  The exponent comes from the double's bits,
 * not from clz: x86's bsr has a false dependency on its destination, which
 * chained every sample of a loop to the previous one. */
static inline double neg_ln_u(uint64_t u, int64_t *expo)
{
    double d = (double)(int64_t)u;                 /* relative error <= 2^-53 */
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    int64_t e = (int64_t)(bits >> 52) - 1023;      /* d in [2^e, 2^(e+1)) */
    unsigned i = (unsigned)(bits >> 45) & 127;     /* the bin of m */
    uint64_t mbits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    double m;                                      /* d 2^-e in [1, 2), exact */
    memcpy(&m, &mbits, sizeof m);
    double r = m * INV_CENTRE[i] - 1.0;
    double r2 = r * r;
    double p = r + r2 * (-0.5 + r * (1.0 / 3.0)) + r2 * r2 * (-0.25 + r * 0.2);
    *expo = e;
    return (double)(63 - e) * LN2 - (LOG_CENTRE[i] + p);
}

/* Is t/s > 2^INVERT_MAX_LOG2_SCALE? (exact) */
static int beyond_inversion(uint64_t t, uint64_t s)
{
    return (unsigned __int128)t > ((unsigned __int128)s << INVERT_MAX_LOG2_SCALE);
}

typedef struct {
    double b;      /* t/s rounded */
    double lnc;    /* ln(2/(1+a)) rounded */
    double e0;     /* 3 slack b ln c + 2^-40, rounded up */
    double b_up;   /* b (1 + 2^-50), for the bound on b/u */
} invert_params;

/* The sample of word w in *z (returns 1), or undecided (returns 0; *z is
 * then meaningless). */
static inline int invert_word(const invert_params *ip, uint64_t w, int64_t *z)
{
    /* u < 2^20 is left undecided (below); u | 1 keeps the log finite */
    uint64_t u = (w & (uint64_t)INT64_MAX) | 1;
    int64_t ex;
    double x = ip->b * (ip->lnc + neg_ln_u(u, &ex));
    double e = (x + ip->b) * 0x1p-44 + ip->e0;
    /* b/u <= b 2^-ex (1 + 2^-52), u >= 2^ex (1 - 2^-53); 2^-ex from its bits */
    uint64_t pbits = (uint64_t)(1023 - ex) << 52;
    double pow2;
    memcpy(&pow2, &pbits, sizeof pow2);
    double lo = x - ip->b_up * pow2 - e;           /* > -17 */
    int64_t n = (int64_t)lo;                       /* toward zero ... */
    n -= (double)n > lo;                           /* ... then floor */
    int64_t mag = n & ~(n >> 63);                  /* max(0, n) */
    int64_t neg = -(int64_t)(w >> 63);             /* 0 or -1 */
    *z = (mag ^ neg) - neg;
    return ((double)n < lo) & (x + e < (double)(n + 1)) &
           (u >= ((uint64_t)1 << INVERT_MIN_LOG2_U));
}

pds_status pds_discrete_laplace_invert(pds_rng *rng, uint64_t t, uint64_t s,
                                       double slack, int64_t *out, size_t count,
                                       size_t *done, uint64_t *pending)
{
    if (done != NULL)
        *done = 0;
    if (!rng || !check_ratio(s, t) || s == 0 || (count && !out) || !done ||
        !pending || !(slack >= 1e-12))
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;
    if (beyond_inversion(t, s)) {
        for (size_t i = 0; i < count; i++)
            out[i] = pds_discrete_laplace_one(rng, t, s);
        *done = count;
        return PDS_OK;
    }
    double inv = (double)s / (double)t;
    double b = (double)t / (double)s;
    double lnc = -log1p(0.5 * expm1(-inv));
    invert_params ip = {b, lnc, (3.0 * slack * b * lnc + 0x1p-40) * (1.0 + 0x1p-50),
                        b * (1.0 + 0x1p-50)};
    if (slack >= 0.5 && count > 0) {
        /* tests only: every word goes to the exact path */
        *pending = pds_rng_u64(rng);
        return PDS_EPRECISION;
    }
    uint8_t ok[64];
    size_t i = 0;
    while (i < count) {
        /* a block of the generator's buffered words, no branch per sample;
         * only the words up to the first undecided one are consumed */
        size_t avail;
        const uint64_t *w = pds_rng_words(rng, &avail);
        size_t k = count - i < avail ? count - i : avail;
        k = k < 64 ? k : 64;
        uint8_t bad = 0;
        for (size_t j = 0; j < k; j++) {
            ok[j] = (uint8_t)invert_word(&ip, w[j], &out[i + j]);
            bad |= (uint8_t)!ok[j];
        }
        if (bad) {
            size_t j = 0;
            while (ok[j])
                j++;
            rng->pos += (uint32_t)(j + 1);
            *done = i + j;
            *pending = w[j];
            return PDS_EPRECISION;
        }
        rng->pos += (uint32_t)k;
        i += k;
    }
    *done = count;
    return PDS_OK;
}
