/* DNRR private partition: the online mechanism of Fig. 1 and the exact skip
 * of Remark 2.2 (Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy
 * for Rectangle Queries via Private Partitions", section 2).
 *
 * Fig. 1, with positions as 0-based offsets and discrete Laplace noise of
 * scale b = t/s (= 1/epsilon): each segment draws T~ = T + Z; position i adds
 * its count to the running count c and seals when c + nu_i > T~ (nu_i fresh
 * noise), or when i is the last position.
 *
 * The skip.  Over a run of L consecutive positions that add nothing to c
 * (an item's own position after its count was added, plus the empty gap
 * behind it), every position seals independently with the same probability
 *     p = P(nu >= m),  m = T~ - c + 1,
 * and for the discrete Laplace (pmf (1-a)/(1+a) a^|z|, a = e^{-1/b}):
 *     m >= 1:  p = a^m / (1 + a)
 *     m <= 0:  1 - p = a^(1-m) / (1 + a)
 * (the second by symmetry: P(nu >= m) = 1 - P(nu >= 1 - m)).  With
 * lambda = -ln(1 - p) > 0, the seal is at offset G from the run's start,
 * G + 1 the first success of L Bernoulli(p) trials, in two exact steps:
 *   1. The run seals at all with probability 1 - (1-p)^L = -expm1(-L lambda).
 *   2. Given that, P(G = g) is proportional to e^{-lambda g} on [0, L-1].
 *      On [0, 2^k) (2^k > L - 1 >= 2^(k-1)) this pmf is a product over the
 *      binary digits of g, so the digits are independent with
 *      P(bit i = 1) = 1 / (1 + e^{2^i lambda}); draw them high to low and
 *      restart as soon as the prefix exceeds L - 1 (rejection; it accepts
 *      with probability >= 1/2, since 1 - e^{-lambda L} >= (1 - e^{-2 lambda
 *      L}) / 2).
 * Every step is a comparison "U < pi" of a fresh uniform U = 0.u1u2... from
 * the CSPRNG with an irrational pi.  The first 64 bits w put U in
 * [w 2^-64, (w+1) 2^-64); a comparison is decided only when that whole
 * interval lies on one side of rigorous bounds [pi_lo, pi_hi], so each
 * decision is exactly Bernoulli(pi): the output has exactly the law of the
 * per-position mechanism.
 *
 * Fast path of step 1: 1 - (1-p)^L <= L p <= L e^{-m/b} (m >= 1), so if
 * w 2^-64 >= B, an upper bound of L e^{-m/b}, the run does not seal.  This
 * costs one RNG word and one exp(); with c far below T~ it decides almost
 * every run.
 *
 * Bounds in double: lambda, -expm1 and 1/(1+exp) are well conditioned in the
 * forms used (log1p/expm1, never 1 - p when p is tiny).  glibc documents at
 * most a few ulp of error for exp, expm1, log1p (glibc manual, "Known Maximum
 * Errors in Math Functions"); a chain of a dozen operations stays below
 * ~50 ulp = 1e-14 relative, plus ~x 2^-50 where exp(-x) amplifies the error
 * of its argument x.  We allow `slack` (1e-12) per function and
 * slack * (3 + x) for lambda.  When the interval of U straddles the bounds
 * (probability ~1e-12 per comparison), the call returns PDS_EPRECISION with
 * the comparison in p->pending_*; pydp_synopsis/_exact.py decides it with
 * correctly rounded decimal arithmetic, extending U with further words of the
 * same CSPRNG stream, and passes the outcome to pds_partition_resolve.
 */
#include <stdint.h>
#include <stddef.h>
#include <math.h>
#include "internal.h"

/* Draw T~ = T + Z for a new segment (Fig. 1, step 1). */
static int draw_noisy_threshold(pds_partition *p, pds_rng *rng)
{
    int64_t z = pds_discrete_laplace_one(rng, p->t, p->s);
    /* |Z| > 2^61 has probability exp(-2^61 / b) with b <= 2^53 / 9: zero in
     * practice; refusing it keeps every later sum inside int64. */
    if (z > PDS_MAX_NOISE || z < -PDS_MAX_NOISE)
        return PDS_ERANGE;
    p->noisy_threshold = p->threshold + z;
    return PDS_OK;
}

static void set_derived(pds_partition *p)
{
    p->inv_scale = (double)p->s / (double)p->t;
    p->log1p_a = log1p(exp(-p->inv_scale));
    p->slack = 1e-12;
    p->phase = 0;
    p->bit = -1;
    p->pending = 0;
    p->pending_kind = 0;
    p->outcome = -1;
    p->run_m = 0;
    p->run_lm1 = 0;
    p->prefix = 0;
    p->pending_mult = 0;
    p->pending_word = 0;
    p->run_lambda = 0.0;
    p->run_err = -1.0;
}

pds_status pds_partition_init(pds_partition *p, pds_rng *rng, uint64_t last,
                              uint64_t t, uint64_t s, int64_t threshold)
{
    if (p == NULL || rng == NULL || t == 0 || s == 0 || t >= PDS_PARAM_LIMIT ||
        s >= PDS_PARAM_LIMIT || threshold < 0 || threshold > PDS_MAX_THRESHOLD)
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;
    PDS_MUTATE_PARTITION_SCALE(&t, &s);   /* test-only; empty in releases */
    p->last = last;
    p->t = t;
    p->s = s;
    p->threshold = threshold;
    p->count = 0;
    p->position = 0;
    p->finished = 0;
    set_derived(p);
    return draw_noisy_threshold(p, rng);
}

pds_status pds_partition_restore(pds_partition *p, uint64_t last, uint64_t t,
                                 uint64_t s, int64_t threshold,
                                 int64_t noisy_threshold, int64_t count,
                                 uint64_t position, int32_t finished)
{
    if (p == NULL)
        return PDS_EINVAL;
    if (t == 0 || s == 0 || t >= PDS_PARAM_LIMIT || s >= PDS_PARAM_LIMIT ||
        threshold < 0 || threshold > PDS_MAX_THRESHOLD ||
        noisy_threshold > threshold + PDS_MAX_NOISE ||
        noisy_threshold < threshold - PDS_MAX_NOISE || count < 0 ||
        count > PDS_MAX_COUNT || position > last ||
        (finished != 0 && finished != 1) ||
        (finished == 1 && (position != last || count != 0)))
        return PDS_ESTATE;
    PDS_MUTATE_PARTITION_SCALE(&t, &s);   /* test-only; empty in releases */
    p->last = last;
    p->t = t;
    p->s = s;
    p->threshold = threshold;
    p->noisy_threshold = noisy_threshold;
    p->count = count;
    p->position = position;
    p->finished = finished;
    set_derived(p);
    return PDS_OK;
}

/* lambda = -ln(1-p) of the run in double, with its relative error bound
 * (INFINITY when p may underflow: only the exact path decides then). */
static void compute_lambda(pds_partition *p)
{
    int64_t m = p->run_m;
    if (m <= 0) {
        /* lambda = (1-m)/b + ln(1 + a): a sum of positive terms. */
        p->run_lambda = (1.0 - (double)m) * p->inv_scale + p->log1p_a;
        p->run_err = p->slack * 3.0;
        return;
    }
    double x = (double)m * p->inv_scale + p->log1p_a; /* p = e^-x */
    if (x > 700.0) {
        p->run_lambda = 0.0;
        p->run_err = INFINITY;
        return;
    }
    p->run_lambda = -log1p(-exp(-x));
    p->run_err = p->slack * (3.0 + x);
}

/* Is U < pi, for U in [w 2^-64, (w+1) 2^-64)?  1, 0, or -1 (undecided).
 * The 2^-50 factors cover the rounding of w to double. */
static int compare_word(uint64_t w, double pi_lo, double pi_hi)
{
    double u_lo = (double)w * 0x1p-64 * (1.0 - 0x1p-50);
    double u_hi = ((double)w + 1.0) * 0x1p-64 * (1.0 + 0x1p-50);
    if (u_hi <= pi_lo)
        return 1;
    if (u_lo >= pi_hi)
        return 0;
    return -1;
}

/* One exact comparison U < pi with
 *   kind 1: pi = 1 - (1-p)^mult       (the run of mult positions seals)
 *   kind 2: pi = 1 / (1 + (1-p)^-mult) (an offset bit of weight mult is 1).
 * Uses the outcome given by pds_partition_resolve if there is one. */
static int decide(pds_partition *p, pds_rng *rng, int32_t kind, uint64_t mult,
                  int32_t *out)
{
    if (p->outcome >= 0) {
        *out = p->outcome;
        p->outcome = -1;
        return PDS_OK;
    }
    uint64_t w = pds_rng_u64(rng);
    int r = -1;
    if (kind == 1 && p->run_m >= 1) {
        /* Fast path, B >= mult e^{-m/b}: x is lowered and the product raised
         * by 2^-40 relative, far more than the few-ulp errors of the
         * conversions and exp(); clamping x at 700 only loosens B. */
        double x = (double)p->run_m * p->inv_scale * (1.0 - 0x1p-40);
        if (x > 700.0)
            x = 700.0;
        double bound = exp(-x) * (double)mult * (1.0 + 0x1p-40);
        if (bound < 0.5 && w >= (uint64_t)(bound * 0x1p64) + 1)
            r = 0;
    }
    if (r < 0) {
        if (p->run_err < 0.0)
            compute_lambda(p);
        /* e >= 1/2 (only when tests raise slack): no useful double bounds. */
        if (p->run_err < 0.5 && p->slack < 0.5) {
            double e = p->run_err + 0x1p-50;
            double y = (double)mult * p->run_lambda;
            double y_lo = y * (1.0 - e), y_hi = y * (1.0 + e);
            double pi_lo, pi_hi;
            if (kind == 1) {
                pi_lo = -expm1(-y_lo) * (1.0 - p->slack);
                pi_hi = -expm1(-y_hi) * (1.0 + p->slack);
            } else {
                pi_lo = 1.0 / (1.0 + exp(y_hi)) * (1.0 - p->slack);
                /* pi <= e^-y; avoids exp overflow making the bound 0 */
                pi_hi = y_lo > 700.0 ? exp(-700.0)
                                     : 1.0 / (1.0 + exp(y_lo)) * (1.0 + p->slack);
            }
            r = compare_word(w, pi_lo, pi_hi);
        }
    }
    if (r < 0) {
        p->pending = 1;
        p->pending_kind = kind;
        p->pending_mult = mult;
        p->pending_word = w;
        return PDS_EPRECISION;
    }
    *out = r;
    return PDS_OK;
}

static int32_t top_bit(uint64_t x) /* index of the highest set bit; -1 for 0 */
{
    return x == 0 ? -1 : 63 - __builtin_clzll(x);
}

/* Sample the run set up in p (phase 1) or continue it (phase 2): *sealed
 * and the seal's offset *g from the run's start.  Exact; see the file
 * comment. */
static int sample_run(pds_partition *p, pds_rng *rng, int32_t *sealed,
                      uint64_t *g)
{
    int32_t out;
    int st;
    if (p->phase == 1) {
        st = decide(p, rng, 1, p->run_lm1 + 1, &out);
        if (st != PDS_OK)
            return st;
        if (!out) {
            p->phase = 0;
            *sealed = 0;
            return PDS_OK;
        }
        p->phase = 2;
        p->prefix = 0;
        p->bit = top_bit(p->run_lm1);
    }
    for (;;) {
        if (p->bit < 0) {
            p->phase = 0;
            *sealed = 1;
            *g = p->prefix;
            return PDS_OK;
        }
        st = decide(p, rng, 2, (uint64_t)1 << p->bit, &out);
        if (st != PDS_OK)
            return st;
        if (out)
            p->prefix |= (uint64_t)1 << p->bit;
        if (p->prefix > p->run_lm1) { /* every completion exceeds L - 1 */
            p->prefix = 0;
            p->bit = top_bit(p->run_lm1);
            continue;
        }
        p->bit--;
    }
}

/* Seal the open segment at y < last and open the next one. */
static int seal_at(pds_partition *p, pds_rng *rng, uint64_t y)
{
    p->count = 0;
    p->position = y + 1;
    return draw_noisy_threshold(p, rng);
}

pds_status pds_partition_feed(pds_partition *p, pds_rng *rng, const uint64_t *pos,
                              const int64_t *cnt, size_t n, uint64_t end,
                              size_t *consumed, uint64_t *seals, size_t cap,
                              size_t *nseals)
{
    if (p == NULL || rng == NULL || consumed == NULL || nseals == NULL ||
        (n > 0 && pos == NULL) || (cap > 0 && seals == NULL))
        return PDS_EINVAL;
    *consumed = 0;
    *nseals = 0;
    if (p->pending || end > p->last)
        return PDS_EINVAL;
    if (p->finished || p->position > end)
        return n == 0 ? PDS_OK : PDS_EINVAL;
    /* Validate everything before any randomness is spent. */
    for (size_t i = 0; i < n; i++) {
        if (pos[i] < p->position || pos[i] > end ||
            (i > 0 && pos[i] < pos[i - 1]) || (cnt != NULL && cnt[i] < 0) ||
            (p->phase != 0 && pos[i] == p->position))
            return PDS_EINVAL;
    }
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;

    size_t i = 0;
    while (!p->finished && p->position <= end) {
        if (*nseals == cap)
            break;
        if (p->phase == 0) {
            /* Fig. 1 step 2(a): add the counts at this position. */
            while (i < n && pos[i] == p->position) {
                int64_t add = PDS_MUTATE_PARTITION_ITEM(cnt == NULL ? 1 : cnt[i]);
                /* The count saturates at PDS_MAX_COUNT instead of failing:
                 * min(c, M) is non-decreasing and grows by at most 1 when
                 * one item is added, which is all Fig. 1's proof uses, and
                 * whether a call fails never depends on the data (README,
                 * "Privacy guarantees").  A count that large seals its
                 * position except with probability exp(-2^61 s/t). */
                p->count = add > PDS_MAX_COUNT - p->count ? PDS_MAX_COUNT : p->count + add;
                i++;
            }
            /* The run: this position and the empty gap behind it share c. */
            uint64_t run_end = i < n ? pos[i] - 1 : end;
            if (run_end == p->last) {
                if (p->position == p->last) { /* the domain end always seals */
                    seals[(*nseals)++] = p->last;
                    p->count = 0;
                    p->finished = 1;
                    break;
                }
                run_end = p->last - 1;
            }
            p->run_m = p->noisy_threshold - p->count + 1;
            p->run_lm1 = run_end - p->position;
            p->run_err = -1.0;
            p->phase = 1;
        }
        int32_t sealed = 0;
        uint64_t g = 0;
        st = sample_run(p, rng, &sealed, &g);
        if (st != PDS_OK) {
            *consumed = i;
            return st;
        }
        if (sealed) {
            uint64_t y = p->position + g; /* <= run end < last */
            seals[(*nseals)++] = y;
            st = seal_at(p, rng, y);
            if (st != PDS_OK) {
                *consumed = i;
                return st;
            }
        } else {
            p->position += p->run_lm1 + 1; /* runs never include `last` */
        }
    }
    *consumed = i;
    return PDS_OK;
}

pds_status pds_partition_resolve(pds_partition *p, int32_t outcome)
{
    if (p == NULL || !p->pending || (outcome != 0 && outcome != 1))
        return PDS_EINVAL;
    p->pending = 0;
    p->outcome = outcome;
    return PDS_OK;
}
