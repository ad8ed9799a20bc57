/* pydp_synopsis C core: declarations shared by the .c files only.
 *
 * Private: build.py feeds only pydp_synopsis.h to cffi's cdef(), so nothing
 * here is reachable from Python.  Unlike the public header this one may
 * #include and use macros.  These functions do no argument check and no
 * fork check: they are for kernels that validated at their entry point.
 */
#ifndef PDS_INTERNAL_H
#define PDS_INTERNAL_H

#include <stdint.h>
#include <stddef.h>

#include "pydp_synopsis.h"
#include "pds_limits.h"

/* ---------------------------------------------------------------- rng.c */

/* Reseed from the OS if the calling process is not the one that seeded
 * (a fork() happened): PDS_OK, PDS_EINVAL (rng NULL) or PDS_EENTROPY.
 * Every public entry point that draws calls this once before drawing. */
pds_status pds_rng_check_fork(pds_rng *rng);
/* Next keystream word.  Cannot fail: no error sentinel. */
uint64_t pds_rng_u64(pds_rng *rng);
/* The unread words of the current batch (refilled first if empty), *avail
 * >= 1 of them, for kernels that read a block at once; they are the next
 * words pds_rng_u64 would return.  The caller marks the k it used with
 * rng->pos += k (k <= *avail) before drawing anything else. */
const uint64_t *pds_rng_words(pds_rng *rng, size_t *avail);

/* -------------------------------------------------------------- noise.c */

/* One discrete Laplace draw, pmf proportional to exp(-|z| s / t) (scale
 * t/s), for 1 <= t, s < 2^62 (unchecked).  Cannot fail: no error sentinel;
 * the magnitude saturates at INT64_MAX, which has probability
 * exp(-2^63 s/t) -- zero for the scales the Python layer admits. */
int64_t pds_discrete_laplace_one(pds_rng *rng, uint64_t t, uint64_t s);
/* One Bernoulli(exp(-num/den)) draw, den >= 1 (unchecked): 1 or 0. */
int pds_bernoulli_exp(pds_rng *rng, uint64_t num, uint64_t den);
/* One fair bit of the keystream (each bit used once): 1 or 0. */
int pds_rng_coin(pds_rng *rng);
/* Uniform in [0, n) without modulo bias (Lemire); 0 for n <= 1. */
uint64_t pds_uniform_below(pds_rng *rng, uint64_t n);

/* ------------------------------------------------------------- lookup.c */

/* The segment of x <= ends[m - 1] through a table filled by pds_lookup_init
 * (the file comment of lookup.c): the first i with ends[i] >= x.  Inline, so
 * that query kernels fuse it with their answers.  Reads stay inside ends and
 * table even for a corrupted table (the indices are clamped to m - 1). */
static inline uint64_t pds_lookup_one(const pds_lookup *lk, uint64_t x)
{
    uint64_t d = x >= lk->origin ? x - lk->origin : 0;
    uint64_t b = d >> lk->shift;
    b = b < lk->n_buckets ? b : lk->n_buckets - 1;
    uint64_t base = lk->table[b], top = lk->table[b + 1];
    top = top < lk->m ? top : lk->m - 1;
    base = base < top ? base : top;
    /* answer in [base, top] and ends[top] >= x: branch-free lower bound */
    uint64_t len = top - base + 1;
    const uint64_t *e = lk->ends;
    while (len > 1) {
        uint64_t half = len >> 1;
        base = e[base + half - 1] < x ? base + half : base;
        len -= half;
    }
    return base;
}

#endif /* PDS_INTERNAL_H */
