/* Noisy binary tree over the segments of a private partition, and the
 * vectorised interval-query kernels of the interval synopsis.
 *
 * Dwork, Naor, Reingold, Rothblum, "Pure Differential Privacy for Rectangle
 * Queries via Private Partitions", section 3.2 / Theorem 3.2: the segments
 * of the partition are the leaves of a binary tree, every node releases its
 * count plus Laplace noise scaled to the number of levels, and a query is
 * answered from the minimal cover of the segments it touches.
 * Consistency: Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
 * Differentially Private Histograms Through Consistency", VLDB 2010,
 * section 4 (the two-pass least-squares estimate).
 *
 * Layout (see the header): level l has ceil(m / 2^l) nodes; node u of level
 * l covers segments [u 2^l, min((u + 1) 2^l, m)); levels are stored leaves
 * first.  The root is never materialised: a minimal cover only needs it for
 * the full range, which its two children cover as well, so leaving it out
 * lowers the sensitivity from ceil(log2 m) + 1 to ceil(log2 m).
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "pydp_synopsis.h"

enum { TREE_MAX_LEVELS = 64 };

static uint32_t tree_levels(uint64_t m)
{
    uint32_t l = 0;
    if (m <= 2)
        return 1;
    while (l < 63 && ((uint64_t)1 << l) < m)
        l++;
    return l;
}

/* Start of each level in the flat node array and its node count. */
static void tree_layout(uint64_t m, uint32_t levels, uint64_t *start,
                        uint64_t *width)
{
    uint64_t off = 0;
    for (uint32_t l = 0; l < levels; l++) {
        start[l] = off;
        width[l] = ((m - 1) >> l) + 1;     /* ceil(m / 2^l) */
        off += width[l];
    }
}

int pds_tree_shape(uint64_t m, uint32_t *levels, uint64_t *nodes)
{
    uint64_t start[TREE_MAX_LEVELS], width[TREE_MAX_LEVELS];
    uint32_t l;
    if (levels == NULL || nodes == NULL || m == 0 || m >= ((uint64_t)1 << 62))
        return PDS_EINVAL;
    l = tree_levels(m);
    tree_layout(m, l, start, width);
    *levels = l;
    *nodes = start[l - 1] + width[l - 1];
    return PDS_OK;
}

int pds_tree_build(pds_rng *rng, const int64_t *counts, uint64_t m,
                   uint64_t t, uint64_t s, int64_t *nodes, uint64_t n_nodes)
{
    uint64_t start[TREE_MAX_LEVELS], width[TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (counts == NULL || nodes == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, &levels, &total);
    if (st != PDS_OK)
        return st;
    if (n_nodes != total)
        return PDS_EINVAL;
    if (t != 0 && (rng == NULL || s == 0 || t >= ((uint64_t)1 << 62)
                   || s >= ((uint64_t)1 << 62)))
        return PDS_EINVAL;
    tree_layout(m, levels, start, width);

    for (uint64_t u = 0; u < m; u++) {
        if (counts[u] < 0)
            return PDS_EINVAL;
        nodes[u] = counts[u];
    }
    /* True counts first, from the level below; noise is added afterwards so
     * that every node's noise is independent of every other node's. */
    for (uint32_t l = 1; l < levels; l++) {
        const int64_t *below = nodes + start[l - 1];
        int64_t *here = nodes + start[l];
        for (uint64_t u = 0; u < width[l]; u++) {
            int64_t c = below[2 * u];
            if (2 * u + 1 < width[l - 1]
                && __builtin_add_overflow(c, below[2 * u + 1], &c))
                return PDS_ERANGE;
            here[u] = c;
        }
    }
    if (t == 0)
        return PDS_OK;
    st = pds_rng_check_fork(rng);
    if (st != PDS_OK)
        return st;
    for (uint64_t v = 0; v < total; v++) {
        int64_t z = pds_discrete_laplace_one(rng, t, s);
        if (__builtin_add_overflow(nodes[v], z, &nodes[v]))
            return PDS_ERANGE;
    }
    return PDS_OK;
}

/* Sum over the minimal cover of the half-open segment range [a, b), a < b.
 * Below the top level a range takes at most one node at each end per level
 * (the usual canonical decomposition); the top stored level has at most two
 * nodes, taken directly.  Returns PDS_ERANGE on int64 overflow. */
static int cover_sum(const int64_t *nodes, const uint64_t *start,
                     uint32_t levels, uint64_t a, uint64_t b, int64_t *sum)
{
    int64_t acc = 0;
    uint32_t l = 0;
    for (; l + 1 < levels && a < b; l++) {
        const int64_t *here = nodes + start[l];
        if (a & 1) {
            if (__builtin_add_overflow(acc, here[a], &acc))
                return PDS_ERANGE;
            a++;
        }
        if (b & 1) {
            b--;
            if (__builtin_add_overflow(acc, here[b], &acc))
                return PDS_ERANGE;
        }
        a >>= 1;
        b >>= 1;
    }
    for (; a < b; a++)
        if (__builtin_add_overflow(acc, nodes[start[l] + a], &acc))
            return PDS_ERANGE;
    *sum = acc;
    return PDS_OK;
}

int pds_tree_cover_sums(const int64_t *nodes, uint64_t m, const uint64_t *i,
                        const uint64_t *j, size_t count, int64_t *out)
{
    uint64_t start[TREE_MAX_LEVELS], width[TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (nodes == NULL || (count > 0 && (i == NULL || j == NULL || out == NULL)))
        return PDS_EINVAL;
    st = pds_tree_shape(m, &levels, &total);
    if (st != PDS_OK)
        return st;
    tree_layout(m, levels, start, width);
    for (size_t q = 0; q < count; q++) {
        if (i[q] > j[q] || j[q] >= m)
            return PDS_EINVAL;
        st = cover_sum(nodes, start, levels, i[q], j[q] + 1, &out[q]);
        if (st != PDS_OK)
            return st;
    }
    return PDS_OK;
}

/* Least squares with every released node of unit variance and no
 * observation of the (unreleased) root.  Bottom-up, z[v] is the best
 * estimate of node v from its own subtree and var[v] its variance (in units
 * of one node's variance); a missing right child is a padded segment whose
 * count is known to be 0 (z = 0, var = 0).  Top-down, a parent's final
 * estimate minus its children's z is shared among the children in
 * proportion to their var.  For complete trees this is exactly Hay et al.'s
 * Theorem 3 recurrence; for the ragged right edge it is the same
 * minimum-variance estimate (generalised least squares on a tree). */
int pds_tree_consistent_leaves(const int64_t *nodes, uint64_t m, double *leaf)
{
    uint64_t start[TREE_MAX_LEVELS], width[TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    double *z, *var;
    int st;

    if (nodes == NULL || leaf == NULL)
        return PDS_EINVAL;
    st = pds_tree_shape(m, &levels, &total);
    if (st != PDS_OK)
        return st;
    tree_layout(m, levels, start, width);
    z = malloc(2 * total * sizeof *z);
    if (z == NULL)
        return PDS_ENOMEM;
    var = z + total;

    for (uint64_t u = 0; u < m; u++) {
        z[u] = (double)nodes[u];
        var[u] = 1.0;
    }
    for (uint32_t l = 1; l < levels; l++) {
        uint64_t b = start[l - 1], h = start[l];
        for (uint64_t u = 0; u < width[l]; u++) {
            double sz = z[b + 2 * u], sv = var[b + 2 * u];
            if (2 * u + 1 < width[l - 1]) {
                sz += z[b + 2 * u + 1];
                sv += var[b + 2 * u + 1];
            }
            /* inverse-variance average of the node's own count (var 1) and
             * the sum of its children's estimates (var sv) */
            z[h + u] = ((double)nodes[h + u] * sv + sz) / (sv + 1.0);
            var[h + u] = sv / (sv + 1.0);
        }
    }
    /* top-level z are final: the root releases nothing to reconcile with */
    for (uint32_t l = levels - 1; l >= 1; l--) {
        uint64_t b = start[l - 1], h = start[l];
        for (uint64_t u = 0; u < width[l]; u++) {
            uint64_t c0 = b + 2 * u;
            int two = 2 * u + 1 < width[l - 1];
            double sz = z[c0] + (two ? z[c0 + 1] : 0.0);
            double sv = var[c0] + (two ? var[c0 + 1] : 0.0);
            double r = z[h + u] - sz;
            z[c0] += var[c0] / sv * r;
            if (two)
                z[c0 + 1] += var[c0 + 1] / sv * r;
        }
    }
    for (uint64_t u = 0; u < m; u++)
        leaf[u] = z[u];
    free(z);
    return PDS_OK;
}

/* Fraction of segment [first, last] (offsets) that [a, b] covers, with
 * first <= a <= b <= last.  Spans reach 2^64, which uint64 cannot hold, so
 * the "+ 1" is done in double: the relative error is below 2^-52. */
static double span_fraction(uint64_t first, uint64_t last, uint64_t a,
                            uint64_t b)
{
    return ((double)(b - a) + 1.0) / ((double)(last - first) + 1.0);
}

/* Shared driver: validates one query and decides which segments are taken
 * whole ([wa, wb) half-open) and which boundary fractions apply. */
typedef struct {
    uint64_t wa, wb;     /* whole segments [wa, wb) */
    uint64_t kl, kr;     /* boundary segments */
    double fl, fr;       /* their fractions; 0 = not used */
} interval_plan;

static int plan_query(uint64_t m, const uint64_t *ends, uint64_t lo,
                      uint64_t hi, uint64_t k, uint64_t r, int estimator,
                      interval_plan *p)
{
    uint64_t kfirst, rfirst;
    if (lo > hi || k > r || r >= m || hi > ends[r] || lo > ends[k]
        || (k > 0 && lo <= ends[k - 1]) || (r > 0 && hi <= ends[r - 1]))
        return PDS_EINVAL;
    p->kl = k;
    p->kr = r;
    p->fl = p->fr = 0.0;
    if (estimator == 0) {
        /* DNRR outer cover: every segment meeting [lo, hi], whole */
        p->wa = k;
        p->wb = r + 1;
        return PDS_OK;
    }
    kfirst = k == 0 ? 0 : ends[k - 1] + 1;
    rfirst = r == 0 ? 0 : ends[r - 1] + 1;
    if (k == r) {
        if (lo == kfirst && hi == ends[k]) {
            p->wa = k;
            p->wb = k + 1;
        } else {
            p->wa = p->wb = 0;
            p->fl = span_fraction(kfirst, ends[k], lo, hi);
        }
        return PDS_OK;
    }
    /* A boundary segment fully inside [lo, hi] joins the whole range, so
     * that aligned queries pay for one cover, not a cover plus leaves. */
    p->wa = k + 1;
    p->wb = r;
    if (lo == kfirst)
        p->wa = k;
    else
        p->fl = span_fraction(kfirst, ends[k], lo, ends[k]);
    if (hi == ends[r])
        p->wb = r + 1;
    else
        p->fr = span_fraction(rfirst, ends[r], rfirst, hi);
    return PDS_OK;
}

static int answer_args_ok(uint64_t m, const uint64_t *ends, const uint64_t *lo,
                          const uint64_t *hi, const uint64_t *seg_lo,
                          const uint64_t *seg_hi, size_t count, int estimator,
                          const double *out)
{
    if (m == 0 || ends == NULL || (estimator != 0 && estimator != 1))
        return 0;
    return count == 0 || (lo != NULL && hi != NULL && seg_lo != NULL
                          && seg_hi != NULL && out != NULL);
}

int pds_interval_answer_tree(const int64_t *nodes, uint64_t m,
                             const uint64_t *ends, const uint64_t *lo,
                             const uint64_t *hi, const uint64_t *seg_lo,
                             const uint64_t *seg_hi, size_t count,
                             int estimator, double *out)
{
    uint64_t start[TREE_MAX_LEVELS], width[TREE_MAX_LEVELS];
    uint32_t levels;
    uint64_t total;
    int st;

    if (nodes == NULL || !answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi,
                                         count, estimator, out))
        return PDS_EINVAL;
    st = pds_tree_shape(m, &levels, &total);
    if (st != PDS_OK)
        return st;
    tree_layout(m, levels, start, width);
    for (size_t q = 0; q < count; q++) {
        interval_plan p;
        int64_t whole = 0;
        double a;
        st = plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q],
                        estimator, &p);
        if (st != PDS_OK)
            return st;
        if (p.wa < p.wb) {
            st = cover_sum(nodes, start, levels, p.wa, p.wb, &whole);
            if (st != PDS_OK)
                return st;
        }
        a = (double)whole;
        if (p.fl > 0.0)
            a += p.fl * (double)nodes[p.kl];
        if (p.fr > 0.0)
            a += p.fr * (double)nodes[p.kr];
        out[q] = a;
    }
    return PDS_OK;
}

int pds_interval_answer_prefix(const double *prefix, uint64_t m,
                               const uint64_t *ends, const uint64_t *lo,
                               const uint64_t *hi, const uint64_t *seg_lo,
                               const uint64_t *seg_hi, size_t count,
                               int estimator, double *out)
{
    int st;
    if (prefix == NULL || !answer_args_ok(m, ends, lo, hi, seg_lo, seg_hi,
                                          count, estimator, out))
        return PDS_EINVAL;
    for (size_t q = 0; q < count; q++) {
        interval_plan p;
        double a = 0.0;
        st = plan_query(m, ends, lo[q], hi[q], seg_lo[q], seg_hi[q],
                        estimator, &p);
        if (st != PDS_OK)
            return st;
        if (p.wa < p.wb)
            a = prefix[p.wb] - prefix[p.wa];
        if (p.fl > 0.0)
            a += p.fl * (prefix[p.kl + 1] - prefix[p.kl]);
        if (p.fr > 0.0)
            a += p.fr * (prefix[p.kr + 1] - prefix[p.kr]);
        out[q] = a;
    }
    return PDS_OK;
}
