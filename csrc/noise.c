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
    PDS_MUTATE_NODE_SCALE(1, &t, &s);   /* test-only; empty in releases */
    for (size_t i = 0; i < count; i++)
        out[i] = pds_discrete_laplace_one(rng, t, s);
    return PDS_OK;
}
