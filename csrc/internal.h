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

/* ------------------------------------------------- tree*.c (the interval tree) */

/* Per-level factors of a tree of unequal node scales: rho[l] the variance of
 * level l's nodes, fac[l] its scale over the largest (NULL: every level 1;
 * n = the number of entries the caller passed). */
typedef struct {
    const double *rho, *fac;
    uint32_t n;
} pds_level_weights;

/* Every level 1: the tree of one node scale. */
#define PDS_TREE_UNIT_LEVELS (&(const pds_level_weights){NULL, NULL, 0})

static inline double pds_lw_rho(const pds_level_weights *lw, uint32_t l)
{
    return lw->rho ? lw->rho[l] : 1.0;
}

static inline double pds_lw_fac(const pds_level_weights *lw, uint32_t l)
{
    return lw->fac ? lw->fac[l] : 1.0;
}

/* How a query uses one boundary segment S = [first, end] it overlaps in
 * [x, y] (first <= x <= y <= end), per estimator (see the header).  The
 * contribution is frac * est, where est is S's estimate, clipped to
 * [0, tau] when `clip` is set ("seal_uniform"'s interior weight).  `whole`
 * means S joins the range of whole segments. */
typedef struct {
    int whole;
    int used;            /* a fractional contribution applies */
    int clip;
    double frac;
} pds_boundary_use;


/* Shared driver: validates one query and decides which segments are taken
 * whole ([wa, wb) half-open) and which boundary contributions apply. */
typedef struct {
    uint64_t wa, wb;     /* whole segments [wa, wb) */
    uint64_t kl, kr;     /* boundary segments */
    pds_boundary_use ul, ur; /* their fractional contributions (ur unused if k == r) */
} pds_interval_plan;


/* Start offset and node width of every level (levels stored leaves first). */
void pds_tree_layout(uint64_t m, uint32_t f, uint32_t levels,
                        uint64_t *start, uint64_t *width);
/* The minimal cover of segments [a, b) as runs of nodes per level; their number. */
int pds_tree_cover_runs(uint64_t m, uint32_t fanout, uint32_t levels, uint64_t a,
                      uint64_t b, pds_cover_run *runs);
/* The sum of the released nodes covering segments [a, b) into *sum: a pds_status. */
int pds_tree_cover_sum(const int64_t *nodes, const uint64_t *start, uint64_t m,
                     uint32_t f, uint32_t levels, uint64_t a, uint64_t b,
                     int64_t *sum);
/* Every given per-level array has one entry per level, finite and > 0? */
int pds_tree_levels_ok(const pds_level_weights *lw, uint32_t levels);
/* The two-pass least-squares estimate z (and its variance var) of every node. */
void pds_tree_consistent_pass(const double *y, uint64_t m, uint32_t f,
                            uint32_t levels, const uint64_t *start,
                            const uint64_t *width, const pds_level_weights *lw,
                            double *z, double *var);
/* One query's plan (whole segments, boundary uses), or PDS_EINVAL. */
int pds_tree_plan_query(uint64_t m, const uint64_t *ends, uint64_t lo,
                      uint64_t hi, uint64_t k, uint64_t r, int estimator,
                      pds_interval_plan *p);
/* The answer kernels' common argument check. */
int pds_tree_answer_args_ok(uint64_t m, const uint64_t *ends, const uint64_t *lo,
                          const uint64_t *hi, const uint64_t *seg_lo,
                          const uint64_t *seg_hi, size_t count, int estimator,
                          double tau, const double *out);

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
/* Permute-and-flip's rate num/den = epsilon / sensitivity (sensitivity: of
 * the score gaps, 2 Delta). */
void pds_mutate_flip_rate(uint64_t sensitivity, uint64_t *num, uint64_t *den);
#define PDS_MUTATE_FLIP_RATE(sens, num, den) pds_mutate_flip_rate((sens), (num), (den))
#define PDS_MUTATE_NODE_SCALE(sens, t, s) pds_mutate_node_scale((sens), (t), (s))
#define PDS_MUTATE_PARTITION_SCALE(t, s) pds_mutate_partition_scale((t), (s))
#define PDS_MUTATE_PARTITION_ITEM(add) pds_mutate_partition_item(add)
#else
#define PDS_MUTATE_NODE_SCALE(sens, t, s) ((void)0)
#define PDS_MUTATE_PARTITION_SCALE(t, s) ((void)0)
#define PDS_MUTATE_PARTITION_ITEM(add) (add)
#define PDS_MUTATE_FLIP_RATE(sens, num, den) ((void)(sens))
#endif

#endif /* PDS_INTERNAL_H */
