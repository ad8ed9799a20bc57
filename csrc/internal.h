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
 * Every public entry point that draws calls this once before drawing.
 * Calls getpid() only when a fork happened since the generator's last
 * check (rng.c: fork generations); otherwise a load and a compare. */
pds_status pds_rng_check_fork(pds_rng *rng);
/* Computes the next 8 blocks into rng->buf (64 words) and rewinds pos. */
void pds_rng_refill(pds_rng *rng);
/* Next keystream word.  Cannot fail: no error sentinel.  Inline: the
 * samplers draw one per few nanoseconds. */
static inline uint64_t pds_rng_u64(pds_rng *rng)
{
    if (rng->pos >= 64) pds_rng_refill(rng);
    return rng->buf[rng->pos++];
}

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

/* ----------------------------------------------------------- mutation.c */

/* Test-only mutant hooks (mutation.c).  Without PDS_TEST_MUTANTS -- every
 * release build -- they are empty: no kernel has a mutant code path. */
#ifdef PDS_TEST_MUTANTS
/* A node-like noise scale t/s whose sensitivity is `sensitivity`. */
void pds_mutate_node_scale(uint64_t sensitivity, uint64_t *t, uint64_t *s);
/* The partition's noise scale t/s. */
void pds_mutate_partition_scale(uint64_t *t, uint64_t *s);
/* The count one position adds to a partition segment. */
int64_t pds_mutate_partition_item(int64_t add);
#define PDS_MUTATE_NODE_SCALE(sens, t, s) pds_mutate_node_scale((sens), (t), (s))
#define PDS_MUTATE_PARTITION_SCALE(t, s) pds_mutate_partition_scale((t), (s))
#define PDS_MUTATE_PARTITION_ITEM(add) pds_mutate_partition_item(add)
#else
#define PDS_MUTATE_NODE_SCALE(sens, t, s) ((void)0)
#define PDS_MUTATE_PARTITION_SCALE(t, s) ((void)0)
#define PDS_MUTATE_PARTITION_ITEM(add) (add)
#endif

#endif /* PDS_INTERNAL_H */
