/* DNRR private partition: the online mechanism of Fig. 1 and the exact skip
 * of Remark 2.2 (Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy
 * for Rectangle Queries via Private Partitions", section 2), batched over
 * consecutive runs by thinning (issue #17).
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
 *      On [0, 2^K) (2^K > L - 1 >= 2^(K-1)) this pmf is a product over the
 *      binary digits of g, so the digits are independent with
 *      P(bit i = 1) = 1 / (1 + e^{2^i lambda}).  Rejection: draw g from this
 *      product law and start again if g > L - 1 (it accepts with
 *      probability >= 1/2, since 1 - e^{-lambda L} >= (1 - e^{-2 lambda L})
 *      / 2); a prefix of high digits that already exceeds L - 1 restarts at
 *      once (every completion would be rejected).  The high digits are drawn
 *      one by one, high to low.  The k low digits, where 2^k lambda is small
 *      (the "low block"), are drawn together: their joint law is
 *      proportional to e^{-lambda r} on [0, 2^k), sampled by proposing r
 *      uniform and keeping it with probability e^{-lambda r} = (1-p)^r,
 *      i.e. dropping it when U < 1 - (1-p)^r -- the comparison of step 1
 *      with multiplier r.  Drawing digits jointly or one by one, and
 *      rejecting early or late, all give the same law.
 *
 * The batch (thinning).  While the open segment's count stays below T~
 * (m >= 1), consecutive runs j = 0 .. J-1 (J >= 1) starting at `position`,
 * of lengths L_j and counts c_0 <= ... <= c_{J-1} (an item's count enters
 * at its own position), are sampled as ONE run of N = sum L_j positions at
 * the rate pbar = p(m_min), m_min = T~ - c_{J-1} + 1 the least m: position
 * x of run j seals in Fig. 1 with p_x = a^{m_j} / (1+a) <= pbar.
 *   a. Steps 1-2 above with L = N, m = m_min find the first "candidate"
 *      among N Bernoulli(pbar) trials (or none: the batch passes without a
 *      seal, and all its counts are added).
 *   b. A candidate at offset g, inside run j, is kept with probability
 *      p_x / pbar = a^{m_j - m_min} = exp(-(c_{J-1} - c_j) s/t), decided
 *      by the exact integer sampler pds_bernoulli_exp (noise.c); the batch
 *      policy keeps (c_{J-1} - c_0) s < 2^63, so the product fits.
 *   c. Kept: x seals; the counts of runs 0..j belong to the sealed segment,
 *      those of the later runs to the next one (they were never added:
 *      counts inside a batch stay virtual until its outcome is known), a
 *      new T~ is drawn and the next batch starts at x + 1.  Dropped: x does
 *      not seal; the counts of runs 0..j are added and the next batch starts
 *      at x + 1 (in the middle of run j, or at run j+1).
 * Proof that the output has exactly Fig. 1's law.  Given T~ and the counts,
 * Fig. 1 is: position x seals iff S_x = 1 for independent S_x ~
 * Bernoulli(p_x) (the nu_x are independent), and the first such x (or the
 * last position) ends the segment.  Take independent C_x ~ Bernoulli(pbar)
 * and A_x ~ Bernoulli(p_x / pbar); then S_x = C_x A_x are independent
 * Bernoulli(p_x): exactly Fig. 1's indicators.  Step a samples the first
 * x1 with C_x1 = 1 exactly (steps 1-2 are exact for i.i.d. trials), so
 * S_x = 0 before x1; step b draws A_x1, so x1 seals iff S_x1 = 1.  If it
 * does not, the trials C_x, A_x after x1 have not been looked at: given
 * everything drawn so far they are still independent with the same laws
 * (the first success of i.i.d. trials says nothing about the later ones),
 * so the next batch, whatever runs it spans, continues Fig. 1 exactly from
 * x1 + 1 with count c_j.  The batch's extent is chosen from the state, the
 * data, public parameters and the caller's cut (`end`, more_items) before
 * any of its randomness is drawn, so any choice -- one run (the plain
 * skip), or many -- gives the same law; the policy only trades candidates
 * (cost of step b) against batches.  Runs with m <= 0 (count at or above
 * T~), the last position (which always seals) and positions beyond `end`
 * are never inside a larger batch; inside one the count stays at most T~,
 * so it never saturates there.
 *
 * Every step is a comparison "U < pi" of a fresh uniform U = 0.u1u2... from
 * the CSPRNG with an irrational pi.  The first 64 bits w put U in
 * [w 2^-64, (w+1) 2^-64); a comparison is decided only when that whole
 * interval lies on one side of rigorous bounds [pi_lo, pi_hi], so each
 * decision is exactly Bernoulli(pi): the output has exactly the law of the
 * per-position mechanism.
 *
 * Fast path of step 1: 1 - (1-p)^N <= N p <= N tail(m) (m >= 1), tail(m) a
 * rigorous upper bound of a^m / (1+a) read from two tables (a^(64h) and
 * a^l / (1+a), filled once by exp() with margins), so if w 2^-64 >= N
 * tail(m) the batch has no candidate: one RNG word and two table reads
 * settle a whole batch.  The policy (floating point, any value exact) lets
 * a batch of N < 2^(h+1) positions reach runs while 2^(h+1) p(m_min) <=
 * batch_limit (a table of the least m per h: candidates stay rare, so
 * thinning rarely drops one), at most batch_cap entries ahead; with one
 * item per entry its end is found by galloping over the entries, so a
 * batch costs O(log) reads, not one per item.  The low block keeps 2^k * 2
 * tail(m) <= block_limit (2 tail(m) >= p / (1-p) >= lambda).  Tests move
 * all three (pydp_synopsis/_exact.py, forcing_policy).
 *
 * Chunked input.  A caller that will pass further entries (partition.py's
 * partition_of_chunks) sets more_items: the call then stops, at phase 0,
 * before any batch that could reach beyond the entries given (fewer than
 * batch_cap left), and the entries not consumed come again with the next
 * chunk; every batch is then the one a single call over the whole input
 * would have chosen, so the draws -- and under a seed the output -- are
 * the same.
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
 * same CSPRNG stream, and passes the outcome to pds_partition_resolve.  The
 * batch (run_m, run_lm1, batch_items) and the offset drawn so far stay in
 * the state; the caller passes the items not yet consumed again, and the
 * kernel checks they fit the batch (its extent and its last count) before
 * it continues.
 */
#include <stdint.h>
#include <stddef.h>
#include <math.h>
#include "internal.h"

enum { TAIL_LO = 64, TAIL_HI = 256 };

/* Default batch policy (floating point; any value keeps the law exact). */
#define BATCH_LIMIT (1.0 / 32.0)
#define BLOCK_LIMIT (1.0 / 4.0)
#define BATCH_CAP (1u << 16)

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

/* An upper bound of e^{-x0} from x = x0 (1 + d), |d| <= 2^-50: x is lowered
 * and the result raised by 2^-40 relative, far more than the few-ulp errors
 * of the rounding and of exp(); clamping x at 700 only loosens the bound. */
static double exp_neg_upper(double x)
{
    x *= 1.0 - 0x1p-40;
    if (x > 700.0)
        x = 700.0;
    return exp(-x) * (1.0 + 0x1p-40);
}

/* tail_lo[l] >= a^l / (1+a) and tail_hi[h] >= a^(64 h), a = e^{-s/t}.  The
 * arguments j s/t are rounded twice from s/t (s, t < 2^62: the conversions
 * and the division) and once more by the product: < 2^-50 relative. */
static void fill_tails(pds_partition *p)
{
    double q = p->inv_scale;
    double a_lo = exp(-q * (1.0 + 0x1p-40)) * (1.0 - 0x1p-40);   /* <= a */
    double inv1pa = 1.0 / (1.0 + a_lo) * (1.0 + 0x1p-40);          /* >= 1/(1+a) */
    for (int l = 0; l < TAIL_LO; l++)
        p->tail_lo[l] = exp_neg_upper((double)l * q) * inv1pa * (1.0 + 0x1p-40);
    for (int h = 0; h < TAIL_HI; h++)
        p->tail_hi[h] = exp_neg_upper((double)(TAIL_LO * h) * q);
}

/* tail(m) >= a^m / (1+a) >= p for m >= 1 (a decreasing sequence: m beyond
 * the tables reads the last entries).  The product of the two upper bounds
 * is raised by 2^-50 for its rounding; if it underflows it loses at most
 * 2^-1074, which the callers' "+ 1" on 2^64 bound mult absorbs (mult < 2^64). */
static inline double tail(const pds_partition *p, int64_t m)
{
    uint64_t k = (uint64_t)m;
    if (k >= (uint64_t)TAIL_LO * TAIL_HI)
        k = (uint64_t)TAIL_LO * TAIL_HI - 1;
    return p->tail_hi[k / TAIL_LO] * p->tail_lo[k % TAIL_LO] * (1.0 + 0x1p-50);
}

/* batch_mreq[h] = ceil(b ((h+1) ln 2 - ln(batch_limit (1 + a)))): a batch
 * of N < 2^(h+1) positions whose last run has m >= batch_mreq[h] has
 * N p(m) < 2^(h+1) a^m / (1+a) <= batch_limit -- in floating point, as a
 * policy (exact or not, the law is the same).  Clamped to +-2^62; a
 * batch_limit of 0 or NaN batches nothing, +inf everything with m >= 1. */
static void fill_mreq(pds_partition *p)
{
    double b = (double)p->t / (double)p->s;
    double base = log(p->batch_limit) + p->log1p_a;
    for (int h = 0; h < 64; h++) {
        double v = ceil(b * ((double)(h + 1) * 0.69314718055994530942 - base));
        if (isnan(v) || v > 0x1p62)
            v = 0x1p62;
        if (v < -0x1p62)
            v = -0x1p62;
        p->batch_mreq[h] = (int64_t)v;
    }
    p->batch_limit_used = p->batch_limit;
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
    p->batch_items = 0;
    p->low_value = 0;
    p->low_bits = 0;
    p->batch_cap = BATCH_CAP;
    p->batch_limit = BATCH_LIMIT;
    p->block_limit = BLOCK_LIMIT;
    p->batch_dmax = INT64_MAX / (int64_t)p->s;
    p->more_items = 0;
    p->stat_batches = 0;
    p->stat_dropped = 0;
    p->stat_blocks = 0;
    p->run_lambda = 0.0;
    p->run_err = -1.0;
    fill_tails(p);
    fill_mreq(p);
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
 *   kind 1: pi = 1 - (1-p)^mult       (the batch has a candidate; or: the
 *                                      low block's proposal mult is dropped)
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
        /* Fast path: pi <= mult p <= mult tail(m); the 2^-50 covers the
         * rounding of mult and of the product. */
        double bound = tail(p, p->run_m) * (double)mult * (1.0 + 0x1p-50);
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

/* The low block's size k (policy): 2^k lambda <= block_limit, using
 * lambda <= p / (1-p) <= 2 p <= 2 tail(m) (m >= 1: p < 1/2); at most all
 * K bits of the offset, none when m <= 0 (lambda >= ln 2). */
static int32_t low_block_bits(const pds_partition *p)
{
    int32_t bits = top_bit(p->run_lm1) + 1;
    if (p->run_m < 1 || bits == 0)
        return 0;
    double room = p->block_limit / (2.0 * tail(p, p->run_m));
    if (!(room >= 1.0))          /* also NaN */
        return 0;
    if (room >= 0x1p64)           /* also infinity */
        return bits;
    int k = ilogb(room);
    return k < bits ? k : bits;
}

/* Sample the batch set up in p (phase 1) or continue it (phases 2-4):
 * *found and the first candidate's offset *g from the batch's start.
 * Exact; see the file comment. */
static int sample_candidate(pds_partition *p, pds_rng *rng, int32_t *found,
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
            *found = 0;
            return PDS_OK;
        }
        p->low_bits = low_block_bits(p);
        p->prefix = 0;
        p->bit = top_bit(p->run_lm1);
        p->phase = 2;
    }
    for (;;) {
        if (p->phase == 2) {
            if (p->bit < p->low_bits) {   /* bits 0 .. low_bits-1 remain */
                p->phase = 3;
                continue;
            }
            st = decide(p, rng, 2, (uint64_t)1 << p->bit, &out);
            if (st != PDS_OK)
                return st;
            if (out)
                p->prefix |= (uint64_t)1 << p->bit;
            if (p->prefix > p->run_lm1) { /* every completion exceeds N - 1 */
                p->prefix = 0;
                p->bit = top_bit(p->run_lm1);
            } else {
                p->bit--;
            }
            continue;
        }
        if (p->phase == 3) {
            if (p->low_bits == 0) {
                p->low_value = 0;
            } else {
                uint64_t w = pds_rng_u64(rng);
                p->low_value = p->low_bits == 64 ? w : w >> (64 - p->low_bits);
                p->stat_blocks++;
            }
            p->phase = 4;
        }
        /* phase 4: keep the proposal with probability (1-p)^low_value */
        out = 0;
        if (p->low_value != 0) {
            st = decide(p, rng, 1, p->low_value, &out);
            if (st != PDS_OK)
                return st;
        }
        if (out) {                        /* dropped: propose again */
            p->phase = 3;
            continue;
        }
        uint64_t off = p->prefix | p->low_value;
        if (off > p->run_lm1) {           /* outside the batch: start again */
            p->prefix = 0;
            p->bit = top_bit(p->run_lm1);
            p->phase = 2;
            continue;
        }
        p->phase = 0;
        *found = 1;
        *g = off;
        return PDS_OK;
    }
}

/* One item's count (the mutant hook doubles it in test builds only). */
static inline int64_t item_count(const int64_t *cnt, size_t i)
{
    return PDS_MUTATE_PARTITION_ITEM(cnt == NULL ? 1 : cnt[i]);
}

/* c + add, saturated at PDS_MAX_COUNT.  The count saturates instead of
 * failing: min(c, M) is non-decreasing and grows by at most 1 when one item
 * is added, which is all Fig. 1's proof uses, and whether a call fails never
 * depends on the data (README, "Privacy guarantees").  A count that large
 * seals its position except with probability exp(-2^61 s/t). */
static inline int64_t add_count(int64_t c, int64_t add)
{
    return add > PDS_MAX_COUNT - c ? PDS_MAX_COUNT : c + add;
}

/* Where a batch may end (policy): after the run of entry k - 1, i.e. k is
 * n_eff or pos[k] != pos[k - 1].  The least such k >= kk (kk >= 1). */
static inline size_t next_boundary(const uint64_t *pos, size_t kk, size_t n_eff)
{
    while (kk < n_eff && pos[kk] == pos[kk - 1])
        kk++;
    return kk;
}

/* The policy's test of a batch whose last run has count c2 and ends at e:
 * m >= 1, the count grows by at most batch_dmax, and N p(m) is small. */
static inline int batch_ok(const pds_partition *p, int64_t c2, uint64_t e)
{
    int64_t m2 = p->noisy_threshold + 1 - c2;
    return m2 >= 1 && c2 - p->count <= p->batch_dmax &&
           m2 >= p->batch_mreq[63 - __builtin_clzll(e - p->position + 1)];
}

/* The end of the batch: it spans the first run and the runs of the entries
 * i .. k-1 (k returned, i <= k <= kmax <= n_eff), and *c is its last run's
 * count.  Entries at or beyond n_eff are at `last` (never batched); end_eff
 * is where the run of the last entry before n_eff ends if there is no later
 * entry.  The test is monotone in k (the count grows, N grows), so with one
 * item per entry (cnt == NULL) the end is found by galloping and bisection
 * over O(log) entries instead of reading them all, and *peek is set to the
 * end of the entries at pos[i] (so the next step need not scan them again). */
static size_t batch_end(const pds_partition *p, const uint64_t *pos, const int64_t *cnt,
                        size_t n, size_t n_eff, uint64_t end_eff, size_t i, size_t kmax,
                        int64_t *c, size_t *peek)
{
    int64_t c0 = p->count;
    if (cnt == NULL) {
        int64_t unit = item_count(NULL, 0);
#define OK_AT(k) batch_ok(p, c0 + (int64_t)((k) - i) * unit, (k) < n ? pos[k] - 1 : end_eff)
        /* lo is admissible and no boundary >= hi is.  A probe at kk finds
         * the first boundary b >= kk; if b is not admissible, no boundary
         * >= kk is (none lies in [kk, b)), so hi = kk. */
        size_t lo = i, hi = kmax + 1, step = 1;
        while (lo + step < hi) {
            size_t b = next_boundary(pos, lo + step, n_eff);
            if (step == 1)
                *peek = b;               /* the end of entry i's position */
            if (b >= hi || !OK_AT(b)) {
                hi = lo + step;
                break;
            }
            lo = b;
            step *= 2;
        }
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            size_t b = next_boundary(pos, mid, n_eff);
            if (b < hi && OK_AT(b))
                lo = b;
            else
                hi = mid;
        }
#undef OK_AT
        *c = c0 + (int64_t)(lo - i) * unit;
        return lo;
    }
    size_t j = i;
    int64_t cj = c0;
    while (j < kmax) {
        int64_t c2 = cj;
        size_t k = j;
        do {
            c2 = add_count(c2, item_count(cnt, k));
            k++;
        } while (k < n_eff && pos[k] == pos[j]);
        if (k > kmax || !batch_ok(p, c2, k < n ? pos[k] - 1 : end_eff))
            break;
        j = k;
        cj = c2;
    }
    *c = cj;
    return j;
}

/* Set up the batch starting at p->position, whose first run ends at
 * run_end (the counts at p->position already added); entries i .. follow.
 * Policy only (see the file comment): the law does not depend on it. */
static void start_batch(pds_partition *p, const uint64_t *pos, const int64_t *cnt,
                        size_t n, size_t n_eff, uint64_t end_eff, size_t i,
                        uint64_t run_end, size_t *peek)
{
    size_t j = i;
    int64_t c = p->count;
    if (p->noisy_threshold + 1 - c >= 1 && i < n_eff && p->batch_cap > 0) {
        size_t kmax = n_eff - i > p->batch_cap ? i + p->batch_cap : n_eff;
        j = batch_end(p, pos, cnt, n, n_eff, end_eff, i, kmax, &c, peek);
        if (j > i) {
            run_end = j < n ? pos[j] - 1 : end_eff;
            p->stat_batches++;
        }
    }
    p->run_m = p->noisy_threshold + 1 - c;
    p->run_lm1 = run_end - p->position;
    p->batch_items = j - i;
    p->run_err = -1.0;
    p->phase = 1;
}

/* Nonzero if pos[0..n) decreases somewhere or a count is negative.  Branch
 * free, so it vectorises (with AVX2 where the CPU has it, as rng.c). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static uint64_t unsorted_or_negative(const uint64_t *pos, const int64_t *cnt, size_t n)
{
    uint64_t bad = 0;
    for (size_t i = 1; i < n; i++)
        bad |= (uint64_t)(pos[i] < pos[i - 1]);
    if (cnt != NULL)
        for (size_t i = 0; i < n; i++)
            bad |= (uint64_t)cnt[i] >> 63;
    return bad;
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
    if (p->batch_limit_used != p->batch_limit)   /* a test changed the policy */
        fill_mreq(p);
    if (p->finished || p->position > end)
        return n == 0 ? PDS_OK : PDS_EINVAL;
    /* Validate everything before any randomness is spent: sorted, inside
     * [position, end] (phase != 0: the counts at position are added), counts
     * >= 0.  Branch-free, so the loops vectorise. */
    if (n > 0 && (pos[0] < p->position || pos[n - 1] > end ||
                  (p->phase != 0 && pos[0] == p->position)))
        return PDS_EINVAL;
    if (unsorted_or_negative(pos, cnt, n))
        return PDS_EINVAL;
    if (p->phase != 0) {
        /* A batch being sampled: the items must be the batch's again. */
        uint64_t bend = p->position + p->run_lm1;
        size_t b = (size_t)p->batch_items;
        if (bend > end || p->batch_items > n || (b < n && pos[b] <= bend) ||
            (b > 0 && pos[b - 1] > bend))
            return PDS_EINVAL;
        int64_t c = p->count;
        for (size_t k = 0; k < b; k++)
            c = add_count(c, item_count(cnt, k));
        if (c != p->noisy_threshold + 1 - p->run_m)
            return PDS_EINVAL;
    }
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;

    /* Entries at `last` (the end of pos[]) are never inside a batch; a run
     * that would reach `last` stops before it. */
    size_t n_eff = n;
    while (n_eff > 0 && pos[n_eff - 1] == p->last)
        n_eff--;
    uint64_t end_eff = end == p->last ? p->last - 1 : end;
    size_t i = 0;
    /* With one item per entry, entries peek_i .. peek-1 share a position, as
     * a batch's first probe found (0, 0: nothing known). */
    size_t peek_i = 0, peek = 0;
    while (!p->finished && p->position <= end) {
        if (*nseals == cap)
            break;
        if (p->phase == 0) {
            /* Fig. 1 step 2(a): add the counts at this position. */
            if (cnt == NULL && i == peek_i && i < peek && pos[i] == p->position) {
                p->count = add_count(p->count, (int64_t)(peek - i) * item_count(NULL, 0));
                i = peek;
            }
            while (i < n && pos[i] == p->position) {
                p->count = add_count(p->count, item_count(cnt, i));
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
            if (p->more_items && p->batch_cap > 0 && n - i <= p->batch_cap &&
                p->noisy_threshold + 1 - p->count >= 1)
                break;   /* this batch could reach entries not given yet */
            peek_i = i;
            peek = 0;
            start_batch(p, pos, cnt, n, n_eff, end_eff, i, run_end, &peek);
        }
        int32_t found = 0;
        uint64_t g = 0;
        st = sample_candidate(p, rng, &found, &g);
        if (st != PDS_OK) {
            *consumed = i;
            return st;
        }
        size_t stop = i + (size_t)p->batch_items;
        int64_t last_count = p->noisy_threshold + 1 - p->run_m;  /* c_{J-1} */
        p->batch_items = 0;
        if (!found) {                 /* no seal: every count of the batch */
            p->count = last_count;
            p->position += p->run_lm1 + 1;   /* batches never include `last` */
            i = stop;
            continue;
        }
        uint64_t x = p->position + g;        /* <= batch end < last */
        int64_t c = p->count;
        while (i < stop && pos[i] <= x) {     /* runs 0 .. j */
            c = add_count(c, item_count(cnt, i));
            i++;
        }
        int keep = 1;
        if (c < last_count)           /* kept with probability a^(m_j - m_min) */
            keep = pds_bernoulli_exp(rng, (uint64_t)(last_count - c) * p->s, p->t);
        if (keep) {
            seals[(*nseals)++] = x;
            p->count = 0;
            p->position = x + 1;
            st = draw_noisy_threshold(p, rng);
            if (st != PDS_OK) {
                *consumed = i;
                return st;
            }
        } else {
            p->count = c;
            p->position = x + 1;
            p->stat_dropped++;
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
