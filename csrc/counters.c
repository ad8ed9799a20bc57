#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* Continual counters as streaming state machines (Andersson, Pagh,
 * Torkamani: "APT").
 *
 * A counter of fanout k writes the time t with h digits from a set
 * [low, high] of k consecutive integers, high = low + k - 1:
 *   subtraction = 0: standard digits [0, k-1]: Algorithm 1 (the k-ary tree
 *     mechanism; k = 2 is the binary tree mechanism of section 3.1, left
 *     subtrees only, no root);
 *   subtraction = 1, odd k: offset digits [-(k-1)/2, (k-1)/2]: Algorithm 2
 *     (k-ary tree with subtraction, Definition 3.8);
 *   subtraction = 1, even k: [-k/2+1, k/2]: Appendix A.3 (Definition A.5);
 *     k = 2 gives digits [0, 1], the binary tree again.
 * h is the least height whose largest representable number
 * high (k^h - 1)/(k - 1) is at least T: ceil(log_k(T+1)) (Algorithm 1
 * line 2), ceil(log_k(2T)) (Algorithm 2 line 2), and for even k the T_max =
 * k(k^h - 1)/(2(k-1)) of Definition A.5.
 *
 * In every case the release at time t is (true prefix sum) + (sum of the
 * noise terms z_p for the p on t's path), one term per unit of each digit,
 * the noise scale per term being h/eps: an item lies in h tree nodes that
 * are ever used (never the root), and each node always enters with the same
 * sign (left-most children added, right-most subtracted), so Lemma 4.5's
 * proof holds for every digit set.  Every z_p is used during one contiguous
 * time interval (Proposition 4.10), so the terms in use at time t are
 * exactly the ones we must keep: level l holds |digit_l| of them in its own
 * slots (high per level), and moving from t to t + 1 keeps the slots whose
 * path prefix did not change, drops the rest and takes new ones.  The noise
 * sum is updated incrementally (Lemma 4.14): a step costs O(1) amortised
 * terms and the state is O(k log_k T) (Lemma 4.12).
 *
 * Timing (issue #12).  When releases are observed one at a time, the time
 * of the update releasing t must not depend on the noise it releases.
 * Sampling a discrete Laplace value takes time growing with |z| (CKS
 * Algorithm 2 runs about |z|/b geometric trials), so a step never samples:
 * it takes its new terms from a pool of values drawn earlier, a read whose
 * cost does not depend on the value, and does O(#digits changed) further
 * work, which depends on t alone (public).  The pool is filled
 *   (a) when the Python layer asks (pds_counter_fill_pool), right after a
 *       counter is built, before any release;
 *   (b) at the end of a step, after its release is computed, whenever fewer
 *       terms remain than the most one step can take ((h-1)|low| + 1: at
 *       most h-1 levels carry, each taking |low| terms, and the level where
 *       the carry stops takes at most one), so a checkpoint always holds
 *       enough for the next step and a restore draws nothing;
 *   (c) at the start of a step if the pool is empty: only where (a) is
 *       skipped -- the sparse counter's inner counter, whose seeded releases
 *       of release 0.1 must not change -- and after restoring a release 0.1
 *       checkpoint (no pool); once per such counter.
 * Claim: apart from (c), the duration of the update releasing t is
 * independent of the noise released at t.  Proof: that noise is the sum of
 * the terms in use at t, all drawn by fills that ended before the update
 * began.  The update's duration is the work fixed by t plus the duration of
 * a fill (b) at its end, which is a function of that fill's fresh draws
 * only -- independent of every earlier draw, since the draws are i.i.d.
 * Residual: a fill's duration reflects the sum of the magnitudes of the
 * >= min(256, T) terms it draws, which later releases use; that is an
 * aggregate over many future terms, the same kind a batch update of as many
 * items always revealed (a batch's duration reflects all the terms it
 * draws).  A fill draws in the same order as lazy sampling would and the
 * pool is used first in, first out, so a counter with its own generator
 * releases exactly what it released without a pool, seed for seed.
 * The monotone peak (max(0, releases)) is kept here with a select, so the
 * work around a release does not depend on whether it is a new maximum.
 *
 * Timing against the item (issue #30).  Neither may the duration of an
 * update depend on its item beyond what the release shows.  Here the item
 * is only added (prefix, release) and range-checked by branches that go the
 * same way for every admissible item, so the C work is the same for 0 and
 * 1 (and any admissible count).  The Python caller is the harder part:
 * CPython 3.11 stores 0 with no digit and 1 with one, and its comparisons
 * (long_compare) and int conversion (PyLong_AsLongLong) branch on the digit
 * count, so `0 <= x <= max_item` and passing x itself took different
 * branches for 0 and 1 -- branches the rest of the interpreter trains, so
 * they mispredict unevenly: measured r = -0.017 (issue #30), +0.02 to
 * +0.07 for those operations alone.  update(x) therefore touches x once,
 * in x + PDS_COUNTER_ITEM_BIAS (CPython's one-digit addition has no branch
 * on the value), and passes that to pds_counter_update_item, which removes
 * the offset and checks the range here.  That entry returns a bool and
 * writes the release into a struct, read as an attribute: a status 0 or a
 * subscript [0] would each touch CPython's cached int 0 -- the very object
 * an item 0 is -- and the reference counts written to one object by the
 * caller (for x) and by the update (for the 0) serialise through memory,
 * so an item 0 was slower (measured r = -0.0055 with only the offset).
 *
 * Fork: the pool was drawn by one process.  A child created by fork() has
 * a copy; the generator reseeds in the child (rng.c), and the counter drops
 * the inherited pool (pool_pid differs from the generator's), so parent and
 * child never take the same pre-drawn term.
 */

/* The smallest digit of the digit set, and the largest is low + k - 1. */
static int32_t counter_low(uint64_t fanout, int32_t subtraction)
{
    if (!subtraction) {
        return 0;
    }
    return (fanout & 1) ? -(int32_t)((fanout - 1) / 2) : -(int32_t)(fanout / 2 - 1);
}

/* Terms drawn in one pool fill beyond the most a step takes. */
enum { COUNTER_POOL_BLOCK = 256 };

pds_status pds_counter_layout(uint64_t fanout, int32_t subtraction, uint64_t horizon,
                              int32_t *height, int32_t *capacity, int32_t *pool_capacity,
                              int32_t *pool_low)
{
    if (fanout < 2 || fanout > PDS_MAX_COUNTER_FANOUT || (subtraction != 0 && subtraction != 1)
        || horizon < 1 || horizon > PDS_MAX_HORIZON || height == NULL || capacity == NULL) {
        return PDS_EINVAL;
    }
    int32_t low = counter_low(fanout, subtraction);
    int32_t high = low + (int32_t)fanout - 1;
    /* Least h with high (k^h - 1)/(k - 1) = high (1 + k + ... + k^(h-1)) >= T;
     * every quantity stays below 2^63 * 2^16 (integers only). */
    unsigned __int128 largest = 0, power = 1;
    int32_t h = 0;
    while (largest < horizon) {
        largest += (unsigned __int128)high * power;
        power *= fanout;
        h++;
    }
    *height = h;
    *capacity = h * high;
    int32_t low_water = (h - 1) * -low + 1;
    if (pool_low != NULL) {
        *pool_low = low_water;
    }
    if (pool_capacity != NULL) {
        uint64_t block = horizon < COUNTER_POOL_BLOCK ? horizon : COUNTER_POOL_BLOCK;
        *pool_capacity = low_water + (int32_t)block;
    }
    return PDS_OK;
}

pds_status pds_counter_shape(uint64_t fanout, uint64_t horizon, int32_t *height,
                             int32_t *capacity)
{
    return pds_counter_layout(fanout, 1, horizon, height, capacity, NULL, NULL);
}

pds_status pds_counter_init(pds_counter *c, uint64_t fanout, int32_t subtraction,
                            uint64_t horizon, uint64_t scale_t, uint64_t scale_s,
                            int32_t *digits, int64_t *slots, int64_t *pool,
                            int32_t height, int32_t capacity, int32_t pool_capacity)
{
    int32_t h, cap, pcap, plow;
    int st = pds_counter_layout(fanout, subtraction, horizon, &h, &cap, &pcap, &plow);
    if (st != PDS_OK) {
        return st;
    }
    if (c == NULL || h != height || cap != capacity || pcap != pool_capacity || digits == NULL
        || slots == NULL || pool == NULL || scale_t == 0 || scale_s == 0
        || scale_t >= PDS_PARAM_LIMIT || scale_s >= PDS_PARAM_LIMIT) {
        return PDS_EINVAL;
    }
    PDS_MUTATE_NODE_SCALE((uint64_t)h, &scale_t, &scale_s);   /* test-only; empty in releases */
    c->horizon = horizon;
    c->time = 0;
    c->fanout = fanout;
    c->scale_t = scale_t;
    c->scale_s = scale_s;
    c->prefix = 0;
    c->noise = 0;
    c->subtraction = subtraction;
    c->low = counter_low(fanout, subtraction);
    c->high = c->low + (int32_t)fanout - 1;
    c->height = h;
    c->capacity = cap;
    c->failed = 0;
    c->digits = digits;
    c->slots = slots;
    c->pool = pool;
    c->pool_capacity = pcap;
    c->pool_low = plow;
    c->pool_next = 0;
    c->pool_end = 0;
    c->pool_pid = 0;
    c->peak = 0;
    memset(digits, 0, (size_t)h * sizeof *digits);
    memset(slots, 0, (size_t)cap * sizeof *slots);
    memset(pool, 0, (size_t)pcap * sizeof *pool);
    return PDS_OK;
}

pds_status pds_counter_check(const pds_counter *c)
{
    int32_t h, cap, pcap, plow;
    if (c == NULL
        || pds_counter_layout(c->fanout, c->subtraction, c->horizon, &h, &cap, &pcap, &plow)
               != PDS_OK
        || h != c->height || cap != c->capacity || pcap != c->pool_capacity
        || plow != c->pool_low || c->low != counter_low(c->fanout, c->subtraction)
        || c->high != c->low + (int32_t)c->fanout - 1 || c->digits == NULL
        || c->slots == NULL || c->pool == NULL || c->scale_t == 0 || c->scale_s == 0
        || c->scale_t >= PDS_PARAM_LIMIT || c->scale_s >= PDS_PARAM_LIMIT
        || c->failed != 0 || c->time > c->horizon || c->prefix < 0
        || c->prefix > PDS_MAX_COUNT || c->pool_next < 0 || c->pool_next > c->pool_end
        || c->pool_end > c->pool_capacity) {
        return PDS_ESTATE;
    }
    int64_t m = c->high;
    /* The digits must be the representation of time: evaluate them Horner
     * style from the top with overflow checks (values stay within +-2^64). */
    __int128 value = 0;
    int64_t noise = 0;
    for (int32_t l = h - 1; l >= 0; l--) {
        int64_t d = c->digits[l];
        if (d < c->low || d > c->high) {
            return PDS_ESTATE;
        }
        value = value * (__int128)c->fanout + d;
        if (value > (__int128)UINT64_MAX || value < -(__int128)UINT64_MAX) {
            return PDS_ESTATE;
        }
        int64_t used = d < 0 ? -d : d;
        for (int64_t j = 0; j < m; j++) {
            int64_t z = c->slots[(int64_t)l * m + j];
            if (j >= used) {
                if (z != 0) {
                    return PDS_ESTATE; /* unused slots are kept zero */
                }
            } else if (__builtin_add_overflow(noise, z, &noise)) {
                return PDS_ESTATE;
            }
        }
    }
    if (value != (__int128)c->time || noise != c->noise) {
        return PDS_ESTATE;
    }
    return PDS_OK;
}

/* Move the unused terms to the front and draw the pool full (FIFO order:
 * the terms left are used before the new ones, as lazy draws would be). */
static void counter_refill(pds_counter *c, pds_rng *rng)
{
    int32_t left = c->pool_end - c->pool_next;
    memmove(c->pool, c->pool + c->pool_next, (size_t)left * sizeof *c->pool);
    for (int32_t i = left; i < c->pool_capacity; i++) {
        c->pool[i] = pds_discrete_laplace_one(rng, c->scale_t, c->scale_s);
    }
    c->pool_next = 0;
    c->pool_end = c->pool_capacity;
    c->pool_pid = rng->pid;
}

pds_status pds_counter_fill_pool(pds_counter *c, pds_rng *rng)
{
    if (c == NULL || rng == NULL || c->failed) {
        return c == NULL || rng == NULL ? PDS_EINVAL : PDS_ESTATE;
    }
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) {
        return st;
    }
    if (c->pool_pid != rng->pid) {
        c->pool_next = c->pool_end = 0; /* drawn by another process: never use */
    }
    if (c->pool_end - c->pool_next < c->pool_low) {
        counter_refill(c, rng);
    }
    return PDS_OK;
}

pds_status pds_counter_set_pool(pds_counter *c, pds_rng *rng, const int64_t *values,
                                int32_t n)
{
    if (c == NULL || rng == NULL || n < 0 || n > c->pool_capacity || (n && values == NULL)) {
        return PDS_EINVAL;
    }
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) {
        return st;
    }
    memcpy(c->pool, values, (size_t)n * sizeof *values);
    memset(c->pool + n, 0, (size_t)(c->pool_capacity - n) * sizeof *c->pool);
    c->pool_next = 0;
    c->pool_end = n;
    c->pool_pid = rng->pid;
    return PDS_OK;
}

/* The next pre-drawn term: a constant-time read (refilling only in case
 * (c) of the comment at the top). */
static int64_t counter_take(pds_counter *c, pds_rng *rng)
{
    if (c->pool_next == c->pool_end) {
        counter_refill(c, rng);
    }
    return c->pool[c->pool_next++];
}

static int counter_add(pds_counter *c, int64_t *slot, int64_t z)
{
    int64_t noise;
    if (__builtin_add_overflow(c->noise, z, &noise)) {
        return PDS_ERANGE;
    }
    c->noise = noise;
    *slot = z;
    return PDS_OK;
}

static int counter_drop(pds_counter *c, int64_t *slot)
{
    int64_t noise;
    if (__builtin_sub_overflow(c->noise, *slot, &noise)) {
        return PDS_ERANGE;
    }
    c->noise = noise;
    *slot = 0;
    return PDS_OK;
}

/* t -> t + 1.  A carry turns the digit `high` into `low`: every term at
 * that level changes its p (the prefix above moved), so its high terms are
 * dropped and |low| new ones taken (none for standard digits: the
 * completed left children simply leave the path).  At the level where the
 * carry stops the first min(|d|, |d+1|) terms keep their p and their noise;
 * one term is added (d >= 0) or dropped (d < 0). */
static int counter_step(pds_counter *c, pds_rng *rng)
{
    int32_t high = c->high, fresh = -c->low;
    int32_t l = 0;
    int st;
    while (c->digits[l] == high) {
        int64_t *level = c->slots + (int64_t)l * high;
        for (int32_t j = 0; j < high; j++) {
            if ((st = counter_drop(c, &level[j])) != PDS_OK) {
                return st;
            }
        }
        for (int32_t j = 0; j < fresh; j++) {
            if ((st = counter_add(c, &level[j], counter_take(c, rng))) != PDS_OK) {
                return st;
            }
        }
        c->digits[l] = c->low;
        l++;
    }
    int32_t d = c->digits[l];
    int64_t *level = c->slots + (int64_t)l * high;
    st = d >= 0 ? counter_add(c, &level[d], counter_take(c, rng)) : counter_drop(c, &level[-d - 1]);
    c->digits[l] = d + 1;
    return st;
}

pds_status pds_counter_update_many(pds_counter *c, pds_rng *rng, const int64_t *xs,
                                   int64_t *out, size_t n)
{
    if (c->failed) {
        return PDS_ESTATE;
    }
    if (n > c->horizon - c->time) {
        return PDS_EHORIZON;
    }
    /* Validate the whole batch before spending any randomness. */
    int64_t prefix = c->prefix;
    for (size_t i = 0; i < n; i++) {
        if (xs[i] < 0) {
            return PDS_EINVAL;
        }
        if (xs[i] > PDS_MAX_COUNT - prefix) {
            return PDS_ERANGE;
        }
        prefix += xs[i];
    }
    if (n == 0) {
        return PDS_OK;
    }
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) {
        return st;
    }
    if (c->pool_pid != rng->pid) {
        c->pool_next = c->pool_end = 0; /* drawn by another process: never use */
    }
    int64_t peak = c->peak;
    for (size_t i = 0; i < n; i++) {
        st = counter_step(c, rng);
        /* Only reachable when a noise sum leaves int64 (|noise| >= 2^63,
         * impossible at the scales the Python layer admits): the state is
         * inconsistent from here on, so the counter refuses further work. */
        if (st != PDS_OK || __builtin_add_overflow(c->prefix + xs[i], c->noise, &out[i])) {
            c->failed = 1;
            return PDS_ERANGE;
        }
        c->time++;
        c->prefix += xs[i];
        /* The monotone release: the same work whether or not out[i] is a
         * new maximum (a select; Python no longer stores a new int object
         * only when it is, which the timing benchmark could see). */
        peak = out[i] > peak ? out[i] : peak;
        /* Case (b): after the release, so its own noise is never drawn here. */
        if (c->pool_end - c->pool_next < c->pool_low && c->time < c->horizon) {
            counter_refill(c, rng);
        }
    }
    c->peak = peak; /* a batch that failed above released nothing: peak unchanged */
    return PDS_OK;
}

pds_status pds_counter_update_one(pds_counter *c, pds_rng *rng, int64_t x, int64_t *release)
{
    if (release == NULL) {
        return PDS_EINVAL;
    }
    /* The batch path with one item: the same checks, fork check, pool use
     * and refill, so the same release and the same draws. */
    return pds_counter_update_many(c, rng, &x, release, 1);
}

_Bool pds_counter_update_item(pds_counter *c, pds_rng *rng, int64_t biased, int64_t max_item,
                              pds_counter_output *out)
{
    /* Unsigned: a negative item (or one below the offset) wraps above any
     * max_item, so one comparison checks both ends of the range, and it is
     * false for every admissible item. */
    uint64_t x = (uint64_t)biased - (uint64_t)PDS_COUNTER_ITEM_BIAS;
    if (max_item < 0 || x > (uint64_t)max_item) {
        out->status = PDS_EINVAL;
        return 0;
    }
    int64_t item = (int64_t)x;
    out->status = pds_counter_update_many(c, rng, &item, &out->release, 1);
    return out->status == PDS_OK;
}
