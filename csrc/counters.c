#include <stdint.h>
#include <stddef.h>

#include "internal.h"

/* Continual counters as streaming state machines.
 *
 * fanout 2: the binary tree mechanism in the formulation of Andersson, Pagh,
 *   Torkamani section 3.1 (left subtrees only, no root; Algorithm 1 with
 *   k = 2): h = ceil(log2(T + 1)) levels, the nodes summed for the prefix up to
 *   t are given by the bits of t.
 * fanout odd k >= 3: Algorithm 2 of the same paper (k-ary tree with
 *   subtraction): offset digits in [-(k-1)/2, (k-1)/2], h = ceil(log_k(2T)).
 *
 * In both, the release at time t is (true prefix sum) + (sum of the noise
 * terms z_p for the p on t's path), the noise scale per term being h/eps.
 * By Proposition 4.10 every z_p is used during one contiguous time interval,
 * so the terms in use at time t are exactly the ones we must keep: level l
 * holds |digit_l| of them in its own slots, and moving from t to t + 1 keeps
 * the slots whose path prefix did not change, drops the rest and draws the
 * new ones lazily.  The noise sum is updated incrementally (Lemma 4.14), so a
 * step costs O(1) amortised noise draws and the state is O(k log_k T)
 * (Lemma 4.12).
 */

/* Half-width of the digit range: the number of slots per level. */
static uint64_t counter_slots_per_level(uint64_t fanout)
{
    return fanout == 2 ? 1 : (fanout - 1) / 2;
}

static int counter_fanout_ok(uint64_t fanout)
{
    return fanout == 2 || (fanout >= 3 && fanout <= PDS_MAX_COUNTER_FANOUT && (fanout & 1));
}

pds_status pds_counter_shape(uint64_t fanout, uint64_t horizon, int32_t *height,
                             int32_t *capacity)
{
    if (!counter_fanout_ok(fanout) || horizon < 1 || horizon > PDS_MAX_HORIZON) {
        return PDS_EINVAL;
    }
    /* Smallest h with fanout^h >= need, need = T + 1 (binary, section 3.1) or
     * 2T (Algorithm 2 line 2); computed with integers only.  need <= 2^64 - 2. */
    uint64_t need = fanout == 2 ? horizon + 1 : 2 * horizon;
    uint64_t power = 1;
    int32_t h = 0;
    while (power < need) {
        h++;
        if (power > UINT64_MAX / fanout) {
            break; /* fanout^h > 2^64 - 1 >= need */
        }
        power *= fanout;
    }
    *height = h;
    *capacity = (int32_t)((uint64_t)h * counter_slots_per_level(fanout));
    return PDS_OK;
}

pds_status pds_counter_init(pds_counter *c, uint64_t fanout, uint64_t horizon,
                            uint64_t scale_t, uint64_t scale_s, int32_t *digits,
                            int64_t *slots, int32_t height, int32_t capacity)
{
    int32_t h, cap;
    int st = pds_counter_shape(fanout, horizon, &h, &cap);
    if (st != PDS_OK) {
        return st;
    }
    if (h != height || cap != capacity || digits == NULL || slots == NULL
        || scale_t == 0 || scale_s == 0 || scale_t >= PDS_PARAM_LIMIT
        || scale_s >= PDS_PARAM_LIMIT) {
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
    c->height = h;
    c->capacity = cap;
    c->failed = 0;
    c->digits = digits;
    c->slots = slots;
    for (int32_t i = 0; i < h; i++) {
        digits[i] = 0;
    }
    for (int32_t i = 0; i < cap; i++) {
        slots[i] = 0;
    }
    return PDS_OK;
}

pds_status pds_counter_check(const pds_counter *c)
{
    int32_t h, cap;
    if (pds_counter_shape(c->fanout, c->horizon, &h, &cap) != PDS_OK
        || h != c->height || cap != c->capacity || c->digits == NULL
        || c->slots == NULL || c->scale_t == 0 || c->scale_s == 0
        || c->scale_t >= PDS_PARAM_LIMIT || c->scale_s >= PDS_PARAM_LIMIT
        || c->failed != 0 || c->time > c->horizon || c->prefix < 0
        || c->prefix > PDS_MAX_COUNT) {
        return PDS_ESTATE;
    }
    int64_t m = (int64_t)counter_slots_per_level(c->fanout);
    int64_t lo = c->fanout == 2 ? 0 : -m;
    /* The digits must be the representation of time: evaluate them Horner
     * style from the top with overflow checks (values stay within +-2^64). */
    __int128 value = 0;
    int64_t noise = 0;
    for (int32_t l = h - 1; l >= 0; l--) {
        int64_t d = c->digits[l];
        if (d < lo || d > m) {
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

/* Replace slot j of level l by a fresh draw. */
static int counter_redraw(pds_counter *c, pds_rng *rng, int64_t *slot)
{
    int64_t z = pds_discrete_laplace_one(rng, c->scale_t, c->scale_s);
    int64_t noise;
    if (__builtin_sub_overflow(c->noise, *slot, &noise)
        || __builtin_add_overflow(noise, z, &noise)) {
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

/* t -> t + 1 on the binary digits: trailing ones (left children whose
 * subtree is now complete) become zeros, the next zero becomes one and its
 * node -- the subtree ending at t + 1 -- gets a fresh noise term. */
static int counter_step_binary(pds_counter *c, pds_rng *rng)
{
    int32_t l = 0;
    while (c->digits[l] == 1) {
        int st = counter_drop(c, &c->slots[l]);
        if (st != PDS_OK) {
            return st;
        }
        c->digits[l] = 0;
        l++;
    }
    c->digits[l] = 1;
    return counter_redraw(c, rng, &c->slots[l]);
}

/* t -> t + 1 on offset digits (Algorithm 2, rep-hat).  A carry turns digit m
 * into -m: every term at that level changes its p (the prefix above moved),
 * so all m are redrawn.  At the level where the carry stops the first
 * min(|d|, |d+1|) terms keep their p and their noise; one term is added
 * (d >= 0) or dropped (d < 0). */
static int counter_step_offset(pds_counter *c, pds_rng *rng)
{
    int32_t m = (int32_t)counter_slots_per_level(c->fanout);
    int32_t l = 0;
    int st;
    while (c->digits[l] == m) {
        int64_t *level = c->slots + (int64_t)l * m;
        for (int32_t j = 0; j < m; j++) {
            st = counter_redraw(c, rng, &level[j]);
            if (st != PDS_OK) {
                return st;
            }
        }
        c->digits[l] = -m;
        l++;
    }
    int32_t d = c->digits[l];
    int64_t *level = c->slots + (int64_t)l * m;
    st = d >= 0 ? counter_redraw(c, rng, &level[d]) : counter_drop(c, &level[-d - 1]);
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
    int binary = c->fanout == 2;
    for (size_t i = 0; i < n; i++) {
        st = binary ? counter_step_binary(c, rng) : counter_step_offset(c, rng);
        /* Only reachable when a noise sum leaves int64 (|noise| >= 2^63,
         * impossible at the scales the Python layer admits): the state is
         * inconsistent from here on, so the counter refuses further work. */
        if (st != PDS_OK || __builtin_add_overflow(c->prefix + xs[i], c->noise, &out[i])) {
            c->failed = 1;
            return PDS_ERANGE;
        }
        c->time++;
        c->prefix += xs[i];
    }
    return PDS_OK;
}
