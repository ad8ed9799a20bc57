/* Exact products with lower-triangular Toeplitz integer matrices.
 *
 * The square-root factorization counter (pydp_synopsis/sqrt_counter.py)
 * releases w = R x + z with R an integer Toeplitz matrix: its privacy proof
 * needs R x exactly, so the product is an exact convolution.  Short inputs
 * use the schoolbook sum in 128-bit integers; long ones a number-theoretic
 * transform modulo the prime p = 2^64 - 2^32 + 1, whose multiplicative
 * group has order divisible by 2^32 (transforms up to length 2^32).  The
 * caller's bound (every result below 2^62) makes the residue the integer.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include "pydp_synopsis.h"

typedef unsigned __int128 u128;

static const uint64_t P = 0xFFFFFFFF00000001ULL;  /* 2^64 - 2^32 + 1 */
static const uint64_t GENERATOR = 7;              /* generates (Z/p)^* */
static const uint64_t EPS32 = 0xFFFFFFFFULL;      /* 2^64 mod p */

/* Branch-free modular arithmetic (the transform's data are random: a
 * branch per step would mispredict half the time). */

/* x mod p for x < 2^128: 2^64 = 2^32 - 1 and 2^96 = -1 (mod p). */
static inline uint64_t reduce(u128 x)
{
    uint64_t lo = (uint64_t)x;
    uint64_t hi = (uint64_t)(x >> 64);
    uint64_t a = hi & EPS32, b = hi >> 32;
    uint64_t t0 = lo - b;
    t0 -= EPS32 & (0 - (uint64_t)(lo < b));   /* borrowed 2^64 = p + 2^32 - 1 */
    uint64_t t1 = (a << 32) - a;               /* a (2^32 - 1) < 2^64 */
    uint64_t s = t0 + t1;
    s += EPS32 & (0 - (uint64_t)(s < t1));     /* carried 2^64 */
    return s - (P & (0 - (uint64_t)(s >= P)));
}

static inline uint64_t mul_mod(uint64_t a, uint64_t b)
{
    return reduce((u128)a * b);
}

/* a, b < p */
static inline uint64_t add_mod(uint64_t a, uint64_t b)
{
    uint64_t s = a + b;
    uint64_t over = (uint64_t)(s < a) | (uint64_t)(s >= P);
    return s - (P & (0 - over));               /* with a carry, s - p wraps to the sum - p */
}

static inline uint64_t sub_mod(uint64_t a, uint64_t b)
{
    uint64_t d = a - b;
    return d + (P & (0 - (uint64_t)(a < b)));
}

static uint64_t pow_mod(uint64_t base, uint64_t e)
{
    uint64_t r = 1;
    while (e) {
        if (e & 1) r = mul_mod(r, base);
        base = mul_mod(base, base);
        e >>= 1;
    }
    return r;
}

/* In-place iterative radix-2 transform of length n = 2^logn, n >= 2.
 * roots[j] = w^j for j < n/2, w a primitive n-th root of unity (its inverse
 * for the inverse transform; the caller scales by 1/n). */
static void ntt(uint64_t *a, size_t n, int logn, const uint64_t *roots)
{
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            uint64_t tmp = a[i];
            a[i] = a[j];
            a[j] = tmp;
        }
    }
    for (int s = 1; s <= logn; s++) {
        size_t len = (size_t)1 << s, half = len >> 1, stride = n >> s;
        for (size_t i = 0; i < n; i += len) {
            for (size_t j = 0; j < half; j++) {
                uint64_t u = a[i + j];
                uint64_t v = mul_mod(a[i + j + half], roots[j * stride]);
                a[i + j] = add_mod(u, v);
                a[i + j + half] = sub_mod(u, v);
            }
        }
    }
}

static void fill_roots(uint64_t *roots, size_t n, int logn, int inverse)
{
    uint64_t w = pow_mod(GENERATOR, (P - 1) >> logn);
    if (inverse) w = pow_mod(w, P - 2);
    roots[0] = 1;
    for (size_t j = 1; j < n / 2; j++) roots[j] = mul_mod(roots[j - 1], w);
}

static const u128 RESULT_LIMIT = (u128)1 << 62;

pds_status pds_lower_toeplitz_apply(const int64_t *coef, const int64_t *x,
                                    size_t n, int64_t *out)
{
    if (n == 0) return PDS_OK;
    if (!coef || !x || !out) return PDS_EINVAL;
    /* Every result is at most max(coef) * sum(x): check it stays below
     * 2^62 (so it is its own residue, and fits int64). */
    u128 sum_x = 0;
    int64_t max_c = 0;
    for (size_t i = 0; i < n; i++) {
        if (coef[i] < 0 || x[i] < 0) return PDS_EINVAL;
        sum_x += (uint64_t)x[i];
        if (coef[i] > max_c) max_c = coef[i];
    }
    if (sum_x >= RESULT_LIMIT || (u128)max_c * sum_x >= RESULT_LIMIT) return PDS_ERANGE;

    if (n <= 64) {
        for (size_t t = 0; t < n; t++) {
            u128 acc = 0;
            for (size_t i = 0; i <= t; i++) acc += (u128)(uint64_t)coef[t - i] * (uint64_t)x[i];
            out[t] = (int64_t)acc;
        }
        return PDS_OK;
    }

    int logn = 0;
    size_t len = 1;
    while (len < 2 * n) {
        len <<= 1;
        logn++;
    }
    uint64_t *fa = calloc(len, sizeof *fa);
    uint64_t *fb = calloc(len, sizeof *fb);
    uint64_t *roots = malloc(len / 2 * sizeof *roots);
    if (!fa || !fb || !roots) {
        free(fa);
        free(fb);
        free(roots);
        return PDS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        fa[i] = (uint64_t)coef[i];
        fb[i] = (uint64_t)x[i];
    }
    fill_roots(roots, len, logn, 0);
    ntt(fa, len, logn, roots);
    ntt(fb, len, logn, roots);
    for (size_t i = 0; i < len; i++) fa[i] = mul_mod(fa[i], fb[i]);
    fill_roots(roots, len, logn, 1);
    ntt(fa, len, logn, roots);
    uint64_t inv_len = pow_mod(len, P - 2);
    for (size_t t = 0; t < n; t++) out[t] = (int64_t)mul_mod(fa[t], inv_len);
    free(fa);
    free(fb);
    free(roots);
    return PDS_OK;
}
