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
#include <float.h>
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
    PDS_MUTATE_NODE_SCALE(1, &t, &s);   /* test-only; empty in releases */
    for (size_t i = 0; i < count; i++)
        out[i] = pds_discrete_laplace_one(rng, t, s);
    return PDS_OK;
}

/* ------------------------------------------------------------------------
 * The public batch sampler: discrete Laplace by inversion.
 *
 * Law.  Let b = t/s, q = e^{-1/b}.  The discrete Laplace has
 * P(Z = z) = (1-q)/(1+q) q^|z|, so P(|Z| >= k) = 2 q^k / (1+q) for k >= 1.
 * With U uniform on (0, 1) put
 *     y(U) = b (-ln U + C),   C = ln(2 / (1 + q)) > 0,
 * and |Z| = floor(y(U)): for k >= 1, y >= k  <=>  U <= q^k 2/(1+q), which
 * has probability 2 q^k / (1+q) (< 1), and y > 0 always.  The sign is a
 * fair coin independent of U, ignored when |Z| = 0 (so no draw is
 * rejected): P(Z = +-k) = (2 q^k - 2 q^{k+1}) / (2 (1+q)) = (1-q)/(1+q) q^k
 * for k >= 1, and P(Z = 0) = 1 - 2q/(1+q) = (1-q)/(1+q).  Exactly the
 * discrete Laplace: the same law as CKS Algorithm 2 (a signed geometric
 * with "-0" rejected), one keystream word per draw instead of several.
 *
 * Draw.  One word w: the sign is its top bit, and its low 63 bits u put U
 * in [u 2^-63, (u+1) 2^-63) (the infinitely many further bits of U are
 * drawn only if needed).  y is decreasing in U, so over that interval
 *     y in (b L1 + K, b L0 + K],  L0 = -ln(u 2^-63), L1 = -ln((u+1) 2^-63),
 * K = b C.  The draw is decided when floor is constant over it; since the
 * boundary points have probability 0, the decided value is floor(y(U)) for
 * the U of the stream, i.e. the law above exactly.
 *
 * Rigorous bounds, in two tiers: double for every draw, and long double
 * (where it is wider: x87's 64-bit or a 113-bit significand) for the few
 * the double tier leaves open.  In a tier of precision p every + - * / and
 * conversion errs by at most eps = 2^(1-p) relative (any rounding mode),
 * and the elementary functions log, expm1, log1p by at most `slack`
 * relative to their exact result.  glibc documents a few ulp ("Known
 * Maximum Errors in Math Functions"); slack is 1e-12 (~4500 ulp) for
 * double and 1e-12 2^(53-p) (~9000 ulp) for long double, and a tier with
 * slack above 2^-10 (tests only) decides nothing.  slack >= 16 eps.  With
 * bd = fl(t)/fl(s) = b (1 + th), |th| <= 3 eps:
 *  - K: dq = -expm1(-fl(s)/fl(t)) is 1 - q with relative error <= slack +
 *    4 eps (the argument's relative error enters at most once: the
 *    sensitivity x e^-x / (1 - e^-x) is <= 1); z = dq / (2 - dq) doubles
 *    it (2 - dq >= dq) plus 3 eps; log1p(z) = C adds slack (sensitivity
 *    z / ((1+z) ln(1+z)) <= 1); bd and the product add 5 eps.  So
 *    |Kd - K| <= (3 slack + 16 eps) K <= 4 slack K, and
 *    k_lo = Kd (1 - 8 slack) <= K <= k_hi = Kd (1 + 8 slack).
 *  - -ln U.  Double main path, u >= 2^50: Ld = -log(fl(u) 2^-63);
 *    fl(u) = u (1 + th'), |th'| <= eps/2, moves -ln by <= eps; log errs by
 *    <= slack (4/3) Ld (as slack <= 1/4); the interval has L0 - L1 =
 *    ln(1 + 1/u) <= 2^-50.  So every -ln U of the interval is within
 *    e = 2 slack Ld + 2^-48 of Ld.  Otherwise (double, 1 <= u < 2^50, where
 *    u and u + 1 are exact; long double, any u >= 1): Ld0 and Ld1, the logs
 *    of both ends, are within e = 2 slack Ld + 2 eps of L0 and L1.
 *  - A = fl(bd Ld) is b Ld within 5 eps A; b e <= 2 slack A (1 + 5 eps) +
 *    b (2^-48 or 2 eps).  Hence every y of the interval lies in
 *    [A + K - M, A + K + M] (A of the matching end) with
 *    M = A (2 slack + 8 eps) + b 2^4 eps, and the computed
 *        lo = fl(fl(A1 + k_lo) - m1),  hi = fl(fl(A0 + k_hi) + m0),
 *        m = fl(fl(fl(A + k_hi) margin_rel) + margin_abs),
 *        margin_rel = 2 slack + 2^8 eps,  margin_abs = bd 2^6 eps,
 *    satisfy lo <= y <= hi: m exceeds M by at least A 2^7 eps + b 2^5 eps,
 *    which covers the <= 6 eps (A + k_hi + m) of these four roundings
 *    (k_hi <= b ln 2 (1 + 8 slack) because C <= ln 2).
 *  - If lo >= 0, hi < 2^53 and floor(lo) + 1 > hi, then floor(y) =
 *    floor(lo) for every U of the interval: the draw is decided.
 * The double tier leaves about 2 margin_rel y + 2 margin_abs ~ 4e-12 b of
 * the draws open, the long double tier ~ 2e-15 b of them (x87).  Those, and
 * u = 0, stop the fill with PDS_EPRECISION and the draw pending;
 * pydp_synopsis/_exact.py decides floor(y(U)) with correctly rounded
 * decimal interval arithmetic, drawing further words of the same stream to
 * narrow U until it is settled, and pds_dlap_resolve writes it.  Floating
 * point only chooses between "decided here" and "decide exactly": the
 * output law is exactly the discrete Laplace, whatever the errors inside
 * the allowances.
 *
 * Scales.  For b <= PDS_DLAP_FAST_MAX_SCALE (2^30) y < 2^37, the long
 * double tier sees < 5e-3 of the draws and Python ~2e-6 at 2^30 (~1e-9 at
 * 10^6); larger scales, a choice made from the public t, s only, keep CKS
 * Algorithm 2.
 *
 * Chunks.  A chunked fill (pds_dlap_fill_chunks) draws chunk c (draws
 * [c n, (c+1) n), n = PDS_DLAP_CHUNK) from block c 2^32 of the fill key's
 * stream (pds_rng_split); a chunk needs far fewer than 2^32 blocks, so the
 * chunks' streams never overlap, and any split of the chunks between
 * threads gives the same draws.
 */
enum { DLAP_MAIN_MIN_LOG2 = 50 };
#define DLAP_SLACK_DEFAULT 1e-12
#define DLAP_SLACK_DECIDES 0x1p-10
/* long double: 1e-12 2^(53 - p); a second tier only if p > 53. */
#define DLAP_TIER2 (LDBL_MANT_DIG > DBL_MANT_DIG)
#define DLAP_SLACK_LD_DEFAULT (1e-12L * (1.0L / (1ULL << (LDBL_MANT_DIG - DBL_MANT_DIG))))
#define DLAP_EPS_LD (2.0L * LDBL_EPSILON)

static void dlap_derive(pds_dlap *d)
{
    double bd = (double)d->t / (double)d->s;
    double x = (double)d->s / (double)d->t;
    double dq = -expm1(-x);                 /* 1 - q */
    double kd = bd * log1p(dq / (2.0 - dq)); /* b ln(2 / (1 + q)) */
    double slack = d->slack;
    d->b = bd;
    if (slack <= DLAP_SLACK_DECIDES) {
        d->k_lo = kd * (1.0 - 8.0 * slack);
        d->k_hi = kd * (1.0 + 8.0 * slack);
        d->margin_rel = 2.0 * slack + 0x1p-44;   /* 2^8 eps */
        d->margin_abs = bd * 0x1p-46;            /* 2^6 eps */
    } else {
        /* No useful bounds (tests only): the double tier decides nothing. */
        d->k_lo = -INFINITY;
        d->k_hi = INFINITY;
        d->margin_rel = INFINITY;
        d->margin_abs = INFINITY;
    }
    long double bl = (long double)d->t / (long double)d->s;
    long double xl = (long double)d->s / (long double)d->t;
    long double dql = -expm1l(-xl);
    long double kl = bl * log1pl(dql / (2.0L - dql));
    long double sl = (long double)d->slack_ld;
    d->bl = bl;
    if (DLAP_TIER2 && d->slack_ld <= DLAP_SLACK_DECIDES) {
        d->kl_lo = kl * (1.0L - 8.0L * sl);
        d->kl_hi = kl * (1.0L + 8.0L * sl);
        d->ml_rel = 2.0L * sl + 256.0L * DLAP_EPS_LD;
        d->ml_abs = bl * 64.0L * DLAP_EPS_LD;
    } else {
        d->kl_lo = -INFINITY;
        d->kl_hi = INFINITY;
        d->ml_rel = INFINITY;
        d->ml_abs = INFINITY;
    }
}

pds_status pds_dlap_init(pds_dlap *d, uint64_t t, uint64_t s)
{
    if (!d || !check_ratio(s, t) || s == 0)
        return PDS_EINVAL;
    PDS_MUTATE_NODE_SCALE(1, &t, &s);   /* test-only; empty in releases */
    d->t = t;
    d->s = s;
    /* t/s <= max  <=>  t <= max s (exact in 128 bits). */
    d->fast = (unsigned __int128)t <= (unsigned __int128)PDS_DLAP_FAST_MAX_SCALE * s;
    d->pending = 0;
    d->next = 0;
    d->pending_word = 0;
    d->stream = 0;
    d->slack = DLAP_SLACK_DEFAULT;
    d->slack_ld = (double)DLAP_SLACK_LD_DEFAULT;
    dlap_derive(d);
    return PDS_OK;
}

pds_status pds_dlap_set_slack(pds_dlap *d, double slack, double slack_ld)
{
    if (slack_ld == 0.0)
        slack_ld = (double)DLAP_SLACK_LD_DEFAULT;
    /* never below the defaults; also refuses NaN */
    if (!d || !(slack >= DLAP_SLACK_DEFAULT) ||
        !(slack_ld >= (double)DLAP_SLACK_LD_DEFAULT))
        return PDS_EINVAL;
    d->slack = slack;
    d->slack_ld = slack_ld;
    dlap_derive(d);
    return PDS_OK;
}

/* floor(y) for y in [lo, hi] (lo from A1 = b Ld1, hi from A0 = b Ld0), if
 * the bounds settle it (see the proof above): 1 and *k, else 0. */
static inline int dlap_settle(const pds_dlap *d, double a1, double a0, int64_t *k)
{
    double lo = (a1 + d->k_lo) - ((a1 + d->k_hi) * d->margin_rel + d->margin_abs);
    double hi = (a0 + d->k_hi) + ((a0 + d->k_hi) * d->margin_rel + d->margin_abs);
    if (!(lo >= 0.0 && hi < 0x1p53))
        return 0;
    int64_t f = (int64_t)lo;
    if (!((double)(f + 1) > hi))
        return 0;
    *k = f;
    return 1;
}

/* The long double tier: both ends of U's interval (see the proof). */
static int dlap_settle_ld(const pds_dlap *d, uint64_t u, int64_t *k)
{
    long double a0 = d->bl * -logl((long double)u * 0x1p-63L);
    long double a1 = d->bl * -logl((long double)(u + 1) * 0x1p-63L);
    long double lo = (a1 + d->kl_lo) - ((a1 + d->kl_hi) * d->ml_rel + d->ml_abs);
    long double hi = (a0 + d->kl_hi) + ((a0 + d->kl_hi) * d->ml_rel + d->ml_abs);
    if (!(lo >= 0.0L && hi < 0x1p53L))
        return 0;
    int64_t f = (int64_t)lo;
    if (!((long double)(f + 1) > hi))
        return 0;
    *k = f;
    return 1;
}

/* One draw from word w the slow way (rare path, or a word the batch left
 * undecided): 1 and out[i] set, or 0 (pending). */
static int dlap_one_word(const pds_dlap *d, uint64_t w, int64_t *out)
{
    uint64_t u = w & (((uint64_t)1 << 63) - 1);
    int64_t k;
    int ok;
    if (u >= (uint64_t)1 << DLAP_MAIN_MIN_LOG2) {
        double a = d->b * -log((double)u * 0x1p-63);
        ok = dlap_settle(d, a, a, &k);
    } else if (u > 0) {
        double a0 = d->b * -log((double)u * 0x1p-63);
        double a1 = d->b * -log((double)(u + 1) * 0x1p-63);
        ok = dlap_settle(d, a1, a0, &k);
    } else {
        return 0;   /* U may be 0: y unbounded */
    }
    if (!ok && DLAP_TIER2)
        ok = dlap_settle_ld(d, u, &k);
    if (ok)
        *out = (w >> 63) ? -k : k;
    return ok;
}

/* out[d->next .. end) from rng; PDS_EPRECISION leaves out[d->next] pending.
 * The words are taken a buffer of the generator at a time: the logs of a
 * batch first (independent calls, which the CPU overlaps), then the
 * bounds; a word the batch could not settle (main path only there) is
 * redone by dlap_one_word, in order, and the generator's position ends
 * right after the last word used. */
static pds_status dlap_run(pds_dlap *d, pds_rng *rng, int64_t *out, uint64_t end)
{
    uint64_t i = d->next;
    if (!d->fast) {
        for (; i < end; i++)
            out[i] = pds_discrete_laplace_one(rng, d->t, d->s);
        d->next = end;
        return PDS_OK;
    }
    const uint64_t mask = ((uint64_t)1 << 63) - 1;
    const uint64_t main_min = (uint64_t)1 << DLAP_MAIN_MIN_LOG2;
    double a[64];
    while (i < end) {
        if (rng->pos >= 64)
            pds_rng_refill(rng);
        const uint64_t *w = rng->buf + rng->pos;
        uint32_t n = 64 - rng->pos;
        if ((uint64_t)n > end - i)
            n = (uint32_t)(end - i);
        for (uint32_t j = 0; j < n; j++)
            a[j] = -log((double)(w[j] & mask) * 0x1p-63);
        int all = 1;
        for (uint32_t j = 0; j < n; j++) {
            double aj = d->b * a[j];
            double lo = (aj + d->k_lo) - ((aj + d->k_hi) * d->margin_rel + d->margin_abs);
            double hi = (aj + d->k_hi) + ((aj + d->k_hi) * d->margin_rel + d->margin_abs);
            int ok = (w[j] & mask) >= main_min && lo >= 0.0 && hi < 0x1p53;
            int64_t f = ok ? (int64_t)lo : 0;
            ok = ok && (double)(f + 1) > hi;
            all &= ok;
            out[i + j] = (w[j] >> 63) ? -f : f;
        }
        if (__builtin_expect(!all, 0)) {
            /* Redo the batch's undecided words in order (same checks). */
            for (uint32_t j = 0; j < n; j++) {
                double aj = d->b * a[j];
                int64_t f;
                if ((w[j] & mask) >= main_min && dlap_settle(d, aj, aj, &f))
                    continue;
                if (!dlap_one_word(d, w[j], out + i + j)) {
                    rng->pos += j + 1;
                    d->next = i + j;
                    d->pending = 1;
                    d->pending_word = w[j];
                    return PDS_EPRECISION;
                }
            }
        }
        rng->pos += n;
        i += n;
    }
    d->next = end;
    return PDS_OK;
}

pds_status pds_dlap_fill(pds_dlap *d, pds_rng *rng, int64_t *out, uint64_t end)
{
    if (!d || !rng || (end > d->next && !out))
        return PDS_EINVAL;
    if (d->pending || d->t == 0 || d->s == 0)
        return PDS_ESTATE;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;
    return dlap_run(d, rng, out, end);
}

pds_status pds_dlap_fill_chunks(pds_dlap *d, pds_rng *chunk_rng, const uint8_t *key32,
                                int64_t *out, uint64_t end)
{
    if (!d || !chunk_rng || !key32 || (end > d->next && !out))
        return PDS_EINVAL;
    if (d->pending || d->t == 0 || d->s == 0 || end > PDS_DLAP_CHUNK << 32)
        return PDS_ESTATE;
    while (d->next < end) {
        uint64_t c = d->next / PDS_DLAP_CHUNK;
        if (d->stream != c + 1) {
            pds_rng_init_at(chunk_rng, key32, c << 32);
            d->stream = c + 1;
        }
        uint64_t stop = (c + 1) * PDS_DLAP_CHUNK;
        int st = dlap_run(d, chunk_rng, out, stop < end ? stop : end);
        if (st != PDS_OK)
            return st;
    }
    return PDS_OK;
}

pds_status pds_dlap_resolve(pds_dlap *d, int64_t *out, uint64_t magnitude)
{
    if (!d || !out)
        return PDS_EINVAL;
    if (!d->pending)
        return PDS_ESTATE;
    if (magnitude > (uint64_t)INT64_MAX)
        return PDS_EINVAL;
    int64_t k = (int64_t)magnitude;
    out[d->next] = (d->pending_word >> 63) ? -k : k;
    d->next++;
    d->pending = 0;
    return PDS_OK;
}
