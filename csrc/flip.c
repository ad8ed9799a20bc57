/* Permute-and-flip (McKenna, Sheldon, "Permute-and-Flip: A new mechanism
 * for differentially private selection", NeurIPS 2020, Algorithm 1) over a
 * finite list of integer scores, with exact coins.
 *
 * Candidates are visited in a uniformly random order (Fisher-Yates, drawn
 * lazily: a walk stops at its first accepted candidate); candidate r is
 * accepted with probability exp(-(u* - u_r) num / den), u* the largest
 * score.  The caller passes num/den = epsilon / (2 Delta) (Delta the scores'
 * sensitivity), which makes the selection epsilon-DP (McKenna-Sheldon,
 * Theorem 1).  A best candidate is accepted with probability 1, so the walk
 * ends within m steps.  The coin exp(-g num/den) is exact: g num is formed
 * in 128 bits and split into whole exp(-1) coins and one exp(-frac) coin
 * (Canonne, Kamath, Steinke 2020, Algorithm 1; noise.c), no floating point.
 */
#include <stdint.h>
#include <stddef.h>

#include "internal.h"

/* Bernoulli(exp(-gap num / den)) for any gap: exp(-x) = exp(-1)^floor(x)
 * exp(-frac(x)).  Each exp(-1) coin fails with probability 1 - 1/e, so the
 * loop stops after 1.6 coins on average however large floor(x) is. */
static int accept(pds_rng *rng, uint64_t gap, uint64_t num, uint64_t den)
{
    if (gap == 0 || num == 0) return 1;
    unsigned __int128 g = (unsigned __int128)gap * num;
    unsigned __int128 whole = g / den;
    uint64_t frac = (uint64_t)(g % den);
    for (unsigned __int128 i = 0; i < whole; i++)
        if (!pds_bernoulli_exp(rng, 1, 1)) return 0;
    return pds_bernoulli_exp(rng, frac, den);
}

pds_status pds_permute_and_flip(pds_rng *rng, const int64_t *scores, uint64_t m,
                                uint64_t num, uint64_t den, uint64_t sensitivity,
                                uint64_t *work, uint64_t *out)
{
    if (!rng || !scores || !work || !out || m == 0 || den == 0 || den >= PDS_PARAM_LIMIT
        || num >= PDS_PARAM_LIMIT || sensitivity == 0)
        return PDS_EINVAL;
    int st = pds_rng_check_fork(rng);
    if (st != PDS_OK) return st;
    PDS_MUTATE_FLIP_RATE(sensitivity, &num, &den);
    int64_t best = scores[0];
    for (uint64_t i = 1; i < m; i++)
        if (scores[i] > best) best = scores[i];
    for (uint64_t i = 0; i < m; i++)
        work[i] = i;
    for (uint64_t j = 0; j < m; j++) {
        uint64_t k = j + pds_uniform_below(rng, m - j);
        uint64_t r = work[k];
        work[k] = work[j];
        work[j] = r;
        /* two's complement: best - scores[r] in [0, 2^64) is exact in uint64 */
        uint64_t gap = (uint64_t)best - (uint64_t)scores[r];
        if (accept(rng, gap, num, den)) {
            *out = r;
            return PDS_OK;
        }
    }
    return PDS_ERANGE;     /* unreachable: a best candidate is always accepted */
}
