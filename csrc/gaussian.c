/* Exact discrete Gaussian sampler, integer arithmetic only.
 *
 * Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
 * Privacy" (NeurIPS 2020), Algorithm 3: propose Y from the discrete Laplace
 * of integer scale t = floor(sigma) + 1 and accept it with probability
 * exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)); the accepted Y has
 * P(y) proportional to exp(-y^2 / (2 sigma^2)).
 *
 * sigma^2 = n/d is an exact rational.  The acceptance exponent is the
 * rational u^2 / D with u = |Y| d t - n and D = 2 n d t^2.  u^2 needs up to
 * 254 bits (a far proposal), so it is formed as a 256-bit product and split
 * exactly into whole part q and remainder r < D: exp(-q) is q independent
 * Bernoulli(exp(-1)) coins and exp(-r/D) is CKS Algorithm 1, whose
 * Bernoulli(r/(D k)) coins are Bernoulli(r/D) and Bernoulli(1/k) together.
 * Bernoulli(r/D) compares a uniform bit stream with the binary expansion of
 * r/D, so no modulo bias and no floating point.
 */
#include <stdint.h>
#include <stddef.h>
#include "internal.h"

typedef unsigned __int128 u128;

static const u128 U128_TOP = (u128)1 << 127;

typedef struct {
    u128 hi;
    u128 lo;
} u256;

static u256 mul_128(u128 a, u128 b)
{
    const u128 mask = (u128)UINT64_MAX;
    u128 a0 = a & mask, a1 = a >> 64, b0 = b & mask, b1 = b >> 64;
    u128 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    /* < 3 * 2^64: no overflow */
    u128 mid = (p00 >> 64) + (p01 & mask) + (p10 & mask);
    u256 r;
    r.lo = (p00 & mask) | (mid << 64);
    r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    return r;
}

/* q = x / den, *rem = x mod den, for 1 <= den < 2^127. */
static u256 divmod_256(u256 x, u128 den, u128 *rem)
{
    u256 q = {0, 0};
    if (x.hi == 0) {
        q.lo = x.lo / den;
        *rem = x.lo % den;
        return q;
    }
    u128 r = 0;
    for (int bit = 255; bit >= 0; bit--) {
        u128 in = bit >= 128 ? (x.hi >> (bit - 128)) & 1 : (x.lo >> bit) & 1;
        r = (r << 1) | in;  /* r < den < 2^127 before the shift */
        if (r >= den) {
            r -= den;
            if (bit >= 128)
                q.hi |= (u128)1 << (bit - 128);
            else
                q.lo |= (u128)1 << bit;
        }
    }
    *rem = r;
    return q;
}

/* Bernoulli(num/den), 0 <= num, 1 <= den < 2^127: U < num/den for a uniform
 * U in [0, 1) read bit by bit (two coins expected). */
static int bernoulli_u128(pds_rng *rng, u128 num, u128 den)
{
    if (num == 0) return 0;
    if (num >= den) return 1;
    u128 rem = num;
    for (;;) {
        rem <<= 1;
        int pbit = rem >= den;
        if (pbit) rem -= den;
        int ubit = pds_rng_coin(rng);
        if (ubit != pbit) return ubit < pbit;
        /* The expansion of num/den ended: U >= num/den (U = num/den has
         * probability zero). */
        if (rem == 0) return 0;
    }
}

/* CKS Algorithm 1: Bernoulli(exp(-r/den)) for 0 <= r < den < 2^127. */
static int bernoulli_exp_frac(pds_rng *rng, u128 r, u128 den)
{
    uint64_t k = 1;
    for (;;) {
        /* A ~ Bernoulli(gamma / k) as the product of two independent coins. */
        if (!bernoulli_u128(rng, r, den)) break;
        if (k > 1 && pds_uniform_below(rng, k) != 0) break;
        k++;
    }
    return (int)(k & 1);
}

/* Bernoulli(exp(-(q + r/den))) with a 256-bit whole part q. */
static int bernoulli_exp_big(pds_rng *rng, u256 q, u128 r, u128 den)
{
    while (q.hi != 0 || q.lo != 0) {
        if (!pds_bernoulli_exp(rng, 1, 1)) return 0;
        if (q.lo == 0) q.hi--;
        q.lo--;
    }
    return bernoulli_exp_frac(rng, r, den);
}

static uint64_t isqrt_u64(uint64_t v)
{
    uint64_t s = 0;
    for (int shift = 62; shift >= 0; shift -= 2) {
        uint64_t cand = (s << 1) | 1;  /* try the next bit of the root */
        s <<= 1;
        if (((u128)cand * cand) <= (v >> shift)) s = cand;
    }
    return s;
}

/* The parameters Algorithm 3 needs, or 0 when sigma^2 = num/den is outside
 * the documented range (the header states it). */
typedef struct {
    uint64_t num, den, t, dt;
    u128 big_d;
} gauss_params;

static int gauss_setup(uint64_t num, uint64_t den, gauss_params *g)
{
    const uint64_t lim = (uint64_t)1 << 63;
    if (num == 0 || den == 0 || num >= lim || den >= lim) return 0;
    uint64_t t = isqrt_u64(num / den) + 1;  /* floor(sqrt(num/den)) + 1 */
    uint64_t dt;
    if (__builtin_mul_overflow(den, t, &dt)) return 0;
    u128 nd = (u128)num * den;              /* < 2^126 */
    u128 big_d;
    if (__builtin_mul_overflow(nd, (u128)t * t, &big_d)) return 0;
    if (big_d >= U128_TOP / 2) return 0;    /* 2 n d t^2 < 2^127 */
    g->num = num;
    g->den = den;
    g->t = t;
    g->dt = dt;
    g->big_d = big_d * 2;
    return 1;
}

static int64_t gauss_one(pds_rng *rng, const gauss_params *g)
{
    for (;;) {
        int64_t y = pds_discrete_laplace_one(rng, g->t, 1);
        uint64_t ay = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
        u128 m = (u128)ay * g->dt;          /* < 2^63 * 2^64 */
        u128 u = m >= g->num ? m - g->num : (u128)g->num - m;
        u128 r;
        u256 q = divmod_256(mul_128(u, u), g->big_d, &r);
        if (bernoulli_exp_big(rng, q, r, g->big_d)) return y;
    }
}

pds_status pds_discrete_gaussian_check(uint64_t sigma2_num, uint64_t sigma2_den)
{
    gauss_params g;
    return gauss_setup(sigma2_num, sigma2_den, &g) ? PDS_OK : PDS_EINVAL;
}

pds_status pds_discrete_gaussian_fill(pds_rng *rng, uint64_t sigma2_num,
                                      uint64_t sigma2_den, int64_t *out,
                                      size_t count)
{
    gauss_params g;
    if (!rng || (count && !out) || !gauss_setup(sigma2_num, sigma2_den, &g))
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return (pds_status)st;
    for (size_t i = 0; i < count; i++) out[i] = gauss_one(rng, &g);
    return PDS_OK;
}
